"""The option orderings of every sampled question (the prompts table): 4 cyclic shifts or all 24.

Computes `thinkbias.position.items:permutations_table`.
"""

import pandas as pd

from thinkbias.position.items import permutations_table
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as logger:
    items = pd.read_csv(snakemake.input[0], keep_default_na=False, na_values=[""], dtype={"item_id": str})
    prompts = permutations_table(items, snakemake.params.orderings)
    logger.info(f"{len(prompts)} prompts from {len(items)} questions")
    prompts.to_parquet(snakemake.output[0], index=False)
