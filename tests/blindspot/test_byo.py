"""Bring-your-own outcomes on a constructed table whose every number is known (no model)."""
import pandas as pd
import pytest

from thinkbias.blindspot.byo import run_byo
from thinkbias.blindspot.stages import StageParams


def outcome_rows(concept, pattern, verbalized_every=0):
    """40 inputs in 2 clusters (ranks 0..19); ``pattern`` gives (y_pos, y_neg) per input."""
    rows = []
    for i, (p, q) in enumerate(pattern):
        rows.append({"model": "m", "task": "loan", "concept_id": concept, "input_id": f"x{i:02d}",
                     "cluster": i % 2, "rank": i // 2, "y_pos": p, "y_neg": q,
                     "verbalized_pos": bool(verbalized_every and i % verbalized_every == 0),
                     "verbalized_neg": False})
    return rows


def test_byo_staged_testing_known_numbers(tmp_path):
    # "strong": 30 (accept, reject) pairs and 10 concordant; "flat": 10 b, 10 c, 20 concordant;
    # "cited": like strong but every flipped pair is verbalized on the x+ side.
    strong = [(1, 0)] * 30 + [(1, 1)] * 10
    flat = [(1, 0), (0, 1)] * 10 + [(0, 0)] * 20
    rows = outcome_rows("strong", strong) + outcome_rows("flat", flat) + outcome_rows("cited", strong, verbalized_every=1)
    outcomes = pd.DataFrame(rows)
    path = tmp_path / "outcomes.csv"
    outcomes.to_csv(path, index=False)
    stages, flagged, funnel, costs = run_byo(pd.read_csv(path, dtype={"input_id": str}), None, k0=20,
                                             params=StageParams(n_simulations=1000))
    # k0 = 20 per cluster covers all 40 inputs: one (last) stage, Bonferroni 0.05 / 3
    assert stages["stage"].unique().tolist() == [0]
    st = stages.set_index("concept_id")
    assert st.loc["strong", "alpha_s"] == pytest.approx(0.05 / 3)
    # strong: b = 30, c = 0 -> chi2 = 29^2/30, p = 1.2e-7; delta = 1 - 0.25 = 0.75
    assert (st.loc["strong", "b"], st.loc["strong", "c"], st.loc["strong", "n"]) == (30, 0, 40)
    assert st.loc["strong", "p_value"] == pytest.approx(1.2e-7, rel=0.05)
    assert st.loc["strong", "delta"] == pytest.approx(0.75)
    assert st.loc["strong", "status"] == "flagged"
    assert st.loc["flat", "status"] == "not_significant" and st.loc["flat", "p_value"] == pytest.approx(1.0)
    assert st.loc["cited", "var_rate"] == 1.0 and st.loc["cited", "status"] == "verbalized"
    assert flagged["concept_id"].tolist() == ["strong"]
    f = funnel.set_index("step")["n_concepts"]
    assert f["tested"] == 3 and f["flagged in total"] == 1


def test_byo_baseline_filter_and_schema_errors():
    rows = pd.DataFrame(outcome_rows("strong", [(1, 0)] * 30 + [(1, 1)] * 10))
    baseline = pd.DataFrame({"model": "m", "task": "loan", "concept_id": "strong",
                             "input_id": [f"x{i:02d}" for i in range(10)], "verbalized": [True] * 3 + [False] * 7})
    stages, flagged, funnel, _ = run_byo(rows, baseline, k0=20, params=StageParams(n_simulations=1000))
    assert stages.empty or "strong" not in set(stages["concept_id"])   # 3/10 = 0.3 >= 0.3: dropped at baseline
    assert flagged.empty
    with pytest.raises(ValueError, match="lacks column"):
        run_byo(rows.drop(columns=["rank"]), None, k0=20, params=StageParams())


def test_byo_costs_have_the_exhaustive_and_saved_rows(tmp_path):
    # 3 concepts on 40 inputs, k0 = 5: stages of 10, 20, 40 inputs; "strong" stops early, so calls are saved
    strong = [(1, 0)] * 40
    flat = [(1, 0), (0, 1)] * 20
    rows = pd.DataFrame(outcome_rows("strong", strong) + outcome_rows("flat", flat) + outcome_rows("flat2", flat))
    _, _, _, costs = run_byo(rows, None, k0=5, params=StageParams(n_simulations=1000))
    path = tmp_path / "costs.csv"
    costs.to_csv(path, index=False)
    got = pd.read_csv(path, dtype={"stage": str}).set_index("stage")
    assert {"staged total", "exhaustive", "saved share"} <= set(got.index)
    assert got.loc["exhaustive", "target_calls"] == 2 * 3 * 40
    per_stage = got.loc[[s for s in got.index if s.isdigit()], "target_calls"]
    assert got.loc["staged total", "target_calls"] == per_stage.sum()
    assert got.loc["saved share", "target_calls"] == pytest.approx(1 - per_stage.sum() / 240)
    assert got.loc["saved share", "target_calls"] > 0
    assert (got["model"] == "m").all() and (got["task"] == "loan").all()
