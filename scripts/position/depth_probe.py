"""Depth-probe one generation shard: P(A..D) after the answer cue at each configured depth.

Computes `thinkbias.position.depth_probe:probe_depths` on the shard's own requests
(`thinkbias.position.generation:build_requests`), whose generations the engine finds in its cache.
"""

import pandas as pd

from thinkbias.llm import load_model_spec, open_engine
from thinkbias.llm.thinking import arm_prefill, thinking_instruction
from thinkbias.position.depth_probe import probe_depths
from thinkbias.position.generation import build_requests
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0], metrics=snakemake.output.metrics) as logger:
    p = snakemake.params
    prompts = pd.read_parquet(snakemake.input.prompts).iloc[p.start : p.stop]
    generations = pd.read_parquet(snakemake.input.generations)
    weights = snakemake.input.weights[0] if snakemake.input.weights else ""
    spec = load_model_spec(p.registry, p.model, weights=weights)
    mode = snakemake.wildcards.mode
    think = arm_prefill(spec, "think") if mode == "reasoning" else ""
    requests = build_requests(
        prompts, mode, think, arm_prefill(spec, "nothink"), thinking_instruction(spec), p.max_tokens
    )
    with open_engine(spec, p.cache_dir, n_threads=snakemake.threads) as engine:
        table = probe_depths(engine, requests, generations, mode, spec.think_close, p.depths, logger)
    table.to_parquet(snakemake.output.probes, index=False)
