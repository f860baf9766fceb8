"""Figures of the fairness study (paper Figures 2, 3, 4 and Appendix C), one function each.

Each function takes the tidy table written by the matching analysis product and a PNG path.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

CELL_COLORS = {"a": "#7f7f7f", "b": "#1f77b4", "c": "#d62728", "d": "#9467bd"}


def _label(model: str, dataset: str) -> str:
    return f"{model}\n{dataset}"


def _grid(n: int, ncols: int = 3) -> tuple[plt.Figure, np.ndarray]:
    ncols = max(1, min(ncols, n))
    nrows = max(1, math.ceil(n / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.0 * ncols, 3.2 * nrows), squeeze=False, sharey=True)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, axes


def _save(fig: plt.Figure, path: str | Path) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def _empty(path: str | Path, message: str) -> None:
    fig, ax = plt.subplots(figsize=(5, 2))
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center")
    _save(fig, path)


def plot_figure2(table: pd.DataFrame, path: str | Path) -> None:
    """Figure 2: Delta D_group (pale) and Delta D_cf (dark) per setting with bootstrap 95% intervals."""
    if table.empty:
        return _empty(path, "no retained pairs")
    x = np.arange(len(table))
    w = 0.38
    fig, ax = plt.subplots(figsize=(max(5, 1.3 * len(table) + 2), 3.6))
    for off, metric, color, name in (
        (-w / 2, "delta_dgroup", "#9ecae1", "Δ D_group"),
        (w / 2, "delta_dcf", "#08519c", "Δ D_cf"),
    ):
        v = table[metric].to_numpy(float)
        err = np.vstack([v - table[f"{metric}_lo"].to_numpy(float), table[f"{metric}_hi"].to_numpy(float) - v])
        ax.bar(x + off, v, w, color=color, label=name, yerr=err, capsize=3)
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xticks(x, [f"{_label(m, d)}\nN={n}" for m, d, n in zip(table.model, table.dataset, table.N)], fontsize=7)
    ax.set_ylabel("think − nothink")
    ax.legend(fontsize=8)
    _save(fig, path)


def plot_cdpg_curves(curves: pd.DataFrame, path: str | Path, K: int | None = None) -> None:
    """Figure 3: mean |CDPG_k| per contingency cell against k/K, one panel per setting.

    With ``K=None`` every K present is drawn (Appendix C: solid K=10, dashed K=5, dotted K=20).
    """
    if K is not None:
        curves = curves[curves["K"] == K]
    if curves.empty:
        return _empty(path, "no probed pairs")
    settings = list(curves.groupby(["model", "dataset"], sort=True).groups)
    fig, axes = _grid(len(settings))
    styles = {5: "--", 10: "-", 20: ":"}
    for ax, (model, dataset) in zip(axes.flat, settings):
        s = curves[(curves.model == model) & (curves.dataset == dataset)]
        for (cell, k_), g in s.groupby(["cell", "K"], sort=True):
            ax.plot(
                g["depth"],
                g["mean_abs_cdpg"],
                styles.get(int(k_), "-"),
                marker="o",
                ms=2.5,
                color=CELL_COLORS.get(cell, "black"),
                label=f"{cell} (n={int(g['n'].max())})" + ("" if K is not None else f" K={int(k_)}"),
            )
        ax.set_title(f"{model} / {dataset}", fontsize=9)
        ax.set_xlabel("k / K")
        ax.set_ylim(-0.02, 1.02)
        ax.legend(fontsize=6)
    axes.flat[0].set_ylabel("mean |CDPG_k|")
    _save(fig, path)


def plot_figure4(traj: pd.DataFrame, path: str | Path) -> None:
    """Figure 4: mean P_k(Yes) of anchor and mover sides in cells b and c, per setting."""
    if traj.empty:
        return _empty(path, "no cell-b or cell-c pairs with probes")
    settings = list(traj.groupby(["model", "dataset"], sort=True).groups)
    fig, axes = plt.subplots(len(settings), 2, figsize=(8, 2.8 * len(settings)), squeeze=False, sharey=True)
    for row, (model, dataset) in enumerate(settings):
        for col, cell in enumerate(("b", "c")):
            ax = axes[row, col]
            s = traj[(traj.model == model) & (traj.dataset == dataset) & (traj.cell == cell)]
            for role, style in (("anchor", "-"), ("mover", "--")):
                g = s[s.role == role]
                if len(g):
                    ax.plot(
                        g["depth"],
                        g["mean_p_yes"],
                        style,
                        marker="o",
                        ms=2.5,
                        color=CELL_COLORS[cell],
                        label=f"{role} (n={int(g['n'].max())})",
                    )
            ax.set_title(f"{model} / {dataset}: cell {cell}", fontsize=9)
            ax.set_ylim(-0.02, 1.02)
            ax.set_xlabel("k / K")
            if len(s):
                ax.legend(fontsize=7)
        axes[row, 0].set_ylabel("mean P_k(Yes)")
    _save(fig, path)
