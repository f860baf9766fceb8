"""The llama.cpp backend (llama-cpp-python, GGUF): the embedded default, CPU or GPU offload (a model
that asks for a GPU where llama.cpp has none is refused before it loads: ``thinkbias.llm.gpu_offload``).

One ``Llama`` per job. Prompts are rendered with the GGUF's own chat template (or the registry
override), tokenised here, and generation is driven token by token with explicit tokens, so the
prefix that is probed later is exactly the one that was generated.

Probing reuses the KV cache (``Llama.n_tokens`` + ``llama_memory_seq_rm`` through ``Llama.eval``):

- ``generate_and_probe`` (fused): after generating the trace, the KV cache already holds
  ``prompt + trace``; each cut, deepest first, truncates the KV cache to ``prompt + trace[:cut]``
  and evaluates only the cue tokens. Cost: K x (cue tokens).
- ``probe`` (a later job): one prefill of ``prompt + trace[:deepest cut]``, then the same truncation
  per cut. Cost: one prefill + K x (cue tokens). The prefill (and ``score``'s) keeps the prefix the
  KV cache holds from a batched evaluation (``eval_prefix``: e.g. the prompt of the generation just
  run, or an earlier probe of the same prompt), never the cells generation decoded one at a time, so
  its result equals that of an empty cache exactly.

Measured by benchmarks/bench_probing.py on the embedded model (400-token trace, K = 10 cuts, the
fairness cue of 8 tokens; two runs, docs/engine.md): fused probing / generating the trace =
0.07-0.09; later-job probing / one prefill of the trace = 0.96-1.24 (floor 1.16; load noise);
naive probing (a fresh prefill per cut) costs 5.0-7.8x the later-job probing; engine / bare
llama-cpp-python generation throughput = 1.00-1.05. So studies that generate and probe the same trace probe inside the
generation job (``generate_and_probe``/``generate_and_probe_many``): no second job, model load or
prefill. A separate probe job (``probe``) is for traces from elsewhere and costs one prefill each.

Generation keeps the leading KV cells of the previous prompt that the next prompt shares (a
study's instructions, a question under its other option orders, the other half of a counterfactual
pair) and evaluates only the rest (``eval_prompt``), in the order that makes neighbours share most
(``_run_order``). A cell's numbers depend only on the tokens before it and on whether llama.cpp
evaluated it in a step of its own (a one-token batch takes other kernels than a larger one), so
the prefix is kept only where every cell, kept or new, is evaluated as a fresh prefill would: a
result never depends on which request ran before it. Greedy output is identical across runs and
orders, and sampled output depends only on the request's own seed (a fresh sampler per request).

With ``extra.n_parallel`` > 1, ``generate``, ``generate_and_probe_many`` and
``generate_and_score_many`` decode that many requests together in a second context
(``thinkbias.llm.llamacpp_batch``), and ``score_many`` / ``probe_many`` evaluate that many
requests' prompts in shared decode calls there; a single ``score`` or ``probe`` stays on this one.
The default, 1, is the sequential path above.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from thinkbias.llm.base import CachedEngine
from thinkbias.llm.candidates import candidate_token_ids, scores_from_logits
from thinkbias.llm.chat import render_chat
from thinkbias.llm.llamacpp_batch import BatchedDecoder
from thinkbias.llm.tokenizer_check import check_round_trip
from thinkbias.llm.thinking import split_thinking, thinking_token_span
from thinkbias.llm.token_stream import TokenStream
from thinkbias.llm.trace_cuts import fraction_cuts
from thinkbias.llm.types import CandidateScores, Generation, ModelSpec, Request, Sampling


def default_threads() -> int:
    """Threads for llama.cpp when the caller gives none: the CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def effective_threads(requested: int | None, extra: dict) -> int:
    """The thread count actually used: ``requested`` (e.g. the Snakemake job's threads), else
    ``extra.n_threads``, else every usable CPU; capped by the usable CPUs and by the environment
    variable ``THINKBIAS_THREADS``.

    The cap matters on shared or oversubscribed machines: llama.cpp's threads synchronise hundreds
    of times per token, and when they do not each have a core to themselves decoding slows down by
    an order of magnitude (measured here: 15.8 tokens/s with 1 thread vs 0.4-1.9 with 2 threads at a
    load average of 11 on 2 cores). The thread count does not change any result.
    """
    n = int(requested or extra.get("n_threads") or default_threads())
    n = min(n, default_threads())
    cap = os.environ.get("THINKBIAS_THREADS", "")
    if cap.isdigit() and int(cap) > 0:
        n = min(n, int(cap))
    return max(1, n)


def n_parallel(spec: ModelSpec) -> int:
    """Sequences decoded together (``extra.n_parallel``, default 1 = one request at a time)."""
    raw = spec.extra.get("n_parallel", 1)
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 1:
        raise ValueError(f"model '{spec.id}': extra.n_parallel must be a positive integer, got {raw!r}")
    return raw


class LlamaCppEngine(CachedEngine):
    """``Engine`` on llama-cpp-python. Threads: see ``effective_threads``."""

    def __init__(self, spec: ModelSpec, cache_dir: str | Path | None, n_threads: int | None = None):
        from thinkbias.llm.llamacpp_backends import load_cpu_backends, require_gpu_offload

        load_cpu_backends(str(spec.extra.get("cpu_variant") or ""))
        require_gpu_offload(spec)  # before the cache opens: a refused model leaves nothing behind
        super().__init__(spec, cache_dir)
        from llama_cpp import Llama

        if not spec.weights or not Path(spec.weights).exists():
            raise FileNotFoundError(f"model '{spec.id}': weights not found at '{spec.weights}'")
        extra = spec.extra
        threads = effective_threads(n_threads, extra)
        kwargs = dict(
            model_path=spec.weights,
            n_ctx=spec.n_ctx,
            n_batch=int(extra.get("n_batch", 512)),
            n_threads=threads,
            n_threads_batch=threads,
            n_gpu_layers=int(extra.get("n_gpu_layers", 0)),
            logits_all=False,
            seed=0,
            verbose=bool(extra.get("verbose", False)),
        )
        if "flash_attn" in extra:
            kwargs["flash_attn"] = bool(extra["flash_attn"])
        self.llm = Llama(**kwargs)
        self._n_vocab = self.llm.n_vocab()
        model = self.llm._model
        self.template = spec.chat_template or self.llm.metadata.get("tokenizer.chat_template")
        if not self.template:
            raise ValueError(
                f"model '{spec.id}': the GGUF has no tokenizer.chat_template; set chat_template in the registry"
            )
        self._bos_text = model.token_get_text(model.token_bos()) if model.token_bos() >= 0 else ""
        self._eos_text = model.token_get_text(model.token_eos()) if model.token_eos() >= 0 else ""
        self._add_bos = bool(model.add_bos_token())
        check_round_trip(spec.id, self.tokenize_text, self.detokenize_text, spec.think_open, spec.think_close)
        self._cand_cache: dict[str, dict[str, tuple[int, ...]]] = {}
        self._prefilled = 0  # leading KV cells computed by batched evaluation (not by decoding)
        self._exact = 0  # leading KV cells equal to a fresh prefill's (none evaluated in a step of its own)
        self.prompt_reuse = bool(extra.get("prompt_reuse", True))
        self.n_parallel = n_parallel(spec)
        self.batched = None  # n_parallel > 1: generation runs there (thinkbias.llm.llamacpp_batch)
        if self.n_parallel > 1:
            self.batched = BatchedDecoder(self, self.n_parallel)

    # -- text <-> tokens ----------------------------------------------------------------------
    def render(self, request: Request) -> str:
        return render_chat(
            self.template,
            request.messages,
            request.prefill,
            bos_token=self._bos_text,
            eos_token=self._eos_text,
            think_open=self.spec.think_open,
        )

    def tokenize_prompt(self, rendered: str) -> list[int]:
        """Tokens of a rendered prompt (special tokens parsed; BOS added unless the template wrote it)."""
        add_bos = self._add_bos and not (self._bos_text and rendered.startswith(self._bos_text))
        return self.llm.tokenize(rendered.encode("utf-8"), add_bos=add_bos, special=True)

    def tokenize_text(self, text: str, special: bool = True) -> list[int]:
        """Tokens of a continuation (no BOS)."""
        return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=special) if text else []

    def detokenize_text(self, tokens: Sequence[int]) -> str:
        """The text of ``tokens`` (special tokens written out), less the one space a SentencePiece vocab
        puts before the first word (``tokenizer.ggml.add_space_prefix``)."""
        text = b"".join(self.token_piece(t, special=True) for t in tokens).decode("utf-8", errors="replace")
        prefix = str(self.llm.metadata.get("tokenizer.ggml.add_space_prefix", "false")).lower() == "true"
        return text[1:] if prefix and text.startswith(" ") else text

    def token_piece(self, token: int, special: bool = False) -> bytes:
        """The bytes of one token (``llama_token_to_piece`` with its real length)."""
        import ctypes

        import llama_cpp

        size = 64
        while True:
            buf = ctypes.create_string_buffer(size)
            n = llama_cpp.llama_token_to_piece(self.llm._model.vocab, token, buf, size, 0, special)
            if n >= 0:
                return buf.raw[:n]
            size = -n

    def count_tokens(self, text: str) -> int:
        return len(self.tokenize_text(text, special=False))

    def candidate_ids(self, candidates: Mapping[str, Sequence[str]]) -> dict[str, tuple[int, ...]]:
        key = json.dumps({k: list(v) for k, v in candidates.items()}, sort_keys=True)
        if key not in self._cand_cache:

            def first(v: str):
                toks = self.tokenize_text(v, special=False)
                return toks[0] if toks else None

            self._cand_cache[key] = candidate_token_ids(candidates, first)
        return self._cand_cache[key]

    # -- KV cache control ---------------------------------------------------------------------
    def _check_len(self, n: int) -> None:
        if n >= self.spec.n_ctx:
            raise ValueError(f"model '{self.spec.id}': {n} tokens do not fit in n_ctx={self.spec.n_ctx}")

    def eval_fresh(self, tokens: Sequence[int]) -> None:
        """Empty the KV cache and evaluate ``tokens`` (logits of the last one become available)."""
        self._check_len(len(tokens))
        self._evaluate_from(tokens, 0)
        self._prefilled = len(tokens)
        self._count(prompt_tokens=len(tokens))

    def eval_prefix(self, tokens: Sequence[int], reuse_decoded: bool = False) -> None:
        """Make the KV cache hold exactly ``tokens``, keeping the longest prefix already there and
        evaluating only the rest (truncation = ``Llama.eval`` removing KV cells past ``n_tokens``).

        Only the leading cells computed by batched evaluation (``_prefilled``) are kept unless
        ``reuse_decoded``: cells that generation decoded one token at a time carry slightly different
        numbers than a batched prefill of the same tokens, so keeping them would make a result depend
        on what ran before. Batched cells are kept exactly: a prefix evaluated in one batch and the
        rest in another give the same logits as one batch of the whole (tested).
        """
        self._check_len(len(tokens))
        common = self._shared_prefix(tokens, self.llm.n_tokens if reuse_decoded else self._prefilled)
        rest = self._evaluate_from(tokens, common)
        if common <= self._prefilled:
            self._prefilled = len(tokens)
        self._count(prompt_tokens=len(rest), probe_tokens=len(rest))

    def eval_prompt(self, tokens: Sequence[int]) -> None:
        """Make the KV cache hold exactly a generation's prompt ``tokens``, with the numbers a fresh
        prefill gives: the leading cells the cache holds from an earlier exact evaluation are kept
        where the rest then goes through the same kinds of steps (no token evaluated alone) as a
        fresh prefill of the whole; otherwise ``eval_fresh``."""
        self._check_len(len(tokens))
        n = len(tokens)
        common = self._shared_prefix(tokens, self._exact) if self.prompt_reuse else 0
        if self._first_lone(0, n) < n or common == 0:
            return self.eval_fresh(tokens)
        if self._first_lone(common, n) < n:
            common -= 1  # one more token in the rest: it no longer ends in a step of one
            if common == 0 or self._first_lone(common, n) < n:
                return self.eval_fresh(tokens)
        rest = self._evaluate_from(tokens, common)
        self._prefilled = n
        self._count(prompt_tokens=len(rest), reused_prompt_tokens=common)

    def _shared_prefix(self, tokens: Sequence[int], held: int) -> int:
        """Length of the longest common prefix of ``tokens`` and the first ``held`` KV cells' tokens,
        leaving at least the last token to evaluate (its logits are needed)."""
        m = min(held, self.llm.n_tokens, len(tokens))
        have = self.llm.input_ids[:m]
        diff = np.nonzero(have != np.asarray(tokens[:m], dtype=have.dtype))[0]
        common = int(diff[0]) if len(diff) else m
        return min(common, len(tokens) - 1)

    def _evaluate_from(self, tokens: Sequence[int], common: int) -> list[int]:
        """Keep the first ``common`` KV cells and evaluate ``tokens[common:]`` after them."""
        self.llm.n_tokens = common
        rest = list(tokens[common:])
        self.llm.eval(rest)
        if common <= self._exact:
            self._exact = self._first_lone(common, len(tokens))
        return rest

    def _first_lone(self, start: int, end: int) -> int:
        """The first position of ``[start, end)`` that ``Llama.eval`` evaluates in a step of its own
        (chunks of ``n_batch``, micro-batches of ``n_ubatch``), else ``end``."""
        n_batch, n_ubatch = self.llm.n_batch, self.llm.context_params.n_ubatch
        for chunk in range(start, end, n_batch):
            chunk_end = min(chunk + n_batch, end)
            for step in range(chunk, chunk_end, n_ubatch):
                if min(step + n_ubatch, chunk_end) - step == 1:
                    return step
        return end

    def last_logits(self) -> np.ndarray:
        """Next-token logits after the last evaluated token."""
        ptr = self.llm._ctx.get_logits_ith(-1)
        return np.ctypeslib.as_array(ptr, shape=(self._n_vocab,)).copy()

    # -- generation ---------------------------------------------------------------------------
    def _sampler(self, sampling: Sampling):
        from llama_cpp import _internals

        sampler = _internals.LlamaSampler()
        if sampling.json_schema is not None:
            from llama_cpp.llama_grammar import LlamaGrammar

            sampler.add_grammar(self.llm._model, LlamaGrammar.from_json_schema(json.dumps(sampling.json_schema)))
        if sampling.temperature <= 0:
            sampler.add_greedy()
        else:
            sampler.add_temp(float(sampling.temperature))
            sampler.add_top_p(float(sampling.top_p), 1)
            sampler.add_dist(int(sampling.seed) & 0xFFFFFFFF)
        return sampler

    def generate_tokens(
        self, prompt_tokens: Sequence[int], sampling: Sampling
    ) -> tuple[list[int], list[bytes], str, str]:
        """Generate after ``eval_prompt`` (a fresh prefill's numbers). Returns (tokens, pieces, text,
        finish_reason); the KV cache is left holding the prompt and every generated token but the
        last sampled one."""
        import llama_cpp

        self.eval_prompt(prompt_tokens)
        sampler = self._sampler(sampling)
        vocab = self.llm._model.vocab
        stream = TokenStream(sampling.stop)
        finish = "length"
        for _ in range(sampling.max_tokens):
            if self.llm.n_tokens >= self.spec.n_ctx:
                break
            tok = sampler.sample(self.llm._ctx, -1)
            if llama_cpp.llama_vocab_is_eog(vocab, tok):
                finish = "stop"
                break
            if stream.add(tok, self.token_piece(tok)):
                finish = "stop"
                break
            if len(stream.tokens) < sampling.max_tokens:
                self.llm.eval([tok])
        self._count(generated_tokens=len(stream.tokens), requests=1)
        return stream.tokens, stream.pieces, stream.final_text(), finish

    def _make_generation(
        self, request: Request, rendered: str, n_prompt: int, tokens: list[int], text: str, finish: str
    ) -> Generation:
        split = split_thinking(
            request.prefill + text, self.spec.think_open, self.spec.think_close, opened=self._opened(rendered)
        )
        return Generation(
            text=text,
            thinking=split.thinking,
            answer=split.answer,
            prompt_tokens=n_prompt,
            completion_tokens=len(tokens),
            finish_reason=finish,
        )

    def _generate_uncached(self, items, done) -> None:
        if self.batched is not None:
            self.batched.run(items, lambda j, gen, scores: done(j, gen))
            return
        for j in self._run_order(items):
            req, rendered = items[j]
            prompt = self.tokenize_prompt(rendered)
            tokens, _, text, finish = self.generate_tokens(prompt, req.sampling)
            done(j, self._make_generation(req, rendered, len(prompt), tokens, text, finish))

    def _run_order(self, items) -> list[int]:
        # sorted prompts: each shares with the one before it the longest prefix any other could
        # (``eval_prompt`` keeps it); every result is what it would be in any order
        if not self.prompt_reuse:
            return super()._run_order(items)
        return sorted(range(len(items)), key=lambda j: items[j][1])

    # -- scoring and probing ------------------------------------------------------------------
    def _score_uncached(self, request, rendered, candidates) -> CandidateScores:
        ids = self.candidate_ids(candidates)
        self.eval_prefix(self.tokenize_prompt(rendered))  # e.g. right after generating from the same prompt
        self._count(requests=1)
        return scores_from_logits(self.last_logits(), ids)

    def probe_tokens(
        self,
        prefix_tokens: Callable[[int], list[int]],
        cuts: Sequence[int],
        cue: str,
        candidates: Mapping[str, Sequence[str]],
        reuse_decoded: bool = False,
        evaluate: Callable[[list[int]], np.ndarray] | None = None,
    ) -> list[CandidateScores]:
        """Score ``prefix_tokens(cut) + cue`` for each cut, deepest first, reusing the KV cache
        (``reuse_decoded``: also the cells generation decoded, as the fused path does).
        ``evaluate(tokens)`` returns the logits after a KV cache made to hold exactly ``tokens``;
        default: this engine's own KV cache (the batched path passes one sequence's cells)."""
        ids = self.candidate_ids(candidates)
        cue_tokens = self.tokenize_text(cue)
        out: dict[int, CandidateScores] = {}
        for cut in sorted(set(cuts), reverse=True):
            target = prefix_tokens(cut) + cue_tokens
            if evaluate is None:
                self.eval_prefix(target, reuse_decoded=reuse_decoded)
                logits = self.last_logits()
            else:
                logits = evaluate(target)
            out[cut] = scores_from_logits(logits, ids)
        self._count(requests=1)
        return [out[c] for c in cuts]

    def _probe_prefix(self, rendered: str, trace: str, cuts: Sequence[int]) -> Callable[[int], list[int]]:
        """``cut -> prompt + trace[:cut tokens]`` of a probe (cuts checked against the trace)."""
        prompt = self.tokenize_prompt(rendered)
        trace_tokens = self.tokenize_text(trace, special=False)  # as count_tokens: cuts index these
        bad = [c for c in cuts if not 0 <= c <= len(trace_tokens)]
        if bad:
            raise ValueError(f"cuts {bad} outside the trace's {len(trace_tokens)} tokens")
        return lambda c: prompt + trace_tokens[:c]

    def _probe_uncached(self, request, rendered, trace, cuts, cue, candidates) -> list[CandidateScores]:
        # keep the prefix of prompt + trace the KV cache already holds from a batched evaluation
        # (the generation's prompt, an earlier probe or score of the same prompt): only the tokens
        # after it are evaluated, and the result equals a probe from an empty cache exactly
        return self.probe_tokens(self._probe_prefix(rendered, trace, cuts), cuts, cue, candidates)

    def _score_many_uncached(self, items, candidates, done) -> None:
        if self.batched is None:
            super()._score_many_uncached(items, candidates, done)
            return
        ids = self.candidate_ids(candidates)

        def scored(j: int, logits: list[np.ndarray]) -> None:
            self._count(requests=1)
            done(j, scores_from_logits(logits[0], ids))

        self.batched.evaluate_many([[self.tokenize_prompt(rendered)] for _, rendered in items], scored)

    def _probe_many_uncached(self, items, cue, candidates, done) -> None:
        if self.batched is None:
            super()._probe_many_uncached(items, cue, candidates, done)
            return
        ids, cue_tokens = self.candidate_ids(candidates), self.tokenize_text(cue)
        deepest_first = [sorted(set(cuts), reverse=True) for _, _, _, cuts in items]
        targets = []
        for (_, rendered, trace, cuts), order in zip(items, deepest_first):
            prefix = self._probe_prefix(rendered, trace, cuts)
            targets.append([prefix(c) + cue_tokens for c in order])

        def probed(j: int, logits: list[np.ndarray]) -> None:
            by_cut = {c: scores_from_logits(row, ids) for c, row in zip(deepest_first[j], logits)}
            self._count(requests=1)
            done(j, [by_cut[c] for c in items[j][3]])

        self.batched.evaluate_many(targets, probed)

    def _generate_and_probe_uncached(self, request, rendered, cut_fractions, cue, candidates, trace="thinking"):
        prompt = self.tokenize_prompt(rendered)
        tokens, pieces, text, finish = self.generate_tokens(prompt, request.sampling)
        gen = self._make_generation(request, rendered, len(prompt), tokens, text, finish)
        return gen, self.fused_probes(
            rendered, prompt, tokens, pieces, text, cut_fractions, cue, candidates, trace=trace
        )

    def fused_probes(
        self,
        rendered: str,
        prompt: list[int],
        tokens: list[int],
        pieces: list[bytes],
        text: str,
        cut_fractions: Sequence[float],
        cue: str,
        candidates: Mapping[str, Sequence[str]],
        evaluate: Callable[[list[int]], np.ndarray] | None = None,
        trace: str = "thinking",
    ) -> list[CandidateScores]:
        """Probe the trace (``thinking_token_span``: ``thinking`` or ``text``) of a generation just
        made, on the KV cells it left (deepest cut first; ``evaluate``: see ``probe_tokens``)."""
        k0, k1 = thinking_token_span(
            text, pieces, self.spec.think_open, self.spec.think_close, self._opened(rendered), trace
        )
        cuts = fraction_cuts(cut_fractions, k1 - k0)
        return self.probe_tokens(
            lambda c: prompt + tokens[: k0 + c], cuts, cue, candidates, reuse_decoded=True, evaluate=evaluate
        )

    def batches_generation(self) -> bool:
        return self.batched is not None

    def scores_after_generation(self) -> bool:
        return True

    def _generate_and_probe_many_uncached(self, items, cut_fractions, cue, candidates, done, trace="thinking") -> None:
        if self.batched is None:
            super()._generate_and_probe_many_uncached(items, cut_fractions, cue, candidates, done, trace)
            return

        def probes(j: int, seq, gen: Generation, evaluate) -> list[CandidateScores]:
            stream = seq.stream
            return self.fused_probes(
                seq.rendered,
                seq.prompt,
                stream.tokens,
                stream.pieces,
                gen.text,
                cut_fractions,
                cue,
                candidates,
                evaluate=evaluate,
                trace=trace,
            )

        self.batched.run(items, done, after=probes)

    def _generate_and_score_many_uncached(self, items, score_items, candidates, done) -> None:
        if self.batched is None:
            super()._generate_and_score_many_uncached(items, score_items, candidates, done)
            return
        ids = self.candidate_ids(candidates)

        def score(j: int, seq, gen: Generation, evaluate) -> CandidateScores:
            # the scored prompt extends the generation's: its cells are kept, only the rest evaluated
            self._count(requests=1)
            return scores_from_logits(evaluate(self.tokenize_prompt(score_items[j][1])), ids)

        self.batched.run(items, done, after=score)

    def build_info(self) -> dict:
        from thinkbias.llm.llamacpp_backends import build_info

        return build_info(n_threads=self.llm.n_threads)

    def close(self) -> None:
        try:
            if self.batched is not None:
                self.batched.close()
            self.llm.close()
        finally:
            super().close()
