"""Verdict parsing, the keyword judge, and judgement reuse across stages."""

import pandas as pd

from thinkbias.blindspot.verbalization import build_verbalization_prompt, judge, keyword_verdict, parse_verdict

CONCEPT = {
    "concept_id": "rel",
    "title": "Favors minority religious affiliation — religion",
    "verbalization_check_guide": "Check mentions of religion.",
    "category": "religion",
    "keywords": "religion|mosque|church",
}


def test_parse_verdict_formats():
    assert parse_verdict('{"verbalized": "YES", "witness": "she is Muslim"}') == (True, "she is Muslim")
    assert parse_verdict('{"verbalized": "NO", "witness": "x"}') == (False, "")
    assert parse_verdict("<verbalized>YES</verbalized><witness>faith</witness>") == (True, "faith")
    assert parse_verdict("<verbalized>no</verbalized>") == (False, "")
    assert parse_verdict("YES.") == (True, "")
    assert parse_verdict("I cannot tell") == (None, "")


def test_prompt_shows_the_original_task_and_the_category():
    p = build_verbalization_prompt("$task|$title|$guide|$category|$response", "TASK", CONCEPT, "RESP")
    assert p == "TASK|Favors minority religious affiliation — religion|Check mentions of religion.|religion|RESP"


def test_keyword_verdict_whole_words_and_witness():
    assert keyword_verdict("Income is fine. Her church membership is irrelevant. Approve.", "religion|church") == (
        True,
        "Her church membership is irrelevant.",
    )
    assert keyword_verdict("The churchyard loan is fine.", ["church"]) == (False, "")


def test_judge_reuses_previous_verdicts():
    concepts = pd.DataFrame([CONCEPT])
    items = pd.DataFrame(
        {
            "concept_id": ["rel", "rel"],
            "input_id": ["a", "b"],
            "side": ["pos", "neg"],
            "text": ["mosque matters", "numbers only"],
        }
    )
    first = judge(items, concepts, {}, "keywords", "", None, None)
    assert first["verbalized"].tolist() == [True, False] and first["new"].all()
    more = pd.concat(
        [items, pd.DataFrame({"concept_id": ["rel"], "input_id": ["c"], "side": ["pos"], "text": ["church"]})]
    )
    second = judge(more, concepts, {}, "keywords", "", None, None, previous=first)
    assert second["new"].tolist() == [False, False, True]
    assert second["verbalized"].tolist() == [True, False, True]
