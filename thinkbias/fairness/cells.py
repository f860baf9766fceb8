"""Within-pair contingency cells a, b, c, d and McNemar's exact test (paper §3.2, Table 1, Table 2).

Flip_arm(i) = [yhat^alpha_arm(i) != yhat^alpha'_arm(i)].
a: no flip in either arm; b: flip under nothink only (resolved by thinking);
c: flip under think only (created); d: flip under both arms.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from thinkbias.stats.mcnemar import mcnemar_exact_log10_p, mcnemar_exact_p

SETTING = ["model", "dataset"]
CELLS = ("a", "b", "c", "d")


def flips(pairs: pd.DataFrame, arm: str) -> pd.Series:
    """Flip indicator (0/1) of each pair under ``arm``."""
    return (pairs[f"y_alpha_{arm}"] != pairs[f"y_alpha_prime_{arm}"]).astype(int)


def assign_cells(pairs: pd.DataFrame) -> pd.DataFrame:
    """Add ``flip_nothink``, ``flip_think`` and ``cell`` (a/b/c/d) to the pairs table."""
    out = pairs.copy()
    out["flip_nothink"] = flips(out, "nothink")
    out["flip_think"] = flips(out, "think")
    out["cell"] = np.select(
        [
            (out.flip_nothink == 0) & (out.flip_think == 0),
            (out.flip_nothink == 1) & (out.flip_think == 0),
            (out.flip_nothink == 0) & (out.flip_think == 1),
        ],
        ["a", "b", "c"],
        default="d",
    )
    return out


def _disp(pairs: pd.DataFrame, arm: str) -> pd.Series:
    """D_disp(i) = |P^alpha - P^alpha'| read after the cue (think: full trace, nothink: empty block)."""
    return (pairs[f"p_alpha_{arm}"] - pairs[f"p_alpha_prime_{arm}"]).abs()


def contingency_table(cells: pd.DataFrame) -> pd.DataFrame:
    """Table 2: per setting a, b, c, d, N, exact McNemar p (and log10 p), c/b, and mean D_disp in
    cells b and c under both arms (with the number of pairs that had probabilities); a pooled row last.
    """
    rows = []
    groups = list(cells.groupby(SETTING, sort=True)) + [(("pooled", "pooled"), cells)]
    for (model, dataset), g in groups:
        counts = {k: int((g["cell"] == k).sum()) for k in CELLS}
        b, c = counts["b"], counts["c"]
        row = {
            "model": model,
            "dataset": dataset,
            **counts,
            "N": len(g),
            "mcnemar_p": mcnemar_exact_p(b, c),
            "mcnemar_log10_p": mcnemar_exact_log10_p(b, c),
            "c_over_b": (c / b) if b else math.inf if c else math.nan,
        }
        for cell in ("b", "c"):
            gc = g[g["cell"] == cell]
            for arm in ("nothink", "think"):
                d = _disp(gc, arm).dropna()
                row[f"ddisp_{cell}_{arm}"] = float(d.mean()) if len(d) else math.nan
                row[f"ddisp_{cell}_{arm}_n"] = int(len(d))
        rows.append(row)
    return pd.DataFrame(rows)
