"""Templates and counterfactuals: every rendered pair differs only in the protected word and pronouns."""

import pandas as pd
import pytest

from thinkbias.fairness.prompts import build_prompts
from thinkbias.tasks.records import prepare_records
from thinkbias.tasks.templates import (
    PROTECTED,
    compas_race_group,
    counterfactual_differences,
    counterfactual_pair,
    render_credit,
)


def adult_rows() -> pd.DataFrame:
    base = dict(
        age=39,
        workclass="State-gov",
        fnlwgt=1,
        education="Bachelors",
        education_num=13,
        occupation="Adm-clerical",
        relationship="Husband",
        race="White",
        sex="Male",
        capital_gain=2174,
        capital_loss=0,
        hours_per_week=40,
        native_country="United-States",
        income_gt_50k=False,
        split="train",
    )
    statuses = [
        "Married-civ-spouse",
        "Never-married",
        "Divorced",
        "Separated",
        "Widowed",
        "Married-spouse-absent",
        "Married-AF-spouse",
        None,
    ]
    rows = [
        {**base, "marital_status": m, "record_id": f"a{i}", "sex": "Female" if i % 2 else "Male"}
        for i, m in enumerate(statuses)
    ]
    rows.append(
        {
            **base,
            "marital_status": "Divorced",
            "workclass": None,
            "occupation": None,
            "native_country": None,
            "record_id": "missing",
        }
    )
    return pd.DataFrame(rows)


def credit_rows() -> pd.DataFrame:
    rows = []
    for i, (edu, mar, pay) in enumerate([(1, 1, -2), (2, 2, -1), (3, 3, 0), (4, 0, 1), (5, 1, 2), (0, 2, 8)]):
        r = dict(
            record_id=f"c{i}",
            limit_bal=20000 * (i + 1),
            sex="Female",
            education=edu,
            marriage=mar,
            age=24 + i,
            default_next_month=i % 2,
        )
        for m in ["pay_0", "pay_2", "pay_3", "pay_4", "pay_5", "pay_6"]:
            r[m] = pay
        for j in range(1, 7):
            r[f"bill_amt{j}"] = 1000 * j
            r[f"pay_amt{j}"] = 100 * j
        rows.append(r)
    return pd.DataFrame(rows)


def compas_rows() -> pd.DataFrame:
    races = ["African-American", "Caucasian", "Hispanic", "Other", "Asian", "Native American"]
    return pd.DataFrame(
        [
            dict(
                record_id=f"p{i}",
                sex="Male",
                age=20 + i,
                age_cat="25 - 45",
                race=r,
                juv_fel_count=i % 2,
                juv_misd_count=0,
                juv_other_count=1,
                priors_count=i,
                c_charge_degree="F" if i % 2 else "M",
                c_charge_desc="x",
                decile_score=3,
                two_year_recid=i % 2,
            )
            for i, r in enumerate(races)
        ]
    )


@pytest.mark.parametrize(
    "dataset,rows", [("adult", adult_rows()), ("compas", compas_rows()), ("credit", credit_rows())]
)
def test_every_constructed_pair_differs_only_in_protected_words(dataset, rows):
    prompts = build_prompts(dataset, prepare_records(dataset, rows))
    assert len(prompts) == 2 * len(rows)
    for pid, g in prompts.groupby("pair_id"):
        a = g[g.side == "alpha"].profile.iloc[0]
        b = g[g.side == "alpha_prime"].profile.iloc[0]
        assert a != b
        assert counterfactual_differences(dataset, a, b) == []
        assert set(g.attribute) == set(PROTECTED[dataset][1][:2])


def test_known_words_of_a_pair():
    a, b = counterfactual_pair("adult", adult_rows().iloc[0].to_dict())
    assert "-year-old man" in a and "-year-old woman" in b
    assert " He works" in a and " She works" in b and "Husband" not in a
    a, b = counterfactual_pair("compas", prepare_records("compas", compas_rows()).iloc[0].to_dict())
    assert "White person" in a and "non-White person" in b
    text = render_credit({**credit_rows().iloc[4].to_dict()})
    assert "unspecified education" in text and "2 months late" in text


def test_check_flags_extra_differences():
    a = "A 30-year-old man. He works as a clerk."
    assert counterfactual_differences("adult", a, "A 30-year-old woman. She works as a clerk.") == []
    assert counterfactual_differences("adult", a, "A 31-year-old woman. She works as a clerk.") != []
    assert counterfactual_differences("adult", a, "A 30-year-old woman. She works as a nurse.") != []
    assert counterfactual_differences("adult", a, a) == ["the protected word does not differ"]
    assert counterfactual_differences("adult", a, "A 30-year-old woman. She  works as a clerk.") != []


def test_compas_binarisation_and_dropped_columns():
    assert compas_race_group("Caucasian") == "White"
    assert compas_race_group("African-American") == compas_race_group("Hispanic") == "Non-White"
    prepared = prepare_records("compas", compas_rows())
    assert "sex" not in prepared.columns
    assert "race" not in prepare_records("adult", adult_rows()).columns


@pytest.mark.slow
def test_every_real_adult_record(raw_file):
    from thinkbias.data.loaders import load_adult

    records = prepare_records("adult", load_adult(raw_file("raw/adult/adult.data"), raw_file("raw/adult/adult.test")))
    prompts = build_prompts("adult", records)  # raises on any pair that differs beyond the protected words
    assert len(prompts) == 2 * len(records)


def test_every_real_compas_record(raw_file):
    from thinkbias.data.loaders import load_compas

    records = prepare_records("compas", load_compas(raw_file("raw/compas/compas-scores-two-years.csv")))
    prompts = build_prompts("compas", records)
    assert len(prompts) == 2 * len(records)
    assert set(records["race"]) == {"White", "Non-White"}
