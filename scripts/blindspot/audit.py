"""Gather one audit's stage chain: per-stage tests, flagged biases, funnel, costs, example pairs.

Computes `thinkbias.blindspot.tables:flagged_table`, `thinkbias.blindspot.tables:funnel_table`,
`thinkbias.blindspot.tables:cost_table` and `thinkbias.blindspot.tables:example_pairs`.
"""

import json
from pathlib import Path

import pandas as pd

from thinkbias.blindspot.tables import cost_table, example_pairs, flagged_table, funnel_table
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as logger:
    p = snakemake.params
    model, task = snakemake.wildcards.model, snakemake.wildcards.task
    decisions = [json.loads(Path(f).read_text()) for f in snakemake.input.decisions]
    tests = [pd.read_csv(f) for f in snakemake.input.tests]
    tests = [t for t in tests if len(t)]
    stages = pd.concat(tests, ignore_index=True) if tests else pd.DataFrame(columns=["stage", "concept_id", "status"])
    stages.insert(0, "task", task)
    stages.insert(0, "model", model)
    stages.to_csv(snakemake.output.stages, index=False)
    concepts = pd.read_parquet(snakemake.input.concepts)
    merged = pd.read_parquet(snakemake.input.merged)
    baseline = pd.read_csv(snakemake.input.baseline_table)
    flagged = flagged_table(stages, concepts, baseline, model, task)
    flagged.to_csv(snakemake.output.flagged, index=False)
    counts = {
        "candidate concepts (curated + generated)": len(merged),
        "after deduplication": int((merged["merged_into"] == merged["concept_id"]).sum()),
        "after variation quality filter": int(concepts["kept"].sum()),
    }
    funnel_table(counts, baseline, stages, model, task).to_csv(snakemake.output.funnel, index=False)
    calls = pd.DataFrame(
        [
            {
                "stage": d["stage"],
                "n_inputs": d["n_inputs"],
                "n_active": len(d["active"]),
                "target_calls": d["target_calls"],
                "judge_calls": d["judge_calls"],
                "n_pairs": d["n_pairs"],
                "n_flips": d["n_flips"],
            }
            for d in decisions
        ]
    )
    entry = json.loads(Path(snakemake.input.entry).read_text())
    base_resp = pd.read_parquet(snakemake.input.baseline)
    n_total = decisions[0]["n_total"] if decisions else 0
    costs = cost_table(calls, len(entry["next_active"]), n_total, len(base_resp), entry["judge_calls"], model, task)
    costs.to_csv(snakemake.output.costs, index=False)
    frames = [pd.read_parquet(f) for f in snakemake.input.responses]
    responses = (
        pd.concat(frames, ignore_index=True).drop_duplicates(["concept_id", "input_id", "side"])
        if frames
        else pd.DataFrame(columns=["concept_id", "input_id", "side", "decision", "text"])
    )
    if len(responses) and len(stages):
        per = responses.groupby("concept_id").agg(
            n_responses=("decision", "size"),
            n_forced=("forced", "sum"),
            n_unparsable=("decision", lambda d: int(d.isna().sum())),
        )
        stages = stages.merge(per, left_on="concept_id", right_index=True, how="left")
        stages.to_csv(snakemake.output.stages, index=False)
    examples = example_pairs(flagged, responses, pd.read_parquet(snakemake.input.variations), p.examples_per_concept)
    examples.to_csv(snakemake.output.examples, index=False)
    logger.info(
        f"{model}/{task}: {len(decisions)} stages, {len(flagged)} flagged, "
        f"{int(base_resp['decision'].isna().sum())}/{len(base_resp)} unparsable baseline decisions, "
        f"{int(responses['forced'].sum()) if len(responses) else 0} forced variation decisions"
    )
