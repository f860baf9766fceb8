"""Bring-your-own generations: outputs produced outside the workflow, analysed like ours.

Documented schema (docs/position.md; one row per question x permutation x model x mode; CSV,
Parquet or JSON Lines), declared by :func:`byo_schema` for an ordering design (``cyclic``: 4
permutations per question, ``all``: 24; see ``items.option_orderings``):

| column | required | meaning |
|---|---|---|
| question_id | yes | any stable id of the question, never blank (same id across its permutations) |
| permutation | yes | 0-3 (cyclic: permutation s shows the original option j at position (j + s) mod 4) or 0-23 (all) |
| model | yes | model name (free text, never blank; may contain "/") |
| mode | yes | direct, cot or reasoning (any case) |
| full_text | yes | the whole trajectory (thinking trace followed by the response); may be empty |
| correct_position | no | the correct option's position as shown in this permutation: A-D or 0-3 |
| benchmark | no | benchmark name (default "byo") |
| response | no | the post-thinking response alone (used by the letter-frequency fallback) |

Every question of a configuration (benchmark, model, mode) has each permutation of the design
exactly once; where given, ``correct_position`` follows the design (the same original option is the
correct one in every permutation); a configuration whose every ``full_text`` is empty is an error.
An empty ``full_text`` elsewhere is kept and counted as unparsed, without a length (records.py).
Without ``correct_position`` accuracy is unknown and Table 1 reports plain (not partial)
correlations, flagged in its ``controls_accuracy`` column.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import pandas as pd
import pandera.pandas as pa

from thinkbias.data.byo_table import key_check, read_user_table, text_column, unique_key, validate_table
from thinkbias.position.items import option_orderings
from thinkbias.position.prompts import MODES
from thinkbias.position.questions import CONFIG_KEYS
from thinkbias.position.think_tags import split_think_tags

REQUIRED = ("question_id", "permutation", "model", "mode", "full_text")
QUESTION_KEY = (*CONFIG_KEYS, "question_id")
WHAT = "bring-your-own generations"


def _position_letter(value: pd.Series) -> pd.Series:
    return pd.Series([_letter(v) is not None for v in value], index=value.index)


def _every_permutation_once(df: pd.DataFrame, key: tuple[str, ...], n: int) -> pd.Series:
    perms = pd.to_numeric(df["permutation"], errors="coerce")
    grouped = perms.groupby([df[c] for c in key], dropna=False)
    complete = (
        grouped.transform("size").eq(n)
        & grouped.transform("nunique").eq(n)
        & grouped.transform("min").eq(0)
        & grouped.transform("max").eq(n - 1)
    )
    return complete.fillna(False).astype(bool)


def _correct_option(df: pd.DataFrame, orderings: Sequence[Sequence[int]]) -> pd.Series:
    """The original option at the row's correct position (NaN where unknown or out of range)."""
    out = []
    for perm, pos in zip(pd.to_numeric(df["permutation"], errors="coerce"), df["correct_position"]):
        letter = _letter(pos)
        ok = letter is not None and pd.notna(perm) and float(perm).is_integer() and 0 <= perm < len(orderings)
        out.append(orderings[int(perm)]["ABCD".index(letter)] if ok else float("nan"))
    return pd.Series(out, index=df.index, dtype=float)


def _follows_design(df: pd.DataFrame, key: tuple[str, ...], orderings: Sequence[Sequence[int]]) -> pd.Series:
    if "correct_position" not in df.columns:
        return pd.Series(True, index=df.index)
    original = _correct_option(df, orderings)
    return original.groupby([df[c] for c in key], dropna=False).transform("nunique").le(1)


def _some_text(df: pd.DataFrame, key: tuple[str, ...]) -> pd.Series:
    has_text = df["full_text"].fillna("").astype(str).str.strip().ne("")
    return has_text.groupby([df[c] for c in key], dropna=False).transform("any").astype(bool)


def byo_schema(design: str = "cyclic") -> pa.DataFrameSchema:
    """The documented schema for the orderings of ``design`` (``cyclic`` or ``all``)."""
    orderings = option_orderings(design)
    n = len(orderings)
    return pa.DataFrameSchema(
        {
            "question_id": text_column(),
            "benchmark": text_column(),
            "permutation": pa.Column(int, pa.Check.isin(list(range(n))), coerce=True),
            "model": text_column(),
            "mode": text_column(checks=[pa.Check.isin(list(MODES))]),
            "full_text": pa.Column(str, coerce=True, nullable=True),
            "correct_position": pa.Column(
                str,
                pa.Check(_position_letter, error="not a position A-D or 0-3"),
                coerce=True,
                nullable=True,
                required=False,
            ),
            "response": pa.Column(str, coerce=True, nullable=True, required=False),
        },
        checks=[
            unique_key((*QUESTION_KEY, "permutation")),
            key_check(
                _every_permutation_once,
                QUESTION_KEY,
                f"questions without each of the {n} permutations 0-{n - 1} ({design} orderings) exactly once",
                n=n,
            ),
            key_check(
                _follows_design,
                QUESTION_KEY,
                f"correct_position does not follow the {design} orderings (the correct original option "
                "differs between permutations of a question)",
                orderings=[list(o) for o in orderings],
            ),
            key_check(_some_text, CONFIG_KEYS, "configurations whose every full_text is empty"),
        ],
        name="byo_generations",
    )


def read_byo_generations(path: str | Path, design: str = "cyclic") -> pd.DataFrame:
    """The table at ``path`` checked against the documented schema and in the generations-table
    layout (see :func:`normalise_byo`); raises ``TableError`` naming the file, column or key."""
    return normalise_byo(read_user_table(path, WHAT), design, source=f"{WHAT} {path}")


def normalise_byo(df: pd.DataFrame, design: str = "cyclic", source: str = WHAT) -> pd.DataFrame:
    """Validate a bring-your-own table against :func:`byo_schema` and return it in the
    generations-table layout (question_id, benchmark, permutation, model, mode, full_text, answer,
    correct_position, question_order). Raises ``TableError`` naming every problem found."""
    table = df if "benchmark" in df.columns else df.assign(benchmark="byo")
    if "mode" in table.columns:  # modes in any case: "CoT" and "cot" are one configuration in every check
        table = table.assign(mode=table["mode"].map(lambda m: m.strip().lower() if isinstance(m, str) else m))
    valid = validate_table(table, byo_schema(design), source)
    out = pd.DataFrame(
        {
            "question_id": valid["question_id"],
            "benchmark": valid["benchmark"],
            "permutation": valid["permutation"].astype(int),
            "model": valid["model"],
            "mode": valid["mode"],
            "full_text": valid["full_text"].fillna("").astype(str),
            "answer": valid["response"].astype(object).where(valid["response"].notna(), None)
            if "response" in valid
            else None,
        }
    )
    out["correct_position"] = (
        pd.Series([_letter(v) for v in valid["correct_position"]], index=valid.index, dtype=object)
        if "correct_position" in valid
        else None
    )
    first_seen = {q: i for i, q in enumerate(out["question_id"].drop_duplicates())}
    out["question_order"] = out["question_id"].map(first_seen).astype(int)
    return split_think_tags(out.reset_index(drop=True))  # <think> tags: thinking / response (A.4)


def _letter(v) -> str | None:
    """A-D (any case) or 0-3 (also 0.0-3.0, as a numeric column with gaps stores them) -> letter."""
    if v is None or (isinstance(v, float) and pd.isna(v)):
        return None
    s = str(v).strip().upper()
    if s in ("A", "B", "C", "D"):
        return s
    if s in ("0", "1", "2", "3", "0.0", "1.0", "2.0", "3.0"):
        return "ABCD"[int(float(s))]
    return None
