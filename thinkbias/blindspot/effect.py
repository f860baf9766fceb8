"""Effect size of a concept: the difference in acceptance rates between the two sides of its
variation pairs (spec Sec. 1), with a 95% confidence interval.

``delta = P(accept | x+) - P(accept | x-)``, each rate over the parsable responses of its side (as the
paper computes it). The interval is the Wald interval for a difference of paired proportions, over
the pairs whose two decisions both parsed: ``(b - c) / n +- z * sqrt((b + c) / n**2 - (b - c)**2 / n**3)``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from thinkbias.lazy_imports import lazy_module

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
