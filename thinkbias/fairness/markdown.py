"""Markdown rendering of result tables (no extra dependency)."""

from __future__ import annotations

import math

import pandas as pd


def format_value(value: object, digits: int = 3) -> str:
    """Numbers to fixed digits (tiny p-values in scientific notation), NaN as an em dash."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "—"
        if math.isinf(value):
            return "∞" if value > 0 else "-∞"
        if value.is_integer() and abs(value) < 1e15 and digits == 0:
            return str(int(value))
        if value != 0 and abs(value) < 10 ** (-digits):
            return f"{value:.2e}"
        return f"{value:.{digits}f}"
    try:
        if pd.isna(value):
            return "—"
    except (TypeError, ValueError):
        pass
    return str(value).replace("|", "\\|")


def to_markdown(df: pd.DataFrame, digits: int = 3, title: str | None = None) -> str:
    """A GitHub-flavoured Markdown table of ``df`` (integers shown exactly)."""
    lines = []
    if title:
        lines += [f"**{title}**", ""]
    cols = [str(c) for c in df.columns]
    lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cols) + " |")
    lines.append("|" + "|".join("---" for _ in cols) + "|")
    for rec in df.itertuples(index=False):
        cells = []
        for v in rec:
            if hasattr(v, "item") and not isinstance(v, str):
                v = v.item()
            cells.append(format_value(v, digits))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
