"""Reading a bring-your-own table and turning schema failures into one message (real files)."""

import gzip

import pandas as pd
import pandera.pandas as pa
import pytest

from thinkbias.data.byo_table import TableError, key_check, read_user_table, text_column, unique_key, validate_table

SCHEMA = pa.DataFrameSchema(
    {
        "id": text_column(),
        "score": pa.Column(float, pa.Check.in_range(0, 1), coerce=True, nullable=True),
        "kind": text_column(checks=[pa.Check.isin(["a", "b"])]),
    },
    checks=[unique_key(["id", "kind"])],
)


def test_formats_by_extension_read_alike(tmp_path):
    table = pd.DataFrame({"id": ["001", "002"], "score": [0.5, None], "kind": ["a", "b"]})
    csv, gz, pq, jl = (tmp_path / n for n in ("t.csv", "t.csv.gz", "t.parquet", "t.jsonl"))
    table.to_csv(csv, index=False)
    gz.write_bytes(gzip.compress(csv.read_bytes()))
    table.to_parquet(pq, index=False)
    table.to_json(jl, orient="records", lines=True)
    for path in (csv, gz, pq, jl):
        got = validate_table(read_user_table(path, "t"), SCHEMA, f"t {path}")
        assert got["id"].tolist() == ["001", "002"], path  # ids stay text: no leading zero lost
        assert got["score"].iloc[0] == 0.5 and pd.isna(got["score"].iloc[1])


def test_empty_file_and_header_only_name_the_file(tmp_path):
    empty, header = tmp_path / "empty.csv", tmp_path / "header.csv"
    empty.write_text("\n  \n")
    header.write_text("id,score,kind\n")
    with pytest.raises(TableError, match=f"^outcomes {empty}: the file is empty"):
        read_user_table(empty, "outcomes")
    with pytest.raises(TableError, match=f"^outcomes {header}: a header but no data rows"):
        read_user_table(header, "outcomes")


def test_non_utf8_names_file_line_and_column(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes("id,score,kind\nx1,0.5,a\nCaf\u00e9,0.1,b\n".encode("latin-1"))
    with pytest.raises(TableError, match=(f"^t {path}, line 3, column 4: not UTF-8 \\(byte 0xe9 at offset 26\\)")):
        read_user_table(path, "t")


def test_malformed_csv_names_the_file(tmp_path):
    path = tmp_path / "ragged.csv"
    path.write_text("id,score,kind\nx,0.5,a\ny,0.1,b,extra,more\n")
    with pytest.raises(TableError, match=f"^t {path}: cannot be read as csv: .*line 3"):
        read_user_table(path, "t")


def test_every_problem_in_one_message(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("id,score,kind\nx1,0.5,a\n,high,a\nx3,1.5,c\nx1,0.2,a\n x5 ,,b\n   ,0,b\n")
    with pytest.raises(TableError) as err:
        validate_table(read_user_table(path, "t"), SCHEMA, f"t {path}")
    lines = str(err.value).splitlines()
    assert lines[0] == f"t {path}: 6 problem(s)"
    assert lines[1:] == [
        "  - column 'score': 1 of 6 rows not a number; first: 'high' (row 2)",
        "  - column 'id': 1 of 6 rows empty; first: (empty) (row 2)",
        "  - column 'id': 1 of 6 rows blank; first: '   ' (row 6)",
        "  - column 'kind': 1 of 6 rows not one of a, b; first: 'c' (row 3)",
        "  - duplicate key (id, kind): 2 of 6 rows; first: ('x1', 'a') rows 1, 4",
        # the other checks of a column with unconvertible values run on the values that convert
        "  - column 'score': 1 of 6 rows outside [0, 1]; first: 1.5 (row 3)",
    ]


def test_range_check_reports_rows_and_missing_columns_list_the_required(tmp_path):
    table = pd.DataFrame({"id": ["a", "b", "c"], "score": [0.5, 1.5, -2.0], "kind": ["a", "a", "b"]})
    with pytest.raises(
        TableError, match=r"column 'score': 2 of 3 rows outside \[0, 1\]; first: 1.5 \(row 2\), -2.0 \(row 3\)"
    ):
        validate_table(table, SCHEMA, "t")
    with pytest.raises(TableError, match=r"missing column\(s\) 'kind' \(required: id, score, kind\)"):
        validate_table(table.drop(columns="kind"), SCHEMA, "t")


def test_key_check_reports_failing_rows_by_key():
    def one_kind_per_id(df, key):
        return df.groupby(list(key))["kind"].transform("nunique") == 1

    schema = pa.DataFrameSchema(
        {"id": text_column(), "kind": text_column()},
        checks=[key_check(one_kind_per_id, ["id"], "kind differs within an id")],
    )
    table = pd.DataFrame({"id": ["a", "a", "b"], "kind": ["x", "y", "x"]})
    with pytest.raises(TableError, match=r"kind differs within an id: 2 of 3 rows; first: \('a'\) rows 1, 2$"):
        validate_table(table, schema, "t")


@pytest.mark.parametrize("delimiter, name", [("\t", "tab"), (";", "semicolon")])
def test_a_table_with_another_delimiter_says_so_not_missing_columns(tmp_path, delimiter, name):
    path = tmp_path / "predictions.csv"
    path.write_text(delimiter.join(["id", "score", "kind"]) + "\n" + delimiter.join(["1", "0.5", "a"]) + "\n")
    with pytest.raises(TableError) as err:
        validate_table(read_user_table(path, "predictions table"), SCHEMA, f"predictions table {path}")
    message = str(err.value)
    assert message.startswith(f"predictions table {path}: read as one column ")
    assert f"the file looks {name}-separated, and a CSV table is comma-separated" in message
    assert "missing column" not in message
    # one column with no other delimiter in its header is read as it is
    single = tmp_path / "single.csv"
    single.write_text("id\n1\n")
    assert read_user_table(single, "t")["id"].tolist() == ["1"]
