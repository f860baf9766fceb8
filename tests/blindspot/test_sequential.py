"""Sequential statistics: O'Brien-Fleming thresholds, Bonferroni bookkeeping, conditional power."""

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar

from thinkbias.stats.mcnemar import mcnemar_test
from thinkbias.stats.sequential import (
    bonferroni_level,
    conditional_power,
    is_futile,
    mcnemar_p_vector,
    obrien_fleming_threshold,
    remaining_discordant,
)

ALPHA_20 = 0.05 / 20


@pytest.mark.parametrize("n, expected", [(200, 5.6e-15), (400, 3.3e-8), (800, 9.3e-5)])
def test_obrien_fleming_matches_the_spec_hiring_examples(n, expected):
    got = obrien_fleming_threshold(ALPHA_20, n / 1336)
    assert got == pytest.approx(expected, rel=0.05)


@pytest.mark.parametrize("n, expected", [(400, 4e-14), (800, 9e-8), (1600, 1.6e-4)])
def test_obrien_fleming_matches_the_spec_loan_examples(n, expected):
    assert obrien_fleming_threshold(ALPHA_20, n / 2500) == pytest.approx(expected, rel=0.1)


def test_obrien_fleming_is_alpha_at_full_information_and_never_above_it():
    assert obrien_fleming_threshold(ALPHA_20, 1.0) == ALPHA_20
    assert obrien_fleming_threshold(ALPHA_20, 1.3) == ALPHA_20
    ts = np.linspace(0.05, 0.99, 30)
    th = [obrien_fleming_threshold(0.05, t) for t in ts]
    assert all(a <= b for a, b in zip(th, th[1:]))
    assert max(th) <= 0.05


def test_obrien_fleming_hand_computed():
    # alpha = 0.05, t = 0.25: z = 1.95996 / 0.5 = 3.91993 -> 2 * sf(3.91993)
    assert obrien_fleming_threshold(0.05, 0.25) == pytest.approx(2 * stats.norm.sf(1.959964 / 0.5), rel=1e-5)
    assert obrien_fleming_threshold(0.05, 0.25) == pytest.approx(8.857e-5, rel=1e-3)


def test_bonferroni_counts_every_concept_test_across_stages():
    # 20 concepts enter stage 0, 12 stage 1, 3 stage 2: alpha / 20, / 32, / 35
    assert bonferroni_level(0.05, [20]) == 0.05 / 20
    assert bonferroni_level(0.05, [20, 12]) == 0.05 / 32
    assert bonferroni_level(0.05, [20, 12, 3]) == 0.05 / 35
    assert bonferroni_level(0.05, []) == 0.05 and bonferroni_level(0.05, [0]) == 0.05
    with pytest.raises(ValueError, match="negative number of concepts"):
        bonferroni_level(0.05, [20, -1])


def test_remaining_discordant_extrapolates_the_current_rate():
    # 30 discordant in 200 inputs, 1136 inputs left: floor(30/200*1136) = floor(170.4)
    assert remaining_discordant(20, 10, 200, 1336) == 170
    assert remaining_discordant(5, 5, 100, 100) == 0


@pytest.mark.parametrize("b, c", [(0, 0), (3, 1), (10, 2), (12, 12), (20, 5), (40, 18), (100, 70), (7, 30)])
def test_vectorised_mcnemar_matches_statsmodels(b, c):
    exact = b + c < 25
    expected = 1.0 if b + c == 0 else mcnemar([[0, b], [c, 0]], exact=exact, correction=True).pvalue
    assert mcnemar_p_vector(np.array([b]), np.array([c]))[0] == pytest.approx(expected, rel=1e-9)
    assert mcnemar_test(b, c).p_value == pytest.approx(expected, rel=1e-9)


def test_conditional_power_is_one_for_an_overwhelming_effect():
    # 40 vs 5 discordant in 200 of 2500 inputs: the effect continues, the final test is certain
    assert conditional_power(40, 5, 200, 2500, ALPHA_20, n_simulations=5000) == pytest.approx(1.0)


def test_conditional_power_is_zero_for_a_flat_null():
    # 50 vs 50 discordant: p_hat = 0.5, the projected final counts stay balanced
    assert conditional_power(50, 50, 400, 2500, ALPHA_20, n_simulations=5000) < 0.01
    futile, cp = is_futile(50, 50, 400, 2500, ALPHA_20, n_simulations=5000)
    assert futile and cp < 0.01


def test_conditional_power_against_a_direct_binomial_computation():
    # With n_rem fixed, CP = P(b + B has p < alpha), B ~ Binomial(n_rem, p_hat): compute it exactly.
    b, c, n_s, n = 18, 9, 200, 800
    n_rem = remaining_discordant(b, c, n_s, n)
    ks = np.arange(n_rem + 1)
    p = mcnemar_p_vector(b + ks, c + n_rem - ks)
    exact_cp = float(stats.binom.pmf(ks, n_rem, b / (b + c))[p < 0.01].sum())
    mc = conditional_power(b, c, n_s, n, 0.01, n_simulations=50_000, seed=0)
    assert mc == pytest.approx(exact_cp, abs=0.01)


def test_conditional_power_is_seeded():
    a = conditional_power(14, 11, 200, 2500, 0.01, n_simulations=2000, seed=3)
    assert a == conditional_power(14, 11, 200, 2500, 0.01, n_simulations=2000, seed=3)


def test_futility_needs_enough_discordant_pairs():
    futile, cp = is_futile(12, 12, 200, 2500, ALPHA_20)
    assert not futile and cp is None
    assert math.isfinite(obrien_fleming_threshold(ALPHA_20, 0.08))


def test_futility_is_skipped_when_nothing_is_left_to_project():
    # b = 13, c = 12 at 2,470 of 2,500: floor(25 / 2470 * 30) = 0 discordant pairs left
    assert remaining_discordant(13, 12, 2470, 2500) == 0
    assert is_futile(13, 12, 2470, 2500, ALPHA_20) == (False, None)
    # one projected pair is enough for the check to run
    assert remaining_discordant(13, 12, 2400, 2500) == 1
    futile, cp = is_futile(13, 12, 2400, 2500, ALPHA_20, n_simulations=2000)
    assert futile and cp == 0.0


def test_conditional_power_counts_draws_like_a_direct_tally():
    # the per-value weighting equals testing every one of the Monte Carlo draws
    b, c, n_s, n, alpha = 30, 15, 300, 1000, 0.001
    n_rem = remaining_discordant(b, c, n_s, n)
    draws = np.random.default_rng(5).binomial(n_rem, b / (b + c), size=3000)
    direct = float(np.mean(mcnemar_p_vector(b + draws, c + n_rem - draws) < alpha))
    assert conditional_power(b, c, n_s, n, alpha, n_simulations=3000, seed=5) == direct
