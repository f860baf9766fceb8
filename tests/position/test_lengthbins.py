"""Equal-frequency length bins, monotonicity and end-point gradient (Appendix C)."""

import math

import numpy as np
import pandas as pd
import pytest

from thinkbias.position.lengthbins import binned_means, equal_frequency_bins, monotonicity


def test_equal_frequency_sizes():
    bins = equal_frequency_bins(pd.Series(np.arange(10, 0, -1, dtype=float)), 4)
    assert sorted(bins.value_counts().tolist()) == [2, 2, 3, 3]
    assert bins.iloc[-1] == 1 and bins.iloc[0] == 4  # shortest value -> bin 1


def test_binned_means_hand_worked():
    q = pd.DataFrame({"length": [10, 20, 30, 40, 50, 60, 70, 80], "pbs": [0, 0.2, 0.1, 0.3, 0.4, 0.2, 0.8, 0.6]})
    b = binned_means(q, 4)
    assert b["n"].tolist() == [2, 2, 2, 2]
    assert b["mean"].tolist() == pytest.approx([0.1, 0.2, 0.3, 0.7])
    assert b["se"].iloc[0] == pytest.approx(np.std([0, 0.2], ddof=1) / math.sqrt(2))
    assert b["mean_length"].tolist() == pytest.approx([15, 35, 55, 75])


def test_monotonicity():
    assert monotonicity([0.1, 0.2, 0.3]) == (True, None, pytest.approx(0.2))
    mono, viol, grad = monotonicity([0.1, 0.3, 0.2, 0.5])
    assert (mono, viol, grad) == (False, 2, pytest.approx(0.4))
    assert monotonicity([0.1, 0.1])[:2] == (False, 1)
