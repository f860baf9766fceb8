"""Task inputs: a user-supplied dataset, or seeded synthetic profiles rendered with the project's templates."""
from pathlib import Path

import yaml

from thinkbias.blindspot.profiles import generate_inputs, read_user_inputs
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as logger:
    p = snakemake.params
    if p.user_path:
        df = read_user_inputs(p.user_path)
        logger.info(f"{p.task}: {len(df)} user-supplied inputs from {p.user_path}")
    else:
        names = yaml.safe_load(Path(snakemake.input.names).read_text())
        vocab = yaml.safe_load(Path(snakemake.input.vocab).read_text())
        df = generate_inputs(p.task, p.n_inputs, p.seed, names, vocab)
        logger.info(f"{p.task}: {len(df)} synthetic inputs (seed {p.seed})")
    df.to_parquet(snakemake.output[0], index=False)
