"""Thinking control: the assistant prefill of each arm and the split of a reply into thinking and answer.

Four ways a model can be made to think (``ModelSpec.thinking``):

- ``native``: the model (or its chat template) opens the think block itself; the think arm has no
  prefill, the non-thinking arm pre-fills an empty closed block.
- ``prefill``: the assistant turn is pre-filled with ``think_open`` (``<think>\\n``) to open it.
- ``prompt``: a model without thinking tags is asked in the user prompt to reason inside the tags
  first (seed 000, Appendix D route), and the think tag is also pre-filled to start it off.
- ``none``: the model has no thinking arm.

The non-thinking arm is always an empty, closed think block (``<think>\\n\\n</think>\\n\\n``), which
for distilled reasoning models is the documented way to skip the trace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from thinkbias.llm.types import ModelSpec

ARMS = ("think", "nothink")


def arm_prefill(spec: ModelSpec, arm: str) -> str:
    """Raw assistant prefill that puts ``spec``'s model in the given arm (``think`` or ``nothink``).

    ``think``: ``think_open`` for ``prefill``/``prompt`` models, ``""`` for ``native`` ones.
    ``nothink``: an empty closed block ``think_open + "\\n" + think_close + "\\n\\n"``.
    A model with ``thinking: none`` has only the ``nothink`` arm, whose prefill is ``""``.
    """
    if arm not in ARMS:
        raise ValueError(f"unknown arm '{arm}' (expected one of {', '.join(ARMS)})")
    if spec.thinking == "none":
        if arm == "think":
            raise ValueError(f"model '{spec.id}' has thinking: none, so it has no think arm")
        return ""
    if arm == "think":
        return "" if spec.thinking == "native" else spec.think_open
    return empty_think_block(spec)


def empty_think_block(spec: ModelSpec) -> str:
    """The empty closed think block of the non-thinking arm, e.g. ``<think>\\n\\n</think>\\n\\n``."""
    open_tag = spec.think_open if spec.think_open.endswith("\n") else spec.think_open + "\n"
    return f"{open_tag}\n{spec.think_close}\n\n"


def thinking_instruction(spec: ModelSpec) -> str:
    """Sentence to append to the user prompt of the think arm when ``spec.thinking == "prompt"``
    (empty for every other thinking control): reason step by step inside the tags, then answer."""
    if spec.thinking != "prompt":
        return ""
    open_tag, close_tag = spec.think_open.strip(), spec.think_close.strip()
    return (
        f"Before answering, think it through step by step inside {open_tag} ... {close_tag} tags, "
        f"then give your final answer after {close_tag}."
    )


@dataclass(frozen=True)
class ThinkSplit:
    """A reply split at the think tags: ``thinking`` (tags excluded) and ``answer`` (stripped)."""

    thinking: str
    answer: str
    closed: bool


def split_thinking(full: str, think_open: str, think_close: str, opened: bool = False) -> ThinkSplit:
    """Split ``full`` (assistant prefill + generated text) into thinking and answer.

    The trace starts after the first ``think_open`` (or at the start when the rendered prompt already
    opened it: ``opened=True``, or when only a close tag appears) and ends at the next
    ``think_close``. A trace that was opened but never closed is all thinking (empty answer). Text
    with no tag at all is all answer.
    """
    open_tag, close_tag = think_open.strip(), think_close.strip()
    start = 0
    i = full.find(open_tag) if open_tag else -1
    if i >= 0:
        start = i + len(open_tag)
        opened = True
    j = full.find(close_tag, start) if close_tag else -1
    if j >= 0:
        return ThinkSplit(full[start:j].strip("\n"), full[j + len(close_tag) :].strip(), True)
    if opened:
        return ThinkSplit(full[start:].strip("\n"), "", False)
    return ThinkSplit("", full.strip(), False)


def thinking_char_span(text: str, think_open: str, think_close: str, opened: bool) -> tuple[int, int] | None:
    """Character range [start, end) of the thinking trace in generated ``text``: from the start
    (the prompt already opened it) or after the model's own open tag, to the close tag (or the end),
    without the newlines at either end. ``text[start:end]`` is then exactly ``split_thinking``'s
    ``thinking``, so a probe cut on the generated tokens and one cut on the stored trace count the
    same tokens (with the newlines kept, the leading newline a model writes after the prompt's open
    tag was one extra token, and every fused cut sat one token off). None when the model never
    opened a trace."""
    tag, close = think_open.strip(), think_close.strip()
    start = 0
    if not opened:
        i = text.find(tag) if tag else -1
        if i < 0:
            return None
        start = i + len(tag)
    end = text.find(close, start) if close else -1
    end = len(text) if end < 0 else end
    while start < end and text[start] == "\n":
        start += 1
    while end > start and text[end - 1] == "\n":
        end -= 1
    return start, end


TRACES = ("thinking", "text")  # what a probe cuts: the thinking trace, or the whole generated text


def trace_char_span(
    text: str, think_open: str, think_close: str, opened: bool, trace: str = "thinking"
) -> tuple[int, int] | None:
    """Character range of the probed trace in generated ``text``: ``thinking``, the thinking trace
    (``thinking_char_span``); ``text``, all of it (a chain of thought written as the visible reply)."""
    if trace not in TRACES:
        raise ValueError(f"unknown probe trace '{trace}' (expected one of {', '.join(TRACES)})")
    if trace == "text":
        return 0, len(text)
    return thinking_char_span(text, think_open, think_close, opened)


def thinking_token_span(
    text: str, pieces: Sequence[bytes], think_open: str, think_close: str, opened: bool, trace: str = "thinking"
) -> tuple[int, int]:
    """Token range [k0, k1) of the generated tokens that make up the probed trace of ``text``
    (``trace_char_span``: the thinking trace by default, or the whole text).

    The thinking trace starts at the start (prompt already opened it) or after the model's own open
    tag; it ends at the close tag (or the end); newlines at either end are not part of it. Tokens
    straddling a boundary are left out of the trace.
    """
    span = trace_char_span(text, think_open, think_close, opened, trace)
    if span is None:
        return 0, 0
    start, end = span
    start_b, end_b = len(text[:start].encode("utf-8")), len(text[:end].encode("utf-8"))
    cum = np.cumsum([0] + [len(p) for p in pieces])
    k0 = int(np.searchsorted(cum, start_b, side="left"))
    k1 = int(np.searchsorted(cum, end_b, side="right")) - 1
    return k0, max(k0, k1)
