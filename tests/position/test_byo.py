"""Bring-your-own generations: the documented schema, checked on real files; what an empty text does
to the tables; a model name with "/" in Table 4; and real Snakemake runs of the study target."""

import json
import math

import pandas as pd
import pytest

from thinkbias.config import validate_config
from thinkbias.data.byo_table import TableError
from thinkbias.position.byo import normalise_byo, read_byo_generations
from thinkbias.position.items import option_orderings
from thinkbias.position.questions import configuration_summary, question_metrics
from thinkbias.position.records import extract_records
from thinkbias.position.tables import wilcoxon_table
from tests.helpers import REPO, base_config, run_snakemake, tiny_config


def always_right(
    n_questions: int = 4, model: str = "m", mode: str = "reasoning", design: str = "cyclic"
) -> pd.DataFrame:
    """A model that always answers the correct option, question q's correct original option being
    q mod 4, shown where the design's orderings put it; reasoning length grows with q."""
    rows = []
    for q in range(n_questions):
        for s, ordering in enumerate(option_orderings(design)):
            correct = "ABCD"[ordering.index(q % 4)]
            rows.append(
                {
                    "question_id": f"q{q}",
                    "permutation": s,
                    "model": model,
                    "mode": mode,
                    "full_text": "Let me think. " * (q + 1) + f"The answer is ({correct}).",
                    "correct_position": correct,
                }
            )
    return pd.DataFrame(rows)


def _write(table: pd.DataFrame, path):
    table.to_csv(path, index=False)
    return path


def test_valid_table_is_normalised(tmp_path):
    table = always_right().assign(mode="Reasoning")
    table.loc[1, "correct_position"] = "1"  # 0-3 means A-D
    out = read_byo_generations(_write(table, tmp_path / "g.csv"))
    assert out["mode"].unique().tolist() == ["reasoning"] and out["benchmark"].unique().tolist() == ["byo"]
    assert out["correct_position"].tolist()[:4] == ["A", "B", "C", "D"]
    # a mode in two spellings is one configuration: the repeated permutation is found
    twice = pd.concat([always_right(1), always_right(1).iloc[[0]].assign(mode=" CoT ")], ignore_index=True)
    twice.loc[1:3, "mode"] = "cot"
    twice.loc[0, "mode"] = "COT"
    with pytest.raises(TableError, match=r"duplicate key \(benchmark, model, mode, question_id, permutation\): 2 of 5"):
        normalise_byo(twice)
    with pytest.raises(
        TableError, match="column 'mode': 4 of 4 rows not one of direct, cot, reasoning; first: 'thinking'"
    ):
        normalise_byo(always_right(1).assign(mode="Thinking"))
    assert out["question_order"].tolist() == [q for q in range(4) for _ in range(4)]


def test_think_tags_in_full_text_are_split():
    table = always_right(1)
    table.loc[[0, 1], "full_text"] = ["<think>B? maybe.</think>\nI would go for C here.", "no tags here"]
    out = normalise_byo(table)
    assert out["full_text"].tolist()[:2] == ["B? maybe.\n\nI would go for C here.", "no tags here"]
    assert out["answer"].tolist()[:2] == ["I would go for C here.", None]


def test_question_with_fewer_permutations_is_an_error(tmp_path):
    # without the check, an always-right model scored PBS 0.289 on the question missing a permutation
    table = always_right().drop(index=3)
    path = _write(table, tmp_path / "g.csv")
    with pytest.raises(
        TableError,
        match=(
            rf"^bring-your-own generations {path}: 1 problem\(s\)\n  - questions without each of the 4 permutations "
            r"0-3 \(cyclic orderings\) exactly once: 3 of 15 rows; "
            r"first: \('byo', 'm', 'reasoning', 'q0'\) rows 1, 2, 3$"
        ),
    ):
        read_byo_generations(path)


def test_question_with_more_permutations_is_an_error(tmp_path):
    table = pd.concat([always_right(), always_right().iloc[[0]].assign(permutation=4)], ignore_index=True)
    with pytest.raises(TableError) as err:
        read_byo_generations(_write(table, tmp_path / "g.csv"))
    assert "column 'permutation': 1 of 17 rows not one of 0, 1, 2, 3; first: 4 (row 17)" in str(err.value)
    assert "exactly once: 5 of 17 rows; first: ('byo', 'm', 'reasoning', 'q0') rows 1, 2, 3, 4, 17" in str(err.value)


def test_correct_position_off_the_cyclic_protocol_is_an_error(tmp_path):
    path = _write(always_right().assign(correct_position="A"), tmp_path / "g.csv")
    with pytest.raises(
        TableError,
        match=(
            r"correct_position does not follow the cyclic orderings \(the correct original option differs between "
            r"permutations of a question\): 16 of 16 rows; first: \('byo', 'm', 'reasoning', 'q0'\) rows 1, 2, 3, 4;"
        ),
    ):
        read_byo_generations(path)


def test_all_24_orderings_are_checked_against_their_own_design(tmp_path):
    table = always_right(2, design="all")
    assert len(normalise_byo(table, "all")) == 48
    with pytest.raises(TableError, match=r"column 'permutation': 40 of 48 rows not one of 0, 1, 2, 3"):
        normalise_byo(table, "cyclic")
    with pytest.raises(TableError, match="correct_position does not follow the all orderings"):
        normalise_byo(table.assign(correct_position="A"), "all")
    with pytest.raises(TableError, match=r"each of the 24 permutations 0-23 \(all orderings\) exactly once: 23 of 47"):
        normalise_byo(table.drop(index=5), "all")


def test_empty_question_id_is_an_error(tmp_path):
    table = always_right()
    table.loc[0, "question_id"] = ""
    with pytest.raises(TableError) as err:
        read_byo_generations(_write(table, tmp_path / "g.csv"))
    assert "column 'question_id': 1 of 16 rows empty; first: (empty) (row 1)" in str(err.value)


def test_all_empty_texts_are_an_error(tmp_path):
    path = _write(always_right().assign(full_text=""), tmp_path / "g.csv")
    with pytest.raises(
        TableError,
        match=(
            r"configurations whose every full_text is empty: 16 of 16 rows; "
            r"first: \('byo', 'm', 'reasoning'\) rows 1, 2, 3, 4, 5, ..."
        ),
    ):
        read_byo_generations(path)


def test_non_utf8_names_file_and_line(tmp_path):
    path = tmp_path / "g.csv"
    table = always_right()
    table.loc[5, "full_text"] = "Caf\u00e9. The answer is (B)."
    path.write_bytes(table.to_csv(index=False).encode("latin-1"))
    with pytest.raises(
        TableError, match=rf"^bring-your-own generations {path}, line 7, column 21: not UTF-8 \(byte 0xe9"
    ):
        read_byo_generations(path)


def test_empty_text_is_unparsed_and_left_out_of_lengths(tmp_path):
    table = always_right()
    table.loc[0, "full_text"] = ""
    table.loc[0, "response"] = "The answer is (A)."  # a response does not make an empty trajectory parsed
    records = extract_records(read_byo_generations(_write(table, tmp_path / "g.csv")))
    assert records.loc[0, "extraction_status"] == "none" and bool(records.loc[0, "empty_text"])
    assert math.isnan(records.loc[0, "length_chars"])
    questions = question_metrics(records).set_index("question_id")
    assert questions.loc["q0", "length"] == pytest.approx(32.0)  # the three texts of 32 characters
    assert questions.loc["q0", "n_extracted"] == 3
    summary = configuration_summary(records, question_metrics(records)).iloc[0]
    assert summary["n_empty_text"] == 1 and summary["n_unparsed"] == 1 and summary["n_records"] == 16
    assert summary["length"] == pytest.approx((32 + 46 + 60 + 74) / 4)


def test_model_name_with_slash_in_table4():
    questions = question_metrics(
        extract_records(
            normalise_byo(
                pd.concat(
                    [
                        always_right(model="org/m"),
                        always_right(model="org/m", mode="direct").assign(full_text="The answer is (A)."),
                    ],
                    ignore_index=True,
                )
            )
        )
    )
    t4 = wilcoxon_table(questions, [{"reasoning": "org/m/reasoning", "reference": "org/m/direct"}]).iloc[0]
    assert t4["n_pairs"] == 4 and t4["pbs_reasoning"] == 0 and t4["pbs_reference"] == pytest.approx(math.sqrt(0.75))
    cfg = base_config()
    cfg["position"]["wilcoxon_pairs"] = [{"reasoning": "org/m/reasoning", "reference": "org/m/direct"}]
    validate_config(cfg, REPO / "config/schema/config.schema.yaml")


@pytest.mark.slow
def test_byo_run_stops_on_a_missing_permutation(workflow_dir):
    path = _write(always_right().drop(index=3), workflow_dir / "external.csv")
    override = json.dumps({"byo_generations": str(path)})
    proc = run_snakemake(
        workflow_dir,
        ["--cores", "1", "position", "--config", f"position={override}"],
        config=tiny_config(position={}),
        check=False,
        timeout=600,
    )
    assert proc.returncode != 0
    message = (
        "questions without each of the 4 permutations 0-3 (cyclic orderings) exactly once: 3 of 15 rows; "
        "first: ('byo', 'm', 'reasoning', 'q0') rows 1, 2, 3"
    )
    assert message in proc.stderr and f"bring-your-own generations {path}" in proc.stderr
    assert message in (workflow_dir / "logs/position/byo/records.log").read_text()
    assert not (workflow_dir / "results/position/byo/records.parquet").exists()


@pytest.mark.slow
def test_byo_run_with_an_empty_text_and_a_model_name_with_slash(workflow_dir):
    table = pd.concat(
        [
            always_right(model="org/m"),
            always_right(model="org/m", mode="direct").assign(full_text="The answer is (A)."),
        ],
        ignore_index=True,
    )
    table.loc[0, "full_text"] = ""
    path = _write(table, workflow_dir / "external.csv")
    override = json.dumps(
        {
            "byo_generations": str(path),
            "wilcoxon_pairs": [{"reasoning": "org/m/reasoning", "reference": "org/m/direct"}],
        }
    )
    run_snakemake(
        workflow_dir,
        ["--cores", "1", "position", "--config", f"position={override}"],
        config=tiny_config(position={}),
        timeout=900,
    )
    root = workflow_dir / "results/position/tables"
    t2 = pd.read_csv(root / "table2_summary.csv").set_index("mode")
    assert t2.loc["reasoning", "n_empty_text"] == 1 and t2.loc["reasoning", "n_unparsed"] == 1
    assert t2.loc["reasoning", "length"] == pytest.approx((32 + 46 + 60 + 74) / 4)
    assert t2.loc["direct", "n_empty_text"] == 0
    assert "n_empty_text" in (root / "table2_summary.md").read_text()
    t4 = pd.read_csv(root / "table4_wilcoxon.csv").iloc[0]
    assert t4["reasoning"] == "org/m/reasoning" and t4["n_pairs"] == 4
    assert t4["pbs_reference"] == pytest.approx(math.sqrt(0.75))
