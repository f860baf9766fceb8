"""Bring-your-own generations: outputs produced outside the workflow, analysed like ours.

Documented schema (one row per question x permutation x model x mode; CSV, Parquet or JSON Lines):

| column | required | meaning |
|---|---|---|
| question_id | yes | any stable id of the question (same id across its four permutations) |
| permutation | yes | 0-3: permutation s shows the original option j at position (j + s) mod 4 |
| model | yes | model name (free text) |
| mode | yes | direct, cot or reasoning |
| full_text | yes | the whole trajectory (thinking trace followed by the response) |
| correct_position | no | the correct option's position as shown in this permutation: A-D or 0-3 |
| benchmark | no | benchmark name (default "byo") |
| response | no | the post-thinking response alone (used by the letter-frequency fallback) |

Without ``correct_position`` accuracy is unknown and Table 1 reports plain (not partial)
correlations, flagged in its ``controls_accuracy`` column.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from thinkbias.position.prompts import MODES
from thinkbias.position.think_tags import split_think_tags

REQUIRED = ("question_id", "permutation", "model", "mode", "full_text")


def read_table(path: str | Path) -> pd.DataFrame:
    """Read CSV, Parquet or JSON Lines by extension."""
    path = Path(path)
    suffix = "".join(path.suffixes[-2:]) if path.suffix == ".gz" else path.suffix
    if suffix.startswith(".parquet"):
        return pd.read_parquet(path)
    if suffix.startswith(".jsonl") or suffix.startswith(".json"):
        return pd.read_json(path, lines=True)
    return pd.read_csv(path, keep_default_na=False, na_values=[""])


def normalise_byo(df: pd.DataFrame) -> pd.DataFrame:
    """Validate a bring-your-own table and return it in the generations-table layout
    (question_id, benchmark, permutation, model, mode, correct_position, answer, full_text,
    question_order). Raises ValueError naming every problem found."""
    problems = [f"missing column '{c}'" for c in REQUIRED if c not in df.columns]
    if problems:
        raise ValueError("bring-your-own generations: " + "; ".join(problems))
    out = pd.DataFrame({
        "question_id": df["question_id"].astype(str),
        "benchmark": df["benchmark"].astype(str) if "benchmark" in df else "byo",
        "permutation": pd.to_numeric(df["permutation"], errors="coerce"),
        "model": df["model"].astype(str),
        "mode": df["mode"].astype(str).str.lower(),
        "full_text": df["full_text"].fillna("").astype(str),
        "answer": df["response"].where(df["response"].notna(), None).astype(object) if "response" in df else None,
    })
    bad_perm = ~out["permutation"].isin([0, 1, 2, 3])
    if bad_perm.any():
        problems.append(f"{int(bad_perm.sum())} rows with permutation outside 0-3")
    bad_mode = ~out["mode"].isin(MODES)
    if bad_mode.any():
        problems.append(f"unknown modes {sorted(out.loc[bad_mode, 'mode'].unique())} (expected {list(MODES)})")
    if "correct_position" in df:
        letters = [_letter(v) for v in df["correct_position"]]
        out["correct_position"] = pd.Series(letters, index=df.index, dtype=object)
        bad = df["correct_position"].notna() & pd.Series([v is None for v in letters], index=df.index)
        if bad.any():
            problems.append(f"{int(bad.sum())} rows with correct_position not in A-D / 0-3")
    else:
        out["correct_position"] = None
    dup = out.duplicated(["benchmark", "model", "mode", "question_id", "permutation"])
    if dup.any():
        problems.append(f"{int(dup.sum())} duplicate (benchmark, model, mode, question_id, permutation) rows")
    if problems:
        raise ValueError("bring-your-own generations: " + "; ".join(problems))
    out["permutation"] = out["permutation"].astype(int)
    first_seen = {q: i for i, q in enumerate(out["question_id"].drop_duplicates())}
    out["question_order"] = out["question_id"].map(first_seen).astype(int)
    return split_think_tags(out.reset_index(drop=True))  # <think> tags: thinking / response (A.4)


def _letter(v) -> str | None:
    if v is None or (isinstance(v, float) and pd.isna(v)):
        return None
    s = str(v).strip().upper()
    if s in ("A", "B", "C", "D"):
        return s
    if s in ("0", "1", "2", "3"):
        return "ABCD"[int(s)]
    return None
