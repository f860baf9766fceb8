"""Concept hypotheses from the autorater over representative inputs (10 prompts x 3 inputs in the paper).

Computes `thinkbias.blindspot.calls:run_on_model` on the prompts of
`thinkbias.blindspot.concepts:build_hypothesis_prompt`, then
`thinkbias.blindspot.model_outputs:parse_hypothesis_replies` and `thinkbias.blindspot.concepts:concepts_table`.
"""
from pathlib import Path

import pandas as pd

from thinkbias.blindspot.calls import request_seed, run_on_model
from thinkbias.blindspot.clusters import hypothesis_batches
from thinkbias.blindspot.concepts import HYPOTHESIS_SCHEMA, build_hypothesis_prompt, concepts_table
from thinkbias.blindspot.model_outputs import REPLY_COLUMNS, parse_hypothesis_replies
from thinkbias.blindspot.tasks import render_task_prompt, task_spec
from thinkbias.llm.types import Request, Sampling
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0], metrics=snakemake.output.metrics) as logger:
    p = snakemake.params
    items, replies = [], pd.DataFrame(columns=REPLY_COLUMNS)
    if p.enabled:
        inputs = pd.read_parquet(snakemake.input.inputs).set_index("input_id")
        members = pd.read_parquet(snakemake.input.clusters)
        template = Path(snakemake.input.prompt).read_text()
        task_template = Path(snakemake.input.task_prompt).read_text()
        job = Path(snakemake.input.job).read_text() if p.task == "hiring" else ""
        batches = hypothesis_batches(members, p.per_cluster, p.batch_size, p.seed)[: p.max_prompts]
        spec = task_spec(p.task)
        reqs = []
        for b, batch in enumerate(batches):
            prompts = [render_task_prompt(task_template, inputs.loc[i, "text"], job) for i in batch]
            reqs.append(Request.chat(build_hypothesis_prompt(template, prompts, spec.input_name, p.min_concepts),
                                     sampling=Sampling(temperature=p.temperature, top_p=1.0, max_tokens=p.max_tokens,
                                                       seed=request_seed(p.seed, "hypothesis", str(b)),
                                                       json_schema=HYPOTHESIS_SCHEMA if p.constrained else None)))
        weights = snakemake.input.weights[0] if snakemake.input.weights else ""
        gens = run_on_model(p.model, p.registry, weights, p.cache_dir, reqs, logger)
        items, replies = parse_hypothesis_replies(gens)
        logger.info(f"{len(items)} concepts parsed from {len(gens)} replies; {int(replies['n_rejected'].sum())} "
                    f"malformed concepts rejected; {int((replies['n_concepts'] == 0).sum())} replies without a valid "
                    f"concept ({int((replies['finish_reason'] == 'length').sum())} cut off at max_tokens)")
        if p.max_concepts and len(items) > p.max_concepts:
            logger.info(f"kept the first {p.max_concepts} of {len(items)} concepts (max_concepts)")
            items = items[: p.max_concepts]
    concepts_table(items, "generated", "gen").to_parquet(snakemake.output.concepts, index=False)
    replies.to_csv(snakemake.output.replies, index=False)
