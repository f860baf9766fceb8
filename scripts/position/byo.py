"""Bring-your-own generations: validate the external table and extract its records."""

from thinkbias.position.byo import normalise_byo, read_table
from thinkbias.position.records import extract_records
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as logger:
    table = normalise_byo(read_table(snakemake.input[0]))
    records = extract_records(table, fallback=snakemake.params.fallback, ccp_definition=snakemake.params.ccp_definition)
    logger.info(f"{len(records)} external records; extracted {int(records['extracted'].sum())}")
    records.to_parquet(snakemake.output[0], index=False)
