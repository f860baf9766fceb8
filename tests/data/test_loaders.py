"""Loaders (thinkbias.data.loaders): real files from the mirrors and small hand-made files in each
source layout."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from thinkbias.data.loaders import (
    ADULT_COLUMNS,
    COMPAS_COLUMNS,
    CREDIT_COLUMNS,
    MCQ_COLUMNS,
    content_hash,
    gpqa_answer_position,
    load_adult,
    load_compas,
    load_credit,
    load_mcq,
)

FIXTURES = Path(__file__).parent / "fixtures"

# --- real files -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def adult(raw_files) -> pd.DataFrame:
    return load_adult(raw_files["raw/adult/adult.data"], raw_files["raw/adult/adult.test"])


def test_adult_real_counts_and_columns(adult):
    assert tuple(adult.columns) == ADULT_COLUMNS
    assert adult["split"].value_counts().to_dict() == {"train": 32561, "test": 16281}
    assert adult["record_id"].is_unique
    assert set(adult["sex"]) == {"Male", "Female"}
    assert adult["income_gt_50k"].dtype == bool
    # published class balance: 7,841 of 32,561 train and 3,846 of 16,281 test earn >50K
    assert adult.groupby("split")["income_gt_50k"].sum().to_dict() == {"train": 7841, "test": 3846}
    assert adult["workclass"].isna().sum() == 1836 + 963  # '?' in train + test


def test_compas_real_counts_and_columns(raw_files):
    compas = load_compas(raw_files["raw/compas/compas-scores-two-years.csv"])
    assert tuple(compas.columns) == COMPAS_COLUMNS
    assert len(compas) == 7214 and compas["record_id"].is_unique
    assert compas["race"].value_counts()["African-American"] == 3696
    assert set(compas["two_year_recid"]) == {0, 1}
    assert compas["decile_score"].between(1, 10).all()


@pytest.fixture(scope="module")
def mmlu_lines(raw_files) -> list[dict]:
    with open(raw_files["raw/mmlu/mmlu.jsonl"], encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def test_mmlu_mirror_real_counts(raw_files, mmlu_lines):
    mmlu = load_mcq("mmlu", raw_files["raw/mmlu/mmlu.jsonl"])
    assert len(mmlu_lines) == 14044
    assert len(mmlu) == 14042 and mmlu.attrs["n_dropped"] == 2  # two stray CSV header lines
    assert tuple(mmlu.columns) == MCQ_COLUMNS
    assert mmlu["item_id"].is_unique and mmlu["item_id"].is_monotonic_increasing
    assert mmlu["subject"].nunique() == 57
    assert mmlu["subject"].value_counts()["professional_law"] == 1534
    assert (mmlu["n_options"] == 4).all() and mmlu["option_e"].isna().all()
    assert set(mmlu["answer"]) == {"A", "B", "C", "D"}


def to_canonical_layout(lines: list[dict]) -> pd.DataFrame:
    """Mirror records rewritten in the cais/mmlu parquet layout (subject names with underscores,
    a choices list, a 0-3 answer index), shuffled."""
    rows = [
        {
            "question": r["question"],
            "subject": r["topic"].replace(" ", "_"),
            "choices": [r["answer_a"], r["answer_b"], r["answer_c"], r["answer_d"]],
            "answer": "ABCD".index(r["correct_answer"]),
        }
        for r in lines
        if r["correct_answer"] in ("A", "B", "C", "D")
    ]
    return pd.DataFrame(rows).sample(frac=1.0, random_state=11).reset_index(drop=True)


def write_canonical_parquet(df: pd.DataFrame, path: Path) -> Path:
    table = pa.table(
        {
            "question": pa.array(df["question"].tolist(), pa.string()),
            "subject": pa.array(df["subject"].tolist(), pa.string()),
            "choices": pa.array(df["choices"].tolist(), pa.list_(pa.string())),
            "answer": pa.array(df["answer"].tolist(), pa.int64()),
        }
    )
    pq.write_table(table, path)
    return path


def test_mmlu_mirror_and_canonical_layout_give_the_same_table(raw_files, mmlu_lines, tmp_path):
    parquet = write_canonical_parquet(to_canonical_layout(mmlu_lines), tmp_path / "test.parquet")
    from_mirror = load_mcq("mmlu", raw_files["raw/mmlu/mmlu.jsonl"])
    from_canonical = load_mcq("mmlu", parquet)
    pd.testing.assert_frame_equal(from_mirror, from_canonical)


# --- hand-made files in each source layout ----------------------------------------------------------

ADULT_TRAIN = """\
39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, United-States, <=50K
52, ?, 209642, HS-grad, 9, Married-civ-spouse, ?, Husband, White, Male, 0, 0, 45, ?, >50K
"""
ADULT_TEST = """\
|1x3 Cross validator
25, Private, 226802, 11th, 7, Never-married, Machine-op-inspct, Own-child, Black, Female, 0, 0, 40, United-States, <=50K.
44, Private, 160323, Some-college, 10, Married-civ-spouse, Machine-op-inspct, Husband, Black, Male, 7688, 0, 40, United-States, >50K.

"""


def test_adult_layout_comment_line_labels_and_missing_values(tmp_path):
    (tmp_path / "adult.data").write_text(ADULT_TRAIN)
    (tmp_path / "adult.test").write_text(ADULT_TEST)
    df = load_adult(tmp_path / "adult.data", tmp_path / "adult.test")
    assert df["record_id"].tolist() == [
        "adult-train-00000",
        "adult-train-00001",
        "adult-test-00000",
        "adult-test-00001",
    ]
    assert df["income_gt_50k"].tolist() == [False, True, False, True]
    assert df["sex"].tolist() == ["Male", "Male", "Female", "Male"]
    assert df.loc[1, ["workclass", "occupation", "native_country"]].isna().all()
    assert df.loc[3, "capital_gain"] == 7688 and df["age"].dtype == "int64"
    assert df.loc[0, "marital_status"] == "Never-married"  # leading spaces stripped


def test_adult_rejects_unknown_labels(tmp_path):
    (tmp_path / "a.data").write_text(ADULT_TRAIN.replace(">50K", "high"))
    (tmp_path / "a.test").write_text(ADULT_TEST)
    with pytest.raises(ValueError, match="unexpected income labels"):
        load_adult(tmp_path / "a.data", tmp_path / "a.test")


def credit_sheet_csv(path: Path, rows: list[list[int]]) -> Path:
    names = [
        "ID",
        "LIMIT_BAL",
        "SEX",
        "EDUCATION",
        "MARRIAGE",
        "AGE",
        "PAY_0",
        "PAY_2",
        "PAY_3",
        "PAY_4",
        "PAY_5",
        "PAY_6",
        *(f"BILL_AMT{i}" for i in range(1, 7)),
        *(f"PAY_AMT{i}" for i in range(1, 7)),
        "default payment next month",
    ]
    codes = ["", *(f"X{i}" for i in range(1, 24)), "Y"]
    lines = [",".join(codes), ",".join(names), *(",".join(map(str, r)) for r in rows)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_credit_layout_two_header_rows_and_sex_codes(tmp_path):
    rows = [
        [1, 20000, 2, 2, 1, 24, 2, 2, -1, -1, -2, -2, 3913, 3102, 689, 0, 0, 0, 0, 689, 0, 0, 0, 0, 1],
        [
            2,
            120000,
            1,
            2,
            2,
            26,
            -1,
            2,
            0,
            0,
            0,
            2,
            2682,
            1725,
            2682,
            3272,
            3455,
            3261,
            0,
            1000,
            1000,
            1000,
            0,
            2000,
            0,
        ],
    ]
    df = load_credit(credit_sheet_csv(tmp_path / "credit.csv", rows))
    assert tuple(df.columns) == CREDIT_COLUMNS
    assert df["record_id"].tolist() == ["credit-1", "credit-2"]
    assert df["sex"].tolist() == ["Female", "Male"]
    assert df["default_next_month"].tolist() == [1, 0]
    assert df.loc[1, "pay_amt4"] == 1000 and df.loc[0, "bill_amt1"] == 3913 and df.loc[1, "pay_6"] == 2


def test_credit_reads_the_uci_xls_layout():
    """fixtures/credit-layout.xls: three made-up clients in the UCI sheet layout (row 1: X1..X23, Y;
    row 2: the names), written as BIFF8 .xls with xlwt 1.3.0."""
    df = load_credit(FIXTURES / "credit-layout.xls")
    assert tuple(df.columns) == CREDIT_COLUMNS
    assert df["record_id"].tolist() == ["credit-1", "credit-2", "credit-3"]
    assert df["sex"].tolist() == ["Female", "Male", "Male"]
    assert df["default_next_month"].tolist() == [0, 1, 0]
    assert df["limit_bal"].tolist() == [50000, 10000, 360000] and df["limit_bal"].dtype == "int64"
    assert df.loc[1, ["pay_0", "pay_6", "bill_amt5", "pay_amt4"]].tolist() == [2, -1, 300, 200]


def test_credit_rejects_unknown_sex_codes(tmp_path):
    row = [1, 20000, 3, 2, 1, 24, 2, 2, -1, -1, -2, -2, 3913, 3102, 689, 0, 0, 0, 0, 689, 0, 0, 0, 0, 1]
    with pytest.raises(ValueError, match="unknown SEX codes \\[3\\]"):
        load_credit(credit_sheet_csv(tmp_path / "credit.csv", [row]))


def write_arc_parquet(path: Path, items: list[dict]) -> Path:
    choice_type = pa.struct([("text", pa.list_(pa.string())), ("label", pa.list_(pa.string()))])
    table = pa.table(
        {
            "id": [i["id"] for i in items],
            "question": [i["question"] for i in items],
            "choices": pa.array([i["choices"] for i in items], choice_type),
            "answerKey": [i["answerKey"] for i in items],
        }
    )
    pq.write_table(table, path)
    return path


def test_arc_layout_digit_and_letter_labels(tmp_path):
    items = [
        {
            "id": "Mercury_1",
            "question": "Which is a gas at room temperature?",
            "choices": {"text": ["iron", "oxygen", "salt", "wood"], "label": ["A", "B", "C", "D"]},
            "answerKey": "B",
        },
        {
            "id": "NYSEDREGENTS_2",
            "question": "Q2 ",
            "choices": {"text": ["w", "x", "y", "z"], "label": ["1", "2", "3", "4"]},
            "answerKey": "4",
        },
        {
            "id": "ACTAAP_3",
            "question": "Q3",
            "choices": {"text": ["p", "q", "r", "s", "t"], "label": list("ABCDE")},
            "answerKey": "E",
        },
        {
            "id": "MCAS_4",
            "question": "Q4",
            "choices": {"text": ["u", "v", "w"], "label": list("ABC")},
            "answerKey": "A",
        },
        {"id": "Broken_5", "question": "Q5", "choices": {"text": ["a", "b"], "label": list("AB")}, "answerKey": "C"},
    ]
    df = load_mcq("arc", write_arc_parquet(tmp_path / "arc.parquet", items))
    assert df.attrs["n_dropped"] == 1
    df = df.set_index("item_id")
    assert df.loc["arc-Mercury_1", "answer"] == "B" and df.loc["arc-Mercury_1", "option_b"] == "oxygen"
    assert df.loc["arc-NYSEDREGENTS_2", "answer"] == "D" and df.loc["arc-NYSEDREGENTS_2", "question"] == "Q2"
    assert df.loc["arc-ACTAAP_3", ["answer", "n_options", "option_e"]].tolist() == ["E", 5, "t"]
    assert df.loc["arc-MCAS_4", "n_options"] == 3 and pd.isna(df.loc["arc-MCAS_4", "option_d"])
    assert (df["benchmark"] == "arc").all()


GPQA_HEADER = "Record ID,Question,Correct Answer,Incorrect Answer 1,Incorrect Answer 2,Incorrect Answer 3,Subdomain\n"


def test_gpqa_layout_places_the_correct_answer_at_its_seeded_position(tmp_path):
    rows = [f'rec{i:02d},"Question {i}?",right{i},wrong{i}a,wrong{i}b,wrong{i}c,Physics\n' for i in range(40)]
    path = tmp_path / "gpqa_diamond.csv"
    path.write_text(GPQA_HEADER + "".join(rows))
    df = load_mcq("gpqa", path)
    assert len(df) == 40 and df["item_id"].is_monotonic_increasing
    for row in df.itertuples():
        i = int(row.item_id.removeprefix("gpqa-rec"))
        pos = gpqa_answer_position(row.item_id)
        assert row.answer == "ABCD"[pos]
        options = [row.option_a, row.option_b, row.option_c, row.option_d]
        assert options[pos] == f"right{i}"
        assert [o for o in options if o.startswith("wrong")] == [f"wrong{i}a", f"wrong{i}b", f"wrong{i}c"]
    assert df["answer"].nunique() == 4  # positions spread over A-D
    assert not df.equals(load_mcq("gpqa", path, seed=1))  # the seed moves the answers
    pd.testing.assert_frame_equal(df, load_mcq("gpqa", path))


def test_mmlu_duplicates_get_unique_ids_identical_from_both_layouts(tmp_path):
    records = [
        {
            "question": "What is 2+2? ",
            "answer_a": "3",
            "answer_b": "4",
            "answer_c": "5",
            "answer_d": "6",
            "correct_answer": "B",
            "topic": "elementary mathematics",
        },
        {
            "question": "Same text",
            "answer_a": "a",
            "answer_b": "b",
            "answer_c": "c",
            "answer_d": "d",
            "correct_answer": "C",
            "topic": "college medicine",
        },
        {
            "question": "Same text",
            "answer_a": "a",
            "answer_b": "b",
            "answer_c": "c",
            "answer_d": "d",
            "correct_answer": "C",
            "topic": "clinical knowledge",
        },
        {
            "question": "question",
            "answer_a": "answer_a",
            "answer_b": "answer_b",
            "answer_c": "answer_c",
            "answer_d": "answer_d",
            "correct_answer": "answer",
            "topic": "college mathematics",
        },
    ]
    jsonl = tmp_path / "mmlu.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records))
    mirror = load_mcq("mmlu", jsonl)
    canonical = load_mcq("mmlu", write_canonical_parquet(to_canonical_layout(records[::-1]), tmp_path / "t.parquet"))
    pd.testing.assert_frame_equal(mirror, canonical)
    base = "mmlu-" + content_hash("Same text", ["a", "b", "c", "d"])
    assert dict(zip(mirror["item_id"], mirror["subject"]))[base] == "clinical_knowledge"
    assert dict(zip(mirror["item_id"], mirror["subject"]))[base + "-2"] == "college_medicine"
    assert mirror.attrs["n_dropped"] == 1
    four = mirror.set_index("item_id").loc["mmlu-" + content_hash("What is 2+2?", ["3", "4", "5", "6"])]
    assert four["question"] == "What is 2+2?" and four["answer"] == "B" and four["subject"] == "elementary_mathematics"


def test_item_id_hash_is_sha256_of_question_and_options():
    import hashlib

    expected = hashlib.sha256("Q\x1fa\x1fb\x1fc\x1fd".encode()).hexdigest()[:12]
    assert content_hash("Q", ["a", "b", "c", "d"]) == expected


def test_unknown_benchmark_and_mmlu_format_are_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown benchmark 'hellaswag'"):
        load_mcq("hellaswag", tmp_path / "x.parquet")
    with pytest.raises(ValueError, match="MMLU: expected"):
        load_mcq("mmlu", tmp_path / "mmlu.csv")
