"""Partial correlation against an independent computation (statsmodels OLS residuals)."""

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats

from thinkbias.stats.partial_corr import partial_correlation


def _data(n=60, seed=3):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n)
    x = 0.8 * z + rng.normal(size=n)
    y = 0.5 * x - 0.7 * z + rng.normal(size=n)
    return x, y, z


def test_matches_ols_residuals_and_t_test():
    x, y, z = _data()
    Z = sm.add_constant(z)
    rx = sm.OLS(x, Z).fit().resid
    ry = sm.OLS(y, Z).fit().resid
    r_ref = np.corrcoef(rx, ry)[0, 1]
    df = len(x) - 3
    t = r_ref * np.sqrt(df / (1 - r_ref**2))
    p_ref = 2 * stats.t.sf(abs(t), df)
    res = partial_correlation(x, y, z)
    assert res.r == pytest.approx(r_ref, abs=1e-12)
    assert res.p_value == pytest.approx(p_ref, rel=1e-9)
    assert res.p_greater == pytest.approx(stats.t.sf(t, df), rel=1e-9)
    assert (res.n, res.df) == (60, 57)


def test_no_covariate_equals_pearson():
    x, y, _ = _data()
    ref = stats.pearsonr(x, y)
    res = partial_correlation(x, y)
    assert res.r == pytest.approx(ref.statistic) and res.p_value == pytest.approx(ref.pvalue)


def test_spearman_is_pearson_on_ranks():
    x, y, z = _data()
    a = partial_correlation(x, y, z, method="spearman")
    b = partial_correlation(stats.rankdata(x), stats.rankdata(y), stats.rankdata(z))
    assert a.r == pytest.approx(b.r) and a.p_value == pytest.approx(b.p_value)


def test_nan_rows_dropped_and_constant_covariate():
    x, y, z = _data()
    x2 = x.copy()
    x2[0] = np.nan
    assert partial_correlation(x2, y, z).n == 59
    const = partial_correlation(x, y, np.ones_like(x))
    assert const.r == pytest.approx(stats.pearsonr(x, y).statistic)
    assert const.df == len(x) - 2


def test_too_few_rows():
    assert np.isnan(partial_correlation([1, 2, 3], [1, 2, 4], [0, 1, 0]).r)


@pytest.mark.parametrize("rho", [0.3, 0.92, -0.95])
def test_log10_p_exact_where_p_underflows(rho):
    # n = 1,000 questions (the paper's MMLU size): r = 0.92 has p = 10^-407, which a double cannot hold
    import math

    import mpmath

    rng = np.random.default_rng(5)
    z = rng.normal(size=1000)
    x = rng.normal(size=1000)
    y = rho * x + math.sqrt(1 - rho**2) * rng.normal(size=1000) + 0.5 * z
    res = partial_correlation(x, y, z)
    mpmath.mp.dps = 60
    # two-sided p of the t-test on r with df degrees of freedom: I_{1 - r^2}(df / 2, 1 / 2)
    r, df = mpmath.mpf(res.r), mpmath.mpf(int(res.df))
    p = mpmath.betainc(df / 2, mpmath.mpf(1) / 2, 0, 1 - r * r, regularized=True)
    p_greater = p / 2 if res.r > 0 else 1 - p / 2
    assert math.isfinite(res.log10_p_value)
    assert res.log10_p_value == pytest.approx(float(mpmath.log10(p)), abs=1e-6)
    assert res.log10_p_greater == pytest.approx(float(mpmath.log10(p_greater)), abs=1e-6)
    if abs(rho) > 0.9:
        assert res.p_value == 0.0 and res.log10_p_value < -350
    else:
        assert res.log10_p_value == pytest.approx(math.log10(res.p_value), abs=1e-12)
