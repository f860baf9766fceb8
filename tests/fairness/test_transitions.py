"""Transition matrices: hand-worked counts, T^pair identities, directional decomposition."""

import numpy as np
import pandas as pd
import pytest

from thinkbias.fairness.cells import assign_cells
from thinkbias.fairness.disparity import disparity_table
from thinkbias.fairness.transitions import (
    check_cell_identities,
    directional_decomposition,
    group_gaps,
    group_transitions,
    pair_state_counts,
    pair_state_matrix,
    pair_states,
)


def pairs_from_states(transitions: dict[tuple[str, str], int], model="m", dataset="d") -> pd.DataFrame:
    rows = []
    for (s, t), n in transitions.items():
        for i in range(n):
            rows.append(
                dict(
                    model=model,
                    dataset=dataset,
                    pair_id=f"{s}{t}{i}",
                    y_alpha_nothink=int(s[0] == "Y"),
                    y_alpha_prime_nothink=int(s[1] == "Y"),
                    y_alpha_think=int(t[0] == "Y"),
                    y_alpha_prime_think=int(t[1] == "Y"),
                )
            )
    return pd.DataFrame(rows)


TRANS = {
    ("NN", "NN"): 50,
    ("NN", "YY"): 20,
    ("NN", "YN"): 6,
    ("NN", "NY"): 4,
    ("YY", "YY"): 30,
    ("YY", "NY"): 3,
    ("YN", "YY"): 5,
    ("YN", "YN"): 2,
    ("NY", "NN"): 1,
    ("NY", "YN"): 1,
}


def test_pair_state_matrix_hand_worked():
    cells = assign_cells(pairs_from_states(TRANS))
    counts = pair_state_counts(cells)
    m = pair_state_matrix(counts).set_index("from")
    assert m.loc["NN", "n"] == 80
    assert m.loc["NN", "to_YY"] == pytest.approx(20 / 80)
    assert m.loc["NN", "to_M"] == pytest.approx(10 / 80)
    assert m.loc["YN", "n"] == 7 and m.loc["NY", "n"] == 2
    assert m.loc["total", "to_M"] == 6 + 4 + 3 + 2 + 1  # think-flip pairs = c + d
    # cells: b = M -> agree = 5 + 1; c = agree -> M = 10 + 3; d = M -> M = 3
    assert (cells.cell == "b").sum() == 6 and (cells.cell == "c").sum() == 13 and (cells.cell == "d").sum() == 3
    ident = check_cell_identities(cells, counts)
    assert ident.b_from_T.iloc[0] == pytest.approx(6) and ident.c_from_T.iloc[0] == pytest.approx(13)


def test_identities_hold_on_random_tables_and_catch_mismatch():
    rng = np.random.default_rng(7)
    for seed in range(5):
        n = 200
        pairs = pd.DataFrame(
            {
                "model": "m",
                "dataset": "d",
                "pair_id": [f"p{i}" for i in range(n)],
                **{f"y_{s}_{a}": rng.integers(0, 2, n) for s in ("alpha", "alpha_prime") for a in ("nothink", "think")},
            }
        )
        cells = assign_cells(pairs)
        check_cell_identities(cells, pair_state_counts(cells))
    broken = cells.copy()
    broken.loc[broken.index[:3], "cell"] = "c"
    if (broken.cell == "c").sum() != (cells.cell == "c").sum():
        with pytest.raises(AssertionError):
            check_cell_identities(broken, pair_state_counts(cells))


def test_group_transitions_against_crosstab():
    cells = assign_cells(pairs_from_states(TRANS))
    g = group_transitions(cells).set_index("side")
    for side in ("alpha", "alpha_prime"):
        ct = pd.crosstab(cells[f"y_{side}_nothink"], cells[f"y_{side}_think"], normalize="index")
        assert g.loc[side, "P(Y|Y)"] == pytest.approx(ct.loc[1, 1])
        assert g.loc[side, "P(Y|N)"] == pytest.approx(ct.loc[0, 1])
        assert g.loc[side, "delta_P(Y)"] == pytest.approx(
            cells[f"y_{side}_think"].mean() - cells[f"y_{side}_nothink"].mean()
        )
    gaps = group_gaps(group_transitions(cells)).iloc[0]
    assert gaps.max_abs_gap == pytest.approx(
        max(abs(g.loc["alpha", e] - g.loc["alpha_prime", e]) for e in ["P(Y|Y)", "P(N|Y)", "P(Y|N)", "P(N|N)"])
    )


def test_directional_decomposition():
    cells = assign_cells(pairs_from_states(TRANS))
    t = directional_decomposition(cells, disparity_table(cells, 100, 1), noise_floor=0.015).iloc[0]
    # cell c: NN->YN 6, NN->NY 4, YY->NY 3  => alpha-up 6, alpha'-up 7
    assert (t.c, t.c_alpha_up, t.c_alpha_prime_up) == (13, 6, 7)
    assert t.delta_c_pct == pytest.approx(100 * (6 - 7) / len(cells))
    # D_group(think) - D_group(nothink) decomposes into the c and d tilts minus the nothink tilt
    dg_think = (t.c_alpha_up - t.c_alpha_prime_up + t.d_alpha_up - t.d_alpha_prime_up) / len(cells)
    states_nt = pair_states(cells, "nothink")
    dg_nothink = ((states_nt == "YN").sum() - (states_nt == "NY").sum()) / len(cells)
    assert t.delta_dgroup == pytest.approx(dg_think - dg_nothink)


def test_table4_has_the_pooled_m_row_and_integer_column_totals():
    from thinkbias.markdown import markdown_table

    cells = assign_cells(pairs_from_states(TRANS))
    m = pair_state_matrix(pair_state_counts(cells))
    assert m["from"].tolist() == ["NN", "YY", "YN", "NY", "M", "total"]
    mrow = m.set_index("from").loc["M"]
    # M = YN (7 pairs) + NY (2 pairs): YN->YY 5, YN->YN 2, NY->NN 1, NY->YN 1
    assert mrow["n"] == 9
    assert mrow["to_NN"] == pytest.approx(1 / 9) and mrow["to_YY"] == pytest.approx(5 / 9)
    assert mrow["to_YN"] == pytest.approx(3 / 9) and mrow["to_NY"] == 0 and mrow["to_M"] == pytest.approx(3 / 9)
    # independent: the pooled row from a crosstab of the pair states
    pairs = pairs_from_states(TRANS)
    nt, th = pair_states(pairs, "nothink"), pair_states(pairs, "think")
    pooled = pd.crosstab(nt.where(~nt.isin(["YN", "NY"]), "M"), th, normalize="index").loc["M"]
    assert [mrow[f"to_{t}"] for t in ("NN", "YY", "YN")] == pytest.approx(
        [pooled.get(t, 0) for t in ("NN", "YY", "YN")]
    )
    total = m.set_index("from").loc["total"]
    assert all(isinstance(total[c], int) for c in ("to_NN", "to_YY", "to_YN", "to_NY", "to_M"))
    md = markdown_table(m, 3)
    assert "| total | 122 | 51 | 55 | 9 | 7 | 16 |" in md and "51.000" not in md
    assert "| M | 9 | 0.111 | 0.556 | 0.333 | 0.000 | 0.333 |" in md
