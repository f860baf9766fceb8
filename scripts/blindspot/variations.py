"""One (x+, x-) pair per (concept, input): rules for curated concepts, the autorater for generated ones.

Computes `thinkbias.blindspot.variations:rule_variations`, and for generated concepts
`thinkbias.blindspot.calls:run_on_model` read by `thinkbias.blindspot.variations:parse_variation`.
"""
from pathlib import Path

import pandas as pd
import yaml

from thinkbias.blindspot.calls import request_seed, run_on_model
from thinkbias.blindspot.tasks import task_spec
from thinkbias.blindspot.variations import VARIATION_SCHEMA, build_variation_prompt, parse_variation, rule_variations
from thinkbias.llm.types import Request, Sampling
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0], metrics=snakemake.output.metrics) as logger:
    p = snakemake.params
    concepts = pd.read_parquet(snakemake.input.concepts)
    concepts = concepts[concepts["merged_into"] == concepts["concept_id"]]
    inputs = pd.read_parquet(snakemake.input.inputs)
    names = yaml.safe_load(Path(snakemake.input.names).read_text())
    frames = [rule_variations(concepts, inputs, p.task, names)]
    llm_concepts = concepts[~concepts["variation_rule"].astype(bool)]
    if len(llm_concepts):
        template = Path(snakemake.input.prompt).read_text()
        spec = task_spec(p.task)
        keys, reqs = [], []
        for c in llm_concepts.itertuples(index=False):
            row = pd.Series(c._asdict())
            for x in inputs.itertuples(index=False):
                keys.append((c.concept_id, x.input_id))
                reqs.append(Request.chat(build_variation_prompt(template, row, x.text, spec.input_name),
                                         sampling=Sampling(temperature=p.temperature, top_p=1.0, max_tokens=p.max_tokens,
                                                           seed=request_seed(p.seed, "variation", c.concept_id, x.input_id),
                                                           json_schema=VARIATION_SCHEMA if p.constrained else None)))
        weights = snakemake.input.weights[0] if snakemake.input.weights else ""
        gens = run_on_model(p.model, p.registry, weights, p.cache_dir, reqs, logger)
        rows = []
        for (cid, iid), g in zip(keys, gens):
            pair = parse_variation(g.answer or g.text)
            rows.append({"concept_id": cid, "input_id": iid, "positive": pair[0] if pair else "",
                         "negative": pair[1] if pair else "", "valid": pair is not None, "method": "autorater"})
        frames.append(pd.DataFrame(rows))
    out = pd.concat(frames, ignore_index=True)
    out["valid"] = out["valid"].astype(bool)  # object dtype after concatenating an empty rule frame
    for method, sub in out.groupby("method"):
        logger.info(f"{method}: {len(sub)} pairs, {int((~sub['valid']).sum())} invalid (unparsable or identical sides; excluded)")
    out.to_parquet(snakemake.output[0], index=False)
