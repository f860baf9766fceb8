"""Markdown rendering of result tables."""
import math

import pandas as pd

from thinkbias.fairness.markdown import format_value, to_markdown


def test_format_value():
    assert format_value(3) == "3" and format_value(0.12345) == "0.123" and format_value(math.nan) == "—"
    assert format_value(1e-20) == "1.00e-20" and format_value(True) == "yes" and format_value(math.inf) == "∞"
    assert format_value("a|b") == "a\\|b"


def test_to_markdown():
    md = to_markdown(pd.DataFrame({"model": ["m"], "N": [5], "p": [0.5]}), 2, "T")
    assert md.splitlines() == ["**T**", "", "| model | N | p |", "|---|---|---|", "| m | 5 | 0.50 |"]
