"""What every backend shares: the persistent cache around each primitive, request deduplication,
the fall-back of ``generate_and_probe`` to ``probe`` on a cached trace, and the engine counters.

A backend subclasses ``CachedEngine`` and implements the ``_uncached`` hooks plus ``render`` (the
exact prompt identity that goes into cache keys) and ``count_tokens``.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Callable, Mapping, Sequence, TypeVar

from thinkbias.llm.cache import RequestCache, cache_path
from thinkbias.llm.thinking import thinking_char_span
from thinkbias.llm.types import CandidateScores, EngineStats, Generation, ModelSpec, Request, sha256_text

OnResult = Callable[[int, Generation], None]
R = TypeVar("R")  # one request's result: a Generation, or a Generation with its probes
log = logging.getLogger(__name__)


def generation_to_json(g: Generation) -> dict:
    d = asdict(g)
    d.pop("cached", None)
    return d


def generation_from_json(d: Mapping) -> Generation:
    return Generation(**{**d, "cached": True})


def scores_to_json(s: CandidateScores) -> dict:
    return {"probs": s.probs, "outside_mass": s.outside_mass}


def scores_from_json(d: Mapping) -> CandidateScores:
    return CandidateScores(dict(d["probs"]), float(d["outside_mass"]))


def canonical(obj) -> str:
    """Canonical JSON of candidates/cuts for cache keys."""
    if isinstance(obj, Mapping):
        obj = {k: list(v) if isinstance(v, (list, tuple)) else v for k, v in obj.items()}
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def fraction_cuts(cut_fractions: Sequence[float], n: int) -> list[int]:
    """Token cut points ``floor(f * n + 1/2)`` (round half up, clipped to [0, n]) for fractions of a
    trace of n tokens.

    Half up, not Python's half-to-even ``round``, so that ``f = k/K`` gives exactly the CDPG cut
    ``floor(k*n/K + 1/2)`` of the fairness study; the 1e-9 absorbs the float error of ``k/K * n``
    at an exact tie (a non-tie is at least 1/K away from it).
    """
    return [min(n, max(0, int(math.floor(f * n + 0.5 + 1e-9)))) for f in cut_fractions]


def trace_lead(text: str, think_open: str, think_close: str, opened: bool) -> str:
    """The part of a generated ``text`` before its thinking trace starts: the model's own open tag
    (when the prompt did not open the trace) and the newlines ``split_thinking`` strips from the
    trace. ``CachedEngine.stored_trace_probe`` puts it back before a stored trace."""
    span = thinking_char_span(text, think_open, think_close, opened)
    return "" if span is None else text[: span[0]]


class CachedEngine:
    """Cache, dedupe and count around a backend's uncached primitives."""

    def __init__(self, spec: ModelSpec, cache_dir: str | Path | None):
        self.spec = spec
        self.cache = RequestCache(None if cache_dir is None else cache_path(cache_dir, spec.id))
        self.stats = EngineStats()
        self._stats_lock = threading.Lock()

    # -- backend hooks ------------------------------------------------------------------------
    def render(self, request: Request) -> str:
        """The exact prompt the backend sends (chat template + prefill), used in cache keys."""
        raise NotImplementedError

    def count_tokens(self, text: str) -> int:
        raise NotImplementedError

    def _generate_uncached(self, items: list[tuple[Request, str]], done: Callable[[int, Generation], None]) -> None:
        """Run every (request, rendered) and call ``done(j, generation)`` as each finishes."""
        raise NotImplementedError

    def _score_uncached(
        self, request: Request, rendered: str, candidates: Mapping[str, Sequence[str]]
    ) -> CandidateScores:
        raise NotImplementedError

    def _probe_uncached(
        self,
        request: Request,
        rendered: str,
        trace: str,
        cuts: Sequence[int],
        cue: str,
        candidates: Mapping[str, Sequence[str]],
    ) -> list[CandidateScores]:
        raise NotImplementedError

    def _generate_and_probe_uncached(
        self,
        request: Request,
        rendered: str,
        cut_fractions: Sequence[float],
        cue: str,
        candidates: Mapping[str, Sequence[str]],
        trace: str = "thinking",
    ) -> tuple[Generation, list[CandidateScores]]:
        """Default: generate, then probe the trace's text (backends with KV reuse override this)."""
        box: list[Generation] = []
        self._generate_uncached([(request, rendered)], lambda j, g: box.append(g))
        gen = box[0]
        return gen, self._probe_cached_trace(request, rendered, gen, cut_fractions, cue, candidates, trace)

    def _generate_and_probe_many_uncached(
        self,
        items: list[tuple[Request, str]],
        cut_fractions: Sequence[float],
        cue: str,
        candidates: Mapping[str, Sequence[str]],
        done: Callable[[int, Generation, list[CandidateScores]], None],
        trace: str = "thinking",
    ) -> None:
        """Run ``_generate_and_probe_uncached`` on every (request, rendered), calling
        ``done(j, generation, scores)`` as each finishes (a batching backend runs them together)."""
        for j, (req, rendered) in enumerate(items):
            gen, scores = self._generate_and_probe_uncached(req, rendered, cut_fractions, cue, candidates, trace)
            done(j, gen, scores)

    def _generate_and_score_many_uncached(
        self,
        items: list[tuple[Request, str]],
        score_items: list[tuple[Request, str]],
        candidates: Mapping[str, Sequence[str]],
        done: Callable[[int, Generation, CandidateScores], None],
    ) -> None:
        """Generate each (request, rendered) and score ``score_items[j]`` right after it, calling
        ``done(j, generation, scores)`` (a KV-reusing backend finds the shared prompt in its cache;
        a batching one scores each sequence on its own cells)."""
        for j, item in enumerate(items):
            box: list[Generation] = []
            self._generate_uncached([item], lambda _, g: box.append(g))
            done(j, box[0], self._score_uncached(*score_items[j], candidates))

    def _score_many_uncached(
        self,
        items: list[tuple[Request, str]],
        candidates: Mapping[str, Sequence[str]],
        done: Callable[[int, CandidateScores], None],
    ) -> None:
        """Score every (request, rendered), calling ``done(j, scores)`` (a batching backend runs
        several together)."""
        for j, (req, rendered) in enumerate(items):
            done(j, self._score_uncached(req, rendered, candidates))

    def _probe_many_uncached(
        self,
        items: list[tuple[Request, str, str, list[int]]],
        cue: str,
        candidates: Mapping[str, Sequence[str]],
        done: Callable[[int, list[CandidateScores]], None],
    ) -> None:
        """Probe every (request, rendered, trace, cuts), calling ``done(j, scores)``."""
        for j, (req, rendered, trace, cuts) in enumerate(items):
            done(j, self._probe_uncached(req, rendered, trace, cuts, cue, candidates))

    def batches_generation(self) -> bool:
        """Whether this engine decodes several requests at once (llama.cpp ``extra.n_parallel`` > 1):
        ``generate_and_probe_many`` then leases and runs its requests together."""
        return False

    def scores_after_generation(self) -> bool:
        """Whether a score right after a generation of the same prompt reuses the prompt's KV cells
        (llama.cpp): ``generate_and_score_many`` then scores each request as it finishes, instead of
        generating all and then scoring all."""
        return False

    # -- helpers ------------------------------------------------------------------------------
    def _count(self, **deltas: int) -> None:
        with self._stats_lock:
            for k, v in deltas.items():
                setattr(self.stats, k, getattr(self.stats, k) + v)

    def _leased(
        self,
        kind: str,
        keys: Sequence[str],
        run: Callable[[list[str]], None],
        from_elsewhere: Callable[[str, object], None],
        wait: bool = True,
    ) -> list[str]:
        """Run ``run(mine)`` on the keys this process leases; keys another live process holds are
        not generated twice: their values are awaited in the cache and passed to
        ``from_elsewhere(key, value)``, and any the holder leaves unfinished (it died, failed or let
        its lease expire) are leased and run here. ``wait=False`` returns the held keys instead."""
        from thinkbias.llm.leases import POLL_S

        pending, told = list(keys), set()
        while pending:
            claim = self.cache.claim(kind, pending)
            self._report_takeovers(claim.taken_over)
            mine = []
            for key in claim.mine:  # finished elsewhere between the caller's cache look-up and the claim
                hit = self.cache.get(kind, key)
                if hit is None:
                    mine.append(key)
                else:
                    self.cache.release(kind, [key])
                    self._count(awaited=1)
                    from_elsewhere(key, hit)
            if mine:
                try:
                    run(mine)
                finally:
                    self.cache.release(kind, mine)  # those left unfinished by an error
            if not wait:
                return list(claim.held)
            pending, progressed = [], bool(mine)
            for key, holder in claim.held.items():
                hit = self.cache.get(kind, key)
                if hit is None:
                    pending.append(key)
                    continue
                progressed = True
                self._count(awaited=1)
                from_elsewhere(key, hit)
            fresh = {h for k, h in claim.held.items() if k in pending and h.token not in told}
            for holder in fresh:
                n = sum(1 for k in pending if claim.held[k] == holder)
                log.info(
                    "model %s: %d requests are being generated by %s right now; waiting for its results "
                    "instead of generating them again",
                    self.spec.id,
                    n,
                    holder.describe(),
                )
                told.add(holder.token)
            if pending and not progressed:
                time.sleep(POLL_S)
        return []

    def _report_takeovers(self, taken_over: Mapping) -> None:
        if not taken_over:
            return
        self._count(taken_over=len(taken_over))
        for holder in set(taken_over.values()):
            n = sum(1 for h in taken_over.values() if h == holder)
            log.warning(
                "model %s: taking over %d requests leased by %s, which is no longer running or stopped "
                "renewing its lease",
                self.spec.id,
                n,
                holder.describe(),
            )

    def _key(self, kind: str, *parts: str) -> str:
        return sha256_text(kind, self.spec.id, self.spec.weights_sha256, *parts)

    def gen_key(self, request: Request, rendered: str | None = None) -> str:
        """Cache key of a generation: model, weights sha256, rendered prompt, sampling (incl. seed)."""
        rendered = self.render(request) if rendered is None else rendered
        return self._key("gen", rendered, request.sampling.key())

    def _opened(self, rendered: str) -> bool:
        from thinkbias.llm.chat import prompt_opens_thinking

        return prompt_opens_thinking(rendered, self.spec.think_open, self.spec.think_close)

    def stored_trace_probe(
        self, request: Request, rendered: str, gen: Generation, cut_fractions: Sequence[float], trace: str = "thinking"
    ) -> tuple[Request, str, list[int]]:
        """The ``probe`` arguments (request, trace text, token cuts) that read a cached generation's
        trace as the fused probe read it: the same text before each cut, and cuts at
        ``floor(f * n + 1/2)`` of the stored trace's n tokens.

        ``text``: the whole generated text. ``thinking``: the stored thinking trace, after the text
        that led to it in the generation (``trace_lead``). The model's own open tag joins the prompt
        side (it may be a special token); the newlines after it join the trace side, as the model
        generated them (in the prompt they would merge with the prefill's newline into one token),
        and the cuts skip their tokens."""
        if trace == "text":
            return request, gen.text, fraction_cuts(cut_fractions, self.count_tokens(gen.text))
        lead = trace_lead(gen.text, self.spec.think_open, self.spec.think_close, self._opened(rendered))
        head = lead.rstrip("\n")
        newlines = lead[len(head) :]
        probe_req = replace(request, prefill=request.prefill + head) if head else request
        skip = self.count_tokens(newlines) if newlines else 0
        cuts = [skip + c for c in fraction_cuts(cut_fractions, self.count_tokens(gen.thinking))]
        return probe_req, newlines + gen.thinking, cuts

    def _probe_cached_trace(
        self,
        request: Request,
        rendered: str,
        gen: Generation,
        cut_fractions: Sequence[float],
        cue: str,
        candidates: Mapping[str, Sequence[str]],
        trace: str = "thinking",
    ) -> list[CandidateScores]:
        """The probes of a cached generation, by ``probe`` on its stored trace (``stored_trace_probe``)."""
        probe_req, text, cuts = self.stored_trace_probe(request, rendered, gen, cut_fractions, trace)
        return self.probe(probe_req, text, cuts, cue, candidates)

    # -- the cached primitives ----------------------------------------------------------------
    def generate(self, requests: Sequence[Request], on_result: OnResult | None = None) -> list[Generation]:
        """Complete each request through the cache. Identical requests run once. ``on_result(i, g)``
        is called for every index as its result becomes available (cache hits first)."""

        def run(items: list[tuple[Request, str]], done: Callable[[int, Generation], None]) -> None:
            def stored(j: int, gen: Generation) -> None:
                self.cache.put("gen", self.gen_key(*items[j]), generation_to_json(gen))
                done(j, gen)

            self._generate_uncached(items, stored)

        return self._through_generation_cache(
            requests, lambda req, rendered, value: generation_from_json(value), run, on_result, lambda gen: gen
        )

    def _through_generation_cache(
        self,
        requests: Sequence[Request],
        from_cache: Callable[[Request, str, object], R],
        run: Callable[[list[tuple[Request, str]], Callable[[int, R], None]], None],
        on_result: OnResult | None,
        generation_of: Callable[[R], Generation],
    ) -> list[R]:
        """The loop ``generate`` and a batching ``generate_and_probe_many`` share. Identical requests
        (same generation key) run once; each cached generation becomes a result through
        ``from_cache(request, rendered, value)``; the rest are leased and ``run(items, done)`` runs
        them, calling ``done(j, result)`` as each finishes (it stores the result itself). Requests
        another live process holds are awaited and taken from the cache like the others.
        ``on_result(i, generation_of(result))`` for every index as its result arrives."""
        out: list = [None] * len(requests)
        waiting: dict[str, list[int]] = {}
        todo: dict[str, tuple[Request, str]] = {}  # gen key -> (request, rendered)
        for i, req in enumerate(requests):
            rendered = self.render(req)
            key = self.gen_key(req, rendered)
            if key in waiting:
                waiting[key].append(i)
                continue
            waiting[key] = [i]
            todo[key] = (req, rendered)

        def deliver(key: str, result: R) -> None:
            for i in waiting[key]:
                out[i] = result
                if on_result:
                    on_result(i, generation_of(result))

        def from_cached(key: str, value) -> None:
            self._count(cache_hits=1)
            deliver(key, from_cache(*todo[key], value))

        uncached = []
        for key in todo:
            hit = self.cache.get("gen", key)
            if hit is None:
                uncached.append(key)
            else:
                from_cached(key, hit)

        def leased(keys: list[str]) -> None:  # the requests leased by this process
            run([todo[k] for k in keys], lambda j, result: deliver(keys[j], result))

        if uncached:
            self._leased("gen", uncached, leased, from_cached)
        missing = [i for i, r in enumerate(out) if r is None]
        if missing:
            raise RuntimeError(f"{self.spec.id}: {len(missing)} requests produced no result")
        return out

    def score_key(self, rendered: str, candidates: Mapping[str, Sequence[str]]) -> str:
        """Cache key of a score: model, weights sha256, rendered prompt, candidates."""
        return self._key("score", rendered, canonical(candidates))

    def probe_key(
        self, rendered: str, trace: str, cuts: Sequence[int], cue: str, candidates: Mapping[str, Sequence[str]]
    ) -> str:
        """Cache key of a probe: model, weights sha256, rendered prompt, trace, cuts, cue, candidates."""
        return self._key("probe", rendered, trace, cue, canonical(list(cuts)), canonical(candidates))

    def score(self, request: Request, candidates: Mapping[str, Sequence[str]]) -> CandidateScores:
        """Candidate probabilities right after the rendered prompt + prefill (cached)."""
        rendered = self.render(request)
        key = self.score_key(rendered, candidates)
        hit = self.cache.get("score", key)
        if hit is not None:
            self._count(cache_hits=1)
            return scores_from_json(hit)
        res = self._score_uncached(request, rendered, candidates)
        self.cache.put("score", key, scores_to_json(res))
        return res

    def probe(
        self, request: Request, trace: str, cuts: Sequence[int], cue: str, candidates: Mapping[str, Sequence[str]]
    ) -> list[CandidateScores]:
        """Scores after ``prompt + prefill + trace[:cut tokens] + cue`` for each cut (cached as a whole)."""
        rendered = self.render(request)
        key = self.probe_key(rendered, trace, cuts, cue, candidates)
        hit = self.cache.get("probe", key)
        if hit is not None:
            self._count(cache_hits=1)
            return [scores_from_json(d) for d in hit]
        res = self._probe_uncached(request, rendered, trace, list(cuts), cue, candidates)
        self.cache.put("probe", key, [scores_to_json(s) for s in res])
        return res

    def _many_through_cache(
        self,
        kind: str,
        keyed: Sequence[tuple[str, tuple]],
        run: Callable[[list[tuple], Callable[[int, object], None]], None],
        to_json: Callable[[object], object],
        from_json: Callable[[object], object],
    ) -> list:
        """The loop of ``score_many`` and ``probe_many``: ``keyed`` holds (cache key, item) per call;
        identical keys run once, cache hits are taken, and ``run(items, done)`` evaluates the rest,
        each result stored as ``done(j, result)`` reports it."""
        out: list = [None] * len(keyed)
        waiting: dict[str, list[int]] = {}
        todo: dict[str, tuple] = {}
        for i, (key, item) in enumerate(keyed):
            waiting.setdefault(key, []).append(i)
            if len(waiting[key]) > 1:
                continue
            hit = self.cache.get(kind, key)
            if hit is None:
                todo[key] = item
                continue
            self._count(cache_hits=1)
            out[i] = from_json(hit)
        keys = list(todo)

        def done(j: int, result) -> None:
            self.cache.put(kind, keys[j], to_json(result))
            for i in waiting[keys[j]]:
                out[i] = result

        if keys:
            run([todo[k] for k in keys], done)
        for idx in waiting.values():  # the duplicates of cache hits
            for i in idx[1:]:
                out[i] = out[idx[0]]
        return out

    def score_many(self, requests: Sequence[Request], candidates: Mapping[str, Sequence[str]]) -> list[CandidateScores]:
        """``score`` of every request (cached like it); a batching engine evaluates the uncached
        prompts together (llama.cpp ``n_parallel`` at a time, in shared decode calls)."""
        keyed = []
        for req in requests:
            rendered = self.render(req)
            keyed.append((self.score_key(rendered, candidates), (req, rendered)))
        return self._many_through_cache(
            "score",
            keyed,
            lambda items, done: self._score_many_uncached(items, candidates, done),
            scores_to_json,
            scores_from_json,
        )

    def probe_many(
        self,
        probes: Sequence[tuple[Request, str, Sequence[int]]],
        cue: str,
        candidates: Mapping[str, Sequence[str]],
    ) -> list[list[CandidateScores]]:
        """``probe`` of every (request, trace, cuts) (cached like it); a batching engine evaluates
        the uncached ones together (llama.cpp: ``n_parallel`` traces at a time, each cut of every
        trace in the same decode calls, deepest first)."""
        keyed = []
        for req, trace, cuts in probes:
            rendered = self.render(req)
            keyed.append((self.probe_key(rendered, trace, cuts, cue, candidates), (req, rendered, trace, list(cuts))))
        return self._many_through_cache(
            "probe",
            keyed,
            lambda items, done: self._probe_many_uncached(items, cue, candidates, done),
            lambda scores: [scores_to_json(s) for s in scores],
            lambda value: [scores_from_json(d) for d in value],
        )

    def generate_and_score_many(
        self,
        requests: Sequence[Request],
        score_requests: Sequence[Request],
        candidates: Mapping[str, Sequence[str]],
        on_result: OnResult | None = None,
    ) -> list[tuple[Generation, CandidateScores]]:
        """``generate(requests)`` and ``score_many(score_requests)`` (``score_requests[i]`` belongs to
        ``requests[i]``, typically its prompt with a cue appended), both cached as those are. On
        llama.cpp each score runs as its generation finishes, on the KV cells of the shared prompt
        (sequential: the engine's cache; batched: the sequence's own cells), so only what the
        score adds to the prompt is evaluated. ``on_result(i, generation)`` once both are there."""
        if len(score_requests) != len(requests):
            raise ValueError(f"{len(requests)} requests but {len(score_requests)} score requests")
        if not self.scores_after_generation():
            gens = self.generate(requests)
            scores = self.score_many(score_requests, candidates)
            for i, g in enumerate(gens):
                if on_result:
                    on_result(i, g)
            return list(zip(gens, scores))
        score_of: dict[str, tuple[Request, str]] = {}
        for req, sreq in zip(requests, score_requests):
            key, srendered = self.gen_key(req), self.render(sreq)
            if score_of.setdefault(key, (sreq, srendered))[1] != srendered:
                raise ValueError("identical requests were given different score requests")

        def from_cache(req: Request, rendered: str, value) -> tuple[Generation, CandidateScores]:
            return generation_from_json(value), self.score(score_of[self.gen_key(req, rendered)][0], candidates)

        def run(items: list[tuple[Request, str]], done: Callable[[int, tuple], None]) -> None:
            score_items = [score_of[self.gen_key(*item)] for item in items]

            def stored(j: int, gen: Generation, scores: CandidateScores) -> None:
                self.cache.put("score", self.score_key(score_items[j][1], candidates), scores_to_json(scores))
                self.cache.put("gen", self.gen_key(*items[j]), generation_to_json(gen))
                done(j, (gen, scores))

            self._generate_and_score_many_uncached(items, score_items, candidates, stored)

        return self._through_generation_cache(requests, from_cache, run, on_result, lambda pair: pair[0])

    def generate_and_probe(
        self,
        request: Request,
        cut_fractions: Sequence[float],
        cue: str,
        candidates: Mapping[str, Sequence[str]],
        trace: str = "thinking",
    ) -> tuple[Generation, list[CandidateScores]]:
        """Generate, then probe the trace at ``floor(f * n + 1/2)`` of its n tokens for each fraction.
        ``trace``: ``thinking``, the thinking trace (``Generation.thinking``); ``text``, the whole
        generated text (``Generation.text``: a chain of thought in the visible reply).

        Both parts are cached: a cached generation without cached probes is probed from its text.
        A generation another live process is running now is awaited, not run twice.
        """
        out = self._generate_and_probe(request, cut_fractions, cue, candidates, wait=True, trace=trace)
        assert out is not None
        return out

    def _generate_and_probe(
        self,
        request: Request,
        cut_fractions: Sequence[float],
        cue: str,
        candidates: Mapping[str, Sequence[str]],
        wait: bool,
        trace: str = "thinking",
    ) -> tuple[Generation, list[CandidateScores]] | None:
        """``generate_and_probe``; with ``wait=False``, None when another process holds the request."""
        rendered = self.render(request)
        gkey = self.gen_key(request, rendered)
        pkey = self.gap_key(request, rendered, cut_fractions, cue, candidates, trace)
        g_hit, p_hit = self.cache.get("gen", gkey), self.cache.get("probe", pkey)
        if g_hit is not None:
            gen = generation_from_json(g_hit)
            self._count(cache_hits=1)
            if p_hit is not None:
                self._count(cache_hits=1)
                return gen, [scores_from_json(d) for d in p_hit]
            scores = self._probe_cached_trace(request, rendered, gen, cut_fractions, cue, candidates, trace)
        else:
            made: list[tuple[Generation, list[CandidateScores]]] = []

            def run(keys: list[str]) -> None:
                made.append(self._generate_and_probe_uncached(request, rendered, cut_fractions, cue, candidates, trace))
                # the probes first: a process waiting for the generation then finds both
                self.cache.put("probe", pkey, [scores_to_json(s) for s in made[0][1]])
                self.cache.put("gen", gkey, generation_to_json(made[0][0]))

            held = self._leased("gen", [gkey], run, lambda key, value: None, wait=wait)
            if made:
                return made[0]
            if held:
                return None
            return self._generate_and_probe(request, cut_fractions, cue, candidates, wait, trace)  # made elsewhere
        self.cache.put("probe", pkey, [scores_to_json(s) for s in scores])
        return gen, scores

    def gap_key(
        self,
        request: Request,
        rendered: str,
        cut_fractions: Sequence[float],
        cue: str,
        candidates: Mapping[str, Sequence[str]],
        trace: str = "thinking",
    ) -> str:
        """Cache key of the probes of ``generate_and_probe``. ``cuts=trimmed`` marks cuts counted over
        the trace without its surrounding newlines, so probes cached when the cuts still counted them
        are never reused; the thinking trace's key has no trace part (as before ``text`` traces)."""
        parts = ("cuts=trimmed",) if trace == "thinking" else (f"trace={trace}", "cuts=trimmed")
        return self._key(
            "gap", self.gen_key(request, rendered), cue, canonical(list(cut_fractions)), canonical(candidates), *parts
        )

    def generate_and_probe_many(
        self,
        requests: Sequence[Request],
        cut_fractions: Sequence[float],
        cue: str,
        candidates: Mapping[str, Sequence[str]],
        on_result: OnResult | None = None,
        trace: str = "thinking",
    ) -> list[tuple[Generation, list[CandidateScores]]]:
        """``generate_and_probe`` over many requests; batched backends (vLLM) override it to batch
        the generations and then all the probes. ``on_result(i, generation)`` as each finishes.

        Requests another live process is generating are left for last and then awaited, so two
        processes on one batch share the work instead of doing it twice."""
        if self.batches_generation():
            return self._generate_and_probe_together(requests, cut_fractions, cue, candidates, on_result, trace)
        out: list = [None] * len(requests)
        deferred = []
        for i, req in enumerate(requests):
            out[i] = self._generate_and_probe(req, cut_fractions, cue, candidates, wait=False, trace=trace)
            if out[i] is None:
                deferred.append(i)
            elif on_result:
                on_result(i, out[i][0])
        for i in deferred:
            out[i] = self.generate_and_probe(requests[i], cut_fractions, cue, candidates, trace)
            if on_result:
                on_result(i, out[i][0])
        return out

    def _generate_and_probe_together(
        self,
        requests: Sequence[Request],
        cut_fractions: Sequence[float],
        cue: str,
        candidates: Mapping[str, Sequence[str]],
        on_result: OnResult | None,
        trace: str,
    ) -> list[tuple[Generation, list[CandidateScores]]]:
        """``generate_and_probe_many`` of a batching engine: cache hits first (a cached generation
        without cached probes is probed from its text), then every uncached request leased at once
        and run by ``_generate_and_probe_many_uncached``; each result is stored (probes, then the
        generation) the moment its sequence finishes, so a kill loses only the requests in flight."""

        def from_cache(req: Request, rendered: str, value) -> tuple[Generation, list[CandidateScores]]:
            gen = generation_from_json(value)
            pkey = self.gap_key(req, rendered, cut_fractions, cue, candidates, trace)
            if pkey in probed_now:
                return gen, probed_now[pkey]
            p_hit = self.cache.get("probe", pkey)
            if p_hit is not None:
                self._count(cache_hits=1)
                return gen, [scores_from_json(d) for d in p_hit]
            scores = self._probe_cached_trace(req, rendered, gen, cut_fractions, cue, candidates, trace)
            self.cache.put("probe", pkey, [scores_to_json(s) for s in scores])
            return gen, scores

        def run(items: list[tuple[Request, str]], done: Callable[[int, tuple], None]) -> None:
            def stored(j: int, gen: Generation, scores: list[CandidateScores]) -> None:
                req, rendered = items[j]
                # the probes first: a process waiting for the generation then finds both
                self.cache.put(
                    "probe",
                    self.gap_key(req, rendered, cut_fractions, cue, candidates, trace),
                    [scores_to_json(s) for s in scores],
                )
                self.cache.put("gen", self.gen_key(req, rendered), generation_to_json(gen))
                done(j, (gen, scores))

            self._generate_and_probe_many_uncached(items, cut_fractions, cue, candidates, stored, trace)

        probed_now = self._probe_cached_generations(requests, cut_fractions, cue, candidates, trace)
        return self._through_generation_cache(requests, from_cache, run, on_result, lambda pair: pair[0])

    def _probe_cached_generations(
        self,
        requests: Sequence[Request],
        cut_fractions: Sequence[float],
        cue: str,
        candidates: Mapping[str, Sequence[str]],
        trace: str,
    ) -> dict[str, list[CandidateScores]]:
        """The probes of the cached generations among ``requests`` that have none cached yet, run
        together by ``probe_many`` (a batching engine: ``n_parallel`` traces at a time; vLLM: one
        batch) and stored under their ``gap_key``; returned by that key."""
        todo: dict[str, tuple[Request, str, list[int]]] = {}
        for req in requests:
            rendered = self.render(req)
            pkey = self.gap_key(req, rendered, cut_fractions, cue, candidates, trace)
            if pkey in todo or self.cache.get("probe", pkey) is not None:
                continue
            hit = self.cache.get("gen", self.gen_key(req, rendered))
            if hit is not None:
                todo[pkey] = self.stored_trace_probe(req, rendered, generation_from_json(hit), cut_fractions, trace)
        probed = dict(zip(todo, self.probe_many(list(todo.values()), cue, candidates))) if todo else {}
        for pkey, scores in probed.items():
            self.cache.put("probe", pkey, [scores_to_json(s) for s in scores])
        return probed

    def close(self) -> None:
        self.cache.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
