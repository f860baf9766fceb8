"""config/README.md is the configuration reference generated from the schema; it must be current."""

from __future__ import annotations

from tests.helpers import REPO
from thinkbias.config import load_schema
from thinkbias.config_docs import config_reference, key_rows, type_name


def test_committed_reference_is_current():
    assert (REPO / "config/README.md").read_text() == config_reference(REPO), (
        "config/README.md is stale: run `python -m thinkbias.config_docs .`"
    )


def test_every_schema_key_has_a_row():
    schema = load_schema(REPO / "config/schema/config.schema.yaml")
    text = config_reference(REPO)
    sections = {k for k, v in schema["properties"].items() if "properties" in v}  # titles, not rows
    for row in key_rows(schema):
        if row["key"].strip("`") not in sections:
            assert f"| {row['key']} |" in text, row["key"]


def test_rows_show_nesting_list_items_and_values_that_differ_from_the_default():
    schema = {
        "properties": {
            "a": {"type": "integer", "default": 1, "description": "one"},
            "b": {
                "type": "object",
                "description": "box",
                "properties": {"c": {"type": ["string", "null"], "default": None}},
            },
            "d": {
                "type": "array",
                "default": [],
                "items": {"type": "object", "properties": {"e": {"enum": ["x", "y"]}}},
            },
        }
    }
    rows = list(key_rows(schema, {"a": 2, "b": {"c": "s"}}))
    assert [r["key"] for r in rows] == ["`a`", "`b`", "`b.c`", "`d`", "`d[].e`"]
    assert rows[0]["config.yaml"] == "2" and rows[2]["config.yaml"] == '"s"' and rows[2]["default"] == "null"
    assert [r["type"] for r in rows] == ["integer", "object", "string | null", "list of objects", "one of x, y"]
    assert type_name({"type": "array", "items": {"type": "integer"}}) == "list of integer"
