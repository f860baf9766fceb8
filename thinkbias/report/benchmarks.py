"""Per-job wall time, memory and generation throughput of the model jobs of a run.

Each model job declares its metrics file (``thinkbias.llm.metrics``) as an output, under a root
(``results/job_metrics``) at the same relative path as the Snakemake ``benchmark:`` file Snakemake
writes for the job under ``results/benchmarks`` (``.json`` for ``.tsv``). The benchmark table takes
the metrics files as its declared inputs: tokens come from them, wall time and peak memory from the
job's benchmark file beside (the metrics file's own wall time when there is none).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

import pandas as pd

from thinkbias.llm.metrics import read_job_metrics

COLUMNS = ["study", "step", "job", "wall_s", "max_rss_mb", "generated_tokens", "tokens_per_s"]


def benchmark_table(
    metrics_files: Iterable[str | Path], metrics_root: str | Path, bench_root: str | Path
) -> pd.DataFrame:
    """One row per model job: study, step, job (the wildcard path), wall seconds, peak RSS (MB),
    generated tokens (empty for a job that closed no batch) and tokens per second of wall time.
    Sorted by study, step, job."""
    metrics_root, bench_root = Path(metrics_root), Path(bench_root)
    outside = [str(p) for p in metrics_files if not Path(p).is_relative_to(metrics_root)]
    if outside:
        raise ValueError(f"{len(outside)} job metrics file(s) outside {metrics_root}: {', '.join(outside[:3])}")
    rows = []
    for rel in sorted(Path(p).relative_to(metrics_root) for p in metrics_files):
        metrics = read_job_metrics(metrics_root / rel)
        parts = rel.with_suffix("").parts
        tsv = bench_root / rel.with_suffix(".tsv")
        bench = pd.read_csv(tsv, sep="\t") if tsv.exists() else pd.DataFrame()
        last = bench.iloc[-1] if len(bench) else None  # repeated benchmarks: the last run
        wall = float(last["s"]) if last is not None else metrics.wall_s
        rss = None if last is None or pd.isna(last.get("max_rss")) else round(float(last["max_rss"]), 1)
        tokens = metrics.generated_tokens if metrics.batches else None
        rows.append(
            {
                "study": parts[0],
                "step": parts[1] if len(parts) > 2 else "",
                "job": "/".join(parts[2:]) if len(parts) > 2 else "/".join(parts[1:]),
                "wall_s": round(wall, 2),
                "max_rss_mb": rss,
                "generated_tokens": tokens,
                "tokens_per_s": round(tokens / wall, 1) if tokens is not None and wall > 0 else None,
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)
