"""Fairness tasks: is the protected attribute the fairness study varies by hand rediscovered, and what else is flagged?

Computes `thinkbias.blindspot.rediscovery:rediscovery_row` per audit, then
`thinkbias.blindspot.rediscovery:rediscovery_table`.
"""

from pathlib import Path

import pandas as pd

from thinkbias.blindspot.rediscovery import rediscovery_row, rediscovery_table
from thinkbias.blindspot.report import table_markdown
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as logger:
    p, inp = snakemake.params, snakemake.input
    by_task = {t: (pd.read_parquet(g), pd.read_parquet(m)) for t, g, m in zip(p.tasks, inp.generated, inp.merged)}
    rows = []
    for stages, flagged in zip(inp.stages, inp.flagged):
        model, task = Path(stages).parts[-3], Path(stages).parts[-2]  # <model>/<task>/stages.csv
        assert Path(flagged).parts[-3:-1] == (model, task), (stages, flagged)
        rows.append(rediscovery_row(model, task, *by_task[task], pd.read_csv(stages), pd.read_csv(flagged)))
    table = rediscovery_table(rows)
    table.to_csv(snakemake.output.csv, index=False)
    Path(snakemake.output.md).write_text(table_markdown(table))
    for r in table.itertuples(index=False):
        logger.info(
            f"{r.model}/{r.task}: {r.protected_attribute} hypothesized={r.hypothesized} tested={r.tested} "
            f"flagged={r.flagged}; {r.n_other_flagged} other concept(s) flagged"
        )
