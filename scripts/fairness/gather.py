"""Concatenate a setting's shards (both arms) into its predictions table and token-cost row.

Every side is probed while it is generated; the predictions keep the probes of retained pairs only
(answers parsed on both sides in both arms), the cost row counts every probe that was run.

Computes `thinkbias.fairness.generation:assemble_predictions` (pairs from
`thinkbias.fairness.generation:retained_pairs`) and `thinkbias.fairness.generation:cost_summary`.
"""

import pandas as pd

from thinkbias.fairness.generation import assemble_predictions, cost_summary, retained_pairs
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as log:
    w = snakemake.wildcards
    gens = pd.concat([pd.read_parquet(f) for f in snakemake.input.generations], ignore_index=True)
    parts = [pd.read_parquet(f) for f in snakemake.input.probes]
    parts = [p for p in parts if len(p)]
    probes = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["pair_id", "side", "arm"])
    keep = retained_pairs(gens)
    pred = assemble_predictions(gens, probes[probes["pair_id"].isin(keep)], w.model, snakemake.params.main_depth)
    pred.to_parquet(snakemake.output.predictions, index=False)
    pd.DataFrame([cost_summary(gens, probes, w.model, w.dataset)]).to_csv(snakemake.output.cost, index=False)
    log.info(
        "%s/%s: %d prediction rows, %d of %d pairs retained",
        w.dataset,
        w.model,
        len(pred),
        len(keep),
        gens["pair_id"].nunique(),
    )
