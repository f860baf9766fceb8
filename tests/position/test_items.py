"""Four-option filter, the cyclic permutations (Section 3.2) and the all-24-orderings design."""

from collections import Counter

import pandas as pd
import pytest

from thinkbias.position.items import (
    cyclic_permutations,
    four_option_items,
    n_orderings,
    option_orderings,
    permutations_table,
)


def _mcq():
    return pd.DataFrame(
        {
            "benchmark": ["mmlu", "mmlu"],
            "item_id": ["q1", "q2"],
            "subject": ["s", "s"],
            "question": ["What?", "Which?"],
            "option_a": ["w", "x"],
            "option_b": ["x", "y"],
            "option_c": ["y", "z"],
            "option_d": ["z", None],
            "answer": ["B", "A"],
            "n_options": [4, 3],
        }
    )


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


def _right_neighbours(orderings):
    """Counter of (option, option shown right after it) over the orderings (positions A-C)."""
    return Counter((o[j], o[j + 1]) for o in orderings for j in range(3))


def test_all_orderings_design():
    cyclic, every = option_orderings("cyclic"), option_orderings("all")
    assert n_orderings("cyclic") == 4 and n_orderings("all") == 24 and len(set(every)) == 24
    assert every[:4] == cyclic  # an "all" run holds the paper's design as permutations 0-3
    # cyclic shifts: option i is only ever followed by option i + 1; all 24: by each other option 6 times
    assert set(_right_neighbours(cyclic)) == {(i, (i + 1) % 4) for i in range(4)}
    assert set(_right_neighbours(every).values()) == {6} and len(_right_neighbours(every)) == 12
    # each option at each position 6 times
    assert all(Counter(o[j] for o in every) == Counter({i: 6 for i in range(4)}) for j in range(4))
    with pytest.raises(ValueError, match="unknown option ordering design"):
        option_orderings("random")


def test_all_orderings_prompts():
    perms = permutations_table(four_option_items(_mcq()), "all")
    assert perms["permutation"].tolist() == list(range(24)) and perms["ordering"].nunique() == 24
    assert perms["ordering"].iloc[:4].tolist() == ["ABCD", "DABC", "CDAB", "BCDA"]
    for row in perms.itertuples():
        shown = [row.option_a, row.option_b, row.option_c, row.option_d]
        assert shown == [{"A": "w", "B": "x", "C": "y", "D": "z"}[c] for c in row.ordering]
        assert shown["ABCD".index(row.correct_position)] == "x"
    assert perms["correct_position"].value_counts().to_dict() == {"A": 6, "B": 6, "C": 6, "D": 6}
    assert (
        permutations_table(four_option_items(_mcq()), "cyclic")
        .drop(columns="ordering")
        .equals(cyclic_permutations(four_option_items(_mcq())).drop(columns="ordering"))
    )
