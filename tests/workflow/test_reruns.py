"""Editing a model's registry entry reruns the jobs that run that model (and what depends on them),
and nothing else: a real run of a tiny config with two models, then dry-runs after each edit."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from tests.helpers import REPO, dry_run_jobs, run_snakemake, tiny_config

MAIN, TWIN = "smollm2-135m", "smollm2-twin"


def two_model_workdir(workdir: Path, embedded_model: Path) -> dict:
    """Give ``workdir`` its own registry with a second id (``TWIN``) for the embedded weights, and a
    models folder holding both; return the registry."""
    registry = yaml.safe_load((REPO / "config/models.yaml").read_text())
    twin = copy.deepcopy(registry[MAIN])
    twin.pop("source")  # no download rule: its weights are the embedded file, linked below
    registry[TWIN] = twin
    models = workdir / "resources/models"
    models.unlink()
    for model_id in (MAIN, TWIN):
        (models / model_id).mkdir(parents=True)
        (models / model_id / embedded_model.name).symlink_to(embedded_model)
    write_registry(workdir, registry)
    return registry


def write_registry(workdir: Path, registry: dict) -> None:
    (workdir / "registry.yaml").write_text(yaml.safe_dump(registry, sort_keys=False))


def rerun_config() -> dict:
    """Every kind of model job, each as small as it gets: fairness generation (+ probes) of MAIN,
    position generation of both models and truncation of TWIN, the blindspot baseline of MAIN judged
    by TWIN as autorater."""
    cfg = tiny_config(
        fairness={
            "run": "reruns",
            "datasets": ["adult"],
            "n_records": 1,
            "think_budget": 4,
            "answer_budget": 2,
            "depths": 2,
            "sensitivity_depths": [2],
        },
        position={
            "benchmarks": {"mmlu": {"path": "resources/raw/mmlu/mmlu.jsonl", "n_questions": 1}},
            "runs": [{"model": MAIN, "mode": "direct"}, {"model": TWIN, "mode": "reasoning"}],
            "max_tokens": {"direct": 2, "cot": 2, "reasoning": 6},
            "wilcoxon_pairs": [],
            "truncation": {
                "runs": [{"model": TWIN, "mode": "reasoning", "benchmark": "mmlu"}],
                "n_questions": 1,
                "n_continuations": 1,
                "max_tokens": 2,
            },
        },
        blindspot={
            "n_inputs": 2,
            "n_clusters": 1,
            "embedder": "tfidf",
            "curated": {"ids": ["gender_female"]},
            "target": {"max_tokens": 4, "force_decision": True},
            "verbalization": {"judge": "autorater", "model": TWIN, "max_tokens": 4},
        },
    )
    return {**cfg, "registry": "registry.yaml"}


def targets() -> list[str]:
    """The model jobs' outputs (no analysis downstream, to keep the run short)."""
    return [
        f"results/fairness/reruns/generations/adult/{MAIN}/{arm}/shard-0.parquet" for arm in ("think", "nothink")
    ] + [
        f"results/position/mmlu/generations/{MAIN}/direct/shard-0.parquet",
        f"results/position/mmlu/generations/{TWIN}/reasoning/shard-0.parquet",
        f"results/position/mmlu/truncation/{TWIN}/reasoning/shard-0.parquet",
        f"results/blindspot/{MAIN}/loan/baseline_entry.json",
    ]


def planned(workdir: Path, config: dict) -> list[dict]:
    proc = run_snakemake(workdir, ["-n", *targets()], config=config)
    out = proc.stdout + "\n" + proc.stderr
    jobs = dry_run_jobs(out)
    assert jobs or "Nothing to be done" in out, out[-3000:]
    return jobs


def model_of(job: dict) -> str:
    return job["wildcard_values"].get("model", "")


@pytest.mark.slow
def test_registry_edit_reruns_only_that_models_jobs(workflow_dir, embedded_model):
    registry = two_model_workdir(workflow_dir, embedded_model)
    config = rerun_config()
    run_snakemake(workflow_dir, ["--cores", "2", *targets()], config=config, timeout=1500)
    assert planned(workflow_dir, config) == []

    # what the engine does not use (the description) changes nothing
    edited = copy.deepcopy(registry)
    edited[TWIN]["description"] = "another description"
    write_registry(workflow_dir, edited)
    assert planned(workflow_dir, config) == []

    # TWIN's chat template: its position generation and truncation and the blindspot judge it runs
    # rerun (Snakemake: params changed), then what reads them; nothing of MAIN's
    edited = copy.deepcopy(registry)
    edited[TWIN]["chat_template"] = "{% for m in messages %}{{ m['content'] }}\n{% endfor %}"
    write_registry(workflow_dir, edited)
    jobs = planned(workflow_dir, config)
    by_reason = {(j["rule"], model_of(j)): j["reason"] for j in jobs}
    assert set(by_reason) == {
        ("position_generate", TWIN),
        ("position_gather", TWIN),
        ("position_extract", TWIN),
        ("position_truncate", TWIN),
        ("blindspot_baseline_judge", MAIN),
    }, by_reason
    # (the truncation reads TWIN's new records, so Snakemake names that reason for it)
    assert "Params have changed" in by_reason[("position_generate", TWIN)], by_reason
    assert "Params have changed" in by_reason[("blindspot_baseline_judge", MAIN)], by_reason

    # MAIN's think tag: its fairness generations, position generation and blindspot baseline rerun
    # (the judge because it reads the baseline); nothing of TWIN's
    edited = copy.deepcopy(registry)
    edited[MAIN]["think_close"] = "</thinking>"
    write_registry(workflow_dir, edited)
    jobs = planned(workflow_dir, config)
    rules = sorted((j["rule"], model_of(j)) for j in jobs)
    assert rules == sorted(
        [
            ("fairness_generate", MAIN),
            ("fairness_generate", MAIN),
            ("position_generate", MAIN),
            ("blindspot_baseline", MAIN),
            ("blindspot_baseline_judge", MAIN),
        ]
    ), rules
    for job in jobs:
        if job["rule"] != "blindspot_baseline_judge":
            assert "Params have changed" in job["reason"], job
    assert "Params have changed" not in next(j for j in jobs if j["rule"] == "blindspot_baseline_judge")["reason"]

    write_registry(workflow_dir, registry)
    assert planned(workflow_dir, config) == []
