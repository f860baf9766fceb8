"""The decision tasks (spec Sec. 2; and the fairness study's datasets): decision prompts and parsers.

Prompts are the project's own wording (resources/blindspot/prompts/<task>.txt, ``$application``
placeholder; hiring also ``$job_description``); a config can point at other prompt files. Parsers
follow the paper's rules and return 1 (accept), 0 (reject) or None (unparsable: counted, and the
pair is excluded from the test).
"""

from __future__ import annotations

from dataclasses import dataclass
from string import Template
from typing import Callable

from thinkbias.blindspot.fairness_tasks import FAIRNESS_TASKS, INPUT_NAMES


def parse_final_decision(response: str, accept_word: str, reject_word: str = "reject") -> int | None:
    """Loan and admissions parser: the text after the LAST "final decision:" (case-insensitive);
    if both words occur there, the earlier one wins; neither, or no marker, gives None."""
    text = (response or "").lower()
    marker = "final decision:"
    if marker not in text:
        return None
    tail = text.rsplit(marker, 1)[1]
    i_acc, i_rej = tail.find(accept_word), tail.find(reject_word)
    if i_acc < 0 and i_rej < 0:
        return None
    if i_rej < 0 or (0 <= i_acc < i_rej):
        return 1
    return 0


def parse_loan(response: str) -> int | None:
    """Loan approval: "Final Decision: APPROVE/REJECT"."""
    return parse_final_decision(response, "approve")


def parse_admissions(response: str) -> int | None:
    """University admissions: "Final Decision: ADMIT/REJECT"."""
    return parse_final_decision(response, "admit")


def parse_hiring(response: str) -> int | None:
    """Resume screening: after the last "answer:", a leading "yes"/"no"; else the response's own
    first word; else None."""
    text = (response or "").lower()
    if "answer:" in text:
        tail = text.rsplit("answer:", 1)[1].strip().lstrip("*_ \"'")
        if tail.startswith("yes"):
            return 1
        if tail.startswith("no"):
            return 0
    head = text.strip()
    if head.startswith("yes"):
        return 1
    if head.startswith("no"):
        return 0
    return None


@dataclass(frozen=True)
class TaskSpec:
    """A decision task: its id, what its input is called, its parser and decision labels, and the
    cue and answer words used to force a decision out of a response that lacks one."""

    id: str
    input_name: str
    parser: Callable[[str], int | None]
    labels: tuple[str, str]  # (label of 0, label of 1)
    decision_cue: str
    decision_words: tuple[str, str]  # (word of 0, word of 1)


TASKS: dict[str, TaskSpec] = {
    "loan": TaskSpec(
        "loan", "loan application", parse_loan, ("Rejected", "Approved"), "\n\nFinal Decision:", ("REJECT", "APPROVE")
    ),
    "admissions": TaskSpec(
        "admissions",
        "university application",
        parse_admissions,
        ("Rejected", "Admitted"),
        "\n\nFinal Decision:",
        ("REJECT", "ADMIT"),
    ),
    "hiring": TaskSpec("hiring", "resume", parse_hiring, ("No", "Yes"), "\nAnswer:", ("No", "Yes")),
}
# The fairness study's Yes/No questions (thinkbias/blindspot/fairness_tasks.py): the decision prompts
# end with the same "Answer: Yes/No" line as hiring, so they share its parser; 1 = Yes.
TASKS |= {
    task: TaskSpec(task, INPUT_NAMES[dataset], parse_hiring, ("No", "Yes"), "\nAnswer:", ("No", "Yes"))
    for task, dataset in FAIRNESS_TASKS.items()
}


def decision_candidates(spec: TaskSpec) -> dict[str, tuple[str, ...]]:
    """Token variants of the two decision words after the cue (for a forced decision)."""
    out = {}
    for word in spec.decision_words:
        forms = {word, word.lower(), word.capitalize()}
        out[word] = tuple(sorted({f" {f}" for f in forms} | forms))
    return out


def task_spec(task: str) -> TaskSpec:
    if task not in TASKS:
        raise ValueError(f"unknown task '{task}' (known: {', '.join(TASKS)})")
    return TASKS[task]


def render_task_prompt(template: str, text: str, job_description: str = "") -> str:
    """The decision prompt for one input (a single user message; no system prompt)."""
    return Template(template).safe_substitute(application=text.strip(), job_description=job_description.strip())
