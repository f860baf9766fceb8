"""Baseline target responses: one per stage-0 input on the unmodified text (T = 0.7, top-p 0.95).

Computes `thinkbias.blindspot.calls:run_targets` on `thinkbias.blindspot.calls:target_requests` (the target role).
"""

from pathlib import Path

import pandas as pd

from thinkbias.blindspot.calls import run_targets, target_requests
from thinkbias.blindspot.clusters import stage_plan
from thinkbias.llm.roles import ModelRole
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0], metrics=snakemake.output.metrics) as logger:
    p = snakemake.params
    inputs = pd.read_parquet(snakemake.input.inputs).set_index("input_id")
    plan = stage_plan(pd.read_parquet(snakemake.input.clusters), 0, p.k0, p.max_stages)
    items = pd.DataFrame(
        {
            "concept_id": "",
            "input_id": list(plan.input_ids),
            "side": "base",
            "text": [inputs.loc[i, "text"] for i in plan.input_ids],
        }
    )
    job = Path(snakemake.input.job).read_text() if p.task == "hiring" else ""
    role = ModelRole.from_params(p, snakemake.input.weights)
    reqs = target_requests(items, Path(snakemake.input.prompt).read_text(), job, role)
    out = run_targets(role, reqs, p.task, p.force_decision, logger)
    items = pd.concat([items.drop(columns="text"), out], axis=1)
    logger.info(
        f"baseline: {len(items)} responses, {int(items['decision'].isna().sum())} unparsable decisions, "
        f"{int(items['forced'].sum())} forced"
    )
    items.drop(columns="concept_id").to_parquet(snakemake.output[0], index=False)
