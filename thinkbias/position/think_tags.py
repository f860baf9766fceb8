"""Separation of the thinking trace from the response in a text with ``<think>`` tags (paper
Appendix A.4), for generations made outside the workflow.

A.4 splits an R1-family output with one regex, thinking = the text inside ``<think>...</think>`` and
response = the text after it; without tags the thinking is empty and the whole text is the
response. ``thinkbias.llm.thinking.split_thinking`` does that split, and also reads a text with
only the closing tag (the chat template opened the block in the prompt) as thinking up to the tag,
and a block that was opened but never closed (cut off by the budget) as thinking with no response.

The workflow's own records hold the trajectory as thinking + ``"\\n\\n"`` + response without the
tags; a split text is rewritten the same way, so lengths and normalised positions mean the same
whatever the source. Which part each step reads (as in the paper): the cascade (A.2) the whole
trajectory; the letter-frequency fallback the response; trajectory, CCP and switching (A.3, A.4)
the whole trajectory.
"""

from __future__ import annotations

import pandas as pd

from thinkbias.llm.thinking import split_thinking
from thinkbias.position.generation import full_trajectory

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"


def has_think_tags(text: str) -> bool:
    """Whether ``text`` holds an opening or closing think tag."""
    return THINK_OPEN in text or THINK_CLOSE in text


def split_think_tags(table: pd.DataFrame) -> pd.DataFrame:
    """Rows whose ``full_text`` has think tags get ``full_text`` = thinking + "\\n\\n" + response
    (tags removed) and, when their ``answer`` (the response column) is empty, ``answer`` = the
    response after the tags. Other rows are returned unchanged; returns a copy."""
    out = table.copy()
    answers = out["answer"] if "answer" in out else pd.Series([None] * len(out), index=out.index)
    texts, responses = [], []
    for text, given in zip(out["full_text"], answers):
        if isinstance(text, str) and has_think_tags(text):
            split = split_thinking(text, THINK_OPEN, THINK_CLOSE)
            texts.append(full_trajectory(split.thinking, split.answer))
            responses.append(given if isinstance(given, str) and given.strip() else split.answer)
        else:
            texts.append(text)
            responses.append(given if isinstance(given, str) else None)
    out["full_text"] = texts
    out["answer"] = pd.Series(responses, index=out.index, dtype=object)
    return out
