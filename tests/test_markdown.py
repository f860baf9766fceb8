"""Markdown tables shared by every study: the cell formats and table shapes each study asks for."""

import math

import numpy as np
import pandas as pd

from thinkbias.markdown import format_cell, markdown_table


def test_fixed_decimals_with_tiny_values_in_scientific_notation():
    assert format_cell(0.12345) == "0.123" and format_cell(0.0) == "0.000" and format_cell(12.34, 1) == "12.3"
    assert format_cell(3) == "3" and format_cell(np.int64(3)) == "3" and format_cell(5.0, 0) == "5"
    assert format_cell(1e-20) == "1.00e-20" and format_cell(np.float32(1e-6)) == "1.00e-06"
    assert format_cell(0.04, 1) == "4.00e-02"
    assert format_cell(1234567.0) == "1234567.000"
    assert format_cell(math.inf) == "∞" and format_cell(-math.inf) == "-∞"


def test_significant_digits_keep_whole_counts_exact():
    assert format_cell(1.5, 4, significant=True) == "1.5" and format_cell(0.123456, 4, significant=True) == "0.1235"
    assert format_cell(1.23456e-7, 4, significant=True) == "1.235e-07"
    assert format_cell(123456.0, 4, significant=True) == "123456"


def test_missing_values_booleans_and_text():
    for value in (None, math.nan, np.float64("nan"), pd.NA, pd.NaT):
        assert format_cell(value) == "" and format_cell(value, missing="—") == "—"
    assert format_cell(True) == "yes" and format_cell(np.False_) == "no"
    assert format_cell("a|b\nc") == "a\\|b c"


def test_table_with_title_and_missing_marker():
    md = markdown_table(pd.DataFrame({"model": ["m"], "N": [5], "p": [0.5]}), 2, missing="—", title="T")
    assert md.splitlines() == ["**T**", "", "| model | N | p |", "|---|---|---|", "| m | 5 | 0.50 |"]
    md = markdown_table(pd.DataFrame({"a": [0.12345, math.nan, 1e-6], "b": ["x|y", None, "z"]}), missing="-")
    assert md.splitlines()[2:] == ["| 0.123 | x\\|y |", "| - | - |", "| 1.00e-06 | z |"]


def test_table_escapes_and_formats_and_ends_in_a_newline():
    text = markdown_table(pd.DataFrame({"a": [1.23456, float("nan")], "b|c": ["x|y", "z"]}))
    assert text == "| a | b\\|c |\n|---|---|\n| 1.235 | x\\|y |\n|  | z |\n"
    text = markdown_table(pd.DataFrame({"a": [1.5, np.nan], "n": [200.0, np.nan]}), 4, significant=True)
    assert text.splitlines()[2:] == ["| 1.5 | 200 |", "|  |  |"]


def test_table_without_rows_says_so():
    assert markdown_table(pd.DataFrame(columns=["a"]), title="T") == "**T**\n\n_(no rows)_\n"
    assert markdown_table(pd.DataFrame()) == "_(no rows)_\n"


def test_p_values_below_a_double_show_from_their_log10_never_as_zero():
    from thinkbias.markdown import format_p_from_log10
    from thinkbias.stats.mcnemar import mcnemar_test

    assert format_p_from_log10(-485.6048358107389) == "2.48e-486"
    assert format_p_from_log10(-485.6048358107389, 4, significant=True) == "2.484e-486"
    assert format_p_from_log10(-1e-9) == "1.00e+00" and format_p_from_log10(-2.0) == "1.00e-02"
    paper = mcnemar_test(620, 3508, exact_below=math.inf)  # p underflows to 0.0
    df = pd.DataFrame(
        {
            "mcnemar_p": [paper.p_value, 0.04],
            "mcnemar_log10_p": [paper.log10_p, math.log10(0.04)],
            "p_value": [5e-310, math.nan],
            "log10_p_value": [-309.30103, math.nan],
            "other": [0.0, 1.0],
        }
    )
    rows = markdown_table(df, missing="-").splitlines()[2:]
    assert rows == ["| 2.48e-486 | -485.605 | 5.00e-310 | -309.301 | 0.000 |", "| 0.040 | -1.398 | - | - | 1.000 |"]
    sig = markdown_table(df.iloc[:1], 4, significant=True).splitlines()[2]
    assert sig.startswith("| 2.484e-486 | -485.6 | 5e-310 |")
