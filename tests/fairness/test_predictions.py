"""The predictions schema: validation, parse counts, retained pairs."""

import numpy as np
import pandas as pd
import pytest

from thinkbias.fairness.predictions import depth_column, depth_sets, pair_table, parse_counts
from thinkbias.fairness.schema import validate_predictions


def long_rows(pair, answers, model="m", dataset="adult", status=None):
    """answers: {(side, arm): "Yes"/"No"/None}."""
    rows = []
    for (side, arm), ans in answers.items():
        rows.append(
            dict(
                dataset=dataset,
                model=model,
                pair_id=pair,
                side=side,
                arm=arm,
                answer=ans,
                status=(status or {}).get((side, arm), "ok" if ans else "unparsed"),
                p_yes=0.5,
            )
        )
    return rows


ALL_YES = {(s, a): "Yes" for s in ("alpha", "alpha_prime") for a in ("nothink", "think")}


def test_retention_and_counts():
    rows = (
        long_rows("p1", ALL_YES)
        + long_rows("p2", {**ALL_YES, ("alpha", "think"): None})
        + long_rows("p3", {**ALL_YES, ("alpha_prime", "nothink"): None}, status={("alpha_prime", "nothink"): "refusal"})
    )
    pred = validate_predictions(pd.DataFrame(rows))
    counts = parse_counts(pred).iloc[0]
    assert counts.pairs == 3 and counts.N == 1
    assert counts.think_unparsed == 1 and counts.nothink_refusal == 1 and counts.nothink_ok == 5
    pairs = pair_table(pred)
    assert list(pairs.pair_id) == ["p1"] and pairs.y_alpha_think.iloc[0] == 1


def test_pairs_left_out_of_the_cdpg_curves_are_counted():
    """A think-side depth probability that the engine could not read (NaN) drops its pair from the
    CDPG curves (``cdpg_long``); ``unprobed`` counts those pairs, retained pairs only."""
    from thinkbias.fairness.cdpg import cdpg_long

    rows = long_rows("p1", ALL_YES) + long_rows("p2", ALL_YES)
    rows += long_rows("p3", {**ALL_YES, ("alpha", "nothink"): None})
    pred = pd.DataFrame(rows)
    for k in range(3):
        pred[f"p_yes_K2_k{k:02d}"] = np.where(pred["arm"] == "think", 0.4, np.nan)
    pred.loc[(pred.pair_id == "p2") & (pred.side == "alpha_prime") & (pred.arm == "think"), "p_yes_K2_k01"] = np.nan
    pred.loc[(pred.pair_id == "p3") & (pred.arm == "think"), "p_yes_K2_k00"] = np.nan  # not retained anyway
    pred = validate_predictions(pred)
    counts = parse_counts(pred).iloc[0]
    assert counts.N == 2 and counts.unprobed == 1
    cells = pair_table(pred).assign(cell="a")
    assert cdpg_long(cells, 2)["pair_id"].unique().tolist() == ["p1"]  # the dropped pair is the counted one


def test_validation_errors():
    good = pd.DataFrame(long_rows("p1", ALL_YES))
    with pytest.raises(ValueError, match="missing column.*'arm'"):
        validate_predictions(good.drop(columns=["arm"]))
    with pytest.raises(ValueError, match="column 'side': 4 of 4 rows not one of alpha, alpha_prime; first: 'male'"):
        validate_predictions(good.assign(side="male"))
    with pytest.raises(ValueError, match="column 'answer': 4 of 4 rows not Yes, No or empty"):
        validate_predictions(good.assign(answer="Maybe"))
    with pytest.raises(ValueError, match="duplicate key"):
        validate_predictions(pd.concat([good, good.iloc[:1]]))
    with pytest.raises(ValueError, match="status 'ok' without an answer"):
        validate_predictions(good.assign(answer=None))
    # status derived when absent; lowercase answers accepted
    v = validate_predictions(good.drop(columns=["status"]).assign(answer="yes"))
    assert set(v.status) == {"ok"} and set(v.answer) == {"Yes"}


def test_depth_columns_carried_to_pairs():
    rows = long_rows("p1", ALL_YES)
    for r in rows:
        for k in range(11):
            r[depth_column(10, k)] = k / 10 if r["arm"] == "think" else np.nan
    pred = validate_predictions(pd.DataFrame(rows))
    assert depth_sets(pred.columns) == {10: list(range(11))}
    pairs = pair_table(pred)
    assert pairs["p_alpha_K10_k07"].iloc[0] == pytest.approx(0.7)
    assert pairs["p_alpha_prime_K10_k10"].iloc[0] == pytest.approx(1.0)
