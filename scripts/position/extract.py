"""Final answer, extraction status, trajectory, CCP and switching for every record of a configuration.

Computes `thinkbias.position.records:extract_records` (answer: `thinkbias.position.extract:extract_final_answer`,
fallback cue words `thinkbias.position.fallback_cues:load_cues`;
CCP: `thinkbias.position.trajectory:commitment_change_point`).
"""

import pandas as pd

from thinkbias.position.fallback_cues import load_cues
from thinkbias.position.records import extract_records
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as logger:
    gens = pd.read_parquet(snakemake.input.generations)
    prompts = pd.read_parquet(snakemake.input.prompts, columns=["question_id", "question_order"]).drop_duplicates()
    gens = gens.merge(prompts, on="question_id", how="left")
    p = snakemake.params
    records = extract_records(gens, p.fallback, p.ccp_definition, load_cues(snakemake.input.cues))
    logger.info(
        f"{len(records)} records; extracted {int(records['extracted'].sum())}; "
        f"statuses {records['extraction_status'].value_counts().to_dict()}"
    )
    records.to_parquet(snakemake.output[0], index=False)
