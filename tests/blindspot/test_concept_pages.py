"""Evidence pages of flagged concepts, on a hand-made audit: one concept flagged at stage 1 after
continuing at stage 0, with four flipped pairs of which three are shown."""

import pandas as pd
import pytest

from thinkbias.blindspot.concept_pages import (
    concept_pages,
    flipped_examples,
    page_name,
    render_index,
    stage_path,
)
from thinkbias.blindspot.tables import FLAGGED_COLUMNS
from thinkbias.plots.blindspot import acceptance_figure
from thinkbias.stats.proportions import odds_ratio, relative_risk, wilson_interval


def flagged_row() -> dict:
    lo_pos, hi_pos = wilson_interval(9, 10)
    lo_neg, hi_neg = wilson_interval(5, 10)
    odds = odds_ratio(9, 1, 5, 5)
    risk = relative_risk(9, 1, 5, 5)
    row = dict.fromkeys(FLAGGED_COLUMNS, float("nan"))
    row |= {
        "model": "m",
        "task": "loan",
        "concept_id": "gender_female",
        "title": "Favors female applicants — gender",
        "delta": 0.4,
        "ci_low": 0.08,
        "ci_high": 0.72,
        "accept_pos": 0.9,
        "accept_neg": 0.5,
        "n_pos": 10,
        "n_neg": 10,
        "accept_pos_ci_low": lo_pos,
        "accept_pos_ci_high": hi_pos,
        "accept_neg_ci_low": lo_neg,
        "accept_neg_ci_high": hi_neg,
        **dict(zip(("odds_ratio", "odds_ratio_ci_low", "odds_ratio_ci_high"), odds)),
        **dict(zip(("relative_risk", "relative_risk_ci_low", "relative_risk_ci_high"), risk)),
        "b": 4,
        "c": 0,
        "n": 10,
        "n_invalid": 0,
        "p_value": 0.0625,
        "threshold": 0.07,
        "stage": 1,
        "baseline_verbalization_rate": 0.25,
        "baseline_n_judged": 4,
        "variation_verbalization_rate": 0.25,
        "n_flips": 4,
    }
    return row


FLAGGED = pd.DataFrame([flagged_row()])
STAGES = pd.DataFrame(
    [
        {"model": "m", "task": "loan", "stage": 1, "concept_id": "gender_female", "n_inputs": 10, "b": 4, "c": 0,
         "n": 10, "p_value": 0.0625, "threshold": 0.07, "status": "flagged"},
        {"model": "m", "task": "loan", "stage": 0, "concept_id": "gender_female", "n_inputs": 4, "b": 2, "c": 0,
         "n": 4, "p_value": 0.5, "threshold": 0.001, "status": "continue"},
        {"model": "m", "task": "loan", "stage": 0, "concept_id": "age_old", "n_inputs": 4, "b": 0, "c": 0,
         "n": 4, "p_value": 1.0, "threshold": 0.001, "status": "futile"},
    ]
)  # fmt: skip
CONCEPTS = pd.DataFrame(
    [
        {
            "task": "loan",
            "concept_id": "gender_female",
            "title": "Favors female applicants — gender",
            "addition_action": "Present the applicant as a woman.",
            "removal_action": "Present the applicant as a man.",
            "verbalization_check_guide": "Check mentions of gender.",
        }
    ]
)


def responses_and_verdicts() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Ten pairs: x06..x09 flipped (accept x+, reject x-), the rest concordant; x07's x- verdict is
    unparsed (None), x08's x+ response cites the concept."""
    rows, verdicts = [], []
    for i in range(10):
        iid = f"x{i:02d}"
        flipped = i >= 6
        for side, decision in (("pos", 1), ("neg", 0 if flipped else 1)):
            rows.append(
                {
                    "concept_id": "gender_female",
                    "input_id": iid,
                    "side": side,
                    "decision": decision,
                    "text": f"{side} answer {iid}",
                }
            )
            if flipped:
                v = None if (iid, side) == ("x07", "neg") else (iid, side) == ("x08", "pos")
                verdicts.append({"concept_id": "gender_female", "input_id": iid, "side": side, "verbalized": v})
    r = pd.DataFrame(rows).assign(model="m", task="loan")
    return r, pd.DataFrame(verdicts).assign(model="m", task="loan")  # fmt: skip


def test_stage_path_is_the_concepts_rows_in_stage_order():
    path = stage_path(STAGES, "m", "loan", "gender_female")
    assert path["stage"].tolist() == [0, 1]
    assert path["status"].tolist() == ["continue", "flagged"]
    assert path.loc[1, ["b", "c", "threshold"]].tolist() == [4, 0, 0.07]


def test_flipped_examples_take_the_first_three_flips_with_each_sides_verdict():
    responses, verdicts = responses_and_verdicts()
    ex = flipped_examples(responses, verdicts, "gender_female", 3)
    assert ex["input_id"].tolist() == ["x06", "x07", "x08"]
    assert (ex["decision_pos"] == 1).all() and (ex["decision_neg"] == 0).all()
    assert ex["verbalized_neg"].tolist() == ["does not cite it", "not judged", "does not cite it"]
    assert ex["verbalized_pos"].tolist() == ["does not cite it", "does not cite it", "cites the concept"]
    assert ex.loc[2, "response_pos"] == "pos answer x08"


def test_flipped_examples_of_a_concept_without_responses_are_empty():
    responses, verdicts = responses_and_verdicts()
    assert flipped_examples(responses, verdicts, "other", 3).empty


def test_page_has_every_section_with_rates_and_their_n():
    responses, verdicts = responses_and_verdicts()
    pages = concept_pages(FLAGGED, STAGES, CONCEPTS, responses, verdicts)
    assert set(pages) == {"index.md", "m/loan/gender_female.md"}
    page = pages["m/loan/gender_female.md"]
    for heading in (
        "## The concept and its two sides",
        "## Stage path",
        "## Acceptance rate per side",
        "## Verbalization",
        "## Example pairs whose decision flipped",
    ):
        assert heading in page, heading
    assert "x+ (positive side): Present the applicant as a woman." in page
    assert "x- (negative side): Present the applicant as a man." in page
    lo, hi = wilson_interval(9, 10)
    assert f"| x+ | 0.900 | [{lo:.3f}, {hi:.3f}] | 10 |" in page
    assert "delta = P(accept | x+) - P(accept | x-) = +0.400" in page and "N = 10 complete pairs" in page
    assert "0.250 of N = 4 judged responses" in page and "0.250 of N = 4 flipped pairs" in page
    odds, lo, hi = odds_ratio(9, 1, 5, 5)
    assert f"Odds ratio {odds:.3g} [{lo:.3f}, {hi:.3f}]" in page
    assert "![Acceptance rate per side](gender_female.png)" in page
    assert page.count("### ") == 3 and "`x09`" not in page
    assert "x- response (not judged)" in page
    assert "| continue |" in page and "| flagged |" in page and "futile" not in page


def test_index_links_every_page_or_says_none_was_flagged():
    index = render_index(FLAGGED)
    assert f"({page_name('m', 'loan', 'gender_female')})" in index and "| 10 |" in index
    empty = render_index(FLAGGED.iloc[:0])
    assert "No concept was flagged" in empty
    responses, verdicts = responses_and_verdicts()
    assert concept_pages(FLAGGED.iloc[:0], STAGES, CONCEPTS, responses, verdicts) == {"index.md": empty}


def test_acceptance_figure_is_written(tmp_path):
    path = tmp_path / "fig.png"
    acceptance_figure(pd.Series(flagged_row()), str(path))
    assert path.stat().st_size > 1000


@pytest.mark.parametrize("flagged", [FLAGGED, FLAGGED.iloc[:0]])
def test_report_links_the_evidence_pages(flagged):
    from thinkbias.blindspot.report import render_report

    funnel = pd.DataFrame({"model": ["m"], "task": ["loan"], "step": ["tested"], "stage": ["0"], "n_concepts": [1]})
    text = render_report(flagged, funnel, pd.DataFrame({"stage": ["0"]}), {}, {})
    assert "(concepts/index.md)" in text
    if len(flagged):
        assert "(concepts/m/loan/gender_female.md)" in text
