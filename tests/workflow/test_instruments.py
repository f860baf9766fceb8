"""One hop from rule to instrument: every script's docstring and every pipeline table in docs/ name
the library functions (`module:function`) a rule's script calls, and every name resolves."""

from __future__ import annotations

import ast
import importlib
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.workflow.test_structure import RULE_FILES, rule_blocks

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((REPO / "scripts").glob("**/*.py"))
DOCS = sorted((REPO / "docs").glob("*.md"))
STUDY_DOCS = ("fairness.md", "position.md", "blindspot.md")
REFERENCE = re.compile(r"`([A-Za-z_]\w*(?:\.\w+)*):([A-Za-z_]\w*(?:\.\w+)*)`")
RULE_NAME = re.compile(r"`([a-z][a-z0-9_]*(?:<\w+>[a-z0-9_]*)?)`")


def references(text: str) -> list[str]:
    """Every `module:function` named in a text, in order."""
    return [f"{m}:{f}" for m, f in REFERENCE.findall(text)]


def resolve(reference: str) -> object:
    """The callable a `module:function` reference names (import, then getattr along the dotted name)."""
    module, _, name = reference.partition(":")
    obj: object = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"{reference} is not callable")
    return obj


def unresolved(refs: list[str]) -> list[str]:
    """The references among ``refs`` that do not name an existing function, with the reason."""
    bad = []
    for ref in refs:
        try:
            resolve(ref)
        except (ImportError, AttributeError, TypeError) as exc:
            bad.append(f"{ref} ({type(exc).__name__}: {exc})")
    return bad


def docstring_references(script: Path) -> list[str]:
    return references(ast.get_docstring(ast.parse(script.read_text())) or "")


def imported_modules(script: Path) -> set[str]:
    """Modules a script imports, or imports from (``module.name`` too: it may be a module)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(script.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def anonymous_rule_scripts() -> dict[str, str]:
    """Rules defined in a loop (``rule:`` + ``name: weights_rule(...)``): name prefix -> script path."""
    found = {}
    for path in RULE_FILES:
        text = path.read_text()
        for block in re.split(r"^\s*rule:\s*$", text, flags=re.M)[1:]:
            name = re.search(r"name:\s*(\w+)_rule\(", block)
            script = re.search(r"script:\s*\"\.\./(scripts/[^\"]+)\"", block)
            if name and script:
                found[f"{name.group(1)}_"] = script.group(1)
    return found


def rule_script(rule: str) -> str | None:
    """The script a rule runs (repository path), None for a rule without one."""
    body = rule_blocks().get(rule)
    if body is not None:
        m = re.search(r"script:\s*\"\.\./(scripts/[^\"]+)\"", body)
        return m.group(1) if m else None
    for prefix, script in anonymous_rule_scripts().items():
        if rule.startswith(prefix):
            return script
    raise KeyError(f"no rule '{rule}' in rules/*.smk")


@dataclass(frozen=True)
class Row:
    doc: str
    line: int
    rules: list[str]
    computes: str


def split_cells(line: str) -> list[str]:
    # a `|` inside backticks (e.g. `tables/*.csv|md`) is not a cell border
    cells, current, in_code = [], "", False
    for ch in line.strip().strip("|"):
        if ch == "`":
            in_code = not in_code
        if ch == "|" and not in_code:
            cells.append(current.strip())
            current = ""
        else:
            current += ch
    return cells + [current.strip()]


def pipeline_tables(path: Path) -> list[tuple[list[str], list[Row]]]:
    """Tables whose header has a `step` and a `rule` column: (header, rows)."""
    lines = path.read_text().splitlines()
    tables = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and re.match(r"^\|[-| :]+\|$", lines[i + 1]):
            header = [c.lower() for c in split_cells(lines[i])]
            rows, j = [], i + 2
            while j < len(lines) and lines[j].startswith("|"):
                cells = split_cells(lines[j])
                cell = dict(zip(header, cells))
                rows.append(Row(path.name, j + 1, RULE_NAME.findall(cell.get("rule", "")), cell.get("computes", "")))
                j += 1
            if "step" in header and "rule" in header:
                tables.append((header, rows))
            i = j
        else:
            i += 1
    return tables


def all_rows() -> list[Row]:
    return [row for doc in DOCS for _, rows in pipeline_tables(doc) for row in rows]


def scripted_rules() -> set[str]:
    named = {r for r, body in rule_blocks().items() if re.search(r"^\s+script:", body, flags=re.M)}
    return named | {f"{prefix}<model>" for prefix in anonymous_rule_scripts()}


def test_a_missing_function_is_reported():
    assert unresolved(["thinkbias.fairness.cdpg:mean_abs_cdpg"]) == []
    assert unresolved(["thinkbias.fairness.cdpg:no_such_function"])
    assert unresolved(["thinkbias.no_such_module:cdpg_long"])
    assert unresolved(["thinkbias.fairness.analysis:PRODUCTS"])  # a dict, not a function
    assert references("calls `thinkbias.stats.sequential:obrien_fleming_threshold` at t_s") == [
        "thinkbias.stats.sequential:obrien_fleming_threshold"
    ]


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: str(p.relative_to(REPO)))
def test_script_docstring_names_functions_that_exist_and_the_script_imports_one(script: Path):
    refs = docstring_references(script)
    assert refs, f"{script.relative_to(REPO)}: the docstring names no `module:function` the script calls"
    assert unresolved(refs) == [], f"{script.relative_to(REPO)}: docstring names functions that do not exist"
    imported = imported_modules(script)
    direct = [r for r in refs if r.split(":")[0] in imported]
    assert direct, (
        f"{script.relative_to(REPO)}: none of {refs} is imported by the script, so none is the function it calls"
    )


@pytest.mark.parametrize("doc", STUDY_DOCS)
def test_each_study_doc_has_a_pipeline_table_with_a_computes_column(doc: str):
    tables = pipeline_tables(REPO / "docs" / doc)
    assert tables, f"docs/{doc}: no pipeline table (a table with step and rule columns)"
    for header, _ in tables:
        assert "computes" in header, f"docs/{doc}: pipeline table without a computes column: {header}"


def test_every_pipeline_row_names_existing_rules_and_functions_their_scripts_name():
    rows = all_rows()
    assert len(rows) > 30
    problems = []
    for row in rows:
        where = f"docs/{row.doc}:{row.line}"
        refs = references(row.computes)
        if not row.rules:
            problems.append(f"{where}: no rule named")
        if not refs:
            problems.append(f"{where}: no computes entry (a `module:function`)")
        problems += [f"{where}: {bad}" for bad in unresolved(refs)]
        for rule in row.rules:
            try:
                script = rule_script(rule)
            except KeyError as exc:
                problems.append(f"{where}: {exc.args[0]}")
                continue
            if script is None:
                continue
            named = set(docstring_references(REPO / script))
            missing = [r for r in refs if r not in named]
            if missing:
                problems.append(f"{where}: {rule} computes {missing}, which {script}'s docstring does not name")
    assert problems == []


def test_every_rule_with_a_script_is_a_row_of_a_pipeline_table():
    listed = {rule for row in all_rows() for rule in row.rules}
    assert sorted(scripted_rules() - listed) == []
