"""Request building of the vLLM backend (pure functions; vLLM itself runs in scripts/gpu/vllm_smoke.py)."""

import math
from dataclasses import replace

import pytest

from thinkbias.llm.types import ModelSpec, Request, Sampling
from thinkbias.llm.vllm_backend import (
    engine_kwargs,
    probe_prompts,
    prompt_token_ids,
    sampling_kwargs,
    score_kwargs,
    scores_from_vllm_logprobs,
    thinking_span_by_decode,
)

SPEC = ModelSpec(
    id="qwq-32b-awq",
    backend="vllm",
    weights="resources/models/qwq-32b-awq",
    gpus=1,
    n_ctx=8192,
    extra={"quantization": "awq", "gpu_memory_utilization": 0.92},
)
TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def test_engine_kwargs_enable_prefix_caching_and_quantization():
    kw = engine_kwargs(SPEC)
    # an AWQ checkpoint is left to vLLM's detection, which picks the AWQ-Marlin kernel where it can
    assert kw["enable_prefix_caching"] is True and kw["quantization"] is None
    assert kw["max_model_len"] == 8192 and kw["tensor_parallel_size"] == 1 and kw["gpu_memory_utilization"] == 0.92
    assert engine_kwargs(replace(SPEC, extra={"quantization": "fp16"}))["quantization"] is None
    assert engine_kwargs(replace(SPEC, extra={"quantization": "fp8"}))["quantization"] == "fp8"
    forced = {"quantization": "awq", "vllm_quantization": "awq_marlin"}
    assert engine_kwargs(replace(SPEC, extra=forced))["quantization"] == "awq_marlin"
    assert engine_kwargs(replace(SPEC, extra={"max_model_len": 16384}))["max_model_len"] == 16384


def test_sampling_kwargs_are_explicit():
    assert sampling_kwargs(Sampling()) == {
        "temperature": 0.0,
        "top_p": 1.0,
        "seed": 0,
        "max_tokens": 256,
        "stop": [],
        "n": 1,
    }
    kw = sampling_kwargs(Sampling(temperature=0.6, top_p=0.95, seed=11, max_tokens=64, stop=("</answer>",)))
    assert kw == {"temperature": 0.6, "top_p": 0.95, "seed": 11, "max_tokens": 64, "stop": ["</answer>"], "n": 1}
    assert score_kwargs() == {"temperature": 0.0, "max_tokens": 1, "logprobs": 20, "seed": 0, "n": 1}


def test_prompt_ids_render_template_and_prefill_without_extra_specials():
    seen = []

    def tokenize(text):
        seen.append(text)
        return [ord(c) for c in text]

    ids = prompt_token_ids(TEMPLATE, Request.chat("Hi", prefill="<think>\n"), tokenize, bos_token="<s>")
    assert seen == ["<s><|user|>Hi\n<|assistant|><think>\n"] and len(ids) == len(seen[0])


def test_probe_prompts_share_prefix():
    prompts = probe_prompts([1, 2], [10, 11, 12], [3, 0, 1], [99])
    assert prompts == [[1, 2, 10, 11, 12, 99], [1, 2, 99], [1, 2, 10, 99]]
    with pytest.raises(ValueError, match="outside"):
        probe_prompts([1], [10], [2], [99])


class Logprob:  # the shape of vllm.sequence.Logprob: an object with a .logprob
    def __init__(self, logprob):
        self.logprob = logprob


def test_scores_from_vllm_logprobs():
    lp = {5: Logprob(math.log(0.6)), 6: Logprob(math.log(0.2)), 7: Logprob(math.log(0.1))}
    s = scores_from_vllm_logprobs(lp, {"Yes": (5, 8), "No": (6,)})
    assert s.probs["Yes"] == pytest.approx(0.75) and s.outside_mass == pytest.approx(0.2)


def test_thinking_span_by_decode_hand_case():
    vocab = {1: "Step", 2: " one", 3: ".", 4: "</think>", 5: " Yes"}
    decode = lambda ids: "".join(vocab[i] for i in ids)  # noqa: E731
    tokens = [1, 2, 3, 4, 5]
    assert thinking_span_by_decode(tokens, decode, decode(tokens), "<think>\n", "</think>", True) == (0, 3)
    vocab.update({6: "<think>", 7: "\n"})
    tokens = [6, 7, 1, 4, 5]
    assert thinking_span_by_decode(tokens, decode, decode(tokens), "<think>\n", "</think>", False) == (2, 3)


# -- the engine's orchestration, with vLLM's LLM played by the embedded llama.cpp model ----------
# vLLM cannot run on CPU-only machines; this stand-in implements the small part of its API the
# engine uses (LLM(**kw).generate / get_tokenizer, SamplingParams, TokensPrompt) on a real model,
# so batching, caching, scoring from top-20 logprobs and probing are exercised end to end.

import sys  # noqa: E402
import types  # noqa: E402

import numpy as np  # noqa: E402


class _Tokenizer:
    def __init__(self, eng):
        self.eng, self.chat_template, self.bos_token, self.eos_token = eng, eng.template, "", "<|im_end|>"

    def encode(self, text, add_special_tokens=False):
        return self.eng.tokenize_text(text)

    def decode(self, ids):
        return b"".join(self.eng.token_piece(i) for i in ids).decode("utf-8", errors="ignore")


def _fake_vllm(eng):
    class Out:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    class LLM:
        def __init__(self, **kw):
            assert kw["enable_prefix_caching"] is True
            self.calls = []

        def get_tokenizer(self):
            return _Tokenizer(eng)

        def generate(self, inputs, params, use_tqdm=False):
            self.calls.append(len(inputs))
            outs = []
            for inp, sp in zip(inputs, params):
                ids = inp["prompt_token_ids"]
                if getattr(sp, "logprobs", None):
                    eng.eval_fresh(ids)
                    z = eng.last_logits().astype(np.float64)
                    lp = z - z.max() - np.log(np.exp(z - z.max()).sum())
                    top = np.argsort(-lp)[: sp.logprobs]
                    o = Out(
                        text="",
                        token_ids=[int(top[0])],
                        finish_reason="length",
                        logprobs=[{int(t): Out(logprob=float(lp[t])) for t in top}],
                    )
                else:
                    toks, _, text, fin = eng.generate_tokens(
                        ids,
                        Sampling(
                            temperature=sp.temperature,
                            top_p=sp.top_p,
                            seed=sp.seed,
                            max_tokens=sp.max_tokens,
                            stop=tuple(sp.stop),
                        ),
                    )
                    o = Out(text=text, token_ids=toks, finish_reason=fin, logprobs=None)
                outs.append(Out(outputs=[o]))
            return outs

    class SamplingParams:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    vllm = types.ModuleType("vllm")
    vllm.LLM, vllm.SamplingParams = LLM, SamplingParams
    inputs = types.ModuleType("vllm.inputs")
    inputs.TokensPrompt = lambda prompt_token_ids: {"prompt_token_ids": prompt_token_ids}
    return vllm, inputs


@pytest.mark.slow
def test_vllm_engine_orchestration_on_stand_in(engine, spec, monkeypatch, tmp_path):
    from thinkbias.llm import open_engine
    from thinkbias.llm.trace_cuts import trace_lead
    from thinkbias.llm.thinking import arm_prefill
    from thinkbias.llm.types import YES_NO

    vllm, inputs = _fake_vllm(engine)
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm.inputs", inputs)
    vspec = replace(spec, backend="vllm", gpus=1)
    cue = "\n</think>\n\nAnswer:"
    with open_engine(vspec, tmp_path) as v:
        reqs = [
            Request.chat(
                f"Is {x} a fruit? Think first.", prefill=arm_prefill(spec, "think"), sampling=Sampling(max_tokens=12)
            )
            for x in ("an apple", "a rock", "a pear")
        ]
        gens = v.generate(reqs)
        assert v.llm.calls == [3]  # one batch
        ref = [g.text for g in engine.generate(reqs)]
        assert [g.text for g in gens] == ref
        s = v.score(Request.chat("Is an apple a fruit?", prefill="Answer:"), YES_NO)
        assert sum(s.probs.values()) == pytest.approx(1.0)
        many = v.generate_and_probe_many(reqs, [0.0, 0.5, 1.0], cue, YES_NO)
        assert v.llm.calls[-1] == 9  # every probe of every trace in one batch
        assert all(len(sc) == 3 for _, sc in many)
        trace = gens[0].thinking  # probed after the newlines the model wrote after the prompt's open tag
        lead = trace_lead(gens[0].text, spec.think_open, spec.think_close, True)
        full = v.probe(reqs[0], lead + trace, [v.count_tokens(lead) + v.count_tokens(trace)], cue, YES_NO)[0]
        assert full.probs["Yes"] == pytest.approx(many[0][1][2].probs["Yes"], abs=1e-9)
        # scores and probes of many requests: one batch each, equal to the single calls
        asks = [Request.chat(f"Is {x} a fruit?", prefill="Answer:") for x in ("a plum", "a brick", "a fig")]
        scores = v.score_many(asks, YES_NO)
        assert v.llm.calls[-1] == 3
        probes = v.probe_many([(a, " It grows on trees, so", [0, 2, 5]) for a in asks], cue, YES_NO)
        assert v.llm.calls[-1] == 9 and all(len(p) == 3 for p in probes)
        n_calls = len(v.llm.calls)
        for a, s_many, p_many in zip(asks, scores, probes):
            assert (
                v.score(a, YES_NO) == s_many and v.probe(a, " It grows on trees, so", [0, 2, 5], cue, YES_NO) == p_many
            )
        assert len(v.llm.calls) == n_calls  # the single calls were cache hits: the same keys
        pairs = v.generate_and_score_many(reqs[:2], asks[:2], YES_NO)
        assert [g.text for g, _ in pairs] == ref[:2] and [s for _, s in pairs] == scores[:2]
    with open_engine(vspec, tmp_path) as again:
        again.generate_and_probe_many(reqs, [0.0, 0.5, 1.0], cue, YES_NO)
        assert again.llm.calls == [] and again.stats.generated_tokens == 0


def test_structured_output_kwargs_need_vllm():
    """On a GPU machine they build vLLM's StructuredOutputsParams (scripts/gpu/vllm_smoke.py checks a
    constrained reply); here vLLM is absent and the import error says so."""
    from thinkbias.llm.vllm_backend import structured_output_kwargs

    with pytest.raises(ImportError, match="vllm"):
        structured_output_kwargs({"type": "object"})
