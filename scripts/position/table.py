"""Write one of the study's tables (CSV + Markdown) from the per-question metrics.

Computes, per table:

- table1: `thinkbias.position.tables:partial_correlation_table` -> `thinkbias.stats.partial_corr:partial_correlation`
- table2: `thinkbias.position.questions:configuration_summary`
- table3: `thinkbias.position.tables:robustness_table` -> `thinkbias.position.lengthbins:monotonicity`
- table4: `thinkbias.position.tables:wilcoxon_table` (`scipy.stats:wilcoxon`)
- quartiles: `thinkbias.position.tables:quartile_table`
"""

import pandas as pd

from thinkbias.markdown import markdown_table
from thinkbias.position.questions import configuration_summary
from thinkbias.position.tables import (
    partial_correlation_table,
    quartile_table,
    robustness_table,
    wilcoxon_table,
)
from thinkbias.workflow import rule_logging

TITLES = {
    "table1": "Table 1: partial correlation rho(length, PBS | accuracy) per configuration",
    "table2": "Table 2: per-configuration summary with extraction rates",
    "table3": "Table 3: length-bin robustness (strict monotonicity and end-point gradient)",
    "table4": "Table 4: one-sided paired Wilcoxon signed-rank test, reasoning PBS > reference PBS",
    "quartiles": "Mean PBS by length quartile (Figures 1 and 2)",
}

with rule_logging(snakemake.log[0]) as logger:
    which = snakemake.params.which
    questions = pd.read_csv(snakemake.input.questions, dtype={"question_id": str})
    if which == "table1":
        c = snakemake.params.correlation
        table = partial_correlation_table(questions, scale=c["length_scale"], method=c["method"])
    elif which == "table2":
        table = configuration_summary(pd.read_parquet(snakemake.input.records), questions)
    elif which == "table3":
        table = robustness_table(questions, snakemake.params.bins)
    elif which == "table4":
        table = wilcoxon_table(questions, snakemake.params.pairs)
    elif which == "quartiles":
        table = quartile_table(questions, 4)
    else:
        raise ValueError(f"unknown table '{which}'")
    logger.info(f"{which}: {len(table)} rows")
    table.to_csv(snakemake.output.csv, index=False)
    with open(snakemake.output.markdown, "w") as fh:
        fh.write(f"## {TITLES[which]}\n\n" + markdown_table(table, missing="-"))
