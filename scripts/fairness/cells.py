"""Retained pairs with their contingency cell, parse counts, and the asserted T^pair identities.

Computes `thinkbias.fairness.analysis:build_cells` (cells: `thinkbias.fairness.cells:assign_cells`;
identities: `thinkbias.fairness.transitions:check_cell_identities`).
"""

from thinkbias.fairness.analysis import build_cells
from thinkbias.fairness.io import read_predictions, write_table
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as log:
    cells, counts, identities = build_cells(read_predictions(snakemake.input[0]))
    cells.to_parquet(snakemake.output.cells, index=False)
    write_table(counts, snakemake.output.parse_csv, snakemake.output.parse_md, "Parsed answers and retained pairs", 0)
    write_table(
        identities,
        snakemake.output.identities_csv,
        snakemake.output.identities_md,
        "Cells b and c recomputed from T^pair",
        3,
    )
    log.info("%d retained pairs over %d settings; identities hold", len(cells), len(counts))
