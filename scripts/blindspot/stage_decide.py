"""Stage s decision (a checkpoint): McNemar, futility, variation verbalization filter, efficacy;
writes the concepts carried to stage s + 1 and whether the loop is done."""
import json
from pathlib import Path

import pandas as pd

from thinkbias.blindspot.calls import pairs_from_responses, verdict_pairs
from thinkbias.blindspot.clusters import stage_plan
from thinkbias.blindspot.stages import StageParams, decide, stage_alpha, concept_tests
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as logger:
    p = snakemake.params
    stage = int(snakemake.wildcards.stage)
    entry = json.loads(Path(snakemake.input.entry).read_text())
    active = entry["next_active"]
    params = StageParams(**p.stage_params)
    plan = stage_plan(pd.read_parquet(snakemake.input.clusters), stage, p.k0, p.max_stages)
    responses = pd.read_parquet(snakemake.input.responses)
    verdicts = pd.read_parquet(snakemake.input.verdicts)
    entered = entry["entered"] + [len(active)]
    pairs = pairs_from_responses(responses)
    tests = concept_tests(pairs, active, plan, stage_alpha(entered, params.alpha), params)
    result = decide(tests, pairs, verdict_pairs(verdicts), params) if len(tests) else tests.assign(status=[])
    result.to_csv(snakemake.output.tests, index=False)
    next_active = result.loc[result["status"] == "continue", "concept_id"].tolist() if len(result) else []
    new_target = int((responses["stage_added"] == stage).sum())
    judge_calls = int(verdicts["new"].sum()) if len(verdicts) else 0
    decision = {
        "stage": stage, "n_inputs": plan.n_inputs, "n_total": plan.n_total, "is_last": plan.is_last,
        "active": active, "entered": entered, "next_active": next_active,
        "done": bool(plan.is_last or not next_active),
        "target_calls": new_target, "judge_calls": judge_calls, "n_pairs": int(len(pairs)),
        "n_flips": int(result["n_flips"].sum()) if len(result) else 0,
        "status": dict(zip(result.get("concept_id", []), result.get("status", []))),
    }
    logger.info(f"stage {stage}: " + ", ".join(f"{c}={s}" for c, s in decision["status"].items()))
    Path(snakemake.output.decision).write_text(json.dumps(decision, indent=1))
