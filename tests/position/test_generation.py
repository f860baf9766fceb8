"""Requests per mode and the generations table."""

import pandas as pd

from thinkbias.llm.types import Generation
from thinkbias.position.generation import build_requests, full_trajectory, generations_table


def _prompts():
    return pd.DataFrame(
        [
            {
                "question_id": "mmlu:q",
                "benchmark": "mmlu",
                "item_id": "q",
                "question": "2+2?",
                "permutation": 1,
                "option_a": "5",
                "option_b": "4",
                "option_c": "3",
                "option_d": "22",
                "correct_position": "B",
            }
        ]
    )


def test_modes_prefill_and_prompts():
    p = _prompts()
    r = build_requests(p, "reasoning", "<think>\n", "<think>\n\n</think>\n\n", "Think inside tags.", 50)[0]
    assert r.prefill == "<think>\n" and r.sampling.temperature == 0 and r.sampling.max_tokens == 50
    roles = dict(r.messages)
    assert "A. 5\nB. 4\nC. 3\nD. 22" in roles["user"] and roles["user"].endswith("Think inside tags.")
    d = build_requests(p, "direct", "<think>\n", "<think>\n\n</think>\n\n", "Think inside tags.", 8)[0]
    assert d.prefill == "<think>\n\n</think>\n\n" and "Think inside tags." not in dict(d.messages)["user"]
    assert "The answer is (X)" in dict(d.messages)["system"]
    c = build_requests(p, "cot", "", "", "", 8)[0]
    assert "step by step" in dict(c.messages)["user"]


def test_generations_table_joins_thinking_and_answer():
    p = _prompts()
    reqs = build_requests(p, "reasoning", "<think>\n", "", "", 8)
    gens = [
        Generation(
            text="hm\n</think>\nThe answer is (B).",
            thinking="hm",
            answer="The answer is (B).",
            prompt_tokens=10,
            completion_tokens=5,
            finish_reason="stop",
        )
    ]
    t = generations_table(p, "m", "reasoning", reqs, gens)
    assert t.loc[0, "full_text"] == "hm\n\nThe answer is (B)." and t.loc[0, "correct_position"] == "B"
    assert full_trajectory("", "x") == "x" and full_trajectory("a", "") == "a"
