"""Resources of the model-preparation jobs."""

from __future__ import annotations

import yaml

from tests.helpers import REPO, dry_run_jobs, make_workflow_dir, run_snakemake
from thinkbias.models.jobs import quantize_mem_mb, quantize_rule


def test_a_quantize_job_asks_for_memory_in_proportion_to_its_source():
    assert quantize_mem_mb(50.7) == 122000  # gemma-2-27b-it in bf16: 2.4 x 50.7 GB, to the GB
    assert quantize_mem_mb(0.54) == 4000  # SmolLM2-135M in fp32 (peak measured 1.7 GB): the floor
    assert quantize_mem_mb(None) == 4000


def test_each_quantize_rule_asks_for_its_sources_memory_and_gpus(tmp_path):
    """Snakemake's own listing of every quantize job: mem_mb from the source's size, gpu from the entry."""
    registry = yaml.safe_load((REPO / "config/models.yaml").read_text())
    quantized = {m: e for m, e in registry.items() if "quantize" in e}
    workdir = make_workflow_dir(tmp_path / "wf")
    proc = run_snakemake(workdir, ["-n", "-f", *(quantize_rule(m) for m in quantized)])
    jobs = {j["rule"]: j["resources"] for j in dry_run_jobs(proc.stdout + "\n" + proc.stderr)}
    assert len(quantized) >= 2
    for model, entry in quantized.items():
        resources = jobs[quantize_rule(model)]
        assert int(resources["mem_mb"]) == quantize_mem_mb(registry[entry["quantize"]["from"]].get("size_gb")), model
        assert int(resources["gpu"]) == int(entry.get("gpus", 0)), model
