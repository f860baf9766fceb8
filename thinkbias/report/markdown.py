"""Markdown rendering of tables, shared by every study's reports."""

from __future__ import annotations

import math

import pandas as pd


def format_cell(value: object, digits: int = 3) -> str:
    """A table cell: floats to ``digits`` significant-looking decimals, NA as an empty cell, and
    pipes escaped so they cannot break the row."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        if value != 0 and (abs(value) < 10 ** -digits or abs(value) >= 1e6):
            return f"{value:.{digits}g}"
        return f"{value:.{digits}f}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(df: pd.DataFrame, digits: int = 3) -> str:
    """A GitHub-flavoured Markdown table of ``df`` (index dropped)."""
    header = "| " + " | ".join(str(c) for c in df.columns) + " |"
    rule = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(format_cell(v, digits) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([header, rule, *body])
