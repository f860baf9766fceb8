"""benchmarks/bench_batching.py with tiny sizes: it runs the production path and prints its table."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_batching_benchmark_prints_a_ratio_per_size(tmp_path, embedded_model):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks/bench_batching.py"),
            "--sequences",
            "1",
            "3",
            "--threads",
            "1",
            "--tokens",
            "6",
            "--reps",
            "2",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = re.findall(
        r"^\| 1 \| (\d+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \(([\d.]+)-([\d.]+)\) \|$", proc.stdout, re.M
    )
    assert [int(r[0]) for r in rows] == [1, 3]
    for _, seq, bat, ratio, low, high in rows:
        assert float(seq) > 0 and float(bat) > 0 and float(low) <= float(ratio) <= float(high)
