"""Stage s decision (a checkpoint): McNemar, futility, variation verbalization filter, efficacy;
writes the concepts carried to stage s + 1 and whether the loop is done.

Computes `thinkbias.blindspot.stage_state:stage_state`, whose
`thinkbias.blindspot.stages:concept_tests` runs McNemar (`thinkbias.stats.mcnemar:mcnemar_test`), the
futility check (`thinkbias.stats.sequential:is_futile`) and the O'Brien-Fleming threshold
(`thinkbias.stats.sequential:obrien_fleming_threshold`, or with `boundary: exact`
`thinkbias.stats.group_sequential:exact_obrien_fleming_thresholds`); then `thinkbias.blindspot.stages:decide`.
"""

import json
from pathlib import Path

import pandas as pd

from thinkbias.blindspot.calls import verdict_pairs
from thinkbias.blindspot.stage_state import stage_state
from thinkbias.blindspot.stages import decide
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as logger:
    p = snakemake.params
    responses = pd.read_parquet(snakemake.input.responses)
    verdicts = pd.read_parquet(snakemake.input.verdicts)
    state = stage_state(
        json.loads(Path(snakemake.input.entry).read_text()),
        pd.read_parquet(snakemake.input.clusters),
        responses,
        int(snakemake.wildcards.stage),
        p.k0,
        p.max_stages,
        p.stage_params,
    )
    stage, plan, tests, pairs = state.stage, state.plan, state.tests, state.pairs
    active, entered = state.active, state.entered
    result = decide(tests, pairs, verdict_pairs(verdicts), state.params) if len(tests) else tests.assign(status=[])
    result.to_csv(snakemake.output.tests, index=False)
    next_active = result.loc[result["status"] == "continue", "concept_id"].tolist() if len(result) else []
    new_target = int((responses["stage_added"] == stage).sum())
    judge_calls = int(verdicts["new"].sum()) if len(verdicts) else 0
    decision = {
        "stage": stage,
        "n_inputs": plan.n_inputs,
        "n_total": plan.n_total,
        "is_last": plan.is_last,
        "active": active,
        "entered": entered,
        "next_active": next_active,
        "done": bool(plan.is_last or not next_active),
        "target_calls": new_target,
        "judge_calls": judge_calls,
        "n_pairs": int(len(pairs)),
        "n_flips": int(result["n_flips"].sum()) if len(result) else 0,
        "status": dict(zip(result.get("concept_id", []), result.get("status", []))),
    }
    logger.info(f"stage {stage}: " + ", ".join(f"{c}={s}" for c, s in decision["status"].items()))
    Path(snakemake.output.decision).write_text(json.dumps(decision, indent=1))
