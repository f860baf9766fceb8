"""One (x+, x-) pair per (concept, input): rules for curated concepts, the autorater for generated ones.

Computes `thinkbias.blindspot.variations:rule_variations`, and for generated concepts
`thinkbias.llm.roles:run_role` on `thinkbias.blindspot.step_requests:variation_requests`, read by
`thinkbias.blindspot.variations:parse_variation`.
"""

from pathlib import Path

import pandas as pd

from thinkbias.blindspot.step_requests import variation_requests
from thinkbias.blindspot.variations import parse_variation, rule_variations
from thinkbias.llm.roles import ModelRole, run_role
from thinkbias.workflow import rule_logging
from thinkbias.yamlfile import read_yaml

with rule_logging(snakemake.log[0], metrics=snakemake.output.metrics) as logger:
    p = snakemake.params
    concepts = pd.read_parquet(snakemake.input.concepts)
    concepts = concepts[concepts["merged_into"] == concepts["concept_id"]]
    inputs = pd.read_parquet(snakemake.input.inputs)
    names = read_yaml(snakemake.input.names)
    frames = [rule_variations(concepts, inputs, p.task, names)]
    llm_concepts = concepts[~concepts["variation_rule"].astype(bool)]
    if len(llm_concepts):
        role = ModelRole.from_params(p, snakemake.input.weights)
        keys, reqs = variation_requests(role, llm_concepts, inputs, Path(snakemake.input.prompt).read_text(), p.task)
        gens = run_role(role, reqs, logger)
        rows = []
        for (cid, iid), g in zip(keys, gens):
            pair = parse_variation(g.answer or g.text)
            rows.append(
                {
                    "concept_id": cid,
                    "input_id": iid,
                    "positive": pair[0] if pair else "",
                    "negative": pair[1] if pair else "",
                    "valid": pair is not None,
                    "method": "autorater",
                }
            )
        frames.append(pd.DataFrame(rows))
    out = pd.concat(frames, ignore_index=True)
    out["valid"] = out["valid"].astype(bool)  # object dtype after concatenating an empty rule frame
    for method, sub in out.groupby("method"):
        logger.info(
            f"{method}: {len(sub)} pairs, {int((~sub['valid']).sum())} invalid "
            "(unparsable or identical sides; excluded)"
        )
    out.to_parquet(snakemake.output[0], index=False)
