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
    x2 = x.copy(); x2[0] = np.nan
    assert partial_correlation(x2, y, z).n == 59
    const = partial_correlation(x, y, np.ones_like(x))
    assert const.r == pytest.approx(stats.pearsonr(x, y).statistic)
    assert const.df == len(x) - 2


def test_too_few_rows():
    assert np.isnan(partial_correlation([1, 2, 3], [1, 2, 4], [0, 1, 0]).r)
