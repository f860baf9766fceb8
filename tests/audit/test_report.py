"""The audit report builder on hand-made study tables: headline rows, intervals, readings."""

import math

import numpy as np
import pandas as pd
import pytest
import yaml
from statsmodels.stats.weightstats import DescrStatsW

from thinkbias.audit.report import (
    blindspot_headline,
    blindspot_reading,
    build_audit,
    fairness_headline,
    fairness_reading,
    mean_interval,
    position_headline,
    position_reading,
)

M = "m1"


def fairness_tables(b: int, c: int, p: float, delta: tuple[float, float, float]):
    table2 = pd.DataFrame(
        [
            {"model": M, "dataset": "adult", "a": 40 - b - c - 2, "b": b, "c": c, "d": 2, "N": 40, "mcnemar_p": p},
            {"model": "pooled", "dataset": "pooled", "a": 0, "b": 0, "c": 0, "d": 0, "N": 0, "mcnemar_p": 1.0},
        ]
    )
    d, lo, hi = delta
    figure2 = pd.DataFrame(
        [
            {
                "model": M,
                "dataset": "adult",
                "dcf_nothink": (b + 2) / 40,
                "dcf_nothink_lo": 0.0,
                "dcf_nothink_hi": 0.3,
                "dcf_think": (c + 2) / 40,
                "dcf_think_lo": 0.0,
                "dcf_think_hi": 0.4,
                "delta_dcf": d,
                "delta_dcf_lo": lo,
                "delta_dcf_hi": hi,
            }
        ]
    )
    parse = pd.DataFrame(
        [
            {
                "model": M,
                "dataset": "adult",
                "pairs": 41,
                "N": 40,
                "nothink_unparsed": 1,
                "think_unparsed": 2,
                "nothink_refusal": 0,
                "think_refusal": 0,
            }
        ]
    )
    return table2, figure2, parse


def test_mean_interval_is_the_student_t_interval():
    x = pd.Series([0.1, 0.4, 0.35, 0.8, np.nan, 0.55])
    mean, lo, hi, n = mean_interval(x)
    ref_lo, ref_hi = DescrStatsW(x.dropna().to_numpy()).tconfint_mean(alpha=0.05)
    assert n == 5 and math.isclose(mean, 0.44) and math.isclose(lo, ref_lo) and math.isclose(hi, ref_hi)
    assert math.isnan(mean_interval(pd.Series([0.2]))[1]) and mean_interval(pd.Series([], dtype=float))[3] == 0


def test_fairness_headline_takes_the_models_cells_rates_and_unparsed_counts():
    head = fairness_headline(*fairness_tables(3, 9, 0.146, (0.15, 0.02, 0.28)), M)
    row = head.iloc[0]
    assert (row["N"], row["b"], row["c"], row["d"], row["think_unparsed"]) == (40, 3, 9, 2, 2)
    assert row["dcf_think"] == 11 / 40 and len(head) == 1  # the pooled row is left out


def test_fairness_reading_says_only_what_the_interval_and_mcnemar_support():
    null = fairness_reading(fairness_headline(*fairness_tables(3, 5, 0.73, (0.05, -0.04, 0.14)), M))
    assert "no detectable difference" in null and "N = 40 pairs" in null and "do not differ detectably" in null
    found = fairness_reading(fairness_headline(*fairness_tables(1, 14, 0.001, (0.33, 0.18, 0.47)), M))
    assert "thinking raises the counterfactual flip rate from 0.075 to 0.400" in found
    assert "creates more flips than it resolves (c = 14, b = 1" in found
    assert "nothing says" in fairness_reading(fairness_headline(*fairness_tables(0, 0, 1.0, (0, 0, 0)), M))
    t2, f2, pc = fairness_tables(0, 0, 1.0, (0, 0, 0))
    t2.loc[0, "d"] = 0
    assert fairness_reading(fairness_headline(t2, f2, pc, M)) == (
        "On adult, no pair flipped in either arm (N = 40 pairs), so no difference between thinking and not "
        "thinking is detectable at this N."
    )


def test_fairness_dataset_with_no_retained_pair_keeps_its_row_and_says_so():
    # every nothink answer unparsed: Table 2 and Figure 2 have no row, parse_counts does
    table2, figure2, parse = fairness_tables(0, 0, 1.0, (0, 0, 0))
    parse = parse.assign(N=0, nothink_unparsed=8)
    head = fairness_headline(table2[table2["model"] != M], figure2.iloc[0:0], parse, M)
    assert head["dataset"].tolist() == ["adult"] and head["N"].tolist() == [0] and head["a"].isna().all()
    assert fairness_reading(head) == (
        "On adult, no pair has parsed answers on both sides in both arms (N = 0 of 41 "
        "pairs; unparsed answers: 8 without thinking, 2 with), so nothing can be read."
    )


def position_tables(rho: float, p: float):
    questions = pd.DataFrame(
        {
            "benchmark": "mmlu",
            "model": M,
            "mode": "cot",
            "question_id": [f"q{i}" for i in range(6)],
            "pbs": [0.1, 0.3, 0.2, np.nan, 0.6, 0.5],
        }
    )
    summary = pd.DataFrame(
        [
            {
                "benchmark": "mmlu",
                "model": M,
                "mode": "cot",
                "n_questions": 6,
                "n_questions_pbs": 5,
                "pbs": 0.34,
                "accuracy": 0.5,
                "length": 120.0,
                "n_records": 24,
                "n_unparsed": 3,
            }
        ]
    )
    corr = pd.DataFrame([{"benchmark": "mmlu", "model": M, "mode": "cot", "partial_rho": rho, "p_value": p, "n": 5}])
    return summary, questions, corr


def test_position_headline_and_reading():
    head = position_headline(*position_tables(0.2, 0.6), M)
    row = head.iloc[0]
    assert row["n_pbs"] == 5 and math.isclose(row["pbs"], 0.34) and row["pbs_lo"] < 0.34 < row["pbs_hi"]
    text = position_reading(head)
    assert "PBS = 0.340" in text and "N = 5 questions" in text and "3 of 24 answers unparsed" in text
    assert "no detectable relation between response length and PBS at this N" in text
    assert "PBS grows with response length (partial rho +0.90" in position_reading(
        position_headline(*position_tables(0.9, 0.01), M)
    )


def blindspot_tables(flag: bool):
    funnel = pd.DataFrame(
        [
            {"model": M, "task": "fairness_adult", "step": s, "stage": st, "n_concepts": n}
            for s, st, n in [
                ("candidate concepts (curated + generated)", None, 3),
                ("tested", 0, 3),
                ("flagged", 0, int(flag)),
                ("tested", 1, 2),
                ("flagged", 1, 0),
            ]
        ]
    )
    flagged = pd.DataFrame(
        [
            {
                "model": M,
                "task": "fairness_adult",
                "concept_id": "protected_sex_female",
                "title": "female",
                "delta": 0.2,
                "ci_low": 0.1,
                "ci_high": 0.3,
                "n": 60,
                "n_invalid": 1,
                "p_value": 1e-4,
                "baseline_verbalization_rate": 0.0,
                "variation_verbalization_rate": 0.1,
            }
        ][: int(flag)],
        columns=[
            "model",
            "task",
            "concept_id",
            "title",
            "delta",
            "ci_low",
            "ci_high",
            "n",
            "n_invalid",
            "p_value",
            "baseline_verbalization_rate",
            "variation_verbalization_rate",
        ],
    )
    red = pd.DataFrame(
        [
            {
                "model": M,
                "task": "fairness_adult",
                "protected_attribute": "sex",
                "hypothesized": False,
                "tested": True,
                "flagged": flag,
                "status": "flagged" if flag else "not_significant",
                "delta": 0.2 if flag else 0.05,
                "ci_low": 0.1,
                "ci_high": 0.3,
                "n": 60,
                "n_invalid": 1,
                "p_value": 1e-4 if flag else 0.4,
                "other_flagged": np.nan,
            }
        ]
    )
    return flagged, funnel, red


def test_blindspot_headline_counts_and_rediscovery():
    head = blindspot_headline(*blindspot_tables(True), M)
    task = head[head["kind"] == "task"].iloc[0]
    assert (task["n_candidates"], task["n_tested"], task["n_flagged"]) == (3, 3, 1)
    assert task["protected_attribute"] == "sex" and task["flagged"] and task["n"] == 60
    assert head[head["kind"] == "flagged"]["concept_id"].tolist() == ["protected_sex_female"]
    text = blindspot_reading(head)
    assert "1 of 3 tested concepts were flagged" in text and "N = 60 pairs" in text
    assert "the protected attribute (sex) was rediscovered" in text
    none = blindspot_reading(blindspot_headline(*blindspot_tables(False), M))
    assert "none of 3 tested concepts" in none and "tested but not flagged (status not_significant" in none


def test_build_audit_renders_every_section_with_paper_values():
    papers = {s: yaml.safe_load(open(f"resources/paper/{s}.yaml")) for s in ("fairness", "position", "blindspot")}
    t2, f2, pc = fairness_tables(1, 14, 0.001, (0.33, 0.18, 0.47))
    summary, questions, corr = position_tables(0.2, 0.6)
    flagged, funnel, red = blindspot_tables(True)
    tables = {
        "fairness_table2": t2,
        "fairness_figure2": f2,
        "fairness_parse_counts": pc,
        "position_summary": summary,
        "position_questions": questions,
        "position_correlation": corr,
        "blindspot_flagged": flagged,
        "blindspot_funnel": funnel,
        "blindspot_rediscovery": red,
    }
    settings = [{"key": "position.runs", "value": "[...]", "why": "instruct model"}]
    text, rendered = build_audit(M, settings, tables, papers, ["cot"])
    assert set(rendered) == {"settings", "fairness", "position", "blindspot"}
    assert "## What ran" in text and "instruct model" in text
    assert "3508" in text and "≈ 5.7×" in text  # the fairness paper's pooled c and c/b
    assert "Qwen-Instruct / mmlu" in text  # the position paper's CoT PBS
    assert text.count("**Reading.**") == 3
    only = build_audit(M, settings, {k: v for k, v in tables.items() if k.startswith("position")}, papers, ["cot"])
    assert "The fairness study did not run" in only[0] and only[1]["fairness"].empty


@pytest.mark.parametrize("missing", ["fairness_figure2", "position_questions"])
def test_build_audit_needs_each_studys_tables(missing):
    t2, f2, pc = fairness_tables(1, 2, 1.0, (0, -1, 1))
    summary, questions, corr = position_tables(0.2, 0.6)
    tables = {
        "fairness_table2": t2,
        "fairness_figure2": f2,
        "fairness_parse_counts": pc,
        "position_summary": summary,
        "position_questions": questions,
        "position_correlation": corr,
    }
    tables.pop(missing)
    with pytest.raises(KeyError, match=missing):
        build_audit(M, [], tables, {"fairness": {}, "position": {}}, ["cot"])
