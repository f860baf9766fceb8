"""McNemar's test on the discordant counts (b, c) of a paired 2x2 table.

Exact: the two-sided binomial test of min(b, c) in n = b + c trials at 1/2,
p = min(1, 2 P(X <= min(b, c))), statsmodels' ``mcnemar(table, exact=True).pvalue``. Chi-square on
1 df with the continuity correction, two forms (``correction``):

- ``statsmodels`` (the default; statsmodels' ``mcnemar(table, exact=False, correction=True)``, the
  call of the paper's code): X^2 = (|b - c| - 1)^2 / n, also at b = c, where it is 1 / n
  (b = c = 13: p = 0.8445);
- ``floored``: X^2 = max(|b - c| - 1, 0)^2 / n, which gives p = 1 at b = c (the correction never
  pushes the statistic past zero) and equals statsmodels everywhere else.

p = 1 without discordant pairs. Every p comes with log10 p, finite where p underflows a double (the fairness
paper's pooled b = 620, c = 3508 gives p = 10^-485.6). One implementation serves one table and
arrays of them (the conditional power tests every projected outcome at once).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from thinkbias.lazy_imports import lazy_module
from thinkbias.stats.tails import log10_binom_cdf_half, log10_chi2_sf_1df, log10_p

stats = lazy_module("scipy.stats")

EXACT_ALWAYS = math.inf
"""``exact_below`` that makes every test exact (the fairness paper's Table 2)."""

CORRECTIONS = ("statsmodels", "floored")
"""Forms of the continuity-corrected chi-square statistic (module docstring)."""


@dataclass(frozen=True)
class McNemarResult:
    """Outcome of one McNemar test: statistic (None for the exact test), p-value, its log10, method."""

    b: int
    c: int
    statistic: float | None
    p_value: float
    log10_p: float
    method: str


def _counts(b, c) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    b = np.asarray(b, dtype=np.int64)
    c = np.asarray(c, dtype=np.int64)
    return b, c, b + c


def mcnemar_chi2_statistic(b, c, correction: str = "statsmodels") -> np.ndarray:
    """Continuity-corrected chi-square statistic (|b - c| - 1)^2 / (b + c) (``statsmodels``) or
    max(|b - c| - 1, 0)^2 / (b + c) (``floored``); 0 when b + c = 0."""
    if correction not in CORRECTIONS:
        raise ValueError(f"unknown McNemar correction '{correction}' (expected one of {', '.join(CORRECTIONS)})")
    b, c, n = _counts(b, c)
    diff = np.abs(b - c) - 1.0
    if correction == "floored":
        diff = np.maximum(diff, 0.0)
    return np.where(n > 0, diff**2, 0.0) / np.where(n > 0, n, 1)


def mcnemar_p_vector(b, c, exact_below: float = 25, correction: str = "statsmodels") -> np.ndarray:
    """McNemar p-values of the tables (b, c) (scalars or arrays): exact when b + c < ``exact_below``,
    corrected chi-square (``correction``) otherwise."""
    b, c, n = _counts(b, c)
    p = np.ones(np.broadcast(b, c).shape, dtype=float)
    exact = (n < exact_below) & (n > 0)
    if np.any(exact):
        p = np.where(exact, np.minimum(1.0, 2.0 * stats.binom.cdf(np.minimum(b, c), n, 0.5)), p)
    chi = n >= exact_below
    if np.any(chi):
        p = np.where(chi, stats.chi2.sf(mcnemar_chi2_statistic(b, c, correction), 1), p)
    return p


def _log10_p_one(b: int, c: int, p: float, exact: bool, correction: str) -> float:
    if b + c == 0:
        return 0.0
    if exact:
        return min(0.0, log10_p(p, lambda: math.log10(2.0) + log10_binom_cdf_half(min(b, c), b + c)))
    statistic = float(mcnemar_chi2_statistic(b, c, correction))
    return log10_p(p, lambda: log10_chi2_sf_1df(statistic))


def mcnemar_log10_p_vector(b, c, exact_below: float = 25, correction: str = "statsmodels") -> np.ndarray:
    """log10 of :func:`mcnemar_p_vector`, finite where the p-value underflows (computed in log space there)."""
    b, c, n = _counts(b, c)
    b, c = np.broadcast_arrays(b, c)
    p = mcnemar_p_vector(b, c, exact_below, correction)
    out = np.empty(p.shape, dtype=float)
    for i in np.ndindex(p.shape):
        out[i] = _log10_p_one(int(b[i]), int(c[i]), float(p[i]), bool(b[i] + c[i] < exact_below), correction)
    return out


def mcnemar_exact_p(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value (0.0 where it underflows; see :func:`mcnemar_exact_log10_p`)."""
    return float(mcnemar_p_vector(b, c, EXACT_ALWAYS))


def mcnemar_exact_log10_p(b: int, c: int) -> float:
    """log10 of the two-sided exact McNemar p-value, exact and finite at any b, c."""
    return float(mcnemar_log10_p_vector(b, c, EXACT_ALWAYS))


def mcnemar_test(b: int, c: int, exact_below: float = 25, correction: str = "statsmodels") -> McNemarResult:
    """McNemar's test: exact binomial when b + c < ``exact_below``, else corrected chi-square in the
    form ``correction`` (``exact_below=EXACT_ALWAYS`` forces the exact test)."""
    exact = b + c < exact_below
    p = float(mcnemar_p_vector(b, c, exact_below, correction))
    lp = float(mcnemar_log10_p_vector(b, c, exact_below, correction))
    if exact:
        return McNemarResult(b, c, None, p, lp, "exact")
    return McNemarResult(b, c, float(mcnemar_chi2_statistic(b, c, correction)), p, lp, "chi2-cc")
