"""Combine every setting's predictions into the run's predictions table (the documented schema) and cost table.

Computes `pandas:concat` (no instrument: rows are only stacked and sorted).
"""

import pandas as pd

from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as log:
    pred = pd.concat([pd.read_parquet(f) for f in snakemake.input.predictions], ignore_index=True)
    pred = pred.sort_values(["model", "dataset", "pair_id", "side", "arm"], kind="stable")
    pred.to_csv(snakemake.output.predictions, index=False)
    pd.concat([pd.read_csv(f) for f in snakemake.input.cost], ignore_index=True).to_csv(
        snakemake.output.cost, index=False
    )
    log.info("%d prediction rows over %d settings", len(pred), pred.groupby(["model", "dataset"]).ngroups)
