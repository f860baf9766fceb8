"""Every table of the study from the retained-pairs table (one function per product).

Each product is a tidy table with N on every row; :data:`PRODUCTS` maps product names (the file
stems under results/fairness/<run>/tables/) to their builders. The pair-state identities (b and c
recomputed from T^pair) are asserted whenever the cells table is built.
"""

from __future__ import annotations

from typing import Callable

import pandas as pd

from thinkbias.fairness.cdpg import anchor_mover_trajectories, cdpg_long, mean_abs_cdpg, slope_table
from thinkbias.fairness.cells import assign_cells, contingency_table
from thinkbias.fairness.disparity import disparity_table
from thinkbias.fairness.predictions import depth_sets, pair_table, parse_counts
from thinkbias.fairness.schema import validate_predictions
from thinkbias.fairness.transitions import (
    check_cell_identities,
    directional_decomposition,
    group_gaps,
    group_transitions,
    pair_state_counts,
    pair_state_matrix,
)


def build_cells(pred: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Predictions -> (cells table of retained pairs, parse counts, identity check table).

    Raises ``AssertionError`` if the T^pair identities fail for any setting.
    """
    pred = validate_predictions(pred)
    counts = parse_counts(pred)
    pairs = pair_table(pred)
    attrs = (
        pred.groupby(["model", "dataset", "side"])["attribute"]
        .first()
        .unstack("side")
        .rename(columns=lambda s: f"attribute_{s}")
        .reset_index()
    )
    pairs = pairs.merge(attrs, on=["model", "dataset"], how="left")
    cells = assign_cells(pairs)
    identities = check_cell_identities(cells, pair_state_counts(cells))
    return cells, counts, identities


def table2(cells: pd.DataFrame, **_: object) -> pd.DataFrame:
    return contingency_table(cells)


def figure2(cells: pd.DataFrame, n_boot: int = 1000, seed: int = 0, **_: object) -> pd.DataFrame:
    return disparity_table(cells, n_boot, seed)


def _Ks(cells: pd.DataFrame) -> list[int]:
    cols = [c.replace("p_alpha_", "p_yes_") for c in cells.columns if c.startswith("p_alpha_K")]
    return list(depth_sets(cols))


def figure3(cells: pd.DataFrame, main_K: int = 10, **_: object) -> pd.DataFrame:
    return mean_abs_cdpg(cdpg_long(cells, main_K))


def appendix_c_curves(cells: pd.DataFrame, **_: object) -> pd.DataFrame:
    parts = [mean_abs_cdpg(cdpg_long(cells, K)) for K in _Ks(cells)]
    parts = [p for p in parts if len(p)]
    return pd.concat(parts, ignore_index=True) if parts else mean_abs_cdpg(cdpg_long(cells, 10))


def appendix_c(cells: pd.DataFrame, **_: object) -> pd.DataFrame:
    return slope_table(appendix_c_curves(cells))


def figure4(cells: pd.DataFrame, main_K: int = 10, **_: object) -> pd.DataFrame:
    return anchor_mover_trajectories(cdpg_long(cells, main_K), cells)


def table3(cells: pd.DataFrame, **_: object) -> pd.DataFrame:
    return group_transitions(cells)


def table3_gaps(cells: pd.DataFrame, **_: object) -> pd.DataFrame:
    return group_gaps(group_transitions(cells))


def table4(cells: pd.DataFrame, **_: object) -> pd.DataFrame:
    return pair_state_matrix(pair_state_counts(cells))


def table5(
    cells: pd.DataFrame, n_boot: int = 1000, seed: int = 0, noise_floor: float = 0.015, **_: object
) -> pd.DataFrame:
    return directional_decomposition(cells, disparity_table(cells, n_boot, seed), noise_floor)


PRODUCTS: dict[str, Callable[..., pd.DataFrame]] = {
    "table2": table2,
    "figure2": figure2,
    "figure3": figure3,
    "appendix_c_curves": appendix_c_curves,
    "appendix_c": appendix_c,
    "figure4": figure4,
    "table3": table3,
    "table3_gaps": table3_gaps,
    "table4": table4,
    "table5": table5,
}

# Rounding of each product in its Markdown rendering.
DIGITS = {
    "table2": 3,
    "figure2": 3,
    "figure3": 3,
    "appendix_c_curves": 3,
    "appendix_c": 3,
    "figure4": 3,
    "table3": 3,
    "table3_gaps": 3,
    "table4": 3,
    "table5": 3,
}
