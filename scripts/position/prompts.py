"""The four cyclic permutations of every sampled question (the prompts table)."""

import pandas as pd

from thinkbias.position.items import cyclic_permutations
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as logger:
    items = pd.read_csv(snakemake.input[0], keep_default_na=False, na_values=[""], dtype={"item_id": str})
    prompts = cyclic_permutations(items)
    logger.info(f"{len(prompts)} prompts from {len(items)} questions")
    prompts.to_parquet(snakemake.output[0], index=False)
