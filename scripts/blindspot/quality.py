"""Confound-judge quality filter (switchable): keep a concept when >= 90% of <= 100 sampled pairs rate >= 4.

Computes `thinkbias.llm.roles:run_role` on `thinkbias.blindspot.step_requests:quality_requests` over
`thinkbias.blindspot.variations:quality_sample`, read by `thinkbias.blindspot.variations:parse_rating`, then
`thinkbias.blindspot.variations:quality_keep`.
"""

from pathlib import Path

import pandas as pd

from thinkbias.blindspot.step_requests import quality_requests
from thinkbias.blindspot.variations import parse_rating, quality_keep, quality_sample
from thinkbias.llm.roles import ModelRole, run_role
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0], metrics=snakemake.output.metrics) as logger:
    p = snakemake.params
    concepts = pd.read_parquet(snakemake.input.concepts)
    concepts = concepts[concepts["merged_into"] == concepts["concept_id"]].copy()
    variations = pd.read_parquet(snakemake.input.variations)
    valid = variations[variations["valid"]].groupby("concept_id").size()
    concepts["n_valid_pairs"] = concepts["concept_id"].map(valid).fillna(0).astype(int)
    concepts["quality_share"] = float("nan")
    concepts["kept"] = concepts["n_valid_pairs"] > 0
    if p.enabled:
        role = ModelRole.from_params(p, snakemake.input.weights)
        sample = quality_sample(variations, p.max_pairs, role.seed)
        by_id = concepts.set_index("concept_id")
        sample = sample[sample["concept_id"].isin(by_id.index)]
        gens = run_role(
            role, quality_requests(role, by_id, sample, Path(snakemake.input.prompt).read_text(), p.task), logger
        )
        parsed = [parse_rating(g.answer or g.text) for g in gens]
        ratings = sample[["concept_id", "input_id"]].assign(
            rating=[r for r, _ in parsed], parsed=[ok for _, ok in parsed]
        )
        keep = quality_keep(ratings, p.min_rating, p.keep_share).set_index("concept_id")
        concepts["quality_share"] = concepts["concept_id"].map(keep["share"])
        concepts["kept"] = concepts["kept"] & concepts["concept_id"].map(keep["kept"]).fillna(False).astype(bool)
        logger.info(
            f"quality filter: {len(ratings)} ratings ({int((~ratings['parsed']).sum())} unparsable, rated 3); "
            f"{int(concepts['kept'].sum())}/{len(concepts)} concepts kept"
        )
    concepts.to_parquet(snakemake.output[0], index=False)
