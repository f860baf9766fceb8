"""Four-option filter and the cyclic permutations (Section 3.2)."""

import pandas as pd

from thinkbias.position.items import cyclic_permutations, four_option_items


def _mcq():
    return pd.DataFrame({
        "benchmark": ["mmlu", "mmlu"], "item_id": ["q1", "q2"], "subject": ["s", "s"],
        "question": ["What?", "Which?"], "option_a": ["w", "x"], "option_b": ["x", "y"],
        "option_c": ["y", "z"], "option_d": ["z", None], "answer": ["B", "A"], "n_options": [4, 3],
    })


def test_filter_keeps_four_options():
    assert four_option_items(_mcq())["item_id"].tolist() == ["q1"]


def test_cyclic_shift_moves_correct_answer():
    perms = cyclic_permutations(four_option_items(_mcq()))
    assert perms["permutation"].tolist() == [0, 1, 2, 3]
    assert perms["correct_position"].tolist() == ["B", "C", "D", "A"]
    for row in perms.itertuples():
        shown = dict(zip("ABCD", [row.option_a, row.option_b, row.option_c, row.option_d]))
        assert shown[row.correct_position] == "x"  # the correct text follows the answer
    assert perms.iloc[1][["option_a", "option_b", "option_c", "option_d"]].tolist() == ["z", "w", "x", "y"]
    assert (perms["question_id"] == "mmlu:q1").all()
