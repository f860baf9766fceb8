"""Bring your own outputs: the workflow builds every table, figure and the report from a constructed
predictions table whose every cell count is known, without generating anything; a table that breaks
the documented schema stops with a message naming the file, the column or key, rows and values."""

import json

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.contingency_tables import mcnemar

from thinkbias.data.byo_table import TableError
from thinkbias.fairness.io import read_predictions
from tests.helpers import run_snakemake, tiny_config

# (y_alpha_nothink, y_alpha_prime_nothink, y_alpha_think, y_alpha_prime_think) per cell
PROTO = {"a": (1, 1, 0, 0), "b": (1, 0, 1, 1), "c": (0, 0, 1, 0), "d": (1, 0, 0, 1)}
CELLS = {"adult": {"a": 6, "b": 2, "c": 5, "d": 1}, "compas": {"a": 4, "b": 1, "c": 3, "d": 0}}


def constructed_predictions() -> pd.DataFrame:
    rows = []
    for dataset, counts in CELLS.items():
        for cell, n in counts.items():
            for i in range(n):
                ya_n, yb_n, ya_t, yb_t = PROTO[cell]
                for side, y_n, y_t in (("alpha", ya_n, ya_t), ("alpha_prime", yb_n, yb_t)):
                    for arm, y in (("nothink", y_n), ("think", y_t)):
                        p = 0.8 if y else 0.2
                        r = dict(
                            dataset=dataset,
                            model="released-model",
                            pair_id=f"{dataset}-{cell}{i}",
                            side=side,
                            arm=arm,
                            answer="Yes" if y else "No",
                            p_yes=p,
                        )
                        if arm == "think":
                            for k in range(11):
                                r[f"p_yes_K10_k{k:02d}"] = 0.5 + (p - 0.5) * k / 10
                        rows.append(r)
    # one pair lost to a refusal on one side of the nothink arm
    for side in ("alpha", "alpha_prime"):
        for arm in ("nothink", "think"):
            refused = side == "alpha_prime" and arm == "nothink"
            rows.append(
                dict(
                    dataset="adult",
                    model="released-model",
                    pair_id="adult-refused",
                    side=side,
                    arm=arm,
                    answer=None if refused else "No",
                    status="refusal" if refused else "ok",
                )
            )
    df = pd.DataFrame(rows)
    df["status"] = df["status"].fillna("ok")
    return df


def test_empty_file_names_the_file(tmp_path):
    path = tmp_path / "predictions.csv"
    path.write_text("")
    with pytest.raises(TableError, match=f"predictions table {path}: the file is empty"):
        read_predictions(path)


def test_header_only_file_is_an_error(tmp_path):
    path = tmp_path / "predictions.csv"
    constructed_predictions().iloc[:0].to_csv(path, index=False)
    with pytest.raises(TableError, match=f"predictions table {path}: a header but no data rows"):
        read_predictions(path)


def refused_spelling() -> pd.DataFrame:
    """The constructed table with its one refusal written ``refused`` (it used to vanish from the counts)."""
    pred = constructed_predictions()
    refusal = pred.index[pred["status"] == "refusal"]
    assert list(refusal) == [90]
    pred.loc[refusal, "status"] = "refused"
    return pred


def test_unknown_status_is_an_error(tmp_path):
    path = tmp_path / "predictions.csv"
    refused_spelling().to_csv(path, index=False)
    with pytest.raises(
        TableError,
        match=(
            rf"(?s){path}: .*column 'status': 1 of 92 rows not one of ok, refusal, "
            r"unparsed; first: 'refused' \(row 91\)"
        ),
    ):
        read_predictions(path)


def test_non_numeric_p_yes_is_an_error(tmp_path):
    pred = constructed_predictions().astype({"p_yes": object})
    pred.loc[[1, 3], "p_yes"] = "high"
    path = tmp_path / "predictions.csv"
    pred.to_csv(path, index=False)
    with pytest.raises(TableError, match=r"column 'p_yes': 2 of \d+ rows not a number; first: 'high' \(rows 2, 4\)"):
        read_predictions(path)


def test_blank_pair_id_is_an_error(tmp_path):
    pred = constructed_predictions()
    pred.loc[0, "pair_id"] = ""
    pred.loc[4, "pair_id"] = "  "
    path = tmp_path / "predictions.csv"
    pred.to_csv(path, index=False)
    with pytest.raises(TableError) as err:
        read_predictions(path)
    assert "column 'pair_id': 1 of 92 rows empty; first: (empty) (row 1)" in str(err.value)
    assert "column 'pair_id': 1 of 92 rows blank; first: '  ' (row 5)" in str(err.value)


def test_duplicate_key_error_names_the_key_and_first_duplicates(tmp_path):
    pred = constructed_predictions()
    path = tmp_path / "predictions.csv"
    pd.concat([pred, pred.iloc[[0, 7]]]).to_csv(path, index=False)
    with pytest.raises(
        TableError,
        match=(
            r"duplicate key \(dataset, model, pair_id, side, arm\): 4 of 94 rows; "
            r"first: \('adult', 'released-model', 'adult-a0', 'alpha', 'nothink'\) "
            r"rows 1, 93; \('adult', 'released-model', 'adult-a1', 'alpha_prime', "
            r"'think'\) rows 8, 94"
        ),
    ):
        read_predictions(path)


def twenty_pairs() -> pd.DataFrame:
    """One setting of 20 complete pairs (80 rows), cells a, b, c, d in turn."""
    rows = []
    for i in range(20):
        ya_n, yb_n, ya_t, yb_t = PROTO["abcd"[i % 4]]
        for side, y_n, y_t in (("alpha", ya_n, ya_t), ("alpha_prime", yb_n, yb_t)):
            for arm, y in (("nothink", y_n), ("think", y_t)):
                rows.append(
                    dict(
                        dataset="adult",
                        model="released-model",
                        pair_id=f"p{i:02d}",
                        side=side,
                        arm=arm,
                        answer="Yes" if y else "No",
                    )
                )
    return pd.DataFrame(rows)


def test_a_pair_with_one_of_its_four_rows_deleted_is_refused_naming_the_pair_and_its_rows(tmp_path):
    """It used to leave the setting at N = 19 of 20 pairs without a word."""
    pred = twenty_pairs()
    assert len(read_predictions_csv(pred, tmp_path / "whole.csv")) == 80
    cut = pred.drop(index=29).reset_index(drop=True)  # p07, alpha / think
    path = tmp_path / "predictions.csv"
    with pytest.raises(TableError) as err:
        read_predictions_csv(cut, path)
    assert str(err.value) == (
        f"predictions table {path}: 1 problem(s)\n"
        "  - incomplete pair (not all 4 rows: side alpha and alpha_prime x arm nothink and think): 3 of 79 rows; "
        "first: ('adult', 'released-model', 'p07') rows 29, 30, 31"
    )


def test_a_dataset_written_in_capitals_on_four_rows_is_refused_naming_the_value_and_rows(tmp_path):
    """A dataset named COMPAS on the 4 rows of one pair used to make a setting of its own with that one pair."""
    pred = constructed_predictions()
    rows = pred.index[pred["pair_id"] == "compas-a2"]
    assert list(rows) == [64, 65, 66, 67]
    pred.loc[rows, "dataset"] = "COMPAS"
    path = tmp_path / "predictions.csv"
    with pytest.raises(TableError) as err:
        read_predictions_csv(pred, path)
    assert str(err.value) == (
        f"predictions table {path}: 1 problem(s)\n"
        "  - column 'dataset': 4 of 92 rows another spelling (case or surrounding spaces) of a more frequent "
        "value of the column; first: 'COMPAS' (rows 65, 66, 67, 68)"
    )


def test_a_model_name_with_a_trailing_space_is_another_spelling(tmp_path):
    pred = constructed_predictions()
    pred.loc[[0, 1, 2, 3], "model"] = "released-model "
    with pytest.raises(TableError, match=r"column 'model': 4 of 92 rows another spelling .*'released-model ' \(rows 1"):
        read_predictions_csv(pred, tmp_path / "predictions.csv")


def read_predictions_csv(pred: pd.DataFrame, path):
    """``pred`` written to ``path`` as CSV and read back through the workflow's reader."""
    pred.to_csv(path, index=False)
    return read_predictions(path)


def test_parquet_and_json_lines_are_checked_alike(tmp_path):
    pred = constructed_predictions()
    pred.loc[2, "status"] = "refused"
    for path in (tmp_path / "p.parquet", tmp_path / "p.jsonl"):
        if path.suffix == ".parquet":
            pred.to_parquet(path, index=False)
        else:
            pred.to_json(path, orient="records", lines=True)
        with pytest.raises(TableError, match=f"(?s){path}: .*column 'status': 1 of 92 rows .*'refused' \\(row 3\\)"):
            read_predictions(path)
    good = tmp_path / "good.parquet"
    constructed_predictions().to_parquet(good, index=False)
    assert len(read_predictions(good)) == 92


@pytest.mark.slow
def test_byo_run_stops_on_an_unknown_status(workflow_dir):
    path = workflow_dir / "released-bad.csv"
    refused_spelling().to_csv(path, index=False)
    cfg = tiny_config(fairness={"bootstrap_samples": 50})
    override = json.dumps({"run": "bad", "predictions": str(path)})
    proc = run_snakemake(
        workflow_dir, ["--cores", "1", "fairness", "--config", f"fairness={override}"], config=cfg, check=False
    )
    assert proc.returncode != 0
    message = "column 'status': 1 of 92 rows not one of ok, refusal, unparsed; first: 'refused' (row 91)"
    assert message in proc.stderr and str(path) in proc.stderr
    assert message in (workflow_dir / "logs/fairness/bad/cells.log").read_text()
    assert not (workflow_dir / "results/fairness/bad/cells.parquet").exists()


@pytest.mark.slow
def test_byo_run_stops_on_an_incomplete_pair_and_a_case_variant(workflow_dir):
    pred = constructed_predictions()
    pred.loc[pred["pair_id"] == "compas-a2", "dataset"] = "COMPAS"
    pred = pred.drop(index=13).reset_index(drop=True)  # adult-a3, alpha / think
    path = workflow_dir / "released-incomplete.csv"
    pred.to_csv(path, index=False)
    cfg = tiny_config(fairness={"bootstrap_samples": 50})
    override = json.dumps({"run": "incomplete", "predictions": str(path)})
    proc = run_snakemake(
        workflow_dir, ["--cores", "1", "fairness", "--config", f"fairness={override}"], config=cfg, check=False
    )
    assert proc.returncode != 0
    log = (workflow_dir / "logs/fairness/incomplete/cells.log").read_text()
    for message in (
        f"predictions table {path}: 2 problem(s)",
        "column 'dataset': 4 of 91 rows another spelling (case or surrounding spaces) of a more frequent value "
        "of the column; first: 'COMPAS' (rows 64, 65, 66, 67)",
        "incomplete pair (not all 4 rows: side alpha and alpha_prime x arm nothink and think): 3 of 91 rows; "
        "first: ('adult', 'released-model', 'adult-a3') rows 13, 14, 15",
    ):
        assert message in proc.stderr and message in log, message
    assert not (workflow_dir / "results/fairness/incomplete/cells.parquet").exists()


@pytest.mark.slow
def test_byo_predictions_give_known_tables(workflow_dir):
    path = workflow_dir / "released.csv"
    constructed_predictions().to_csv(path, index=False)
    cfg = tiny_config(fairness={"run": "byo", "predictions": str(path), "bootstrap_samples": 200})
    run_snakemake(workflow_dir, ["--cores", "2", "fairness"], config=cfg)
    out = workflow_dir / "results/fairness/byo"
    assert not (out / "generations").exists() and not (out / "predictions.csv").exists()

    t2 = pd.read_csv(out / "tables/table2.csv")
    for dataset, counts in CELLS.items():
        row = t2[t2.dataset == dataset].iloc[0]
        assert {k: int(row[k]) for k in "abcd"} == counts
        assert row.N == sum(counts.values())
        ref = mcnemar(np.array([[counts["a"], counts["b"]], [counts["c"], counts["d"]]]), exact=True).pvalue
        assert row.mcnemar_p == pytest.approx(ref)
        assert row.ddisp_c_think == pytest.approx(0.6) and row.ddisp_c_nothink == pytest.approx(0.0)
        assert row.ddisp_b_nothink == pytest.approx(0.6) and row.ddisp_b_think == pytest.approx(0.0)
    pooled = t2[t2.model == "pooled"].iloc[0]
    assert (pooled.b, pooled.c, pooled.N) == (3, 8, 22)

    parse = pd.read_csv(out / "tables/parse_counts.csv").set_index("dataset")
    assert parse.loc["adult", "pairs"] == 15 and parse.loc["adult", "N"] == 14
    assert parse.loc["adult", "nothink_refusal"] == 1

    f2 = pd.read_csv(out / "tables/figure2.csv").set_index("dataset")
    # adult: nothink flips b + d = 3 of 14, think flips c + d = 6 of 14; D_group(think) = (5 - 1) / 14
    assert f2.loc["adult", "dcf_nothink"] == pytest.approx(3 / 14)
    assert f2.loc["adult", "delta_dcf"] == pytest.approx(3 / 14)
    assert f2.loc["adult", "dgroup_think"] == pytest.approx(4 / 14)

    t4 = pd.read_csv(out / "tables/table4.csv")
    nn = t4[(t4.dataset == "adult") & (t4["from"] == "NN")].iloc[0]
    assert nn.n == 5 and nn.to_YN == pytest.approx(1.0)
    t5 = pd.read_csv(out / "tables/table5.csv").set_index("dataset")
    assert t5.loc["adult", "c_alpha_up"] == 5 and t5.loc["adult", "delta_c_pct"] == pytest.approx(100 * 5 / 14)

    f3 = pd.read_csv(out / "tables/figure3.csv")
    c_end = f3[(f3.dataset == "adult") & (f3.cell == "c") & (f3.k == 10)].iloc[0]
    assert c_end.mean_abs_cdpg == pytest.approx(0.6) and c_end.n == 5
    slopes = pd.read_csv(out / "tables/appendix_c.csv")
    assert slopes[slopes.dataset == "adult"].slope.iloc[0] == pytest.approx(0.6)

    for fig in ("figure2", "figure3", "appendix_c", "figure4"):
        assert (out / f"figures/{fig}.png").stat().st_size > 1000
    report = (out / "report.md").read_text()
    assert "different model" in report and "released-model" in report
