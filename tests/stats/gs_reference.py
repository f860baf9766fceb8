"""An independent reference for group-sequential boundaries: scipy's multivariate normal CDF (Genz's
quasi-Monte Carlo integration) over the crossing regions, with boundaries found look by look by
root finding. It shares nothing with thinkbias.stats.group_sequential (no grid, no recursion)."""

from __future__ import annotations

import numpy as np
from scipy import optimize, stats


def ldof_per_side(alpha: float, t: float) -> float:
    """The Lan-DeMets O'Brien-Fleming spending of one side of a two-sided level-``alpha`` design:
    alpha*(t) = 2 (1 - Phi(z_{1 - alpha/4} / sqrt(t))), alpha / 2 at t = 1."""
    return float(2.0 * stats.norm.sf(stats.norm.isf(alpha / 4.0) / np.sqrt(t))) if t < 1 else alpha / 2.0


def look_correlation(fractions) -> np.ndarray:
    """corr(Z_i, Z_j) = sqrt(t_i / t_j) for Z_k = W(t_k) / sqrt(t_k), i <= j."""
    t = np.asarray(fractions, dtype=float)
    return np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))


def upper_first_crossing(bounds, fractions, eps: float = 1e-9) -> float:
    """P(|Z_j| < c_j for j < K, Z_K >= c_K) under the null: the upper side's spending at the last look."""
    c = np.asarray(bounds, dtype=float)
    k = len(c)
    cov = look_correlation(fractions[:k])
    mvn = stats.multivariate_normal(np.zeros(k), cov, abseps=eps, releps=eps, maxpts=5_000_000)
    return float(mvn.cdf(np.append(c[:-1], np.inf), lower_limit=np.append(-c[:-1], c[-1])))


def reference_bounds(alpha: float, fractions, eps: float = 1e-8) -> np.ndarray:
    """The symmetric two-sided design at level ``alpha`` whose upper side spends ``ldof_per_side``:
    c_k solves upper_first_crossing(c_1..c_k) = alpha*(t_k) - alpha*(t_(k-1))."""
    t = list(fractions)
    bounds: list[float] = []
    previous = 0.0
    for k, tk in enumerate(t):
        spend = ldof_per_side(alpha, tk) - previous
        previous += spend
        if k == 0:
            bounds.append(float(stats.norm.isf(spend)))
            continue
        bounds.append(
            optimize.brentq(lambda x: upper_first_crossing([*bounds, x], t[: k + 1], eps) - spend, 1.0, 8.0, xtol=1e-6)
        )
    return np.array(bounds)
