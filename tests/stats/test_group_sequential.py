"""Exact group-sequential boundaries: gsDesign's and ldbounds' published bounds, the forward crossing
probabilities, and an independent multivariate-normal computation (tests/stats/gs_reference.py)."""

import numpy as np
import pytest
from scipy import stats

from tests.stats.gs_reference import ldof_per_side, reference_bounds, upper_first_crossing
from thinkbias.stats.group_sequential import (
    crossing_probabilities,
    exact_obrien_fleming_thresholds,
    spending_boundaries,
)
from thinkbias.stats.sequential import obrien_fleming_threshold

EQUAL_3 = [1 / 3, 2 / 3, 1.0]
EQUAL_4 = [0.25, 0.5, 0.75, 1.0]
EQUAL_5 = [0.2, 0.4, 0.6, 0.8, 1.0]
# Two-sided alpha = 0.05, Lan-DeMets O'Brien-Fleming spending, alpha / 2 per side:
# gsDesign(k = K, test.type = 2, alpha = 0.025, sfu = sfLDOF)$upper$bound and
# ldbounds::bounds(t, iuse = c(1, 1), alpha = c(0.025, 0.025))$upper.bounds
PUBLISHED_LDOF = {
    3: [3.710, 2.511, 1.993],
    4: [4.333, 2.963, 2.359, 2.014],
    5: [4.877, 3.357, 2.680, 2.290, 2.031],
}
# one-sided 0.025: gsDesign(k = 5, test.type = 1, alpha = 0.025, sfu = sfLDOF)$upper$bound
GSDESIGN_LDOF_5 = [4.877, 3.357, 2.680, 2.290, 2.031]
UNEQUAL = ([0.3, 0.6, 1.0], [0.2, 0.5, 1.0])


def test_one_sided_ldof_bounds_match_gsdesign_to_three_decimals():
    bounds = spending_boundaries(0.025, EQUAL_5, two_sided=False)
    assert np.round(bounds, 3).tolist() == GSDESIGN_LDOF_5


def test_each_look_spends_the_spending_function_increment():
    bounds = spending_boundaries(0.025, EQUAL_5, two_sided=False)
    spent = np.cumsum(crossing_probabilities(bounds, EQUAL_5, two_sided=False))
    expected = [obrien_fleming_threshold(0.025, t) for t in EQUAL_5]
    assert spent == pytest.approx(expected, rel=1e-6)
    assert spent[-1] == pytest.approx(0.025, rel=1e-7)


@pytest.mark.parametrize("looks", [EQUAL_3, EQUAL_4, EQUAL_5], ids=["K=3", "K=4", "K=5"])
def test_two_sided_ldof_bounds_match_gsdesign_and_ldbounds(looks):
    bounds = spending_boundaries(0.05, looks)
    assert np.round(bounds, 3).tolist() == PUBLISHED_LDOF[len(looks)]
    # the published values, rounded to 3 decimals, agree with the independent computation
    assert np.abs(reference_bounds(0.05, looks) - PUBLISHED_LDOF[len(looks)]).max() <= 5e-4


@pytest.mark.parametrize("looks", [*UNEQUAL, EQUAL_3], ids=["t=0.3,0.6,1", "t=0.2,0.5,1", "K=3"])
def test_two_sided_bounds_equal_an_independent_computation(looks):
    """Unequal looks too: the bounds equal those found by root finding on scipy's multivariate normal
    CDF, and each side spends alpha*(t) = 2 (1 - Phi(z_{1 - alpha/4} / sqrt(t))) at every look."""
    bounds = spending_boundaries(0.05, looks)
    assert bounds == pytest.approx(reference_bounds(0.05, looks), abs=2e-4)
    per_side = [upper_first_crossing(bounds[: k + 1], looks[: k + 1]) for k in range(len(looks))]
    expected = np.diff([0.0] + [ldof_per_side(0.05, t) for t in looks])
    assert per_side == pytest.approx(expected, rel=1e-4, abs=1e-9)
    assert sum(per_side) == pytest.approx(0.025, abs=1e-6)


def test_the_two_sided_design_spends_alpha_over_2_per_side_not_alpha_over_both():
    """The first look of 5 equal ones at 0.05: z = 4.877 (p 1.08e-6), where spending the two-sided
    function over both sides together gives 4.383 (p 1.17e-5)."""
    first = spending_boundaries(0.05, EQUAL_5)[0]
    assert 2 * stats.norm.sf(first) == pytest.approx(2 * ldof_per_side(0.05, 0.2), rel=1e-9)
    assert 2 * stats.norm.sf(first) == pytest.approx(1.08e-6, rel=0.01)
    both_sides = stats.norm.isf(obrien_fleming_threshold(0.05, 0.2) / 2)
    assert (round(first, 3), round(both_sides, 3)) == (4.877, 4.383)


def test_classical_obrien_fleming_constants_are_not_spending_bounds():
    """3.471 / 2.454 / 2.004 (K = 3) and 4.049 / 2.863 / 2.337 / 2.024 (K = 4) are the classical
    O'Brien-Fleming (1979) boundaries C sqrt(K / k): level 0.05 in all, but not the Lan-DeMets
    spending design (whose K = 3 and 4 bounds are PUBLISHED_LDOF)."""
    for looks, c in ((EQUAL_3, 2.004), (EQUAL_4, 2.024)):
        classical = c * np.sqrt(len(looks) / np.arange(1, len(looks) + 1))
        assert float(np.sum(crossing_probabilities(classical, looks))) == pytest.approx(0.05, abs=3e-4)
        assert np.abs(spending_boundaries(0.05, looks) - classical).max() > 0.2


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
    # after the first two looks: both sides' spending at t = 0.6
    assert _mvn_type_one(bounds[:2], looks[:2]) == pytest.approx(2 * ldof_per_side(0.05, 0.6), abs=2e-6)


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
    alpha_s = 0.05 / 20
    exact = exact_obrien_fleming_thresholds(alpha_s, looks)
    paper = [obrien_fleming_threshold(alpha_s, t) for t in looks]
    # the first look spends both sides' alpha*(t_1): twice 2 (1 - Phi(z_{1 - alpha/4} / sqrt(t)))
    assert exact[0] == pytest.approx(2 * ldof_per_side(alpha_s, 0.08), rel=1e-9)
    assert exact[0] < paper[0] / 10
    assert all(e < p for e, p in zip(exact, paper))
    assert exact[-1] < paper[-1] == alpha_s
    assert exact_obrien_fleming_thresholds(0.01, [1.0]) == pytest.approx([0.01])


def test_invalid_looks_are_refused():
    with pytest.raises(ValueError, match="increase"):
        spending_boundaries(0.05, [0.5, 0.5, 1.0])
    with pytest.raises(ValueError, match="increase"):
        spending_boundaries(0.05, [0.0, 1.0])
    with pytest.raises(ValueError, match="alpha"):
        spending_boundaries(1.5, [1.0])
