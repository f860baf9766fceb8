"""Every config builds its DAG; invalid configs stop with a message naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.helpers import REPO, base_config, deep_merge, dry_run_jobs, run_snakemake
from thinkbias.config import load_config, load_schema, validate_config

CONFIGS = sorted((REPO / "config").glob("*.yaml"))
WORKFLOW_CONFIGS = [p for p in CONFIGS if p.name != "models.yaml"]


def walk_schema(node: dict, path: str = ""):
    """Yield (path, subschema, required) for every property in the inlined schema; ``required``: its
    object lists it in ``required`` (then the object's own default supplies it)."""
    for key, sub in node.get("properties", {}).items():
        here = f"{path}.{key}" if path else key
        yield here, sub, key in node.get("required", [])
        if sub.get("type") == "object" or "properties" in sub:
            yield from walk_schema(sub, here)


def test_every_schema_key_has_type_description_default():
    schema = load_schema(REPO / "config/schema/config.schema.yaml")
    missing = [
        p
        for p, sub, required in walk_schema(schema)
        if "description" not in sub
        or ("default" not in sub and not required)
        or not ({"type", "enum", "oneOf", "anyOf"} & set(sub))
    ]
    assert not missing, f"schema keys without type/description/default: {missing}"


def test_objects_forbid_unknown_keys():
    schema = load_schema(REPO / "config/schema/config.schema.yaml")
    loose = [
        p
        for p, sub, _ in walk_schema(schema)
        if sub.get("type") == "object" and "properties" in sub and sub.get("additionalProperties", True) is not False
    ]
    assert not loose, f"objects that accept unknown keys: {loose}"


@pytest.mark.parametrize("path", WORKFLOW_CONFIGS, ids=lambda p: p.name)
def test_config_validates(path: Path):
    cfg = load_config(path, REPO / "config/schema/config.schema.yaml")
    assert cfg["seed"] >= 0


def test_unknown_key_is_named():
    with pytest.raises(
        ValueError, match=r"config key 'fairness\.no_such_key' = 1: unknown key \(fairness takes: enabled,"
    ):
        validate_config(
            deep_merge(base_config(), {"fairness": {"no_such_key": 1}}), REPO / "config/schema/config.schema.yaml"
        )


def test_wrong_type_is_named():
    with pytest.raises(ValueError, match=r"config key 'shard_size' = 'ten': expected integer$"):
        validate_config(deep_merge(base_config(), {"shard_size": "ten"}), REPO / "config/schema/config.schema.yaml")


@pytest.mark.slow
def test_snakemake_rejects_unknown_key_naming_it(workflow_dir):
    proc = run_snakemake(
        workflow_dir, ["-n"], config=deep_merge(base_config(), {"position": {"bogus_key": 3}}), check=False
    )
    assert proc.returncode != 0
    assert "bogus_key" in proc.stdout + proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("path", WORKFLOW_CONFIGS, ids=lambda p: p.name)
def test_dry_run_builds_dag(path: Path, workflow_dir):
    proc = run_snakemake(workflow_dir, ["-n", "--quiet", "rules"], config=yaml.safe_load(path.read_text()))
    assert proc.returncode == 0


# Per full config: model-preparation jobs that must appear, with the GPUs each must request.
PREPARATION = {
    "fairness-full.yaml": {"weights_qwq_32b_awq": 0, "weights_r1_distill_qwen_32b_awq": 0, "weights_qwen3_32b_awq": 0},
    "fairness-appendix-d.yaml": {
        "weights_gemma_2_27b_it": 0,
        "quantize_gemma_2_27b_it_awq": 1,
        "weights_llama_3_1_8b_instruct": 0,
    },
    "position-full.yaml": {
        "weights_r1_distill_qwen_7b_q4km": 0,
        "weights_qwen2_5_7b_instruct_q4km": 0,
        "weights_r1_distill_llama_8b_q4km": 0,
        "weights_llama_3_1_8b_instruct_q4km": 0,
    },
    "blindspot-full.yaml": {"weights_qwq_32b_awq": 0},
}
GENERATION_RULES = {
    "fairness-full.yaml": "fairness_generate",
    "fairness-appendix-d.yaml": "fairness_generate",
    "position-full.yaml": "position_generate",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PREPARATION))
def test_full_config_dry_run_lists_weights_quantize_and_gpu_jobs(name: str, workflow_dir):
    proc = run_snakemake(workflow_dir, ["-n"], config=yaml.safe_load((REPO / "config" / name).read_text()))
    jobs = dry_run_jobs(proc.stdout + "\n" + proc.stderr)
    by_rule = {j["rule"]: j for j in jobs}
    for rule, gpus in PREPARATION[name].items():
        assert rule in by_rule, f"{rule} missing from the dry-run of {name}"
        assert int(by_rule[rule]["resources"].get("gpu", 0)) == gpus, (rule, by_rule[rule]["resources"])
    if name in GENERATION_RULES:
        registry = yaml.safe_load((REPO / "config/models.yaml").read_text())
        generation = [j for j in jobs if j["rule"] == GENERATION_RULES[name]]
        assert generation
        for job in generation:
            model = dict(w.split("=", 1) for w in job["wildcards"].split(", "))["model"]
            local = registry[model]["backend"] != "openai"
            assert int(job["resources"].get("gpu", 0)) == int(local), job


@pytest.mark.slow
def test_local_calibration_file_is_an_input_of_the_quantize_rule(workflow_dir):
    registry = yaml.safe_load((REPO / "config/models.yaml").read_text())
    registry["gemma-2-27b-it-awq"]["quantize"]["calib_data"] = "resources/calibration.txt"
    (workflow_dir / "resources").mkdir(exist_ok=True)
    (workflow_dir / "resources/calibration.txt").write_text("one sample\nanother sample\n")
    (workflow_dir / "registry.yaml").write_text(yaml.safe_dump(registry, sort_keys=False))
    config = {**yaml.safe_load((REPO / "config/fairness-appendix-d.yaml").read_text()), "registry": "registry.yaml"}
    proc = run_snakemake(
        workflow_dir, ["-n", "resources/models/gemma-2-27b-it-awq/awq_quantization.json"], config=config
    )
    out = proc.stdout + proc.stderr
    block = out[out.index("rule quantize_gemma_2_27b_it_awq:") :]
    assert "resources/calibration.txt" in block.split("output:")[0]


SCHEMA_KEYWORDS = {
    "$schema",
    "type",
    "default",
    "description",
    "properties",
    "items",
    "enum",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "additionalProperties",
    "required",
    "pattern",
    "minItems",
    "maxItems",
    "propertyNames",
    "oneOf",
    "anyOf",
    "allOf",
    "const",
    "minLength",
    "maxLength",
    "if",
    "then",
    "$ref",
    "$defs",
}


def schema_nodes(node, path=""):
    """Every subschema (a dict that is not a ``properties`` map) with its path."""
    if isinstance(node, dict):
        if not path.endswith(("properties", "$defs")):  # maps of named subschemas
            yield path, node
        for key, value in node.items():
            if key not in ("default", "enum", "const"):  # values, not subschemas
                yield from schema_nodes(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from schema_nodes(value, f"{path}[{i}]")


@pytest.mark.parametrize("name", ["config.schema.yaml", "models.schema.yaml"])
def test_schema_nodes_use_only_json_schema_keywords(name):
    """Catches YAML slips such as an unquoted comma in a flow-style description, which silently cuts
    the description and adds a junk key."""
    schema = load_schema(REPO / "config/schema" / name)
    odd = [
        (path, sorted(set(node) - SCHEMA_KEYWORDS))
        for path, node in schema_nodes(schema)
        if set(node) - SCHEMA_KEYWORDS
    ]
    assert not odd, odd
