"""P(Yes) probes of one arm for one shard: CDPG depths (think) or the answer score (nothink) (fairness step 3).

Only pairs whose answers parse on both sides in both arms are probed (the others are not analysed).
"""
import pandas as pd

from thinkbias.fairness.generation import probe_arm, retained_pairs
from thinkbias.llm import load_model_spec, open_engine
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as log:
    w, p = snakemake.wildcards, snakemake.params
    gens = pd.concat([pd.read_parquet(snakemake.input.think), pd.read_parquet(snakemake.input.nothink)],
                     ignore_index=True)
    keep = retained_pairs(gens)
    weights = snakemake.input.weights[0] if snakemake.input.weights else ""
    spec = load_model_spec(p.registry, w.model, weights=weights)
    with open_engine(spec, p.cache_dir, n_threads=snakemake.threads) as engine:
        probes = probe_arm(engine, gens, w.arm, list(p.depths), log, only_pairs=keep)
        log.info("engine stats: %s", engine.stats)
    log.info("%s/%s/%s shard %s: %d sides probed (%d retained pairs)", w.dataset, w.model, w.arm, w.shard,
             len(probes), len(keep))
    probes.to_parquet(snakemake.output[0], index=False)
