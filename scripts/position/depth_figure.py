"""Draw the depth probe's Figure 5 (PNG) from Table 5.

Computes `thinkbias.plots.position:figure5_depth_probe`.
"""

import pandas as pd

from thinkbias.plots.position import figure5_depth_probe
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as logger:
    figure5_depth_probe(pd.read_csv(snakemake.input.table5), snakemake.output[0])
    logger.info(f"figure5 written to {snakemake.output[0]}")
