"""The study's configurations as the workflow sees them: which (benchmark, model, mode) to generate,
how many prompts each has, and how the prompts table is cut into shards.

Functions take the ``position`` section of the config (a plain dict, defaults already filled) and
return plain values; the rules call them, so the DAG is known before anything runs.
"""

from __future__ import annotations

import math

from thinkbias.position.items import n_orderings


def generation_runs(section: dict) -> list[dict]:
    """One dict per (benchmark, model, mode) with ``n_questions`` (the run's cap or the benchmark's
    sample size), in config order. Raises ValueError on duplicates or unknown benchmarks."""
    out, seen = [], set()
    benchmarks = section.get("benchmarks", {})
    for run in section.get("runs", []):
        names = run.get("benchmarks") or list(benchmarks)
        for bench in names:
            if bench not in benchmarks:
                raise ValueError(
                    f"position run {run['model']}/{run['mode']}: benchmark '{bench}' is not configured "
                    f"(configured: {', '.join(benchmarks)})"
                )
            key = (bench, run["model"], run["mode"])
            if key in seen:
                raise ValueError(f"position: configuration {bench}/{run['model']}/{run['mode']} is listed twice")
            seen.add(key)
            n = int(benchmarks[bench]["n_questions"])
            cap = run.get("n_questions")
            out.append(
                {
                    "benchmark": bench,
                    "model": run["model"],
                    "mode": run["mode"],
                    "n_questions": min(n, int(cap)) if cap else n,
                }
            )
    return out


def find_run(section: dict, benchmark: str, model: str, mode: str) -> dict:
    """The generation run of one configuration (ValueError when it is not configured)."""
    for run in generation_runs(section):
        if (run["benchmark"], run["model"], run["mode"]) == (benchmark, model, mode):
            return run
    raise ValueError(f"position: no generation run for {benchmark}/{model}/{mode}")


def n_prompts(section: dict, benchmark: str, model: str, mode: str) -> int:
    """Prompts of a configuration: its questions x the orderings of ``section["orderings"]`` (4
    cyclic shifts or all 24; an upper bound when the benchmark has fewer 4-option items than asked;
    surplus shards are empty)."""
    return find_run(section, benchmark, model, mode)["n_questions"] * n_orderings(section.get("orderings", "cyclic"))


def shard_count(n_items: int, shard_size: int) -> int:
    """Number of shards of ``shard_size`` covering ``n_items`` (at least one)."""
    return max(1, math.ceil(n_items / shard_size))


def shard_slice(shard: int, shard_size: int, n_items: int) -> tuple[int, int]:
    """Row range [start, stop) of one shard of the first ``n_items`` rows."""
    start = shard * shard_size
    return min(start, n_items), min(start + shard_size, n_items)


def truncation_runs(section: dict) -> list[dict]:
    """Truncation configurations, each checked against the generation runs."""
    runs = section.get("truncation", {}).get("runs", [])
    for r in runs:
        find_run(section, r["benchmark"], r["model"], r["mode"])
    return runs


def truncation_shard_count(section: dict) -> int:
    """Continuation jobs per truncation configuration."""
    t = section["truncation"]
    return shard_count(int(t["n_questions"]), int(t["questions_per_shard"]))


def depth_probe_runs(section: dict) -> list[dict]:
    """Generation runs whose traces the depth probe reads: a mode in ``depth_probe.modes``, and
    generations made by the workflow (none for bring-your-own outputs). ``depth_probe.enabled``
    decides only whether the study's target includes the probe (``depth_probe_enabled``)."""
    if section.get("byo_generations"):
        return []
    modes = set((section.get("depth_probe") or {}).get("modes", []))
    return [r for r in generation_runs(section) if r["mode"] in modes]


def depth_probe_enabled(section: dict) -> bool:
    """Whether the study's target (and the default target) includes the depth probe's products."""
    return bool((section.get("depth_probe") or {}).get("enabled", False)) and bool(depth_probe_runs(section))
