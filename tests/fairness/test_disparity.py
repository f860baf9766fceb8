"""D_cf, D_group (equal to the think-arm tilt), deltas and bootstrap intervals."""

import numpy as np
import pandas as pd
import pytest

from thinkbias.fairness.disparity import (
    bootstrap_intervals,
    derived_seed,
    disparity_table,
    flip_tilt,
    group_rate_difference,
    point_estimates,
)


def random_pairs(n=300, seed=3):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "model": "m",
            "dataset": "adult",
            "pair_id": [f"p{i}" for i in range(n)],
            **{f"y_{s}_{a}": rng.integers(0, 2, n) for s in ("alpha", "alpha_prime") for a in ("nothink", "think")},
        }
    )


def test_dgroup_equals_flip_tilt_and_group_rates():
    pairs = random_pairs()
    est = point_estimates(pairs)
    for arm in ("nothink", "think"):
        assert est[f"dgroup_{arm}"] == pytest.approx(flip_tilt(pairs, arm))
        assert est[f"dgroup_{arm}"] == pytest.approx(group_rate_difference(pairs, arm))
        flips = (pairs[f"y_alpha_{arm}"] != pairs[f"y_alpha_prime_{arm}"]).mean()
        assert est[f"dcf_{arm}"] == pytest.approx(flips)
    assert est["delta_dcf"] == pytest.approx(est["dcf_think"] - est["dcf_nothink"])


def test_hand_worked_case():
    # 4 pairs: think (1,0), (1,0), (0,1), (1,1); nothink all (0,0)
    pairs = pd.DataFrame(
        {
            "model": "m",
            "dataset": "d",
            "pair_id": list("wxyz"),
            "y_alpha_nothink": 0,
            "y_alpha_prime_nothink": 0,
            "y_alpha_think": [1, 1, 0, 1],
            "y_alpha_prime_think": [0, 0, 1, 1],
        }
    )
    est = point_estimates(pairs)
    assert est["dcf_think"] == 0.75 and est["dcf_nothink"] == 0
    assert est["dgroup_think"] == pytest.approx(0.25) and est["delta_dgroup"] == pytest.approx(0.25)


def test_bootstrap_is_seeded_and_brackets_estimate():
    pairs = random_pairs()
    a = bootstrap_intervals(pairs, 500, 11)
    b = bootstrap_intervals(pairs, 500, 11)
    assert a == b
    est = point_estimates(pairs)
    for m, (lo, hi) in a.items():
        assert lo <= est[m] + 1e-9 and est[m] - 1e-9 <= hi
    # the interval width of a mean of 300 Bernoulli(1/2) flips is about 2 * 1.96 * 0.5 / sqrt(300)
    lo, hi = a["dcf_think"]
    assert hi - lo == pytest.approx(2 * 1.96 * 0.5 / np.sqrt(300), rel=0.2)
    t = disparity_table(pairs, 200, 5)
    assert t.N.iloc[0] == 300 and t.delta_dgroup_lo.iloc[0] <= t.delta_dgroup.iloc[0] <= t.delta_dgroup_hi.iloc[0]
    assert derived_seed(1, "x") != derived_seed(2, "x")
