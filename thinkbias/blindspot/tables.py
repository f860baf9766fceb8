"""Products of one audit (model, task): the flagged-bias table, the funnel of concepts through the
filters, the cost table against exhaustive testing, and example discordant pairs (spec Sec. 3.7 and
5.2)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from thinkbias.blindspot.effect import SIDE_COLUMNS

FLAGGED_COLUMNS = [
    "model",
    "task",
    "concept_id",
    "title",
    "delta",
    "ci_low",
    "ci_high",
    "accept_pos",
    "accept_neg",
    "n_pos",
    "n_neg",
    *SIDE_COLUMNS,
    "b",
    "c",
    "n",
    "n_invalid",
    "p_value",
    "log10_p_value",
    "threshold",
    "stage",
    "n_inputs",
    "baseline_verbalization_rate",
    "baseline_n_judged",
    "baseline_n_unparsed",
    "variation_verbalization_rate",
    "n_flips",
    "variation_n_unparsed",
    "variation_rate_if_unparsed_cited",
]


def flagged_table(
    stages: pd.DataFrame, concepts: pd.DataFrame, baseline: pd.DataFrame, model: str, task: str
) -> pd.DataFrame:
    """One row per flagged unverbalized bias with its effect size (95% CI), p-value, the threshold
    it passed, the stage, and both verbalization rates; sorted by |delta|.

    Beside each rate, the judge's unparsable verdicts: ``baseline_n_unparsed`` baseline responses
    (left out of the baseline rate), ``variation_n_unparsed`` flipped pairs with an unparsable or
    missing verdict on a side (counted as not verbalized, the paper's default), and
    ``variation_rate_if_unparsed_cited``, the variation rate had every such pair cited the concept
    (at or above the variation threshold, the flag rests on verdicts the judge did not give).
    """
    flagged = stages[stages["status"] == "flagged"].copy()
    if flagged.empty:
        return pd.DataFrame(columns=FLAGGED_COLUMNS)
    if "threshold" not in flagged.columns:  # stage tables written before the column existed
        flagged["threshold"] = np.where(flagged["is_last"], flagged["alpha_s"], flagged["alpha_obf"])
    for col in SIDE_COLUMNS:  # stage tables written before the per-side statistics existed
        if col not in flagged.columns:
            flagged[col] = np.nan
    if "log10_p_value" not in flagged.columns:  # stage tables written before the column existed
        flagged["log10_p_value"] = np.log10(flagged["p_value"].astype(float))
    titles = concepts.set_index("concept_id")["title"]
    base = baseline.set_index("concept_id")
    flagged["title"] = flagged["concept_id"].map(titles)
    flagged["baseline_verbalization_rate"] = flagged["concept_id"].map(base["rate"])
    flagged["baseline_n_judged"] = flagged["concept_id"].map(base["n_judged"])
    flagged["baseline_n_unparsed"] = (
        flagged["concept_id"].map(base["n_unparsed"]) if "n_unparsed" in base.columns else np.nan
    )
    flagged["variation_verbalization_rate"] = flagged["var_rate"]
    if "n_flips_unjudged" in flagged.columns:
        flagged["variation_n_unparsed"] = flagged["n_flips_unjudged"]
        verbalized = (
            flagged["n_flips_verbalized"]
            if "n_flips_verbalized" in flagged.columns
            else flagged["var_rate"] * flagged["n_flips"]
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            flagged["variation_rate_if_unparsed_cited"] = np.where(
                flagged["n_flips"] > 0, (verbalized + flagged["n_flips_unjudged"]) / flagged["n_flips"], 0.0
            )
    else:
        flagged["variation_n_unparsed"] = np.nan
        flagged["variation_rate_if_unparsed_cited"] = np.nan
    flagged["model"], flagged["task"] = model, task
    flagged["abs_delta"] = flagged["delta"].abs()
    flagged = flagged.sort_values(["abs_delta", "concept_id"], ascending=[False, True])
    return flagged[FLAGGED_COLUMNS].reset_index(drop=True)


def funnel_table(
    concept_counts: dict[str, int], baseline: pd.DataFrame, stages: pd.DataFrame, model: str, task: str
) -> pd.DataFrame:
    """Concepts surviving each filter: the preparation steps (``concept_counts``, in order), the
    baseline verbalization filter, then per stage the concepts tested, dropped as futile, dropped as
    verbalized, flagged, and carried on (or, at the last stage, not significant)."""
    rows = [{"step": name, "stage": "", "n_concepts": int(n)} for name, n in concept_counts.items()]
    rows.append(
        {"step": "after baseline verbalization filter", "stage": "0", "n_concepts": int(baseline["kept"].sum())}
    )
    for s, sub in stages.groupby("stage", sort=True):
        counts = sub["status"].value_counts()
        rows.append({"step": "tested", "stage": str(s), "n_concepts": int(len(sub))})
        for status, label in (
            ("futile", "dropped: futile"),
            ("verbalized", "dropped: verbalized in flipped pairs"),
            ("flagged", "flagged"),
            ("continue", "carried to next stage"),
            ("not_significant", "not significant at last stage"),
        ):
            rows.append({"step": label, "stage": str(s), "n_concepts": int(counts.get(status, 0))})
    rows.append({"step": "flagged in total", "stage": "", "n_concepts": int((stages["status"] == "flagged").sum())})
    out = pd.DataFrame(rows)
    out.insert(0, "task", task)
    out.insert(0, "model", model)
    return out


def cost_table(
    stage_calls: pd.DataFrame,
    n_concepts_tested: int,
    n_total: int,
    n_baseline: int,
    n_baseline_judgements: int,
    model: str | None = None,
    task: str | None = None,
) -> pd.DataFrame:
    """Target and autorater calls per stage with cumulative sums, and the exhaustive alternative:
    every concept that passed the baseline filter on every input (2 target calls each); the
    exhaustive judge calls are extrapolated from the observed share of flipped pairs. ``model`` and
    ``task`` lead the columns when given.

    ``stage_calls``: ``stage, n_inputs, n_active, target_calls, judge_calls, n_pairs, n_flips``.
    """
    rows = [
        {
            "stage": "baseline",
            "n_inputs": n_baseline,
            "n_active": np.nan,
            "target_calls": n_baseline,
            "judge_calls": n_baseline_judgements,
        }
    ]
    for _, r in stage_calls.sort_values("stage").iterrows():
        rows.append(
            {
                "stage": str(int(r["stage"])),
                "n_inputs": int(r["n_inputs"]),
                "n_active": int(r["n_active"]),
                "target_calls": int(r["target_calls"]),
                "judge_calls": int(r["judge_calls"]),
            }
        )
    out = pd.DataFrame(rows)
    out["cumulative_target_calls"] = out["target_calls"].cumsum()
    out["cumulative_judge_calls"] = out["judge_calls"].cumsum()
    staged_target = int(stage_calls["target_calls"].sum())
    staged_judge = int(stage_calls["judge_calls"].sum())
    pairs = float(stage_calls.get("n_pairs", pd.Series([0])).sum())
    flips = float(stage_calls.get("n_flips", pd.Series([0])).sum())
    flip_rate = flips / pairs if pairs else 0.0
    exhaustive_target = 2 * n_concepts_tested * n_total
    exhaustive_judge = int(round(2 * flip_rate * n_concepts_tested * n_total))
    out = pd.concat(
        [
            out,
            pd.DataFrame(
                [
                    {
                        "stage": "staged total",
                        "n_inputs": np.nan,
                        "n_active": np.nan,
                        "target_calls": staged_target,
                        "judge_calls": staged_judge,
                    },
                    {
                        "stage": "exhaustive",
                        "n_inputs": n_total,
                        "n_active": n_concepts_tested,
                        "target_calls": exhaustive_target,
                        "judge_calls": exhaustive_judge,
                    },
                    {
                        "stage": "saved share",
                        "n_inputs": np.nan,
                        "n_active": np.nan,
                        "target_calls": (1 - staged_target / exhaustive_target) if exhaustive_target else np.nan,
                        "judge_calls": (1 - staged_judge / exhaustive_judge) if exhaustive_judge else np.nan,
                    },
                ]
            ),
        ],
        ignore_index=True,
    )
    if task is not None:
        out.insert(0, "task", task)
    if model is not None:
        out.insert(0, "model", model)
    return out


def example_pairs(
    flagged: pd.DataFrame, responses: pd.DataFrame, variations: pd.DataFrame, per_concept: int
) -> pd.DataFrame:
    """Up to ``per_concept`` discordant pairs per flagged concept with both inputs and both responses
    (the first by input id, so the choice is deterministic)."""
    if flagged.empty:
        return pd.DataFrame(
            columns=[
                "concept_id",
                "input_id",
                "decision_pos",
                "decision_neg",
                "input_pos",
                "input_neg",
                "response_pos",
                "response_neg",
            ]
        )
    wide = responses.pivot_table(
        index=["concept_id", "input_id"], columns="side", values=["decision", "text"], aggfunc="first"
    )
    wide.columns = [f"{a}_{b}" for a, b in wide.columns]
    wide = wide.reset_index()
    wide = wide[wide["concept_id"].isin(flagged["concept_id"])]
    disc = wide[
        wide["decision_pos"].notna() & wide["decision_neg"].notna() & (wide["decision_pos"] != wide["decision_neg"])
    ]
    disc = disc.sort_values(["concept_id", "input_id"]).groupby("concept_id").head(per_concept)
    v = variations[["concept_id", "input_id", "positive", "negative"]].rename(
        columns={"positive": "input_pos", "negative": "input_neg"}
    )
    out = disc.merge(v, on=["concept_id", "input_id"], how="left").rename(
        columns={"text_pos": "response_pos", "text_neg": "response_neg"}
    )
    return out[
        [
            "concept_id",
            "input_id",
            "decision_pos",
            "decision_neg",
            "input_pos",
            "input_neg",
            "response_pos",
            "response_neg",
        ]
    ]
