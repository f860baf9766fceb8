"""Concatenate the shards of one configuration in shard order.

Computes `pandas:concat` (no instrument: shards are only stacked).
"""

import pandas as pd

from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as logger:
    parts = [pd.read_parquet(path) for path in snakemake.input]
    table = pd.concat([p for p in parts if len(p)] or parts[:1], ignore_index=True)
    logger.info(f"{len(table)} generations from {len(parts)} shards")
    table.to_parquet(snakemake.output[0], index=False)
