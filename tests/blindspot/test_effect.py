"""Effect size and its paired confidence interval, against hand-worked cases."""

import math

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.contingency_tables import Table2x2
from statsmodels.stats.proportion import proportion_confint

from thinkbias.blindspot.effect import acceptance_difference, flipped, paired_counts, side_statistics


def test_paired_counts_exclude_unparsable_pairs():
    pos = pd.Series([1, 1, 0, 0, 1, None])
    neg = pd.Series([0, 1, 1, 0, 0, 1])
    cells = paired_counts(pos, neg)
    assert cells == {"b": 2, "c": 1, "both_accept": 1, "both_reject": 1, "n": 5, "n_invalid": 1}


def test_acceptance_difference_hand_worked():
    # 10 pairs: b = 3, c = 1, 4 both accept, 2 both reject
    pos = [1, 1, 1, 0] + [1] * 4 + [0] * 2
    neg = [0, 0, 0, 1] + [1] * 4 + [0] * 2
    out = acceptance_difference(pd.Series(pos), pd.Series(neg))
    assert out["accept_pos"] == pytest.approx(0.7)
    assert out["accept_neg"] == pytest.approx(0.5)
    assert out["delta"] == pytest.approx(0.2)
    se = math.sqrt((3 + 1) / 100 - (3 - 1) ** 2 / 1000)  # = sqrt(0.036)
    assert out["ci_low"] == pytest.approx(0.2 - 1.959964 * se, rel=1e-5)
    assert out["ci_high"] == pytest.approx(0.2 + 1.959964 * se, rel=1e-5)


def test_rates_are_per_side_over_parsable_responses():
    out = acceptance_difference(pd.Series([1, None, 1, 0]), pd.Series([0, 0, None, None]))
    assert out["n_pos"] == 3 and out["n_neg"] == 2
    assert out["accept_pos"] == pytest.approx(2 / 3)
    assert out["accept_neg"] == 0.0


def test_flipped_mask():
    assert flipped(pd.Series([1, 0, 1, None]), pd.Series([0, 0, 0, 1])).tolist() == [True, False, True, False]


def test_side_statistics_treat_the_sides_as_independent_groups():
    # the paper's code, tests/concept_pipeline/test_statistics.py::test_calculate_statistics_single_group_basic:
    # [1, 0, 1, None] has 3 parsable responses, acceptance 2/3 and a Wilson interval inside [0, 1]
    y_pos = pd.Series([1, 0, 1, None] + [1] * 26 + [0] * 10, dtype=float)
    y_neg = pd.Series([0, 0, 1, 1] + [1] * 16 + [0] * 20, dtype=float)
    s = side_statistics(y_pos, y_neg)
    # x+: 28 of 39 parsable accepted; x-: 18 of 40
    assert (s["accept_pos_ci_low"], s["accept_pos_ci_high"]) == pytest.approx(
        proportion_confint(28, 39, method="wilson"), abs=1e-12
    )
    assert (s["accept_neg_ci_low"], s["accept_neg_ci_high"]) == pytest.approx(
        proportion_confint(18, 40, method="wilson"), abs=1e-12
    )
    ref = Table2x2(np.array([[28, 11], [18, 22]]))
    assert s["odds_ratio"] == pytest.approx(ref.oddsratio)
    assert (s["odds_ratio_ci_low"], s["odds_ratio_ci_high"]) == pytest.approx(ref.oddsratio_confint(), rel=1e-10)
    assert s["relative_risk"] == pytest.approx(ref.riskratio)
    assert (s["relative_risk_ci_low"], s["relative_risk_ci_high"]) == pytest.approx(ref.riskratio_confint(), rel=1e-10)
    small = side_statistics(pd.Series([1, 0, 1, None]), pd.Series([0, 0, 1, 1]))
    assert 0 <= small["accept_pos_ci_low"] <= 2 / 3 <= small["accept_pos_ci_high"] <= 1
