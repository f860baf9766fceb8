"""The per-pair predictions table: the one input of every analysis (generated or brought by the user).

Schema (long format, one row per dataset x model x pair x side x arm; CSV or Parquet):

=============  ========  ==================================================================
column         type      meaning
=============  ========  ==================================================================
dataset        str       e.g. ``adult`` (any name; a setting is a (model, dataset) pair)
model          str       model name
pair_id        str       id of the counterfactual pair (shared by its two sides)
side           str       ``alpha`` (Male / White) or ``alpha_prime`` (Female / Non-White)
attribute      str       the protected value on that side (optional; informative)
arm            str       ``think`` or ``nothink``
answer         str       ``Yes`` / ``No``; empty when not parsed
status         str       ``ok``, ``refusal`` or ``unparsed`` (optional: derived from answer)
p_yes          float     P(Yes) read after the answer cue (nothink: after the empty think
                         block; think: after the full trace). Optional.
p_yes_K{K}_k{k} float    think arm: P(Yes) after the first k of K equal-token segments of
                         the trace (k = 0..K), e.g. ``p_yes_K10_k03``. Optional.
=============  ========  ==================================================================

A pair is retained in a setting only when all four answers (2 sides x 2 arms) are ``ok``.
The declared schema and its validation: :mod:`thinkbias.fairness.schema`.
"""

from __future__ import annotations

import re

import pandas as pd

REQUIRED = ("dataset", "model", "pair_id", "side", "arm", "answer")
KEY = ("dataset", "model", "pair_id", "side", "arm")
SIDES = ("alpha", "alpha_prime")
ARMS = ("nothink", "think")
SETTING = ["model", "dataset"]
DEPTH_COLUMN = re.compile(r"^p_yes_K(\d+)_k(\d+)$")


def depth_column(K: int, k: int) -> str:
    """Column name of P(Yes) at depth k of K, e.g. ``p_yes_K10_k03``."""
    return f"p_yes_K{K}_k{k:02d}"


def depth_sets(columns: list[str] | pd.Index) -> dict[int, list[int]]:
    """K -> sorted depths k present among ``columns``."""
    out: dict[int, list[int]] = {}
    for c in columns:
        m = DEPTH_COLUMN.match(str(c))
        if m:
            out.setdefault(int(m.group(1)), []).append(int(m.group(2)))
    return {K: sorted(ks) for K, ks in sorted(out.items())}


def parse_counts(pred: pd.DataFrame) -> pd.DataFrame:
    """Per setting: pairs, answers by status per arm, retained N (all four answers parsed), and
    ``unprobed``: retained pairs with a depth probability missing on a think side (an engine that
    returned no candidate logprob there), which the CDPG curves leave out."""
    rows = []
    depth_cols = [c for c in pred.columns if DEPTH_COLUMN.match(c)]
    for (model, dataset), g in pred.groupby(SETTING, sort=True):
        row = {"model": model, "dataset": dataset, "pairs": g["pair_id"].nunique()}
        for arm in ARMS:
            ga = g[g["arm"] == arm]
            for st in ("ok", "refusal", "unparsed"):
                row[f"{arm}_{st}"] = int((ga["status"] == st).sum())
        ok = g[g["status"] == "ok"].groupby("pair_id").size()
        row["N"] = int((ok == 4).sum())
        retained = set(ok[ok == 4].index)
        think = g[(g["arm"] == "think") & (g["status"] == "ok") & g["pair_id"].isin(retained)]
        row["unprobed"] = int(think.loc[think[depth_cols].isna().any(axis=1), "pair_id"].nunique()) if depth_cols else 0
        rows.append(row)
    return pd.DataFrame(
        rows,
        columns=["model", "dataset", "pairs"]
        + [f"{a}_{s}" for a in ARMS for s in ("ok", "refusal", "unparsed")]
        + ["N", "unprobed"],
    )


def pair_table(pred: pd.DataFrame) -> pd.DataFrame:
    """Wide table of retained pairs: one row per (model, dataset, pair_id).

    Columns ``y_<side>_<arm>`` (1 = Yes), ``p_<side>_<arm>`` (P(Yes) read after the cue) and, for the
    think arm, ``p_<side>_K{K}_k{k}`` for every probed depth.
    """
    ok = pred[pred["status"] == "ok"]
    complete = ok.groupby(SETTING + ["pair_id"]).size()
    index = complete[complete == 4].index.sort_values()
    depth_cols = [c for c in pred.columns if DEPTH_COLUMN.match(c)]
    out = pd.DataFrame(index=index)
    for side in SIDES:
        for arm in ARMS:
            s = ok[(ok["side"] == side) & (ok["arm"] == arm)].set_index(SETTING + ["pair_id"]).reindex(index)
            out[f"y_{side}_{arm}"] = (s["answer"] == "Yes").astype(int).to_numpy()
            out[f"p_{side}_{arm}"] = s["p_yes"].astype(float).to_numpy()
            if arm == "think":
                for c in depth_cols:
                    out[f"p_{side}_{c[len('p_yes_') :]}"] = s[c].astype(float).to_numpy()
    out = out[[c for c in out.columns if c.startswith("y_")] + [c for c in out.columns if c.startswith("p_")]]
    return out.reset_index().sort_values(SETTING + ["pair_id"], kind="stable").reset_index(drop=True)
