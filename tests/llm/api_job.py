"""A model job run as its own process, the way ``scripts/position/generate.py`` runs one: N requests
through ``run_requests`` on a registry model, under ``rule_logging`` with the job's log and metrics
file; prints the answers and the engine counters as one JSON line. It fails as a job fails (the
error in the log, a non-zero exit code, no metrics file).

    python -m tests.llm.api_job REGISTRY MODEL CACHE_DIR N LOG METRICS
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

from thinkbias.llm import load_model_spec, open_engine
from thinkbias.llm.run import run_requests
from thinkbias.llm.types import Request, Sampling
from thinkbias.workflow import rule_logging

REPO = Path(__file__).resolve().parents[2]


def job_requests(n: int) -> list[Request]:
    return [
        Request.chat(f"Question {i}: which option, A, B, C or D?", sampling=Sampling(max_tokens=4)) for i in range(n)
    ]


def run_job(registry: str, cache_dir: Path, n: int, log: Path, metrics: Path, model: str = "scripted-api"):
    """Run this module as a job process; returns the completed process (output captured)."""
    args = [registry, model, str(cache_dir), str(n), str(log), str(metrics)]
    return subprocess.run(
        [sys.executable, "-m", "tests.llm.api_job", *args], cwd=REPO, capture_output=True, text=True, timeout=120
    )


def main() -> None:
    registry, model, cache_dir, n, log, metrics = sys.argv[1:7]
    with rule_logging(log, metrics=metrics) as logger:
        with open_engine(load_model_spec(registry, model), cache_dir) as engine:
            gens = run_requests(engine, job_requests(int(n)), logger)
            stats = asdict(engine.stats)
    print(json.dumps({"answers": [g.answer for g in gens], "cached": [g.cached for g in gens], **stats}))


if __name__ == "__main__":
    main()
