"""Curated concepts merged with the generated ones; duplicates merged by pairwise judgement + connected components.

Computes `thinkbias.llm.roles:run_role` on `thinkbias.blindspot.step_requests:dedup_requests` over the pairs of
`thinkbias.blindspot.concepts:dedup_pairs`,
`thinkbias.blindspot.model_outputs:parse_dedup_judgements`, then `thinkbias.blindspot.concepts:deduplicate`.
"""

from pathlib import Path

import pandas as pd

from thinkbias.blindspot.concepts import curated_concepts, dedup_pairs, deduplicate
from thinkbias.blindspot.model_outputs import JUDGEMENT_COLUMNS, parse_dedup_judgements
from thinkbias.blindspot.step_requests import dedup_requests
from thinkbias.llm.roles import ModelRole, run_role
from thinkbias.workflow import rule_logging
from thinkbias.yamlfile import read_yaml

with rule_logging(snakemake.log[0], metrics=snakemake.output.metrics) as logger:
    p = snakemake.params
    catalogue = read_yaml(snakemake.input.curated)
    curated = curated_concepts(catalogue, p.curated_ids, p.task)
    generated = pd.read_parquet(snakemake.input.generated)
    merged = pd.concat([curated, generated], ignore_index=True)
    edges, judgements = [], pd.DataFrame(columns=JUDGEMENT_COLUMNS)
    pairs = dedup_pairs(merged) if p.enabled else []
    if pairs:
        role = ModelRole.from_params(p, snakemake.input.weights)
        gens = run_role(role, dedup_requests(role, merged, pairs, Path(snakemake.input.prompt).read_text()), logger)
        edges, judgements = parse_dedup_judgements(merged, pairs, gens)
    out = deduplicate(merged, edges)
    logger.info(
        f"{len(curated)} curated + {len(generated)} generated concepts; {len(pairs)} pairs judged "
        f"({int(judgements['same'].isna().sum())} unparsable, kept distinct); "
        f"{int((out['merged_into'] != out['concept_id']).sum())} merged as duplicates"
    )
    out.to_parquet(snakemake.output.merged, index=False)
    judgements.to_csv(snakemake.output.judgements, index=False)
