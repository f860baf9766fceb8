"""Bring-your-own outcomes: the staged testing on decisions and verdicts made elsewhere.

Computes `thinkbias.blindspot.byo:run_byo` (staged testing: `thinkbias.blindspot.stages:run_staged`) on
`thinkbias.blindspot.byo:read_outcomes` and `thinkbias.blindspot.byo:read_baseline`, with the stage
parameters of `blindspot.byo.stages` (`thinkbias.blindspot.stage_params:stage_parameters`, the paper's by
default); the report is `thinkbias.blindspot.report:render_byo_report`.
"""

from pathlib import Path


from thinkbias.blindspot.byo import read_baseline, read_outcomes, run_byo
from thinkbias.blindspot.report import render_byo_report, stage_parameters_line, table_markdown
from thinkbias.blindspot.stage_params import StageParams, stage_parameters
from thinkbias.workflow import rule_logging
from thinkbias.yamlfile import read_yaml

with rule_logging(snakemake.log[0]) as logger:
    p = snakemake.params
    outcomes = read_outcomes(snakemake.input.outcomes)
    baseline = read_baseline(snakemake.input.baseline) if snakemake.input.baseline else None
    params = StageParams(**p.stage_params)
    used = stage_parameters(p.k0, p.max_stages, params)
    logger.info(stage_parameters_line(used))
    stages, flagged, funnel, costs = run_byo(outcomes, baseline, p.k0, params, p.max_stages)
    stages.to_csv(snakemake.output.stages, index=False)
    flagged.to_csv(snakemake.output.flagged, index=False)
    Path(snakemake.output.flagged_md).write_text(stage_parameters_line(used) + "\n\n" + table_markdown(flagged))
    funnel.to_csv(snakemake.output.funnel, index=False)
    costs.to_csv(snakemake.output.costs, index=False)
    used.to_csv(snakemake.output.stage_params, index=False)
    sources = {
        "bring-your-own outcomes": snakemake.input.outcomes,
        "bring-your-own baseline": snakemake.input.baseline or "none (every concept passes the baseline filter)",
    }
    paper = read_yaml(snakemake.input.paper)
    Path(snakemake.output.report).write_text(render_byo_report(flagged, funnel, costs, stages, used, paper, sources))
    logger.info(f"{len(outcomes)} outcome rows; {len(flagged)} flagged")
