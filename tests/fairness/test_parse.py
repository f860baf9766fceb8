"""Yes/No parsing and refusal detection."""

import pytest

from thinkbias.fairness.parse import parse_yes_no


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Yes", ("Yes", "ok")),
        (" no.", ("No", "ok")),
        ("**YES**, because the income is high", ("Yes", "ok")),
        ("Answer: No. Yes would be wrong", ("No", "ok")),
        ("The person is Non-White; nothing else. No", ("No", "ok")),
        ("Nobody knows; yes", ("Yes", "ok")),
        ("I cannot predict criminal behaviour.", (None, "refusal")),
        ("As an AI I won't decide", (None, "refusal")),
        ("Probably income above 50k", (None, "unparsed")),
        ("", (None, "unparsed")),
        (None, (None, "unparsed")),
    ],
)
def test_parse(text, expected):
    assert parse_yes_no(text) == expected
