"""Reading a predictions table and writing a result table (CSV + Markdown); used by the scripts."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from thinkbias.data.byo_table import read_user_table
from thinkbias.fairness.schema import validate_predictions
from thinkbias.markdown import markdown_table


def read_predictions(path: str | Path) -> pd.DataFrame:
    """A predictions table from CSV, Parquet or JSON Lines (by extension), checked against the
    documented schema; raises ``TableError`` naming the file, column or key, rows and values."""
    what = "predictions table"
    return validate_predictions(read_user_table(path, what), source=f"{what} {path}")


def write_table(table: pd.DataFrame, csv_path: str | Path, md_path: str | Path, title: str, digits: int = 3) -> None:
    """Write ``table`` as CSV and as a Markdown table with a title."""
    table.to_csv(csv_path, index=False)
    Path(md_path).write_text(markdown_table(table, digits, missing="—", title=title))
