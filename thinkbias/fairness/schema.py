"""The predictions table's declared schema (docs/fairness.md, "Predictions table schema") and its
validation: every analysis reads the table through :func:`validate_predictions`, generated or not.

Beyond column types: ``(dataset, model, pair_id, side, arm)`` is unique; every pair has all four
rows (2 sides x 2 arms), so a lost row never shrinks N unnoticed; ``dataset`` and ``model`` have one
spelling per name (``COMPAS`` beside ``compas`` would be a setting of its own); text columns other
than ``answer`` and ``attribute`` are never blank; ``status`` is ``ok``, ``refusal`` or ``unparsed``
and ``ok`` exactly when there is an answer; probabilities are numbers in [0, 1].
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pandera.pandas as pa

from thinkbias.data.byo_table import key_check, text_column, unique_key, validate_table
from thinkbias.fairness.parse import STATUSES
from thinkbias.fairness.predictions import ARMS, DEPTH_COLUMN, KEY, SIDES

PAIR = ("dataset", "model", "pair_id")
ROWS_PER_PAIR = len(SIDES) * len(ARMS)


def _answer(value: object) -> str | None:
    if value is None or (not isinstance(value, str) and pd.isna(value)) or str(value).strip() == "":
        return None
    return str(value).strip().capitalize()


def _yes_no_or_blank(answer: pd.Series) -> pd.Series:
    return answer.astype(str).str.strip().str.capitalize().isin(["Yes", "No", ""])


def _status_matches_answer(df: pd.DataFrame, key: tuple[str, ...]) -> pd.Series:
    if "status" not in df.columns or "answer" not in df.columns:
        return pd.Series(True, index=df.index)
    has_answer = pd.Series([_answer(a) is not None for a in df["answer"]], index=df.index)
    status = df["status"].astype(str)
    return ~status.isin(STATUSES) | ((status == "ok") == has_answer)  # an unknown status is reported by its column


def _pair_complete(df: pd.DataFrame, key: tuple[str, ...]) -> pd.Series:
    """True for the rows of pairs that have a row for every side x arm; a pair with a side or arm
    outside the schema's values is left to that column's check."""
    if any(c not in df.columns for c in PAIR + ("side", "arm")):
        return pd.Series(True, index=df.index)
    valid = df["side"].isin(SIDES) & df["arm"].isin(ARMS)
    cell = (df["side"].astype(str) + "/" + df["arm"].astype(str)).where(valid)
    groups = [df[c].astype(str) for c in PAIR]
    cells = cell.groupby(groups).transform("nunique")
    left_to_columns = (~valid).groupby(groups).transform("any")
    return (cells == ROWS_PER_PAIR) | left_to_columns


def _one_spelling(values: pd.Series) -> pd.Series:
    """True where a value is the one spelling of its name in the column: among values equal up to
    case and surrounding spaces, the most frequent (on a tie, the first in the file) passes and the
    others fail."""
    text = values.astype(str)
    counts = text.value_counts(sort=False)
    first = {v: i for i, v in enumerate(pd.unique(text))}
    chosen: dict[str, str] = {}
    for spelling, n in counts.items():
        name = spelling.strip().casefold()
        best = chosen.get(name)
        if best is None or (n, -first[spelling]) > (counts[best], -first[best]):
            chosen[name] = spelling
    return text.map(lambda v: chosen[v.strip().casefold()] == v)


ONE_SPELLING = pa.Check(
    _one_spelling, error="another spelling (case or surrounding spaces) of a more frequent value of the column"
)


def _probability() -> pa.Column:
    return pa.Column(float, pa.Check.in_range(0, 1), coerce=True, nullable=True, required=False)


PREDICTIONS_SCHEMA = pa.DataFrameSchema(
    {
        "dataset": text_column(checks=[ONE_SPELLING]),
        "model": text_column(checks=[ONE_SPELLING]),
        "pair_id": text_column(),
        "side": text_column(checks=[pa.Check.isin(list(SIDES))]),
        "arm": text_column(checks=[pa.Check.isin(list(ARMS))]),
        "answer": pa.Column(str, pa.Check(_yes_no_or_blank, error="not Yes, No or empty"), coerce=True, nullable=True),
        "status": text_column(required=False, checks=[pa.Check.isin(list(STATUSES))]),
        "attribute": text_column(required=False, nullable=True),
        "p_yes": _probability(),
    },
    checks=[
        unique_key(KEY),
        key_check(
            _pair_complete,
            PAIR,
            f"incomplete pair (not all {ROWS_PER_PAIR} rows: side {' and '.join(SIDES)} x arm {' and '.join(ARMS)})",
        ),
        key_check(
            _status_matches_answer,
            KEY + ("status", "answer"),
            "status 'ok' without an answer, or an answer with another status",
        ),
    ],
    name="predictions",
)


def validate_predictions(pred: pd.DataFrame, source: str = "predictions table") -> pd.DataFrame:
    """Check ``pred`` against :data:`PREDICTIONS_SCHEMA` (plus a probability column for every
    ``p_yes_K<K>_k<kk>`` present) and normalise it: answers capitalised, status derived from the
    answer when absent (``ok`` iff an answer), ``attribute`` defaulting to the side, ``p_yes`` to NaN.

    Raises :class:`~thinkbias.data.byo_table.TableError` naming, per failing column or key, how
    many rows fail and the first offending values; ``source`` names the table in that message.
    """
    depth = {c: _probability() for c in pred.columns if DEPTH_COLUMN.match(str(c))}
    out = validate_table(pred, PREDICTIONS_SCHEMA.add_columns(depth), source)
    ans = pd.Series([_answer(a) for a in out["answer"]], index=out.index, dtype=object)
    out["answer"] = ans
    if "status" not in out.columns:
        out["status"] = np.where(ans.notna(), "ok", "unparsed")
    if "attribute" not in out.columns:
        out["attribute"] = out["side"]
    if "p_yes" not in out.columns:
        out["p_yes"] = np.nan
    return out
