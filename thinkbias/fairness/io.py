"""Reading a predictions table and writing a result table (CSV + Markdown); used by the scripts."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from thinkbias.report.markdown import markdown_table


def read_predictions(path: str | Path) -> pd.DataFrame:
    """A predictions table from CSV or Parquet (by extension); ids and answers read as text."""
    path = Path(path)
    if path.suffix in (".parquet", ".pq"):
        return pd.read_parquet(path)
    text_cols = {c: str for c in ("dataset", "model", "pair_id", "side", "arm", "attribute", "status")}
    return pd.read_csv(path, dtype=text_cols, keep_default_na=False, na_values={"answer": [""], "p_yes": [""]})


def write_table(table: pd.DataFrame, csv_path: str | Path, md_path: str | Path, title: str, digits: int = 3) -> None:
    """Write ``table`` as CSV and as a Markdown table with a title."""
    table.to_csv(csv_path, index=False)
    Path(md_path).write_text(markdown_table(table, digits, missing="—", title=title))
