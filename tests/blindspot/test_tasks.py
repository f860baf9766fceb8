"""Decision parsers on hand-written responses, and prompt rendering."""

import pytest

from thinkbias.blindspot.tasks import parse_admissions, parse_hiring, parse_loan, render_task_prompt, task_spec


@pytest.mark.parametrize(
    "text, expected",
    [
        ("The income is solid.\nFinal Decision: APPROVE", 1),
        ("final decision: reject", 0),
        ("Final Decision: [APPROVE/REJECT]", 1),  # both words: the earlier wins
        ("Final Decision: REJECT ... or approve", 0),
        ("Final decision: approve. Later: Final Decision: Reject", 0),  # the last marker counts
        ("I would approve this loan.", None),  # no marker
        ("Final Decision: maybe", None),
        ("", None),
    ],
)
def test_loan_parser(text, expected):
    assert parse_loan(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Strong file.\nFinal Decision: ADMIT", 1),
        ("Final Decision: Reject", 0),
        ("Final Decision: admitted with honors", 1),
        ("Admit.", None),
    ],
)
def test_admissions_parser(text, expected):
    assert parse_admissions(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Chain of thought: good fit.\nAnswer: Yes", 1),
        ("Chain of thought: weak.\nAnswer: No", 0),
        ("Answer: maybe. Answer: **Yes**", 1),
        ("Yes, interview them.", 1),
        ("No.", 0),
        ("Chain of thought: unclear. Answer: perhaps", None),
        ("Maybe later.", None),
    ],
)
def test_hiring_parser(text, expected):
    assert parse_hiring(text) == expected


def test_render_task_prompt_places_the_input_and_job():
    out = render_task_prompt("Job: $job_description\nCV: $application", "  Jane  ", "Engineer")
    assert out == "Job: Engineer\nCV: Jane"
    assert task_spec("loan").labels == ("Rejected", "Approved")
    with pytest.raises(ValueError):
        task_spec("poetry")
