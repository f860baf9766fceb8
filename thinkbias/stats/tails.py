"""log10 of tail probabilities, finite and exact where the p-value underflows a double.

A double holds p down to about 1e-308 (subnormals to 5e-324, with ever fewer significant digits),
and scipy's tail functions return 0 (log -inf) well before the papers' extremes: the fairness
paper's pooled McNemar p is 10^-485.6. Each function here gives log10 p: from p itself where
p is at least :data:`TRUSTED_P_FLOOR` (there a double and scipy are accurate to ~1e-14 relative),
from a sum or closed form in log space below it.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from thinkbias.lazy_imports import lazy_module

special = lazy_module("scipy.special")

TRUSTED_P_FLOOR = 1e-250
LN10 = math.log(10.0)


def log10_p(p: float, log10_tail: Callable[[], float]) -> float:
    """log10 of ``p`` where it is a trustworthy double, else ``log10_tail()`` (computed in log space);
    NaN stays NaN."""
    if math.isnan(p):
        return math.nan
    if p >= TRUSTED_P_FLOOR:
        return math.log10(p)
    return float(log10_tail())


def log10_binom_cdf_half(m: int, n: int) -> float:
    """log10 P(X <= m), X ~ Binomial(n, 1/2): the sum of C(n, k) / 2^n over k <= m in log space.

    Terms fall geometrically below m (ratio at most m / (n - m + 1)), so only the terms that change
    the sum in double precision are added; every term of the sum when that ratio is not below 1.
    """
    if m < 0:
        return -math.inf
    if m >= n:
        return 0.0
    ratio = m / (n - m + 1)
    n_terms = m + 1
    if ratio < 1.0:
        # terms below m - K add at most ratio^K / (1 - ratio) of term m: stop below 1e-20 of it
        if ratio == 0.0:
            n_terms = 1
        else:
            n_terms = min(m + 1, int(math.ceil((math.log(1e-20) + math.log1p(-ratio)) / math.log(ratio))) + 1)
    k = np.arange(m - n_terms + 1, m + 1, dtype=float)
    log_terms = special.gammaln(n + 1.0) - special.gammaln(k + 1.0) - special.gammaln(n - k + 1.0)
    return float((special.logsumexp(log_terms) - n * math.log(2.0)) / LN10)


def log10_norm_sf(z: float) -> float:
    """log10 P(Z > z), Z standard normal (scipy's ``log_ndtr``, accurate far into the tail)."""
    return float(special.log_ndtr(-z) / LN10)


def log10_chi2_sf_1df(x: float) -> float:
    """log10 P(X > x), X ~ chi-square with 1 df: P(|Z| > sqrt(x)) = 2 P(Z > sqrt(x))."""
    if x <= 0:
        return 0.0
    return math.log10(2.0) + log10_norm_sf(math.sqrt(x))


def log10_t_sf(t: float, df: float) -> float:
    """log10 P(T > t), T ~ Student t with ``df`` degrees of freedom.

    For t > 0, P(T > t) = I_x(df/2, 1/2) / 2 with x = df / (df + t^2), and
    I_x(a, b) = x^a (1 - x)^b / (a B(a, b)) 2F1(a + b, 1; a + 1; x) (DLMF 8.17.8), every factor
    taken in log space; the hypergeometric series converges fast exactly where p is tiny (x small).
    """
    if t <= 0:
        return math.log10(float(special.stdtr(df, -t)))  # scipy.stats.t.sf, without importing scipy.stats
    if math.isinf(t):
        return -math.inf
    a, b = df / 2.0, 0.5
    q = df / t / t  # log x and log(1 - x) from q = df / t^2, so that t^2 cannot overflow
    log_x = math.log(df) - 2.0 * math.log(t) - math.log1p(q)
    log_i = (
        a * log_x
        - b * math.log1p(q)
        - math.log(a)
        - special.betaln(a, b)
        + math.log(special.hyp2f1(a + b, 1.0, a + 1.0, math.exp(log_x)))
    )
    return float((log_i - math.log(2.0)) / LN10)
