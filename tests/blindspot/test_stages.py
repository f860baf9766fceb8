"""The staged procedure: hand-worked stage decisions and a whole run on a constructed table."""

import numpy as np
import pandas as pd
import pytest

from thinkbias.blindspot.clusters import StagePlan
from thinkbias.blindspot.stages import (
    StageParams,
    baseline_filter,
    decide,
    pairs_to_judge,
    run_staged,
    concept_tests,
)
from thinkbias.stats.sequential import bonferroni_level

PARAMS = StageParams(n_simulations=2000)


def pairs_for(concept, b, c, both_accept, both_reject, invalid=0, start=0):
    rows = [(1, 0)] * b + [(0, 1)] * c + [(1, 1)] * both_accept + [(0, 0)] * both_reject + [(np.nan, 1)] * invalid
    return pd.DataFrame(
        [
            {"concept_id": concept, "input_id": f"x{start + i:04d}", "y_pos": p, "y_neg": q}
            for i, (p, q) in enumerate(rows)
        ]
    )


def plan(n_inputs, n_total, is_last=False, stage=0):
    return StagePlan(stage, 1, tuple(f"x{i:04d}" for i in range(n_inputs)), n_inputs, n_total, is_last)


def no_verdicts():
    return pd.DataFrame(columns=["concept_id", "input_id", "verbalized_pos", "verbalized_neg"])


def test_baseline_filter_keeps_concepts_below_threshold():
    v = pd.DataFrame(
        {
            "concept_id": ["a"] * 10 + ["b"] * 10,
            "input_id": [f"x{i}" for i in range(10)] * 2,
            "verbalized": [True] * 2 + [False] * 8 + [True] * 3 + [False] * 6 + [None],
        }
    )
    out = baseline_filter(v, ["a", "b", "c"], 0.3).set_index("concept_id")
    assert out.loc["a", "rate"] == pytest.approx(0.2) and out.loc["a", "kept"]
    assert out.loc["b", "rate"] == pytest.approx(3 / 9) and not out.loc["b", "kept"]
    assert out.loc["b", "n_unparsed"] == 1
    assert out.loc["c", "n_judged"] == 0 and out.loc["c", "kept"]


def test_efficacy_stop_flags_a_huge_effect_early():
    pairs = pairs_for("big", 60, 2, 100, 38)  # 200 inputs of 800
    alpha_s = bonferroni_level(0.05, [5])  # 0.01
    tests = concept_tests(pairs, ["big"], plan(200, 800), alpha_s, PARAMS)
    row = tests.iloc[0]
    assert (row["b"], row["c"], row["n"]) == (60, 2, 200)
    assert row["alpha_obf"] < alpha_s and row["p_value"] < row["alpha_obf"]
    out = decide(tests, pairs, no_verdicts(), PARAMS)
    assert out.iloc[0]["status"] == "flagged"


def test_futility_drops_a_balanced_concept_and_skips_its_judgements():
    pairs = pairs_for("flat", 30, 30, 100, 40)
    tests = concept_tests(pairs, ["flat"], plan(200, 2000), 0.01, PARAMS)
    assert tests.iloc[0]["futile"] and tests.iloc[0]["conditional_power"] < 0.01
    assert pairs_to_judge(pairs, tests).empty
    assert decide(tests, pairs, no_verdicts(), PARAMS).iloc[0]["status"] == "futile"


def test_a_modest_effect_continues_to_the_next_stage():
    pairs = pairs_for("mid", 8, 3, 100, 89)  # 11 discordant: no futility check, p ~ 0.23
    tests = concept_tests(pairs, ["mid"], plan(200, 2000), 0.01, PARAMS)
    assert not tests.iloc[0]["futile"] and np.isnan(tests.iloc[0]["conditional_power"])
    assert decide(tests, pairs, no_verdicts(), PARAMS).iloc[0]["status"] == "continue"


def test_variation_verbalization_drops_a_cited_concept_either_side_counts():
    pairs = pairs_for("cited", 60, 2, 100, 38)
    tests = concept_tests(pairs, ["cited"], plan(200, 800), 0.01, PARAMS)
    flips = pairs_to_judge(pairs, tests)
    assert len(flips) == 62
    verdicts = flips.assign(verbalized_pos=False, verbalized_neg=False)
    verdicts.loc[:9, "verbalized_pos"] = True  # 10 pairs cited on the x+ side
    verdicts.loc[10:18, "verbalized_neg"] = True  # 9 more on the x- side -> 19/62 = 0.306
    out = decide(tests, pairs, verdicts, PARAMS).iloc[0]
    assert out["n_flips"] == 62 and out["n_flips_verbalized"] == 19
    assert out["var_rate"] == pytest.approx(19 / 62)
    assert out["status"] == "verbalized"
    verdicts.loc[18, "verbalized_neg"] = False  # 18/62 = 0.29 < 0.3: kept and flagged
    assert decide(tests, pairs, verdicts, PARAMS).iloc[0]["status"] == "flagged"


def test_last_stage_uses_the_bonferroni_level_without_early_stopping():
    # 26 vs 10: chi2 = (16-1)^2/36 = 6.25, p = 0.0124: significant at 0.05 but not at 0.01
    pairs = pairs_for("last", 26, 10, 100, 64)
    t05 = concept_tests(pairs, ["last"], plan(200, 200, is_last=True), 0.05, PARAMS)
    assert t05.iloc[0]["p_value"] == pytest.approx(0.012419, rel=1e-3)
    assert np.isnan(t05.iloc[0]["conditional_power"])  # no futility at the last stage
    assert decide(t05, pairs, no_verdicts(), PARAMS).iloc[0]["status"] == "flagged"
    t01 = concept_tests(pairs, ["last"], plan(200, 200, is_last=True), 0.01, PARAMS)
    assert decide(t01, pairs, no_verdicts(), PARAMS).iloc[0]["status"] == "not_significant"


def test_unparsable_pairs_are_counted_and_excluded():
    pairs = pairs_for("inv", 5, 1, 10, 10, invalid=4)
    row = concept_tests(pairs, ["inv"], plan(30, 30, is_last=True), 0.05, PARAMS).iloc[0]
    assert row["n_invalid"] == 4 and row["n"] == 26 and row["n_pairs"] == 30


def test_run_staged_bonferroni_grows_and_responses_are_counted_lazily():
    # 2 clusters x 50 inputs; k0 = 10 -> stages of 20, 40, 80, 100 inputs
    ids = [f"x{i:04d}" for i in range(100)]
    members = pd.DataFrame(
        {"input_id": ids, "cluster": [i % 2 for i in range(100)], "rank": [i // 2 for i in range(100)]}
    )
    rng = np.random.default_rng(0)
    frames = []
    for cid, p_b in (("null1", 0.5), ("null2", 0.5), ("strong", 1.0)):
        disc = rng.random(100) < 0.4
        isb = rng.random(100) < p_b
        frames.append(
            pd.DataFrame(
                {
                    "concept_id": cid,
                    "input_id": ids,
                    "y_pos": np.where(disc, isb, 1).astype(float),
                    "y_neg": np.where(disc, ~isb, 1).astype(float),
                    "verbalized_pos": False,
                    "verbalized_neg": False,
                }
            )
        )
    outcomes = pd.concat(frames, ignore_index=True)
    baseline = pd.DataFrame({"concept_id": ["null1", "null2", "strong"], "input_id": "x0000", "verbalized": False})
    res = run_staged(outcomes, members, baseline, ["null1", "null2", "strong"], 10, PARAMS)
    s0 = res.stages[res.stages["stage"] == 0]
    assert s0["alpha_s"].iloc[0] == pytest.approx(0.05 / 3)
    s1 = res.stages[res.stages["stage"] == 1]
    if len(s1):
        n_entered = len(s1)
        assert s1["alpha_s"].iloc[0] == pytest.approx(0.05 / (3 + n_entered))
    assert "strong" in set(res.flagged["concept_id"])
    costs = res.costs.set_index("stage")
    assert costs.loc["0", "target_calls"] == 2 * 3 * 20
    # the cost table's own rows, written to costs.csv (they used to live only in DataFrame attrs)
    assert costs.loc["exhaustive", "target_calls"] == 2 * 3 * 100
    staged = sum(costs.loc[str(s), "target_calls"] for s in res.stages["stage"].unique())
    assert costs.loc["staged total", "target_calls"] == staged
    assert costs.loc["saved share", "target_calls"] == pytest.approx(1 - staged / 600)


def test_nothing_left_to_project_skips_futility_at_a_non_last_stage():
    # b = 13, c = 12 at 2,470 of 2,500 inputs: floor(25 / 2470 * 30) = 0 pairs left to project. The
    # degenerate "conditional power" 1[p < alpha] = 0 used to drop the concept as futile.
    pairs = pairs_for("late", 13, 12, 1000, 1445)
    row = concept_tests(pairs, ["late"], plan(2470, 2500), 0.05 / 20, PARAMS).iloc[0]
    assert (row["b"], row["c"]) == (13, 12) and not row["futile"] and np.isnan(row["conditional_power"])
    assert (
        decide(concept_tests(pairs, ["late"], plan(2470, 2500), 0.05 / 20, PARAMS), pairs, no_verdicts(), PARAMS).iloc[
            0
        ]["status"]
        == "continue"
    )


def test_a_last_stage_short_of_all_inputs_uses_the_threshold_at_its_information_fraction():
    # 44 vs 19: chi2 = 24^2 / 63, p = 0.002497, just under alpha_s = 0.0025. At t = 2475/2500 = 0.99 the
    # last stage's threshold is the O'Brien-Fleming value there, 0.002377 (alpha_s is 5.2% looser).
    from thinkbias.stats.sequential import obrien_fleming_threshold

    pairs = pairs_for("edge", 44, 19, 100, 100)
    alpha_s = 0.05 / 20
    t99 = concept_tests(pairs, ["edge"], plan(2475, 2500, is_last=True), alpha_s, PARAMS)
    assert t99.iloc[0]["p_value"] == pytest.approx(0.002497, rel=1e-3)
    assert t99.iloc[0]["threshold"] == pytest.approx(obrien_fleming_threshold(alpha_s, 0.99))
    assert t99.iloc[0]["threshold"] == pytest.approx(0.002377, rel=1e-3)
    assert decide(t99, pairs, no_verdicts(), PARAMS).iloc[0]["status"] == "not_significant"
    t100 = concept_tests(pairs, ["edge"], plan(2500, 2500, is_last=True), alpha_s, PARAMS)
    assert t100.iloc[0]["threshold"] == alpha_s
    assert decide(t100, pairs, no_verdicts(), PARAMS).iloc[0]["status"] == "flagged"


def test_exact_boundary_option_uses_the_looks_so_far():
    from thinkbias.stats.group_sequential import exact_obrien_fleming_thresholds

    # the last of 4 looks at t = 0.25 ... 1: the paper's rule tests at alpha_s itself, the exact design
    # at what the earlier looks left
    pairs = pairs_for("big", 60, 2, 100, 38)
    looks = (0.25, 0.5, 0.75, 1.0)
    p = StagePlan(3, 8, tuple(f"x{i:04d}" for i in range(800)), 800, 800, True, looks)
    exact = concept_tests(pairs, ["big"], p, 0.01, StageParams(n_simulations=2000, boundary="exact")).iloc[0]
    paper = concept_tests(pairs, ["big"], p, 0.01, PARAMS).iloc[0]
    assert paper["threshold"] == 0.01
    assert exact["threshold"] == pytest.approx(exact_obrien_fleming_thresholds(0.01, looks)[-1])
    assert 0.008 < exact["threshold"] < 0.0099
    with pytest.raises(ValueError, match="boundary"):
        StageParams(boundary="pocock")


def test_exhaustive_comparator_is_one_test_per_concept_on_every_input_at_alpha_over_m():
    from thinkbias.blindspot.stages import run_exhaustive

    ids = [f"x{i:04d}" for i in range(100)]
    members = pd.DataFrame(
        {"input_id": ids, "cluster": [i % 2 for i in range(100)], "rank": [i // 2 for i in range(100)]}
    )
    frames = []
    for cid, b, c in (("a", 20, 8), ("b", 12, 12), ("d", 5, 0)):
        rows = [(1, 0)] * b + [(0, 1)] * c + [(1, 1)] * (100 - b - c)
        frames.append(
            pd.DataFrame(
                {
                    "concept_id": cid,
                    "input_id": ids,
                    "y_pos": [r[0] for r in rows],
                    "y_neg": [r[1] for r in rows],
                    "verbalized_pos": False,
                    "verbalized_neg": False,
                }
            )
        )
    outcomes = pd.concat(frames, ignore_index=True)
    baseline = pd.DataFrame({"concept_id": ["a", "b", "d"], "input_id": "x0000", "verbalized": False})
    res = run_exhaustive(outcomes, members, baseline, ["a", "b", "d"], 10, PARAMS)
    st = res.stages.set_index("concept_id")
    assert (st["stage"] == 0).all() and (st["n"] == 100).all()
    assert st["alpha_s"].tolist() == pytest.approx([0.05 / 3] * 3) and (st["threshold"] == st["alpha_s"]).all()
    # a: chi2 = 11^2 / 28 = 4.32, p = 0.0376 > 0.0167; d: exact p = 2 / 32 = 0.0625
    assert st.loc["a", "p_value"] == pytest.approx(0.03764, rel=1e-3)
    assert set(st["status"]) == {"not_significant"}
    costs = res.costs.set_index("stage")
    assert costs.loc["exhaustive", "target_calls"] == costs.loc["staged total", "target_calls"] == 2 * 3 * 100
    assert costs.loc["saved share", "target_calls"] == 0


def test_fisher_option_tests_the_unpaired_table():
    # stages.test: fisher (the paper's code's alternative): Fisher's exact test of x+ / x- by accept /
    # reject; 30 vs 10 discordant over 40 concordant accepts and 20 concordant rejects: x+ 70 of 100
    # accepted, x- 50 of 100
    from scipy.stats import fisher_exact

    pairs = pairs_for("f", 30, 10, 40, 20)
    params = StageParams(n_simulations=2000, test="fisher")
    row = concept_tests(pairs, ["f"], plan(100, 1000), 0.05, params).iloc[0]
    assert row["test"] == "fisher"
    assert row["p_value"] == pytest.approx(fisher_exact([[70, 30], [50, 50]]).pvalue, rel=1e-12)
    assert row["log10_p_value"] == pytest.approx(np.log10(row["p_value"]))
    mcnemar_row = concept_tests(pairs, ["f"], plan(100, 1000), 0.05, PARAMS).iloc[0]
    assert mcnemar_row["test"] == "chi2-cc" and mcnemar_row["p_value"] != row["p_value"]
    with pytest.raises(ValueError, match="stages.test"):
        StageParams(test="wilcoxon")


def test_bonferroni_switch():
    from thinkbias.blindspot.stages import stage_alpha

    assert stage_alpha(PARAMS, [20, 5]) == pytest.approx(0.05 / 25)
    assert stage_alpha(StageParams(bonferroni=False), [20, 5]) == 0.05
