"""The baseline-variance input prefilter: variances and selection against hand-worked cases and the
paper's code's own test vector, the stages' input sets drawn from the kept inputs, and a Snakemake run
on the embedded model where the baseline is served from the prefilter's responses."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tests.blindspot.test_workflow import TINY
from tests.helpers import deep_merge, job_table, run_snakemake, tiny_config
from thinkbias.blindspot.clusters import stage_plan
from thinkbias.blindspot.prefilter import (
    acceptance_variance,
    prefilter_items,
    replicate_side,
    restrict_clusters,
    select_inputs,
)


def _responses(decisions: dict[str, list]) -> pd.DataFrame:
    rows = [(i, d) for i, ds in decisions.items() for d in ds]
    return pd.DataFrame(rows, columns=["input_id", "decision"]).astype({"decision": float})


def test_variance_of_the_parsable_decisions_hand_worked():
    table = acceptance_variance(
        _responses({"a": [1, 0, 1, 1, None], "b": [None, None], "c": [0, 0, 0]}), ["a", "b", "c"]
    )
    a, b, c = (table.set_index("input_id").loc[i] for i in "abc")
    assert (a["n_responses"], a["n_parsable"], a["acceptance_rate"]) == (5, 4, 0.75)
    assert a["variance"] == pytest.approx(0.75 * 0.25)  # population variance p (1 - p)
    assert b["n_parsable"] == 0 and np.isnan(b["acceptance_rate"]) and b["variance"] == 0.0
    assert c["variance"] == 0.0


def test_selection_matches_the_papers_code_test_vector():
    """The paper's code's own test: a = (1, 1), b = (0, 1), c = (None, None), max_inputs = 2 keeps b then a."""
    table = select_inputs(
        acceptance_variance(_responses({"a": [1, 1], "b": [0, 1], "c": [None, None]}), list("abc")), 2
    )
    assert table.sort_values("order")["input_id"].tolist() == ["b", "a", "c"]
    assert table.set_index("input_id")["kept"].to_dict() == {"a": True, "b": True, "c": False}


def test_no_max_or_a_max_at_least_the_inputs_keeps_every_input():
    variances = acceptance_variance(_responses({"a": [1, 0], "b": [1, 1]}), ["a", "b"])
    assert select_inputs(variances, None)["kept"].all() and select_inputs(variances, 2)["kept"].all()
    assert select_inputs(variances, 1)["kept"].tolist() == [True, False]


def test_the_first_response_of_each_input_is_the_baselines_request():
    items = prefilter_items(["x", "y"], 3)
    assert items["side"].tolist() == ["base", "base-1", "base-2"] * 2 and replicate_side(0) == "base"
    with pytest.raises(ValueError, match="at least 1"):
        prefilter_items(["x"], 0)


def test_stages_draw_from_the_kept_inputs_re_ranked_per_cluster():
    members = pd.DataFrame(
        {"input_id": list("abcdefgh"), "cluster": [0, 0, 0, 0, 1, 1, 1, 1], "rank": [0, 1, 2, 3, 0, 1, 2, 3]}
    )
    kept = restrict_clusters(members, ["b", "c", "e", "h"])
    assert kept[["input_id", "rank"]].values.tolist() == [["b", 0], ["c", 1], ["e", 0], ["h", 1]]
    assert set(stage_plan(kept, 0, 1).input_ids) == {"b", "e"}  # each cluster's nearest kept member
    assert stage_plan(kept, 1, 1).n_total == 4 and stage_plan(kept, 1, 1).is_last


PREFILTER = {"enabled": True, "responses_per_input": 3, "max_inputs": 6}


@pytest.mark.slow
def test_the_prefilter_runs_before_the_stages_and_pays_nothing_twice(workflow_dir, embedded_model):
    config = tiny_config(blindspot=deep_merge(TINY, {"prefilter": PREFILTER}))
    run_snakemake(workflow_dir, ["--cores", "2", "blindspot"], config=config)
    audit = workflow_dir / "results/blindspot/smollm2-135m/loan"
    responses = pd.read_parquet(audit / "prefilter_responses.parquet")
    table = pd.read_csv(audit / "prefilter.csv")
    assert len(responses) == 8 * 3 and len(table) == 8 and table["kept"].sum() == 6
    # the variances are those of the stored decisions, and the kept inputs are the most variable
    expected = responses.groupby("input_id")["decision"].agg(
        lambda d: float(np.var(d.dropna())) if d.notna().any() else 0.0
    )
    assert np.allclose(table.set_index("input_id")["variance"], expected.loc[table["input_id"]])
    assert table.loc[table["kept"], "variance"].min() >= table.loc[~table["kept"], "variance"].max()
    kept = set(table.loc[table["kept"], "input_id"])
    assert set(pd.read_parquet(audit / "prefilter_clusters.parquet")["input_id"]) == kept
    # every stage tests kept inputs only, the last one all of them
    for decision in sorted(audit.glob("stage-*/decision.json")):
        stage = decision.parent
        assert set(pd.read_parquet(stage / "responses.parquet")["input_id"]) <= kept, stage.name
    assert json.loads((audit / "stage-0/decision.json").read_text())["n_inputs"] == 4
    baseline = pd.read_parquet(audit / "baseline.parquet")
    assert set(baseline["input_id"]) <= kept and len(baseline) == 4
    # the baseline's responses are the prefilter's first ones, served from the cache
    jobs = job_table(workflow_dir)
    jobs = jobs[jobs["study"] == "blindspot"].set_index(["step", "job"])
    assert jobs.loc[("prefilter", "smollm2-135m/loan"), "generated_tokens"] > 0
    metrics = json.loads((workflow_dir / "results/job_metrics/blindspot/baseline/smollm2-135m/loan.json").read_text())
    assert metrics["requests"] == 4 and metrics["cached"] == 4
    first = responses[responses["side"] == "base"].set_index("input_id")
    assert (baseline.set_index("input_id")["decision"] == first.loc[baseline["input_id"], "decision"]).all()
    report = (workflow_dir / "results/blindspot/report.md").read_text()
    assert "input prefilter" in report and "3 responses per input, the 6 of highest variance kept" in report
