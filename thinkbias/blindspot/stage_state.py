"""What a stage's judge and decision steps both start from: the concepts still active, the
stage's inputs, the response pairs and the per-concept tests (steps 1-2 of a stage)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from thinkbias.blindspot.calls import pairs_from_responses
from thinkbias.blindspot.clusters import StagePlan, stage_plan
from thinkbias.blindspot.stages import StageParams, concept_tests, stage_alpha


@dataclass(frozen=True)
class StageState:
    """One stage of one (model, task) audit, before verbalization verdicts."""

    stage: int
    active: list[str]
    entered: list[int]
    params: StageParams
    plan: StagePlan
    pairs: pd.DataFrame
    tests: pd.DataFrame


def stage_state(
    entry: dict,
    clusters: pd.DataFrame,
    responses: pd.DataFrame,
    stage: int,
    k0: int,
    max_stages: int | None,
    stage_params: dict,
) -> StageState:
    """Rebuild stage ``stage`` from the previous decision (``entry``: ``next_active``, ``entered``),
    the clusters and the responses gathered so far."""
    active = entry["next_active"]
    params = StageParams(**stage_params)
    plan = stage_plan(clusters, stage, k0, max_stages, params.last_stage)
    entered = entry["entered"] + [len(active)]
    pairs = pairs_from_responses(responses)
    tests = concept_tests(pairs, active, plan, stage_alpha(params, entered), params)
    return StageState(stage, active, entered, params, plan, pairs, tests)
