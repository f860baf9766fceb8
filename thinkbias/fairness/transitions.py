"""Bias transition matrices and the directional decomposition of created flips (paper §3.4, §4.4).

Group-level T^A (Table 3): for sides with attribute A, the row-stochastic 2x2 matrix
P(yhat_think = y' | yhat_nothink = y), y, y' in {N, Y}; Delta P(Y) = P(Y)_think - P(Y)_nothink.
Pair-state T^pair (Tables 4, 13, 14): states NN, YY, YN, NY (first letter = side alpha), M = YN + NY
(Table 4 pools it into one row and column, Tables 13 and 14 split it); rows = nothink state, columns =
think state. Identities (checked by :func:`check_cell_identities`):
    b = n_M * P(M -> NN or YY),  c = n_NN * P(NN -> M) + n_YY * P(YY -> M).
Directional decomposition (Table 5): c_alpha_up = cell-c pairs with yhat^alpha=1, yhat^alpha'=0 under
think, c_alpha'_up the opposite; delta_c = (c_alpha_up - c_alpha'_up) / N, in percent.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

SETTING = ["model", "dataset"]
STATES = ("NN", "YY", "YN", "NY")
MIXED = ("YN", "NY")
GROUP_COLUMNS = [
    "model",
    "dataset",
    "side",
    "attribute",
    "N",
    "n_Y",
    "n_N",
    "P(Y|Y)",
    "P(N|Y)",
    "P(Y|N)",
    "P(N|N)",
    "P(Y)_nothink",
    "P(Y)_think",
    "delta_P(Y)",
]


def pair_states(pairs: pd.DataFrame, arm: str) -> pd.Series:
    """State of each pair under ``arm``: two letters, side alpha first (Y = answer Yes)."""
    a = np.where(pairs[f"y_alpha_{arm}"] == 1, "Y", "N")
    b = np.where(pairs[f"y_alpha_prime_{arm}"] == 1, "Y", "N")
    return pd.Series(np.char.add(a.astype(str), b.astype(str)), index=pairs.index)


def group_transitions(pairs: pd.DataFrame) -> pd.DataFrame:
    """Table 3: per setting and side, row counts and the four entries of T^A, P(Y) per arm, Delta P(Y)."""
    rows = []
    for (model, dataset), g in pairs.groupby(SETTING, sort=True):
        for side in ("alpha", "alpha_prime"):
            nt, th = g[f"y_{side}_nothink"], g[f"y_{side}_think"]
            n_y, n_n = int((nt == 1).sum()), int((nt == 0).sum())
            p_y_y = float(((nt == 1) & (th == 1)).sum() / n_y) if n_y else math.nan
            p_y_n = float(((nt == 0) & (th == 1)).sum() / n_n) if n_n else math.nan
            attribute = g[f"attribute_{side}"].iloc[0] if f"attribute_{side}" in g.columns else side
            rows.append(
                {
                    "model": model,
                    "dataset": dataset,
                    "side": side,
                    "attribute": attribute,
                    "N": len(g),
                    "n_Y": n_y,
                    "n_N": n_n,
                    "P(Y|Y)": p_y_y,
                    "P(N|Y)": 1 - p_y_y if n_y else math.nan,
                    "P(Y|N)": p_y_n,
                    "P(N|N)": 1 - p_y_n if n_n else math.nan,
                    "P(Y)_nothink": float(nt.mean()),
                    "P(Y)_think": float(th.mean()),
                    "delta_P(Y)": float(th.mean() - nt.mean()),
                }
            )
    return pd.DataFrame(rows, columns=GROUP_COLUMNS)


def group_gaps(group: pd.DataFrame) -> pd.DataFrame:
    """Per setting: signed alpha - alpha' gap of each T^A entry and of Delta P(Y), and the max |gap|."""
    rows = []
    entries = ["P(Y|Y)", "P(N|Y)", "P(Y|N)", "P(N|N)"]
    for (model, dataset), g in group.groupby(SETTING, sort=True):
        a = g[g.side == "alpha"].iloc[0]
        b = g[g.side == "alpha_prime"].iloc[0]
        row = {"model": model, "dataset": dataset, "N": int(a["N"])}
        for e in entries:
            row[f"gap_{e}"] = float(a[e] - b[e])
        row["max_abs_gap"] = float(np.nanmax(np.abs([row[f"gap_{e}"] for e in entries])))
        row["gap_delta_P(Y)"] = float(a["delta_P(Y)"] - b["delta_P(Y)"])
        rows.append(row)
    return pd.DataFrame(
        rows, columns=["model", "dataset", "N"] + [f"gap_{e}" for e in entries] + ["max_abs_gap", "gap_delta_P(Y)"]
    )


def pair_state_counts(pairs: pd.DataFrame) -> pd.DataFrame:
    """Long table: per setting, from-state (nothink) x to-state (think) counts, row n and P(to | from)."""
    rows = []
    for (model, dataset), g in pairs.groupby(SETTING, sort=True):
        s_nt, s_th = pair_states(g, "nothink"), pair_states(g, "think")
        for s in STATES:
            n_row = int((s_nt == s).sum())
            for t in STATES:
                count = int(((s_nt == s) & (s_th == t)).sum())
                rows.append(
                    {
                        "model": model,
                        "dataset": dataset,
                        "from": s,
                        "to": t,
                        "count": count,
                        "n_row": n_row,
                        "prob": count / n_row if n_row else math.nan,
                        "N": len(g),
                    }
                )
    return pd.DataFrame(rows, columns=["model", "dataset", "from", "to", "count", "n_row", "prob", "N"])


def pair_state_matrix(counts: pd.DataFrame) -> pd.DataFrame:
    """Tables 4/13/14 layout: per setting a row per from-state with n, P(-> NN, YY, YN, NY, M): the
    split rows NN, YY, YN, NY of Tables 13/14, then Table 4's ``M`` row (YN and NY pooled:
    P(M -> t) over the n_YN + n_NY pairs), then a ``total`` row of column totals (pairs in each think
    state, as integers; the M total is the think-flip count c + d).

    The probability columns hold floats and the total row's counts ints (object columns), so the
    Markdown shows 3416, not 3416.000.
    """
    rows = []
    for (model, dataset), g in counts.groupby(SETTING, sort=True):

        def row_for(state: str, sub: pd.DataFrame) -> dict:
            by_to = sub.groupby("to")["count"].sum()
            n = int(sub.drop_duplicates("from")["n_row"].sum())
            row = {"model": model, "dataset": dataset, "from": state, "n": n}
            for t in STATES:
                row[f"to_{t}"] = float(by_to.get(t, 0) / n) if n else math.nan
            row["to_M"] = float(sum(by_to.get(t, 0) for t in MIXED) / n) if n else math.nan
            return row

        for s in STATES:
            rows.append(row_for(s, g[g["from"] == s]))
        rows.append(row_for("M", g[g["from"].isin(MIXED)]))
        tot = g.groupby("to")["count"].sum()
        row = {"model": model, "dataset": dataset, "from": "total", "n": int(tot.sum())}
        for t in STATES:
            row[f"to_{t}"] = int(tot.get(t, 0))
        row["to_M"] = int(sum(tot.get(t, 0) for t in MIXED))
        rows.append(row)
    columns = ["model", "dataset", "from", "n"] + [f"to_{t}" for t in STATES] + ["to_M"]
    out = pd.DataFrame(rows, columns=columns).astype({c: object for c in columns[4:]})
    totals = out["from"] == "total"
    for c in columns[4:]:
        out.loc[totals, c] = [int(x) for x in out.loc[totals, c]]
    return out


def check_cell_identities(cells: pd.DataFrame, counts: pd.DataFrame) -> pd.DataFrame:
    """Recompute b and c of every setting from T^pair and assert they equal the counted cells.

    Returns a table (setting, b, b_from_T, c, c_from_T); raises ``AssertionError`` on any mismatch.
    """
    rows = []
    for (model, dataset), g in counts.groupby(SETTING, sort=True):
        cg = cells[(cells.model == model) & (cells.dataset == dataset)]
        b, c = int((cg.cell == "b").sum()), int((cg.cell == "c").sum())

        def n_of(s: str) -> int:
            return int(g[g["from"] == s]["n_row"].iloc[0])

        def p(s: str, targets: tuple[str, ...]) -> float:
            r = g[(g["from"] == s) & (g["to"].isin(targets))]
            return float(r["prob"].sum()) if n_of(s) else 0.0

        n_m = n_of("YN") + n_of("NY")
        # P(M -> NN or YY) over the pooled M row = (counts of YN->agree + NY->agree) / n_M
        agree_from_m = sum(n_of(s) * p(s, ("NN", "YY")) for s in MIXED)
        b_from_t = (n_m * (agree_from_m / n_m)) if n_m else 0.0
        c_from_t = n_of("NN") * p("NN", MIXED) + n_of("YY") * p("YY", MIXED)
        rows.append({"model": model, "dataset": dataset, "b": b, "b_from_T": b_from_t, "c": c, "c_from_T": c_from_t})
        if not (math.isclose(b, b_from_t, abs_tol=1e-6) and math.isclose(c, c_from_t, abs_tol=1e-6)):
            raise AssertionError(
                f"T^pair identity fails for {model}/{dataset}: b={b} vs {b_from_t}, c={c} vs {c_from_t}"
            )
    return pd.DataFrame(rows, columns=["model", "dataset", "b", "b_from_T", "c", "c_from_T"])


def directional_decomposition(cells: pd.DataFrame, disparity: pd.DataFrame, noise_floor: float) -> pd.DataFrame:
    """Table 5: per setting c, c_alpha_up, c_alpha'_up, delta_c (%), the cell-d split, Delta D_group with
    its interval, whether |Delta D_group| clears ``noise_floor`` and whether its interval excludes 0."""
    rows = []
    for (model, dataset), g in cells.groupby(SETTING, sort=True):
        n = len(g)
        up_a = lambda s: int(((s.y_alpha_think == 1) & (s.y_alpha_prime_think == 0)).sum())  # noqa: E731
        up_b = lambda s: int(((s.y_alpha_think == 0) & (s.y_alpha_prime_think == 1)).sum())  # noqa: E731
        gc, gd = g[g.cell == "c"], g[g.cell == "d"]
        row = {
            "model": model,
            "dataset": dataset,
            "N": n,
            "c": len(gc),
            "c_alpha_up": up_a(gc),
            "c_alpha_prime_up": up_b(gc),
        }
        row["delta_c_pct"] = 100.0 * (row["c_alpha_up"] - row["c_alpha_prime_up"]) / n if n else math.nan
        row["d"] = len(gd)
        row["d_alpha_up"], row["d_alpha_prime_up"] = up_a(gd), up_b(gd)
        row["delta_d_pct"] = 100.0 * (row["d_alpha_up"] - row["d_alpha_prime_up"]) / n if n else math.nan
        d = disparity[(disparity.model == model) & (disparity.dataset == dataset)]
        if len(d):
            dd = d.iloc[0]
            row["delta_dgroup"] = float(dd["delta_dgroup"])
            row["delta_dgroup_lo"], row["delta_dgroup_hi"] = float(dd["delta_dgroup_lo"]), float(dd["delta_dgroup_hi"])
            row["clears_noise_floor"] = bool(abs(row["delta_dgroup"]) > noise_floor)
            row["ci_excludes_zero"] = bool(row["delta_dgroup_lo"] > 0 or row["delta_dgroup_hi"] < 0)
        rows.append(row)
    return pd.DataFrame(
        rows,
        columns=[
            "model",
            "dataset",
            "N",
            "c",
            "c_alpha_up",
            "c_alpha_prime_up",
            "delta_c_pct",
            "d",
            "d_alpha_up",
            "d_alpha_prime_up",
            "delta_d_pct",
            "delta_dgroup",
            "delta_dgroup_lo",
            "delta_dgroup_hi",
            "clears_noise_floor",
            "ci_excludes_zero",
        ],
    )
