"""Draw one figure from its table.

Computes `thinkbias.plots.fairness:plot_figure2`, `thinkbias.plots.fairness:plot_cdpg_curves`
(Figure 3, Appendix C) or `thinkbias.plots.fairness:plot_figure4`.
"""

import pandas as pd

from thinkbias.plots.fairness import plot_cdpg_curves, plot_figure2, plot_figure4
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as log:
    name = snakemake.wildcards.figure
    table = pd.read_csv(snakemake.input[0])
    if name == "figure2":
        plot_figure2(table, snakemake.output[0])
    elif name == "figure3":
        plot_cdpg_curves(table, snakemake.output[0], K=snakemake.params.main_depth)
    elif name == "appendix_c":
        plot_cdpg_curves(table, snakemake.output[0], K=None)
    else:
        plot_figure4(table, snakemake.output[0])
    log.info("%s drawn from %d rows", name, len(table))
