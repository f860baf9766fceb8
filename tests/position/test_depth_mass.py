"""Depth-probe trajectories by absolute position, against a hand-worked case."""

import math

import numpy as np
import pandas as pd
import pytest

from thinkbias.position.depth_mass import TABLE_COLUMNS, depth_trajectory_table, question_depth_mass

CFG = {"benchmark": "mmlu", "model": "m", "mode": "reasoning"}


def _probe(q, s, depth, probs):
    return {
        **CFG,
        "question_id": q,
        "permutation": s,
        "depth": depth,
        "correct_position": "ABCD"[s],
        "cut_tokens": int(depth * 10),
        "trace_tokens": 10,
        "outside_mass": 0.5,
        **{f"p_{c}": p for c, p in zip("ABCD", probs)},
    }


def _probes() -> pd.DataFrame:
    """q1: uniform at depth 0, then 0.7 on position A in every ordering (position-driven);
    q2: 0.4 on A at depth 0 (one ordering without candidate mass), then 0.9 on the correct content,
    which the orderings move over every position (content-driven)."""
    rows = []
    for s in range(4):
        rows.append(_probe("q1", s, 0.0, [0.25] * 4))
        rows.append(_probe("q1", s, 1.0, [0.7, 0.1, 0.1, 0.1]))
        rows.append(_probe("q2", s, 0.0, [math.nan] * 4 if s == 3 else [0.4, 0.2, 0.2, 0.2]))
        rows.append(_probe("q2", s, 1.0, [0.9 if j == s else 0.1 / 3 for j in range(4)]))
    return pd.DataFrame(rows)


def _questions() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {**CFG, "question_id": "q1", "pbs": 0.5, "accuracy": 0.25, "length": 100.0},
            {**CFG, "question_id": "q2", "pbs": 0.0, "accuracy": 1.0, "length": 200.0},
        ]
    )


def test_question_level_mass_by_absolute_position():
    q = question_depth_mass(_probes()).set_index(["question_id", "depth"])
    assert q.loc[("q1", 0.0), "preferred_mass"] == pytest.approx(0.25)
    assert q.loc[("q1", 0.0), "preferred_position"] == "A" and q.loc[("q1", 0.0), "probe_pbs"] == pytest.approx(0)
    assert q.loc[("q1", 1.0), "preferred_mass"] == pytest.approx(0.7)
    assert q.loc[("q1", 1.0), "probe_pbs"] == pytest.approx(math.sqrt(0.45**2 + 3 * 0.15**2))
    assert q.loc[("q1", 1.0), "correct_mass"] == pytest.approx((0.7 + 0.1 * 3) / 4)
    # content-driven certainty averages to uniform over the orderings: no position preference
    assert q.loc[("q2", 1.0), "preferred_mass"] == pytest.approx(0.25)
    assert q.loc[("q2", 1.0), "probe_pbs"] == pytest.approx(0, abs=1e-12)
    assert q.loc[("q2", 1.0), "correct_mass"] == pytest.approx(0.9)
    assert q.loc[("q2", 0.0), "n_permutations"] == 3 and q.loc[("q2", 0.0), "mass_A"] == pytest.approx(0.4)
    assert q.loc[("q2", 0.0), "mean_cut_tokens"] == 0 and q.loc[("q2", 1.0), "mean_cut_tokens"] == 10


def test_trajectory_table_groups():
    t = depth_trajectory_table(_probes(), _questions())
    assert list(t.columns) == TABLE_COLUMNS
    assert len(t) == 7 * 2  # all, quartiles 1-4, correct, incorrect x 2 depths
    t = t.set_index(["group", "depth"])
    assert t.loc[("all", 1.0), "preferred_mass"] == pytest.approx((0.7 + 0.25) / 2)
    assert t.loc[("all", 1.0), "preferred_mass_se"] == pytest.approx(np.std([0.7, 0.25], ddof=1) / math.sqrt(2))
    assert t.loc[("all", 0.0), "preferred_mass"] == pytest.approx((0.25 + 0.4) / 2)
    assert t.loc[("all", 1.0), "mass_A"] == pytest.approx((0.7 + 0.25) / 2)
    # two questions in equal-frequency quartiles: ranks 1 and 2 of 2 go to bins 1 and 3
    assert t.loc[("quartile 1", 1.0), "preferred_mass"] == pytest.approx(0.7)
    assert t.loc[("quartile 3", 1.0), "preferred_mass"] == pytest.approx(0.25)
    assert t.loc[("quartile 2", 1.0), "n_questions"] == 0 and math.isnan(t.loc[("quartile 2", 1.0), "preferred_mass"])
    assert t.loc[("incorrect", 1.0), "preferred_mass"] == pytest.approx(0.7)
    assert t.loc[("correct", 1.0), "correct_mass"] == pytest.approx(0.9)
    assert t.loc[("correct", 0.0), "n_questions"] == 1


def test_a_probed_question_missing_from_the_questions_table_stops():
    with pytest.raises(
        ValueError, match=r"1 probed questions are not in the questions table \(first: mmlu/m/reasoning/q2\)"
    ):
        depth_trajectory_table(_probes(), _questions().iloc[:1])


def test_no_probes_give_an_empty_table_and_a_figure_that_says_so(tmp_path):
    from thinkbias.plots.position import figure5_depth_probe
    from thinkbias.position.depth_probe import PROBE_COLUMNS

    empty = depth_trajectory_table(pd.DataFrame(columns=list(PROBE_COLUMNS)), _questions().iloc[:0])
    assert empty.empty and list(empty.columns) == TABLE_COLUMNS
    figure5_depth_probe(empty, tmp_path / "empty.png")
    figure5_depth_probe(depth_trajectory_table(_probes(), _questions()), tmp_path / "f5.png")
    assert (tmp_path / "empty.png").stat().st_size > 1000 and (tmp_path / "f5.png").stat().st_size > 5000
