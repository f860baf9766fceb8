"""config/vllm-cpu.yaml through real Snakemake: the fairness study (both arms, CDPG probes, tables,
figures, report) and the blindspot target steps on vLLM, on the CPU (vllm-cpu), at small sizes."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml

from tests.helpers import REPO, deep_merge, run_snakemake
from tests.llm.vllm_fixtures import VLLM_MODEL

pytestmark = pytest.mark.slow

SMALL = {
    "fairness": {
        "datasets": ["adult"],
        "n_records": 4,
        "depths": 5,
        "sensitivity_depths": [5],
        "bootstrap_samples": 50,
    },
    "blindspot": {"n_inputs": 8},
}


def test_vllm_cpu_config_runs_fairness_and_the_blindspot_targets(workflow_dir, vllm_snapshot):
    config = deep_merge(yaml.safe_load((REPO / "config/vllm-cpu.yaml").read_text()), SMALL)
    run_snakemake(workflow_dir, ["--cores", "2", "fairness", "blindspot"], config=config, timeout=3600)
    run = workflow_dir / "results/fairness/vllm-cpu"
    table2 = pd.read_csv(run / "tables/table2.csv")
    assert set(table2["model"]) - {"pooled"} == {VLLM_MODEL} and set(table2["dataset"]) - {"pooled"} == {"adult"}
    counts = pd.read_csv(run / "tables/parse_counts.csv")
    assert set(counts["model"]) == {VLLM_MODEL}
    assert (run / "figures/figure3.png").stat().st_size > 0
    probes = pd.read_parquet(run / "probes/adult" / VLLM_MODEL / "think/shard-0.parquet")
    assert len(probes) > 0
    metrics = workflow_dir / "results/job_metrics/fairness/vllm-cpu/generate/adult" / VLLM_MODEL
    for arm in ("nothink", "think"):
        m = json.loads((metrics / arm / "shard-0.json").read_text())
        assert m["requests"] > 0 and m["engine"].startswith("vllm ") and "device cpu" in m["engine"]
    think = json.loads((metrics / "think/shard-0.json").read_text())
    assert think["generated_tokens"] > 0 and think["preemptions"] == 0
    # the CDPG probes ran in waves on the prefix cache: vLLM's own counters, through the job's metrics
    assert think["probe_cached_tokens"] >= 0.8 * think["probe_tokens"] > 0
    report = (run / "report.md").read_text()
    assert "## Engine build" in report and "device cpu, dtype float32, quantization none" in report
    # the blindspot audit's target steps ran on vLLM
    bs = workflow_dir / "results/blindspot" / VLLM_MODEL / "loan"
    assert len(pd.read_parquet(bs / "baseline.parquet")) > 0
    assert len(pd.read_parquet(bs / "stage-0/responses.parquet")) > 0
    job = json.loads((workflow_dir / "results/job_metrics/blindspot/baseline" / VLLM_MODEL / "loan.json").read_text())
    assert job["engine"].startswith("vllm ")
    assert "vllm" in (workflow_dir / "results/blindspot/report.md").read_text()
