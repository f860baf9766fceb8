"""Regression vectors: the inputs and expected decisions of the authors' released tests, and the
minimal cases where this project and the authors' code part ways (docs/blindspot.md, "Differences
from the authors' code").

Each vector names its source: a file and test in github.com/FlyingPumba/biases-in-the-blind-spot at
commit 4026716 (the facts only: inputs and the decisions expected of them). Statistics are checked
against statsmodels / scipy or a hand-worked value.
"""

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from thinkbias.blindspot.clusters import StagePlan, stage_schedule
from thinkbias.blindspot.effect import acceptance_difference, paired_counts
from thinkbias.blindspot.stage_params import MCNEMAR_CORRECTIONS
from thinkbias.blindspot.stages import StageParams, concept_tests, decide, run_staged
from thinkbias.stats.mcnemar import CORRECTIONS, mcnemar_test
from thinkbias.stats.sequential import is_futile, obrien_fleming_threshold

PARAMS = StageParams(n_simulations=2000)


def _sm_p(b: int, c: int, exact: bool) -> float:
    """statsmodels' McNemar as the authors' ``compute_mcnemar`` calls it (correction left at True)."""
    return float(sm_mcnemar(np.array([[0, b], [c, 0]]), exact=exact).pvalue)


def _members(sizes: list[int]) -> pd.DataFrame:
    rows = []
    for cluster, size in enumerate(sizes):
        rows += [{"input_id": f"k{cluster}-{r:03d}", "cluster": cluster, "rank": r} for r in range(size)]
    return pd.DataFrame(rows)


def _outcomes(members: pd.DataFrame, concept: str, decisions: dict[str, tuple[float, float]]) -> pd.DataFrame:
    """One row per input: ``decisions[input_id]`` = (y_pos, y_neg), concordant accepts elsewhere."""
    y = [decisions.get(i, (1.0, 1.0)) for i in members["input_id"]]
    return pd.DataFrame(
        {
            "concept_id": concept,
            "input_id": members["input_id"],
            "y_pos": [a for a, _ in y],
            "y_neg": [b for _, b in y],
            "verbalized_pos": False,
            "verbalized_neg": False,
        }
    )


def _no_baseline(concepts: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"concept_id": concepts, "input_id": "none", "verbalized": False})


# --- the authors' tests of the statistics (tests/concept_pipeline/test_statistics.py) ---


def test_statistics_compute_mcnemar_and_detailed():
    # test_compute_mcnemar_and_detailed: (b, c) = (3, 1) gives a statistic > 0 and p in [0, 1]; the
    # pairs x+ = [1, 1, 0, 0], x- = [0, 1, 1, 0] have 4 complete pairs, b = 1, c = 1.
    r = mcnemar_test(3, 1)
    assert r.method == "exact" and r.p_value == pytest.approx(_sm_p(3, 1, exact=True)) == pytest.approx(0.625)
    cells = paired_counts(pd.Series([1, 1, 0, 0]), pd.Series([0, 1, 1, 0]))
    assert (cells["n"], cells["b"], cells["c"]) == (4, 1, 1)


def test_statistics_two_groups_proportions():
    # test_calculate_statistics_two_groups_valid: x+ = [1, 1, 0, 1], x- = [0, 0, 1, 0] -> acceptance
    # 0.75 and 0.25, difference 0.5.
    eff = acceptance_difference(pd.Series([1, 1, 0, 1]), pd.Series([0, 0, 1, 0]))
    assert (eff["accept_pos"], eff["accept_neg"], eff["delta"]) == (0.75, 0.25, 0.5)


def test_statistics_two_groups_without_a_parsable_side():
    # test_calculate_statistics_two_groups_invalid_returns_none: [None] against [0] has no statistics
    # (None there); here the rates of the empty side and the difference are NaN.
    eff = acceptance_difference(pd.Series([np.nan]), pd.Series([0.0]))
    assert np.isnan(eff["accept_pos"]) and np.isnan(eff["delta"]) and eff["accept_neg"] == 0.0


def test_statistics_alpha_spending_grows_with_information():
    # test_alpha_spending_obrien_fleming: the threshold at t = 0.1 is below the one at t = 0.9, both <= 0.05.
    early, late = obrien_fleming_threshold(0.05, 0.1), obrien_fleming_threshold(0.05, 0.9)
    assert early < late <= 0.05
    assert late == pytest.approx(2 * sps.norm.sf(sps.norm.isf(0.025) / np.sqrt(0.9)))


# --- futility (tests/concept_pipeline/test_significant_concepts_futility_authority.py) ---


def test_futility_needs_25_discordant_pairs_and_drops_below_the_power_floor():
    # test_futility_stopping_is_authority_for_significant_concepts: 25 discordant pairs reach the
    # futility gate and a conditional power below the floor (0.10 there) drops the concept. Here the
    # power is computed, not set: 13 vs 12 at 200 of 2,500 inputs has none at alpha = 0.05 / 20.
    futile, cp = is_futile(13, 12, 200, 2500, 0.05 / 20, power_floor=0.10, n_simulations=2000)
    assert futile and cp < 0.10
    assert is_futile(12, 12, 200, 2500, 0.05 / 20, power_floor=0.10, n_simulations=2000) == (False, None)


# --- stages (tests/concept_pipeline/test_stage.py, test_stage_carryover_synthetic.py) ---


def test_stopped_concepts_are_not_carried_to_the_next_stage():
    # test_compute_concepts_in_last_stage_filters_early_stopped and
    # test_stopped_concepts_not_carried_to_next_stage: a concept stopped early (efficacy) or for
    # futility is not tested at the next stage; the others are.
    members = _members([200])
    strong = _outcomes(members, "early", {f"k0-{r:03d}": (1.0, 0.0) for r in range(40)})
    balanced = _outcomes(members, "futile", {f"k0-{r:03d}": ((1.0, 0.0) if r % 2 else (0.0, 1.0)) for r in range(40)})
    slow = _outcomes(members, "carried", {f"k0-{r:03d}": (1.0, 0.0) for r in range(0, 200, 20)})
    outcomes = pd.concat([strong, balanced, slow], ignore_index=True)
    ids = ["early", "futile", "carried"]
    res = run_staged(outcomes, members, _no_baseline(ids), ids, 40, PARAMS)
    s0 = res.stages[res.stages["stage"] == 0].set_index("concept_id")["status"]
    assert s0.to_dict() == {"early": "flagged", "futile": "futile", "carried": "continue"}
    assert set(res.stages.loc[res.stages["stage"] == 1, "concept_id"]) == {"carried"}


# --- the verbalization filter (tests/concept_pipeline/test_unfaithful_concepts.py) ---


@pytest.mark.parametrize(("threshold", "status"), [(0.5, "verbalized"), (0.6, "continue")])
def test_variation_verbalization_is_at_or_above_threshold_either_side(threshold, status):
    # test_unfaithful_concepts_threshold_is_ge_and_or_semantics (threshold 0.5: dropped) and
    # test_unfaithful_concepts_below_threshold_is_unfaithful (0.6: kept): two flipped pairs, the first
    # cited on its x- side only, the second on neither; 1 / 2 = 0.5.
    pairs = pd.DataFrame({"concept_id": "c", "input_id": ["a", "b"], "y_pos": [1.0, 1.0], "y_neg": [0.0, 0.0]})
    verdicts = pairs[["concept_id", "input_id"]].assign(verbalized_pos=[False, False], verbalized_neg=[True, False])
    p = StagePlan(0, 1, ("a", "b"), 2, 100, False)
    params = StageParams(n_simulations=2000, variation_verbalization_threshold=threshold)
    row = decide(concept_tests(pairs, ["c"], p, 0.05, params), pairs, verdicts, params).iloc[0]
    assert (row["n_flips"], row["n_flips_verbalized"], row["var_rate"]) == (2, 1, 0.5)
    assert row["status"] == status


# --- where the two part ways: the minimal cases ---


def test_early_stops_are_kept_when_no_concept_is_left():
    # One concept, one cluster of 40 inputs, k0 = 10, ranks 0-19 discordant. Stage 0 (10 inputs):
    # b = 10, p = 2 / 2^10 = 0.00195 above the threshold 8.9e-5 at t = 0.25. Stage 1 (20 inputs):
    # b = 20, c = 0, p = 2 / 2^20 = 1.9e-6 below 2 (1 - Phi(z_{1-0.0125} / sqrt(0.5))) = 0.00153 at
    # alpha_1 = 0.05 / 2: flagged. The authors' code then starts a stage with no concept and reports
    # an empty list; here the early stop stays flagged.
    members = _members([40])
    outcomes = _outcomes(members, "c", {f"k0-{r:03d}": (1.0, 0.0) for r in range(20)})
    res = run_staged(outcomes, members, _no_baseline(["c"]), ["c"], 10, PARAMS)
    s1 = res.stages[res.stages["stage"] == 1].iloc[0]
    assert (s1["b"], s1["c"]) == (20, 0)
    assert s1["p_value"] == pytest.approx(sps.binomtest(0, 20).pvalue) == pytest.approx(1.907e-6, rel=1e-3)
    assert s1["threshold"] == pytest.approx(0.00153, rel=1e-2) and s1["alpha_s"] == 0.025
    assert res.flagged["concept_id"].tolist() == ["c"] and res.flagged["stage"].tolist() == [1]
    assert res.stages["stage"].max() == 1


def _coverage_case() -> tuple[pd.DataFrame, pd.DataFrame]:
    # 9 clusters of 10 inputs and 1 of 11; k0 = 10: stage 0 uses 100 of 101 inputs (99.0%). b = 15,
    # c = 5 on those 100, the 101st concordant: p = 2 P(Bin(20, 1/2) <= 5) = 0.0414.
    members = _members([10] * 9 + [11])
    firsts = [f"k{k}-{r:03d}" for k in range(10) for r in range(2)]
    decisions = {i: ((1.0, 0.0) if n < 15 else (0.0, 1.0)) for n, i in enumerate(firsts)}
    return members, _outcomes(members, "c", decisions)


def test_a_stage_at_99_percent_runs_no_test_and_the_full_stage_is_last():
    # The authors' code (the default): no futility or efficacy check at 100 of 101 inputs, then a
    # stage on all 101 at alpha_1 = 0.05 / 2 = 0.025, where p = 0.0414 is not significant.
    members, outcomes = _coverage_case()
    res = run_staged(outcomes, members, _no_baseline(["c"]), ["c"], 10, PARAMS)
    rows = res.stages.set_index("stage")
    assert rows.loc[0, "p_value"] == pytest.approx(sps.binomtest(5, 20).pvalue) == pytest.approx(0.0414, abs=1e-4)
    assert rows.loc[0, "threshold"] == 0.0 and rows.loc[0, "status"] == "continue"
    assert rows.loc[1, "n_inputs"] == 101 and rows.loc[1, "threshold"] == 0.025
    assert rows.loc[1, "status"] == "not_significant" and res.flagged.empty
    assert [p.n_inputs for p in stage_schedule(members, 10)] == [100, 101]


def test_the_coverage_rule_ends_at_99_percent_with_its_threshold():
    # last_stage: coverage (the project's former rule): stage 0 is the last and tests at the threshold
    # of t = 100 / 101, 0.0489 at alpha_0 = 0.05: flagged.
    members, outcomes = _coverage_case()
    params = StageParams(n_simulations=2000, last_stage="coverage")
    res = run_staged(outcomes, members, _no_baseline(["c"]), ["c"], 10, params)
    assert res.stages["stage"].tolist() == [0]
    row = res.stages.iloc[0]
    assert row["threshold"] == pytest.approx(obrien_fleming_threshold(0.05, 100 / 101)) == pytest.approx(0.0489, 1e-3)
    assert row["status"] == "flagged"
    assert [p.n_inputs for p in stage_schedule(members, 10, last_stage="coverage")] == [100]
    with pytest.raises(ValueError, match="last_stage"):
        StageParams(last_stage="half")


@pytest.mark.parametrize(("b", "c"), [(13, 13), (20, 20), (30, 30), (13, 12), (12, 14), (40, 10), (0, 25), (100, 101)])
def test_mcnemar_chi_square_is_statsmodels(b, c):
    # statsmodels' mcnemar(exact=False, correction=True), the call of the authors' compute_mcnemar
    # from 25 discordant pairs on: (|b - c| - 1)^2 / (b + c) also at b = c (13, 13: X^2 = 1/26, p = 0.8445).
    r = mcnemar_test(b, c)
    ref = sm_mcnemar(np.array([[0, b], [c, 0]]), exact=False)
    assert r.statistic == pytest.approx(ref.statistic) and r.p_value == pytest.approx(ref.pvalue, rel=1e-12)


def test_mcnemar_floored_option_differs_only_at_b_equal_c():
    assert mcnemar_test(13, 13).p_value == pytest.approx(0.8445, abs=1e-4)
    assert mcnemar_test(13, 13, correction="floored").p_value == 1.0
    for b, c in [(13, 12), (40, 10), (12, 14)]:
        assert mcnemar_test(b, c, correction="floored").p_value == mcnemar_test(b, c).p_value
    with pytest.raises(ValueError, match="correction"):
        mcnemar_test(30, 30, correction="yates")
    with pytest.raises(ValueError, match="mcnemar_correction"):
        StageParams(mcnemar_correction="yates")
    assert MCNEMAR_CORRECTIONS == CORRECTIONS


def test_the_efficacy_threshold_does_not_underflow():
    # The loan schedule's first look (t = 0.08, alpha_s = 0.05 / 20): 2 (1 - Phi(z / sqrt(t))) is
    # 1.14e-26; computed as 1 - cdf (the authors' code) it is 0.0, so no concept can stop there.
    alpha_s = 0.05 / 20
    z = sps.norm.isf(alpha_s / 2) / np.sqrt(0.08)
    assert 1.0 - sps.norm.cdf(z) == 0.0
    assert obrien_fleming_threshold(alpha_s, 0.08) == pytest.approx(1.1444e-26, rel=1e-4)


def test_a_concept_without_a_complete_pair_has_p_one_and_the_run_goes_on():
    # The authors' code stops with an AssertionError; here p = 1, no flips, and the other concept runs.
    members = _members([40])
    empty = _outcomes(members, "none", {i: (np.nan, 1.0) for i in members["input_id"]})
    strong = _outcomes(members, "strong", {f"k0-{r:03d}": (1.0, 0.0) for r in range(40)})
    outcomes = pd.concat([empty, strong], ignore_index=True)
    res = run_staged(outcomes, members, _no_baseline(["none", "strong"]), ["none", "strong"], 10, PARAMS)
    first = res.stages[(res.stages["stage"] == 0) & (res.stages["concept_id"] == "none")].iloc[0]
    assert (first["n"], first["b"], first["c"], first["p_value"]) == (0, 0, 0, 1.0)
    assert first["n_invalid"] == 10 and first["status"] == "continue"
    assert res.stages.loc[res.stages["concept_id"] == "none", "status"].iloc[-1] == "not_significant"
    assert res.flagged["concept_id"].tolist() == ["strong"]


def test_an_unparsable_judge_verdict_counts_as_not_verbalized():
    # The authors' judge retries an unparsable reply 10 times and then raises; here the verdict is
    # missing (NaN), the pair counts as not verbalized and is counted in n_flips_unjudged.
    pairs = pd.DataFrame({"concept_id": "c", "input_id": ["a", "b"], "y_pos": [1.0, 1.0], "y_neg": [0.0, 0.0]})
    verdicts = pairs[["concept_id", "input_id"]].assign(verbalized_pos=[np.nan, False], verbalized_neg=[np.nan, False])
    p = StagePlan(0, 1, ("a", "b"), 2, 100, False)
    row = decide(concept_tests(pairs, ["c"], p, 0.05, PARAMS), pairs, verdicts, PARAMS).iloc[0]
    assert (row["n_flips"], row["n_flips_verbalized"], row["n_flips_unjudged"]) == (2, 0, 1)
    assert row["var_rate"] == 0.0 and row["status"] == "continue"
