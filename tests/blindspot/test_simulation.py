"""The simulation benchmark on its smallest version, and its planting of effects."""

import numpy as np
import pandas as pd
import pytest

from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint

from thinkbias.blindspot.effect import paired_counts
from thinkbias.blindspot.simulation import (
    SimulationDesign,
    comparison_table,
    run_replicates,
    simulate_outcomes,
    summarise,
    summarise_procedures,
)
from thinkbias.blindspot.stages import StageParams

SMALL = SimulationDesign(n_inputs=400, n_clusters=4, k0=10, n_null=4, effects=(0.25,), discordance=0.4)
FAST = StageParams(n_simulations=500)


def test_planted_effect_is_the_expected_paired_difference():
    design = SimulationDesign(n_inputs=20000, n_null=1, effects=(0.04,), discordance=0.15)
    out = simulate_outcomes(design, np.random.default_rng(0))
    eff = out[out["concept_id"].str.startswith("effect")]
    cells = paired_counts(eff["y_pos"], eff["y_neg"])
    assert (cells["b"] - cells["c"]) / cells["n"] == pytest.approx(0.04, abs=0.006)
    assert (cells["b"] + cells["c"]) / cells["n"] == pytest.approx(0.15, abs=0.01)
    with pytest.raises(ValueError):
        simulate_outcomes(SimulationDesign(effects=(0.2,), discordance=0.1), np.random.default_rng(0))


def test_smallest_simulation_flags_the_large_effect_and_saves_calls():
    reps = run_replicates(SMALL, 3, seed=1, params=FAST)
    assert len(reps) == 3 * 5
    s = summarise(reps)
    assert s["power"] == {0.25: 1.0}
    assert 0.0 <= s["fwer"] <= 1.0
    assert s["calls_saved"] > 0.0  # nulls stop for futility, the effect stops early
    assert s["exhaustive_target_calls"] == 2 * 5 * 400


def test_without_early_stopping_every_concept_uses_every_input():
    reps = run_replicates(SMALL, 1, seed=1, params=StageParams(n_simulations=500, early_stopping=False))
    assert summarise(reps)["calls_saved"] < 0.5
    assert (reps["final_status"].isin(["flagged", "not_significant", "verbalized"])).all()


def test_summary_on_a_constructed_table():
    reps = pd.DataFrame(
        {
            "replicate": [0, 0, 0, 1, 1, 1],
            "concept_id": ["n1", "n2", "e"] * 2,
            "effect": [0, 0, 0.05] * 2,
            "flagged": [True, False, True, False, False, False],
            "target_calls": [60] * 3 + [40] * 3,
            "exhaustive_target_calls": [100] * 6,
        }
    )
    s = summarise(reps)
    assert s["fwer"] == 0.5 and s["per_null_false_positive_rate"] == 0.25
    assert s["power"] == {0.05: 0.5} and s["calls_saved"] == pytest.approx(0.5)


def test_three_procedures_on_the_same_audits():
    reps = run_replicates(SMALL, 2, seed=1, params=FAST, procedures=("paper", "exact", "exhaustive"))
    assert len(reps) == 3 * 2 * 5
    by = summarise_procedures(reps)
    assert list(by) == ["paper", "exact", "exhaustive"]
    assert by["exhaustive"]["calls_saved"] == 0.0
    assert by["paper"]["calls_saved"] > 0 and by["exact"]["calls_saved"] > 0
    assert all(s["power"] == {0.25: 1.0} for s in by.values())
    ex = reps[reps["procedure"] == "exhaustive"]
    assert (ex["last_stage"] == 0).all()
    # replicate r draws the same audit whether run alone or in a chunk
    alone = run_replicates(SMALL, 1, seed=1, params=FAST, procedures=("exhaustive",), first_replicate=1)
    assert alone["flagged"].tolist() == ex[ex["replicate"] == 1]["flagged"].tolist()
    table = comparison_table(by).set_index("procedure")
    assert table.loc["exhaustive", "calls saved"] == 0.0 and "power 25 pp" in table.columns


def test_exhaustive_comparator_spends_alpha_over_m_once():
    # one test per concept on all inputs at alpha / m (m = 5 concepts), not Bonferroni over the looks
    from thinkbias.blindspot.simulation import planted_concepts, simulated_members
    from thinkbias.blindspot.stages import run_exhaustive

    out = simulate_outcomes(SMALL, np.random.default_rng(3))
    ids = planted_concepts(SMALL)["concept_id"].tolist()
    members = simulated_members(SMALL)
    baseline = pd.DataFrame({"concept_id": ids, "input_id": members["input_id"].iloc[0], "verbalized": False})
    res = run_exhaustive(out, members, baseline, ids, SMALL.k0, FAST)
    assert (res.stages["alpha_s"] == 0.05 / 5).all() and (res.stages["n"] == SMALL.n_inputs).all()
    for cid, g in out.groupby("concept_id"):
        cells = paired_counts(g["y_pos"], g["y_neg"])
        expected = mcnemar([[0, cells["b"]], [cells["c"], 0]], exact=cells["b"] + cells["c"] < 25).pvalue
        row = res.stages.set_index("concept_id").loc[cid]
        assert row["p_value"] == pytest.approx(expected, rel=1e-9)
        assert (row["status"] == "flagged") == (expected < 0.05 / 5)


def test_fwer_interval_is_clopper_pearson():
    reps = pd.DataFrame(
        {
            "replicate": np.repeat(np.arange(40), 2),
            "concept_id": ["n", "e"] * 40,
            "effect": [0.0, 0.05] * 40,
            "flagged": [False, True] * 40,
            "target_calls": 1,
            "exhaustive_target_calls": 2,
        }
    )
    reps.loc[[0, 2, 4], "flagged"] = True  # 3 of 40 replicates flag the null concept
    s = summarise(reps)
    lo, hi = proportion_confint(3, 40, alpha=0.05, method="beta")
    assert s["fwer"] == 3 / 40 and s["fwer_ci95"] == pytest.approx([lo, hi], rel=1e-9)
    assert s["power_ci95"][0.05] == pytest.approx(list(proportion_confint(40, 40, method="beta")), rel=1e-9)
