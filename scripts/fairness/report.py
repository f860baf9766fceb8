"""The run's Markdown report: reproduced numbers beside the paper's (resources/paper/fairness.yaml).

Computes `thinkbias.fairness.report:render_report` (and `thinkbias.fairness.report:wall_time_summary`,
`thinkbias.llm.metrics:engine_build_section`).
"""

import glob
from pathlib import Path

import pandas as pd

from thinkbias.fairness.report import render_report, wall_time_summary
from thinkbias.llm.metrics import engine_build_section
from thinkbias.workflow import rule_logging
from thinkbias.yamlfile import read_yaml

with rule_logging(snakemake.log[0]) as log:
    tables = {Path(f).stem: pd.read_csv(f) for f in snakemake.input.tables}
    paper = read_yaml(snakemake.input.paper)
    cost = (
        pd.concat([pd.read_csv(f) for f in snakemake.input.cost], ignore_index=True)
        if snakemake.input.cost
        else pd.DataFrame(columns=["model", "dataset"])
    )
    counts = tables["parse_counts"]
    models = sorted(counts["model"].astype(str).unique())
    datasets = sorted(counts["dataset"].astype(str).unique())
    bench = snakemake.params.benchmarks
    wall = wall_time_summary(sorted(glob.glob(f"{bench}/**/*.tsv", recursive=True)), bench)
    text = render_report(snakemake.params.run, tables, paper, models, datasets, cost, wall)
    text += "\n" + engine_build_section(snakemake.input.engines)
    Path(snakemake.output[0]).write_text(text)
    log.info("report written: %d lines", text.count("\n"))
