"""The registry's max_num_seqs and wave sizes follow the KV arithmetic of docs/models.md."""

from __future__ import annotations

import pytest
import yaml

from tests.helpers import REPO
from thinkbias.llm.vllm_memory import kv_bytes_per_token, kv_cache_tokens, max_num_seqs_for

PROMPT_ALLOWANCE = 1024
# model -> (layers, KV heads, head dim, KV room GiB from the docs table), and the longest full-config request
ARCHITECTURES = {
    "qwq-32b-awq": ((64, 8, 128, 50.0), 6144 + 32 + PROMPT_ALLOWANCE),
    "r1-distill-qwen-32b-awq": ((64, 8, 128, 50.0), 6144 + 32 + PROMPT_ALLOWANCE),
    "qwen3-32b-awq": ((64, 8, 128, 50.0), 6144 + 32 + PROMPT_ALLOWANCE),
    "gemma-2-27b-it-awq": ((46, 16, 128, 53.5), 4096 + 32 + PROMPT_ALLOWANCE),
    "gemma-2-27b-it": ((46, 16, 128, 21.0), 4096 + 32 + PROMPT_ALLOWANCE),
    "llama-3.1-8b-instruct": ((32, 8, 128, 53.0), 4096 + 32 + PROMPT_ALLOWANCE),
}


def test_kv_arithmetic_hand_case():
    assert kv_bytes_per_token(64, 8, 128) == 256 * 1024  # 256 KiB, as the docs table says
    assert kv_cache_tokens(50.0, 256 * 1024) == 204_800
    assert max_num_seqs_for(204_800, 7_200) == 28
    assert max_num_seqs_for(100, 7_200) == 1
    with pytest.raises(ValueError):
        max_num_seqs_for(100, 0)


def test_longest_requests_follow_the_full_configs():
    fairness = yaml.safe_load((REPO / "config/fairness-full.yaml").read_text())["fairness"]
    appendix = yaml.safe_load((REPO / "config/fairness-appendix-d.yaml").read_text())["fairness"]
    for model, (_, longest) in ARCHITECTURES.items():
        section = fairness if model in fairness["models"] else appendix
        assert model in section["models"] or model == "gemma-2-27b-it"
        assert longest == section["think_budget"] + section["answer_budget"] + PROMPT_ALLOWANCE


@pytest.mark.parametrize("model", sorted(ARCHITECTURES))
def test_registry_max_num_seqs_and_waves_fit_the_kv_cache(model):
    (layers, kv_heads, head_dim, room), longest = ARCHITECTURES[model]
    extra = yaml.safe_load((REPO / "config/models.yaml").read_text())[model]["extra"]
    expected = max_num_seqs_for(kv_cache_tokens(room, kv_bytes_per_token(layers, kv_heads, head_dim)), longest)
    assert extra["max_num_seqs"] == expected
    assert extra["batch_size"] == 2 * expected
    if extra.get("dtype") == "bfloat16":
        assert extra["hf_overrides"] == {"head_dtype": "float32"}
