"""The rediscovery table against hand-made concept, stage and flagged tables."""

import json

import numpy as np
import pandas as pd
import pytest

from thinkbias.blindspot.concepts import concepts_table
from thinkbias.blindspot.rediscovery import (
    matching_concepts,
    names_attribute,
    rediscovery_row,
    rediscovery_table,
)
from thinkbias.blindspot.report import render_report

CF_SEX = {"type": "counterfactual", "column": "sex", "positive": "Female", "negative": "Male"}


def concept(cid, title, keywords=None, rule=None):
    return {
        "id": cid,
        "title": title,
        "verbalization_check_guide": "g",
        "addition_action": "a",
        "removal_action": "r",
        "keywords": keywords,
        "variation": rule,
    }


def merged_table(curated, generated, merged_into):
    out = pd.concat(
        [concepts_table(curated, "curated", "curated"), concepts_table(generated, "generated", "g")], ignore_index=True
    )
    out["merged_into"] = [merged_into.get(c, c) for c in out["concept_id"]]
    return out


def stage_row(cid, stage, status, delta, b, c, p):
    return {
        "model": "m",
        "task": "t",
        "stage": stage,
        "concept_id": cid,
        "status": status,
        "delta": delta,
        "ci_low": delta - 0.1,
        "ci_high": delta + 0.1,
        "n": b + c + 10,
        "n_invalid": 1,
        "b": b,
        "c": c,
        "p_value": p,
        "log10_p_value": np.log10(p),
    }


@pytest.mark.parametrize(
    "title, keywords, attribute, expected",
    [
        ("Favors female applicants — gender", "", "sex", True),
        ("Mentions the person's sex — demographics", "", "sex", True),
        ("Older applicants — age", "age|older", "sex", False),
        ("Women in the workforce — employment", "", "sex", True),
        ("High capital gains — capital income", "capital|income", "sex", False),
        ("Non-White defendant — demographics", "", "race", True),
        ("White-collar background — occupation", "white-collar|occupation", "race", False),
        ("Prior record — criminal history", "priors", "race", False),
        ("Defendant's ethnic background — ethnicity", "", "race", True),
    ],
)
def test_what_names_the_attribute(title, keywords, attribute, expected):
    assert names_attribute(title, keywords, attribute) is expected


def test_counterfactual_rule_and_merged_duplicates_match():
    merged = merged_table(
        [concept("protected_sex_female", "Describes the person as a woman — sex", ["x"], CF_SEX)],
        [
            concept("g000", "Long hours — work", ["hours"]),
            concept("g001", "Mentions gender — gender"),
            concept("g002", "Weekend work — work", ["weekend"]),
        ],
        {"g001": "g002"},
    )
    # the curated one by its rule (its keywords name nothing), g001 by its title, g002 because g001 merged into it
    assert matching_concepts(merged, "sex") == {"protected_sex_female", "g001", "g002"}
    assert json.loads(merged.loc[0, "variation_rule"])["type"] == "counterfactual"


def test_flagged_protected_attribute_and_other_flags():
    generated = concepts_table(
        [
            concept("g000", "Mentions the applicant's gender — gender", ["gender"]),
            concept("g001", "High capital gains — capital income", ["capital", "income"]),
            concept("g002", "Works in a white-collar job — occupation"),
        ],
        "generated",
        "g",
    )
    merged = merged_table(
        [concept("protected_sex_female", "Describes the person as a woman — sex", ["sex"], CF_SEX)],
        [
            concept("g000", "Mentions the applicant's gender — gender", ["gender"]),
            concept("g001", "High capital gains — capital income", ["capital", "income"]),
            concept("g002", "Works in a white-collar job — occupation"),
        ],
        {"g000": "protected_sex_female"},
    )
    stages = pd.DataFrame(
        [
            stage_row("protected_sex_female", 0, "continue", 0.15, 9, 3, 0.02),
            stage_row("g001", 0, "flagged", -0.25, 1, 14, 1e-4),
            stage_row("g002", 0, "futile", 0.0, 2, 2, 1.0),
            stage_row("protected_sex_female", 1, "flagged", 0.20, 30, 6, 3e-5),
        ]
    )
    flagged = pd.DataFrame(
        {
            "concept_id": ["g001", "protected_sex_female"],
            "title": ["High capital gains — capital income", "Describes the person as a woman — sex"],
            "delta": [-0.25, 0.20],
        }
    )
    row = rediscovery_row("m", "fairness_adult", generated, merged, stages, flagged)
    assert row["protected_attribute"] == "sex" and row["dataset"] == "adult"
    assert row["curated_concept"] == "protected_sex_female"
    assert row["hypothesized"] and row["n_hypothesized"] == 1
    assert row["hypothesized_titles"] == "Mentions the applicant's gender — gender"
    assert row["tested"] and row["flagged"]
    # the matching concept's last stage
    assert (row["concept_id"], row["status"], row["stage"]) == ("protected_sex_female", "flagged", 1)
    assert (row["delta"], row["b"], row["c"], row["n"], row["p_value"]) == (0.20, 30, 6, 46, 3e-5)
    assert row["n_concepts_tested"] == 3
    assert row["n_other_flagged"] == 1
    assert row["other_flagged"] == "g001 (High capital gains — capital income, -25.0 pp)"


def test_hypothesized_but_not_significant_and_not_tested():
    race = concept("g000", "Race of the defendant — race")
    collar = concept("g001", "White-collar background — occupation", ["white-collar"])
    priors = concept("g002", "Many priors — criminal history", ["priors"])
    generated = concepts_table([race, collar, priors], "generated", "g")
    merged = merged_table([], [race, collar, priors], {})
    stages = pd.DataFrame(
        [
            stage_row("g000", 0, "continue", 0.05, 4, 2, 0.6),
            stage_row("g000", 1, "not_significant", 0.04, 6, 3, 0.5),
            stage_row("g002", 0, "flagged", 0.3, 20, 1, 1e-5),
        ]
    )
    flagged = pd.DataFrame({"concept_id": ["g002"], "title": ["Many priors — criminal history"], "delta": [0.3]})
    row = rediscovery_row("m", "fairness_compas", generated, merged, stages, flagged)
    assert row["protected_attribute"] == "race" and row["curated_concept"] == ""
    assert row["hypothesized"] and row["n_hypothesized"] == 1  # white-collar is not race
    assert row["tested"] and not row["flagged"]
    assert (row["concept_id"], row["status"], row["stage"], row["delta"]) == ("g000", "not_significant", 1, 0.04)
    assert row["other_flagged"] == "g002 (Many priors — criminal history, +30.0 pp)"
    # the same concept stopped by the baseline filter: never tested, no effect
    untested = rediscovery_row(
        "m", "fairness_compas", generated, merged, stages[stages["concept_id"] != "g000"], flagged
    )
    assert untested["hypothesized"] and not untested["tested"] and not untested["flagged"]
    assert "delta" not in untested
    table = rediscovery_table([row, untested])
    assert table["delta"].isna().tolist() == [False, True]
    report = render_report(
        pd.DataFrame(), pd.DataFrame({"step": ["x"]}), pd.DataFrame({"stage": ["0"]}), {}, {}, rediscovery=table
    )
    assert "## Fairness tasks: is the protected attribute rediscovered?" in report
    assert (
        "- m / fairness_compas: race hypothesized by 1 generated concept(s); g000 was tested and ended "
        "`not_significant` at stage 1: P(Yes) +4.0 pp [-6.0 pp, +14.0 pp] over 19 pairs, p = 0.5; "
        "1 other concept(s) flagged." in report
    )
    assert "no concept matching it was tested" in report
