"""McNemar's test on the discordant counts (b, c) of a paired 2x2 table."""

from __future__ import annotations

from dataclasses import dataclass

from scipy import stats


@dataclass(frozen=True)
class McNemarResult:
    """Outcome of one McNemar test: statistic (None for the exact test), p-value, method name."""

    b: int
    c: int
    statistic: float | None
    p_value: float
    method: str


def mcnemar_exact_p(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: binomial test of min(b, c) in b + c trials at 1/2.

    Equals statsmodels' ``mcnemar(table, exact=True).pvalue``; 1.0 when there are no discordant pairs.
    """
    n = b + c
    if n == 0:
        return 1.0
    return float(min(1.0, 2.0 * stats.binom.cdf(min(b, c), n, 0.5)))


def mcnemar_chi2(b: int, c: int, correction: bool = True) -> tuple[float, float]:
    """Chi-square McNemar statistic (continuity-corrected by default) with 1 df and its p-value."""
    n = b + c
    if n == 0:
        return 0.0, 1.0
    diff = abs(b - c) - (1.0 if correction else 0.0)
    statistic = max(diff, 0.0) ** 2 / n
    return float(statistic), float(stats.chi2.sf(statistic, 1))


def mcnemar_test(b: int, c: int, exact_below: int = 25) -> McNemarResult:
    """McNemar's test: exact binomial when b + c < ``exact_below``, else corrected chi-square.

    ``exact_below=None`` semantics are not offered: pass a huge value to force the exact test.
    """
    if b + c < exact_below:
        return McNemarResult(b, c, None, mcnemar_exact_p(b, c), "exact")
    statistic, p = mcnemar_chi2(b, c, correction=True)
    return McNemarResult(b, c, statistic, p, "chi2-cc")
