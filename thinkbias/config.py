"""Config loading: schema validation and default filling, shared by the Snakefile and the library.

The schema lives in config/schema/ as one top-level file whose study sections ``$ref`` sibling
files. Snakemake's ``validate`` checks types and unknown keys; defaults inside referenced files are
filled here, because ``validate(set_default=True)`` does not descend through ``$ref``.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema
import yaml


def load_schema(path: str | Path) -> dict:
    """Load a YAML JSON-schema and inline every relative-file ``$ref`` it contains."""
    path = Path(path)
    schema = yaml.safe_load(path.read_text())
    return _inline_refs(schema, path.parent)


def _inline_refs(node: Any, base: Path) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#"):
            target = base / ref
            inlined = _inline_refs(yaml.safe_load(target.read_text()), target.parent)
            rest = {k: _inline_refs(v, base) for k, v in node.items() if k != "$ref"}
            inlined.pop("$schema", None)
            return {**inlined, **rest}
        return {k: _inline_refs(v, base) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline_refs(v, base) for v in node]
    return node


def fill_defaults(config: dict, schema: dict) -> dict:
    """Return a copy of ``config`` with every missing key that has a schema ``default`` filled in,
    recursing into objects (including those filled from defaults)."""
    out = copy.deepcopy(config)
    _fill(out, schema)
    return out


def _fill(node: dict, schema: dict) -> None:
    for key, sub in schema.get("properties", {}).items():
        if key not in node and "default" in sub:
            node[key] = copy.deepcopy(sub["default"])
        if isinstance(node.get(key), dict) and sub.get("type") == "object":
            _fill(node[key], sub)


def validate_config(config: dict, schema_path: str | Path) -> dict:
    """Validate ``config`` against the schema (raising ``ValueError`` naming the offending key)
    and return it with defaults filled."""
    schema = load_schema(schema_path)
    filled = fill_defaults(config, schema)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(filled), key=lambda e: list(e.absolute_path))
    if errors:
        lines = []
        for err in errors:
            where = ".".join(str(p) for p in err.absolute_path) or "(top level)"
            lines.append(f"config key '{where}': {err.message}")
        raise ValueError("invalid config:\n  " + "\n  ".join(lines))
    return filled


def load_config(path: str | Path, schema_path: str | Path = "config/schema/config.schema.yaml") -> dict:
    """Read a config YAML, validate it and fill defaults (the same as the workflow does)."""
    return validate_config(yaml.safe_load(Path(path).read_text()) or {}, schema_path)
