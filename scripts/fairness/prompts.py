"""Sample N records of one dataset and render both counterfactual sides of each (fairness step 1).

Computes `thinkbias.tasks.records:sample_records` of `thinkbias.data.loaders:load_tabular`, then
`thinkbias.fairness.prompts:build_prompts`.
"""

from thinkbias.data.loaders import load_tabular
from thinkbias.data.verify import verify_manifest_files
from thinkbias.fairness.prompts import build_prompts
from thinkbias.tasks.records import sample_records
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as log:
    dataset = snakemake.wildcards.dataset
    raw = list(snakemake.input)
    verify_manifest_files(snakemake.params.manifest, raw)  # before a byte is read
    records = load_tabular(dataset, raw)
    sample = sample_records(dataset, records, snakemake.params.n_records, snakemake.params.seed)
    prompts = build_prompts(dataset, sample)
    prompts.to_parquet(snakemake.output[0], index=False)
    log.info(
        "%s: %d records sampled of %d, %d prompts (every pair checked: only protected words differ)",
        dataset,
        len(sample),
        len(records),
        len(prompts),
    )
