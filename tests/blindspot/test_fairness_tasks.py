"""The fairness datasets as blindspot tasks: inputs are the fairness study's profiles, the curated
counterfactual concept's pairs are its counterfactual pairs, decisions are its Yes/No."""

from pathlib import Path

import pandas as pd
import pytest
import yaml

from thinkbias.blindspot.concepts import curated_concepts
from thinkbias.blindspot.fairness_tasks import (
    FAIRNESS_TASKS,
    counterfactual_variation,
    fairness_inputs,
    fairness_prompt_has_question,
)
from thinkbias.blindspot.tasks import render_task_prompt, task_spec
from thinkbias.blindspot.variations import rule_variations
from thinkbias.data.loaders import load_tabular, tidy_credit
from thinkbias.fairness.prompts import build_prompts
from thinkbias.tasks.records import sample_records
from thinkbias.tasks.templates import QUESTIONS

REPO = Path(__file__).resolve().parents[2]
CATALOGUE = yaml.safe_load((REPO / "resources/blindspot/concepts.yaml").read_text())
RAW = {"adult": ["raw/adult/adult.data", "raw/adult/adult.test"], "compas": ["raw/compas/compas-scores-two-years.csv"]}
CURATED = {
    "fairness_adult": "protected_sex_female",
    "fairness_compas": "protected_race_nonwhite",
    "fairness_credit": "protected_sex_female",
}


def credit_records() -> pd.DataFrame:
    """Six Credit rows in the sheet's layout (the UCI file is not on a wheel mirror)."""
    rows = []
    for i in range(6):
        row = {
            "ID": i + 1,
            "LIMIT_BAL": 20000 * (i + 1),
            "SEX": 1 + i % 2,
            "EDUCATION": 1 + i % 4,
            "MARRIAGE": 1 + i % 3,
            "AGE": 24 + 5 * i,
        }
        row |= {f"PAY_{k}": (i + k) % 4 - 2 for k in (0, 2, 3, 4, 5, 6)}
        row |= {f"BILL_AMT{k}": 1000 * k + i for k in range(1, 7)} | {f"PAY_AMT{k}": 100 * k for k in range(1, 7)}
        rows.append(row | {"default payment next month": i % 2})
    return tidy_credit(pd.DataFrame(rows))


@pytest.fixture(scope="module")
def records(raw_file):
    out = {d: load_tabular(d, [raw_file(p) for p in paths]) for d, paths in RAW.items()}
    return out | {"credit": credit_records()}


@pytest.mark.parametrize("task", list(FAIRNESS_TASKS))
def test_inputs_are_the_fairness_profiles_of_the_factual_side(task, records):
    dataset = FAIRNESS_TASKS[task]
    n_fair = 6 if dataset == "credit" else 20
    prompts = build_prompts(dataset, sample_records(dataset, records[dataset], n_fair, seed=3))
    inputs = fairness_inputs(task, records[dataset], 4, seed=3)
    # the first n of the fairness study's sample, in its order
    assert inputs["record_id"].tolist() == list(dict.fromkeys(prompts["pair_id"]))[:4]
    factual = prompts.merge(inputs, left_on=["pair_id", "attribute"], right_on=["record_id", "protected_value"])
    assert len(factual) == 4
    assert (factual["profile"] == factual["text"]).all()
    assert (factual["label_x"] == factual["label_y"]).all()
    assert inputs["input_id"].tolist() == [f"{task}-{r}" for r in inputs["record_id"]]
    assert inputs["input_id"].is_unique


@pytest.mark.parametrize("task", list(FAIRNESS_TASKS))
def test_curated_counterfactual_pairs_are_the_fairness_pairs(task, records, tmp_path):
    dataset = FAIRNESS_TASKS[task]
    n = 6 if dataset == "credit" else 12
    inputs = fairness_inputs(task, records[dataset], n, seed=0)
    inputs.to_parquet(tmp_path / "inputs.parquet", index=False)  # as the workflow stores them
    inputs = pd.read_parquet(tmp_path / "inputs.parquet")
    concepts = curated_concepts(CATALOGUE, [CURATED[task], "gender_female", "religion_minority"], task)
    assert set(concepts["concept_id"]) == {CURATED[task], "religion_minority"}  # a name swap needs a name
    pairs = rule_variations(concepts, inputs, task, names={"first_names": {}, "last_names": {}})
    assert pairs["valid"].all() and len(pairs) == 2 * n
    prompts = build_prompts(dataset, sample_records(dataset, records[dataset], n, seed=0))
    wide = prompts.pivot(index="pair_id", columns="side", values="profile")
    cf = pairs[pairs["concept_id"] == CURATED[task]].assign(pair_id=inputs["record_id"].to_numpy())
    # x+ is the non-default side (Female; Non-White): alpha', x- is alpha
    assert (cf["positive"].to_numpy() == wide.loc[cf["pair_id"], "alpha_prime"].to_numpy()).all()
    assert (cf["negative"].to_numpy() == wide.loc[cf["pair_id"], "alpha"].to_numpy()).all()
    added = pairs[pairs["concept_id"] == "religion_minority"]
    assert added["positive"].str.contains("Community: active member of a local mosque.").all()


def test_counterfactual_rule_refuses_a_text_that_is_not_its_record(records):
    inputs = fairness_inputs("fairness_compas", records["compas"], 2, seed=0)
    rule = {"type": "counterfactual", "column": "race", "positive": "Non-White", "negative": "White"}
    row = inputs.iloc[0].to_dict()
    assert counterfactual_variation(row["text"], rule, "fairness_compas", row) is not None
    assert counterfactual_variation(row["text"] + " Rewritten.", rule, "fairness_compas", row) is None
    assert counterfactual_variation(row["text"], {**rule, "column": "sex"}, "fairness_compas", row) is None
    assert counterfactual_variation(row["text"], rule, "loan", row) is None


def test_unknown_protected_value_is_an_error_naming_it():
    bad = credit_records()
    bad.loc[0, "sex"] = "Unknown"
    with pytest.raises(ValueError, match=r"fairness_credit: 1 sampled record\(s\) have a sex outside"):
        fairness_inputs("fairness_credit", bad, 6, seed=0)


@pytest.mark.parametrize("task", list(FAIRNESS_TASKS))
def test_prompts_ask_the_fairness_question_and_decisions_parse_yes_no(task):
    template = (REPO / f"resources/blindspot/prompts/{task}.txt").read_text()
    assert fairness_prompt_has_question(template, task)
    prompt = render_task_prompt(template, "Defendant profile. A 30-year-old White person.")
    assert prompt.startswith("Defendant profile.") and "$application" not in prompt
    assert QUESTIONS[FAIRNESS_TASKS[task]] in prompt
    spec = task_spec(task)
    assert spec.labels == ("No", "Yes")
    assert spec.parser("Chain of thought: the record is light.\nAnswer: No") == 0
    assert spec.parser("Chain of thought: many priors, no doubt.\nAnswer: **Yes**") == 1
    assert spec.parser("Yes.") == 1
    assert spec.parser("Chain of thought: unclear.\nAnswer: perhaps") is None
