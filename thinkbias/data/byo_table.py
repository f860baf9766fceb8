"""Reading and validating a bring-your-own table against its declared schema (pandera).

Every study that analyses outputs made elsewhere reads them here: CSV (optionally ``.gz``), Parquet
or JSON Lines, by extension. CSV cells are read as text (a blank cell is missing), so the schema, not
pandas' type guessing, decides what a value means. Any problem stops with one :class:`TableError`
whose message names the file, each failing column or key, how many rows fail and the first
offending values with their row numbers (data rows counted from 1, the header not counted).

The schemas themselves live beside each study's reader; this module holds what they share: the
reader, column and key-check builders, and the translation of pandera's failure cases.
"""

from __future__ import annotations

import gzip
import io
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd
import pandera.pandas as pa
from pandera.errors import SchemaError, SchemaErrorReason, SchemaErrors

SHOWN_VALUES = 5
OTHER_DELIMITERS = {"\t": "tab", ";": "semicolon"}


class TableError(ValueError):
    """A user table that cannot be analysed; the message says where and why."""


def _format(path: Path) -> str:
    names = path.name.lower().removesuffix(".gz")
    if names.endswith((".parquet", ".pq")):
        return "parquet"
    if names.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    return "csv"


def _decoded_text(path: Path, what: str) -> str:
    raw = path.read_bytes()
    if path.suffix.lower() == ".gz":
        raw = gzip.decompress(raw)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        column = err.start - (raw.rfind(b"\n", 0, err.start) + 1) + 1
        raise TableError(
            f"{what} {path}, line {line}, column {column}: not UTF-8 (byte 0x{raw[err.start]:02x} at "
            f"offset {err.start}); save the file as UTF-8"
        ) from None


def read_user_table(path: str | Path, what: str) -> pd.DataFrame:
    """The table at ``path`` (CSV, CSV.gz, Parquet or JSON Lines by extension), as read.

    CSV cells are text (blank = missing). Raises :class:`TableError` naming the file for an empty
    file, a header without rows, text that is not UTF-8 (with its line) or a malformed file.
    ``what`` names the table in messages, e.g. ``"predictions table"``.
    """
    path = Path(path)
    fmt = _format(path)
    try:
        if fmt == "parquet":
            table = pd.read_parquet(path)
        else:
            text = _decoded_text(path, what)
            if not text.strip():
                raise TableError(f"{what} {path}: the file is empty (no header, no rows)")
            if fmt == "jsonl":
                table = pd.read_json(io.StringIO(text), lines=True, dtype=False)
            else:
                table = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, na_values=[""])
    except TableError:
        raise
    except (OSError, ValueError, pd.errors.ParserError) as err:
        raise TableError(f"{what} {path}: cannot be read as {fmt}: {err}") from None
    if table.empty:
        raise TableError(f"{what} {path}: a header but no data rows")
    if fmt == "csv":
        _check_delimiter(table, path, what)
    return table


def _check_delimiter(table: pd.DataFrame, path: Path, what: str) -> None:
    """Refuse a CSV read as one column whose header is split by another delimiter (a tab-separated
    or semicolon-separated file), which would otherwise surface as every column missing."""
    if len(table.columns) != 1:
        return
    header = str(table.columns[0])
    counts = {d: header.count(d) for d in OTHER_DELIMITERS}
    found = max(counts, key=lambda d: counts[d])
    if counts[found]:
        name = OTHER_DELIMITERS[found]
        raise TableError(
            f"{what} {path}: read as one column {header!r}, whose header holds {counts[found]} {name} "
            f"character(s): the file looks {name}-separated, and a CSV table is comma-separated; save it "
            "with commas (or as Parquet or JSON Lines)"
        )


# ------------------------------------------------------------------ schema building blocks


def _not_blank(series: pd.Series) -> pd.Series:
    return series.astype(str).str.strip() != ""


def text_column(required: bool = True, nullable: bool = False, checks: Sequence[pa.Check] = ()) -> pa.Column:
    """A text column; when not nullable, blank or whitespace-only cells fail too."""
    all_checks = list(checks) if nullable else [pa.Check(_not_blank, error="blank"), *checks]
    return pa.Column(str, checks=all_checks, coerce=True, nullable=nullable, required=required)


def _unique_rows(df: pd.DataFrame, key: Sequence[str]) -> pd.Series:
    if any(c not in df.columns for c in key):
        return pd.Series(True, index=df.index)
    return ~df.duplicated(list(key), keep=False)


def unique_key(key: Sequence[str]) -> pa.Check:
    """A table check: no two rows share ``key`` (the message names the key and the first duplicates)."""
    return pa.Check(_unique_rows, error=f"duplicate key ({', '.join(key)})", key=tuple(key))


def key_check(fn: Callable[..., pd.Series], key: Sequence[str], error: str, **stats: object) -> pa.Check:
    """A table check ``fn(df, key=..., **stats) -> bool per row``; failing rows are reported by ``key``."""
    return pa.Check(fn, error=error, key=tuple(key), **stats)


# ------------------------------------------------------------------ failure cases -> one message


def _quote(value: object) -> str:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return "(empty)"
    return repr(value) if isinstance(value, str) else str(value)


def _row_list(index: Sequence[int]) -> str:
    rows = [str(int(i) + 1) for i in list(index)[:SHOWN_VALUES]]
    more = ", ..." if len(index) > SHOWN_VALUES else ""
    return ("row " if len(index) == 1 else "rows ") + ", ".join(rows) + more


def _check_phrase(err: SchemaError) -> str:
    check = err.check
    if err.reason_code == SchemaErrorReason.SERIES_CONTAINS_NULLS:
        return "empty"
    if err.reason_code == SchemaErrorReason.DATATYPE_COERCION:
        dtype = str(getattr(err.schema, "dtype", ""))
        return "not an integer" if "int" in dtype else "not a number" if "float" in dtype else f"not {dtype}"
    if err.reason_code == SchemaErrorReason.SERIES_CONTAINS_DUPLICATES:
        return "repeated"
    if isinstance(check, pa.Check):
        stats = check.statistics or {}
        if "allowed_values" in stats:
            return "not one of " + ", ".join(map(str, stats["allowed_values"]))
        if "min_value" in stats and "max_value" in stats:
            return f"outside [{stats['min_value']}, {stats['max_value']}]"
        return str(check.error or check.name)
    return str(check)


def _column_problem(err: SchemaError, n_rows: int) -> str:
    cases = err.failure_cases
    if not isinstance(cases, pd.DataFrame) or "index" not in cases:
        return f"column '{err.schema.name}': {_check_phrase(err)}"
    cases = cases.dropna(subset=["index"])
    n_fail = cases["index"].nunique()
    shown, seen = [], set()
    for value, idx in zip(cases["failure_case"], cases["index"]):
        label = _quote(value)
        if label in seen:
            continue
        seen.add(label)
        rows = cases.loc[cases["failure_case"].map(_quote) == label, "index"].drop_duplicates().sort_values()
        shown.append(f"{label} ({_row_list(rows.tolist())})")
        if len(shown) == SHOWN_VALUES:
            break
    return f"column '{err.schema.name}': {n_fail} of {n_rows} rows {_check_phrase(err)}; first: {', '.join(shown)}"


def _key_problem(err: SchemaError, data: pd.DataFrame, key: Sequence[str], phrase: str) -> str:
    cases = err.failure_cases
    index = sorted(set(cases["index"].dropna().astype(int))) if isinstance(cases, pd.DataFrame) else []
    key = [c for c in key if c in data.columns]
    groups: dict[tuple, list[int]] = {}
    for i in index:
        groups.setdefault(tuple(_quote(v) for v in data.loc[i, key]), []).append(i)
    shown = [f"({', '.join(k)}) {_row_list(rows)}" for k, rows in list(groups.items())[:SHOWN_VALUES]]
    return f"{phrase}: {len(index)} of {len(data)} rows; first: {'; '.join(shown)}"


def _coercion_failures(errors: SchemaErrors) -> dict[str, list[int]]:
    """Column -> rows whose values do not convert to the column's type."""
    out: dict[str, list[int]] = {}
    for err in errors.schema_errors:
        if err.reason_code == SchemaErrorReason.DATATYPE_COERCION and isinstance(err.failure_cases, pd.DataFrame):
            out.setdefault(err.schema.name, []).extend(int(i) for i in err.failure_cases["index"].dropna())
    return out


def _problems(errors: SchemaErrors, data: pd.DataFrame, schema: pa.DataFrameSchema) -> list[str]:
    missing = [
        str(e.failure_cases)
        if not isinstance(e.failure_cases, pd.DataFrame)
        else str(e.failure_cases["failure_case"].iloc[0])
        for e in errors.schema_errors
        if e.reason_code == SchemaErrorReason.COLUMN_NOT_IN_DATAFRAME
    ]
    required = [name for name, col in schema.columns.items() if col.required and not col.regex]
    problems = (
        [f"missing column(s) {', '.join(repr(m) for m in missing)} (required: {', '.join(required)})"]
        if missing
        else []
    )
    coerced = _coercion_failures(errors)
    for err in errors.schema_errors:
        code = err.reason_code
        if code == SchemaErrorReason.COLUMN_NOT_IN_DATAFRAME:
            continue
        if isinstance(err.schema, pa.Column):
            # a column whose values do not convert: its other checks run again below without them
            if err.schema.name in coerced and code != SchemaErrorReason.DATATYPE_COERCION:
                continue
            problems.append(_column_problem(err, len(data)))
        elif code == SchemaErrorReason.DUPLICATES:
            key = list(err.schema.unique or [])
            problems.append(_key_problem(err, data, key, f"duplicate key ({', '.join(key)})"))
        elif isinstance(err.check, pa.Check) and code == SchemaErrorReason.DATAFRAME_CHECK:
            key = list((err.check.statistics or {}).get("key", data.columns))
            problems.append(_key_problem(err, data, key, str(err.check.error or err.check.name)))
        elif missing and code == SchemaErrorReason.CHECK_ERROR:
            continue  # a table check that needs a missing column: the missing column says it all
        else:
            problems.append(str(err))
    if coerced:
        problems += _checks_without_unconvertible(data, schema, coerced)
    return problems


def _checks_without_unconvertible(
    data: pd.DataFrame, schema: pa.DataFrameSchema, coerced: dict[str, list[int]]
) -> list[str]:
    """The other checks of the columns in ``coerced``, run with their unconvertible cells blanked."""
    cleaned = data.copy()
    for column, rows in coerced.items():
        cleaned[column] = cleaned[column].astype(object)
        cleaned.loc[rows, column] = None
    try:
        schema.validate(cleaned, lazy=True)
    except SchemaErrors as again:
        return [
            _column_problem(err, len(data))
            for err in again.schema_errors
            if isinstance(err.schema, pa.Column)
            and err.schema.name in coerced
            and err.reason_code != SchemaErrorReason.SERIES_CONTAINS_NULLS
        ]
    return []


def validate_table(table: pd.DataFrame, schema: pa.DataFrameSchema, source: str) -> pd.DataFrame:
    """``table`` checked against ``schema`` (lazily: every problem at once) and coerced to its types.

    ``source`` names the table in the message (e.g. ``"predictions table data/p.csv"``). Raises
    :class:`TableError` listing, per failing column or key, how many rows fail and the first values.
    """
    if table.empty:
        raise TableError(f"{source}: no rows")
    data = table.reset_index(drop=True)
    try:
        return schema.validate(data, lazy=True)
    except SchemaErrors as errors:
        problems = _problems(errors, data, schema)
        raise TableError(f"{source}: {len(problems)} problem(s)\n  - " + "\n  - ".join(problems)) from None
