"""Generate one arm (think or nothink) for one shard of a setting's prompts and read its P(Yes) probes in
the same pass: CDPG depths on the KV state generation left (think), the answer score (nothink)
(fairness steps 2 and 3).

Computes `thinkbias.fairness.generation:generate_and_probe_arm` on the engine of
`thinkbias.llm:open_engine`.
"""

import pandas as pd

from thinkbias.fairness.generation import generate_and_probe_arm
from thinkbias.fairness.prompts import shard_slice
from thinkbias.llm import load_model_spec, open_engine
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0], metrics=snakemake.output.metrics) as log:
    w, p = snakemake.wildcards, snakemake.params
    prompts = shard_slice(pd.read_parquet(snakemake.input.prompts), int(w.shard), p.shard_size)
    weights = snakemake.input.weights[0] if snakemake.input.weights else ""
    spec = load_model_spec(p.registry, w.model, weights=weights)
    with open_engine(spec, p.cache_dir, n_threads=snakemake.threads) as engine:
        gens, probes = generate_and_probe_arm(
            engine, prompts, w.arm, p.think_budget, p.answer_budget, list(p.depths), log
        )
        log.info("engine stats: %s", engine.stats)
    log.info(
        "%s/%s/%s shard %s: %d answers, status counts %s; %d sides probed, %d probe tokens evaluated",
        w.dataset,
        w.model,
        w.arm,
        w.shard,
        len(gens),
        gens["status"].value_counts().to_dict() if len(gens) else {},
        len(probes),
        int(probes["probe_tokens_evaluated"].sum()) if len(probes) else 0,
    )
    gens.to_parquet(snakemake.output.generations, index=False)
    probes.to_parquet(snakemake.output.probes, index=False)
