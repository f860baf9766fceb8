"""Wilson intervals, odds ratio and relative risk against statsmodels and scipy."""

import math

import numpy as np
import pytest
from scipy.stats import fisher_exact
from statsmodels.stats.contingency_tables import Table2x2
from statsmodels.stats.proportion import proportion_confint

from thinkbias.stats.proportions import fisher_log10_p, fisher_test, odds_ratio, relative_risk, wilson_interval


@pytest.mark.parametrize(("k", "n"), [(0, 5), (2, 3), (5, 5), (37, 120), (600, 1000), (1, 2500)])
def test_wilson_interval_is_statsmodels(k, n):
    lo, hi = wilson_interval(k, n)
    ref = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert (lo, hi) == pytest.approx(ref, abs=1e-12)
    assert wilson_interval(k, n, 0.9) == pytest.approx(proportion_confint(k, n, alpha=0.1, method="wilson"), abs=1e-12)


def test_wilson_interval_without_observations_is_nan():
    assert all(math.isnan(v) for v in wilson_interval(0, 0))


@pytest.mark.parametrize("table", [(5, 1, 1, 5), (30, 10, 20, 20), (120, 80, 95, 105), (3, 7, 9, 2)])
def test_odds_ratio_and_relative_risk_are_statsmodels_and_scipy(table):
    a, b, c, d = table
    ref = Table2x2(np.array([[a, b], [c, d]]))
    est, lo, hi = odds_ratio(a, b, c, d)
    assert est == pytest.approx(fisher_exact([[a, b], [c, d]]).statistic, rel=1e-12)
    assert est == pytest.approx(ref.oddsratio, rel=1e-12)
    assert (lo, hi) == pytest.approx(ref.oddsratio_confint(alpha=0.05), rel=1e-10)
    rr, rlo, rhi = relative_risk(a, b, c, d)
    assert rr == pytest.approx(ref.riskratio, rel=1e-12)
    assert (rlo, rhi) == pytest.approx(ref.riskratio_confint(alpha=0.05), rel=1e-10)


def test_degenerate_tables():
    # a zero cell: the estimate where defined, no interval (the paper's code gives none either)
    est, lo, hi = odds_ratio(5, 0, 2, 3)
    assert est == math.inf and math.isnan(lo) and math.isnan(hi)
    assert math.isnan(odds_ratio(0, 0, 2, 3)[0])
    assert all(math.isnan(v) for v in relative_risk(4, 1, 0, 5))
    rr, lo, hi = relative_risk(0, 5, 2, 3)
    assert rr == 0.0 and math.isnan(lo)


@pytest.mark.parametrize("table", [(12, 5, 3, 14), (30, 10, 10, 30), (1, 9, 11, 3), (50, 0, 0, 50), (7, 7, 7, 7)])
def test_fisher_log10_p_matches_scipy_where_p_is_a_double(table):
    p = fisher_exact([[table[0], table[1]], [table[2], table[3]]]).pvalue
    assert fisher_test(*table)[0] == pytest.approx(min(1.0, p), rel=1e-12)
    assert fisher_log10_p(*table) == pytest.approx(math.log10(min(1.0, p)), abs=1e-9)


def test_fisher_log10_p_stays_finite_where_p_underflows():
    """[[n, 0], [0, n]]: the two extreme tables are the only ones as unlikely, p = 2 / C(2n, n)
    (hand-worked with lgamma), 10^-359 at n = 600, below the smallest double."""
    n = 600
    expected = (math.log(2) - (math.lgamma(2 * n + 1) - 2 * math.lgamma(n + 1))) / math.log(10)
    p, log10_p = fisher_test(n, 0, 0, n)
    assert p == 0.0 and expected < -350
    assert log10_p == pytest.approx(expected, abs=1e-6)
