"""Baseline verbalization filter (stage 0): judge every (concept, baseline response); keep rate < tau.

Computes `thinkbias.blindspot.calls:run_judge`, then `thinkbias.blindspot.stages:baseline_filter`.
"""

import json
from pathlib import Path

import pandas as pd

from thinkbias.blindspot.calls import run_judge
from thinkbias.llm.roles import ModelRole
from thinkbias.blindspot.stages import baseline_filter
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0], metrics=snakemake.output.metrics) as logger:
    p = snakemake.params
    concepts = pd.read_parquet(snakemake.input.concepts)
    concepts = concepts[concepts["kept"]]
    base = pd.read_parquet(snakemake.input.baseline)
    items = pd.DataFrame(
        [
            {"concept_id": c, "input_id": r.input_id, "side": "base", "text": r.text}
            for c in concepts["concept_id"]
            for r in base.itertuples(index=False)
        ],
        columns=["concept_id", "input_id", "side", "text"],
    )
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
    )
    verdicts.to_parquet(snakemake.output.verdicts, index=False)
    table = baseline_filter(verdicts, concepts["concept_id"].tolist(), p.threshold)
    table.to_csv(snakemake.output.table, index=False)
    kept = table.loc[table["kept"], "concept_id"].tolist()
    logger.info(f"baseline filter: {len(kept)}/{len(table)} concepts kept (rate < {p.threshold})")
    Path(snakemake.output.entry).write_text(
        json.dumps(
            {
                "stage": -1,
                "next_active": kept,
                "entered": [],
                "done": not kept,
                "judge_calls": int(verdicts["new"].sum()),
            },
            indent=1,
        )
    )
