"""Stage s: verbalization verdicts on both responses of every flipped pair of the concepts that
survived the futility check (verdicts of earlier stages reused).

Computes `thinkbias.blindspot.stage_state:stage_state`, `thinkbias.blindspot.stages:pairs_to_judge`, then
`thinkbias.blindspot.calls:run_judge`.
"""

import json
from pathlib import Path

import pandas as pd

from thinkbias.blindspot.calls import run_judge
from thinkbias.llm.roles import ModelRole
from thinkbias.blindspot.stage_state import stage_state
from thinkbias.blindspot.stages import pairs_to_judge
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0], metrics=snakemake.output.metrics) as logger:
    p = snakemake.params
    responses = pd.read_parquet(snakemake.input.responses)
    state = stage_state(
        json.loads(Path(snakemake.input.entry).read_text()),
        pd.read_parquet(snakemake.input.clusters),
        responses,
        int(snakemake.wildcards.stage),
        p.k0,
        p.max_stages,
        p.stage_params,
    )
    tests = state.tests
    todo = pairs_to_judge(state.pairs, tests) if len(tests) else pd.DataFrame(columns=["concept_id", "input_id"])
    items = todo.merge(responses[["concept_id", "input_id", "side", "text"]], on=["concept_id", "input_id"])
    concepts = pd.read_parquet(snakemake.input.concepts)
    previous = pd.read_parquet(snakemake.input.previous) if snakemake.input.get("previous") else None
    job = Path(snakemake.input.job).read_text() if p.task == "hiring" else ""
    verdicts = run_judge(
        items,
        concepts,
        pd.read_parquet(snakemake.input.inputs),
        p.task,
        Path(snakemake.input.task_prompt).read_text(),
        job,
        Path(snakemake.input.prompt).read_text(),
        p.method,
        ModelRole.from_params(p, snakemake.input.weights),
        logger,
        previous,
    )
    verdicts.to_parquet(snakemake.output[0], index=False)
