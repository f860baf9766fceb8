"""log10 tail probabilities against mpmath at 60 digits, in the normal range and far below a double's."""

import math
from fractions import Fraction

import mpmath
import pytest
from scipy import stats

from tests.stats import exact_reference as reference
from tests.stats.exact_reference import binomial_lower_sum, log10_fraction
from thinkbias.stats.tails import (
    TRUSTED_P_FLOOR,
    log10_binom_cdf_half,
    log10_chi2_sf_1df,
    log10_norm_sf,
    log10_p,
    log10_t_sf,
)


@pytest.mark.parametrize(
    "m, n", [(0, 1), (3, 10), (620, 4128), (0, 2000), (100, 1300), (2400, 5000), (6000, 30000), (12, 24), (24, 24)]
)
def test_binomial_cdf_sums_to_the_integer_sum(m, n):
    assert log10_binom_cdf_half(m, n) == pytest.approx(
        log10_fraction(Fraction(binomial_lower_sum(m, n), 2**n)), abs=1e-9
    )


@pytest.mark.parametrize("z", [0.0, 1.0, 8.0, 37.0, 38.5, 60.0, 300.0])
def test_normal_tail(z):
    expected = float(mpmath.log10(mpmath.ncdf(-mpmath.mpf(z))))
    assert log10_norm_sf(z) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize(
    "x",
    [
        Fraction(1, 3),
        Fraction(27, 10),
        Fraction(1000),
        Fraction((3508 - 620 - 1) ** 2, 4128),
        Fraction(2497),
        Fraction(10**5),
    ],
)
def test_chi_square_one_df_tail(x):
    assert log10_chi2_sf_1df(float(x)) == pytest.approx(reference.log10_chi2_sf_1df(x), abs=1e-9)
    if float(x) < 1000:  # where scipy's own log survival function is still finite, it agrees
        assert log10_chi2_sf_1df(float(x)) == pytest.approx(stats.chi2.logsf(float(x), 1) / math.log(10), abs=1e-9)


@pytest.mark.parametrize(
    "t, df", [(0.5, 20), (3.0, 10), (10.0, 100), (65.0, 997), (200.0, 997), (1e4, 5), (1e200, 50), (-2.0, 30)]
)
def test_student_t_tail(t, df):
    tm, dfm = mpmath.mpf(t), mpmath.mpf(df)
    if t > 0:
        expected = mpmath.log10(
            mpmath.betainc(dfm / 2, mpmath.mpf(1) / 2, 0, dfm / (dfm + tm * tm), regularized=True) / 2
        )
    else:
        expected = mpmath.log10(
            1 - mpmath.betainc(dfm / 2, mpmath.mpf(1) / 2, 0, dfm / (dfm + tm * tm), regularized=True) / 2
        )
    assert log10_t_sf(t, df) == pytest.approx(float(expected), abs=1e-9)


def test_log10_p_switches_to_the_tail_below_the_trusted_floor():
    assert log10_p(0.01, lambda: 99.0) == pytest.approx(-2.0)
    assert log10_p(TRUSTED_P_FLOOR / 10, lambda: -251.0) == -251.0
    assert log10_p(0.0, lambda: -600.0) == -600.0
    assert math.isnan(log10_p(math.nan, lambda: -600.0))
