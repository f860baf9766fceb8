"""The all-24-orderings design end to end at the library level: prompts, records, per-question
metrics, every table, and the planner's request counts."""

import math

import pandas as pd
import pytest

from thinkbias.position.items import four_option_items, permutations_table
from thinkbias.position.plan import n_prompts, shard_count
from thinkbias.position.questions import configuration_summary, question_metrics
from thinkbias.position.records import extract_records
from thinkbias.position.tables import partial_correlation_table, quartile_table, robustness_table, wilcoxon_table
from thinkbias.report.plan import position_rows


def _items(n=8):
    return four_option_items(
        pd.DataFrame(
            {
                "benchmark": "mmlu",
                "item_id": [f"i{q}" for q in range(n)],
                "subject": "s",
                "question": [f"Question {q}?" for q in range(n)],
                "option_a": [f"a{q}" for q in range(n)],
                "option_b": [f"b{q}" for q in range(n)],
                "option_c": [f"c{q}" for q in range(n)],
                "option_d": [f"d{q}" for q in range(n)],
                "answer": ["ABCD"[q % 4] for q in range(n)],
                "n_options": 4,
            }
        )
    )


def _generations(prompts: pd.DataFrame) -> pd.DataFrame:
    """direct: always position A. reasoning: the correct option, with length growing by question, except
    that it answers "the option shown after original option A" on odd questions (a neighbour effect)."""
    rows = []
    for p in prompts.itertuples(index=False):
        q = p.question_order
        rows.append({**p._asdict(), "model": "m", "mode": "direct", "full_text": "The answer is (A)."})
        if q % 2:
            j = p.ordering.index("A")
            letter = "ABCD"[(j + 1) % 4]
        else:
            letter = p.correct_position
        rows.append(
            {
                **p._asdict(),
                "model": "m",
                "mode": "reasoning",
                "full_text": "Let me think. " * (q + 1) + f"The answer is ({letter}).",
            }
        )
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def questions_and_records():
    prompts = permutations_table(_items(), "all")
    records = extract_records(_generations(prompts))
    return question_metrics(records), records


def test_pbs_and_accuracy_over_24_orderings(questions_and_records):
    questions, records = questions_and_records
    assert len(records) == 2 * 8 * 24 and records["extracted"].all()
    q = questions.set_index(["mode", "question_id"])
    direct = q.loc["direct"]
    assert (direct["n_records"] == 24).all()
    assert direct["pbs"].tolist() == pytest.approx([math.sqrt(0.75)] * 8)
    assert direct["accuracy"].tolist() == pytest.approx([0.25] * 8)  # the correct option is at A in 6 of 24
    reasoning = q.loc["reasoning"]
    even = reasoning.iloc[::2]
    assert (even["pbs"] == 0).all() and (even["accuracy"] == 1).all()
    # the position after option A is each position 6 times, so PBS is 0; it holds the correct option
    # in 8 of 24 orderings (A at any position, the correct one next, the other two either way)
    odd = reasoning.iloc[1::2]
    assert (odd["pbs"] == 0).all()
    assert odd["accuracy"].tolist() == pytest.approx([8 / 24] * 4)


def test_cyclic_shifts_cannot_tell_a_neighbour_effect_from_content():
    """Under the cyclic shifts option A is always followed by option B, so "the option after A" is
    always B's text: a neighbour effect looks like a content answer (accuracy 1 when B is correct)."""
    records = extract_records(_generations(permutations_table(_items(), "cyclic")))
    q = question_metrics(records).set_index(["mode", "question_id"]).loc["reasoning"]
    assert q["accuracy"].tolist() == [1.0, 1.0, 1.0, 0.0] * 2  # questions 1 and 5 have B correct, 3 and 7 D
    assert (q["pbs"] == 0).all()


def test_every_table_works_on_the_24_ordering_design(questions_and_records):
    questions, records = questions_and_records
    summary = configuration_summary(records, questions).set_index("mode")
    assert summary.loc["direct", "n_records"] == 192 and summary.loc["direct", "extraction_rate"] == 1.0
    assert summary.loc["reasoning", "pbs"] == 0.0
    t1 = partial_correlation_table(questions)
    assert len(t1) == 2 and (t1["n"] == 8).all()
    assert len(quartile_table(questions)) == 8
    assert len(robustness_table(questions, (2, 4))) == 4
    t4 = wilcoxon_table(questions, [{"reasoning": "m/reasoning", "reference": "m/direct"}]).iloc[0]
    assert t4["n_pairs"] == 8 and t4["n_nonzero"] == 8 and t4["gap"] == pytest.approx(-math.sqrt(0.75))
    assert t4["p_greater"] == pytest.approx(1.0)


def test_the_planner_counts_six_times_the_requests():
    section = {
        "benchmarks": {"mmlu": {"path": "x", "n_questions": 10}},
        "max_tokens": {"cot": 64},
        "runs": [{"model": "a", "mode": "cot"}],
        "truncation": {"runs": []},
    }
    assert n_prompts(section, "mmlu", "a", "cot") == 40
    assert n_prompts({**section, "orderings": "all"}, "mmlu", "a", "cot") == 240
    assert shard_count(n_prompts({**section, "orderings": "all"}, "mmlu", "a", "cot"), 16) == 15
    assert position_rows(section)[0]["requests"] == 40
    assert position_rows({**section, "orderings": "all"})[0]["requests"] == 240
