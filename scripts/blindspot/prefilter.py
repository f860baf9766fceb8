"""Baseline-variance input prefilter: ``responses_per_input`` target responses per input on the
unmodified text, the inputs ranked by the variance of their decisions, the top ``max_inputs`` kept and
the cluster table restricted to them.

Computes `thinkbias.blindspot.calls:run_targets` on `thinkbias.blindspot.prefilter:prefilter_items`
(the target role), then `thinkbias.blindspot.prefilter:acceptance_variance`,
`thinkbias.blindspot.prefilter:select_inputs` and `thinkbias.blindspot.prefilter:restrict_clusters`.
"""

from pathlib import Path

import pandas as pd

from thinkbias.blindspot.calls import run_targets, target_requests
from thinkbias.blindspot.prefilter import acceptance_variance, prefilter_items, restrict_clusters, select_inputs
from thinkbias.llm.roles import ModelRole
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0], metrics=snakemake.output.metrics) as logger:
    p = snakemake.params
    inputs = pd.read_parquet(snakemake.input.inputs).set_index("input_id")
    input_ids = sorted(inputs.index)  # ties in variance keep this order
    items = prefilter_items(input_ids, p.responses_per_input)
    items["concept_id"] = ""
    items["text"] = [inputs.loc[i, "text"] for i in items["input_id"]]
    job = Path(snakemake.input.job).read_text() if p.task == "hiring" else ""
    role = ModelRole.from_params(p, snakemake.input.weights)
    reqs = target_requests(
        items[["concept_id", "input_id", "side", "text"]], Path(snakemake.input.prompt).read_text(), job, role
    )
    out = run_targets(role, reqs, p.task, p.force_decision, logger)
    responses = pd.concat([items.drop(columns=["text", "concept_id"]), out], axis=1)
    table = select_inputs(acceptance_variance(responses, input_ids), p.max_inputs)
    kept = table.loc[table["kept"], "input_id"].tolist()
    logger.info(
        f"prefilter: {len(responses)} responses ({int(responses['decision'].isna().sum())} unparsable, "
        f"{int(responses['forced'].sum())} forced); {int((table['variance'] > 0).sum())} of {len(table)} inputs "
        f"vary; {len(kept)} kept (max_inputs {p.max_inputs})"
    )
    responses.to_parquet(snakemake.output.responses, index=False)
    table.to_csv(snakemake.output.table, index=False)
    restrict_clusters(pd.read_parquet(snakemake.input.clusters), kept).to_parquet(
        snakemake.output.clusters, index=False
    )
