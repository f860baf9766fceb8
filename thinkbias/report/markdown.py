"""Markdown rendering of tables, shared by every study's reports.

Numbers are shown either with fixed decimals (``digits`` after the point; values too small to show
that way in scientific notation with three significant digits) or, with ``significant=True``, with
``digits`` significant digits (integer-valued floats, such as counts pandas turned into floats
beside a missing value, in full). Missing values show as ``missing``, booleans as yes/no.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd


def _is_missing(value: object) -> bool:
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float) and math.isnan(value)


def _format_number(value: float, digits: int, significant: bool) -> str:
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    if significant:
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.{digits}g}"
    if value != 0 and abs(value) < 10 ** -digits:
        return f"{value:.2e}"
    return f"{value:.{digits}f}"


def format_cell(value: object, digits: int = 3, *, significant: bool = False, missing: str = "") -> str:
    """One table cell: numbers as described in the module docstring, ``missing`` for None/NaN/NA,
    booleans as yes/no, and text with pipes escaped and newlines flattened so it cannot break the row."""
    if isinstance(value, np.generic):
        value = value.item()
    if _is_missing(value):
        return missing
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return _format_number(value, digits, significant)
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(df: pd.DataFrame, digits: int = 3, *, significant: bool = False, missing: str = "",
                   title: str | None = None) -> str:
    """A GitHub-flavoured Markdown table of ``df`` (index dropped), ending in a newline; cells as
    :func:`format_cell`. ``title`` adds a bold line above the table. A frame without rows renders as
    "_(no rows)_" so an empty result cannot pass for a broken table."""
    lines = [f"**{title}**", ""] if title else []
    if df.empty:
        return "\n".join([*lines, "_(no rows)_"]) + "\n"
    lines.append("| " + " | ".join(format_cell(str(c)) for c in df.columns) + " |")
    lines.append("|" + "|".join("---" for _ in df.columns) + "|")
    lines += ["| " + " | ".join(format_cell(v, digits, significant=significant, missing=missing) for v in row) + " |"
              for row in df.itertuples(index=False)]
    return "\n".join(lines) + "\n"
