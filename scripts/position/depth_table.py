"""Write the depth probe's Table 5 (CSV + Markdown) from the probe shards and the per-question metrics.

Computes `thinkbias.position.depth_mass:depth_trajectory_table`.
"""

import pandas as pd

from thinkbias.markdown import markdown_table
from thinkbias.position.depth_mass import depth_trajectory_table
from thinkbias.position.depth_probe import PROBE_COLUMNS
from thinkbias.workflow import rule_logging

TITLE = (
    "Table 5 (beyond the paper): depth probe, position-preferred probability mass against depth "
    "(mean over questions; groups: all, length quartiles, correct / incorrect)"
)

with rule_logging(snakemake.log[0]) as logger:
    files = list(snakemake.input.probes)  # none for bring-your-own generations
    probes = (
        pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
        if files
        else pd.DataFrame(columns=list(PROBE_COLUMNS))
    )
    questions = pd.read_csv(snakemake.input.questions, dtype={"question_id": str})
    table = depth_trajectory_table(probes, questions)
    logger.info(f"table5: {len(probes)} probes, {len(table)} rows")
    table.to_csv(snakemake.output.csv, index=False)
    with open(snakemake.output.markdown, "w") as fh:
        fh.write(f"## {TITLE}\n\n" + markdown_table(table, missing="-"))
