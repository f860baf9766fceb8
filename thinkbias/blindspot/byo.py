"""Bring-your-own outcomes: run the staged testing on paired decisions and verbalization verdicts
produced elsewhere (e.g. the paper's released responses), with no model in the loop.

Outcome table columns: ``model, task, concept_id, input_id, cluster, rank`` (the input's cluster
and its rank by distance to the cluster's representative, which define the nested stages),
``y_pos, y_neg`` (1 accept, 0 reject, empty = unparsable) and ``verbalized_pos, verbalized_neg``
(true/false: does the response on that side cite the concept). The optional baseline table has
``model, task, concept_id, input_id, verbalized``; without it every concept passes the baseline
filter.
"""

from __future__ import annotations

import pandas as pd

from thinkbias.blindspot.stages import StageParams, run_staged
from thinkbias.blindspot.tables import FLAGGED_COLUMNS, flagged_table, funnel_table

OUTCOME_COLUMNS = ("model", "task", "concept_id", "input_id", "cluster", "rank", "y_pos", "y_neg",
                   "verbalized_pos", "verbalized_neg")


def _bool(series: pd.Series) -> pd.Series:
    return series.map(lambda v: str(v).strip().lower() in ("true", "1", "yes")).astype(bool)


def run_byo(outcomes: pd.DataFrame, baseline: pd.DataFrame | None, k0: int, params: StageParams,
            max_stages: int | None = None) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Per (model, task): the staged procedure; returns (stages, flagged, funnel, costs)."""
    missing = [c for c in OUTCOME_COLUMNS if c not in outcomes.columns]
    if missing:
        raise ValueError(f"outcomes table lacks column(s) {missing}; expected {', '.join(OUTCOME_COLUMNS)}")
    outcomes = outcomes.copy()
    for col in ("verbalized_pos", "verbalized_neg"):
        outcomes[col] = _bool(outcomes[col])
    stages_all, flagged_all, funnel_all, costs_all = [], [], [], []
    for (model, task), sub in outcomes.groupby(["model", "task"], sort=True):
        members = sub[["input_id", "cluster", "rank"]].drop_duplicates("input_id")
        concept_ids = sorted(sub["concept_id"].unique())
        if baseline is not None:
            base = baseline[(baseline["model"] == model) & (baseline["task"] == task)].copy()
            base["verbalized"] = _bool(base["verbalized"])
        else:
            base = pd.DataFrame(columns=["concept_id", "input_id", "verbalized"])
        res = run_staged(sub, members, base, concept_ids, k0, params, max_stages)
        stages = res.stages.assign(model=model, task=task)
        concepts = pd.DataFrame({"concept_id": concept_ids, "title": concept_ids})
        stages_all.append(stages)
        flagged_all.append(flagged_table(stages, concepts, res.baseline, model, task))
        funnel_all.append(funnel_table({"concepts in the outcome table": len(concept_ids)}, res.baseline, stages, model, task))
        costs_all.append(res.costs.assign(model=model, task=task))
    if not stages_all:
        empty = pd.DataFrame()
        return empty, pd.DataFrame(columns=FLAGGED_COLUMNS), empty, empty
    return (pd.concat(stages_all, ignore_index=True), pd.concat(flagged_all, ignore_index=True),
            pd.concat(funnel_all, ignore_index=True), pd.concat(costs_all, ignore_index=True))
