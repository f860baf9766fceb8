"""Counterfactual and group disparity with pair-bootstrap intervals (paper §3.1, §4.2, Figure 2).

D_cf(arm)    = mean_i Flip_arm(i)                        ((b+d)/N nothink, (c+d)/N think)
D_group(arm) = P(yhat=1 | alpha) - P(yhat=1 | alpha')     over the retained pair pool (signed)
Delta X      = X(think) - X(nothink)
Because both sides of a pair share every other feature, D_group(arm) equals the signed tilt of the
flipped pairs: (#{y^alpha=1, y^alpha'=0} - #{y^alpha=0, y^alpha'=1}) / N (:func:`flip_tilt`).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

SETTING = ["model", "dataset"]
METRICS = ("dcf_nothink", "dcf_think", "delta_dcf", "dgroup_nothink", "dgroup_think", "delta_dgroup")


def derived_seed(seed: int, *parts: str) -> int:
    """A 63-bit seed derived from the config seed and labels (sha256), machine-independent."""
    h = hashlib.sha256(":".join([str(seed), *parts]).encode()).digest()
    return int.from_bytes(h[:8], "big") >> 1


def _per_pair(pairs: pd.DataFrame) -> dict[str, np.ndarray]:
    ya_n, yb_n = pairs["y_alpha_nothink"].to_numpy(float), pairs["y_alpha_prime_nothink"].to_numpy(float)
    ya_t, yb_t = pairs["y_alpha_think"].to_numpy(float), pairs["y_alpha_prime_think"].to_numpy(float)
    return {
        "dcf_nothink": (ya_n != yb_n).astype(float),
        "dcf_think": (ya_t != yb_t).astype(float),
        "dgroup_nothink": ya_n - yb_n,
        "dgroup_think": ya_t - yb_t,
    }


def point_estimates(pairs: pd.DataFrame) -> dict[str, float]:
    """D_cf and D_group under both arms and their deltas for one setting."""
    v = {k: float(a.mean()) if len(a) else np.nan for k, a in _per_pair(pairs).items()}
    v["delta_dcf"] = v["dcf_think"] - v["dcf_nothink"]
    v["delta_dgroup"] = v["dgroup_think"] - v["dgroup_nothink"]
    return v


def group_rate_difference(pairs: pd.DataFrame, arm: str) -> float:
    """D_group(arm) computed as the difference of the two groups' Yes rates (the textbook way)."""
    return float(pairs[f"y_alpha_{arm}"].mean() - pairs[f"y_alpha_prime_{arm}"].mean())


def flip_tilt(pairs: pd.DataFrame, arm: str) -> float:
    """Signed tilt of the flipped pairs under ``arm``: (alpha-favoured - alpha'-favoured) / N."""
    ya, yb = pairs[f"y_alpha_{arm}"], pairs[f"y_alpha_prime_{arm}"]
    return float(((ya == 1) & (yb == 0)).sum() - ((ya == 0) & (yb == 1)).sum()) / len(pairs)


def bootstrap_intervals(
    pairs: pd.DataFrame, n_boot: int, seed: int, level: float = 0.95
) -> dict[str, tuple[float, float]]:
    """Percentile intervals of every metric, resampling pairs with replacement ``n_boot`` times."""
    per = _per_pair(pairs)
    n = len(pairs)
    if n == 0 or n_boot <= 0:
        return {m: (np.nan, np.nan) for m in METRICS}
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_boot, n))
    boot = {k: a[idx].mean(axis=1) for k, a in per.items()}
    boot["delta_dcf"] = boot["dcf_think"] - boot["dcf_nothink"]
    boot["delta_dgroup"] = boot["dgroup_think"] - boot["dgroup_nothink"]
    q = [(1 - level) / 2 * 100, (1 + level) / 2 * 100]
    return {m: tuple(float(x) for x in np.percentile(boot[m], q)) for m in METRICS}


def disparity_table(pairs: pd.DataFrame, n_boot: int, seed: int) -> pd.DataFrame:
    """Figure 2 data: per setting, N, each metric with its bootstrap 95% interval (``_lo``/``_hi``).

    The bootstrap seed of a setting is ``derived_seed(seed, "fairness-bootstrap", model, dataset)``.
    """
    rows = []
    for (model, dataset), g in pairs.groupby(SETTING, sort=True):
        est = point_estimates(g)
        ci = bootstrap_intervals(g, n_boot, derived_seed(seed, "fairness-bootstrap", model, dataset))
        row = {"model": model, "dataset": dataset, "N": len(g)}
        for m in METRICS:
            row[m] = est[m]
            row[f"{m}_lo"], row[f"{m}_hi"] = ci[m]
        rows.append(row)
    return pd.DataFrame(
        rows, columns=["model", "dataset", "N"] + [f"{m}{x}" for m in METRICS for x in ("", "_lo", "_hi")]
    )
