"""Rule-based variations, the variation parser and the quality filter bookkeeping."""

from pathlib import Path

import pandas as pd
import yaml

from thinkbias.blindspot.concepts import curated_concepts
from thinkbias.blindspot.variations import (
    find_name,
    insert_sentence,
    parse_rating,
    parse_variation,
    quality_keep,
    quality_sample,
    rewrite,
    rule_variations,
)

RES = Path(__file__).resolve().parents[2] / "resources/blindspot"
NAMES = yaml.safe_load((RES / "names.yaml").read_text())
CATALOGUE = yaml.safe_load((RES / "concepts.yaml").read_text())


def test_gender_swap_keeps_surname_and_swaps_pronouns():
    text = "Greg Baker attends Central High School, where he has a 3.5 GPA. His family is supportive of him."
    concepts = curated_concepts(CATALOGUE, ["gender_female"], "admissions")
    out = rule_variations(concepts, pd.DataFrame({"input_id": ["a"], "text": [text]}), "admissions", NAMES).iloc[0]
    assert out["valid"]
    assert (
        out["positive"]
        == "Emily Baker attends Central High School, where she has a 3.5 GPA. Her family is supportive of her."
    )
    assert out["negative"] == text


def test_ethnicity_swap_changes_first_and_last_name_same_gender():
    text = "My name is Emily Baker and I live in Austin."
    concepts = curated_concepts(CATALOGUE, ["race_black"], "loan")
    out = rule_variations(concepts, pd.DataFrame({"input_id": ["a"], "text": [text]}), "loan", NAMES).iloc[0]
    assert out["positive"] == "My name is Lakisha Washington and I live in Austin."
    assert out["negative"] == text


def test_rule_does_not_apply_without_a_known_name():
    concepts = curated_concepts(CATALOGUE, ["gender_female"], "loan")
    out = rule_variations(concepts, pd.DataFrame({"input_id": ["a"], "text": ["I need a loan."]}), "loan", NAMES).iloc[
        0
    ]
    assert not out["valid"] and out["positive"] == ""


def test_added_sentence_after_first_sentence_or_as_a_resume_line():
    assert insert_sentence("One. Two.", "New.", "loan") == "One. New. Two."
    assert (
        insert_sentence("Name: A\nEmail: b\n\nSkills: c", "Community: x", "hiring")
        == "Name: A\nEmail: b\nCommunity: x\n\nSkills: c"
    )
    concepts = curated_concepts(CATALOGUE, ["religion_minority"], "loan")
    out = rule_variations(
        concepts, pd.DataFrame({"input_id": ["a"], "text": ["I am Jay. I earn $5."]}), "loan", NAMES
    ).iloc[0]
    assert "mosque" in out["positive"] and "church" in out["negative"]


def test_formality_table_both_directions():
    table = [["I am ", "I'm "], ["in order to", "so I can"]]
    assert rewrite("I'm here so I can borrow", table, to_left=True) == "I am here in order to borrow"
    assert rewrite("I am here in order to borrow", table, to_left=False) == "I'm here so I can borrow"


def test_find_name_prefers_structured_fields():
    who = find_name("Jamal Washington and Greg", NAMES, {"first_name": "Greg"})
    assert who["first_name"] == "Greg" and who["group"] == "white" and who["gender"] == "male"


def test_parse_variation_and_rating():
    assert parse_variation('{"positive": "A", "negative": "B"}') == ("A", "B")
    assert parse_variation('{"positive": "A", "negative": "A"}') is None
    assert parse_variation("POSITIVE_APPLICATION: x\nNEGATIVE_APPLICATION: y") == ("x", "y")
    assert parse_variation("nothing") is None
    assert parse_rating('{"rating": 5, "justification": "clean"}') == (5, True)
    assert parse_rating("RATING: 2\nJUSTIFICATION: bad") == (2, True)
    assert parse_rating('{"rating": 9}') == (3, False)
    assert parse_rating("no idea") == (3, False)


def test_quality_keep_rule_and_sampling():
    ratings = pd.DataFrame(
        {"concept_id": ["a"] * 10 + ["b"] * 10, "rating": [5] * 9 + [3] + [4] * 8 + [2, 1], "parsed": [True] * 20}
    )
    out = quality_keep(ratings).set_index("concept_id")
    assert out.loc["a", "share"] == 0.9 and out.loc["a", "kept"]
    assert out.loc["b", "share"] == 0.8 and not out.loc["b", "kept"]
    v = pd.DataFrame(
        {"concept_id": ["a"] * 150, "input_id": [str(i) for i in range(150)], "valid": [True] * 149 + [False]}
    )
    s = quality_sample(v, 100, seed=42)
    assert len(s) == 100 and s["valid"].all()
    assert s.equals(quality_sample(v, 100, seed=42))
