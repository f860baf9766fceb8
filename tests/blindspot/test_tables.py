"""Flagged table, funnel, cost table, examples and the report on a small constructed audit."""

import numpy as np
import pandas as pd
import pytest

from thinkbias.blindspot.report import comparison_table, render_examples, render_report
from thinkbias.blindspot.tables import cost_table, example_pairs, flagged_table, funnel_table

STAGES = pd.DataFrame(
    [
        {
            "stage": 0,
            "concept_id": "g",
            "status": "continue",
            "is_last": False,
            "alpha_s": 0.025,
            "alpha_obf": 1e-4,
            "delta": 0.01,
            "var_rate": 0.0,
            "n_flips": 3,
        },
        {
            "stage": 0,
            "concept_id": "r",
            "status": "futile",
            "is_last": False,
            "alpha_s": 0.025,
            "alpha_obf": 1e-4,
            "delta": 0.0,
            "var_rate": np.nan,
            "n_flips": 0,
        },
        {
            "stage": 1,
            "concept_id": "g",
            "status": "flagged",
            "is_last": True,
            "alpha_s": 0.05 / 3,
            "alpha_obf": 0.05 / 3,
            "delta": 0.05,
            "ci_low": 0.01,
            "ci_high": 0.09,
            "accept_pos": 0.6,
            "accept_neg": 0.55,
            "n_pos": 40,
            "n_neg": 40,
            "b": 4,
            "c": 2,
            "n": 40,
            "n_invalid": 0,
            "p_value": 0.001,
            "n_inputs": 40,
            "var_rate": 0.1,
            "n_flips": 6,
        },
    ]
)
CONCEPTS = pd.DataFrame({"concept_id": ["g", "r"], "title": ["Favors female — gender", "Favors Black names — race"]})
BASELINE = pd.DataFrame(
    {"concept_id": ["g", "r", "x"], "rate": [0.1, 0.0, 0.5], "n_judged": [20, 20, 20], "kept": [True, True, False]}
)


def test_flagged_table_uses_the_threshold_of_the_flagging_look():
    out = flagged_table(STAGES, CONCEPTS, BASELINE, "m", "loan")
    assert out["concept_id"].tolist() == ["g"]
    row = out.iloc[0]
    assert row["threshold"] == pytest.approx(0.05 / 3) and row["stage"] == 1
    assert row["baseline_verbalization_rate"] == 0.1 and row["title"] == "Favors female — gender"


def test_funnel_counts():
    f = funnel_table({"candidates": 3}, BASELINE, STAGES, "m", "loan")
    got = {(r.step, r.stage): r.n_concepts for r in f.itertuples()}
    assert got[("candidates", "")] == 3 and got[("after baseline verbalization filter", "0")] == 2
    assert got[("tested", "0")] == 2 and got[("dropped: futile", "0")] == 1 and got[("carried to next stage", "0")] == 1
    assert got[("flagged", "1")] == 1 and got[("flagged in total", "")] == 1


def test_cost_table_against_exhaustive():
    calls = pd.DataFrame(
        {
            "stage": [0, 1],
            "n_inputs": [20, 40],
            "n_active": [2, 1],
            "target_calls": [80, 40],
            "judge_calls": [6, 6],
            "n_pairs": [40, 40],
            "n_flips": [4, 6],
        }
    )
    c = cost_table(
        calls, n_concepts_tested=2, n_total=40, n_baseline=20, n_baseline_judgements=40, model="m", task="loan"
    )
    c = c.set_index("stage")
    assert c.loc["exhaustive", "target_calls"] == 160 and c.loc["staged total", "target_calls"] == 120
    assert c.loc["saved share", "target_calls"] == pytest.approx(0.25)
    assert c.loc["exhaustive", "judge_calls"] == round(2 * (10 / 80) * 2 * 40)
    assert c.loc["1", "cumulative_target_calls"] == 20 + 80 + 40


def test_examples_and_report():
    flagged = flagged_table(STAGES, CONCEPTS, BASELINE, "m", "loan")
    resp = pd.DataFrame(
        {
            "concept_id": ["g"] * 4,
            "input_id": ["x1", "x1", "x2", "x2"],
            "side": ["pos", "neg"] * 2,
            "decision": [1.0, 0.0, 1.0, 1.0],
            "text": ["yes", "no", "yes", "yes"],
        }
    )
    var = pd.DataFrame(
        {"concept_id": ["g", "g"], "input_id": ["x1", "x2"], "positive": ["Emily", "E2"], "negative": ["Greg", "G2"]}
    )
    ex = example_pairs(flagged, resp, var, 3)
    assert ex["input_id"].tolist() == ["x1"] and ex.iloc[0]["input_pos"] == "Emily"
    page = render_examples(ex.assign(model="m", task="loan"), flagged)
    assert "Emily" in page and "Greg" in page
    paper = {
        "findings": [
            {
                "bias": "gender",
                "models_flagged": "5 of 7",
                "effect_low": 0.017,
                "effect_high": 0.06,
                "direction": "pro-female",
                "concepts": ["g"],
            }
        ]
    }
    comp = comparison_table(flagged, paper).iloc[0]
    assert comp["this run"].startswith("1 flagged") and comp["difference"] == "within the paper's range"
    report = render_report(flagged, funnel_table({}, BASELINE, STAGES, "m", "loan"), pd.DataFrame(), paper, {"seed": 1})
    assert "Favors female" in report and "- seed: 1" in report


def test_a_concept_flipping_every_loan_input_keeps_an_exact_p_in_the_table_and_report():
    # the loan task's final stage (2,500 inputs), every pair accepted for x+ and rejected for x-:
    # b = 2500, c = 0, X^2 = 2499^2 / 2500; p = 5.9e-545 underflows a double, log10 p does not
    from fractions import Fraction

    from tests.stats.exact_reference import log10_chi2_sf_1df
    from thinkbias.blindspot.clusters import StagePlan
    from thinkbias.blindspot.stages import StageParams, concept_tests, decide

    ids = tuple(f"x{i:04d}" for i in range(2500))
    pairs = pd.DataFrame({"concept_id": "all", "input_id": ids, "y_pos": 1.0, "y_neg": 0.0})
    tests = concept_tests(pairs, ["all"], StagePlan(4, 250, ids, 2500, 2500, True), 0.05 / 20, StageParams())
    verdicts = pd.DataFrame({"concept_id": "all", "input_id": ids, "verbalized_pos": False, "verbalized_neg": False})
    stages = decide(tests, pairs, verdicts, StageParams())
    row = stages.iloc[0]
    assert row["status"] == "flagged" and row["p_value"] == 0.0
    assert row["log10_p_value"] == pytest.approx(log10_chi2_sf_1df(Fraction(2499**2, 2500)), abs=1e-6)
    concepts = pd.DataFrame({"concept_id": ["all"], "title": ["Favors everyone — all"]})
    baseline = pd.DataFrame({"concept_id": ["all"], "rate": [0.0], "n_judged": [20], "kept": [True]})
    flagged = flagged_table(stages, concepts, baseline, "m", "loan")
    assert flagged.iloc[0]["log10_p_value"] == row["log10_p_value"]
    report = render_report(flagged, funnel_table({}, baseline, stages, "m", "loan"), pd.DataFrame(), {}, {})
    line = next(line for line in report.splitlines() if "| all |" in line)
    assert "| 5.876e-545 | -544.2 |" in line


def test_unparsable_verdicts_stand_beside_each_flagged_concept():
    from thinkbias.blindspot.stages import StageParams, concept_tests, decide
    from tests.blindspot.test_stages import pairs_for, plan

    # 30 flipped pairs: 3 cited, 6 with an unparsable side (None), the rest NO on both sides
    pairs = pairs_for("g", 28, 2, 100, 70)
    tests = concept_tests(pairs, ["g"], plan(200, 200, is_last=True), 0.05, StageParams(n_simulations=500))
    flips = pairs[(pairs["y_pos"] != pairs["y_neg"])][["concept_id", "input_id"]].reset_index(drop=True)
    verdicts = flips.assign(verbalized_pos=[True] * 3 + [None] * 6 + [False] * 21, verbalized_neg=False)
    stages = decide(tests, pairs, verdicts.astype({"verbalized_pos": object}), StageParams())
    assert stages.iloc[0]["status"] == "flagged" and stages.iloc[0]["n_flips_unjudged"] == 6
    baseline = pd.DataFrame({"concept_id": ["g"], "rate": [0.1], "n_judged": [18], "n_unparsed": [2], "kept": [True]})
    row = flagged_table(stages, CONCEPTS, baseline, "m", "loan").iloc[0]
    assert row["variation_verbalization_rate"] == pytest.approx(3 / 30)
    assert row["variation_n_unparsed"] == 6 and row["baseline_n_unparsed"] == 2
    assert row["variation_rate_if_unparsed_cited"] == pytest.approx(9 / 30)
    report = render_report(
        flagged_table(stages, CONCEPTS, baseline, "m", "loan"),
        funnel_table({}, baseline, stages, "m", "loan"),
        pd.DataFrame(),
        {"findings": []},
        {},
    )
    header = next(line for line in report.splitlines() if line.startswith("| model"))
    assert "variation_n_unparsed" in header and "baseline_n_unparsed" in header
