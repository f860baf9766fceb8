"""The layers of thinkbias/ hold: each module imports only its own layer and the layers below it, a
study never imports another study, set-up tooling imports only the standard library, and no import
goes round in a circle. docs/architecture.md states the same order.

The imports are read from the source with ``ast``: module-level and function-level ones, those in
``if TYPE_CHECKING:`` blocks, ``import x``, ``from x import y`` and relative imports, so a lazy or
type-only import cannot hide a dependency.
"""

from __future__ import annotations

import ast
import sys
from collections import deque
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tests.helpers import REPO

PACKAGE = REPO / "thinkbias"

# Lowest first. A unit is a package of thinkbias/ or a module at its top (the package itself is the
# unit "thinkbias"); a module may import its own layer and the layers below it.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("stand-alone", ("thinkbias", "build")),
    ("foundations", ("config", "config_files", "stats", "data", "markdown", "yamlfile", "lazy_imports", "models")),
    ("engine", ("llm",)),
    ("shared by the studies", ("tasks", "plots")),
    ("studies", ("fairness", "position", "blindspot")),
    ("run level", ("report", "audit", "config_docs", "config_refs", "workflow")),
)
STUDIES = frozenset({"fairness", "position", "blindspot"})
RUN_LEVEL = ("report", "audit")
BELOW_THE_STUDIES = ("llm", "data", "stats")
SETUP_TOOLING = "build"  # run by tb.py with the system Python, before any dependency is installed


@dataclass(frozen=True)
class Import:
    """One module imported by one module of the package, where the import statement is."""

    module: str  # the importing module, e.g. thinkbias.blindspot.rediscovery
    target: str  # the imported module (within the package: an existing one) or, outside it, the name imported
    internal: bool  # the target is a module of the package
    file: str  # the importing module's file, e.g. thinkbias/blindspot/rediscovery.py
    line: int
    statement: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.statement}"


def module_files(root: Path) -> dict[str, Path]:
    """Every module of the package at ``root``, by dotted name (a package by its ``__init__.py``)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def resolve(name: str, modules: dict[str, Path]) -> str:
    """The module ``name`` lies in: itself, or the deepest package above it (``from pkg import attr``)."""
    while name not in modules and "." in name:
        name = name.rpartition(".")[0]
    return name


def imports_of(name: str, path: Path, file: str, modules: dict[str, Path]) -> list[Import]:
    """Every import statement of module ``name`` (at ``path``, shown as ``file``), one ``Import`` per
    module it imports, in line order."""
    top = name.split(".")[0]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: level 1 is the module's own package
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            # ``from pkg import sub`` imports the submodule when there is one, else a name of pkg
            targets = [f"{origin}.{a.name}" if f"{origin}.{a.name}" in modules else origin for a in node.names]
        else:
            continue
        for target in dict.fromkeys(targets):
            internal = target == top or target.startswith(top + ".")
            target = resolve(target, modules) if internal else target
            if target != name:
                found.append(Import(name, target, internal, file, node.lineno, ast.unparse(node)))
    return sorted(found, key=lambda imp: (imp.line, imp.target))


def package_imports(root: Path) -> list[Import]:
    """Every import of every module of the package at ``root``."""
    modules = module_files(root)
    return [
        imp
        for name, path in modules.items()
        for imp in imports_of(name, path, path.relative_to(root.parent).as_posix(), modules)
    ]


@cache
def thinkbias_imports() -> tuple[Import, ...]:
    return tuple(package_imports(PACKAGE))


def unit(module: str) -> str:
    """The unit a module belongs to: ``thinkbias.llm.base`` -> ``llm``, ``thinkbias.markdown`` -> ``markdown``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def layer_of(unit_name: str) -> int | None:
    """The position of a unit's layer in ``LAYERS`` (None: not placed)."""
    return next((i for i, (_, units) in enumerate(LAYERS) if unit_name in units), None)


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return components


def shortest_cycle(graph: dict[str, set[str]], start: str, members: set[str]) -> list[str]:
    """The shortest path from ``start`` back to itself within ``members`` (start repeated at the end)."""
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for w in sorted(graph.get(v, set()) & members):
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return path[::-1] + [start]
            if w not in previous:
                previous[w] = v
                queue.append(w)
    raise ValueError(f"{start} is on no cycle")


def import_cycles(imports: list[Import] | tuple[Import, ...]) -> list[str]:
    """One shortest cycle per circle of modules that import each other, with the import of each step."""
    graph: dict[str, set[str]] = {}
    where: dict[tuple[str, str], Import] = {}
    for imp in imports:
        if imp.internal:
            graph.setdefault(imp.module, set()).add(imp.target)
            where.setdefault((imp.module, imp.target), imp)
    cycles = []
    for component in strongly_connected(graph):
        if len(component) > 1:
            cycle = shortest_cycle(graph, component[0], set(component))
            steps = "".join(f"\n    {where[a, b]}" for a, b in zip(cycle, cycle[1:]))
            cycles.append(" -> ".join(cycle) + steps)
    return cycles


def setup_tooling_problem(imp: Import) -> str | None:
    """Why an import of set-up tooling is not allowed, or None: it may import its own unit and the
    standard library only."""
    if unit(imp.module) != SETUP_TOOLING:
        return None
    if imp.internal and unit(imp.target) != SETUP_TOOLING:
        return f"{imp.target} is another part of thinkbias"
    if not imp.internal and imp.target.split(".")[0] not in sys.stdlib_module_names:
        return f"{imp.target} is not in the standard library"
    return None


def test_every_unit_has_a_layer():
    units = {unit(m) for m in module_files(PACKAGE)}
    placed = {u for _, layer_units in LAYERS for u in layer_units}
    assert sorted(units - placed) == [], "place the new unit in LAYERS here and in docs/architecture.md"


def test_a_study_imports_no_other_study():
    bad = [
        f"{imp}  ({unit(imp.module)} imports the {unit(imp.target)} study)"
        for imp in thinkbias_imports()
        if imp.internal and unit(imp.module) in STUDIES and unit(imp.target) in STUDIES - {unit(imp.module)}
    ]
    assert not bad, "a study imports another study:\n" + "\n".join(bad)


def test_a_study_imports_neither_report_nor_audit():
    bad = [
        f"{imp}  ({unit(imp.module)} imports {unit(imp.target)}/)"
        for imp in thinkbias_imports()
        if imp.internal and unit(imp.module) in STUDIES and unit(imp.target) in RUN_LEVEL
    ]
    assert not bad, "a study imports the run level:\n" + "\n".join(bad)


def test_engine_data_and_statistics_import_no_study():
    bad = [
        f"{imp}  ({unit(imp.module)}/ imports the {unit(imp.target)} study)"
        for imp in thinkbias_imports()
        if imp.internal and unit(imp.module) in BELOW_THE_STUDIES and unit(imp.target) in STUDIES
    ]
    assert not bad, "a package below the studies imports a study:\n" + "\n".join(bad)


def test_every_import_goes_down_the_layers():
    bad = []
    for imp in thinkbias_imports():
        if not imp.internal:
            continue
        here, there = layer_of(unit(imp.module)), layer_of(unit(imp.target))
        if here is not None and there is not None and there > here:  # an unplaced unit fails the test above
            bad.append(
                f"{imp}  ({unit(imp.module)}, layer '{LAYERS[here][0]}', imports {unit(imp.target)}, "
                f"layer '{LAYERS[there][0]}' above it)"
            )
    assert not bad, "an import goes up the layers:\n" + "\n".join(bad)


def test_setup_tooling_imports_only_the_standard_library():
    bad = [f"{imp}  ({why})" for imp in thinkbias_imports() if (why := setup_tooling_problem(imp))]
    assert not bad, f"thinkbias/{SETUP_TOOLING}/ runs before any dependency is installed:\n" + "\n".join(bad)


def test_no_import_cycle():
    cycles = import_cycles(thinkbias_imports())
    assert not cycles, "modules that import each other:\n" + "\n".join(cycles)


def test_the_walk_sees_every_kind_of_import(tmp_path):
    """The walk itself, on a small package: lazy, type-only, relative and ``from pkg import sub``
    imports are all seen, and a circle through them is found."""
    root = tmp_path / "pkg"
    (root / "a").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "a/__init__.py": "from . import one\n",
        "a/one.py": "import json\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.c import C\n",
        "a/two.py": "def f():\n    from ..b import helper\n    import pkg.a.one as one\n",
        "b.py": "from pkg.a import two\nhelper = 1\n",
        "c.py": "C = 1\n",
    }
    for name, text in files.items():
        (root / name).write_text(text)
    imports = package_imports(root)
    internal = sorted((imp.module, imp.target) for imp in imports if imp.internal)
    assert internal == [
        ("pkg.a", "pkg.a.one"),
        ("pkg.a.one", "pkg.c"),
        ("pkg.a.two", "pkg.a.one"),
        ("pkg.a.two", "pkg.b"),
        ("pkg.b", "pkg.a.two"),
    ]
    assert {imp.target for imp in imports if not imp.internal} == {"json", "typing"}
    cycles = import_cycles(imports)
    assert len(cycles) == 1 and cycles[0].startswith("pkg.a.two -> pkg.b -> pkg.a.two\n")
    assert "pkg/b.py:1: from pkg.a import two" in cycles[0]
