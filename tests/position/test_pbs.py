"""PBS (Eq. 1) on constructed answer distributions."""

import itertools
import math

import numpy as np
import pytest

from thinkbias.position.pbs import (
    distance_from_uniform,
    max_pbs,
    pbs_from_counts,
    position_bias_score,
    position_distribution,
)


def test_always_position_a():
    assert position_bias_score(["A", "A", "A", "A"], "l2") == pytest.approx(math.sqrt(0.75))
    assert position_bias_score(["A", "A", "A", "A"], "tv") == pytest.approx(0.75)
    assert max_pbs("l2") == pytest.approx(0.8660254) and max_pbs("tv") == pytest.approx(0.75)


def test_content_consistent_answering_is_unbiased():
    # correct answer at original position k=1 (B); permutation s moves it to (1+s) mod 4
    chosen = ["ABCD"[(1 + s) % 4] for s in range(4)]
    assert position_bias_score(chosen, "l2") == pytest.approx(0.0)
    assert position_bias_score(chosen, "tv") == pytest.approx(0.0)


def test_two_positions_hand_worked():
    # p = (.5, .5, 0, 0): L2 = sqrt(4 * .0625) = .5; TV = .5 * (.25+.25+.25+.25) = .5
    assert position_bias_score(["A", "B", "A", "B"], "l2") == pytest.approx(0.5)
    assert position_bias_score(["A", "B", "A", "B"], "tv") == pytest.approx(0.5)
    # p = (.5, .25, .25, 0): L2 = sqrt(.0625 + .0625) ; TV = .25
    assert position_bias_score(["A", "A", "B", "C"], "l2") == pytest.approx(math.sqrt(0.125))
    assert position_bias_score(["A", "A", "B", "C"], "tv") == pytest.approx(0.25)


def test_unextracted_permutations_are_skipped():
    assert np.allclose(position_distribution(["A", None, float("nan"), "A"]), [1, 0, 0, 0])
    assert math.isnan(position_bias_score([None, None]))


def test_unknown_norm():
    with pytest.raises(ValueError):
        distance_from_uniform(np.full(4, 0.25), "l1")


def _attainable(norm):
    """PBS of every split of 1-4 extracted answers over the four positions."""
    splits = {tuple(sorted(c, reverse=True)) for c in itertools.product(range(5), repeat=4) if 1 <= sum(c) <= 4}
    return {s: pbs_from_counts(s, norm) for s in splits}


def test_appendix_e_example_is_an_l2_value():
    """Appendix E's PBS 0.612 (question 745) is the L2 PBS of a 3-1-0-0 split and no TV value: the
    paper computed Eq. 1, and its "theoretical maximum of 0.75" is the TV maximum."""
    l2 = _attainable("l2")
    assert [s for s, v in l2.items() if round(v, 3) == 0.612] == [(3, 1, 0, 0)]
    assert l2[(3, 1, 0, 0)] == pytest.approx(math.sqrt(0.375))
    assert sorted({round(v, 12) for v in _attainable("tv").values()}) == [0.0, 0.25, 0.5, 0.75]


def test_pbs_from_counts_is_exact_and_order_free():
    assert pbs_from_counts([1, 1, 1, 0]) == pbs_from_counts([0, 1, 1, 1]) == pbs_from_counts([1, 0, 1, 1])
    assert pbs_from_counts([1, 1, 1, 0]) == pytest.approx(math.sqrt(12) / 12, rel=1e-15)
    assert pbs_from_counts([1, 0, 0, 0]) == pbs_from_counts([2, 0, 0, 0]) == pbs_from_counts([0, 0, 0, 6])
    assert pbs_from_counts([2, 1, 1, 0], "tv") == 0.25 and math.isnan(pbs_from_counts([0, 0, 0, 0]))
    # 24 orderings: six answers per position is unbiased
    assert pbs_from_counts([6, 6, 6, 6]) == 0.0 and pbs_from_counts([24, 0, 0, 0]) == max_pbs()
