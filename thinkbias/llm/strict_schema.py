"""JSON schemas as OpenAI's strict structured outputs accept them.

Strict mode (``response_format.json_schema.strict: true``) rejects a schema unless every object
lists all its properties as required and forbids others, and it supports only part of JSON Schema.
The study schemas are written for the meaning (and for llama.cpp's grammar, which reads them as
they are); this module derives the strict form sent to OpenAI-compatible APIs. The caller still
validates each reply against the original schema.
"""

from __future__ import annotations

import copy

# Keywords strict mode does not accept; dropping them loosens the constraint, never the parse check.
UNSUPPORTED = (
    "minLength",
    "maxLength",
    "minProperties",
    "maxProperties",
    "patternProperties",
    "unevaluatedProperties",
    "propertyNames",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
    "unevaluatedItems",
)


def strict_schema(schema: dict) -> dict:
    """A copy of ``schema`` in strict form: every object node gets ``additionalProperties: false``
    and all its properties required (an optional property becomes nullable instead), and keywords
    strict mode rejects are dropped."""
    return _strict(copy.deepcopy(schema))


def _strict(node: object) -> object:
    if isinstance(node, list):
        return [_strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    for key in UNSUPPORTED:
        node.pop(key, None)
    for key, value in list(node.items()):
        if key == "properties":
            node[key] = {name: _strict(sub) for name, sub in value.items()}
        elif key in ("items", "anyOf", "allOf", "oneOf", "$defs", "definitions", "not"):
            node[key] = {n: _strict(s) for n, s in value.items()} if key in ("$defs", "definitions") else _strict(value)
    if "properties" in node:
        required = set(node.get("required", []))
        for name in node["properties"]:
            if name not in required:
                node["properties"][name] = {"anyOf": [node["properties"][name], {"type": "null"}]}
        node["required"] = list(node["properties"])
        node.setdefault("additionalProperties", False)
    return node
