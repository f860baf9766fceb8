"""Run a batch of requests through an engine with progress lines in the job's log.

A progress line reports items done (and how many came from the cache), tokens generated per second
by this process, prompt tokens per second (prefill dominates short-answer jobs), and the estimated
time left, at most every ``every_s`` seconds and at the end. A generation job closes its log with
``<label>: finished, generated_tokens=N cached=C retries=R retry_wait_s=W`` (:meth:`Progress.finish`;
R API attempts repeated after a retryable failure, W seconds waited before them; ``empty_replies=E``
follows when E > 0 API replies held no answer and were retried, ``cache_unverified=U`` when U cache
entries were served without a checksum to verify them); the same counters travel on that
log record as a ``JobMetrics``, which the job's metrics file sums
(``thinkbias.llm.metrics``). Each retry and its wait is logged as it happens by the backend (logger
``thinkbias.llm.openai_backend``, a child of the job's logger).
"""

from __future__ import annotations

import logging
import time
from typing import Sequence

from thinkbias.llm.metrics import RECORD_ATTR, JobMetrics
from thinkbias.llm.types import Engine, Generation, Request


def format_eta(seconds: float) -> str:
    """``1h02m``, ``3m05s`` or ``12s``."""
    s = int(round(max(0.0, seconds)))
    if s >= 3600:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s}s"


def engine_generated_tokens(engine: Engine | None) -> int | None:
    """The engine's count of tokens generated so far in this process (None without such a counter)."""
    value = getattr(getattr(engine, "stats", None), "generated_tokens", None)
    return None if value is None else int(value)


def engine_prompt_tokens(engine: Engine | None) -> int | None:
    """The engine's count of prompt-side tokens so far, evaluated or kept from the previous prompt
    (``reused_prompt_tokens``), so that a generation's prompt counts whole (None without such a counter)."""
    stats = getattr(engine, "stats", None)
    value = getattr(stats, "prompt_tokens", None)
    return None if value is None else int(value) + int(getattr(stats, "reused_prompt_tokens", 0))


def engine_build(engine: Engine | None) -> str:
    """One line naming the engine build a job ran on: backend and version, then what decides its
    numbers (the llama.cpp CPU variant and its instruction sets, threads; vLLM's device, dtype and
    quantization; an API's endpoint); "" without an engine."""
    info = getattr(engine, "build_info", None)
    if info is None:
        return ""
    b = dict(info())
    parts = [f"{b.pop('backend', '?')} {b.pop('version', '')}".strip()]
    features = b.pop("cpu_features", None)
    parts += [f"{key} {value}" for key, value in b.items()]
    if features:
        parts.append("instruction sets " + " ".join(features))
    return ", ".join(parts)


def engine_empty_replies(engine: Engine | None) -> int:
    """The engine's count of API replies without an answer so far (0 without such a counter)."""
    return int(getattr(getattr(engine, "stats", None), "empty_replies", 0) or 0)


def engine_count(engine: Engine | None, name: str) -> int:
    """The engine's counter ``name`` so far (0 without such a counter)."""
    return int(getattr(getattr(engine, "stats", None), name, 0) or 0)


def engine_retries(engine: Engine | None) -> tuple[int, float]:
    """The engine's retries and seconds waited before them so far (0, 0.0 without such counters)."""
    stats = getattr(engine, "stats", None)
    return int(getattr(stats, "retries", 0) or 0), float(getattr(stats, "retry_wait_s", 0.0) or 0.0)


class Progress:
    """Counts results and logs ``done i/N (c cached), x tok/s, prompt y tok/s, ETA`` lines.

    Given the ``engine``, the closing line takes the tokens generated from the engine's counter, so a
    request repeated within a batch (run once, reported for each index) is counted once.
    """

    def __init__(
        self,
        total: int,
        logger: logging.Logger | None,
        every_s: float = 15.0,
        label: str = "generate",
        engine: Engine | None = None,
    ):
        self.total, self.logger, self.every_s, self.label = total, logger, every_s, label
        self.done = self.cached = self.tokens = self.prompt_tokens = 0
        self.start = self._last = time.monotonic()
        self.engine, self._engine_start = engine, engine_generated_tokens(engine)
        self._retries_start = engine_retries(engine)
        self._empty_start = engine_empty_replies(engine)
        self._prompt_start = engine_prompt_tokens(engine)
        self._counts_start = {
            name: engine_count(engine, name) for name in ("probe_cached_tokens", "preemptions", "cache_unverified")
        }

    def line(self) -> str:
        elapsed = max(1e-9, time.monotonic() - self.start)
        fresh = self.done - self.cached
        rate = self.tokens / elapsed
        prompt_rate = self.prompt_tokens / elapsed
        remaining = self.total - self.done
        eta = (elapsed / fresh) * remaining if fresh else 0.0
        return (
            f"{self.label}: done {self.done}/{self.total} ({self.cached} cached), "
            f"{rate:.1f} tok/s, prompt {prompt_rate:.0f} tok/s, ETA {format_eta(eta)}"
        )

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

    def generated(self) -> int:
        """Tokens generated since this progress started (cached results cost none): the engine's
        counter when it keeps one, else the completion tokens of the fresh results."""
        now = engine_generated_tokens(self.engine)
        return self.tokens if now is None or self._engine_start is None else now - self._engine_start

    def retries(self) -> tuple[int, float]:
        """API retries since this progress started and the seconds waited before them."""
        (r0, w0), (r1, w1) = self._retries_start, engine_retries(self.engine)
        return r1 - r0, w1 - w0

    def empty_replies(self) -> int:
        """API replies without an answer since this progress started (each retried, none cached)."""
        return engine_empty_replies(self.engine) - self._empty_start

    def counted(self, name: str) -> int:
        """The engine's counter ``name`` since this progress started."""
        return engine_count(self.engine, name) - self._counts_start[name]

    def probe_tokens(self) -> int:
        """Prompt-side tokens the engine evaluated since this progress started beyond the prompts of
        the results generated now (probe cues, scores); 0 without the engine's counter."""
        now = engine_prompt_tokens(self.engine)
        if now is None or self._prompt_start is None:
            return 0
        return max(0, now - self._prompt_start - self.prompt_tokens)

    def metrics(self) -> JobMetrics:
        """This batch's counters, as the closing line reports them (``batches=1``)."""
        retries, waited = self.retries()
        return JobMetrics(
            batches=1,
            requests=self.done,
            cached=self.cached,
            cache_unverified=self.counted("cache_unverified"),
            generated_tokens=self.generated(),
            prompt_tokens=self.prompt_tokens,
            probe_tokens=self.probe_tokens(),
            retries=retries,
            retry_wait_s=waited,
            engine=engine_build(self.engine),
            empty_replies=self.empty_replies(),
            probe_cached_tokens=self.counted("probe_cached_tokens"),
            preemptions=self.counted("preemptions"),
        )

    def finish(self) -> str:
        """Log (and return) the closing line
        ``<label>: finished, generated_tokens=N cached=C retries=R retry_wait_s=W``, followed by
        `` empty_replies=E`` when API replies without an answer were retried; the log record
        carries the same counters (:meth:`metrics`) for the job's metrics file."""
        m = self.metrics()
        line = (
            f"{self.label}: finished, generated_tokens={m.generated_tokens} cached={m.cached} "
            f"retries={m.retries} retry_wait_s={m.retry_wait_s:.1f}"
        )
        if m.empty_replies:
            line += f" empty_replies={m.empty_replies}"
        if m.cache_unverified:
            line += f" cache_unverified={m.cache_unverified}"
        if m.probe_cached_tokens or m.preemptions:
            line += f" probe_tokens={m.probe_tokens} probe_cached_tokens={m.probe_cached_tokens}"
            line += f" preemptions={m.preemptions}"
        if self.logger:
            self.logger.info(line, extra={RECORD_ATTR: m})
        return line


def run_requests(
    engine: Engine, requests: Sequence[Request], logger: logging.Logger | None = None, every_s: float = 15.0
) -> list[Generation]:
    """``engine.generate(requests)`` with progress lines; results follow ``requests`` order."""
    progress = Progress(len(requests), logger, every_s, engine=engine)
    if logger:
        logger.info(f"generate: {len(requests)} requests on model {engine.spec.id}")
    out = engine.generate(requests, on_result=lambda i, g: progress.update(g))
    progress.finish()
    return out
