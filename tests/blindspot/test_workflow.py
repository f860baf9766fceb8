"""End-to-end Snakemake runs of the blindspot study: the embedded model on a tiny config, and the
bring-your-own path on a constructed outcome table (no model)."""

import json

import pandas as pd
import pytest

from tests.helpers import job_table, run_snakemake, tiny_config

TINY = {
    "n_inputs": 8,
    "n_clusters": 2,
    "curated": {"ids": ["gender_female", "religion_minority"]},
    "target": {"max_tokens": 24, "force_decision": True},
    "stages": {"k0": 2, "n_simulations": 2000},
}


@pytest.mark.slow
def test_embedded_model_end_to_end(workflow_dir, embedded_model):
    run_snakemake(workflow_dir, ["--cores", "2", "blindspot", "blindspot_concepts"], config=tiny_config(blindspot=TINY))
    res = workflow_dir / "results/blindspot"
    for name in (
        "tables/flagged.csv",
        "tables/flagged.md",
        "tables/funnel.csv",
        "tables/costs.csv",
        "tables/costs.md",
        "tables/examples.md",
        "report.md",
    ):
        assert (res / name).exists(), name
    assert (res / "figures/funnel.png").stat().st_size > 1000
    audit = res / "smollm2-135m/loan"
    decisions = sorted(audit.glob("stage-*/decision.json"))
    chain = [json.loads(p.read_text()) for p in decisions]
    assert chain[-1]["done"] and not any(d["done"] for d in chain[:-1])
    assert chain[0]["n_inputs"] == 4  # 2 clusters x k0 = 2
    stages = pd.read_csv(audit / "stages.csv")
    funnel = pd.read_csv(res / "tables/funnel.csv", dtype={"stage": str}).fillna({"stage": ""})
    entry = json.loads((audit / "baseline_entry.json").read_text())
    tested0 = funnel[(funnel["step"] == "tested") & (funnel["stage"].astype(str).str.startswith("0"))]["n_concepts"]
    assert int(tested0.iloc[0]) == len(entry["next_active"])
    # every response has a decision (forced when the model wrote none), and the counts say how many
    assert (stages["n_unparsable"] == 0).all() and (stages["n_forced"] >= 0).all()
    assert (stages["n"] + stages["n_invalid"] == stages["n_pairs"]).all()
    costs = pd.read_csv(res / "tables/costs.csv").set_index("stage")
    assert costs.loc["0", "target_calls"] == 2 * len(entry["next_active"]) * 4
    assert costs.loc["exhaustive", "target_calls"] == 2 * len(entry["next_active"]) * 8
    flagged = pd.read_csv(res / "tables/flagged.csv")
    assert set(flagged["concept_id"]) <= set(stages.loc[stages["status"] == "flagged", "concept_id"])
    assert "Beside the paper's reported findings" in (res / "report.md").read_text()
    # one evidence page per flagged concept, indexed and linked from the report; or an index saying none
    index = (res / "concepts/index.md").read_text()
    assert "(concepts/index.md)" in (res / "report.md").read_text()
    if flagged.empty:
        assert "No concept was flagged" in index
    for r in flagged.itertuples():
        page = (res / f"concepts/{r.model}/{r.task}/{r.concept_id}.md").read_text()
        assert f"({r.model}/{r.task}/{r.concept_id}.md)" in index
        for heading in ("two sides", "Stage path", "Acceptance rate per side", "Verbalization", "decision flipped"):
            assert f"## {heading}" in page or heading in page, heading
        assert (res / f"concepts/{r.model}/{r.task}/{r.concept_id}.png").stat().st_size > 1000
    # the target-model jobs log the tokens they generated, paired with their benchmark files
    jobs = job_table(workflow_dir)
    jobs = jobs[jobs["study"] == "blindspot"].set_index(["step", "job"])
    assert jobs.loc[("baseline", "smollm2-135m/loan"), "generated_tokens"] > 0
    for d in chain:
        tokens = jobs.loc[("stage_respond", f"smollm2-135m/loan/stage-{d['stage']}"), "generated_tokens"]
        assert tokens > 0 if d["target_calls"] else tokens == 0, (d["stage"], tokens)
    # the run's benchmark table takes every model job's metrics file as a declared input, the stage
    # runs found by following the checkpoint chain included
    run_snakemake(workflow_dir, ["--cores", "1", "results/benchmarks.csv"], config=tiny_config(blindspot=TINY))
    table = pd.read_csv(workflow_dir / "results/benchmarks.csv", dtype={"job": str})
    written = sorted((workflow_dir / "results/job_metrics").rglob("*.json"))
    assert len(table) == len(written) == 6 + 2 + 2 * len(chain)
    assert (table["step"] == "stage_judge").sum() == len(chain)


@pytest.mark.slow
def test_bring_your_own_outcomes_through_the_workflow(workflow_dir):
    rows = []
    for i in range(40):
        strong = (1, 0) if i < 30 else (1, 1)
        flat = ((1, 0) if i % 2 else (0, 1)) if i < 20 else (0, 0)
        for cid, (p, q) in (("strong", strong), ("flat", flat)):
            rows.append(
                {
                    "model": "theirs",
                    "task": "loan",
                    "concept_id": cid,
                    "input_id": f"x{i:02d}",
                    "cluster": i % 2,
                    "rank": i // 2,
                    "y_pos": p,
                    "y_neg": q,
                    "verbalized_pos": False,
                    "verbalized_neg": False,
                }
            )
    path = workflow_dir / "outcomes.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    cfg = tiny_config(blindspot={"byo": {"outcomes": str(path)}, "stages": {"k0": 20}})
    run_snakemake(workflow_dir, ["--cores", "1", "blindspot"], config=cfg)
    flagged = pd.read_csv(workflow_dir / "results/blindspot/byo/flagged.csv")
    assert flagged["concept_id"].tolist() == ["strong"]
    assert flagged.iloc[0]["b"] == 30 and flagged.iloc[0]["c"] == 0
    assert flagged.iloc[0]["delta"] == pytest.approx(0.75)
    stages = pd.read_csv(workflow_dir / "results/blindspot/byo/stages.csv").set_index("concept_id")
    assert stages.loc["flat", "status"] == "not_significant"
    # the cost table keeps its exhaustive and saved-share rows in the CSV (one stage covers all 40 inputs)
    costs = pd.read_csv(workflow_dir / "results/blindspot/byo/costs.csv", dtype={"stage": str}).set_index("stage")
    assert costs.loc["exhaustive", "target_calls"] == 2 * 2 * 40
    assert costs.loc["staged total", "target_calls"] == 2 * 2 * 40
    assert costs.loc["saved share", "target_calls"] == 0
