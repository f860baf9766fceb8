"""Run a batch of requests through an engine with progress lines in the job's log.

A progress line reports items done (and how many came from the cache), tokens generated per second
by this process, prompt tokens per second (prefill dominates short-answer jobs), and the estimated
time left, at most every ``every_s`` seconds and at the end.
"""

from __future__ import annotations

import logging
import time
from typing import Sequence

from thinkbias.llm.types import Engine, Generation, Request


def format_eta(seconds: float) -> str:
    """``1h02m``, ``3m05s`` or ``12s``."""
    s = int(round(max(0.0, seconds)))
    if s >= 3600:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


class Progress:
    """Counts results and logs ``done i/N (c cached), x tok/s, prompt y tok/s, ETA`` lines."""

    def __init__(self, total: int, logger: logging.Logger | None, every_s: float = 15.0, label: str = "generate"):
        self.total, self.logger, self.every_s, self.label = total, logger, every_s, label
        self.done = self.cached = self.tokens = self.prompt_tokens = 0
        self.start = self._last = time.monotonic()

    def line(self) -> str:
        elapsed = max(1e-9, time.monotonic() - self.start)
        fresh = self.done - self.cached
        rate = self.tokens / elapsed
        prompt_rate = self.prompt_tokens / elapsed
        remaining = self.total - self.done
        eta = (elapsed / fresh) * remaining if fresh else 0.0
        return (f"{self.label}: done {self.done}/{self.total} ({self.cached} cached), "
                f"{rate:.1f} tok/s, prompt {prompt_rate:.0f} tok/s, ETA {format_eta(eta)}")

    def update(self, gen: Generation) -> None:
        self.done += 1
        if gen.cached:
            self.cached += 1
        else:
            self.tokens += gen.completion_tokens
            self.prompt_tokens += gen.prompt_tokens
        now = time.monotonic()
        if self.logger and (now - self._last >= self.every_s or self.done == self.total):
            self._last = now
            self.logger.info(self.line())


def run_requests(engine: Engine, requests: Sequence[Request], logger: logging.Logger | None = None,
                 every_s: float = 15.0) -> list[Generation]:
    """``engine.generate(requests)`` with progress lines; results follow ``requests`` order."""
    progress = Progress(len(requests), logger, every_s)
    if logger:
        logger.info(f"generate: {len(requests)} requests on model {engine.spec.id}")
    try:
        out = engine.generate(requests, on_result=lambda i, g: progress.update(g))  # type: ignore[call-arg]
    except TypeError as err:  # an engine without the on_result hook
        if "on_result" not in str(err):
            raise
        out = engine.generate(requests)
        for g in out:
            progress.update(g)
    if logger:
        # read by the per-job benchmark table (thinkbias.report.benchmarks)
        logger.info(f"generate: finished, generated_tokens={progress.tokens} cached={progress.cached}")
    return out
