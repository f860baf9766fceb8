"""Depth-probe trajectories by absolute position (the depth probe's Table 5 and Figure 5).

Per question q of a configuration and depth d, over the permutations s whose probe has candidate
mass (``p_*`` not NaN):

    mbar_q,d(j) = mean_s P_s,d(position j),   j in A..D

the probe's counterpart of pbar_q in Eq. 1: the answer *probabilities*, not the extracted answers,
averaged by absolute position. The cyclic shifts (or all 24 orderings) move the content over every
position equally often, so a position-blind model has mbar_q,d = uniform exactly, at every depth,
whatever it thinks of the content. Then

- ``preferred_mass`` = max_j mbar_q,d(j): the position-preferred probability mass, the mass on the
  absolute position this question most favours at this depth (0.25 when position-blind, 1 when
  every ordering is answered at one position with certainty); ``preferred_position`` is that j
  (ties to the earlier letter);
- ``probe_pbs`` = || mbar_q,d - u ||_2, Eq. 1 on the probabilities;
- ``mass_A`` .. ``mass_D``: mbar_q,d itself;
- ``correct_mass`` = mean_s P_s,d(correct position of s): the content's share, for contrast.

The position is chosen at each depth, not once (e.g. at the last depth): choosing it where the
trajectory ends would make that depth a maximum by construction and every other depth not, a
built-in rise towards the end.

Groups (per configuration and depth): ``all`` questions; the length quartiles 1-4 of Figure 1 (the
same questions and bins: equal-frequency by mean trajectory length over the questions with a PBS);
``correct`` (the question's accuracy over its extracted permutations >= 0.5) and ``incorrect``
(< 0.5); questions without an extracted answer belong to ``all`` only.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from thinkbias.position.extract import OPTION_LETTERS
from thinkbias.position.lengthbins import equal_frequency_bins
from thinkbias.position.questions import CONFIG_KEYS

PROB_COLUMNS = [f"p_{c}" for c in OPTION_LETTERS]
MASS_COLUMNS = [f"mass_{c}" for c in OPTION_LETTERS]
QUESTION_KEYS = CONFIG_KEYS + ["question_id"]
TABLE_COLUMNS = CONFIG_KEYS + [
    "group",
    "depth",
    "n_questions",
    "preferred_mass",
    "preferred_mass_se",
    "probe_pbs",
    *MASS_COLUMNS,
    "correct_mass",
    "outside_mass",
    "mean_cut_tokens",
]


def question_depth_mass(probes: pd.DataFrame) -> pd.DataFrame:
    """One row per (configuration, question, depth): mbar by position, preferred mass and position,
    probe PBS, correct mass, mean outside mass, mean cut, and the number of permutations used."""
    keys = QUESTION_KEYS + ["depth"]
    rows = []
    for key, grp in probes.groupby(keys, sort=False):
        used = grp[grp[PROB_COLUMNS].notna().all(axis=1)]
        row = dict(zip(keys, key))
        row["n_permutations"] = len(used)
        if len(used):
            mbar = used[PROB_COLUMNS].to_numpy(dtype=float).mean(axis=0)
            j = int(np.argmax(mbar))
            correct = [
                getattr(r, f"p_{r.correct_position}")
                for r in used.itertuples(index=False)
                if r.correct_position in OPTION_LETTERS
            ]
            row.update({m: float(v) for m, v in zip(MASS_COLUMNS, mbar)})
            row.update(
                preferred_position=OPTION_LETTERS[j],
                preferred_mass=float(mbar[j]),
                probe_pbs=float(np.sqrt(((mbar - 0.25) ** 2).sum())),
                correct_mass=float(np.mean(correct)) if correct else math.nan,
            )
        else:
            row.update({m: math.nan for m in MASS_COLUMNS})
            row.update(preferred_position=None, preferred_mass=math.nan, probe_pbs=math.nan, correct_mass=math.nan)
        row["outside_mass"] = float(grp["outside_mass"].mean())
        row["mean_cut_tokens"] = float(grp["cut_tokens"].mean())
        rows.append(row)
    return pd.DataFrame(rows)


def question_groups(questions: pd.DataFrame) -> pd.DataFrame:
    """Per (configuration, question): its length ``quartile`` (1-4, Figure 1's bins; NaN without a
    PBS or length) and ``correctness`` (``correct`` / ``incorrect`` / None without an answer)."""
    parts = []
    for _, g in questions.groupby(CONFIG_KEYS, sort=False):
        g = g.copy()
        binned = g["pbs"].notna() & g["length"].notna()
        g["quartile"] = np.nan
        g.loc[binned, "quartile"] = equal_frequency_bins(g.loc[binned, "length"], 4)
        acc = g["accuracy"]
        g["correctness"] = np.where(acc.isna(), None, np.where(acc >= 0.5, "correct", "incorrect"))
        parts.append(g[QUESTION_KEYS + ["quartile", "correctness"]])
    if not parts:
        return pd.DataFrame(columns=QUESTION_KEYS + ["quartile", "correctness"])
    out = pd.concat(parts, ignore_index=True)
    out["question_id"] = out["question_id"].astype(str)
    return out


def _summary(g: pd.DataFrame) -> dict:
    v = g["preferred_mass"].dropna()
    n = len(v)
    return {
        "n_questions": n,
        "preferred_mass": float(v.mean()) if n else math.nan,
        "preferred_mass_se": float(v.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan,
        "probe_pbs": float(g["probe_pbs"].mean()) if n else math.nan,
        **{m: float(g[m].mean()) if n else math.nan for m in MASS_COLUMNS},
        "correct_mass": float(g["correct_mass"].mean()) if g["correct_mass"].notna().any() else math.nan,
        "outside_mass": float(g["outside_mass"].mean()),
        "mean_cut_tokens": float(g["mean_cut_tokens"].mean()),
    }


def depth_trajectory_table(probes: pd.DataFrame, questions: pd.DataFrame) -> pd.DataFrame:
    """Table 5: per configuration, group (all, quartile 1-4, correct, incorrect) and depth, the mean
    position-preferred mass with its standard error over questions, mean probe PBS, mean mass on
    each absolute position, mean correct mass and outside mass (columns ``TABLE_COLUMNS``).
    Questions absent from ``questions`` stop the table with their ids."""
    per_q = question_depth_mass(probes)
    if per_q.empty:
        return pd.DataFrame(columns=TABLE_COLUMNS)
    per_q["question_id"] = per_q["question_id"].astype(str)
    groups = question_groups(questions)
    merged = per_q.merge(groups, on=QUESTION_KEYS, how="left", indicator=True)
    missing = merged[merged["_merge"] == "left_only"].drop_duplicates(QUESTION_KEYS)
    if len(missing):
        first = ", ".join("/".join(map(str, r)) for r in missing[QUESTION_KEYS].head(5).itertuples(index=False))
        raise ValueError(
            f"depth probe: {len(missing)} probed questions are not in the questions table (first: {first})"
        )
    labels = (
        [("all", None)]
        + [(f"quartile {b}", ("quartile", float(b))) for b in range(1, 5)]
        + [("correct", ("correctness", "correct")), ("incorrect", ("correctness", "incorrect"))]
    )
    rows = []
    for key, cfg in merged.groupby(CONFIG_KEYS, sort=False):
        for label, cond in labels:
            sel = cfg if cond is None else cfg[cfg[cond[0]] == cond[1]]
            for depth in sorted(cfg["depth"].unique()):
                rows.append(
                    {
                        **dict(zip(CONFIG_KEYS, key)),
                        "group": label,
                        "depth": float(depth),
                        **_summary(sel[sel["depth"] == depth]),
                    }
                )
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)
