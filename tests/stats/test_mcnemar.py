"""McNemar's test, exact and chi-square branches, against statsmodels in the normal range and against
exact integer arithmetic / mpmath where the p-value underflows a double."""

import math
from fractions import Fraction

import numpy as np
import pytest
from statsmodels.stats.contingency_tables import mcnemar

from thinkbias.stats.mcnemar import (
    EXACT_ALWAYS,
    mcnemar_exact_log10_p,
    mcnemar_exact_p,
    mcnemar_log10_p_vector,
    mcnemar_p_vector,
    mcnemar_test,
)
from tests.stats.exact_reference import binomial_lower_sum, log10_chi2_sf_1df, log10_fraction


def exact_log10_p(b: int, c: int) -> float:
    """Two-sided exact p = min(1, 2 sum_{k <= min(b, c)} C(n, k) / 2^n) as a fraction of integers."""
    n = b + c
    return 0.0 if n == 0 else log10_fraction(min(Fraction(1), Fraction(2 * binomial_lower_sum(min(b, c), n), 2**n)))


def chi2_log10_p(b: int, c: int) -> float:
    """Corrected chi-square p with X^2 = (|b - c| - 1)^2 / n as an exact fraction."""
    return log10_chi2_sf_1df(Fraction(max(abs(b - c) - 1, 0) ** 2, b + c))


def test_paper_pooled_counts_are_finite_and_exact_in_both_branches():
    # b = 620, c = 3508: the fairness paper's pooled cells (p < 1e-485); p itself underflows to 0
    assert mcnemar_exact_p(620, 3508) == 0.0
    lp = mcnemar_exact_log10_p(620, 3508)
    assert math.isfinite(lp) and lp == pytest.approx(exact_log10_p(620, 3508), abs=1e-6)
    assert lp == pytest.approx(-485.6048358107389, abs=1e-6)
    chi = mcnemar_test(620, 3508)
    assert chi.method == "chi2-cc" and chi.p_value == 0.0
    assert chi.log10_p == pytest.approx(chi2_log10_p(620, 3508), abs=1e-6)
    assert chi.log10_p == pytest.approx(-440.1888585677221, abs=1e-6)


@pytest.mark.parametrize(
    "b, c", [(b, c) for n in range(25) for b, c in ((0, n), (n // 3, n - n // 3), (n // 2, n - n // 2))]
)
def test_exact_branch_at_small_n(b, c):
    result = mcnemar_test(b, c)
    assert result.method == "exact" and result.statistic is None
    assert result.log10_p == pytest.approx(exact_log10_p(b, c), abs=1e-6)
    expected = 1.0 if b + c == 0 else mcnemar([[0, b], [c, 0]], exact=True).pvalue
    assert result.p_value == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("b, c", [(0, 2000), (500, 2500), (5000, 20000), (0, 1100), (1, 30), (40, 18), (300, 200)])
def test_both_branches_far_beyond_and_within_double_range(b, c):
    assert mcnemar_exact_log10_p(b, c) == pytest.approx(exact_log10_p(b, c), abs=1e-6)
    chi = mcnemar_test(b, c)
    assert chi.method == "chi2-cc" and chi.log10_p == pytest.approx(chi2_log10_p(b, c), abs=1e-6)
    assert chi.p_value == pytest.approx(mcnemar([[0, b], [c, 0]], exact=False, correction=True).pvalue, rel=1e-12)


def test_scalar_and_vectorised_tests_are_one_implementation():
    b = np.array([0, 3, 10, 12, 20, 40, 100, 7, 620, 0])
    c = np.array([0, 1, 2, 12, 5, 18, 70, 30, 3508, 2000])
    p, lp = mcnemar_p_vector(b, c), mcnemar_log10_p_vector(b, c)
    for i in range(len(b)):
        r = mcnemar_test(int(b[i]), int(c[i]))
        assert (r.p_value, r.log10_p) == (p[i], lp[i])
    assert mcnemar_p_vector(b, c, EXACT_ALWAYS)[3] == 1.0 and mcnemar_exact_log10_p(12, 12) == 0.0
    assert mcnemar_test(12, 13, exact_below=EXACT_ALWAYS).method == "exact"
