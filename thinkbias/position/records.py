"""Per-record extraction: final answer and status, trajectory, CCP and switching (Appendix A.2-A.3).

Input: a generations table with at least question_id, permutation, model, mode, full_text (and
optionally benchmark, correct_position, answer = post-thinking response). Output: the same rows
plus the columns of ``RECORD_COLUMNS``. Unparseable records stay in the table with
``extraction_status == "none"``; they are excluded from bias metrics and counted in every summary.
A record with an empty (or whitespace-only) ``full_text`` has nothing to read: it is unparsed
whatever its response says, has no length (NaN, so it is left out of mean lengths) and is marked
``empty_text``.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from thinkbias.position.extract import Extraction, extract_final_answer
from thinkbias.position.fallback_cues import FallbackCues
from thinkbias.position.trajectory import (
    commitment_change_point,
    count_switches,
    effective_switching,
    extract_trajectory,
)

RECORD_COLUMNS = (
    "final_answer",
    "extraction_status",
    "extracted",
    "is_correct",
    "length_chars",
    "n_mentions",
    "trajectory",
    "ccp",
    "n_switches",
    "eff_sw_per_mention",
    "eff_sw_per_kchar",
    "empty_text",
)


def record_row(
    full_text: str,
    response: str | None,
    correct: str | None,
    fallback: bool = True,
    ccp_definition: str = "a3",
    cues: FallbackCues | None = None,
) -> dict:
    """Extraction results for one record (``ccp_definition``: see ``commitment_change_point``;
    ``cues``: the fallback's cue words, default the project's)."""
    text = full_text if isinstance(full_text, str) else ""
    empty = not text.strip()
    found = (
        Extraction(None, "none")
        if empty
        else extract_final_answer(text, response if isinstance(response, str) else None, fallback, cues)
    )
    mentions = extract_trajectory(text)
    letters = [m.letter for m in mentions]
    positions = [m.norm_pos for m in mentions]
    per_mention, per_kchar = effective_switching(letters, len(text))
    correct_ok = isinstance(correct, str) and correct in "ABCD" and len(correct) == 1
    return {
        "final_answer": found.letter,
        "extraction_status": found.status,
        "extracted": found.letter is not None,
        "is_correct": (found.letter == correct) if (found.letter is not None and correct_ok) else np.nan,
        "length_chars": np.nan if empty else len(text),
        "n_mentions": len(mentions),
        "trajectory": json.dumps([[m.letter, m.char_pos, round(m.norm_pos, 6)] for m in mentions]),
        "ccp": commitment_change_point(letters, positions, found.letter, ccp_definition),
        "n_switches": count_switches(letters),
        "eff_sw_per_mention": per_mention,
        "eff_sw_per_kchar": per_kchar,
        "empty_text": empty,
    }


def extract_records(
    generations: pd.DataFrame, fallback: bool = True, ccp_definition: str = "a3", cues: FallbackCues | None = None
) -> pd.DataFrame:
    """Add the extraction columns to every row of a generations table (``cues``: the fallback's
    cue words, default resources/position/fallback_cues.yaml)."""
    responses = generations["answer"] if "answer" in generations else pd.Series([None] * len(generations))
    correct = (
        generations["correct_position"] if "correct_position" in generations else pd.Series([None] * len(generations))
    )
    rows = [
        record_row(text, resp, corr, fallback, ccp_definition, cues)
        for text, resp, corr in zip(generations["full_text"], responses, correct)
    ]
    extra = pd.DataFrame(rows, columns=list(RECORD_COLUMNS), index=generations.index)
    out = pd.concat([generations, extra], axis=1)
    out["final_answer"] = out["final_answer"].astype(object)
    out["is_correct"] = out["is_correct"].astype(float)
    return out


def records_ccp(records: pd.DataFrame, definition: str) -> pd.Series:
    """CCP of every record under ``definition`` from its stored trajectory and final answer (to
    compare the two readings on one run without extracting again)."""
    values = []
    for trajectory, final in zip(records["trajectory"], records["final_answer"]):
        mentions = json.loads(trajectory) if isinstance(trajectory, str) else []
        letter = final if isinstance(final, str) else None
        values.append(commitment_change_point([m[0] for m in mentions], [m[2] for m in mentions], letter, definition))
    return pd.Series(values, index=records.index, dtype=float)
