"""Bring-your-own outcomes: the staged testing on decisions and verdicts made elsewhere.

Computes `thinkbias.blindspot.byo:run_byo` (staged testing: `thinkbias.blindspot.stages:run_staged`) on
`thinkbias.blindspot.byo:read_outcomes` and `thinkbias.blindspot.byo:read_baseline`.
"""

from pathlib import Path

from thinkbias.blindspot.byo import read_baseline, read_outcomes, run_byo
from thinkbias.blindspot.stages import StageParams
from thinkbias.blindspot.report import table_markdown
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as logger:
    p = snakemake.params
    outcomes = read_outcomes(snakemake.input.outcomes)
    baseline = read_baseline(snakemake.input.baseline) if snakemake.input.baseline else None
    stages, flagged, funnel, costs = run_byo(outcomes, baseline, p.k0, StageParams(**p.stage_params), p.max_stages)
    stages.to_csv(snakemake.output.stages, index=False)
    flagged.to_csv(snakemake.output.flagged, index=False)
    Path(snakemake.output.flagged_md).write_text(table_markdown(flagged))
    funnel.to_csv(snakemake.output.funnel, index=False)
    costs.to_csv(snakemake.output.costs, index=False)
    logger.info(f"{len(outcomes)} outcome rows; {len(flagged)} flagged")
