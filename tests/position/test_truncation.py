"""Truncation intervention: cut planning, prefix mapping, outcomes, buckets and the chi-square test."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from thinkbias.position.truncation import (
    assistant_prefix,
    before_after_test,
    bucket_rates,
    continuation_outcomes,
    continuation_seed,
    plan_cuts,
    position_bucket,
    preferred_position,
    select_trajectories,
)


def _records():
    return pd.DataFrame(
        {
            "question_id": ["q1", "q1", "q2", "q3"],
            "question_order": [0, 0, 1, 2],
            "permutation": [0, 1, 0, 0],
            "ccp": [np.nan, 0.5, 0.1, np.nan],
            "extracted": [True, True, True, True],
            "final_answer": ["A", "B", "C", "D"],
            "full_text": ["x" * 100, "y" * 200, "z" * 50, "w"],
        }
    )


def test_select_and_plan():
    sel = select_trajectories(_records(), 5)
    assert sel["question_id"].tolist() == ["q1", "q2"] and sel["permutation"].tolist() == [1, 0]
    cuts, dropped = plan_cuts(sel, (-0.15, -0.05, 0.05, 0.15))
    # q2: ccp 0.1 -> -0.05 dropped; 0.05, 0.15, 0.25 kept
    assert dropped == 1 and len(cuts) == 7
    q1 = cuts[cuts["question_id"] == "q1"]
    assert q1["cut"].tolist() == pytest.approx([0.35, 0.45, 0.55, 0.65])
    assert q1["cut_char"].tolist() == [70, 90, 110, 130]
    assert q1["side"].tolist() == ["before", "before", "after", "after"]
    assert select_trajectories(_records(), 1)["question_id"].tolist() == ["q1"]


def test_assistant_prefix_maps_into_thinking_and_response():
    thinking, response = "abcdef", "The answer is (B)."
    assistant = "<think>\n" + thinking + "\n</think>\n\n" + response
    assert assistant_prefix(3, thinking, response, assistant) == "<think>\nabc"
    # full text = thinking + "\n\n" + response; char 6 + 2 + 4 -> 4 chars into the response
    assert assistant_prefix(12, thinking, response, assistant).endswith("</think>\n\nThe ")
    assert assistant_prefix(3, "", "xyz", "xyz") == "xyz"[:3]


def test_seeds_are_stable_and_distinct():
    a = continuation_seed(1, "q", 0, 0)
    assert a == continuation_seed(1, "q", 0, 0)
    assert len({continuation_seed(1, "q", i, c) for i in range(4) for c in range(3)}) == 12
    assert 0 <= a < 2**31


def test_outcomes_buckets_and_chi_square():
    cuts = pd.DataFrame(
        {
            "benchmark": "mmlu",
            "model": "m",
            "mode": "reasoning",
            "cut": [0.1, 0.2, 0.4, 0.95, 0.95, 0.6],
            "side": ["before", "before", "before", "after", "after", "after"],
            "original_answer": ["B"] * 6,
        }
    )
    texts = [
        "The answer is (A)",
        "The answer is (B)",
        "The answer is (C)",
        "The answer is (A)",
        "???",
        "The answer is (B)",
    ]
    out = continuation_outcomes(cuts, texts, preferred="A")
    assert out["changed"].tolist()[:4] == [1.0, 0.0, 1.0, 1.0] and math.isnan(out["changed"][4])
    assert out["toward_preferred"].tolist()[0] == 1.0 and out["toward_preferred"].tolist()[2] == 0.0
    b = bucket_rates(out).set_index("bucket")
    assert b.loc["0-0.3", "change_rate"] == 0.5 and b.loc["0-0.3", "toward_preferred_rate"] == 1.0
    assert b.loc["0.9-1", "n"] == 2 and b.loc["0.9-1", "n_answered"] == 1 and b.loc["0.9-1", "change_rate"] == 1.0
    assert b.loc["0.3-0.5", "toward_preferred_rate"] == 0.0
    assert math.isnan(b.loc["0.7-0.9", "change_rate"])
    test = before_after_test(out)
    assert (test["changed_before"], test["n_before"], test["changed_after"], test["n_after"]) == (2, 3, 1, 2)
    chi2, p, _, _ = stats.chi2_contingency(np.array([[2, 1], [1, 1]]), correction=False)
    assert test["chi2"] == pytest.approx(chi2) and test["p_value"] == pytest.approx(p)


def test_chi_square_hand_worked():
    # before: 30 of 100 changed, after: 10 of 100 -> chi2 = 200*(30*90-70*10)^2/(100*100*40*160) = 12.5
    o = pd.DataFrame(
        {"side": ["before"] * 100 + ["after"] * 100, "changed": [1.0] * 30 + [0.0] * 70 + [1.0] * 10 + [0.0] * 90}
    )
    assert before_after_test(o)["chi2"] == pytest.approx(12.5)


def test_buckets_and_preferred():
    assert position_bucket(0.0) == "0-0.3" and position_bucket(1.0) == "0.9-1" and position_bucket(0.3) == "0.3-0.5"
    with pytest.raises(ValueError):
        position_bucket(1.2)
    rec = pd.DataFrame({"extracted": [True, True, True, False], "final_answer": ["C", "C", "A", None]})
    assert preferred_position(rec) == "C" and preferred_position(rec, "B") == "B"


def test_chi_square_log10_p_where_p_underflows():
    # the paper's 2,400 continuations (200 questions x 4 offsets x 3), split perfectly: every one
    # before the CCP changed, none after -> X^2 = 2400, p = erfc(sqrt(1200)) = 10^-522.9 (scipy: 0)
    import mpmath

    o = pd.DataFrame({"side": ["before"] * 1200 + ["after"] * 1200, "changed": [1.0] * 1200 + [0.0] * 1200})
    test = before_after_test(o)
    mpmath.mp.dps = 50
    assert test["chi2"] == pytest.approx(2400) and test["p_value"] == 0.0
    assert test["log10_p_value"] == pytest.approx(float(mpmath.log10(mpmath.erfc(mpmath.sqrt(1200)))), abs=1e-6)
    hand = before_after_test(
        pd.DataFrame(
            {"side": ["before"] * 100 + ["after"] * 100, "changed": [1.0] * 30 + [0.0] * 70 + [1.0] * 10 + [0.0] * 90}
        )
    )
    assert hand["log10_p_value"] == pytest.approx(math.log10(hand["p_value"]), abs=1e-12)
