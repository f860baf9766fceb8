"""The simulation benchmark on its smallest version, and its planting of effects."""
import numpy as np
import pandas as pd
import pytest

from thinkbias.blindspot.effect import paired_counts
from thinkbias.blindspot.simulation import SimulationDesign, run_replicates, simulate_outcomes, summarise
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
    assert s["calls_saved"] > 0.0            # nulls stop for futility, the effect stops early
    assert s["exhaustive_target_calls"] == 2 * 5 * 400


def test_without_early_stopping_every_concept_uses_every_input():
    reps = run_replicates(SMALL, 1, seed=1, params=StageParams(n_simulations=500, early_stopping=False))
    assert summarise(reps)["calls_saved"] < 0.5
    assert (reps["final_status"].isin(["flagged", "not_significant", "verbalized"])).all()


def test_summary_on_a_constructed_table():
    reps = pd.DataFrame({
        "replicate": [0, 0, 0, 1, 1, 1], "concept_id": ["n1", "n2", "e"] * 2, "effect": [0, 0, 0.05] * 2,
        "flagged": [True, False, True, False, False, False], "target_calls": [60] * 3 + [40] * 3,
        "exhaustive_target_calls": [100] * 6})
    s = summarise(reps)
    assert s["fwer"] == 0.5 and s["per_null_false_positive_rate"] == 0.25
    assert s["power"] == {0.05: 0.5} and s["calls_saved"] == pytest.approx(0.5)
