"""Sample the 4-option questions of one benchmark (seeded) and write the item table.

Computes `thinkbias.position.items:four_option_items` of `thinkbias.data.loaders:load_mcq`, sampled by
`thinkbias.data.sampling:sample_rows`.
"""

from thinkbias.data.loaders import load_mcq
from thinkbias.data.sampling import sample_rows
from thinkbias.data.verify import verify_manifest_files
from thinkbias.position.items import four_option_items
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as logger:
    verify_manifest_files(snakemake.params.manifest, [snakemake.input.raw])  # before a byte is read
    mcq = load_mcq(snakemake.wildcards.benchmark, snakemake.input.raw, seed=snakemake.params.seed)
    items = four_option_items(mcq)
    logger.info(f"{snakemake.wildcards.benchmark}: {len(mcq)} items, {len(items)} with four options")
    sample = sample_rows(items, snakemake.params.n_questions, snakemake.params.seed, "item_id", salt="position")
    logger.info(f"sampled {len(sample)} questions")
    sample.to_csv(snakemake.output[0], index=False)
