"""Figures of the position study ("More Thinking, More Bias"), one function per paper figure.

Every function takes tidy tables (as written by the workflow) and a path, and writes a PNG.
Empty inputs give a figure that says so, never a crash.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from thinkbias.markdown import format_p_value  # noqa: E402

MODE_COLOURS = {"direct": "0.55", "cot": "tab:blue", "reasoning": "tab:red"}
MARKERS = "osD^v<>p*hX"


def _label(row) -> str:
    return f"{row['model']} / {row['mode']}"


def _empty(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=9, color="0.4")
    ax.set_xticks([])
    ax.set_yticks([])


def _log_x(ax, values) -> None:
    """Log x axis with a few readable ticks (no overlapping minor labels over short ranges)."""
    from matplotlib.ticker import NullFormatter

    v = np.asarray([x for x in values if x and x > 0 and np.isfinite(x)], dtype=float)
    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(NullFormatter())
    if len(v):
        lo, hi = v.min(), v.max()
        ticks = sorted({float(f"{t:.2g}") for t in np.geomspace(lo, hi, 4)}) if hi > lo else [float(f"{lo:.2g}")]
        ax.set_xticks(ticks)
        ax.set_xticklabels([f"{t:,.0f}" if t >= 10 else f"{t:g}" for t in ticks], fontsize=7)
        ax.xaxis.set_minor_formatter(NullFormatter())


def _save(fig, path: str | Path) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def figure1_quartiles(quartiles: pd.DataFrame, path: str | Path) -> None:
    """Figure 1: mean PBS per length quartile (Q1 shortest) for every reasoning-capable
    configuration (CoT and reasoning modes), one panel per benchmark."""
    q = quartiles[quartiles["mode"] != "direct"]
    benches = list(q["benchmark"].drop_duplicates()) or ["(none)"]
    fig, axes = plt.subplots(1, len(benches), figsize=(4.2 * len(benches), 3.4), squeeze=False)
    for ax, bench in zip(axes[0], benches):
        sub = q[q["benchmark"] == bench]
        if sub.empty:
            _empty(ax, "no reasoning-mode configuration")
            continue
        for i, (key, g) in enumerate(sub.groupby(["model", "mode"], sort=False)):
            ax.plot(
                g["bin"],
                g["pbs"],
                marker=MARKERS[i % len(MARKERS)],
                label=f"{key[0]} / {key[1]}",
                color=MODE_COLOURS.get(key[1]) if sub["model"].nunique() == 1 else None,
            )
        ax.set_xticks(range(1, int(sub["bin"].max()) + 1))
        ax.set_xticklabels([f"Q{i}" for i in range(1, int(sub["bin"].max()) + 1)])
        ax.set_xlabel("length quartile (Q1 = shortest)")
        ax.set_ylabel("mean PBS")
        ax.set_title(bench)
        ax.legend(fontsize=7)
    _save(fig, path)


def figure2_panels(quartiles: pd.DataFrame, table1: pd.DataFrame, path: str | Path) -> None:
    """Figure 2: per configuration (non-direct), quartile mean PBS against quartile mean length
    (log x) with standard-error bars, a dashed linear fit on the quartile centres, and the
    partial rho of Table 1 in the panel."""
    q = quartiles[quartiles["mode"] != "direct"]
    keys = list(q[["benchmark", "model", "mode"]].drop_duplicates().itertuples(index=False, name=None))
    n = max(1, len(keys))
    cols = min(4, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 3.0 * rows), squeeze=False)
    for ax in axes.flat[len(keys) :]:
        _empty(ax, "no reasoning-mode configuration" if not keys else "")
    for ax, (bench, model, mode) in zip(axes.flat, keys):
        g = q[(q["benchmark"] == bench) & (q["model"] == model) & (q["mode"] == mode)].dropna(
            subset=["pbs", "mean_length"]
        )
        ax.errorbar(
            g["mean_length"], g["pbs"], yerr=g["pbs_se"].fillna(0), fmt="o", color=MODE_COLOURS.get(mode), capsize=3
        )
        ok = g[g["mean_length"] > 0]
        if len(ok) >= 2:
            lx = np.log10(ok["mean_length"].to_numpy())
            slope, icpt = np.polyfit(lx, ok["pbs"].to_numpy(), 1)
            xs = np.linspace(lx.min(), lx.max(), 20)
            ax.plot(10**xs, icpt + slope * xs, "--", color="0.3", lw=1)
        _log_x(ax, g["mean_length"])
        t1 = table1[(table1["benchmark"] == bench) & (table1["model"] == model) & (table1["mode"] == mode)]
        if not t1.empty:
            r, p, nn = t1.iloc[0][["partial_rho", "p_value", "n"]]
            p_text = format_p_value(p, t1.iloc[0].get("log10_p_value"), 2, significant=True)
            ax.text(
                0.03,
                0.95,
                f"partial ρ = {r:.2f} (p = {p_text}, N = {int(nn)})",
                transform=ax.transAxes,
                va="top",
                fontsize=7,
            )
        ax.set_title(f"{model} / {mode} ({bench})", fontsize=8)
        ax.set_xlabel("mean trajectory length (chars)", fontsize=8)
        ax.set_ylabel("PBS", fontsize=8)
    _save(fig, path)


def figure3_truncation(buckets: pd.DataFrame, path: str | Path) -> None:
    """Figure 3: (a) answer change rate and (b) share of changed answers that move to the
    position-preferred option, by absolute cut position bucket, per configuration."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    if buckets.empty:
        for ax in axes:
            _empty(ax, "no truncation continuations in this config")
        _save(fig, path)
        return
    labels = list(buckets["bucket"].drop_duplicates())
    x = np.arange(len(labels))
    for i, (key, g) in enumerate(buckets.groupby(["benchmark", "model", "mode"], sort=False)):
        g = g.set_index("bucket").reindex(labels)
        name = f"{key[1]} / {key[2]} ({key[0]})"
        axes[0].plot(x, g["change_rate"], marker=MARKERS[i % len(MARKERS)], label=name)
        pref = g["preferred_position"].dropna()
        axes[1].plot(
            x,
            g["toward_preferred_rate"],
            marker=MARKERS[i % len(MARKERS)],
            label=f"{name}, toward {pref.iloc[0] if len(pref) else '?'}",
        )
        for xi, (n, nc) in enumerate(zip(g["n_answered"].fillna(0), g["n_changed"].fillna(0))):
            axes[0].annotate(
                f"{int(n)}", (xi, g["change_rate"].iloc[xi]), fontsize=6, xytext=(2, 2), textcoords="offset points"
            ) if not pd.isna(g["change_rate"].iloc[xi]) else None
            axes[1].annotate(
                f"{int(nc)}",
                (xi, g["toward_preferred_rate"].iloc[xi]),
                fontsize=6,
                xytext=(2, 2),
                textcoords="offset points",
            ) if not pd.isna(g["toward_preferred_rate"].iloc[xi]) else None
    for ax, title, ylabel in (
        (axes[0], "(a) answer change rate", "changed / answered"),
        (axes[1], "(b) directional shift", "to preferred / changed"),
    ):
        ax.set_xticks(x)
        ax.set_xticklabels(labels)
        ax.set_xlabel("absolute cut position")
        ax.set_ylabel(ylabel)
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=6)
    _save(fig, path)


def figure4_regimes(summary: pd.DataFrame, path: str | Path) -> None:
    """Figure 4: configuration PBS against mean trajectory length (log x), one panel per
    benchmark; direct mode grey, CoT blue, reasoning red; a trend line through the non-direct
    points; shading marks the direct (short) and reasoning (long) regimes."""
    benches = list(summary["benchmark"].drop_duplicates()) or ["(none)"]
    fig, axes = plt.subplots(1, len(benches), figsize=(4.2 * len(benches), 3.4), squeeze=False)
    for ax, bench in zip(axes[0], benches):
        s = summary[(summary["benchmark"] == bench) & (summary["length"] > 0)]
        if s.empty:
            _empty(ax, "no configuration")
            continue
        for _, row in s.iterrows():
            ax.scatter(row["length"], row["pbs"], color=MODE_COLOURS.get(row["mode"], "k"), s=36, zorder=3)
            ax.annotate(_label(row), (row["length"], row["pbs"]), fontsize=6, xytext=(3, 3), textcoords="offset points")
        direct = s[s["mode"] == "direct"]
        reasoning = s[s["mode"] != "direct"]
        if not direct.empty:
            ax.axvspan(direct["length"].min() / 1.5, direct["length"].max() * 1.5, color="0.9", zorder=0)
        if not reasoning.empty:
            ax.axvspan(reasoning["length"].min() / 1.5, reasoning["length"].max() * 1.5, color="mistyrose", zorder=0)
        if len(reasoning) >= 2 and reasoning["length"].nunique() >= 2:
            lx = np.log10(reasoning["length"].to_numpy())
            slope, icpt = np.polyfit(lx, reasoning["pbs"].to_numpy(), 1)
            xs = np.linspace(lx.min(), lx.max(), 20)
            ax.plot(10**xs, icpt + slope * xs, color="lightcoral", lw=1.5, zorder=2)
        _log_x(ax, s["length"])
        ax.set_xlabel("mean trajectory length (chars, log)")
        ax.set_ylabel("PBS")
        ax.set_title(bench)
    handles = [plt.Line2D([], [], marker="o", ls="", color=c, label=m) for m, c in MODE_COLOURS.items()]
    axes[0][0].legend(handles=handles, fontsize=7, loc="upper left")
    _save(fig, path)


def figure5_depth_probe(table5: pd.DataFrame, path: str | Path) -> None:
    """Figure 5 (beyond the paper): the depth probe's position-preferred mass against depth, one row
    per probed configuration: (a) all questions, with the mean mass on each absolute position A-D;
    (b) per length quartile; (c) questions answered mostly correctly vs mostly incorrectly. The
    dotted line at 0.25 is a position-blind model."""
    configs = list(table5.groupby(["benchmark", "model", "mode"], sort=False)) if len(table5) else []
    fig, axes = plt.subplots(max(1, len(configs)), 3, figsize=(11.5, 3.1 * max(1, len(configs))), squeeze=False)
    if not configs:
        for ax in axes[0]:
            _empty(ax, "no depth-probed configuration")
        _save(fig, path)
        return
    for row, ((bench, model, mode), t) in zip(axes, configs):
        panels = {
            "(a) all questions": [("all", "preferred_mass", "preferred position", {"color": "k", "lw": 2})]
            + [("all", f"mass_{c}", f"position {c}", {"lw": 1, "ls": "--"}) for c in "ABCD"],
            "(b) by length quartile": [(f"quartile {b}", "preferred_mass", f"Q{b}", {}) for b in range(1, 5)],
            "(c) by correctness": [
                ("correct", "preferred_mass", "correct (acc >= 0.5)", {"color": "tab:green"}),
                ("incorrect", "preferred_mass", "incorrect", {"color": "tab:red"}),
            ],
        }
        for ax, (title, lines) in zip(row, panels.items()):
            for i, (group, column, label, style) in enumerate(lines):
                g = t[t["group"] == group]
                if g[column].notna().any():
                    ax.plot(g["depth"], g[column], marker=MARKERS[i % len(MARKERS)], ms=3, label=label, **style)
            ax.axhline(0.25, color="0.6", ls=":", lw=1)
            ax.set_xlabel("depth (fraction of the trace)")
            ax.set_ylabel("probability mass")
            ax.set_title(f"{bench} / {model} / {mode}\n{title}", fontsize=8)
            ax.legend(fontsize=6)
    _save(fig, path)
