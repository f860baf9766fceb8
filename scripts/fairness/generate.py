"""Generate one arm (think or nothink) for one shard of a setting's prompts (fairness step 2)."""
import pandas as pd

from thinkbias.fairness.generation import generate_arm
from thinkbias.fairness.prompts import shard_slice
from thinkbias.llm import load_model_spec, open_engine
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as log:
    w, p = snakemake.wildcards, snakemake.params
    prompts = shard_slice(pd.read_parquet(snakemake.input.prompts), int(w.shard), p.shard_size)
    weights = snakemake.input.weights[0] if snakemake.input.weights else ""
    spec = load_model_spec(p.registry, w.model, weights=weights)
    with open_engine(spec, p.cache_dir, n_threads=snakemake.threads) as engine:
        gens = generate_arm(engine, prompts, w.arm, p.think_budget, p.answer_budget, log)
        log.info("engine stats: %s", engine.stats)
    log.info("%s/%s/%s shard %s: %d answers, status counts %s", w.dataset, w.model, w.arm, w.shard, len(gens),
             gens["status"].value_counts().to_dict() if len(gens) else {})
    gens.to_parquet(snakemake.output[0], index=False)
