"""Optional LLM rewrite of rendered inputs into prose (figures kept); a copy when disabled.

Computes `thinkbias.llm.roles:run_role` on `thinkbias.blindspot.step_requests:rewrite_requests`.
"""

from pathlib import Path

import pandas as pd

from thinkbias.blindspot.step_requests import rewrite_requests
from thinkbias.llm.roles import ModelRole, run_role
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0], metrics=snakemake.output.metrics) as logger:
    p = snakemake.params
    df = pd.read_parquet(snakemake.input.inputs)
    if p.enabled:
        role = ModelRole.from_params(p, snakemake.input.weights)
        reqs = rewrite_requests(role, df, Path(snakemake.input.prompt).read_text(), p.task)
        gens = run_role(role, reqs, logger)
        new = [g.answer.strip() or g.text.strip() for g in gens]
        empty = sum(1 for t in new if not t)
        logger.info(f"rewrote {len(new) - empty} inputs; {empty} empty rewrites keep the rendered text")
        df["rendered_text"] = df["text"]
        df["text"] = [n if n else o for n, o in zip(new, df["text"])]
    df.to_parquet(snakemake.output[0], index=False)
