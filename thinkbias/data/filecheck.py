"""Check that a downloaded file opens as its format expects, before its first sha256 is recorded.

A manifest entry without a pinned sha256 has nothing to compare a download with, so a file that
arrived cut short or corrupt would otherwise be accepted and its hash recorded. :func:`check_opens`
reads the file the way its reader will (chosen by the destination's suffix) and raises
:class:`FileCheckError` naming the file and what is wrong:

=========== ===================================================================================
suffix      check
=========== ===================================================================================
.csv .tsv   UTF-8 text; every record (quoted fields may span lines) has the header's field count
.jsonl      every non-blank line is a JSON value
.json       one JSON document
.parquet    the whole table reads (pyarrow)
.xls        the workbook opens and its first sheet reads (xlrd)
.zip .whl   every member reads with a matching CRC-32 (also .xlsx, a zip of XML parts)
.gz         the stream decompresses to its end with a matching CRC
.gguf       the file starts with the GGUF magic bytes
=========== ===================================================================================

``min_rows`` (the manifest's ``min_rows``) also bounds the row count from below: records after the
header for CSV/TSV, rows after the first (header) row of the xls sheet, lines of JSONL, rows of
parquet. ``min_bytes`` (the manifest's ``min_bytes``) bounds the file's size from below, for any
format. Other suffixes have no structural check (the function says so in its result).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import zipfile
import zlib
from pathlib import Path

CHUNK = 1 << 20


class FileCheckError(ValueError):
    """A file does not open as its format expects (truncated, corrupt or not that format)."""


def _csv_rows(path: Path, delimiter: str) -> int:
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter=delimiter, strict=True)
        try:
            header = next(reader, None)
            if header is None:
                raise FileCheckError("empty file, expected a header line")
            rows, ragged, first = 0, 0, None
            for record in reader:
                if not record:
                    continue
                rows += 1
                if len(record) != len(header):
                    ragged += 1
                    first = first or (reader.line_num, len(record))
        except csv.Error as exc:
            raise FileCheckError(f"not readable as CSV near line {reader.line_num} ({exc}); truncated?") from exc
    if ragged:
        raise FileCheckError(
            f"{ragged} of {rows} records do not have the header's {len(header)} fields "
            f"(first: line {first[0]}, {first[1]} fields); truncated or not this format?"
        )
    return rows


def _jsonl_rows(path: Path) -> int:
    rows = 0
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                json.loads(line)
            except json.JSONDecodeError as exc:
                raise FileCheckError(f"line {number} is not JSON ({exc}); truncated?") from exc
            rows += 1
    return rows


def _json_document(path: Path) -> None:
    try:
        with open(path, encoding="utf-8") as fh:
            json.load(fh)
    except json.JSONDecodeError as exc:
        raise FileCheckError(f"not a JSON document ({exc}); truncated?") from exc


def _parquet_rows(path: Path) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.read_table(path).num_rows
    except (pa.ArrowException, OSError) as exc:
        raise FileCheckError(f"not a readable parquet file ({exc})") from exc


def _xls_rows(path: Path) -> int:
    import xlrd

    notes = io.StringIO()  # xlrd writes its warnings ("File is truncated ...") here, not to stdout
    try:
        book = xlrd.open_workbook(path, on_demand=True, logfile=notes)
        try:
            sheet = book.sheet_by_index(0)
            return max(sheet.nrows - 1, 0)
        finally:
            book.release_resources()
    except Exception as exc:  # xlrd raises its own XLRDError, CompDocError, struct.error, ...
        said = "; ".join(
            ln.replace("WARNING *** ", "").strip() for ln in notes.getvalue().splitlines() if ln.startswith("WARNING")
        )
        raise FileCheckError(
            f"not a readable .xls workbook ({type(exc).__name__}: {exc})" + (f"; xlrd: {said}" if said else "")
        ) from exc


def _zip_members(path: Path) -> None:
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                with zf.open(info) as member:
                    while member.read(CHUNK):
                        pass
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as exc:
        raise FileCheckError(f"not a readable zip archive ({exc})") from exc


def _gzip_stream(path: Path) -> None:
    try:
        with gzip.open(path, "rb") as fh:
            while fh.read(CHUNK):
                pass
    except (OSError, EOFError, zlib.error) as exc:
        raise FileCheckError(f"not a complete gzip stream ({exc})") from exc


def _gguf_magic(path: Path) -> None:
    with open(path, "rb") as fh:
        magic = fh.read(4)
    if magic != b"GGUF":
        raise FileCheckError(f"does not start with the GGUF magic bytes (got {magic!r})")


ROW_READERS = {
    ".csv": lambda path: _csv_rows(path, ","),
    ".tsv": lambda path: _csv_rows(path, "\t"),
    ".jsonl": _jsonl_rows,
    ".parquet": _parquet_rows,
    ".xls": _xls_rows,
}
OPEN_CHECKS = {
    ".json": _json_document,
    ".zip": _zip_members,
    ".whl": _zip_members,
    ".xlsx": _zip_members,
    ".gz": _gzip_stream,
    ".gguf": _gguf_magic,
}


def check_opens(
    path: str | Path,
    suffix: str | None = None,
    min_rows: int | None = None,
    label: str | None = None,
    min_bytes: int | None = None,
) -> str:
    """Read ``path`` as the format its ``suffix`` (default: the path's own) names; return a short
    description of what was read ("csv, 198 rows"). Raises :class:`FileCheckError`, its message
    starting with ``label`` (default: the path), when the file does not open, has fewer than
    ``min_rows`` rows or ``min_bytes`` bytes, or ``min_rows`` is given for a format without rows."""
    path = Path(path)
    suffix = (suffix if suffix is not None else path.suffix).lower()
    try:
        size = path.stat().st_size
        if min_bytes is not None and size < min_bytes:
            raise FileCheckError(
                f"{size:,} bytes, expected at least {min_bytes:,} (min_bytes in the manifest); truncated?"
            )
        return _check(path, suffix, min_rows)
    except FileCheckError as exc:
        raise FileCheckError(f"{label or path}: {exc}") from exc.__cause__


def _check(path: Path, suffix: str, min_rows: int | None) -> str:
    if min_rows is not None and suffix not in ROW_READERS:
        raise FileCheckError(
            f"min_rows is set but '{suffix}' files have no row count (rows are counted for {', '.join(ROW_READERS)})"
        )
    try:
        if suffix in ROW_READERS:
            rows = ROW_READERS[suffix](path)
        elif suffix in OPEN_CHECKS:
            OPEN_CHECKS[suffix](path)
            return f"{suffix[1:]}, opens"
        else:
            return f"no format check for '{suffix}' files"
    except UnicodeDecodeError as exc:
        raise FileCheckError(f"not UTF-8 text (byte {exc.start}: {exc.reason})") from exc
    if min_rows is not None and rows < min_rows:
        raise FileCheckError(f"{rows:,} rows, expected at least {min_rows:,} (min_rows in the manifest); truncated?")
    return f"{suffix[1:]}, {rows:,} rows"
