"""The many-request methods of every engine: ``score_many``, ``probe_many``, ``generate_and_score_many``
and ``generate_and_probe_many``, each cached like its one-request primitive, with the uncached
requests handed to the backend's batch hooks together (a batching backend evaluates them at once).
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from thinkbias.llm.cache_json import generation_from_json, generation_to_json, scores_from_json, scores_to_json
from thinkbias.llm.cache_loop import CacheLoop, OnResult
from thinkbias.llm.types import CandidateScores, Generation, Request


class ManyRequests(CacheLoop):
    """The many-request methods of ``CachedEngine`` (``thinkbias.llm.base``), which defines what they
    build on: the cache keys, the one-request primitives and the backend's ``_*_many_uncached`` hooks."""

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

        return self._through_generation_cache(
            self._generation_keyed(requests), from_cache, run, on_result, lambda pair: pair[0]
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
        return self._through_generation_cache(
            self._generation_keyed(requests), from_cache, run, on_result, lambda pair: pair[0]
        )

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
