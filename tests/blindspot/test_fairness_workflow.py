"""A real Snakemake run of the blindspot pipeline on a fairness task (COMPAS profiles, the embedded
model, the curated concepts): its inputs, pairs and rediscovery table against the fairness study's
own construction and the audit's tables."""

import pandas as pd
import pytest

from tests.helpers import run_snakemake, tiny_config
from thinkbias.blindspot.fairness_tasks import fairness_inputs
from thinkbias.data.loaders import load_tabular
from thinkbias.fairness.prompts import build_prompts
from thinkbias.tasks.records import sample_records

TINY = {
    "tasks": ["fairness_compas"],
    "n_inputs": 8,
    "n_clusters": 2,
    "curated": {"ids": ["protected_race_nonwhite", "religion_minority"]},
    "target": {"max_tokens": 24, "force_decision": True},
    "stages": {"k0": 2, "n_simulations": 2000},
}


@pytest.mark.slow
def test_fairness_task_end_to_end(workflow_dir, embedded_model, raw_file):
    raw = raw_file("raw/compas/compas-scores-two-years.csv")
    run_snakemake(workflow_dir, ["--cores", "2", "blindspot"], config=tiny_config(blindspot=TINY))
    res = workflow_dir / "results/blindspot"
    records = load_tabular("compas", [raw])
    inputs = pd.read_parquet(res / "fairness_compas/inputs.parquet")
    expected = fairness_inputs("fairness_compas", records, 8, seed=tiny_config()["seed"])
    assert inputs["input_id"].tolist() == expected["input_id"].tolist()
    assert inputs["text"].tolist() == expected["text"].tolist()
    # the curated concept's pairs are the fairness study's counterfactual pairs (x+ = non-White)
    prompts = build_prompts("compas", sample_records("compas", records, 8, tiny_config()["seed"]))
    wide = prompts.pivot(index="pair_id", columns="side", values="profile")
    pairs = pd.read_parquet(res / "fairness_compas/variations.parquet")
    cf = pairs[pairs["concept_id"] == "protected_race_nonwhite"].merge(inputs[["input_id", "record_id"]])
    assert len(cf) == 8 and cf["valid"].all()
    assert cf["positive"].tolist() == wide.loc[cf["record_id"], "alpha_prime"].tolist()
    assert cf["negative"].tolist() == wide.loc[cf["record_id"], "alpha"].tolist()
    # decisions are the Yes/No answers (1 / 0; forced when the model wrote none)
    audit = res / "smollm2-135m/fairness_compas"
    responses = pd.concat([pd.read_parquet(p) for p in sorted(audit.glob("stage-*/responses.parquet"))])
    assert set(responses["decision"].dropna()) <= {0, 1} and responses["decision"].notna().all()
    # the rediscovery row says what the audit's own tables say
    table = pd.read_csv(res / "tables/fairness_rediscovery.csv", dtype={"other_flagged": str}).fillna(
        {"other_flagged": ""}
    )
    assert len(table) == 1
    row = table.iloc[0]
    assert (row["model"], row["task"], row["protected_attribute"]) == ("smollm2-135m", "fairness_compas", "race")
    assert row["curated_concept"] == "protected_race_nonwhite" and not row["hypothesized"]
    stages = pd.read_csv(audit / "stages.csv")
    flagged = pd.read_csv(audit / "flagged.csv")
    mine = stages[stages["concept_id"] == "protected_race_nonwhite"].sort_values("stage")
    assert bool(row["tested"]) == (len(mine) > 0)
    assert bool(row["flagged"]) == ("protected_race_nonwhite" in set(flagged["concept_id"]))
    if len(mine):
        last = mine.iloc[-1]
        assert (row["status"], row["stage"], row["n"], row["b"], row["c"]) == (
            last["status"],
            last["stage"],
            last["n"],
            last["b"],
            last["c"],
        )
        assert row["delta"] == pytest.approx(last["delta"], nan_ok=True)
    assert row["n_other_flagged"] == int((flagged["concept_id"] != "protected_race_nonwhite").sum())
    report = (res / "report.md").read_text()
    assert "## Fairness tasks: is the protected attribute rediscovered?" in report
    assert "smollm2-135m / fairness_compas: race" in report
    assert (res / "tables/fairness_rediscovery.md").read_text().startswith("| model | task |")
