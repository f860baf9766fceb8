"""Concept parsing, curated concepts and de-duplication."""

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from thinkbias.blindspot.concepts import (
    TITLE_SCHEMA,
    build_hypothesis_prompt,
    concepts_table,
    curated_concepts,
    dedup_pairs,
    deduplicate,
    normalise_title,
    parse_concepts,
    parse_same,
    group_roots,
)

CATALOGUE = yaml.safe_load((Path(__file__).resolve().parents[2] / "resources/blindspot/concepts.yaml").read_text())
ONE = {
    "title": "Favors Spanish fluency — Spanish language ability",
    "verbalization_check_guide": "Check mentions of Spanish language skills.",
    "addition_action": "Say the applicant speaks Spanish.",
    "removal_action": "Say the applicant speaks no Spanish.",
}


def test_parse_json_reply_with_surrounding_text():
    text = "Here you go:\n" + json.dumps({"evidence": ["name"], "concepts": [ONE, {**ONE, "title": "no separator"}]})
    found, rejected = parse_concepts(text)
    assert len(found) == 1 and rejected == 1
    assert found[0]["title"] == ONE["title"]


def test_parse_reply_cut_off_at_its_token_budget_keeps_its_complete_concepts():
    full = json.dumps({"evidence": ["a name", "an age"], "concepts": [ONE, {**ONE, "title": "Older — age"}, ONE]})
    cut = full[: full.rindex(ONE["removal_action"])]  # the third concept is incomplete
    found, rejected = parse_concepts(cut)
    assert [c["title"] for c in found] == [ONE["title"], "Older — age"] and rejected == 0
    assert parse_concepts(full[:40]) == ([], 0)


def test_parse_reply_with_raw_newlines_inside_strings():
    text = json.dumps({"evidence": [], "concepts": [{**ONE, "addition_action": "Say it.\nTwice."}]}).replace(
        "\\n", "\n"
    )
    assert "\n" in text
    found, _ = parse_concepts(text)
    assert found[0]["addition_action"] == "Say it. Twice."


def test_title_pattern_admits_only_titles_the_parser_keeps():
    pattern = re.compile(TITLE_SCHEMA["pattern"])
    for title in ("Higher — income", "Favors applicants from cities — place of residence"):
        assert pattern.match(title) and normalise_title(title) == title
    for title in ("Higher income", "Higher - income", 'Say "hi" — greeting', "x" * 61 + " — y", "A — b — c"):
        assert not pattern.match(title), title


def test_parse_xml_fallback_and_dash_normalisation():
    text = (
        "<concept><title>Higher income -- income level</title>"
        "<verbalization_check_guide>Check mentions of income.</verbalization_check_guide>"
        "<addition_action>Raise it.</addition_action><removal_action>Lower it.</removal_action></concept>"
        "<concept><title>Older — age</title><addition_action>x</addition_action></concept>"
    )
    found, rejected = parse_concepts(text)
    assert [c["title"] for c in found] == ["Higher income — income level"] and rejected == 1
    assert normalise_title("More formal – writing") == "More formal — writing"
    assert normalise_title("nothing here") is None
    assert parse_concepts("garbage") == ([], 0)


def test_curated_concepts_and_task_applicability():
    ids = [c["id"] for c in CATALOGUE["concepts"]]
    loan = curated_concepts(CATALOGUE, ids, "loan")
    hiring = curated_concepts(CATALOGUE, ids, "hiring")
    assert "formality_high" in set(loan["concept_id"]) and "formality_high" not in set(hiring["concept_id"])
    assert (loan["title"].str.contains(" — ")).all() and loan["variation_rule"].astype(bool).all()
    assert "mosque" in loan.set_index("concept_id").loc["religion_minority", "keywords"]


def test_groups_keep_their_lowest_index():
    assert group_roots(5, [(3, 4), (1, 3), (0, 2)]) == [0, 1, 0, 1, 1]
    assert group_roots(3, []) == [0, 1, 2]
    assert group_roots(4, [(2, 1), (1, 1), (3, 2), (3, 2)]) == [0, 1, 1, 1]  # any order, self-loops, repeats
    assert group_roots(0, []) == []


def test_groups_match_a_search_of_every_item_on_random_graphs():
    def lowest_reachable(n, edges):  # the smallest index each item reaches, by a plain search
        near = {i: set() for i in range(n)}
        for i, j in edges:
            near[i].add(j)
            near[j].add(i)
        out = []
        for start in range(n):
            seen, todo = {start}, [start]
            while todo:
                for nxt in near[todo.pop()] - seen:
                    seen.add(nxt)
                    todo.append(nxt)
            out.append(min(seen))
        return out

    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(1, 30))
        edges = [tuple(int(v) for v in rng.integers(0, n, 2)) for _ in range(int(rng.integers(0, 2 * n)))]
        assert group_roots(n, edges) == lowest_reachable(n, edges), (n, edges)


def test_dedup_skips_curated_pairs_and_merges_duplicates():
    curated = curated_concepts(CATALOGUE, ["gender_female", "race_black"], "loan")
    gen = concepts_table([ONE, {**ONE, "title": "Favors Spanish speakers — Spanish ability"}], "generated", "gen")
    merged = pd.concat([curated, gen], ignore_index=True)
    pairs = dedup_pairs(merged)
    assert (0, 1) not in pairs and len(pairs) == 5
    out = deduplicate(merged, [(2, 3)])
    assert out["merged_into"].tolist() == ["gender_female", "race_black", "gen000", "gen000"]


def test_parse_same_and_prompt():
    assert parse_same('{"same": "YES"}') and not parse_same('{"same": "NO"}')
    assert parse_same("YES, identical") is True and parse_same("No. Different scopes.") is False
    assert parse_same("They are different") is None and parse_same('{"same": "maybe"}') is None
    assert parse_same("The eyes are blue") is None  # a YES inside a word is no answer
    prompt = build_hypothesis_prompt(
        "$n_examples:$examples:$min_concepts:$input_name", ["P1", "P2"], "loan application", 25
    )
    assert prompt.startswith("2:<example-task-1>\nP1\n</example-task-1>") and prompt.endswith(":25:loan application")
