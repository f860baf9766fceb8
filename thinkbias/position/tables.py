"""The paper's tables from per-question metrics (Tables 1, 3, 4 and the quartile data of Figures 1-2).

Table 1: partial correlation rho(length, PBS | accuracy) per configuration. By default Pearson on
log10 of the mean trajectory length (the paper says PBS scales "linearly with log length"); raw
length and Spearman are options. Questions without PBS, or with zero length under log, are left out;
N is the count used.
Table 3: k-bin robustness (Appendix C). Table 4: one-sided paired Wilcoxon signed-rank test of
per-question PBS, reasoning configuration greater than the reference (Appendix D), paired by
question id; zero differences are dropped (Wilcoxon's original treatment). Differences are rounded
to ``PBS_DECIMALS`` places before ranking, so PBS values that are equal up to float noise tie
exactly (pbs.py already gives equal PBS the same float; the rounding keeps it so for values read
back from a table or averaged elsewhere).
Every p-value has a log10 column beside it (``log10_p_value``, ``log10_p_greater``), finite where
p underflows a double.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd

from thinkbias.lazy_imports import lazy_module
from thinkbias.position.lengthbins import binned_means, monotonicity
from thinkbias.position.questions import CONFIG_KEYS
from thinkbias.stats.partial_corr import partial_correlation
from thinkbias.stats.tails import log10_norm_sf, log10_p

stats = lazy_module("scipy.stats")

PBS_DECIMALS = 12  # distinct PBS values of up to 24 answers differ by far more than 1e-12


def length_predictor(length: pd.Series, scale: str = "log") -> pd.Series:
    """log10(length) (non-positive lengths -> NaN) or the raw length."""
    if scale == "raw":
        return length.astype(float)
    if scale == "log":
        v = length.astype(float)
        return np.log10(v.where(v > 0))
    raise ValueError(f"unknown length scale '{scale}' (expected 'log' or 'raw')")


def partial_correlation_table(questions: pd.DataFrame, scale: str = "log", method: str = "pearson") -> pd.DataFrame:
    """Table 1: one row per configuration with r, p (two-sided and one-sided r > 0), N, df.
    When no question has an accuracy (bring-your-own outputs without the correct position) the
    correlation is not partial; column ``controls_accuracy`` says which."""
    rows = []
    for key, g in questions.groupby(CONFIG_KEYS, sort=False):
        x = length_predictor(g["length"], scale)
        has_acc = bool(g["accuracy"].notna().any())
        res = partial_correlation(x, g["pbs"], g["accuracy"] if has_acc else None, method=method)
        rows.append(
            {
                **dict(zip(CONFIG_KEYS, key)),
                "partial_rho": res.r,
                "p_value": res.p_value,
                "p_greater": res.p_greater,
                "log10_p_value": res.log10_p_value,
                "log10_p_greater": res.log10_p_greater,
                "n": res.n,
                "df": res.df,
                "method": method,
                "length_scale": scale,
                "controls_accuracy": has_acc,
                "significance": significance_stars(res.p_value),
            }
        )
    return pd.DataFrame(rows)


def significance_stars(p: float) -> str:
    """The paper's marks: * p<0.05, ** p<0.01, *** p<1e-3."""
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return ""
    return "***" if p < 1e-3 else "**" if p < 0.01 else "*" if p < 0.05 else ""


def quartile_table(questions: pd.DataFrame, k: int = 4) -> pd.DataFrame:
    """Per configuration and length bin (quartiles by default): n, mean length, mean PBS and SE."""
    parts = []
    for key, g in questions.groupby(CONFIG_KEYS, sort=False):
        b = binned_means(g, k)
        for col, val in zip(CONFIG_KEYS, key):
            b.insert(CONFIG_KEYS.index(col), col, val)
        parts.append(b)
    cols = CONFIG_KEYS + ["bin", "n", "mean_length", "mean", "se"]
    return (
        pd.concat(parts, ignore_index=True).rename(columns={"mean": "pbs", "se": "pbs_se"})
        if parts
        else pd.DataFrame(columns=cols)
    )


def robustness_table(questions: pd.DataFrame, ks: Sequence[int] = (3, 5, 10)) -> pd.DataFrame:
    """Table 3: per configuration and k, bin means, strict monotonicity, first violation, gradient."""
    rows = []
    for key, g in questions.groupby(CONFIG_KEYS, sort=False):
        for k in ks:
            b = binned_means(g, int(k))
            mono, viol, grad = monotonicity(b["mean"].to_numpy())
            rows.append(
                {
                    **dict(zip(CONFIG_KEYS, key)),
                    "k": int(k),
                    "n_questions": int(b["n"].sum()),
                    "min_bin_n": int(b["n"].min()),
                    "monotonic": mono,
                    "first_violation": viol if viol is not None else pd.NA,
                    "mark": "✓" if mono else (f"viol@{viol}" if viol is not None else "n/a"),
                    "endpoint_gradient": grad,
                    "bin_means": " / ".join("nan" if math.isnan(v) else f"{v:.3f}" for v in b["mean"]),
                }
            )
    return pd.DataFrame(rows)


def wilcoxon_table(questions: pd.DataFrame, pairs: Sequence[dict]) -> pd.DataFrame:
    """Table 4: for every pair {reasoning: "model/mode", reference: "model/mode"} and benchmark
    where both exist, the one-sided paired Wilcoxon test (reasoning PBS > reference PBS)."""
    rows = []
    for pair in pairs:
        rm, rmode = pair["reasoning"].rsplit("/", 1)  # the mode is the last part; a model name may hold "/"
        fm, fmode = pair["reference"].rsplit("/", 1)
        for bench in questions["benchmark"].drop_duplicates():
            a = questions[(questions["benchmark"] == bench) & (questions["model"] == rm) & (questions["mode"] == rmode)]
            b = questions[(questions["benchmark"] == bench) & (questions["model"] == fm) & (questions["mode"] == fmode)]
            if a.empty or b.empty:
                continue
            m = (
                a[["question_id", "pbs"]]
                .merge(b[["question_id", "pbs"]], on="question_id", suffixes=("_r", "_ref"))
                .dropna()
            )
            d = (m["pbs_r"] - m["pbs_ref"]).round(PBS_DECIMALS)
            n_nonzero = int((d != 0).sum())
            stat, p, lp = (math.nan, math.nan, math.nan)
            if n_nonzero > 0:
                res = stats.wilcoxon(d.to_numpy(), alternative="greater", zero_method="wilcox")
                stat, p = float(res.statistic), float(res.pvalue)
                lp = log10_p(p, lambda: _log10_wilcoxon_normal_p(d.to_numpy()))
            rows.append(
                {
                    "benchmark": bench,
                    "reasoning": pair["reasoning"],
                    "reference": pair["reference"],
                    "n_pairs": int(len(m)),
                    "n_nonzero": n_nonzero,
                    "pbs_reasoning": float(m["pbs_r"].mean()) if len(m) else math.nan,
                    "pbs_reference": float(m["pbs_ref"].mean()) if len(m) else math.nan,
                    "gap": float(d.mean()) if len(m) else math.nan,
                    "statistic": stat,
                    "p_greater": p,
                    "log10_p_greater": lp,
                    "significance": significance_stars(p),
                }
            )
    cols = [
        "benchmark",
        "reasoning",
        "reference",
        "n_pairs",
        "n_nonzero",
        "pbs_reasoning",
        "pbs_reference",
        "gap",
        "statistic",
        "p_greater",
        "log10_p_greater",
        "significance",
    ]
    return pd.DataFrame(rows, columns=cols)


def _log10_wilcoxon_normal_p(differences: np.ndarray) -> float:
    """log10 of the one-sided Wilcoxon p where it underflows: there scipy used its normal approximation
    (its exact test covers at most 50 pairs, p >= 2^-50), so log10 P(Z > z) of that z."""
    res = stats.wilcoxon(differences, alternative="greater", zero_method="wilcox", method="approx")
    return log10_norm_sf(float(res.zstatistic))
