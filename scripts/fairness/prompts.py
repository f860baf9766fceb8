"""Sample N records of one dataset and render both counterfactual sides of each (fairness step 1)."""
from thinkbias.data.loaders import load_adult, load_compas, load_credit
from thinkbias.data.sampling import sample_rows
from thinkbias.data.verify import verify_manifest_files
from thinkbias.fairness.prompts import build_prompts, prepare_records
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as log:
    dataset = snakemake.wildcards.dataset
    raw = list(snakemake.input)
    verify_manifest_files(snakemake.params.manifest, raw)  # before a byte is read
    if dataset == "adult":
        records = load_adult(raw[0], raw[1])
    elif dataset == "compas":
        records = load_compas(raw[0])
    else:
        records = load_credit(raw[0])
    records = prepare_records(dataset, records)
    sample = sample_rows(records, snakemake.params.n_records, snakemake.params.seed, "record_id", f"fairness-{dataset}")
    prompts = build_prompts(dataset, sample)
    prompts.to_parquet(snakemake.output[0], index=False)
    log.info("%s: %d records sampled of %d, %d prompts (every pair checked: only protected words differ)",
             dataset, len(sample), len(records), len(prompts))
