"""One analysis product (table or figure data) from the retained pairs."""
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
