"""Per-record extraction and per-question / per-configuration metrics on constructed generations."""

import math

import pandas as pd
import pytest

from thinkbias.position.questions import configuration_summary, question_metrics
from thinkbias.position.records import extract_records


def _gens():
    rows = []
    # q1: always position A (PBS sqrt(.75)); correct answer cycles B, C, D, A -> accuracy 1/4
    for s in range(4):
        rows.append(
            {
                "question_id": "q1",
                "permutation": s,
                "correct_position": "BCDA"[s],
                "full_text": "Option B? no. The answer is (A).",
            }
        )
    # q2: content-consistent (always correct), one unparseable record
    for s in range(3):
        rows.append(
            {
                "question_id": "q2",
                "permutation": s,
                "correct_position": "CDAB"[s],
                "full_text": f"The answer is ({'CDAB'[s]})",
            }
        )
    rows.append({"question_id": "q2", "permutation": 3, "correct_position": "B", "full_text": "no idea at all"})
    df = pd.DataFrame(rows)
    df["benchmark"], df["model"], df["mode"] = "mmlu", "m", "cot"
    return df


def test_records_and_questions():
    rec = extract_records(_gens())
    assert rec["extracted"].tolist() == [True] * 7 + [False]
    assert rec["extraction_status"].iloc[-1] == "none" and math.isnan(rec["is_correct"].iloc[-1])
    # trajectory of q1: B (option), A (answer is / parenthesised at the same char) -> CCP = pos of A
    text = "Option B? no. The answer is (A)."
    assert rec["ccp"].iloc[0] == pytest.approx(text.index("A)") / len(text))
    assert rec["n_switches"].iloc[0] == 1
    q = question_metrics(rec).set_index("question_id")
    assert q.loc["q1", "pbs"] == pytest.approx(math.sqrt(0.75))
    assert q.loc["q1", "accuracy"] == pytest.approx(0.25)
    # q2: answers C, D, A over 3 extracted permutations -> p = (1/3, 0, 1/3, 1/3)
    assert q.loc["q2", "pbs"] == pytest.approx(math.sqrt(3 * (1 / 12) ** 2 + (1 / 4) ** 2))
    assert q.loc["q2", "accuracy"] == 1.0 and q.loc["q2", "n_extracted"] == 3
    s = configuration_summary(rec, q.reset_index()).iloc[0]
    assert s["extraction_rate"] == pytest.approx(7 / 8) and s["n_unparsed"] == 1 and s["n_records"] == 8
    assert s["extraction_rate_with_fallback"] == pytest.approx(7 / 8) and s["n_fallback"] == 0
    assert s["pbs"] == pytest.approx((q.loc["q1", "pbs"] + q.loc["q2", "pbs"]) / 2)
    assert s["n_questions"] == 2


def test_summary_puts_the_cascade_rate_beside_the_rate_with_fallback():
    gens = _gens()
    gens.loc[gens.index[-1], "full_text"] = "no idea, but I would go for B here"
    rec = extract_records(gens)
    s = configuration_summary(rec, question_metrics(rec)).iloc[0]
    assert s["extraction_rate"] == pytest.approx(7 / 8)  # Appendix B: the cascade yields a letter
    assert s["extraction_rate_with_fallback"] == pytest.approx(1.0) and s["n_fallback"] == 1 and s["n_unparsed"] == 0
