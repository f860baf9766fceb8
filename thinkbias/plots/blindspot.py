"""Figures of the blindspot study."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

SURVIVING_STEPS = ("tested", "carried to next stage")


def funnel_figure(funnel: pd.DataFrame, path: str) -> None:
    """Concepts surviving each filter, one panel per (model, task): the preparation steps, the
    baseline verbalization filter, then per stage the concepts tested and the drops (futile,
    verbalized) and flags. Reproduces the paper's pipeline funnel in miniature."""
    groups = list(funnel.groupby(["model", "task"], sort=True)) or [(("none", "none"), funnel)]
    fig, axes = plt.subplots(
        len(groups), 1, figsize=(8, 0.35 * max(len(g) for _, g in groups) + 1.2 * len(groups) + 0.5), squeeze=False
    )
    colours = {"dropped": "#c44e52", "flagged": "#55a868", "tested": "#4c72b0", "carried": "#8172b2"}
    for ax, ((model, task), sub) in zip(axes[:, 0], groups):
        labels = [f"{r.step}" + (f" (stage {r.stage})" if r.stage != "" else "") for r in sub.itertuples()]
        colour = [next((c for k, c in colours.items() if r.step.startswith(k)), "#999999") for r in sub.itertuples()]
        y = range(len(sub))
        ax.barh(list(y), sub["n_concepts"].tolist(), color=colour)
        for yi, n in zip(y, sub["n_concepts"]):
            ax.text(n, yi, f" {n}", va="center", fontsize=7)
        ax.set_yticks(list(y))
        ax.set_yticklabels(labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("concepts")
        ax.set_title(f"{model} / {task}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def simulation_figure(power: pd.DataFrame, path: str) -> None:
    """Power per planted effect size (share of replicates flagging the concept), one line per
    ``procedure`` when the table has that column."""
    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    groups = power.groupby("procedure", sort=False) if "procedure" in power.columns else [(None, power)]
    for name, sub in groups:
        ax.plot(sub["effect"] * 100, sub["power"], marker="o", label=name)
    if "procedure" in power.columns:
        ax.legend(fontsize=8)
    ax.set_xlabel("planted effect (percentage points)")
    ax.set_ylabel("power")
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def acceptance_figure(flag: pd.Series, path: str) -> None:
    """Acceptance rate of each side of a flagged concept (a row of the flagged table) with its 95%
    Wilson interval, N under each bar."""
    fig, ax = plt.subplots(figsize=(3.6, 3.0))
    rates = [float(flag["accept_pos"]), float(flag["accept_neg"])]
    lows = [float(flag["accept_pos_ci_low"]), float(flag["accept_neg_ci_low"])]
    highs = [float(flag["accept_pos_ci_high"]), float(flag["accept_neg_ci_high"])]
    errors = [[max(r - lo, 0.0) for r, lo in zip(rates, lows)], [max(hi - r, 0.0) for r, hi in zip(rates, highs)]]
    labels = [f"x+\nN = {int(flag['n_pos'])}", f"x-\nN = {int(flag['n_neg'])}"]
    ax.bar([0, 1], rates, yerr=errors, capsize=6, color=["#4c72b0", "#c44e52"], width=0.6)
    ax.set_xticks([0, 1])
    ax.set_xticklabels(labels)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("acceptance rate (95% Wilson interval)")
    ax.set_title(f"{flag['concept_id']}: delta = {float(flag['delta']):+.3f}", fontsize=9)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
