"""Per-job wall time, memory and generation throughput from Snakemake `benchmark:` files and job logs.

Snakemake writes one TSV per job (columns s, max_rss, ...). LLM jobs log a closing line
``generated_tokens=N`` (see ``thinkbias.llm.run``); a job's log is found at the same relative path
under ``logs/`` as its benchmark file under ``results/benchmarks/``, with ``.log`` for ``.tsv``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

# only the closing lines: a job may log other counters named alike (e.g. the engine's stats)
TOKENS_RE = re.compile(r": finished, generated_tokens=(\d+)")


def generated_tokens(log_path: Path) -> int | None:
    """Sum of ``generated_tokens=N`` over a job log's ``<label>: finished, ...`` closing lines (a job
    that runs several batches closes each); None when the log has none."""
    if not log_path.exists():
        return None
    found = [int(m.group(1)) for m in TOKENS_RE.finditer(log_path.read_text(errors="replace"))]
    return sum(found) if found else None


def benchmark_table(bench_root: Path, log_root: Path) -> pd.DataFrame:
    """One row per benchmarked job: study, step, job (the wildcard path), wall seconds, peak RSS
    (MB), generated tokens and tokens per second of wall time. Sorted by study, step, job."""
    rows = []
    for tsv in sorted(bench_root.rglob("*.tsv")):
        rel = tsv.relative_to(bench_root)
        parts = rel.with_suffix("").parts
        bench = pd.read_csv(tsv, sep="\t")
        if bench.empty:
            continue
        last = bench.iloc[-1]  # repeated benchmarks: the last run
        tokens = generated_tokens(log_root / rel.with_suffix(".log"))
        wall = float(last["s"])
        rows.append({
            "study": parts[0],
            "step": parts[1] if len(parts) > 2 else "",
            "job": "/".join(parts[2:]) if len(parts) > 2 else "/".join(parts[1:]),
            "wall_s": round(wall, 2),
            "max_rss_mb": None if pd.isna(last.get("max_rss")) else round(float(last["max_rss"]), 1),
            "generated_tokens": tokens,
            "tokens_per_s": round(tokens / wall, 1) if tokens is not None and wall > 0 else None,
        })
    columns = ["study", "step", "job", "wall_s", "max_rss_mb", "generated_tokens", "tokens_per_s"]
    return pd.DataFrame(rows, columns=columns)
