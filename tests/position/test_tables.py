"""Tables 1, 3 and 4 on constructed per-question metrics."""

import math

import mpmath
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from thinkbias.position.tables import (
    length_predictor,
    partial_correlation_table,
    quartile_table,
    robustness_table,
    significance_stars,
    wilcoxon_table,
)
from thinkbias.position.pbs import position_bias_score
from thinkbias.position.questions import question_metrics
from thinkbias.position.records import extract_records
from thinkbias.stats.partial_corr import partial_correlation


def _questions(n=40, seed=0):
    rng = np.random.default_rng(seed)
    length = rng.uniform(100, 5000, n)
    acc = rng.choice([0, 0.25, 0.5, 0.75, 1.0], n)
    pbs = 0.1 * np.log10(length) - 0.1 * acc + rng.normal(0, 0.02, n)
    q = pd.DataFrame(
        {
            "benchmark": "mmlu",
            "model": "m",
            "mode": "reasoning",
            "question_id": [f"q{i}" for i in range(n)],
            "length": length,
            "accuracy": acc,
            "pbs": pbs,
        }
    )
    return q


def test_table1_uses_log_length_and_accuracy():
    q = _questions()
    row = partial_correlation_table(q).iloc[0]
    ref = partial_correlation(np.log10(q["length"]), q["pbs"], q["accuracy"])
    assert row["partial_rho"] == pytest.approx(ref.r) and row["n"] == 40 and row["controls_accuracy"]
    assert row["partial_rho"] > 0.5 and row["significance"] == "***"
    raw = partial_correlation_table(q, scale="raw").iloc[0]
    assert raw["partial_rho"] == pytest.approx(partial_correlation(q["length"], q["pbs"], q["accuracy"]).r)


def test_table1_without_accuracy_is_plain_correlation():
    q = _questions().assign(accuracy=np.nan)
    row = partial_correlation_table(q).iloc[0]
    assert not row["controls_accuracy"]
    assert row["partial_rho"] == pytest.approx(np.corrcoef(np.log10(q["length"]), q["pbs"])[0, 1])


def test_length_predictor():
    assert np.isnan(length_predictor(pd.Series([0.0, 100.0]))[0])
    assert length_predictor(pd.Series([0.0, 100.0]))[1] == 2.0
    with pytest.raises(ValueError):
        length_predictor(pd.Series([1.0]), "sqrt")


def test_quartiles_and_robustness():
    q = pd.DataFrame(
        {
            "benchmark": "b",
            "model": "m",
            "mode": "cot",
            "question_id": list("abcdefgh"),
            "length": [1, 2, 3, 4, 5, 6, 7, 8],
            "pbs": [0.0, 0.2, 0.1, 0.3, 0.4, 0.2, 0.8, 0.6],
            "accuracy": 0.5,
        }
    )
    quart = quartile_table(q)
    assert quart["pbs"].tolist() == pytest.approx([0.1, 0.2, 0.3, 0.7])
    rob = robustness_table(q, (2, 4, 8)).set_index("k")
    assert rob.loc[4, "monotonic"] and rob.loc[4, "endpoint_gradient"] == pytest.approx(0.6)
    assert not rob.loc[8, "monotonic"] and rob.loc[8, "mark"] == "viol@2"
    assert rob.loc[2, "bin_means"] == "0.150 / 0.500"


def test_wilcoxon_one_sided_exact():
    base = _questions(5)
    other = base.assign(mode="direct", pbs=base["pbs"] - [0.1, 0.2, 0.3, 0.4, 0.5])
    q = pd.concat([base, other])
    t = wilcoxon_table(
        q,
        [
            {"reasoning": "m/reasoning", "reference": "m/direct"},
            {"reasoning": "m/direct", "reference": "m/reasoning"},
            {"reasoning": "m/reasoning", "reference": "x/cot"},
        ],
    )
    assert len(t) == 2  # the pair with a missing configuration is skipped
    # all 5 differences positive: exact one-sided p = 1 / 2^5
    assert t.iloc[0]["p_greater"] == pytest.approx(1 / 32) and t.iloc[0]["gap"] == pytest.approx(0.3)
    assert t.iloc[1]["p_greater"] == pytest.approx(1.0) and t.iloc[0]["n_pairs"] == 5


def test_significance_stars():
    assert [significance_stars(p) for p in (0.2, 0.04, 0.004, 1e-5, math.nan)] == ["", "*", "**", "***", ""]


def _answer_records(answers_by_config: dict[str, list[list[str | None]]]) -> pd.DataFrame:
    """Generations whose texts state the given answers (None: nothing to extract), through extraction."""
    rows = []
    for mode, questions in answers_by_config.items():
        for q, answers in enumerate(questions):
            for s, a in enumerate(answers):
                rows.append(
                    {
                        "benchmark": "mmlu",
                        "model": "m",
                        "mode": mode,
                        "question_id": f"q{q}",
                        "permutation": s,
                        "correct_position": "A",
                        "full_text": f"The answer is ({a})." if a else "no idea",
                    }
                )
    return extract_records(pd.DataFrame(rows))


def _exact_pbs(answers: list[str | None]) -> mpmath.mpf:
    """Eq. 1 at 50 digits from the answers, independently of thinkbias.position.pbs."""
    with mpmath.workdps(50):
        given = [a for a in answers if a]
        p = [mpmath.mpf(given.count(x)) / len(given) for x in "ABCD"]
        return mpmath.sqrt(mpmath.fsum((v - mpmath.mpf(1) / 4) ** 2 for v in p))


def test_wilcoxon_counts_tied_one_one_one_splits_as_ties():
    """A 1-1-1 split has one PBS whichever position is empty: such pairs are zero differences."""
    rng = np.random.default_rng(7)
    letters = ["A", "B", "C", "D", None]
    reasoning, reference = [], []
    for q in range(60):
        if q % 5 == 0:  # tied: the same split, a different empty position
            reasoning.append(["A", "B", "C", None])
            reference.append([None, "B", "C", "D"] if q % 2 else ["A", None, "C", "D"])
        else:
            reasoning.append(list(rng.choice(["A", "A", "B", "C", "D"], 4)))
            reference.append([letters[i] for i in rng.integers(0, 5, 4)])
            if not any(reference[-1]):
                reference[-1][0] = "B"
    questions = question_metrics(_answer_records({"reasoning": reasoning, "cot": reference}))
    row = wilcoxon_table(questions, [{"reasoning": "m/reasoning", "reference": "m/cot"}]).iloc[0]

    with mpmath.workdps(50):
        exact = [float(_exact_pbs(r) - _exact_pbs(f)) for r, f in zip(reasoning, reference)]
    assert sum(d == 0 for d in exact) >= 12
    expected = stats.wilcoxon(exact, alternative="greater", zero_method="wilcox")
    assert row["n_pairs"] == 60 and row["n_nonzero"] == sum(d != 0 for d in exact)
    assert row["p_greater"] == pytest.approx(expected.pvalue, rel=1e-12)
    assert row["statistic"] == pytest.approx(expected.statistic)
    # the trap: PBS from float shares differs by 5.6e-17 between the two tied splits
    shares = [np.array([1, 1, 1, 0]) / 3, np.array([0, 1, 1, 1]) / 3]
    naive = [float(np.sqrt(np.sum((p - 0.25) ** 2))) for p in shares]
    assert naive[0] != naive[1]
    assert position_bias_score(["A", "B", "C", None]) == position_bias_score([None, "B", "C", "D"])


def test_equal_bin_means_are_not_an_increase():
    # 0.3 + 0.2 + 0.1 and 0.1 + 0.2 + 0.3 differ as floats; equal means are a violation, not a rise
    q = pd.DataFrame(
        {
            "benchmark": "b",
            "model": "m",
            "mode": "cot",
            "question_id": list("abcdef"),
            "length": [1, 2, 3, 4, 5, 6],
            "pbs": [0.3, 0.2, 0.1, 0.1, 0.2, 0.3],
            "accuracy": 0.5,
        }
    )
    means = quartile_table(q, 2)["pbs"].tolist()
    assert (0.1 + 0.2 + 0.3) != (0.3 + 0.2 + 0.1)
    assert not robustness_table(q, (2,)).iloc[0]["monotonic"] and means[0] == pytest.approx(means[1])


def test_table1_carries_log10_p_beside_p():
    t = partial_correlation_table(_questions(200, seed=2)).iloc[0]
    assert t["log10_p_value"] == pytest.approx(math.log10(t["p_value"]), abs=1e-12)
    assert t["log10_p_greater"] == pytest.approx(math.log10(t["p_greater"]), abs=1e-12)


def test_wilcoxon_log10_p_is_exact_where_p_underflows():
    # 2,000 questions, every reasoning PBS above its reference by a distinct amount: T+ = n(n+1)/2,
    # z = (n(n+1)/4) / sqrt(n(n+1)(2n+1)/24) = 38.73, one-sided p = 10^-327.8 (scipy returns 0)
    n = 2000
    base = _questions(n, seed=1).assign(pbs=0.0)
    other = base.assign(mode="direct", pbs=-np.arange(1, n + 1) / (10 * n))
    row = wilcoxon_table(pd.concat([base, other]), [{"reasoning": "m/reasoning", "reference": "m/direct"}]).iloc[0]
    mpmath.mp.dps = 50
    z = mpmath.mpf(n * (n + 1)) / 4 / mpmath.sqrt(mpmath.mpf(n * (n + 1) * (2 * n + 1)) / 24)
    assert row["p_greater"] == 0.0
    assert row["log10_p_greater"] == pytest.approx(float(mpmath.log10(mpmath.ncdf(-z))), abs=1e-6)
    small = wilcoxon_table(
        pd.concat([base.iloc[:5], other.iloc[:5]]), [{"reasoning": "m/reasoning", "reference": "m/direct"}]
    )
    assert small.iloc[0]["log10_p_greater"] == pytest.approx(math.log10(1 / 32))
