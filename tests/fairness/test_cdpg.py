"""CDPG on constructed probabilities: cuts, |CDPG_k| by cell, slopes, anchors and movers."""

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from thinkbias.fairness.cdpg import (
    anchor_mover_trajectories,
    cdpg_long,
    depth_slope,
    mean_abs_cdpg,
    mover_side,
    slope_table,
    union_cuts,
    depth_fractions,
)
from thinkbias.fairness.cells import assign_cells
from thinkbias.llm.trace_cuts import fraction_cuts


def depth_cuts(T: int, K: int) -> list[int]:
    """The paper's cuts of K equal segments, in exact integer arithmetic: floor(k*T/K + 1/2), k = 0..K."""
    return [(2 * k * T + K) // (2 * K) for k in range(K + 1)]


def test_engine_fraction_cuts_are_the_papers_depth_cuts():
    """The fused path hands k/K to the engine, which cuts at floor(f*T + 1/2): the paper's cut for every T."""
    Ks = [5, 10, 20, 3, 7]
    fr = depth_fractions(Ks)
    assert fr[0] == 0 and fr[-1] == 1 and len(fr) == len(set(fr))
    index = {f: i for i, f in enumerate(fr)}
    for T in range(0, 3001):
        cuts = fraction_cuts([float(f) for f in fr], T)
        for K in Ks:
            assert [cuts[index[Fraction(k, K)]] for k in range(K + 1)] == depth_cuts(T, K), (T, K)
        assert union_cuts(T, Ks) == sorted(set(cuts)) == sorted({c for K in Ks for c in depth_cuts(T, K)})
    for T in (10**5 + 7, 654_321, 999_999):  # long traces too (the 1e-9 tie margin stays far below 1/K)
        for K in (3, 7, 20, 64):
            assert fraction_cuts([k / K for k in range(K + 1)], T) == depth_cuts(T, K), (T, K)
    assert fraction_cuts([0.5], 7) == [4] and fraction_cuts([0.5], 5) == [3]  # ties round up, not to even


def test_union_cuts():
    assert depth_cuts(10, 5) == [0, 2, 4, 6, 8, 10] == [math.floor(k * 10 / 5 + 0.5) for k in range(6)]
    assert depth_cuts(7, 2) == [0, 4, 7]  # 3.5 rounds half up
    assert union_cuts(7, [2]) == [0, 4, 7]
    assert union_cuts(0, [10]) == [0]
    assert union_cuts(20, [5, 10]) == list(range(0, 21, 2))
    assert set(union_cuts(37, [5])) <= set(union_cuts(37, [5, 10, 20]))


def constructed(K=4):
    """Two pairs: cell c (alpha rises 0.5 -> 0.9 linearly, alpha' falls 0.5 -> 0.1), cell b (sides converge)."""
    ks = np.arange(K + 1) / K
    row_c = dict(
        model="m",
        dataset="d",
        pair_id="c1",
        y_alpha_nothink=0,
        y_alpha_prime_nothink=0,
        y_alpha_think=1,
        y_alpha_prime_think=0,
    )
    row_b = dict(
        model="m",
        dataset="d",
        pair_id="b1",
        y_alpha_nothink=1,
        y_alpha_prime_nothink=0,
        y_alpha_think=1,
        y_alpha_prime_think=1,
    )
    for k, x in enumerate(ks):
        row_c[f"p_alpha_K{K}_k{k:02d}"] = 0.5 + 0.4 * x
        row_c[f"p_alpha_prime_K{K}_k{k:02d}"] = 0.5 - 0.4 * x
        row_b[f"p_alpha_K{K}_k{k:02d}"] = 0.8
        row_b[f"p_alpha_prime_K{K}_k{k:02d}"] = 0.2 + 0.6 * x
    return assign_cells(pd.DataFrame([row_c, row_b]))


def test_cdpg_values_and_means():
    cells = constructed()
    long = cdpg_long(cells, 4)
    assert len(long) == 2 * 5
    c = long[long.pair_id == "c1"].sort_values("k")
    np.testing.assert_allclose(c.cdpg, 0.8 * np.arange(5) / 4)
    b = long[long.pair_id == "b1"].sort_values("k")
    np.testing.assert_allclose(b.abs_cdpg, [0.6, 0.45, 0.3, 0.15, 0.0], atol=1e-12)
    curves = mean_abs_cdpg(long)
    assert set(curves.cell) == {"b", "c"} and (curves.n == 1).all()
    slopes = slope_table(curves)
    assert slopes.slope.iloc[0] == pytest.approx(0.8)
    assert depth_slope(curves[curves.cell == "b"]) == pytest.approx(-0.6)


def test_pairs_without_probes_are_left_out():
    cells = constructed()
    cells.loc[cells.pair_id == "b1", "p_alpha_K4_k02"] = np.nan
    assert set(cdpg_long(cells, 4).pair_id) == {"c1"}
    assert cdpg_long(cells, 10).empty


def test_anchor_and_mover():
    cells = constructed()
    assert list(mover_side(cells)) == ["alpha", "alpha_prime"]
    traj = anchor_mover_trajectories(cdpg_long(cells, 4), cells)
    c_mover = traj[(traj.cell == "c") & (traj.role == "mover")].sort_values("k")
    np.testing.assert_allclose(c_mover.mean_p_yes, 0.5 + 0.4 * np.arange(5) / 4)
    b_anchor = traj[(traj.cell == "b") & (traj.role == "anchor")]
    np.testing.assert_allclose(b_anchor.mean_p_yes, 0.8)
    b_mover = traj[(traj.cell == "b") & (traj.role == "mover")].sort_values("k")
    assert b_mover.mean_p_yes.iloc[-1] == pytest.approx(0.8)
