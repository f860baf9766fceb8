"""Request building of the vLLM backend (pure functions; the real engine runs in tests/llm/test_vllm_cpu.py)."""

import math
from dataclasses import replace

import pytest

from thinkbias.llm.types import ModelSpec, Request, Sampling
from thinkbias.llm.vllm_backend import (
    engine_kwargs,
    probe_prompts,
    prompt_token_ids,
    runner_env,
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


def test_the_process_layout_is_vllms_own_unless_the_entry_sets_it():
    assert "distributed_executor_backend" not in engine_kwargs(SPEC)
    assert runner_env(SPEC) == {"VLLM_CPU_KVCACHE_SPACE": "2"}
    assert runner_env(replace(SPEC, extra={"batch_invariant": True}))["VLLM_BATCH_INVARIANT"] == "1"
    one = replace(SPEC, extra={"engine_core_in_process": True, "distributed_executor_backend": "uni"})
    assert engine_kwargs(one)["distributed_executor_backend"] == "uni"
    assert runner_env(one)["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"
    assert runner_env(replace(SPEC, extra={"engine_core_in_process": False}))["VLLM_ENABLE_V1_MULTIPROCESSING"] == "1"


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
    # the logprobs of exactly the candidates' tokens, not a top-k list that may miss them
    assert score_kwargs([9, 5, 9]) == {"temperature": 0.0, "max_tokens": 1, "logprob_token_ids": [5, 9], "seed": 0,
                                       "n": 1}  # fmt: skip
    with pytest.raises(ValueError, match="between 1 and 128"):
        score_kwargs(range(129))


def test_engine_kwargs_pass_hf_overrides_and_keep_request_stats():
    assert "hf_overrides" not in engine_kwargs(SPEC) and engine_kwargs(SPEC)["disable_log_stats"] is False
    bf16 = replace(SPEC, extra={"dtype": "bfloat16", "hf_overrides": {"head_dtype": "float32"}, "max_num_seqs": 28})
    kw = engine_kwargs(bf16)
    assert kw["hf_overrides"] == {"head_dtype": "float32"} and kw["dtype"] == "bfloat16" and kw["max_num_seqs"] == 28


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
    lp = {5: Logprob(math.log(0.6)), 6: Logprob(math.log(0.2)), 7: Logprob(math.log(0.1)), 8: Logprob(-30.0)}
    s = scores_from_vllm_logprobs(lp, {"Yes": (5, 8), "No": (6,)})
    assert s.probs["Yes"] == pytest.approx(0.75) and s.outside_mass == pytest.approx(0.2)


def test_a_candidate_without_its_logprob_is_an_error_not_zero():
    """A top-k list that missed token 8 used to count it as probability 0; the exact candidates' reply
    always holds it, so its absence is an engine error."""
    lp = {5: Logprob(math.log(0.6)), 6: Logprob(math.log(0.2))}
    with pytest.raises(ValueError, match=r"no logprob for candidate token ids \[8\]"):
        scores_from_vllm_logprobs(lp, {"Yes": (5, 8), "No": (6,)})
    tiny = {5: Logprob(-40.0), 6: Logprob(-41.0)}  # both far outside any top-20 list
    s = scores_from_vllm_logprobs(tiny, {"Yes": (5,), "No": (6,)})
    assert s.probs["Yes"] == pytest.approx(1 / (1 + math.exp(-1.0))) and 0 < s.probs["Yes"] < 1


def test_output_to_dict_carries_cache_hits_and_preemptions():
    from types import SimpleNamespace

    from thinkbias.llm.vllm_runner import output_to_dict

    completion = SimpleNamespace(text=" Yes", token_ids=[7], finish_reason="length", logprobs=[{7: Logprob(-0.1)}])
    request = SimpleNamespace(num_cached_tokens=48, metrics=SimpleNamespace(num_preemptions=2))
    out = output_to_dict(completion, request)
    assert out["num_cached_tokens"] == 48 and out["num_preemptions"] == 2 and out["logprobs"] == [{7: -0.1}]
    bare = output_to_dict(completion, SimpleNamespace(num_cached_tokens=None, metrics=None))
    assert bare["num_cached_tokens"] == 0 and bare["num_preemptions"] == 0


def test_thinking_span_by_decode_hand_case():
    vocab = {1: "Step", 2: " one", 3: ".", 4: "</think>", 5: " Yes"}
    decode = lambda ids: "".join(vocab[i] for i in ids)  # noqa: E731
    tokens = [1, 2, 3, 4, 5]
    assert thinking_span_by_decode(tokens, decode, decode(tokens), "<think>\n", "</think>", True) == (0, 3)
    vocab.update({6: "<think>", 7: "\n"})
    tokens = [6, 7, 1, 4, 5]
    assert thinking_span_by_decode(tokens, decode, decode(tokens), "<think>\n", "</think>", False) == (2, 3)


def test_structured_output_kwargs_need_vllm():
    """In the vLLM environment they build vLLM's StructuredOutputsParams (tests/llm/test_vllm_cpu.py
    checks constrained replies); the project's own environment has no vLLM and the import error says so."""
    from thinkbias.llm.vllm_runner import structured_output_kwargs

    with pytest.raises(ImportError, match="vllm"):
        structured_output_kwargs({"type": "object"})
