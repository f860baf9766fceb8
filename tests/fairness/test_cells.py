"""Contingency cells and the exact McNemar test against statsmodels."""

import math

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.contingency_tables import mcnemar

from thinkbias.fairness.cells import assign_cells, contingency_table


def pairs_from_cells(counts: dict[str, int], model="m", dataset="adult") -> pd.DataFrame:
    """Pairs realising given cell counts: a = (0,0 | 0,0), b = (1,0 | 1,1), c = (1,1 | 0,1), d = (1,0 | 0,1)."""
    proto = {"a": (0, 0, 0, 0), "b": (1, 0, 1, 1), "c": (1, 1, 0, 1), "d": (1, 0, 0, 1)}
    rows = []
    for cell, n in counts.items():
        for i in range(n):
            ya_n, yb_n, ya_t, yb_t = proto[cell]
            rows.append(
                dict(
                    model=model,
                    dataset=dataset,
                    pair_id=f"{cell}{i}",
                    y_alpha_nothink=ya_n,
                    y_alpha_prime_nothink=yb_n,
                    y_alpha_think=ya_t,
                    y_alpha_prime_think=yb_t,
                    p_alpha_nothink=0.6,
                    p_alpha_prime_nothink=0.4,
                    p_alpha_think=0.9,
                    p_alpha_prime_think=0.2,
                )
            )
    return pd.DataFrame(rows)


def test_cells_counted_and_mcnemar_matches_statsmodels():
    cells = assign_cells(pairs_from_cells({"a": 40, "b": 3, "c": 14, "d": 2}))
    t = contingency_table(cells)
    row = t.iloc[0]
    assert (row.a, row.b, row.c, row.d, row.N) == (40, 3, 14, 2, 59)
    ref = mcnemar(np.array([[40, 3], [14, 2]]), exact=True).pvalue
    assert row.mcnemar_p == pytest.approx(ref, rel=1e-12)
    assert row.mcnemar_log10_p == pytest.approx(math.log10(ref), rel=1e-9)
    assert row.c_over_b == pytest.approx(14 / 3)
    assert row.ddisp_c_think == pytest.approx(0.7) and row.ddisp_c_nothink == pytest.approx(0.2)
    assert row.ddisp_b_think_n == 3


def test_pooled_row_sums_settings():
    cells = assign_cells(
        pd.concat(
            [
                pairs_from_cells({"a": 5, "b": 1, "c": 6, "d": 0}, dataset="adult"),
                pairs_from_cells({"a": 7, "b": 2, "c": 9, "d": 1}, dataset="compas"),
            ]
        )
    )
    t = contingency_table(cells)
    pooled = t[t.model == "pooled"].iloc[0]
    assert (pooled.b, pooled.c, pooled.N) == (3, 15, 31)
    assert pooled.mcnemar_p == pytest.approx(mcnemar(np.array([[12, 3], [15, 1]]), exact=True).pvalue)


def test_pooled_row_of_the_paper_keeps_an_exact_finite_log10_p():
    # b = 620, c = 3508 (the paper's pooled counts, p < 1e-485): p underflows a double, log10 p is
    # the exact -485.605 (tests/stats/test_mcnemar.py checks it against integer arithmetic)
    t = contingency_table(assign_cells(pairs_from_cells({"a": 10, "b": 620, "c": 3508, "d": 68})))
    pooled = t[t.model == "pooled"].iloc[0]
    assert pooled.mcnemar_p == 0.0
    assert pooled.mcnemar_log10_p == pytest.approx(-485.6048358107389, abs=1e-6)
    row = contingency_table(assign_cells(pairs_from_cells({"a": 1, "b": 10, "c": 20}))).iloc[0]
    assert row.mcnemar_log10_p == pytest.approx(math.log10(mcnemar(np.array([[0, 10], [20, 0]]), exact=True).pvalue))
