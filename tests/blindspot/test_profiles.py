"""Seeded synthetic inputs and the user-supplied dataset schema."""

from pathlib import Path

import pandas as pd
import pytest
import yaml

from thinkbias.blindspot.profiles import generate_inputs, read_user_inputs

RES = Path(__file__).resolve().parents[2] / "resources/blindspot"
NAMES = yaml.safe_load((RES / "names.yaml").read_text())
VOCAB = yaml.safe_load((RES / "profiles.yaml").read_text())


@pytest.mark.parametrize("task", ["loan", "admissions", "hiring"])
def test_generation_is_seeded_and_consistent(task):
    a = generate_inputs(task, 12, 5, NAMES, VOCAB)
    pd.testing.assert_frame_equal(a, generate_inputs(task, 12, 5, NAMES, VOCAB))
    assert not a.equals(generate_inputs(task, 12, 6, NAMES, VOCAB))
    assert a["input_id"].is_unique and list(a.columns[:2]) == ["input_id", "text"]
    for r in a.itertuples():
        assert r.first_name in r.text and r.last_name in r.text


def test_loan_text_states_the_figures():
    row = generate_inputs("loan", 1, 1, NAMES, VOCAB).iloc[0]
    assert f"{row['income']:,}" in row["text"] and str(row["credit_score"]) in row["text"]
    assert f"{row['loan_amount']:,}" in row["text"] and 22 <= row["age"] <= 65


def test_admissions_scores_follow_the_percentile_conversion():
    df = generate_inputs("admissions", 30, 2, NAMES, VOCAB)
    assert df["sat_verbal"].between(200, 800).all() and (df["sat_verbal"] % 10 == 0).all()
    assert (df["sat_total"] == df["sat_verbal"] + df["sat_math"]).all()
    assert not (df["first_generation"] & df["legacy"]).any()


def test_hiring_resumes_use_the_two_by_two_design():
    df = generate_inputs("hiring", 40, 3, NAMES, VOCAB)
    assert set(df["group"]) <= {"white", "black"}
    assert df["text"].str.startswith("Name: ").all()


def test_user_inputs_schema(tmp_path):
    good = tmp_path / "in.csv"
    pd.DataFrame({"input_id": [1, 2], "text": ["a", "b"], "income": [3, 4]}).to_csv(good, index=False)
    df = read_user_inputs(str(good))
    assert df["input_id"].tolist() == ["1", "2"] and "income" in df.columns
    dup = tmp_path / "dup.csv"
    pd.DataFrame({"input_id": [1, 1], "text": ["a", "b"]}).to_csv(dup, index=False)
    with pytest.raises(ValueError, match="more than once"):
        read_user_inputs(str(dup))
    bad = tmp_path / "bad.jsonl"
    pd.DataFrame({"id": [1], "text": ["a"]}).to_json(bad, orient="records", lines=True)
    with pytest.raises(ValueError, match="input_id"):
        read_user_inputs(str(bad))
    empty = tmp_path / "empty.csv"
    pd.DataFrame({"input_id": [1], "text": [" "]}).to_csv(empty, index=False)
    with pytest.raises(ValueError, match="empty text"):
        read_user_inputs(str(empty))
