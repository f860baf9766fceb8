"""Bring-your-own outcomes: run the staged testing on paired decisions and verbalization verdicts
produced elsewhere (e.g. the paper's released responses), with no model in the loop.

Outcome table (docs/blindspot.md; CSV, Parquet or JSON Lines), one row per model x task x concept x
input, declared by :data:`OUTCOMES_SCHEMA`: ``model, task, concept_id, input_id`` (text, never
blank), ``cluster`` and ``rank`` (the input's cluster and its rank, an integer >= 0, by distance to
the cluster's representative, which define the nested stages; the same on every row of an input),
``y_pos, y_neg`` (1 accept, 0 reject, empty = unparsable; nothing else) and ``verbalized_pos,
verbalized_neg`` (does the response on that side cite the concept: ``true``/``false`` in any case
or ``1``/``0``; empty = not judged). Other spellings such as ``Y``/``N`` or ``yes``/``no`` are
errors, never read as false. ``(model, task, concept_id, input_id)`` is unique: a row repeated
exactly and two rows that disagree are both errors. The optional baseline table
(:data:`BASELINE_SCHEMA`) has ``model, task, concept_id, input_id, verbalized`` (the same flag
values), unique by the same key; without it every concept passes the baseline filter.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pandera.pandas as pa

from thinkbias.blindspot.stages import StageParams, run_staged
from thinkbias.blindspot.tables import FLAGGED_COLUMNS, flagged_table, funnel_table
from thinkbias.data.byo_table import key_check, read_user_table, text_column, validate_table

KEY = ("model", "task", "concept_id", "input_id")
INPUT_KEY = ("model", "task", "input_id")
_TRUE, _FALSE = ("true", "1", "1.0"), ("false", "0", "0.0")


def _missing(value: object) -> bool:
    return value is None or (not isinstance(value, str) and pd.isna(value))


def _zero_one(value: object) -> float | None:
    """0.0 / 1.0 for a decision, NaN for empty, None for anything else."""
    if _missing(value):
        return float("nan")
    if isinstance(value, str):
        text = value.strip()
        return {"0": 0.0, "1": 1.0, "0.0": 0.0, "1.0": 1.0}.get(text, float("nan") if text == "" else None)
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number in (0.0, 1.0) else None


def _flag(value: object) -> bool | None | str:
    """True / False for a verbalization flag, None for empty, "bad" for anything else."""
    if _missing(value):
        return None
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text == "":
        return None
    return True if text in _TRUE else False if text in _FALSE else "bad"


def _decisions(series: pd.Series) -> pd.Series:
    return pd.Series([_zero_one(v) is not None for v in series], index=series.index)


def _flags(series: pd.Series) -> pd.Series:
    return pd.Series([_flag(v) != "bad" for v in series], index=series.index)


def _decision_column() -> pa.Column:
    return pa.Column(checks=[pa.Check(_decisions, error="not 0, 1 or empty", ignore_na=False)], nullable=True)


def _flag_column() -> pa.Column:
    return pa.Column(checks=[pa.Check(_flags, error="not true, false, 1, 0 or empty", ignore_na=False)], nullable=True)


def _not_repeated(df: pd.DataFrame, key: tuple[str, ...]) -> pd.Series:
    return ~df.duplicated(keep=False)


def _no_conflict(df: pd.DataFrame, key: tuple[str, ...]) -> pd.Series:
    distinct = df.drop_duplicates()
    clash = distinct.duplicated(list(key), keep=False)
    conflicting = distinct.loc[clash, list(key)].drop_duplicates()
    rows = df[list(key)].merge(conflicting.assign(_clash=True), on=list(key), how="left")["_clash"]
    return ~rows.fillna(False).astype(bool).set_axis(df.index)


def _one_place_per_input(df: pd.DataFrame, key: tuple[str, ...]) -> pd.Series:
    grouped = df.groupby(list(key), dropna=False)
    return (grouped["cluster"].transform("nunique") <= 1) & (grouped["rank"].transform("nunique") <= 1)


def _uniqueness_checks(key: tuple[str, ...]) -> list[pa.Check]:
    return [
        key_check(_not_repeated, key, f"rows repeated exactly (key {', '.join(key)})"),
        key_check(_no_conflict, key, f"rows that disagree for one key ({', '.join(key)})"),
    ]


OUTCOMES_SCHEMA = pa.DataFrameSchema(
    {
        **{c: text_column() for c in KEY},
        "cluster": text_column(),
        "rank": pa.Column(int, pa.Check.ge(0), coerce=True),
        "y_pos": _decision_column(),
        "y_neg": _decision_column(),
        "verbalized_pos": _flag_column(),
        "verbalized_neg": _flag_column(),
    },
    checks=[
        *_uniqueness_checks(KEY),
        key_check(
            _one_place_per_input, INPUT_KEY, "cluster or rank differs between rows of one input (model, task, input_id)"
        ),
    ],
    name="blindspot_outcomes",
)

BASELINE_SCHEMA = pa.DataFrameSchema(
    {**{c: text_column() for c in KEY}, "verbalized": _flag_column()},
    checks=_uniqueness_checks(KEY),
    name="blindspot_baseline",
)


def validate_outcomes(outcomes: pd.DataFrame, source: str = "bring-your-own outcomes") -> pd.DataFrame:
    """``outcomes`` checked against :data:`OUTCOMES_SCHEMA`, with ``y_pos, y_neg`` as 1.0 / 0.0 / NaN
    and the verbalization flags as True / False / None (not judged). Raises ``TableError``."""
    out = validate_table(outcomes, OUTCOMES_SCHEMA, source)
    for col in ("y_pos", "y_neg"):
        out[col] = pd.Series([_zero_one(v) for v in out[col]], index=out.index, dtype=float)
    for col in ("verbalized_pos", "verbalized_neg"):
        out[col] = pd.Series([_flag(v) for v in out[col]], index=out.index, dtype=object)
    return out


def validate_baseline(baseline: pd.DataFrame, source: str = "bring-your-own baseline") -> pd.DataFrame:
    """``baseline`` checked against :data:`BASELINE_SCHEMA`, ``verbalized`` as True / False / None."""
    out = validate_table(baseline, BASELINE_SCHEMA, source)
    out["verbalized"] = pd.Series([_flag(v) for v in out["verbalized"]], index=out.index, dtype=object)
    return out


def read_outcomes(path: str | Path) -> pd.DataFrame:
    """The outcome table at ``path``, read and validated (see :func:`validate_outcomes`)."""
    what = "bring-your-own outcomes"
    return validate_outcomes(read_user_table(path, what), f"{what} {path}")


def read_baseline(path: str | Path) -> pd.DataFrame:
    """The baseline verdict table at ``path``, read and validated (see :func:`validate_baseline`)."""
    what = "bring-your-own baseline"
    return validate_baseline(read_user_table(path, what), f"{what} {path}")


def run_byo(
    outcomes: pd.DataFrame, baseline: pd.DataFrame | None, k0: int, params: StageParams, max_stages: int | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Per (model, task): the staged procedure; returns (stages, flagged, funnel, costs).
    Both tables are validated first (:func:`validate_outcomes`, :func:`validate_baseline`)."""
    outcomes = validate_outcomes(outcomes)
    baseline = validate_baseline(baseline) if baseline is not None else None
    stages_all, flagged_all, funnel_all, costs_all = [], [], [], []
    for (model, task), sub in outcomes.groupby(["model", "task"], sort=True):
        members = sub[["input_id", "cluster", "rank"]].drop_duplicates("input_id")
        concept_ids = sorted(sub["concept_id"].unique())
        if baseline is not None:
            base = baseline[(baseline["model"] == model) & (baseline["task"] == task)].copy()
        else:
            base = pd.DataFrame(columns=["concept_id", "input_id", "verbalized"])
        res = run_staged(sub, members, base, concept_ids, k0, params, max_stages)
        stages = res.stages.assign(model=model, task=task)
        concepts = pd.DataFrame({"concept_id": concept_ids, "title": concept_ids})
        stages_all.append(stages)
        flagged_all.append(flagged_table(stages, concepts, res.baseline, model, task))
        funnel_all.append(
            funnel_table({"concepts in the outcome table": len(concept_ids)}, res.baseline, stages, model, task)
        )
        costs_all.append(res.costs.assign(model=model, task=task))
    if not stages_all:
        empty = pd.DataFrame()
        return empty, pd.DataFrame(columns=FLAGGED_COLUMNS), empty, empty
    return (
        pd.concat(stages_all, ignore_index=True),
        pd.concat(flagged_all, ignore_index=True),
        pd.concat(funnel_all, ignore_index=True),
        pd.concat(costs_all, ignore_index=True),
    )
