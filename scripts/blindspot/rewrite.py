"""Optional LLM rewrite of rendered inputs into prose (figures kept); a copy when disabled.

Computes `thinkbias.blindspot.calls:run_on_model` on the rewrite requests.
"""
from pathlib import Path
from string import Template

import pandas as pd

from thinkbias.blindspot.calls import request_seed, run_on_model
from thinkbias.blindspot.tasks import task_spec
from thinkbias.llm.types import Request, Sampling
from thinkbias.workflow import rule_logging

STYLES = {"loan": "a 3-4 sentence first-person loan request",
          "admissions": "a 5-7 sentence third-person admissions-file summary",
          "hiring": "a plain-text resume with the same header lines"}

with rule_logging(snakemake.log[0], metrics=snakemake.output.metrics) as logger:
    p = snakemake.params
    df = pd.read_parquet(snakemake.input.inputs)
    if p.enabled:
        template = Path(snakemake.input.prompt).read_text()
        spec = task_spec(p.task)
        reqs = [Request.chat(Template(template).safe_substitute(input_name=spec.input_name, style=STYLES[p.task], text=t),
                             sampling=Sampling(temperature=p.temperature, top_p=1.0, max_tokens=p.max_tokens,
                                               seed=request_seed(p.seed, "rewrite", i)))
                for i, t in zip(df["input_id"], df["text"])]
        weights = snakemake.input.weights[0] if snakemake.input.weights else ""
        gens = run_on_model(p.model, p.registry, weights, p.cache_dir, reqs, logger)
        new = [g.answer.strip() or g.text.strip() for g in gens]
        empty = sum(1 for t in new if not t)
        logger.info(f"rewrote {len(new) - empty} inputs; {empty} empty rewrites keep the rendered text")
        df["rendered_text"] = df["text"]
        df["text"] = [n if n else o for n, o in zip(new, df["text"])]
    df.to_parquet(snakemake.output[0], index=False)
