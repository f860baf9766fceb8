"""Open checks of downloaded files (thinkbias.data.filecheck): each format read whole, cut copies rejected."""

from __future__ import annotations

import gzip
import json
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import statsmodels

from thinkbias.data.filecheck import FileCheckError, check_opens

# a real BIFF workbook shipped by statsmodels (a project dependency): 380 rows on its first sheet
XLS = Path(statsmodels.__file__).parent / "tsa/statespace/tests/results/frbny_nowcast/Nowcasting/data/US/2016-07-29.xls"


def cut(path: Path, keep: int, into: Path) -> Path:
    into.write_bytes(path.read_bytes()[:keep])
    return into


def test_csv_rows_are_counted_with_quoted_fields_spanning_lines(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text('Question,Correct Answer\n"two\nlines",a\n"x, y",b\n', encoding="utf-8")
    assert check_opens(path, min_rows=2) == "csv, 2 rows"
    with pytest.raises(FileCheckError, match="2 rows, expected at least 3"):
        check_opens(path, min_rows=3)


def test_csv_cut_inside_a_quoted_field_or_a_record_is_rejected(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text('Question,Correct Answer\n"two\nli', encoding="utf-8")
    with pytest.raises(FileCheckError, match="not readable as CSV .*unexpected end of data"):
        check_opens(path)
    path.write_text("a,b,c\n1,2,3\n4,5", encoding="utf-8")
    with pytest.raises(
        FileCheckError, match="1 of 2 records do not have the header's 3 fields \\(first: line 3, 2 fields\\)"
    ):
        check_opens(path)


def test_csv_that_is_not_utf8_names_the_byte(tmp_path):
    path = tmp_path / "latin.csv"
    path.write_bytes("a,b\ncaf\xe9,1\n".encode("latin-1"))
    with pytest.raises(FileCheckError, match=f"{path}: not UTF-8 text \\(byte 7"):
        check_opens(path)


def test_jsonl_cut_mid_line_names_the_line(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps({"q": 1}) + "\n" + json.dumps({"q": 2})[:5], encoding="utf-8")
    with pytest.raises(FileCheckError, match="line 2 is not JSON"):
        check_opens(path)
    path.write_text(json.dumps({"q": 1}) + "\n\n" + json.dumps({"q": 2}) + "\n", encoding="utf-8")
    assert check_opens(path) == "jsonl, 2 rows"


def test_parquet_reads_whole_and_a_cut_copy_fails(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"id": list(range(5000)), "text": [f"row {i}" for i in range(5000)]}), path)
    assert check_opens(path, min_rows=5000) == "parquet, 5,000 rows"
    with pytest.raises(FileCheckError, match="not a readable parquet file"):
        check_opens(cut(path, path.stat().st_size // 2, tmp_path / "half.parquet"))


def test_real_xls_opens_and_a_cut_copy_fails(tmp_path):
    assert check_opens(XLS, min_rows=379) == "xls, 379 rows"
    with pytest.raises(FileCheckError, match="not a readable .xls workbook .*xlrd: .*File is truncated"):
        check_opens(cut(XLS, XLS.stat().st_size // 2, tmp_path / "half.xls"))


def test_zip_member_with_a_bad_crc_fails(tmp_path):
    path = tmp_path / "a.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("t.csv", b"id\n" + b"1\n" * 100)
    assert check_opens(path) == "zip, opens"
    raw = bytearray(path.read_bytes())
    raw[raw.index(b"1\n1\n") + 50] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(FileCheckError, match="Bad CRC-32 for file 't.csv'"):
        check_opens(path)


def test_gzip_cut_short_fails_and_gguf_needs_its_magic(tmp_path):
    path = tmp_path / "t.gz"
    path.write_bytes(gzip.compress(bytes(range(256)) * 400))
    assert check_opens(path) == "gz, opens"
    with pytest.raises(FileCheckError, match="not a complete gzip stream"):
        check_opens(cut(path, path.stat().st_size - 20, tmp_path / "cut.gz"))
    weights = tmp_path / "m.gguf"
    weights.write_bytes(b"<!DOCTYPE html>")  # a login page saved in place of the weights
    with pytest.raises(FileCheckError, match="GGUF magic bytes"):
        check_opens(weights)


def test_suffix_and_label_come_from_the_destination(tmp_path):
    part = tmp_path / ".demo.csv.w1@h.abcdefgh.part"
    part.write_text("a,b\n1\n", encoding="utf-8")
    with pytest.raises(FileCheckError, match="^the downloaded demo.csv: 1 of 1 records do not have"):
        check_opens(part, suffix=".csv", label="the downloaded demo.csv")


def test_formats_without_a_reader_pass_unless_rows_are_asked_for(tmp_path):
    path = tmp_path / "adult.data"
    path.write_text("39, State-gov\n", encoding="utf-8")
    assert check_opens(path) == "no format check for '.data' files"
    with pytest.raises(FileCheckError, match="min_rows is set but '.data' files have no row count"):
        check_opens(path, min_rows=1)
