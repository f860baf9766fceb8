"""The base class of every backend, ``CachedEngine``: the backend hooks, the cache keys, and the cached
one-request primitives (``generate``, ``score``, ``probe``, ``generate_and_probe``, which falls back to
``probe`` on a cached trace).

It inherits the cache, counters and lease loops (``thinkbias.llm.cache_loop``) and the many-request
methods (``thinkbias.llm.many_requests``); the cached values' JSON is in ``thinkbias.llm.cache_json``
and the cut points of a trace in ``thinkbias.llm.trace_cuts``.

A backend subclasses ``CachedEngine`` and implements the ``_uncached`` hooks plus ``render`` (the
exact prompt identity that goes into cache keys) and ``count_tokens``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Mapping, Sequence

from thinkbias.llm.cache_json import (
    canonical,
    generation_from_json,
    generation_to_json,
    scores_from_json,
    scores_to_json,
)
from thinkbias.llm.cache_loop import OnResult
from thinkbias.llm.many_requests import ManyRequests
from thinkbias.llm.trace_cuts import fraction_cuts, trace_lead
from thinkbias.llm.types import CandidateScores, Generation, Request


class CachedEngine(ManyRequests):
    """Cache, dedupe and count around a backend's uncached primitives."""

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

    def _run_order(self, items: Sequence[tuple]) -> list[int]:
        """The order in which generations of ``items`` (``(request, rendered, ...)``) run one after
        another, as indices: as given (a backend that keeps the previous prompt's shared prefix
        runs neighbours that share most next to each other)."""
        return list(range(len(items)))

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
        for j in self._run_order(items):
            req, rendered = items[j]
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
        for j in self._run_order(items):
            box: list[Generation] = []
            self._generate_uncached([items[j]], lambda _, g: box.append(g))
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

    # -- cache keys ---------------------------------------------------------------------------
    def gen_key(self, request: Request, rendered: str | None = None) -> str:
        """Cache key of a generation: model, weights sha256, rendered prompt, sampling (incl. seed)."""
        rendered = self.render(request) if rendered is None else rendered
        return self._key("gen", rendered, request.sampling.key())

    def _generation_keyed(self, requests: Sequence[Request]) -> list[tuple[str, tuple[Request, str]]]:
        """(generation key, (request, rendered)) of each request, as ``_through_generation_cache`` takes them."""
        keyed = []
        for req in requests:
            rendered = self.render(req)
            keyed.append((self.gen_key(req, rendered), (req, rendered)))
        return keyed

    def score_key(self, rendered: str, candidates: Mapping[str, Sequence[str]]) -> str:
        """Cache key of a score: model, weights sha256, rendered prompt, candidates."""
        return self._key("score", rendered, canonical(candidates))

    def probe_key(
        self, rendered: str, trace: str, cuts: Sequence[int], cue: str, candidates: Mapping[str, Sequence[str]]
    ) -> str:
        """Cache key of a probe: model, weights sha256, rendered prompt, trace, cuts, cue, candidates."""
        return self._key("probe", rendered, trace, cue, canonical(list(cuts)), canonical(candidates))

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

    # -- a cached generation's trace ----------------------------------------------------------
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
            self._generation_keyed(requests),
            lambda req, rendered, value: generation_from_json(value),
            run,
            on_result,
            lambda gen: gen,
        )

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

    # -- lifetime -----------------------------------------------------------------------------
    def build_info(self) -> dict:
        """The engine build this engine runs on (``thinkbias.llm.run.engine_build`` names it in job
        metrics and reports); backends add what decides their numbers."""
        return {"backend": self.spec.backend}

    def close(self) -> None:
        self.cache.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
