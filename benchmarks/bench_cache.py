"""Request-cache reads and writes with entry checksums, against the same code without them.

    python benchmarks/bench_cache.py [--requests 2000] [--trace-chars 400 4000] [--reps 9] [--clock cpu]
                                     [--no-embedded] [--tiny]

Everything goes through the production path: ``RequestCache.get`` / ``get_many`` / ``put``, and a
job through ``run_requests`` (the generation job's call) on a ``CachedEngine``, whose ``generate``
looks its requests up in the cache (``CacheLoop._through_generation_cache``: ``get_many``, one query
per 32 keys) and stores what it makes. The engine here is a backend that answers at once (a trace
of ``--trace-chars`` characters), so the cache is all there is to measure and the checksum's share
is the largest it can be. With the embedded model present (and without ``--no-embedded``) the
cached job also runs on its llama.cpp engine, where rendering the chat template adds to both sides,
and as a whole job in a fresh process (interpreter start, imports, model load, the requests: what a
rerun from a released cache pays; the child's CPU time). The old behaviour is the same
``RequestCache`` with the SQL it ran before entries carried a checksum (``Unchecked``: no checksum
written or read, one query per key as the loop read them then), in the same process, on cache files
under ``./bench_cache/``.

Per trace size, each a median over ``--reps`` repetitions of the per-repetition ratio checked /
unchecked, the two alternating which runs first (ABAB):

1. ``put``: storing N generations                                         (no goal: writes commit)
2. ``get``, key by key: reading them back (the checksum's own cost)          (no goal)
3. ``get_many``: reading them back in one call                              (no goal)
4. cold job: ``run_requests`` of N new requests (lease, generate, store)   (no goal)
5. cached job: ``run_requests`` of N requests all in the cache
6. the cached job on a file written before checksums existed (served unverified) / unchecked
7. the cached job on the embedded model's engine, and the whole job in a fresh process  goal <= 1.05

Measured on 2 shared cores of an AMD EPYC (2,000 requests, 9 repetitions, two runs),
400 / 4,000-character traces: get key by key 1.14-1.27 / 1.39-1.40, get_many 0.74-0.81 / 1.07-1.10,
cached job 0.95-1.01 / 1.03-1.04, on the embedded model 0.94-0.96 / 0.91-1.03, whole job in a fresh
process 1.00-1.02 / 1.02-1.04; put 1.14-1.26 / 1.10-1.12.

``--clock cpu`` (the default) times this process's CPU seconds, which other processes on a shared
machine disturb far less than wall time. ``--tiny``: 20 requests, one repetition (the ratios mean
nothing then; benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import json
import logging
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from thinkbias.llm.base import CachedEngine
from thinkbias.llm.cache import RequestCache
from thinkbias.llm.cache_json import generation_to_json
from thinkbias.llm.run import run_requests
from thinkbias.llm.throughput import CLOCKS
from thinkbias.llm.types import Generation, ModelSpec, Request, Sampling

REPO = Path(__file__).resolve().parents[1]
EMBEDDED = REPO / "resources/models/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf"
WORK = Path("bench_cache")
GOAL = 1.05  # cached job, checked / unchecked


class Unchecked(RequestCache):
    """The request cache as it read and wrote entries before they carried a checksum: one query per
    key (the cache loop then called ``get`` key by key), no checksum written or read."""

    def get(self, kind: str, key: str) -> Any | None:
        with self._lock:
            row = self._conn.execute("SELECT value FROM entries WHERE kind=? AND key=?", (kind, key)).fetchone()
        return None if row is None else json.loads(row[0])

    def get_many(self, kind: str, keys: Sequence[str]) -> dict[str, Any]:
        out = {}
        for key in keys:
            value = self.get(kind, key)
            if value is not None:
                out[key] = value
        return out

    def put(self, kind: str, key: str, value: Any) -> None:
        text = json.dumps(value, separators=(",", ":"))

        def write():
            self._conn.execute(
                "INSERT OR REPLACE INTO entries(kind, key, value, created) VALUES (?, ?, ?, ?)",
                (kind, key, text, time.time()),
            )
            self._conn.execute("DELETE FROM leases WHERE kind=? AND key=? AND token=?", (kind, key, self.holder.token))
            self._conn.commit()

        with self._lock:
            self._stored(write, f"store a {kind} result")


def instant_generation(trace_chars: int) -> Generation:
    """A reasoning model's answer with a thinking trace of ``trace_chars`` characters."""
    trace = ("Weigh each option against the question, then the next one. " * (trace_chars // 60 + 1))[:trace_chars]
    return Generation(trace + "</think>A", trace, "A", 120, len(trace) // 4, "stop")


class InstantEngine(CachedEngine):
    """A backend that answers every request at once with a fixed trace: only the cache costs time."""

    def __init__(self, cache_dir: Path, trace_chars: int):
        super().__init__(ModelSpec(id="bench", backend="llamacpp", weights_sha256="0" * 64), cache_dir)
        self.answer = instant_generation(trace_chars)

    def render(self, request: Request) -> str:
        return "".join(f"<|{role}|>{content}\n" for role, content in request.messages) + request.prefill

    def count_tokens(self, text: str) -> int:
        return len(text) // 4

    def _generate_uncached(self, items, done) -> None:
        for j in range(len(items)):
            done(j, self.answer)


def requests(n: int, salt: str = "") -> list[Request]:
    """N distinct single-turn requests of the size of a study's prompt."""
    return [
        Request.chat(
            f"{salt}Question {i}: which of the four options below best answers it? Think it through, "
            "then answer with the letter only.\nA) the first\nB) the second\nC) the third\nD) the fourth",
            prefill="<think>\n",
            sampling=Sampling(max_tokens=1024, seed=i),
        )
        for i in range(n)
    ]


def swap_cache(engine: CachedEngine, cls: type[RequestCache]) -> None:
    """Give ``engine`` a cache of class ``cls`` on the same file."""
    path = engine.cache.path
    engine.cache.close()
    engine.cache = cls(path, on_unverified=lambda: engine._count(cache_unverified=1))


def strip_checksums(path: Path) -> None:
    """Make ``path`` a file as written before entries carried a checksum."""
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE entries DROP COLUMN checksum")
    conn.execute("VACUUM")
    conn.close()


def abab(first: Callable[[], float], second: Callable[[], float], reps: int) -> tuple[float, float, float]:
    """Median seconds of each and median per-repetition ratio first / second, alternating the order."""
    a, b, ratios = [], [], []
    for rep in range(reps):
        if rep % 2 == 0:
            ta, tb = first(), second()
        else:
            tb, ta = second(), first()
        a.append(ta)
        b.append(tb)
        ratios.append(ta / tb)
    return statistics.median(a), statistics.median(b), statistics.median(ratios)


def timed(clock: Callable[[], float], fn: Callable[[], object]) -> float:
    start = clock()
    fn()
    return clock() - start


def measure(trace_chars: int, n: int, reps: int, clock: Callable[[], float], embedded: bool) -> list[tuple]:
    """The rows (measurement, checked s, unchecked s, ratio) of one trace size."""
    folder = WORK / f"trace-{trace_chars}"
    shutil.rmtree(folder, ignore_errors=True)
    value = generation_to_json(instant_generation(trace_chars))
    keys = [f"{i:064x}" for i in range(n)]
    rows = []
    fresh = iter(range(10**6))

    def put(cls: type[RequestCache]) -> float:
        cache = cls(folder / f"put-{next(fresh)}.sqlite")
        t = timed(clock, lambda: [cache.put("gen", k, value) for k in keys])
        cache.close()
        return t

    rows.append(("put", *abab(lambda: put(RequestCache), lambda: put(Unchecked), reps)))

    stored = folder / "stored.sqlite"
    filler = RequestCache(stored)
    for k in keys:
        filler.put("gen", k, value)
    filler.close()
    checked, unchecked = RequestCache(stored), Unchecked(stored)

    def get(cache: RequestCache) -> float:
        return timed(clock, lambda: [cache.get("gen", k) for k in keys])

    rows.append(("get, key by key", *abab(lambda: get(checked), lambda: get(unchecked), reps)))

    def get_many(cache: RequestCache) -> float:
        return timed(clock, lambda: cache.get_many("gen", keys))

    rows.append(("get_many", *abab(lambda: get_many(checked), lambda: get_many(unchecked), reps)))
    checked.close()
    unchecked.close()

    def cold(cls: type[RequestCache]) -> float:
        engine = InstantEngine(folder / f"cold-{next(fresh)}", trace_chars)
        swap_cache(engine, cls)
        t = timed(clock, lambda: run_requests(engine, requests(n)))
        engine.close()
        return t

    rows.append(("cold job", *abab(lambda: cold(RequestCache), lambda: cold(Unchecked), reps)))

    engine = InstantEngine(folder / "job", trace_chars)
    reqs = requests(n)
    run_requests(engine, reqs)  # fill the cache
    rows.append(("cached job", *cached_job_abab(engine, reqs, reps, clock)))
    engine.close()

    old = InstantEngine(folder / "old", trace_chars)
    run_requests(old, reqs)
    path = old.cache.path
    old.close()
    strip_checksums(path)
    old = InstantEngine(folder / "old", trace_chars)  # opens it as an old file: adds the column, entries unverified
    rows.append(("cached job, old file (unverified)", *cached_job_abab(old, reqs, reps, clock)))
    assert old.stats.cache_unverified >= n, old.stats
    old.close()

    if embedded:
        rows += embedded_jobs(folder / "embedded", n, trace_chars, reps, clock)
    return rows


def cached_job_abab(engine: CachedEngine, reqs: list[Request], reps: int, clock) -> tuple[float, float, float]:
    """``run_requests`` of requests all in ``engine``'s cache, checked / unchecked."""

    def job(cls: type[RequestCache]) -> float:
        if type(engine.cache) is not cls:
            swap_cache(engine, cls)
        before = engine.stats.cache_hits
        t = timed(clock, lambda: run_requests(engine, reqs))
        assert engine.stats.cache_hits - before == len(reqs) and engine.stats.generated_tokens == 0
        return t

    return abab(lambda: job(RequestCache), lambda: job(Unchecked), reps)


def embedded_engine(folder: Path):
    """The embedded model's llama.cpp engine on the cache folder ``folder``."""
    from thinkbias.llm import load_model_spec, open_engine

    spec = load_model_spec(REPO / "config/models.yaml", "smollm2-135m", weights=str(EMBEDDED))
    return open_engine(spec, folder, n_threads=1)


def embedded_jobs(folder: Path, n: int, trace_chars: int, reps: int, clock) -> list[tuple]:
    """The cached job on the embedded model's llama.cpp engine (its chat template renders each
    prompt; the cache filled with instant answers under its keys): in this process, then as a whole
    job in a fresh process (start, imports, model load, the requests: what a rerun pays)."""
    engine = embedded_engine(folder)
    reqs = requests(n, salt="e")
    answer = generation_to_json(instant_generation(trace_chars))
    for req in reqs:
        engine.cache.put("gen", engine.gen_key(req), answer)
    try:
        rows = [("cached job, embedded model", *cached_job_abab(engine, reqs, reps, clock))]
    finally:
        engine.close()

    def job(which: str) -> float:
        cmd = [sys.executable, __file__, "--job", which, "--job-cache", str(folder), "--requests", str(n)]
        before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if clock is CLOCKS["wall"]:
            return time.perf_counter() - start
        return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime

    rows.append(("whole cached job, fresh process", *abab(lambda: job("checked"), lambda: job("unchecked"), reps)))
    return rows


def run_job(which: str, folder: Path, n: int) -> None:
    """One cached job on the embedded model, as a job script runs it (``--job``)."""
    engine = embedded_engine(folder)
    if which == "unchecked":
        swap_cache(engine, Unchecked)
    run_requests(engine, requests(n, salt="e"))
    assert engine.stats.generated_tokens == 0 and engine.stats.cache_hits == n, engine.stats
    engine.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--trace-chars", type=int, nargs="+", default=[400, 4000])
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--clock", choices=sorted(CLOCKS), default="cpu")
    ap.add_argument("--no-embedded", action="store_true", help="skip the cached jobs on the embedded model")
    ap.add_argument("--tiny", action="store_true", help="20 requests, one repetition")
    ap.add_argument("--job", choices=["checked", "unchecked"], help=argparse.SUPPRESS)
    ap.add_argument("--job-cache", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    logging.getLogger("thinkbias.llm.cache").setLevel(logging.ERROR)  # the old files' warning is expected here
    if args.job:
        run_job(args.job, args.job_cache, args.requests)
        return
    n, reps = (20, 1) if args.tiny else (args.requests, args.reps)
    embedded = EMBEDDED.exists() and not args.no_embedded
    print(f"{n} requests, {reps} repetitions, {args.clock} clock; ratio = checked / unchecked (median per repetition)")
    worst = 0.0
    for chars in args.trace_chars:
        print(f"\ntrace of {chars} characters")
        print(f"  {'measurement':<36} {'checked s':>10} {'unchecked s':>12} {'ratio':>7}")
        for name, checked, unchecked, ratio in measure(chars, n, reps, CLOCKS[args.clock], embedded):
            print(f"  {name:<36} {checked:>10.4f} {unchecked:>12.4f} {ratio:>7.3f}")
            if "cached job" in name:
                worst = max(worst, ratio)
    print(f"\nworst cached-job ratio {worst:.3f} (goal <= {GOAL} for the whole job)")


if __name__ == "__main__":
    main()
