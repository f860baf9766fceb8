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
from scipy import stats


def paired_counts(y_pos: pd.Series, y_neg: pd.Series) -> dict[str, int]:
    """Cells of the paired 2x2 table over the pairs with both decisions parsed (None/NaN = invalid).

    ``b`` = (x+ accepted, x- rejected), ``c`` = (x+ rejected, x- accepted), ``n`` = complete pairs,
    ``n_invalid`` = pairs with at least one unparsable decision (excluded from the test).
    """
    pos = pd.to_numeric(pd.Series(y_pos).reset_index(drop=True), errors="coerce").to_numpy(dtype=float)
    neg = pd.to_numeric(pd.Series(y_neg).reset_index(drop=True), errors="coerce").to_numpy(dtype=float)
    ok = ~np.isnan(pos) & ~np.isnan(neg)
    p, q = pos[ok].astype(int), neg[ok].astype(int)
    return {
        "b": int(((p == 1) & (q == 0)).sum()),
        "c": int(((p == 0) & (q == 1)).sum()),
        "both_accept": int(((p == 1) & (q == 1)).sum()),
        "both_reject": int(((p == 0) & (q == 0)).sum()),
        "n": int(ok.sum()),
        "n_invalid": int((~ok).sum()),
    }


def acceptance_difference(y_pos: pd.Series, y_neg: pd.Series, confidence: float = 0.95) -> dict[str, float]:
    """Acceptance rates per side (over that side's parsable responses), their difference, and the
    paired Wald interval. Rates are NaN when a side has no parsable response."""
    pos = pd.to_numeric(pd.Series(y_pos), errors="coerce")
    neg = pd.to_numeric(pd.Series(y_neg), errors="coerce")
    n_pos, n_neg = int(pos.notna().sum()), int(neg.notna().sum())
    rate_pos = float(pos.mean()) if n_pos else math.nan
    rate_neg = float(neg.mean()) if n_neg else math.nan
    cells = paired_counts(pos, neg)
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
