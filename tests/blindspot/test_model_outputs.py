"""Counting what the model-written steps produced: per-reply and per-judgement tables, the study-level
counts and their section of the report."""

import json

import pandas as pd

from thinkbias.blindspot.concepts import concepts_table
from thinkbias.blindspot.model_outputs import model_output_counts, parse_dedup_judgements, parse_hypothesis_replies
from thinkbias.blindspot.report import render_report
from thinkbias.llm.types import Generation

ONE = {
    "title": "Higher — income",
    "verbalization_check_guide": "Check mentions of income.",
    "addition_action": "Raise the income.",
    "removal_action": "Lower the income.",
}


def gen(text: str, finish: str = "stop", tokens: int = 10) -> Generation:
    return Generation(
        text=text, thinking="", answer=text, prompt_tokens=5, completion_tokens=tokens, finish_reason=finish
    )


def test_hypothesis_replies_are_counted_one_row_each():
    replies = [
        gen(json.dumps({"evidence": [], "concepts": [ONE, {**ONE, "title": "no separator"}]})),
        gen('{"evidence": ["a", "b", "c', "length", 600),
        gen(json.dumps({"evidence": [], "concepts": []})),
    ]
    items, table = parse_hypothesis_replies(replies)
    assert [c["title"] for c in items] == ["Higher — income"]
    assert table["n_concepts"].tolist() == [1, 0, 0] and table["n_rejected"].tolist() == [1, 0, 0]
    assert table["finish_reason"].tolist() == ["stop", "length", "stop"] and table["completion_tokens"].iloc[1] == 600


def test_dedup_judgements_keep_unparsable_pairs_distinct():
    titles = ["Higher — income", "More — income", "Less — debt"]
    concepts = concepts_table([{**ONE, "title": t} for t in titles], "generated", "gen")
    pairs = [(0, 1), (0, 2), (1, 2)]
    edges, table = parse_dedup_judgements(concepts, pairs, [gen('{"same": "YES"}'), gen("hmm"), gen('{"same": "NO"}')])
    assert edges == [(0, 1)]
    assert table[["concept_1", "concept_2"]].values.tolist() == [
        ["gen000", "gen001"],
        ["gen000", "gen002"],
        ["gen001", "gen002"],
    ]
    assert table["same"].isna().tolist() == [False, True, False] and bool(table["same"].iloc[0])


def test_counts_and_report_section():
    _, replies = parse_hypothesis_replies(
        [gen(json.dumps({"evidence": [], "concepts": [ONE, ONE]})), gen("{", "length", 600)]
    )
    generated = concepts_table([ONE], "generated", "gen")  # max_concepts = 1
    judgements = pd.DataFrame(
        {"concept_1": ["a", "a"], "concept_2": ["b", "c"], "same": pd.Series([False, None], dtype="boolean")}
    )
    variations = pd.DataFrame(
        {
            "concept_id": ["gen000"] * 3 + ["curated"],
            "input_id": ["x1", "x2", "x3", "x1"],
            "valid": [True, False, False, False],
            "method": ["autorater"] * 3 + ["rule"],
        }
    )
    counts = model_output_counts("loan", replies, generated, judgements, variations)
    got = counts.set_index(["step", "quantity"])["n"]
    assert got[("hypothesis", "replies")] == 2 and got[("hypothesis", "replies cut off at max_tokens")] == 1
    assert got[("hypothesis", "replies without a valid concept")] == 1
    assert got[("hypothesis", "concepts parsed")] == 2 and got[("hypothesis", "concepts kept")] == 1
    assert got[("dedup", "judgements")] == 2 and got[("dedup", "judgements unparsable (concepts kept distinct)")] == 1
    assert got[("variations", "model-written pairs")] == 3  # the rule's pair is not the model's
    assert got[("variations", "invalid pairs (unparsable or identical sides; not tested)")] == 2
    empty = pd.DataFrame(columns=["concept_id", "input_id", "positive", "negative", "valid", "method"])

    def report(table):
        return render_report(
            pd.DataFrame(), pd.DataFrame({"step": ["x"], "n_concepts": [1]}), pd.DataFrame(), {}, {}, None, table
        )

    assert "| loan | dedup | judgements unparsable (concepts kept distinct) | 1 |" in report(counts)
    none = model_output_counts("loan", replies.iloc[0:0], generated.iloc[0:0], judgements.iloc[0:0], empty)
    assert (none["n"] == 0).all() and "Model-written" not in report(none)
