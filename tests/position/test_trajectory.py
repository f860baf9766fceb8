"""Trajectory patterns (Appendix A.3), CCP (Eq. 2) and effective switching on hand-worked cases."""

import math

import pandas as pd
import pytest

from thinkbias.position.records import extract_records, records_ccp
from thinkbias.position.trajectory import (
    commitment_change_point,
    count_switches,
    effective_switching,
    extract_trajectory,
)

PATTERN_CASES = [
    ("Consider option B carefully", "B", "option"),
    ("My answer is C", "C", "answer_choice_select"),
    ("choice: D", "D", "answer_choice_select"),
    ("I would select (A)", "A", "answer_choice_select"),
    ("answer\uff1aB", "B", "answer_choice_select"),
    ("maybe (C) fits", "C", "parenthesised"),
    ("C. is about cells", "C", "letter_period"),
    ("D seems correct here", "D", "is_correct"),
    ("B looks better", "B", "is_correct"),
    ("I'll go with A", "A", "choose_pick_lean"),
    ("leaning towards D", "D", "choose_pick_lean"),
    ("so it's B", "B", "so_its"),
    ("So D, then", "D", "so_its"),
    ("So (B) wins", "B", "parenthesised"),  # one position, first pattern in order keeps it
    ("I think it must be C", "C", "i_think"),
    ("\\boxed{A}", "A", "boxed"),
]


@pytest.mark.parametrize("text,letter,pattern", PATTERN_CASES)
def test_each_pattern(text, letter, pattern):
    mentions = extract_trajectory(text)
    assert [m.letter for m in mentions] == [letter]
    assert mentions[0].pattern == pattern
    assert mentions[0].char_pos == text.index(
        letter, text.find(letter) if pattern != "i_think" else text.rindex(letter)
    )


def test_no_match_cases():
    assert extract_trajectory("") == []
    assert extract_trajectory("a b c d and also B without a cue") == []
    assert extract_trajectory("options a and b (c)") == []


def test_positions_order_and_dedup():
    text = "Option A? (B) no. I choose (C). The answer is (C)."
    mentions = extract_trajectory(text)
    assert [m.letter for m in mentions] == ["A", "B", "C", "C"]
    # "choose (C)" and "(C)" hit the same letter: one mention
    assert len({m.char_pos for m in mentions}) == len(mentions)
    assert all(0 <= m.norm_pos < 1 for m in mentions)
    assert mentions[0].norm_pos == pytest.approx(text.index("A") / len(text))


def test_ccp_hand_worked():
    # all mentions equal the final answer -> 0
    assert commitment_change_point(["B", "B"], [0.2, 0.9], "B") == 0.0
    # last differing mention is index 2 (C); the next mention is at 0.7
    assert commitment_change_point(["A", "B", "C", "B", "B"], [0.1, 0.3, 0.5, 0.7, 0.95], "B") == 0.7
    # undefined cases
    assert math.isnan(commitment_change_point(["A", "B"], [0.1, 0.9], "A"))
    assert math.isnan(commitment_change_point([], [], "A"))
    assert math.isnan(commitment_change_point(["A"], [0.5], None))


def test_ccp_eq2_reading_hand_worked():
    """Eq. 2: the earliest point after which the running answer (latest mention) stays the final one."""
    ccp = lambda letters, positions, final: commitment_change_point(letters, positions, final, "eq2")  # noqa: E731
    # all mentions agree: the running answer is final from the first mention on
    assert ccp(["B", "B"], [0.2, 0.9], "B") == 0.2
    # a switch in the middle: the same as A.3
    assert ccp(["A", "B", "C", "B", "B"], [0.1, 0.3, 0.5, 0.7, 0.95], "B") == 0.7
    # the last mention differs, or there is none: the answer is final only at the end
    assert ccp(["A", "B"], [0.1, 0.9], "A") == 1.0
    assert ccp([], [], "A") == 1.0
    assert math.isnan(ccp(["A"], [0.5], None))
    with pytest.raises(ValueError, match="unknown CCP definition"):
        commitment_change_point(["A"], [0.5], "A", "eq1")


def test_records_take_the_ccp_definition():
    gens = pd.DataFrame(
        {
            "full_text": ["Option B looks fine. The answer is (B).", "I think C. The answer is (D)"],
            "question_id": ["q", "q"],
            "permutation": [0, 1],
        }
    )
    a3 = extract_records(gens)["ccp"].tolist()
    eq2 = extract_records(gens, ccp_definition="eq2")["ccp"].tolist()
    first_b = gens["full_text"][0].index("B") / len(gens["full_text"][0])
    assert a3[0] == 0.0 and eq2[0] == pytest.approx(first_b)
    second = gens["full_text"][1]
    assert a3[1] == pytest.approx(second.index("D") / len(second)) == eq2[1]
    records = extract_records(gens)
    assert records_ccp(records, "eq2").tolist() == pytest.approx(eq2, abs=1e-6)
    assert records_ccp(records, "a3").tolist() == pytest.approx(a3, abs=1e-6)


def test_switching_hand_worked():
    letters = ["A", "B", "B", "C", "A"]
    assert count_switches(letters) == 3
    per_mention, per_kchar = effective_switching(letters, 2000)
    assert per_mention == pytest.approx(3 / 5)
    assert per_kchar == pytest.approx(1.5)
    assert count_switches([]) == 0
    pm, pk = effective_switching([], 0)
    assert math.isnan(pm) and math.isnan(pk)
