"""One analysis product (table or figure data) from the retained pairs.

Computes the product's builder in `thinkbias.fairness.analysis.PRODUCTS`, each one call to its
instrument:

- table2: `thinkbias.fairness.analysis:table2` -> `thinkbias.fairness.cells:contingency_table`
- figure2: `thinkbias.fairness.analysis:figure2` -> `thinkbias.fairness.disparity:disparity_table`
- figure3: `thinkbias.fairness.analysis:figure3` -> `thinkbias.fairness.cdpg:mean_abs_cdpg` of
  `thinkbias.fairness.cdpg:cdpg_long`
- appendix_c_curves, appendix_c: `thinkbias.fairness.analysis:appendix_c_curves`,
  `thinkbias.fairness.analysis:appendix_c` -> `thinkbias.fairness.cdpg:slope_table`
- figure4: `thinkbias.fairness.analysis:figure4` -> `thinkbias.fairness.cdpg:anchor_mover_trajectories`
- table3, table3_gaps: `thinkbias.fairness.analysis:table3`, `thinkbias.fairness.analysis:table3_gaps` ->
  `thinkbias.fairness.transitions:group_transitions`, `thinkbias.fairness.transitions:group_gaps`
- table4: `thinkbias.fairness.analysis:table4` -> `thinkbias.fairness.transitions:pair_state_matrix`
- table5: `thinkbias.fairness.analysis:table5` -> `thinkbias.fairness.transitions:directional_decomposition`
"""

import pandas as pd

from thinkbias.fairness.analysis import DIGITS, PRODUCTS
from thinkbias.fairness.io import write_table
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as log:
    name, p = snakemake.wildcards.product, snakemake.params
    cells = pd.read_parquet(snakemake.input[0])
    table = PRODUCTS[name](cells, n_boot=p.n_boot, seed=p.seed, main_K=p.main_depth, noise_floor=p.noise_floor)
    write_table(table, snakemake.output.csv, snakemake.output.md, name, DIGITS.get(name, 3))
    log.info("%s: %d rows", name, len(table))
