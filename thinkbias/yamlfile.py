"""YAML read with PyYAML's safe loader, through libyaml where PyYAML was built with it, refusing what
YAML would otherwise take silently.

The C loader builds the same objects as ``yaml.safe_load`` about ten times faster; every Snakemake
invocation reads the config schema, the registry and the manifest, so the pure-Python loader's
seconds are paid by every dry run and every job.

A mapping that gives one key twice is refused (YAML readers keep the last value without a word, so a
second ``position:`` section would drop the first's settings), and every error names the file and
the line: a duplicate key, a syntax error (a tab in the indentation), a file that holds no mapping.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MERGE_TAG = "tag:yaml.org,2002:merge"
STR_TAG = "tag:yaml.org,2002:str"


class YamlFileError(yaml.YAMLError, ValueError):
    """A YAML document that cannot be read; the message names its file and, where known, the line
    (a ``ValueError`` like the config's errors, and a ``yaml.YAMLError`` for callers that catch those)."""


class DuplicateKeyError(yaml.MarkedYAMLError):
    """A mapping that gives one key twice."""


class UniqueKeyLoader(SAFE_LOADER):  # type: ignore[misc, valid-type]
    """The safe loader, refusing a mapping with a duplicate key (keys merged in with ``<<`` may be
    overridden, as YAML intends)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, yaml.Node] = {}
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == MERGE_TAG:
                    continue
                # a text key is its node's value; others (numbers, booleans) as the loader builds them
                key = key_node.value if key_node.tag == STR_TAG else self.construct_object(key_node)
                first = seen.setdefault(key, key_node)
                if first is not key_node:
                    raise DuplicateKeyError(
                        problem=f"duplicate key {key!r} (first given on line {first.start_mark.line + 1})",
                        problem_mark=key_node.start_mark,
                    )
        return super().construct_mapping(node, deep=deep)


def yaml_error_message(err: yaml.YAMLError, text: str, source: str) -> str:
    """``<source>, line <n>[, column <c>]: <problem>`` for a YAML error in ``text``, saying so when the
    line starts with a tab (libyaml only says "found character that cannot start any token")."""
    mark = getattr(err, "problem_mark", None)
    if not isinstance(err, yaml.MarkedYAMLError) or mark is None:
        return f"{source}: {err}"
    where = f"{source}, line {mark.line + 1}"
    if not isinstance(err, DuplicateKeyError):
        where += f", column {mark.column + 1}"
    message = f"{where}: {err.problem or 'invalid YAML'}"
    if err.context:
        message += f" ({err.context})"
    lines = text.splitlines()
    if "tab" not in (err.problem or "") and mark.line < len(lines) and "\t" in lines[mark.line][: mark.column + 1]:
        message += "; the line has a tab character, and YAML indents with spaces only"
    return message


def load_yaml(text: str, source: str = "<text>") -> Any:
    """The document in ``text``, as ``yaml.safe_load`` reads it, but refusing a duplicate key.

    Raises ``YamlFileError`` naming ``source`` and the line of a duplicate key or syntax error."""
    try:
        return yaml.load(text, Loader=UniqueKeyLoader)
    except yaml.YAMLError as err:
        raise YamlFileError(yaml_error_message(err, text, source)) from None


def read_yaml(path: str | Path) -> Any:
    """The document in the UTF-8 file at ``path`` (``None`` for an empty file), as ``load_yaml``
    reads it; errors name the file."""
    return load_yaml(Path(path).read_text(encoding="utf-8"), str(path))


def read_mapping(path: str | Path, what: str = "YAML file") -> dict:
    """The mapping in the YAML file at ``path``: an empty file, or one holding a list or a single
    value, is refused with a ``YamlFileError`` naming the file (``what`` says which file it is)."""
    document = read_yaml(path)
    if document is None:
        raise YamlFileError(f"{path}: empty {what} (expected a mapping of keys)")
    if not isinstance(document, dict):
        raise YamlFileError(f"{path}: {what} holds a {type(document).__name__}, expected a mapping of keys")
    return document
