"""Bring-your-own generations: validate the external table and extract its records.

Computes `thinkbias.position.byo:read_byo_generations` (checked against the schema), then
`thinkbias.position.records:extract_records` (fallback cue words: `thinkbias.position.fallback_cues:load_cues`).
"""

from thinkbias.position.byo import read_byo_generations
from thinkbias.position.fallback_cues import load_cues
from thinkbias.position.records import extract_records
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as logger:
    table = read_byo_generations(snakemake.input[0], snakemake.params.orderings)
    p = snakemake.params
    records = extract_records(table, p.fallback, p.ccp_definition, load_cues(snakemake.input.cues))
    logger.info(
        f"{len(records)} external records; extracted {int(records['extracted'].sum())}; "
        f"{int(records['empty_text'].sum())} with an empty text (unparsed, no length)"
    )
    records.to_parquet(snakemake.output[0], index=False)
