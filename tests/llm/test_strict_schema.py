"""The strict form of the study schemas sent to OpenAI-compatible APIs."""

from __future__ import annotations

import pytest

from thinkbias.blindspot.concepts import DEDUP_SCHEMA, HYPOTHESIS_SCHEMA
from thinkbias.blindspot.variations import QUALITY_SCHEMA, VARIATION_SCHEMA
from thinkbias.blindspot.verbalization import VERDICT_SCHEMA
from thinkbias.llm.openai_backend import chat_kwargs
from thinkbias.llm.strict_schema import UNSUPPORTED, strict_schema
from thinkbias.llm.types import ModelSpec, Request, Sampling

STUDY_SCHEMAS = [HYPOTHESIS_SCHEMA, DEDUP_SCHEMA, VARIATION_SCHEMA, QUALITY_SCHEMA, VERDICT_SCHEMA]


def objects(node):
    """Every object node (a dict with properties) of a schema."""
    if isinstance(node, dict):
        if "properties" in node:
            yield node
        for value in node.values():
            yield from objects(value)
    elif isinstance(node, list):
        for item in node:
            yield from objects(item)


def keywords(node):
    if isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from keywords(value)
    elif isinstance(node, list):
        for item in node:
            yield from keywords(item)


@pytest.mark.parametrize("schema", STUDY_SCHEMAS)
def test_study_schemas_become_strict_and_stay_unchanged(schema):
    before = repr(schema)
    strict = strict_schema(schema)
    assert repr(schema) == before  # the original (used by llama.cpp and the parser) is untouched
    for node in objects(strict):
        assert node["additionalProperties"] is False and node["required"] == list(node["properties"])
    assert not set(keywords(strict)) & set(UNSUPPORTED)


def test_optional_property_becomes_nullable_and_kept_keywords_survive():
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "maxLength": 5, "pattern": "^x"},
            "b": {"type": "array", "minItems": 1, "items": {"type": "integer"}},
        },
        "required": ["b"],
    }
    assert strict_schema(schema) == {
        "type": "object",
        "additionalProperties": False,
        "required": ["a", "b"],
        "properties": {
            "a": {"anyOf": [{"type": "string", "pattern": "^x"}, {"type": "null"}]},
            "b": {"type": "array", "minItems": 1, "items": {"type": "integer"}},
        },
    }


def test_chat_request_sends_the_strict_form():
    spec = ModelSpec(id="o3-api", backend="openai", api_model="o3-2025-04-16", thinking="none")
    request = Request.chat("concepts?", sampling=Sampling(max_tokens=100, json_schema=HYPOTHESIS_SCHEMA))
    sent = chat_kwargs(spec, request)["response_format"]["json_schema"]
    assert sent["strict"] is True and sent["schema"] == strict_schema(HYPOTHESIS_SCHEMA)


def test_llama_cpp_server_form_puts_the_schema_beside_json_object():
    spec = ModelSpec(
        id="local", backend="openai", api_model="m", thinking="none", extra={"response_format": "json_object"}
    )
    request = Request.chat("verdict?", sampling=Sampling(max_tokens=10, json_schema=VERDICT_SCHEMA))
    assert chat_kwargs(spec, request)["response_format"] == {
        "type": "json_object",
        "schema": strict_schema(VERDICT_SCHEMA),
    }
