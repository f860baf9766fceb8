"""Batched / sequential generation throughput of one llama.cpp model, measured in one process
through the production path (``open_engine`` + ``Engine.generate``), for benchmarks/bench_batching.py
and scripts/gpu/llamacpp_gpu_smoke.py.

Two engines of the same model are loaded: ``n_parallel = 1`` (sequential) and ``n_parallel = max
sequences`` (batched); n requests sent to the batched engine keep n sequences in flight. The two
runs of one size use the same requests and alternate their order from repetition to repetition
(AB, BA, ...), so that a load change on a shared machine hits both; the ratio is taken per
repetition and its median reported. Time is elapsed (``clock="wall"``) or this process's CPU
seconds (``clock="cpu"``: with one thread, a measure that other processes' load barely moves).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from thinkbias.llm.types import ModelSpec, Request, Sampling

TOPICS = (
    "rivers",
    "bread",
    "bridges",
    "comets",
    "forests",
    "glass",
    "honey",
    "islands",
    "jazz",
    "kites",
    "lighthouses",
    "maps",
    "oceans",
    "paper",
    "rain",
    "salt",
)
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}


@dataclass(frozen=True)
class RatioRow:
    """One (threads, sequences) cell: median tokens/s of each mode and the per-repetition ratios."""

    threads: int
    sequences: int
    sequential_tok_s: float
    batched_tok_s: float
    ratios: tuple[float, ...]

    @property
    def ratio(self) -> float:
        return statistics.median(self.ratios)


def essay_requests(n: int, tag: str, max_tokens: int) -> list[Request]:
    """``n`` distinct greedy requests (``tag`` makes each repetition's prompts new, so no cache hits)."""
    return [
        Request.chat(
            f"Write a long, detailed essay about {TOPICS[i % len(TOPICS)]} ({tag}, part {i}).",
            sampling=Sampling(max_tokens=max_tokens),
        )
        for i in range(n)
    ]


def _tokens_per_s(engine, requests: Sequence[Request], clock: Callable[[], float] = time.perf_counter) -> float:
    before = engine.stats.generated_tokens
    t = clock()
    engine.generate(requests)
    return (engine.stats.generated_tokens - before) / (clock() - t)


def batching_ratios(
    spec: ModelSpec,
    sequences: Sequence[int],
    threads: int,
    max_tokens: int = 64,
    reps: int = 3,
    n_ctx: int | None = None,
    clock: str = "wall",
) -> list[RatioRow]:
    """Measure sequential and batched throughput at each number of ``sequences`` with ``threads``
    threads (``n_ctx``: context per sequence, default the registry's; a small one keeps the
    batched KV cache of ``max(sequences) x n_ctx`` cells small; ``clock``: a key of ``CLOCKS``)."""
    from thinkbias.llm import open_engine

    spec = replace(spec, n_ctx=n_ctx or spec.n_ctx)
    width = max(sequences)
    seq_spec = replace(spec, extra={**spec.extra, "n_parallel": 1})
    bat_spec = replace(spec, extra={**spec.extra, "n_parallel": width})
    runs: dict[int, tuple[list[float], list[float]]] = {n: ([], []) for n in sequences}
    with open_engine(seq_spec, None, n_threads=threads) as seq, open_engine(bat_spec, None, n_threads=threads) as bat:
        _tokens_per_s(seq, essay_requests(1, "warm-up", 4))
        _tokens_per_s(bat, essay_requests(1, "warm-up", 4))
        for rep in range(reps):
            for n in sequences:
                reqs = essay_requests(n, f"rep {rep}", max_tokens)
                order = ((0, seq), (1, bat)) if rep % 2 == 0 else ((1, bat), (0, seq))
                for which, eng in order:
                    runs[n][which].append(_tokens_per_s(eng, reqs, CLOCKS[clock]))
    return [
        RatioRow(threads, n, statistics.median(s), statistics.median(b), tuple(bb / ss for ss, bb in zip(s, b)))
        for n, (s, b) in runs.items()
    ]


def ratio_table(rows: Sequence[RatioRow]) -> str:
    """A Markdown table of the rows (ratio = median of the per-repetition ratios, range beside it)."""
    lines = [
        "| threads | sequences | sequential (tok/s) | batched (tok/s) | batched / sequential (median, range) |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.threads} | {r.sequences} | {r.sequential_tok_s:.1f} | {r.batched_tok_s:.1f} | "
            f"{r.ratio:.2f} ({min(r.ratios):.2f}-{max(r.ratios):.2f}) |"
        )
    return "\n".join(lines)
