"""Curated concepts merged with the generated ones; duplicates merged by pairwise judgement + connected components.

Computes `thinkbias.blindspot.calls:run_on_model` on the pairs of `thinkbias.blindspot.concepts:dedup_pairs`,
`thinkbias.blindspot.model_outputs:parse_dedup_judgements`, then `thinkbias.blindspot.concepts:deduplicate`.
"""
from pathlib import Path

import pandas as pd
import yaml

from thinkbias.blindspot.calls import request_seed, run_on_model
from thinkbias.blindspot.concepts import DEDUP_SCHEMA, build_dedup_prompt, curated_concepts, dedup_pairs, deduplicate
from thinkbias.blindspot.model_outputs import JUDGEMENT_COLUMNS, parse_dedup_judgements
from thinkbias.llm.types import Request, Sampling
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0], metrics=snakemake.output.metrics) as logger:
    p = snakemake.params
    catalogue = yaml.safe_load(Path(snakemake.input.curated).read_text())
    curated = curated_concepts(catalogue, p.curated_ids, p.task)
    generated = pd.read_parquet(snakemake.input.generated)
    merged = pd.concat([curated, generated], ignore_index=True)
    edges, judgements = [], pd.DataFrame(columns=JUDGEMENT_COLUMNS)
    pairs = dedup_pairs(merged) if p.enabled else []
    if pairs:
        template = Path(snakemake.input.prompt).read_text()
        reqs = [Request.chat(build_dedup_prompt(template, merged.iloc[i], merged.iloc[j]),
                             sampling=Sampling(temperature=p.temperature, max_tokens=p.max_tokens,
                                               seed=request_seed(p.seed, "dedup", str(i), str(j)),
                                               json_schema=DEDUP_SCHEMA if p.constrained else None))
                for i, j in pairs]
        weights = snakemake.input.weights[0] if snakemake.input.weights else ""
        gens = run_on_model(p.model, p.registry, weights, p.cache_dir, reqs, logger)
        edges, judgements = parse_dedup_judgements(merged, pairs, gens)
    out = deduplicate(merged, edges)
    logger.info(f"{len(curated)} curated + {len(generated)} generated concepts; {len(pairs)} pairs judged "
                f"({int(judgements['same'].isna().sum())} unparsable, kept distinct); "
                f"{int((out['merged_into'] != out['concept_id']).sum())} merged as duplicates")
    out.to_parquet(snakemake.output.merged, index=False)
    judgements.to_csv(snakemake.output.judgements, index=False)
