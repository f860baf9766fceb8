"""PBS (Eq. 1) on constructed answer distributions."""

import math

import numpy as np
import pytest

from thinkbias.position.pbs import distance_from_uniform, max_pbs, position_bias_score, position_distribution


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
