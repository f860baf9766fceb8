"""Effect size of a concept: the difference in acceptance rates between the two sides of its
variation pairs (spec Sec. 1), with a 95% confidence interval.

``delta = P(accept | x+) - P(accept | x-)``, each rate over the parsable responses of its side (as the
paper computes it). The interval is the Wald interval for a difference of paired proportions, over
the pairs whose two decisions both parsed: ``(b - c) / n +- z * sqrt((b + c) / n**2 - (b - c)**2 / n**3)``.

Beside it, :func:`side_statistics` treats the two sides as independent groups, as the paper's code
also reports them: each side's acceptance rate with its Wilson interval, the odds ratio and the
relative risk of acceptance (x+ against x-) with their intervals (:mod:`thinkbias.stats.proportions`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from thinkbias.lazy_imports import lazy_module
from thinkbias.stats.proportions import odds_ratio, relative_risk, wilson_interval

stats = lazy_module("scipy.stats")


def _numeric(values: pd.Series | np.ndarray) -> np.ndarray:
    """Decisions as floats, anything unparsable as NaN."""
    arr = np.asarray(values)
    if arr.dtype.kind in "fiub":
        return arr.astype(float)
    return pd.to_numeric(pd.Series(arr), errors="coerce").to_numpy(dtype=float)


def _cells(pos: np.ndarray, neg: np.ndarray) -> dict[str, int]:
    ok = ~np.isnan(pos) & ~np.isnan(neg)
    p, q = pos[ok] == 1, neg[ok] == 1
    return {
        "b": int((p & ~q).sum()),
        "c": int((~p & q).sum()),
        "both_accept": int((p & q).sum()),
        "both_reject": int((~p & ~q).sum()),
        "n": int(ok.sum()),
        "n_invalid": int((~ok).sum()),
    }


def paired_counts(y_pos: pd.Series, y_neg: pd.Series) -> dict[str, int]:
    """Cells of the paired 2x2 table over the pairs with both decisions parsed (None/NaN = invalid).

    ``b`` = (x+ accepted, x- rejected), ``c`` = (x+ rejected, x- accepted), ``n`` = complete pairs,
    ``n_invalid`` = pairs with at least one unparsable decision (excluded from the test).
    """
    return _cells(_numeric(y_pos), _numeric(y_neg))


def acceptance_difference(y_pos: pd.Series, y_neg: pd.Series, confidence: float = 0.95) -> dict[str, float]:
    """Acceptance rates per side (over that side's parsable responses), their difference, and the
    paired Wald interval. Rates are NaN when a side has no parsable response."""
    pos, neg = _numeric(y_pos), _numeric(y_neg)
    n_pos, n_neg = int((~np.isnan(pos)).sum()), int((~np.isnan(neg)).sum())
    rate_pos = float(np.nanmean(pos)) if n_pos else math.nan
    rate_neg = float(np.nanmean(neg)) if n_neg else math.nan
    cells = _cells(pos, neg)
    b, c, n = cells["b"], cells["c"], cells["n"]
    z = float(stats.norm.isf((1 - confidence) / 2))
    if n:
        d_paired = (b - c) / n
        var = max((b + c) / n**2 - (b - c) ** 2 / n**3, 0.0)
        half = z * math.sqrt(var)
        lo, hi = d_paired - half, d_paired + half
    else:
        lo = hi = math.nan
    return {
        "accept_pos": rate_pos,
        "accept_neg": rate_neg,
        "n_pos": n_pos,
        "n_neg": n_neg,
        "delta": rate_pos - rate_neg if n_pos and n_neg else math.nan,
        "ci_low": float(lo),
        "ci_high": float(hi),
    }


def flipped(y_pos: pd.Series, y_neg: pd.Series) -> np.ndarray:
    """Boolean mask of discordant ("flipped") pairs: both decisions parsed and different."""
    pos = pd.to_numeric(pd.Series(y_pos), errors="coerce").to_numpy()
    neg = pd.to_numeric(pd.Series(y_neg), errors="coerce").to_numpy()
    return (~np.isnan(pos)) & (~np.isnan(neg)) & (pos != neg)


RATIO_COLUMNS = (
    "odds_ratio",
    "odds_ratio_ci_low",
    "odds_ratio_ci_high",
    "relative_risk",
    "relative_risk_ci_low",
    "relative_risk_ci_high",
)
"""The odds ratio and the relative risk of x+ vs x-, each with its interval."""
SIDE_COLUMNS = ("accept_pos_ci_low", "accept_pos_ci_high", "accept_neg_ci_low", "accept_neg_ci_high", *RATIO_COLUMNS)


def side_counts(y_pos: pd.Series, y_neg: pd.Series) -> tuple[int, int, int, int]:
    """The unpaired 2x2 table over each side's parsable responses: (x+ accepted, x+ rejected,
    x- accepted, x- rejected)."""
    pos, neg = _numeric(y_pos), _numeric(y_neg)
    pos, neg = pos[~np.isnan(pos)], neg[~np.isnan(neg)]
    a, c = int((pos == 1).sum()), int((neg == 1).sum())
    return a, len(pos) - a, c, len(neg) - c


def side_statistics(y_pos: pd.Series, y_neg: pd.Series, confidence: float = 0.95) -> dict[str, float]:
    """The two sides as independent groups, each over its parsable responses (N: ``n_pos``, ``n_neg``
    of :func:`acceptance_difference`): Wilson intervals of the acceptance rates, the odds ratio and
    the relative risk of acceptance on x+ against x-, with intervals (NaN where undefined)."""
    a, b, c, d = side_counts(y_pos, y_neg)
    values = (
        *wilson_interval(a, a + b, confidence),
        *wilson_interval(c, c + d, confidence),
        *odds_ratio(a, b, c, d, confidence),
        *relative_risk(a, b, c, d, confidence),
    )
    return dict(zip(SIDE_COLUMNS, (float(v) for v in values)))
