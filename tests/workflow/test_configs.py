"""Every config builds its DAG; invalid configs stop with a message naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.helpers import REPO, base_config, deep_merge, run_snakemake
from thinkbias.config import load_config, load_schema, validate_config

CONFIGS = sorted((REPO / "config").glob("*.yaml"))
WORKFLOW_CONFIGS = [p for p in CONFIGS if p.name != "models.yaml"]


def walk_schema(node: dict, path: str = ""):
    """Yield (path, subschema) for every property in the inlined schema."""
    for key, sub in node.get("properties", {}).items():
        here = f"{path}.{key}" if path else key
        yield here, sub
        if sub.get("type") == "object" or "properties" in sub:
            yield from walk_schema(sub, here)


def test_every_schema_key_has_type_description_default():
    schema = load_schema(REPO / "config/schema/config.schema.yaml")
    missing = [p for p, sub in walk_schema(schema)
               if not {"description", "default"} <= set(sub) or not ({"type", "enum", "oneOf", "anyOf"} & set(sub))]
    assert not missing, f"schema keys without type/description/default: {missing}"


def test_objects_forbid_unknown_keys():
    schema = load_schema(REPO / "config/schema/config.schema.yaml")
    loose = [p for p, sub in walk_schema(schema)
             if sub.get("type") == "object" and "properties" in sub and sub.get("additionalProperties", True) is not False]
    assert not loose, f"objects that accept unknown keys: {loose}"


@pytest.mark.parametrize("path", WORKFLOW_CONFIGS, ids=lambda p: p.name)
def test_config_validates(path: Path):
    cfg = load_config(path, REPO / "config/schema/config.schema.yaml")
    assert cfg["seed"] >= 0


def test_unknown_key_is_named():
    with pytest.raises(ValueError, match=r"fairness.*'no_such_key'"):
        validate_config(deep_merge(base_config(), {"fairness": {"no_such_key": 1}}),
                        REPO / "config/schema/config.schema.yaml")


def test_wrong_type_is_named():
    with pytest.raises(ValueError, match=r"config key 'shard_size'"):
        validate_config(deep_merge(base_config(), {"shard_size": "ten"}), REPO / "config/schema/config.schema.yaml")


@pytest.mark.slow
def test_snakemake_rejects_unknown_key_naming_it(workflow_dir):
    proc = run_snakemake(workflow_dir, ["-n"], config=deep_merge(base_config(), {"position": {"bogus_key": 3}}),
                         check=False)
    assert proc.returncode != 0
    assert "bogus_key" in proc.stdout + proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("path", WORKFLOW_CONFIGS, ids=lambda p: p.name)
def test_dry_run_builds_dag(path: Path, workflow_dir):
    proc = run_snakemake(workflow_dir, ["-n", "--quiet", "rules"], config=yaml.safe_load(path.read_text()))
    assert proc.returncode == 0
