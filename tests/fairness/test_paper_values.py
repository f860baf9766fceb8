"""Paper values as printed: parsing, agreement with the stored numbers, display in the paper's unit."""

import math
from pathlib import Path

import pytest
import yaml

from thinkbias.fairness.paper_values import agrees, format_difference, format_like, parse_printed

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "text, value, decimals, unit, approx",
    [
        ("89%", 0.89, 0, "%", False),
        ("48.4%", 0.484, 1, "%", False),
        ("≈ 5.7×", 5.7, 1, "×", True),
        ("0.054", 0.054, 3, "", False),
        ("1,430", 1430, 0, "", False),
        ("≤ 0.035", 0.035, 3, "", False),
        ("9/9", 9, 0, "", False),
        ("-0.018", -0.018, 3, "", False),
        ("+0.122", 0.122, 3, "", False),
        ("≤ 21%", 0.21, 0, "%", False),
    ],
)
def test_parse_printed(text, value, decimals, unit, approx):
    p = parse_printed(text)
    assert p.value == pytest.approx(value) and p.decimals == decimals and p.unit == unit and p.approximate == approx


def test_unreadable_text_is_refused():
    with pytest.raises(ValueError, match="cannot read"):
        parse_printed("about six")


def test_reproduced_numbers_in_the_papers_unit_with_one_digit_more():
    assert format_like(0.8734, parse_printed("89%")) == "87.3%"
    assert format_difference(0.8734 - 0.89, parse_printed("89%")) == "-1.7 pp"
    assert format_like(3416 / 620, parse_printed("≈ 5.7×")) == "5.51×"
    assert format_like(3416.0, parse_printed("3508")) == "3416"
    assert format_difference(-92.0, parse_printed("3508")) == "-92"
    assert format_like(1398.0, parse_printed("1,430")) == "1,398"
    assert format_like(0.02412, parse_printed("0.024")) == "0.0241"
    assert format_like(math.nan, parse_printed("0.024")) == ""


def test_every_stored_paper_value_is_what_its_printed_text_says():
    paper = yaml.safe_load((REPO / "resources/paper/fairness.yaml").read_text())
    values = paper["values"] + paper["appendix_d"]["values"]
    unprinted = [v["id"] for v in values if "printed" not in v]
    assert unprinted == ["max_log10_p", "pooled_log10_p"]  # log10 bounds, printed as powers of ten
    bad = [
        (v["id"], v["printed"], v["value"])
        for v in values
        if "printed" in v and not agrees(parse_printed(v["printed"]), v["value"])
    ]
    assert bad == []
    assert agrees(parse_printed("89%"), 0.89) and not agrees(parse_printed("89%"), 0.8904)
