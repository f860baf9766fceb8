"""Truncation intervention (paper Section 3.4, Section 5.3, Figure 3).

For each selected question, one trajectory (the lowest permutation whose CCP is detectable) is cut at
normalised positions CCP + offset (offsets -0.15, -0.05, +0.05, +0.15 by default); cuts outside
[0, 1] are dropped and counted. Each cut is resumed ``n_continuations`` times with nucleus sampling:
the request is the record's original chat with the assistant turn pre-filled with the original
assistant text up to the cut (think-arm prefill included), so the engine reuses the prompt's
computation. The resumed trajectory is the original trajectory up to the cut plus the continuation;
its final answer goes through the same extraction cascade.

Outcomes: ``changed`` (final answer differs from the original; NaN when the continuation's answer
cannot be extracted) and ``toward_preferred`` (among changed answers, whether the new answer is the
position-preferred option). Buckets are by absolute cut position; "before CCP" are negative offsets.
"""

from __future__ import annotations

import hashlib
import math
from typing import Sequence

import numpy as np
import pandas as pd

from thinkbias.lazy_imports import lazy_module
from thinkbias.position.extract import extract_final_answer
from thinkbias.stats.tails import log10_chi2_sf_1df, log10_p

stats = lazy_module("scipy.stats")

DEFAULT_OFFSETS = (-0.15, -0.05, 0.05, 0.15)
DEFAULT_BUCKETS = (0.0, 0.3, 0.5, 0.7, 0.9, 1.0)


def continuation_seed(seed: int, question_id: str, offset_index: int, continuation: int) -> int:
    """Seed of one continuation, derived from the master seed (31-bit, machine independent)."""
    digest = hashlib.sha256(f"truncation:{seed}:{question_id}:{offset_index}:{continuation}".encode()).hexdigest()
    return int(digest[:8], 16) & 0x7FFFFFFF


def select_trajectories(records: pd.DataFrame, n_questions: int) -> pd.DataFrame:
    """Per question (in the records' question order), the lowest-permutation record with a
    detectable CCP and an extracted answer; the first ``n_questions`` such questions."""
    ok = records[records["ccp"].notna() & records["extracted"].astype(bool)]
    order = ok.sort_values(
        ["question_order", "permutation"] if "question_order" in ok else ["permutation"], kind="stable"
    )
    firsts = order.drop_duplicates("question_id", keep="first")
    return firsts.head(int(n_questions)).reset_index(drop=True)


def plan_cuts(selected: pd.DataFrame, offsets: Sequence[float] = DEFAULT_OFFSETS) -> tuple[pd.DataFrame, int]:
    """Cut points (one row per record x offset inside [0, 1]) and the number of dropped cuts."""
    rows, dropped = [], 0
    for rec in selected.itertuples(index=False):
        for i, off in enumerate(offsets):
            cut = float(rec.ccp) + float(off)
            if cut < 0.0 or cut > 1.0:
                dropped += 1
                continue
            rows.append(
                {
                    "question_id": rec.question_id,
                    "permutation": int(rec.permutation),
                    "offset_index": i,
                    "offset": float(off),
                    "ccp": float(rec.ccp),
                    "cut": cut,
                    "cut_char": int(round(cut * len(rec.full_text))),
                    "side": "before" if off < 0 else "after",
                    "original_answer": rec.final_answer,
                }
            )
    return pd.DataFrame(rows), dropped


def assistant_prefix(full_cut: int, thinking: str, response: str, assistant_text: str) -> str:
    """The assistant-turn text (prefill + generated text) that corresponds to the first
    ``full_cut`` characters of the trajectory ``thinking + "\\n\\n" + response``.

    Inside the thinking part the cut maps into the thinking trace as it appears in the assistant
    text; past it, into the response. When a part cannot be located, the cut is mapped
    proportionally onto the assistant text.
    """
    thinking = thinking or ""
    response = response or ""
    full_len = len(thinking) + (2 if thinking and response else 0) + len(response)
    if thinking and full_cut <= len(thinking):
        start = assistant_text.find(thinking)
        if start >= 0:
            return assistant_text[: start + full_cut]
    elif response:
        k = max(0, full_cut - (len(thinking) + (2 if thinking else 0)))
        start = assistant_text.rfind(response)
        if start >= 0:
            return assistant_text[: start + k]
    frac = full_cut / full_len if full_len else 0.0
    return assistant_text[: int(round(frac * len(assistant_text)))]


def trajectory_prefix_of(assistant_prefix_text: str, prefill: str) -> str:
    """The generated part of an assistant prefix (the prefill removed when it leads)."""
    return (
        assistant_prefix_text[len(prefill) :]
        if prefill and assistant_prefix_text.startswith(prefill)
        else assistant_prefix_text
    )


def continuation_outcomes(cuts: pd.DataFrame, continuation_texts: Sequence[str], preferred: str) -> pd.DataFrame:
    """Extraction on each resumed trajectory (``cuts`` must hold one row per continuation with
    ``resumed_text``); adds new_answer, extraction_status, changed, toward_preferred."""
    out = cuts.copy().reset_index(drop=True)
    answers, status = [], []
    for text in continuation_texts:
        found = extract_final_answer(text)
        answers.append(found.letter)
        status.append(found.status)
    out["new_answer"] = pd.Series(answers, dtype=object)
    out["extraction_status"] = status
    has = out["new_answer"].notna()
    out["changed"] = np.where(has, out["new_answer"] != out["original_answer"], np.nan).astype(float)
    out["toward_preferred"] = np.where(out["changed"] == 1.0, (out["new_answer"] == preferred).astype(float), np.nan)
    out["preferred_position"] = preferred
    return out


def position_bucket(cut: float, edges: Sequence[float] = DEFAULT_BUCKETS) -> str:
    """Label "lo-hi" of the bucket holding ``cut`` (last bucket closed on the right)."""
    for lo, hi in zip(edges, edges[1:]):
        if lo <= cut < hi or (hi == edges[-1] and cut == hi):
            return f"{lo:g}-{hi:g}"
    raise ValueError(f"cut position {cut} outside the buckets {list(edges)}")


def bucket_rates(outcomes: pd.DataFrame, edges: Sequence[float] = DEFAULT_BUCKETS) -> pd.DataFrame:
    """Per configuration and absolute-position bucket: n continuations, n with an answer, change
    rate, n changed, directional-shift rate toward the preferred position."""
    labels = [f"{lo:g}-{hi:g}" for lo, hi in zip(edges, edges[1:])]
    o = outcomes.copy()
    o["bucket"] = [position_bucket(c, edges) for c in o["cut"]]
    keys = [k for k in ("benchmark", "model", "mode") if k in o]
    rows = []
    for key, grp in o.groupby(keys, sort=False) if keys else [((), o)]:
        key = key if isinstance(key, tuple) else (key,)
        for label in labels:
            g = grp[grp["bucket"] == label]
            answered = g["changed"].notna()
            changed = g["changed"] == 1.0
            rows.append(
                {
                    **dict(zip(keys, key)),
                    "bucket": label,
                    "n": int(len(g)),
                    "n_answered": int(answered.sum()),
                    "change_rate": float(changed.sum() / answered.sum()) if answered.sum() else math.nan,
                    "n_changed": int(changed.sum()),
                    "toward_preferred_rate": float(g.loc[changed, "toward_preferred"].mean())
                    if changed.sum()
                    else math.nan,
                    "preferred_position": grp["preferred_position"].iloc[0] if len(grp) else None,
                }
            )
    return pd.DataFrame(rows)


def before_after_test(outcomes: pd.DataFrame) -> dict:
    """Change rate before vs after CCP and Pearson's chi-square test of the 2x2 table
    (side x changed) without continuity correction, with log10 p (finite where p underflows: 2,400
    continuations split perfectly give X^2 = 2400, p = 10^-523); NaN p when a margin is empty."""
    o = outcomes[outcomes["changed"].notna()]
    table = np.array(
        [
            [int((o["side"].eq(s) & o["changed"].eq(1.0)).sum()), int((o["side"].eq(s) & o["changed"].eq(0.0)).sum())]
            for s in ("before", "after")
        ]
    )
    n_before, n_after = table.sum(axis=1)
    result = {
        "n_before": int(n_before),
        "changed_before": int(table[0, 0]),
        "rate_before": table[0, 0] / n_before if n_before else math.nan,
        "n_after": int(n_after),
        "changed_after": int(table[1, 0]),
        "rate_after": table[1, 0] / n_after if n_after else math.nan,
        "chi2": math.nan,
        "p_value": math.nan,
        "log10_p_value": math.nan,
    }
    if (table.sum(axis=0) > 0).all() and (table.sum(axis=1) > 0).all():
        chi2, p, _, _ = stats.chi2_contingency(table, correction=False)
        result["chi2"], result["p_value"] = float(chi2), float(p)
        result["log10_p_value"] = log10_p(float(p), lambda: log10_chi2_sf_1df(float(chi2)))
    return result


def preferred_position(records: pd.DataFrame, setting: str = "auto") -> str:
    """The position-preferred option: ``setting`` when it is a letter, else the most frequent
    extracted answer of the configuration's records (ties: earliest letter)."""
    if setting in ("A", "B", "C", "D"):
        return setting
    counts = records.loc[records["extracted"].astype(bool), "final_answer"].value_counts()
    if counts.empty:
        return "A"
    top = counts.max()
    return sorted(letter for letter, c in counts.items() if c == top)[0]
