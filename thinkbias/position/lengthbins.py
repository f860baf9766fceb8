"""Length bins: PBS by length quartile (paper Figure 1, Figure 2) and the k-bin robustness check
(Appendix C, Table 3).

Bins are equal-frequency over questions ordered by mean trajectory length (ties broken by question
order, so every bin has floor or ceil of n / k questions). "Strictly monotonic" means every adjacent
pair of bin means increases; ``first_violation`` is the 1-based index i of the first bin whose
successor is not larger ("viol@i"); the end-point gradient is last-bin mean minus first-bin mean.
"Larger" means by more than ``MEAN_TOLERANCE``, so two bins with the same mean PBS summed in a
different order are not read as an increase.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

MEAN_TOLERANCE = 1e-12


def equal_frequency_bins(values: pd.Series, k: int) -> pd.Series:
    """Bin index 1..k per value (equal-frequency by rank; NaN values get NaN)."""
    ranks = values.rank(method="first")
    n = int(values.notna().sum())
    out = np.floor((ranks - 1) * k / max(n, 1)) + 1
    return out


def binned_means(questions: pd.DataFrame, k: int, value: str = "pbs", by: str = "length") -> pd.DataFrame:
    """Per bin: n, mean length, mean and standard error of ``value`` (questions without a value
    are left out before binning)."""
    q = questions[questions[value].notna() & questions[by].notna()].copy()
    q["bin"] = equal_frequency_bins(q[by], k)
    rows = []
    for b in range(1, k + 1):
        g = q[q["bin"] == b]
        n = len(g)
        rows.append(
            {
                "bin": b,
                "n": n,
                "mean_length": float(g[by].mean()) if n else math.nan,
                "mean": float(g[value].mean()) if n else math.nan,
                "se": float(g[value].std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan,
            }
        )
    return pd.DataFrame(rows)


def monotonicity(means: list[float] | np.ndarray) -> tuple[bool, int | None, float]:
    """(strictly increasing?, first violation bin index or None, last minus first)."""
    m = [float(v) for v in means]
    if len(m) < 2 or any(math.isnan(v) for v in m):
        return False, None, math.nan
    for i in range(len(m) - 1):
        if not m[i + 1] > m[i] + MEAN_TOLERANCE:
            return False, i + 1, m[-1] - m[0]
    return True, None, m[-1] - m[0]
