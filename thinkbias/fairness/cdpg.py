"""Counterfactual Depth Probability Gap (paper §3.3, Figures 3 and 4, Appendix C).

Each side's thinking trace of T tokens is cut after the first k of K equal-token segments,
cut_k = floor(k*T/K + 1/2) (round half up), k = 0..K. The prompt plus that prefix is re-fed, the
think block is closed, a fixed answer cue appended, and P_k = P(Yes) / (P(Yes) + P(No)) is read from
the next-token distribution. CDPG_k(i) = P_k^alpha(i) - P_k^alpha'(i).

Anchor / mover (Figure 4): in cells b and c exactly one side changes its answer between the arms:
that side is the mover, the other the anchor.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Iterable

import numpy as np
import pandas as pd

from thinkbias.llm.trace_cuts import fraction_cuts

SETTING = ["model", "dataset"]


def union_cuts(n_tokens: int, Ks: Iterable[int]) -> list[int]:
    """Sorted distinct cut points of an ``n_tokens``-token trace over several K (probe each once): the
    engine's cut ``floor(f*T + 1/2)`` (``thinkbias.llm.trace_cuts.fraction_cuts``) at every depth k/K."""
    return sorted(set(fraction_cuts([float(f) for f in depth_fractions(Ks)], n_tokens)))


def depth_fractions(Ks: Iterable[int]) -> list[Fraction]:
    """Sorted distinct relative depths k/K over several K (k = 0..K), the fractions handed to
    ``Engine.generate_and_probe_many``, which cuts a T-token trace at ``floor(k*T/K + 1/2)``."""
    return sorted({Fraction(k, K) for K in Ks for k in range(K + 1)})


def cdpg_long(cells: pd.DataFrame, K: int) -> pd.DataFrame:
    """One row per (setting, pair, k): cell, P_k of both sides, CDPG_k and |CDPG_k|.

    Pairs lacking any depth probability at this K are left out (counted by the caller via N).
    """
    cols_a = [f"p_alpha_K{K}_k{k:02d}" for k in range(K + 1)]
    cols_b = [f"p_alpha_prime_K{K}_k{k:02d}" for k in range(K + 1)]
    if not set(cols_a + cols_b) <= set(cells.columns):
        return pd.DataFrame(
            columns=SETTING + ["pair_id", "cell", "K", "k", "depth", "p_alpha", "p_alpha_prime", "cdpg", "abs_cdpg"]
        )
    have = cells[cols_a + cols_b].notna().all(axis=1)
    c = cells[have]
    pa = c[cols_a].to_numpy(float)
    pb = c[cols_b].to_numpy(float)
    n = len(c)
    out = pd.DataFrame(
        {
            "model": np.repeat(c["model"].to_numpy(), K + 1),
            "dataset": np.repeat(c["dataset"].to_numpy(), K + 1),
            "pair_id": np.repeat(c["pair_id"].to_numpy(), K + 1),
            "cell": np.repeat(c["cell"].to_numpy(), K + 1),
            "K": K,
            "k": np.tile(np.arange(K + 1), n),
            "p_alpha": pa.reshape(-1),
            "p_alpha_prime": pb.reshape(-1),
        }
    )
    out["depth"] = out["k"] / K
    out["cdpg"] = out["p_alpha"] - out["p_alpha_prime"]
    out["abs_cdpg"] = out["cdpg"].abs()
    return out


def mean_abs_cdpg(long: pd.DataFrame) -> pd.DataFrame:
    """Figure 3 data: mean |CDPG_k| per (setting, K, cell, k) with the number of pairs n."""
    if long.empty:
        return pd.DataFrame(columns=SETTING + ["K", "cell", "k", "depth", "mean_abs_cdpg", "n"])
    g = long.groupby(SETTING + ["K", "cell", "k", "depth"], sort=True)["abs_cdpg"]
    return g.agg(mean_abs_cdpg="mean", n="size").reset_index()


def depth_slope(curve: pd.DataFrame) -> float:
    """Least-squares slope of mean |CDPG_k| against k/K (Appendix C's linear summary)."""
    if len(curve) < 2:
        return math.nan
    x, y = curve["depth"].to_numpy(float), curve["mean_abs_cdpg"].to_numpy(float)
    return float(np.polyfit(x, y, 1)[0])


def slope_table(curves: pd.DataFrame, cell: str = "c") -> pd.DataFrame:
    """Appendix C: per setting and K, the slope of the cell's mean |CDPG_k| curve, with its n."""
    rows = []
    for (model, dataset, K), g in curves[curves["cell"] == cell].groupby(SETTING + ["K"], sort=True):
        rows.append(
            {
                "model": model,
                "dataset": dataset,
                "K": int(K),
                "cell": cell,
                "n": int(g["n"].max()),
                "slope": depth_slope(g),
                "start": float(g.loc[g.k.idxmin(), "mean_abs_cdpg"]),
                "end": float(g.loc[g.k.idxmax(), "mean_abs_cdpg"]),
            }
        )
    return pd.DataFrame(rows, columns=["model", "dataset", "K", "cell", "n", "slope", "start", "end"])


def mover_side(cells: pd.DataFrame) -> pd.Series:
    """For cell b/c pairs: the side whose answer changes between the arms (``alpha``/``alpha_prime``)."""
    moved_a = cells["y_alpha_nothink"] != cells["y_alpha_think"]
    moved_b = cells["y_alpha_prime_nothink"] != cells["y_alpha_prime_think"]
    side = pd.Series(
        np.where(moved_a & ~moved_b, "alpha", np.where(moved_b & ~moved_a, "alpha_prime", "")), index=cells.index
    )
    return side


def anchor_mover_trajectories(long: pd.DataFrame, cells: pd.DataFrame) -> pd.DataFrame:
    """Figure 4 data: mean P_k(Yes) of anchors and movers per (setting, cell in {b, c}, k), with n.

    Cells b and c have exactly one moving side by construction; a pair without one is an error.
    """
    bc = cells[cells["cell"].isin(["b", "c"])]
    mover = mover_side(bc)
    if (mover == "").any():
        raise AssertionError("a cell-b/c pair without exactly one moving side")
    m = bc.assign(mover=mover)[SETTING + ["pair_id", "mover"]]
    sub = long[long["cell"].isin(["b", "c"])].merge(m, on=SETTING + ["pair_id"], how="inner")
    if sub.empty:
        return pd.DataFrame(columns=SETTING + ["K", "cell", "k", "depth", "role", "mean_p_yes", "n"])
    is_a = sub["mover"] == "alpha"
    sub["p_mover"] = np.where(is_a, sub["p_alpha"], sub["p_alpha_prime"])
    sub["p_anchor"] = np.where(is_a, sub["p_alpha_prime"], sub["p_alpha"])
    keys = SETTING + ["K", "cell", "k", "depth"]
    parts = []
    for role in ("anchor", "mover"):
        g = sub.groupby(keys, sort=True)[f"p_{role}"].agg(mean_p_yes="mean", n="size").reset_index()
        g["role"] = role
        parts.append(g)
    return pd.concat(parts, ignore_index=True)[keys + ["role", "mean_p_yes", "n"]]
