"""Config loading: schema validation and default filling, shared by the Snakefile and the library.

The schema lives in config/schema/ as one top-level file whose study sections ``$ref`` sibling
files. ``validate_config`` reads values given as text on the command line by the schema's types,
fills defaults (also inside referenced files), and reports every invalid key in one short message:
its path, its value and what the schema expects.
"""

from __future__ import annotations

import copy
import math
import re
from pathlib import Path
from typing import Any, Iterable

import jsonschema

from thinkbias.yamlfile import read_yaml


class ConfigError(ValueError):
    """An invalid config; the message lists one line per offending key."""


def load_schema(path: str | Path) -> dict:
    """Load a YAML JSON-schema and inline every relative-file ``$ref`` it contains, whole files
    (``fairness.schema.yaml``) or a definition in one (``config.schema.yaml#/$defs/role``).

    The keys beside a ``$ref`` refine what it refers to: ``properties`` are merged key by key (a
    property's own keys override the definition's, e.g. its ``default``; a property given as
    ``false``, which JSON Schema reads as "not allowed", is dropped), every other key replaces."""
    path = Path(path)
    schema = read_yaml(path)
    return _inline_refs(schema, path.parent)


def _inline_refs(node: Any, base: Path) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#"):
            file, _, fragment = ref.partition("#")
            target = base / file
            inlined = read_yaml(target)
            for part in filter(None, fragment.split("/")):
                inlined = inlined[part]
            inlined = _inline_refs(copy.deepcopy(inlined), target.parent)
            rest = {k: _inline_refs(v, base) for k, v in node.items() if k != "$ref"}
            inlined.pop("$schema", None)
            return _refine(inlined, rest)
        return {k: _inline_refs(v, base) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline_refs(v, base) for v in node]
    return node


def _refine(definition: dict, refinement: dict) -> dict:
    """``definition`` with the keys given beside its ``$ref`` (see ``load_schema``)."""
    out = {**definition, **refinement}
    if "properties" in refinement:
        props = dict(definition.get("properties", {}))
        for key, sub in refinement["properties"].items():
            if sub is False:
                props.pop(key, None)
            else:
                props[key] = {**props[key], **sub} if isinstance(props.get(key), dict) else sub
        out["properties"] = props
    return out


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
    """Validate ``config`` against the schema and return it with text values read by the schema's
    types (see ``coerce_text``) and defaults filled.

    Raises ``ConfigError`` (a ``ValueError``) with one line per invalid key:
    ``config key '<path>' = <value>: <what is expected>``.
    """
    schema = load_schema(schema_path)
    filled = fill_defaults(coerce_text(config, schema), schema)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(filled), key=lambda e: [str(p) for p in e.absolute_path])
    lines = [line for err in errors for line in error_lines(err)]
    if lines:
        raise config_error(lines)
    return filled


def config_error(lines: list[str]) -> ConfigError:
    """One ``ConfigError`` listing ``lines`` (one per offending key)."""
    return ConfigError("invalid config:\n  " + "\n  ".join(lines))


def key_path(parts: Iterable[Any]) -> str:
    """``fairness.models[0]``-style path of a config value (``(top level)`` for the root)."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def show_value(value: Any, limit: int = 80) -> str:
    """A value as it appears in a message, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def error_lines(err: jsonschema.ValidationError, noun: str = "config key") -> list[str]:
    """Readable line(s) for one schema error: the key path, its value and what was expected
    (``noun`` says whose key it is: ``config key``, ``registry key``)."""
    path, schema = list(err.absolute_path), err.schema
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        known = list(schema.get("properties", {}))
        extra = [k for k in err.instance if k not in known]
        where = key_path(path)
        return [
            f"{noun} '{key_path(path + [k])}' = {show_value(err.instance[k])}: unknown key "
            f"({where} takes: {', '.join(known) or 'no keys'})"
            for k in extra
        ]
    if "propertyNames" in err.relative_schema_path:
        return [
            f"{noun} '{key_path(path + [err.instance])}': unknown name {err.instance!r} "
            f"(expected one of {', '.join(map(str, schema.get('enum', [])))})"
        ]
    if err.validator == "required":
        missing = re.findall(r"'([^']+)' is a required property", err.message)
        return [f"{noun} '{key_path(path + [m])}': missing (required)" for m in missing] or [
            f"{noun} '{key_path(path)}': {err.message}"
        ]
    where = f"{noun} '{key_path(path)}' = {show_value(err.instance)}"
    if err.validator == "type":
        kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        return [f"{where}: expected {' or '.join(kinds)}"]
    if err.validator == "enum":
        return [f"{where}: expected one of {', '.join(map(str, schema['enum']))}"]
    bounds = {
        "minimum": ">=",
        "maximum": "<=",
        "exclusiveMinimum": ">",
        "exclusiveMaximum": "<",
        "minItems": "at least this many items:",
        "maxItems": "at most this many items:",
        "minLength": "at least this many characters:",
        "pattern": "text matching",
    }
    if err.validator in bounds:
        return [f"{where}: expected {bounds[err.validator]} {err.validator_value}"]
    return [f"{where}: {show_value(err.message, 200)}"]


def schema_types(schema: dict) -> set[str]:
    """JSON types a subschema accepts (its ``type``, or those of its ``anyOf``/``oneOf`` branches)."""
    kind = schema.get("type")
    types = set(kind if isinstance(kind, list) else [kind] if kind else [])
    for branch in schema.get("anyOf", []) + schema.get("oneOf", []):
        types |= schema_types(branch)
    return types


def coerce_text(value: Any, schema: dict) -> Any:
    """``value`` with text read as the number, boolean or null the schema expects at that key.

    ``snakemake --config key='{"n": 4}'`` hands nested values over as text ("4"). Text is read only
    where the schema does not accept text, so a valid config never changes; text that does not
    read as the expected type is left for validation to report.
    """
    if isinstance(value, dict):
        props, rest = schema.get("properties", {}), schema.get("additionalProperties")
        return {k: coerce_text(v, props.get(k, rest if isinstance(rest, dict) else {})) for k, v in value.items()}
    if isinstance(value, list):
        items = schema.get("items")
        return [coerce_text(v, items if isinstance(items, dict) else {}) for v in value]
    if not isinstance(value, str):
        return value
    types = schema_types(schema)
    if not types or "string" in types:
        return value
    text = value.strip()
    if "integer" in types and re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    if "number" in types:
        try:
            number = float(text)
        except ValueError:
            pass
        else:
            if math.isfinite(number):
                return number
    if "boolean" in types and text.lower() in ("true", "false"):
        return text.lower() == "true"
    if "null" in types and text in ("null", "Null", "NULL", "~"):
        return None
    return value


def load_config(path: str | Path, schema_path: str | Path = "config/schema/config.schema.yaml") -> dict:
    """Read a config YAML, validate it and fill defaults (the same as the workflow does)."""
    return validate_config(read_yaml(path) or {}, schema_path)
