"""Bring-your-own outcomes on a constructed table whose every number is known (no model); tables
that break the documented schema stop with the file, the column or key, rows and values."""

import json

import pandas as pd
import pytest

from thinkbias.blindspot.byo import read_baseline, read_outcomes, run_byo
from thinkbias.blindspot.stages import StageParams
from thinkbias.data.byo_table import TableError
from tests.helpers import run_snakemake, tiny_config


def outcome_rows(concept, pattern, verbalized_every=0):
    """40 inputs in 2 clusters (ranks 0..19); ``pattern`` gives (y_pos, y_neg) per input."""
    rows = []
    for i, (p, q) in enumerate(pattern):
        rows.append(
            {
                "model": "m",
                "task": "loan",
                "concept_id": concept,
                "input_id": f"x{i:02d}",
                "cluster": i % 2,
                "rank": i // 2,
                "y_pos": p,
                "y_neg": q,
                "verbalized_pos": bool(verbalized_every and i % verbalized_every == 0),
                "verbalized_neg": False,
            }
        )
    return rows


def test_byo_staged_testing_known_numbers(tmp_path):
    # "strong": 30 (accept, reject) pairs and 10 concordant; "flat": 10 b, 10 c, 20 concordant;
    # "cited": like strong but every flipped pair is verbalized on the x+ side.
    strong = [(1, 0)] * 30 + [(1, 1)] * 10
    flat = [(1, 0), (0, 1)] * 10 + [(0, 0)] * 20
    rows = (
        outcome_rows("strong", strong) + outcome_rows("flat", flat) + outcome_rows("cited", strong, verbalized_every=1)
    )
    outcomes = pd.DataFrame(rows)
    path = tmp_path / "outcomes.csv"
    outcomes.to_csv(path, index=False)
    stages, flagged, funnel, costs = run_byo(
        pd.read_csv(path, dtype={"input_id": str}), None, k0=20, params=StageParams(n_simulations=1000)
    )
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
    baseline = pd.DataFrame(
        {
            "model": "m",
            "task": "loan",
            "concept_id": "strong",
            "input_id": [f"x{i:02d}" for i in range(10)],
            "verbalized": [True] * 3 + [False] * 7,
        }
    )
    stages, flagged, funnel, _ = run_byo(rows, baseline, k0=20, params=StageParams(n_simulations=1000))
    assert stages.empty or "strong" not in set(stages["concept_id"])  # 3/10 = 0.3 >= 0.3: dropped at baseline
    assert flagged.empty
    with pytest.raises(TableError, match=r"missing column\(s\) 'rank' \(required: model, task, concept_id"):
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


STRONG = [(1, 0)] * 30 + [(1, 1)] * 10
FLAT = [(1, 0), (0, 1)] * 10 + [(0, 0)] * 20


def known_outcomes() -> pd.DataFrame:
    """The table of ``test_byo_staged_testing_known_numbers``: strong (flagged), flat (null),
    cited (like strong, every flipped pair verbalized)."""
    return pd.DataFrame(
        outcome_rows("strong", STRONG) + outcome_rows("flat", FLAT) + outcome_rows("cited", STRONG, verbalized_every=1)
    )


def _csv(table: pd.DataFrame, path):
    table.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("value", ["2", "-1", "0.5", "yes"])
def test_decisions_other_than_0_1_are_errors(tmp_path, value):
    table = known_outcomes().astype({"y_pos": object})
    table.loc[[0, 1], "y_pos"] = value  # rows of "strong"
    path = _csv(table, tmp_path / "outcomes.csv")
    with pytest.raises(
        TableError,
        match=(
            rf"^bring-your-own outcomes {path}: 1 problem\(s\)\n  - column 'y_pos': "
            rf"2 of 120 rows not 0, 1 or empty; first: '{value}' \(rows 1, 2\)$"
        ),
    ):
        read_outcomes(path)


def test_decisions_read_as_numbers_with_empty_unparsable(tmp_path):
    table = known_outcomes().astype({"y_neg": object})
    table.loc[0, "y_neg"] = None
    table.loc[1, "y_neg"] = "1.0"
    got = read_outcomes(_csv(table, tmp_path / "outcomes.csv"))
    assert got["y_neg"].dtype == float and pd.isna(got.loc[0, "y_neg"]) and got.loc[1, "y_neg"] == 1.0


def test_exact_duplicate_rows_are_an_error(tmp_path):
    table = known_outcomes()
    path = _csv(pd.concat([table, table.iloc[[0, 1]]], ignore_index=True), tmp_path / "outcomes.csv")
    with pytest.raises(TableError) as err:
        read_outcomes(path)
    assert (
        "rows repeated exactly (key model, task, concept_id, input_id): 4 of 122 rows; "
        "first: ('m', 'loan', 'strong', 'x00') rows 1, 121; ('m', 'loan', 'strong', 'x01') rows 2, 122"
    ) in str(err.value)


def test_conflicting_duplicates_are_an_error(tmp_path):
    table = known_outcomes()
    flat0 = table.index[(table["concept_id"] == "flat")][0]
    assert tuple(table.loc[flat0, ["y_pos", "y_neg"]]) == (1, 0)
    extra = table.loc[[flat0]].assign(y_pos=0, y_neg=1)  # the same (concept, input) with another decision
    path = _csv(pd.concat([table, extra], ignore_index=True), tmp_path / "outcomes.csv")
    with pytest.raises(
        TableError,
        match=(
            r"rows that disagree for one key \(model, task, concept_id, input_id\): "
            r"2 of 121 rows; first: \('m', 'loan', 'flat', 'x00'\) rows 41, 121"
        ),
    ):
        read_outcomes(path)


@pytest.mark.parametrize("yes, no", [("Y", "N"), ("yes", "no")])
def test_verbalized_flags_other_than_true_false_1_0_are_errors(tmp_path, yes, no):
    table = known_outcomes()
    for col in ("verbalized_pos", "verbalized_neg"):
        table[col] = table[col].map({True: yes, False: no})
    path = _csv(table, tmp_path / "outcomes.csv")
    with pytest.raises(TableError) as err:
        read_outcomes(path)
    assert (
        f"column 'verbalized_pos': 120 of 120 rows not true, false, 1, 0 or empty; first: '{no}' (rows 1, 2, 3, 4, 5, "
        f"...), '{yes}' (rows 81, 82, 83, 84, 85, ...)"
    ) in str(err.value)
    assert f"column 'verbalized_neg': 120 of 120 rows not true, false, 1, 0 or empty; first: '{no}'" in str(err.value)


def test_verbalized_flags_read_in_any_case_and_as_1_0(tmp_path):
    table = known_outcomes()
    table["verbalized_pos"] = table["verbalized_pos"].map({True: "TRUE", False: "0"})
    table = table.astype({"verbalized_neg": object})
    table.loc[0, "verbalized_neg"] = None
    got = read_outcomes(_csv(table, tmp_path / "outcomes.csv"))
    assert got["verbalized_pos"].tolist() == [False] * 80 + [True] * 40
    assert got.loc[0, "verbalized_neg"] is None and got.loc[1, "verbalized_neg"] is False
    _, flagged, _, _ = run_byo(got, None, k0=20, params=StageParams(n_simulations=1000))
    assert flagged["concept_id"].tolist() == ["strong"]  # "cited" is dropped by the verbalization filter


def test_rank_or_cluster_differing_within_an_input_is_an_error(tmp_path):
    table = known_outcomes()
    table.loc[45, "rank"] = 7  # flat's x05 (rank 2 under strong and cited)
    path = _csv(table, tmp_path / "outcomes.csv")
    with pytest.raises(
        TableError,
        match=(
            r"cluster or rank differs between rows of one input \(model, task, input_id\): "
            r"3 of 120 rows; first: \('m', 'loan', 'x05'\) rows 6, 46, 86$"
        ),
    ):
        read_outcomes(path)


def test_missing_baseline_column_names_the_column(tmp_path):
    baseline = pd.DataFrame(
        {
            "model": "m",
            "task": "loan",
            "concept_id": "strong",
            "input_id": [f"x{i:02d}" for i in range(10)],
            "verbalised": "false",
        }
    )
    path = _csv(baseline, tmp_path / "baseline.csv")
    with pytest.raises(
        TableError,
        match=(
            rf"^bring-your-own baseline {path}: 1 problem\(s\)\n  - missing column\(s\) "
            r"'verbalized' \(required: model, task, concept_id, input_id, verbalized\)$"
        ),
    ):
        read_baseline(path)


def test_baseline_flags_and_keys_are_checked(tmp_path):
    baseline = pd.DataFrame(
        {
            "model": "m",
            "task": "loan",
            "concept_id": "strong",
            "input_id": [f"x{i:02d}" for i in range(10)] + ["x00"],
            "verbalized": ["true"] * 3 + ["N"] * 7 + ["true"],
        }
    )
    with pytest.raises(TableError) as err:
        read_baseline(_csv(baseline, tmp_path / "baseline.csv"))
    assert (
        "column 'verbalized': 7 of 11 rows not true, false, 1, 0 or empty; first: 'N' (rows 4, 5, 6, 7, 8, ...)"
        in str(err.value)
    )
    assert "rows repeated exactly (key model, task, concept_id, input_id): 2 of 11 rows" in str(err.value)


def test_header_only_outcomes_are_an_error(tmp_path):
    path = _csv(known_outcomes().iloc[:0], tmp_path / "outcomes.csv")
    with pytest.raises(TableError, match=f"^bring-your-own outcomes {path}: a header but no data rows$"):
        read_outcomes(path)


@pytest.mark.slow
def test_byo_run_stops_on_y_n_flags(workflow_dir):
    table = known_outcomes()
    for col in ("verbalized_pos", "verbalized_neg"):
        table[col] = table[col].map({True: "Y", False: "N"})
    path = _csv(table, workflow_dir / "outcomes.csv")
    override = json.dumps({"byo": {"outcomes": str(path)}})
    proc = run_snakemake(
        workflow_dir,
        ["--cores", "1", "blindspot", "--config", f"blindspot={override}"],
        config=tiny_config(blindspot={}),
        check=False,
        timeout=600,
    )
    assert proc.returncode != 0
    message = "column 'verbalized_pos': 120 of 120 rows not true, false, 1, 0 or empty; first: 'N'"
    assert message in proc.stderr and f"bring-your-own outcomes {path}" in proc.stderr
    assert message in (workflow_dir / "logs/blindspot/byo/all.log").read_text()
    assert not (workflow_dir / "results/blindspot/byo/flagged.csv").exists()
