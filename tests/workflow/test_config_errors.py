"""A bad config stops with one short message naming the key, its value and what was expected, and
text values from ``snakemake --config`` are read by the schema's types."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.helpers import REPO, base_config, deep_merge, dry_run_jobs, run_snakemake
from thinkbias.config import ConfigError, coerce_text, load_schema, validate_config
from thinkbias.config_refs import check_references, reference_errors
from thinkbias.llm.registry import read_registry

SCHEMA = REPO / "config/schema/config.schema.yaml"
REGISTRY = REPO / "config/models.yaml"


def filled(override: dict) -> dict:
    return validate_config(deep_merge(base_config(), override), SCHEMA)


def test_text_reads_as_the_type_the_schema_expects():
    schema = load_schema(SCHEMA)
    given = {
        "shard_size": "8",
        "fairness": {
            "n_records": "40",
            "noise_floor": "0.02",
            "enabled": "false",
            "run": "123",
            "sensitivity_depths": ["5", "10"],
        },
        "position": {"benchmarks": {"mmlu": {"path": "x.jsonl", "n_questions": "3"}}},
        "blindspot": {"n_inputs_by_task": {"loan": "null"}},
    }
    out = coerce_text(given, schema)
    assert out == {
        "shard_size": 8,
        "fairness": {
            "n_records": 40,
            "noise_floor": 0.02,
            "enabled": False,
            "run": "123",
            "sensitivity_depths": [5, 10],
        },
        "position": {"benchmarks": {"mmlu": {"path": "x.jsonl", "n_questions": 3}}},
        "blindspot": {"n_inputs_by_task": {"loan": None}},
    }
    # text that is not the expected type stays text, for validation to report
    assert coerce_text({"shard_size": "8.5", "fairness": {"enabled": "yes"}}, schema) == {
        "shard_size": "8.5",
        "fairness": {"enabled": "yes"},
    }
    assert filled({"fairness": {"n_records": "40"}})["fairness"]["n_records"] == 40


@pytest.mark.parametrize(
    "override, line",
    [
        ({"fairness": {"n_records": "four"}}, "config key 'fairness.n_records' = 'four': expected integer"),
        (
            {"fairness": {"datasets": ["adult", "adultt"]}},
            "config key 'fairness.datasets[1]' = 'adultt': expected one of adult, compas, credit",
        ),
        (
            {"position": {"benchmarks": {"mmlu": {"path": "m.jsonl", "n_questions": 0}}}},
            "config key 'position.benchmarks.mmlu.n_questions' = 0: expected >= 1",
        ),
        (
            {"position": {"benchmarks": {"mmluu": {"path": "m.jsonl", "n_questions": 2}}}},
            "config key 'position.benchmarks.mmluu': unknown name 'mmluu' (expected one of mmlu, arc, gpqa)",
        ),
        ({"position": {"runs": [{"model": "smollm2-135m"}]}}, "config key 'position.runs[0].mode': missing (required)"),
        (
            {"blindspot": {"stages": {"bogus": 1}}},
            "config key 'blindspot.stages.bogus' = 1: unknown key (blindspot.stages takes: ",
        ),
    ],
)
def test_each_error_is_one_line_with_path_value_and_expectation(override, line):
    with pytest.raises(ValueError) as err:
        filled(override)
    lines = str(err.value).splitlines()
    assert lines[0] == "invalid config:" and len(lines) == 2, lines
    assert lines[1].strip().startswith(line), lines


def test_unknown_model_ids_are_named_at_their_key():
    registry = read_registry(REGISTRY)
    cfg = filled(
        {
            "fairness": {"models": ["smollm2-135m", "qwq-32b"]},
            "blindspot": {"verbalization": {"judge": "autorater", "model": "gpt-5-mni-api"}},
        }
    )
    errors = reference_errors(cfg, registry, REGISTRY)
    assert [e.split(":")[0] for e in errors] == [
        "config key 'fairness.models[1]' = 'qwq-32b'",
        "config key 'blindspot.verbalization.model' = 'gpt-5-mni-api'",
    ]
    assert "known: " in errors[0] and "qwq-32b-awq" in errors[0]
    # a model switched off (the keyword judge) or a study fed with its own outputs is not checked
    cfg = filled(
        {
            "blindspot": {"verbalization": {"judge": "keywords", "model": "nope"}},
            "fairness": {"predictions": "p.csv", "models": ["nope"]},
        }
    )
    assert reference_errors(cfg, registry, REGISTRY) == []


def test_position_references_name_the_key_not_a_missing_run():
    registry = read_registry(REGISTRY)
    runs = [{"model": "smollm2-135m", "mode": "direct"}, {"model": "smollm2-135m-instruc", "mode": "reasoning"}]
    errors = reference_errors(filled({"position": {"runs": runs}}), registry, REGISTRY)
    assert len(errors) == 1 and errors[0].startswith(
        "config key 'position.runs[1].model' = 'smollm2-135m-instruc': not a model of the registry"
    )
    runs[1]["model"] = "smollm2-135m"
    runs[1]["mode"] = "cot"
    errors = reference_errors(filled({"position": {"runs": runs}}), registry, REGISTRY)
    assert [e.split(" = ")[0] for e in errors] == [
        "config key 'position.truncation.runs[0]'",
        "config key 'position.wilcoxon_pairs[0].reasoning'",
        "config key 'position.wilcoxon_pairs[1].reasoning'",
    ], errors
    assert "runs: smollm2-135m/cot, smollm2-135m/direct" in errors[0]


NO_THINK = "llama-3.1-8b-instruct-q4km"  # thinking: none in the registry


def test_a_model_without_a_think_arm_in_reasoning_mode_is_named_by_the_config_check():
    registry = read_registry(REGISTRY)
    assert registry[NO_THINK]["thinking"] == "none"
    runs = [
        {"model": "smollm2-135m", "mode": "direct"},
        {"model": "smollm2-135m", "mode": "cot"},
        {"model": "smollm2-135m", "mode": "reasoning"},
        {"model": NO_THINK, "mode": "direct"},
        {"model": NO_THINK, "mode": "cot"},
        {"model": NO_THINK, "mode": "reasoning"},
    ]
    cfg = filled({"position": {"runs": runs}})
    line = (
        f"config key 'position.runs[5].mode' = 'reasoning': model '{NO_THINK}' has thinking: none in {REGISTRY}, "
        "so it has no think arm for mode 'reasoning' (use mode direct or cot, or a model with thinking native, "
        "prefill or prompt)"
    )
    assert reference_errors(cfg, registry, REGISTRY) == [line]
    with pytest.raises(ConfigError) as err:
        check_references({**cfg, "registry": str(REGISTRY)})
    assert str(err.value) == f"invalid config:\n  {line}"
    # the same model in direct and CoT mode, or with its own outputs, needs no think arm
    assert reference_errors(filled({"position": {"runs": runs[:5]}}), registry, REGISTRY) == []
    byo = filled({"position": {"runs": runs, "byo_generations": "g.csv"}})
    assert reference_errors(byo, registry, REGISTRY) == []


def test_a_fairness_model_without_a_think_arm_is_named_by_the_config_check():
    registry = read_registry(REGISTRY)
    errors = reference_errors(filled({"fairness": {"models": ["smollm2-135m", NO_THINK]}}), registry, REGISTRY)
    assert errors == [
        f"config key 'fairness.models[1]' = '{NO_THINK}': model '{NO_THINK}' has thinking: none in {REGISTRY}, "
        "but the fairness study runs every model in a think and a nothink arm"
    ]


def short_pin_registry(folder: Path) -> tuple[Path, str]:
    """A copy of the registry whose embedded model's GGUF is pinned to its first 16 hex digits."""
    registry = read_registry(REGISTRY)
    short = registry["smollm2-135m"]["files"][0]["sha256"][:16]
    registry["smollm2-135m"]["files"][0]["sha256"] = short
    path = folder / "models-short-pin.yaml"
    path.write_text(yaml.safe_dump(registry, sort_keys=False))
    return path, short


def test_a_malformed_sha256_in_the_registry_is_named_by_the_config_check(tmp_path):
    path, short = short_pin_registry(tmp_path)
    errors = reference_errors(filled({}), read_registry(path), path)
    assert errors == [
        f"config key 'fairness.models[0]' = 'smollm2-135m': {path}: model 'smollm2-135m' (llamacpp backend): "
        f"invalid registry entry: registry key 'files[0].sha256' = '{short}': malformed registry value "
        "(16 characters, a sha256 is 64 hex digits; either case)"
    ]
    upper = read_registry(REGISTRY)
    upper["smollm2-135m"]["files"][0]["sha256"] = upper["smollm2-135m"]["files"][0]["sha256"].upper()
    assert reference_errors(filled({}), upper, REGISTRY) == []


def message_lines(proc) -> list[str]:
    """What Snakemake prints about a failed config, without its banner line about --config."""
    return [
        line
        for line in (proc.stdout + proc.stderr).splitlines()
        if line.strip() and "is extended by additional config" not in line
    ]


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, where, value",
    [
        (["--config", 'fairness={"n_recordz": 4}'], "fairness.n_recordz", "'4'"),
        (["--config", "shard_size=ten"], "shard_size", "'ten'"),
        (
            ["--config", 'position={"runs": [{"model": "smollm2-135m-instruc", "mode": "reasoning"}]}'],
            "position.runs[0].model",
            "'smollm2-135m-instruc'",
        ),
        (["--config", 'position={"models": ["smollm2-135m-instruc"]}'], "position.models", "['smollm2-135m-instruc']"),
    ],
)
def test_snakemake_reports_a_bad_config_in_a_few_lines(workflow_dir, args, where, value):
    proc = run_snakemake(workflow_dir, ["-n", *args], check=False, timeout=300)
    assert proc.returncode != 0
    lines = message_lines(proc)
    assert any(f"config key '{where}' = {value}" in line for line in lines), lines
    assert len(lines) < 15, lines
    out = proc.stdout + proc.stderr
    assert "Failed validating" not in out and "'description'" not in out and "no generation run" not in out


@pytest.mark.slow
def test_snakemake_dry_run_stops_on_reasoning_mode_for_a_model_without_a_think_arm(workflow_dir):
    runs = [{"model": "smollm2-135m", "mode": mode} for mode in ("direct", "cot", "reasoning")]
    runs.append({"model": NO_THINK, "mode": "reasoning"})  # otherwise the embedded default, whose references hold
    proc = run_snakemake(workflow_dir, ["-n", "--config", f"position={json.dumps({'runs': runs})}"], check=False)
    assert proc.returncode != 0
    lines = message_lines(proc)
    line = (
        f"config key 'position.runs[3].mode' = 'reasoning': model '{NO_THINK}' has thinking: none in "
        "config/models.yaml, so it has no think arm for mode 'reasoning'"
    )
    assert any(line in ln for ln in lines), lines
    assert len(lines) < 15, lines
    assert "Building DAG" not in proc.stdout + proc.stderr


@pytest.mark.slow
def test_snakemake_dry_run_stops_on_a_malformed_registry_sha256(workflow_dir):
    path, short = short_pin_registry(workflow_dir)
    proc = run_snakemake(workflow_dir, ["-n", "--config", f"registry={path}"], check=False)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert f"registry key 'files[0].sha256' = '{short}': malformed registry value" in out, out
    assert str(path) in out and "model 'smollm2-135m'" in out
    assert "changed after it was fetched" not in out and "Building DAG" not in out


@pytest.mark.slow
def test_nested_numbers_and_booleans_from_the_command_line(workflow_dir):
    proc = run_snakemake(
        workflow_dir,
        ["-n", "--config", 'fairness={"n_records": 40}', 'position={"enabled": false}', 'blindspot={"enabled": false}'],
        timeout=300,
    )
    jobs = dry_run_jobs(proc.stdout + "\n" + proc.stderr)
    rules = [j["rule"] for j in jobs]
    # 40 records at 16 per shard: 3 shards x 2 arms x 2 datasets
    assert rules.count("fairness_generate") == 12, rules
    assert not any(r.startswith(("position", "blindspot")) for r in rules), rules
