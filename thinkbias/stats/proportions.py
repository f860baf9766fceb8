"""Two independent proportions: Wilson intervals per group, the odds ratio and the relative risk
with their log-normal intervals (the 2x2 table group x outcome, rows x+ / x-, columns accept /
reject, as the blindspot paper's code reports beside McNemar's paired test).

The odds ratio is the sample value ad / (bc) (what ``scipy.stats.fisher_exact`` returns as its
statistic) with Woolf's interval exp(log OR +- z sqrt(1/a + 1/b + 1/c + 1/d)), given only when every
cell is positive; the relative risk is (a / (a + b)) / (c / (c + d)) with Katz's interval
exp(log RR +- z sqrt(1/a - 1/(a + b) + 1/c - 1/(c + d))), given when a and c are positive. Both
intervals are those of statsmodels' ``Table2x2``. :func:`fisher_test` is Fisher's exact test of the
same table (the paper's code's alternative to McNemar's paired test).
"""

from __future__ import annotations

import math

from thinkbias.lazy_imports import lazy_module

stats = lazy_module("scipy.stats")


def _z(confidence: float) -> float:
    return float(stats.norm.isf((1.0 - confidence) / 2.0))


def wilson_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of the proportion k / n (NaN, NaN when n = 0)."""
    if n <= 0:
        return math.nan, math.nan
    z = _z(confidence)
    p = k / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def odds_ratio(a: int, b: int, c: int, d: int, confidence: float = 0.95) -> tuple[float, float, float]:
    """(OR, low, high) of the table [[a, b], [c, d]]: ad / (bc) (inf when only bc is 0, NaN when both
    products are), Woolf's interval when every cell is positive, else NaN."""
    num, den = a * d, b * c
    estimate = num / den if den else (math.inf if num else math.nan)
    if min(a, b, c, d) <= 0:
        return estimate, math.nan, math.nan
    half = _z(confidence) * math.sqrt(1 / a + 1 / b + 1 / c + 1 / d)
    return estimate, math.exp(math.log(estimate) - half), math.exp(math.log(estimate) + half)


def relative_risk(a: int, b: int, c: int, d: int, confidence: float = 0.95) -> tuple[float, float, float]:
    """(RR, low, high) of the table [[a, b], [c, d]]: (a / (a + b)) / (c / (c + d)), NaN without a
    positive c (or an empty row); Katz's interval when a and c are positive, else NaN."""
    if a + b == 0 or c + d == 0 or c == 0:
        return math.nan, math.nan, math.nan
    estimate = (a / (a + b)) / (c / (c + d))
    if a == 0:
        return estimate, math.nan, math.nan
    half = _z(confidence) * math.sqrt(1 / a - 1 / (a + b) + 1 / c - 1 / (c + d))
    return estimate, math.exp(math.log(estimate) - half), math.exp(math.log(estimate) + half)


# scipy's two-sided Fisher test sums the tables no more likely than the observed one, within this
# relative tolerance (so tables tied with it in exact arithmetic are not lost to rounding)
FISHER_TIE_TOLERANCE = 1e-7


def fisher_test(a: int, b: int, c: int, d: int) -> tuple[float, float]:
    """Two-sided Fisher's exact test of the table [[a, b], [c, d]] (``scipy.stats.fisher_exact``):
    (p, log10 p). log10 p is computed in log space (hypergeometric log-probabilities summed with
    logsumexp, the same tables scipy sums), so it stays finite where p underflows a double."""
    p = min(1.0, float(stats.fisher_exact([[a, b], [c, d]]).pvalue))
    if p > 1e-300:
        return p, math.log10(p)
    return p, fisher_log10_p(a, b, c, d)


def fisher_log10_p(a: int, b: int, c: int, d: int) -> float:
    """log10 of the two-sided Fisher p of [[a, b], [c, d]]: the log-sum of the probabilities of the
    tables with the observed margins that are no more likely than the observed one."""
    import numpy as np
    from scipy.special import logsumexp

    total, row, col = a + b + c + d, a + b, a + c
    xs = np.arange(max(0, col - (total - row)), min(row, col) + 1)
    log_pmf = stats.hypergeom.logpmf(xs, total, row, col)
    observed = stats.hypergeom.logpmf(a, total, row, col)
    keep = log_pmf <= observed + math.log1p(FISHER_TIE_TOLERANCE)
    return min(0.0, float(logsumexp(log_pmf[keep])) / math.log(10.0))
