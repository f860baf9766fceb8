"""Stage s: target responses to both sides of every active concept's pairs on the stage inputs
(earlier stages' responses reused; only new inputs are queried).

Computes `thinkbias.blindspot.calls:needed_responses`, then `thinkbias.blindspot.calls:run_targets`.
"""

import json
from pathlib import Path

import pandas as pd

from thinkbias.blindspot.calls import RESPONSE_COLUMNS, needed_responses, run_targets, target_requests
from thinkbias.blindspot.clusters import stage_plan
from thinkbias.llm.roles import ModelRole
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0], metrics=snakemake.output.metrics) as logger:
    p = snakemake.params
    stage = int(snakemake.wildcards.stage)
    entry = json.loads(Path(snakemake.input.entry).read_text())
    active = entry["next_active"]
    plan = stage_plan(pd.read_parquet(snakemake.input.clusters), stage, p.k0, p.max_stages)
    previous = pd.read_parquet(snakemake.input.previous) if snakemake.input.get("previous") else None
    variations = pd.read_parquet(snakemake.input.variations)
    need = needed_responses(list(plan.input_ids), active, variations, previous)
    job = Path(snakemake.input.job).read_text() if p.task == "hiring" else ""
    role = ModelRole.from_params(p, snakemake.input.weights)
    reqs = target_requests(need, Path(snakemake.input.prompt).read_text(), job, role)
    logger.info(
        f"stage {stage}: {plan.n_inputs}/{plan.n_total} inputs, {len(active)} active concepts, "
        f"{len(need)} new responses"
    )
    out = run_targets(role, reqs, p.task, p.force_decision, logger)
    new = pd.concat([need.drop(columns="text").reset_index(drop=True), out], axis=1).assign(stage_added=stage)
    frames = [new[RESPONSE_COLUMNS]]
    if previous is not None:
        keep = previous["concept_id"].isin(active) & previous["input_id"].isin(set(plan.input_ids))
        frames.insert(0, previous[keep][RESPONSE_COLUMNS])
    out = pd.concat(frames, ignore_index=True)
    logger.info(
        f"stage {stage}: {len(out)} responses ({int(out['decision'].isna().sum())} unparsable decisions, "
        f"{int(out['forced'].sum())} forced)"
    )
    out.to_parquet(snakemake.output[0], index=False)
