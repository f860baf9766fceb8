"""Generate one shard of a (benchmark, model, mode) configuration, greedy, through the engine; with
depths to probe (the depth probe on, a probed mode), generate and probe in one pass.

Computes `thinkbias.position.generation:build_requests`, run by `thinkbias.llm.run:run_requests`
or, probed, by `thinkbias.position.depth_probe:generate_and_probe_depths`, then
`thinkbias.position.generation:generations_table` and `thinkbias.position.depth_probe:depth_probe_table`.
"""

import pandas as pd

from thinkbias.llm import load_model_spec, open_engine
from thinkbias.llm.run import run_requests
from thinkbias.llm.thinking import arm_prefill, thinking_instruction
from thinkbias.position.depth_probe import depth_probe_table, empty_probe_table, generate_and_probe_depths
from thinkbias.position.generation import build_requests, generations_table
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0], metrics=snakemake.output.metrics) as logger:
    p = snakemake.params
    prompts = pd.read_parquet(snakemake.input.prompts).iloc[p.start : p.stop]
    weights = snakemake.input.weights[0] if snakemake.input.weights else ""
    spec = load_model_spec(p.registry, p.model, weights=weights)
    mode = snakemake.wildcards.mode
    think = arm_prefill(spec, "think") if mode == "reasoning" else ""
    nothink = arm_prefill(spec, "nothink")
    requests = build_requests(prompts, mode, think, nothink, thinking_instruction(spec), p.max_tokens)
    logger.info(f"{p.model}/{mode}: prompts {p.start}-{p.stop} ({len(requests)} requests)")
    gens, probes = [], empty_probe_table()
    if requests:
        with open_engine(spec, p.cache_dir, n_threads=snakemake.threads) as engine:
            if p.depths:  # the depth probe in the same pass (fused)
                pairs = generate_and_probe_depths(engine, requests, mode, spec.think_close, p.depths, logger)
                gens = [g for g, _ in pairs]
                probes = depth_probe_table(
                    engine, generations_table(prompts, p.model, mode, requests, gens), pairs, mode, p.depths
                )
            else:
                gens = run_requests(engine, requests, logger)
    generations_table(prompts, p.model, mode, requests, gens).to_parquet(snakemake.output[0], index=False)
    probes.to_parquet(snakemake.output.probes, index=False)
