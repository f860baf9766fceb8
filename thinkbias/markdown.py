"""Markdown rendering of tables, shared by every study's reports and the run-level products.

Numbers are shown either with fixed decimals (``digits`` after the point; values too small to show
that way in scientific notation with three significant digits) or, with ``significant=True``, with
``digits`` significant digits (integer-valued floats, such as counts pandas turned into floats
beside a missing value, in full). Missing values show as ``missing``, booleans as yes/no.

A p-value column with a log10 companion (``p_value`` beside ``log10_p_value``, ``mcnemar_p`` beside
``mcnemar_log10_p``: the companion's name is the column's with ``log10_`` inserted) shows p from its
log10 wherever p is below what a double holds exactly (e.g. ``2.48e-486``), never as 0.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from thinkbias.stats.tails import TRUSTED_P_FLOOR


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
    if value != 0 and abs(value) < 10**-digits:
        return f"{value:.2e}"
    return f"{value:.{digits}f}"


def format_p_from_log10(log10_p: float, digits: int = 3, *, significant: bool = False) -> str:
    """A p-value given by its log10, in scientific notation (``-485.605`` -> ``2.48e-486``): three
    significant digits, or ``digits`` with ``significant=True``."""
    exponent = math.floor(log10_p)
    mantissa = 10.0 ** (log10_p - exponent)
    text = f"{mantissa:.{digits}g}" if significant else f"{mantissa:.2f}"
    if float(text) >= 10.0:  # the mantissa rounded up to 10
        exponent += 1
        text = f"{mantissa / 10:.{digits}g}" if significant else f"{mantissa / 10:.2f}"
    return f"{text}e{exponent:+03d}"


def _log10_companions(columns: list[str]) -> dict[int, int]:
    """Column position of each p-value column -> position of its log10 companion."""
    position = {str(c): i for i, c in enumerate(columns)}
    return {
        position[str(c).replace("log10_", "", 1)]: i
        for i, c in enumerate(columns)
        if "log10_" in str(c) and str(c).replace("log10_", "", 1) in position
    }


def format_p_value(p: object, log10_p: object, digits: int = 3, *, significant: bool = False, missing: str = "") -> str:
    """A p-value as :func:`format_cell` shows it, or from its log10 (:func:`format_p_from_log10`)
    where p is below what a double holds exactly and the log10 is finite."""
    if isinstance(p, np.generic):
        p = p.item()
    if isinstance(log10_p, np.generic):
        log10_p = log10_p.item()
    if (
        isinstance(p, float)
        and not _is_missing(p)
        and p < TRUSTED_P_FLOOR
        and isinstance(log10_p, float)
        and math.isfinite(log10_p)
    ):
        return format_p_from_log10(log10_p, digits, significant=significant)
    return format_cell(p, digits, significant=significant, missing=missing)


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


def markdown_table(
    df: pd.DataFrame, digits: int = 3, *, significant: bool = False, missing: str = "", title: str | None = None
) -> str:
    """A GitHub-flavoured Markdown table of ``df`` (index dropped), ending in a newline; cells as
    :func:`format_cell` (p-values with a log10 companion as the module docstring says). ``title`` adds
    a bold line above the table. A frame without rows renders as "_(no rows)_" so an empty result
    cannot pass for a broken table."""
    lines = [f"**{title}**", ""] if title else []
    if df.empty:
        return "\n".join([*lines, "_(no rows)_"]) + "\n"
    lines.append("| " + " | ".join(format_cell(str(c)) for c in df.columns) + " |")
    lines.append("|" + "|".join("---" for _ in df.columns) + "|")
    companions = _log10_companions(list(df.columns))
    lines += [
        "| "
        + " | ".join(
            format_p_value(v, row[companions[i]], digits, significant=significant, missing=missing)
            if i in companions
            else format_cell(v, digits, significant=significant, missing=missing)
            for i, v in enumerate(row)
        )
        + " |"
        for row in df.itertuples(index=False)
    ]
    return "\n".join(lines) + "\n"
