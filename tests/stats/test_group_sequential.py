"""Exact group-sequential boundaries: gsDesign's published bounds, the forward crossing
probabilities, and an independent multivariate-normal computation."""

import numpy as np
import pytest
from scipy import stats

from thinkbias.stats.group_sequential import (
    crossing_probabilities,
    exact_obrien_fleming_thresholds,
    spending_boundaries,
)
from thinkbias.stats.sequential import obrien_fleming_threshold

EQUAL_5 = [0.2, 0.4, 0.6, 0.8, 1.0]
# gsDesign(k = 5, test.type = 1, alpha = 0.025, sfu = sfLDOF)$upper$bound
GSDESIGN_LDOF_5 = [4.877, 3.357, 2.680, 2.290, 2.031]


def test_one_sided_ldof_bounds_match_gsdesign_to_three_decimals():
    bounds = spending_boundaries(0.025, EQUAL_5, two_sided=False)
    assert np.round(bounds, 3).tolist() == GSDESIGN_LDOF_5


def test_each_look_spends_the_spending_function_increment():
    bounds = spending_boundaries(0.025, EQUAL_5, two_sided=False)
    spent = np.cumsum(crossing_probabilities(bounds, EQUAL_5, two_sided=False))
    expected = [obrien_fleming_threshold(0.025, t) for t in EQUAL_5]
    assert spent == pytest.approx(expected, rel=1e-6)
    assert spent[-1] == pytest.approx(0.025, rel=1e-7)


def _mvn_type_one(bounds, fractions):
    """1 - P(|Z_k| < c_k for every look), Z_k = W(t_k) / sqrt(t_k): corr(Z_i, Z_j) = sqrt(t_i / t_j)."""
    t = np.asarray(fractions)
    cov = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))
    c = np.asarray(bounds)
    inside = stats.multivariate_normal(mean=np.zeros(len(t)), cov=cov, abseps=1e-9, releps=1e-9, maxpts=2_000_000)
    return 1.0 - inside.cdf(c, lower_limit=-c)


def test_two_sided_exact_boundaries_spend_alpha_by_an_independent_computation():
    looks = [0.25, 0.6, 1.0]
    bounds = spending_boundaries(0.05, looks)
    assert _mvn_type_one(bounds, looks) == pytest.approx(0.05, abs=2e-5)
    # after the first two looks: the spending function's value at t = 0.6
    assert _mvn_type_one(bounds[:2], looks[:2]) == pytest.approx(obrien_fleming_threshold(0.05, 0.6), abs=2e-6)


def test_the_papers_rule_exceeds_its_level_and_the_exact_design_does_not():
    # the paper's rule: look k rejects when p < alpha(t_k), i.e. |Z_k| >= z_{1 - alpha/2} / sqrt(t_k)
    paper = [stats.norm.isf(obrien_fleming_threshold(0.05, t) / 2) for t in EQUAL_5]
    assert paper == pytest.approx([1.959964 / np.sqrt(t) for t in EQUAL_5], rel=1e-6)
    inflated = float(np.sum(crossing_probabilities(paper, EQUAL_5)))
    assert inflated == pytest.approx(0.0610, abs=5e-4)  # 1.22 x the nominal 0.05
    # the same by Monte Carlo over Brownian paths
    rng = np.random.default_rng(11)
    w = np.cumsum(rng.standard_normal((400_000, 5)) * np.sqrt(0.2), axis=1)
    z = np.abs(w / np.sqrt(EQUAL_5))
    mc = float(np.mean((z >= np.array(paper)).any(axis=1)))
    assert mc == pytest.approx(inflated, abs=4 * np.sqrt(inflated * (1 - inflated) / 400_000))
    exact = spending_boundaries(0.05, EQUAL_5)
    assert float(np.mean((z >= exact).any(axis=1))) == pytest.approx(0.05, abs=4 * np.sqrt(0.05 * 0.95 / 400_000))


def test_p_thresholds_of_the_blindspot_schedule():
    # the loan task's looks (200, 400, 800, 1600, 2500 of 2500) at alpha_s = 0.05 / 20
    looks = [0.08, 0.16, 0.32, 0.64, 1.0]
    exact = exact_obrien_fleming_thresholds(0.05 / 20, looks)
    paper = [obrien_fleming_threshold(0.05 / 20, t) for t in looks]
    assert exact[0] == pytest.approx(paper[0], rel=1e-9)  # the first look spends alike
    assert all(e <= p * (1 + 1e-9) for e, p in zip(exact, paper))
    assert exact[-1] < paper[-1] == 0.05 / 20
    assert exact_obrien_fleming_thresholds(0.01, [1.0]) == pytest.approx([0.01])


def test_invalid_looks_are_refused():
    with pytest.raises(ValueError, match="increase"):
        spending_boundaries(0.05, [0.5, 0.5, 1.0])
    with pytest.raises(ValueError, match="increase"):
        spending_boundaries(0.05, [0.0, 1.0])
    with pytest.raises(ValueError, match="alpha"):
        spending_boundaries(1.5, [1.0])
