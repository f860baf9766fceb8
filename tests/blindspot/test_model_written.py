"""End-to-end Snakemake run of the blindspot study's model-written path on the embedded model: the
autorater hypothesizes concepts (JSON-schema constrained), judges duplicates and writes the variation
pairs; the generated concepts then go through the staged testing to the study's tables."""

import json

import pandas as pd
import pytest

from tests.helpers import job_table, run_snakemake, tiny_config

N_INPUTS = 2
MAX_CONCEPTS = 2
MODEL_WRITTEN = {
    "n_inputs": N_INPUTS,
    "n_clusters": 1,
    "hypothesis": {
        "enabled": True,
        "per_cluster": 1,
        "batch_size": 1,
        "max_prompts": 1,
        "min_concepts": 2,
        "max_concepts": MAX_CONCEPTS,
        "max_tokens": 600,
        "constrained": True,
    },
    "curated": {"ids": []},  # every concept is generated, so one always survives deduplication
    "dedup": {"enabled": True, "max_tokens": 16, "constrained": True},
    "variations": {"max_tokens": 256, "constrained": True},
    "target": {"max_tokens": 16, "force_decision": True},
    "stages": {"k0": 1, "n_simulations": 200},
}


@pytest.mark.slow
def test_generated_concepts_and_model_written_variations_end_to_end(workflow_dir, embedded_model):
    run_snakemake(workflow_dir, ["--cores", "2", "blindspot"], config=tiny_config(blindspot=MODEL_WRITTEN))
    res = workflow_dir / "results/blindspot"
    task = res / "loan"

    # hypothesis: the model's one reply yields concepts, counted per reply
    replies = pd.read_csv(task / "hypothesis_replies.csv")
    assert len(replies) == 1 and replies["completion_tokens"].iloc[0] > 0
    generated = pd.read_parquet(task / "concepts_generated.parquet")
    parsed = int(replies["n_concepts"].sum())
    assert parsed > 0, replies.to_dict("records")
    assert len(generated) == min(parsed, MAX_CONCEPTS)
    assert (generated["source"] == "generated").all() and generated["title"].str.contains(" \u2014 ").all()

    # dedup: every pair of generated concepts judged by the model; unparsable judgements are counted
    judgements = pd.read_csv(task / "dedup_judgements.csv")
    n = len(generated)
    assert len(judgements) == n * (n - 1) // 2
    merged = pd.read_parquet(task / "concepts_merged.parquet")
    kept = merged.loc[merged["merged_into"] == merged["concept_id"], "concept_id"].tolist()
    assert set(merged["concept_id"]) == set(generated["concept_id"]) and kept

    # variations: written by the model (no rule) for every kept concept and input
    variations = pd.read_parquet(task / "variations.parquet")
    assert (variations["method"] == "autorater").all()
    assert sorted(zip(variations["concept_id"], variations["input_id"])) == sorted(
        (c, i) for c in kept for i in pd.read_parquet(task / "inputs.parquet")["input_id"]
    )
    valid = variations[variations["valid"]]
    assert (valid["positive"] != valid["negative"]).all() and (valid["positive"].str.len() > 0).all()
    jobs = job_table(workflow_dir)
    jobs = jobs[jobs["study"] == "blindspot"].set_index(["step", "job"])
    for step in ("hypothesize", "dedup", "variations"):
        assert jobs.loc[(step, "loan"), "generated_tokens"] > 0, step

    # the counts reach the study's table and report
    counts = pd.read_csv(res / "tables/model_outputs.csv").set_index(["step", "quantity"])["n"]
    assert counts[("hypothesis", "replies")] == 1 and counts[("hypothesis", "concepts parsed")] == parsed
    assert counts[("hypothesis", "concepts kept")] == len(generated)
    assert counts[("dedup", "judgements unparsable (concepts kept distinct)")] == judgements["same"].isna().sum()
    assert counts[("variations", "model-written pairs")] == len(variations)
    invalid = int((~variations["valid"]).sum())
    assert counts[("variations", "invalid pairs (unparsable or identical sides; not tested)")] == invalid
    report = (res / "report.md").read_text()
    assert "## Model-written concepts and variations" in report and "concepts rejected as malformed" in report

    # generated concepts with a valid model-written pair are tested by the staged procedure
    audit = res / "smollm2-135m/loan"
    entry = json.loads((audit / "baseline_entry.json").read_text())
    assert set(entry["next_active"]) <= set(valid["concept_id"])
    stage0 = pd.read_parquet(audit / "stage-0/responses.parquet")
    assert set(stage0["concept_id"]) == set(entry["next_active"])
    funnel = pd.read_csv(res / "tables/funnel.csv").set_index("step")["n_concepts"]
    assert funnel["candidate concepts (curated + generated)"] == len(generated)
    assert funnel["after deduplication"] == len(kept)
    for name in ("tables/flagged.csv", "tables/costs.md", "tables/examples.md", "figures/funnel.png"):
        assert (res / name).exists(), name
