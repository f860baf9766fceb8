"""All records of the study in one table, and the per-question metrics.

Computes `thinkbias.position.questions:question_metrics` (PBS: `thinkbias.position.pbs:position_bias_score`).
"""

import pandas as pd

from thinkbias.position.questions import question_metrics
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as logger:
    records = pd.concat([pd.read_parquet(p) for p in snakemake.input], ignore_index=True)
    questions = question_metrics(records, norm=snakemake.params.pbs_norm)
    logger.info(f"{len(records)} records, {len(questions)} question rows")
    records.to_parquet(snakemake.output.records, index=False)
    questions.to_csv(snakemake.output.questions, index=False)
