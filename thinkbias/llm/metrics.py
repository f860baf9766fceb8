"""A model job's metrics as data: the counters of its closing log lines, summed, in a JSON file.

Every batch a job runs through an engine ends with ``Progress.finish`` (``thinkbias.llm.run``),
which logs the closing line ``<label>: finished, generated_tokens=N ...`` and attaches the same
counters, as a :class:`JobMetrics`, to that log record. ``rule_logging(log, metrics=path)``
(``thinkbias.workflow``) collects them with :func:`collect_job_metrics` and, when the script
succeeds, writes their sum and the script's wall time with :func:`write_job_metrics`, the one
writer of these files; a failed job writes none. The per-job benchmark table
(``thinkbias.report.benchmarks``) reads them back with :func:`read_job_metrics`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

RECORD_ATTR = "job_metrics"  # the log-record attribute that carries a closing line's counters


@dataclass(frozen=True)
class JobMetrics:
    """Work of one job (or one batch: ``batches == 1``), counted by this process.

    ``batches``: batches closed (closing lines); ``requests``: results reported, cached or not;
    ``cached``: results served from the cache; ``cache_unverified``: cache entries served without a
    checksum to verify them (stored before entries carried one; ``thinkbias.llm.cache``), each served
    one counted; ``generated_tokens``: tokens the model generated now
    (the engine's counter); ``prompt_tokens``: prompt tokens of the results generated now;
    ``probe_tokens``: further prompt-side tokens the engine evaluated (probe cues, answer scores,
    forced decisions); ``retries`` and ``retry_wait_s``: API attempts repeated after a retryable
    failure and the seconds waited before them; ``empty_replies``: API replies that held no answer
    (no content nor reasoning, or a refusal), each retried and never cached; ``probe_cached_tokens``:
    the part of ``probe_tokens`` served from the engine's prefix cache (vLLM); ``preemptions``: running
    requests the engine evicted for KV room and recomputed (vLLM); ``wall_s``: seconds
    the job's script ran (0 for a batch); ``engine``: the engine build the model ran on (backend and
    version, CPU variant and its instruction sets, threads: ``thinkbias.llm.run.engine_build``), ""
    where no model ran.
    """

    batches: int = 0
    requests: int = 0
    cached: int = 0
    cache_unverified: int = 0
    generated_tokens: int = 0
    prompt_tokens: int = 0
    probe_tokens: int = 0
    retries: int = 0
    retry_wait_s: float = 0.0
    empty_replies: int = 0
    probe_cached_tokens: int = 0
    preemptions: int = 0
    wall_s: float = 0.0
    engine: str = ""

    def __add__(self, other: JobMetrics) -> JobMetrics:
        summed = {f.name: getattr(self, f.name) + getattr(other, f.name) for f in dataclasses.fields(self)}
        summed["engine"] = merge_builds(self.engine, other.engine)
        return JobMetrics(**summed)


BUILD_SEPARATOR = " | "


def merge_builds(*builds: str) -> str:
    """The distinct engine builds of several batches, in order of first appearance."""
    seen: list[str] = []
    for build in builds:
        for part in build.split(BUILD_SEPARATOR) if build else []:
            if part not in seen:
                seen.append(part)
    return BUILD_SEPARATOR.join(seen)


FIELDS = {f.name: f.type for f in dataclasses.fields(JobMetrics)}
# keys added after metrics files were first written, with the value a file without one reads as
LATER_FIELDS = {"empty_replies": 0, "engine": "", "probe_cached_tokens": 0, "preemptions": 0, "cache_unverified": 0}


def write_job_metrics(path: str | Path, metrics: JobMetrics) -> None:
    """Write ``metrics`` as a JSON object (one key per field) to ``path``, atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    values = dataclasses.asdict(metrics)
    values["retry_wait_s"] = round(float(values["retry_wait_s"]), 3)
    values["wall_s"] = round(float(values["wall_s"]), 6)  # a job of under a millisecond still shows its time
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(values, indent=1) + "\n")
    os.replace(tmp, path)


def read_job_metrics(path: str | Path) -> JobMetrics:
    """The metrics a job wrote with :func:`write_job_metrics`; a file that is not such an object
    (not JSON, a missing or unknown key, a negative, fractional or non-numeric count) stops with
    the file and every offending key. A key of ``LATER_FIELDS`` missing (a file written before it
    existed) reads as its value there."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: not a job metrics file ({err})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a job metrics file holds a JSON object, found {type(data).__name__}")
    data = {**LATER_FIELDS, **data}
    problems = [f"missing key '{k}'" for k in FIELDS if k not in data]
    problems += [f"unknown key '{k}'" for k in data if k not in FIELDS]
    for key, value in data.items():
        if key not in FIELDS:
            continue
        if FIELDS[key] == "str":
            if not isinstance(value, str):
                problems.append(f"'{key}' = {value!r} is not a text")
            continue
        whole = FIELDS[key] == "int"
        number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        if not number or value < 0 or (whole and value != int(value)):
            kind = "a count (whole number >= 0)" if whole else "seconds (a number >= 0)"
            problems.append(f"'{key}' = {value!r} is not {kind}")
    if problems:
        raise ValueError(f"{path}: {len(problems)} bad job metrics value(s): {'; '.join(problems)}")
    kinds = {"int": int, "float": float, "str": str}
    return JobMetrics(**{k: kinds[FIELDS[k]](v) for k, v in data.items()})


def engine_builds(paths: Sequence[str | Path]) -> dict[str, int]:
    """Each engine build named by the job metrics files ``paths`` -> how many jobs ran on it."""
    counts: dict[str, int] = {}
    for path in paths:
        for build in read_job_metrics(path).engine.split(BUILD_SEPARATOR):
            if build:
                counts[build] = counts.get(build, 0) + 1
    return counts


def engine_build_lines(paths: Sequence[str | Path]) -> list[str]:
    """Markdown bullet lines naming every engine build a study's model jobs ran on (with their
    number of jobs), or saying that none ran (outputs brought from elsewhere, or all cached)."""
    counts = engine_builds(paths)
    if not counts:
        return ["- no model job of this run recorded an engine build (outputs brought in, or none ran)"]
    return [f"- {build} ({n} job{'s' if n != 1 else ''})" for build, n in counts.items()]


class _Collector(logging.Handler):
    """Sums the :class:`JobMetrics` that closing lines carry (records of the logger and its children)."""

    def __init__(self) -> None:
        super().__init__()
        self.total = JobMetrics()

    def emit(self, record: logging.LogRecord) -> None:
        batch = getattr(record, RECORD_ATTR, None)
        if isinstance(batch, JobMetrics):
            self.total = self.total + batch


@contextlib.contextmanager
def collect_job_metrics(logger: logging.Logger, path: str | Path | None) -> Iterator[None]:
    """Sum the closing lines ``logger`` (or a child) logs meanwhile and, when the block ends without
    an error, write them with the block's wall time to ``path`` (nothing when ``path`` is None)."""
    if path is None:
        yield
        return
    collector, start = _Collector(), time.monotonic()
    logger.addHandler(collector)
    try:
        yield
    finally:
        logger.removeHandler(collector)
    write_job_metrics(path, dataclasses.replace(collector.total, wall_s=time.monotonic() - start))


def engine_build_section(paths: Sequence[str | Path]) -> str:
    """The Markdown section of a study report naming the engine builds its model jobs ran on (why:
    greedy outputs are reproducible on one build, not across CPU kernels; docs/engine.md)."""
    lines = [
        "## Engine build",
        "",
        "The model jobs of this run ran on (greedy outputs repeat on one build, not across CPU kernel "
        "variants or GPUs; docs/engine.md, determinism policy):",
        "",
        *engine_build_lines(paths),
    ]
    return "\n".join(lines) + "\n"
