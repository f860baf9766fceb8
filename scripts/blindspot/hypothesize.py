"""Concept hypotheses from the autorater over representative inputs (10 prompts x 3 inputs in the paper).

Computes `thinkbias.llm.roles:run_role` on `thinkbias.blindspot.step_requests:hypothesis_requests`, then
`thinkbias.blindspot.model_outputs:parse_hypothesis_replies` and `thinkbias.blindspot.concepts:concepts_table`.
"""

from pathlib import Path

import pandas as pd

from thinkbias.blindspot.concepts import concepts_table
from thinkbias.blindspot.model_outputs import REPLY_COLUMNS, parse_hypothesis_replies
from thinkbias.blindspot.step_requests import hypothesis_requests
from thinkbias.llm.roles import ModelRole, run_role
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0], metrics=snakemake.output.metrics) as logger:
    p = snakemake.params
    items, replies = [], pd.DataFrame(columns=REPLY_COLUMNS)
    if p.enabled:
        inputs = pd.read_parquet(snakemake.input.inputs).set_index("input_id")
        members = pd.read_parquet(snakemake.input.clusters)
        job = Path(snakemake.input.job).read_text() if p.task == "hiring" else ""
        role = ModelRole.from_params(p, snakemake.input.weights)
        reqs = hypothesis_requests(
            role,
            inputs,
            members,
            Path(snakemake.input.prompt).read_text(),
            Path(snakemake.input.task_prompt).read_text(),
            job,
            p.task,
            p.per_cluster,
            p.batch_size,
            p.max_prompts,
            p.min_concepts,
        )
        gens = run_role(role, reqs, logger)
        items, replies = parse_hypothesis_replies(gens)
        logger.info(
            f"{len(items)} concepts parsed from {len(gens)} replies; {int(replies['n_rejected'].sum())} "
            f"malformed concepts rejected; {int((replies['n_concepts'] == 0).sum())} replies without a valid "
            f"concept ({int((replies['finish_reason'] == 'length').sum())} cut off at max_tokens)"
        )
        if p.max_concepts and len(items) > p.max_concepts:
            logger.info(f"kept the first {p.max_concepts} of {len(items)} concepts (max_concepts)")
            items = items[: p.max_concepts]
    concepts_table(items, "generated", "gen").to_parquet(snakemake.output.concepts, index=False)
    replies.to_csv(snakemake.output.replies, index=False)
