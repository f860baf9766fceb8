"""Task inputs: the fairness study's sampled profiles (fairness tasks), a user-supplied dataset, or
seeded synthetic profiles rendered with the project's templates.

Computes `thinkbias.blindspot.fairness_tasks:fairness_inputs`, `thinkbias.blindspot.profiles:read_user_inputs` or
`thinkbias.blindspot.profiles:generate_inputs`.
"""

from thinkbias.blindspot.fairness_tasks import fairness_dataset, fairness_inputs
from thinkbias.blindspot.profiles import generate_inputs, read_user_inputs
from thinkbias.data.loaders import load_tabular
from thinkbias.data.verify import verify_manifest_files
from thinkbias.workflow import rule_logging
from thinkbias.yamlfile import read_yaml

with rule_logging(snakemake.log[0]) as logger:
    p = snakemake.params
    dataset = fairness_dataset(p.task)
    if dataset:
        if p.rewrite_enabled:
            raise ValueError(
                f"blindspot.rewrite.enabled is true, but task {p.task} audits the fairness study's "
                "rendered profiles, whose counterfactual pairs a rewrite would break: set "
                "blindspot.rewrite.enabled to false or leave the fairness tasks out of blindspot.tasks"
            )
        raw = list(snakemake.input.raw)
        verify_manifest_files(p.manifest, raw)  # before a byte is read
        records = load_tabular(dataset, raw)
        df = fairness_inputs(p.task, records, p.n_inputs, p.seed)
        logger.info(
            f"{p.task}: {len(df)} of {len(records)} {dataset} records (the fairness study's sample, seed {p.seed})"
        )
    elif p.user_path:
        df = read_user_inputs(p.user_path)
        logger.info(f"{p.task}: {len(df)} user-supplied inputs from {p.user_path}")
    else:
        names = read_yaml(snakemake.input.names)
        vocab = read_yaml(snakemake.input.vocab)
        df = generate_inputs(p.task, p.n_inputs, p.seed, names, vocab)
        logger.info(f"{p.task}: {len(df)} synthetic inputs (seed {p.seed})")
    df.to_parquet(snakemake.output[0], index=False)
