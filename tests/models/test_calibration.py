"""The local AWQ calibration text: one MCQ question with its options per line, no answer, the same
lines for the same table."""

from __future__ import annotations

import pandas as pd
import pytest

from thinkbias.models.calibration import calibration_lines, one_line


def mcq(n: int) -> pd.DataFrame:
    """A table laid out as ``load_mcq`` returns it: ``n`` four-option items (item k answers C)."""
    return pd.DataFrame(
        {
            "question": [f"Question {k}?\n  Second line." for k in range(n)],
            "option_a": [f"a{k}" for k in range(n)],
            "option_b": [f"b{k}" for k in range(n)],
            "option_c": [f"c{k}" for k in range(n)],
            "option_d": [f"d{k}" for k in range(n)],
            "option_e": [None] * n,
            "answer": ["C"] * n,
            "n_options": [4] * n,
        }
    )


def test_a_line_is_the_question_then_its_lettered_options_without_the_answer():
    (line,) = calibration_lines(mcq(1), 1)
    assert line == "Question 0? Second line. A) a0 B) b0 C) c0 D) d0"
    assert "\n" not in line and "Answer" not in line


def test_lines_are_evenly_spaced_items_and_the_same_on_every_call():
    items = mcq(10)
    lines = calibration_lines(items, 5)
    assert [line.split("?")[0] for line in lines] == [f"Question {k}" for k in (0, 2, 4, 6, 8)]
    assert calibration_lines(items, 5) == lines
    assert len(calibration_lines(items, 10)) == len(set(calibration_lines(items, 10))) == 10


def test_a_fifth_option_is_kept_when_an_item_has_one():
    items = mcq(1).assign(option_e=["e0"], n_options=[5])
    assert calibration_lines(items, 1)[0].endswith("D) d0 E) e0")


def test_asking_for_more_lines_than_items_or_none_fails():
    with pytest.raises(ValueError, match="3 lines asked, the table has 2 items"):
        calibration_lines(mcq(2), 3)
    with pytest.raises(ValueError, match="n_lines=0"):
        calibration_lines(mcq(2), 0)


def test_whitespace_runs_collapse_to_one_space():
    assert one_line("  a\n\tb   c \r\n") == "a b c"
