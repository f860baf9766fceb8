"""Draw one of the study's figures (PNG).

Computes `thinkbias.plots.position:figure1_quartiles`, `thinkbias.plots.position:figure2_panels`,
`thinkbias.plots.position:figure3_truncation` or `thinkbias.plots.position:figure4_regimes`.
"""

import pandas as pd

from thinkbias.plots import position as plots
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as logger:
    which = snakemake.params.which
    out = snakemake.output[0]
    if which == "figure1":
        plots.figure1_quartiles(pd.read_csv(snakemake.input.quartiles), out)
    elif which == "figure2":
        plots.figure2_panels(pd.read_csv(snakemake.input.quartiles), pd.read_csv(snakemake.input.table1), out)
    elif which == "figure3":
        plots.figure3_truncation(pd.read_csv(snakemake.input.buckets), out)
    elif which == "figure4":
        plots.figure4_regimes(pd.read_csv(snakemake.input.summary), out)
    else:
        raise ValueError(f"unknown figure '{which}'")
    logger.info(f"{which} written to {out}")
