from dataclasses import replace

import pytest

from thinkbias.llm.thinking import (
    arm_prefill,
    split_thinking,
    thinking_char_span,
    thinking_instruction,
    thinking_token_span,
)
from thinkbias.llm.trace_cuts import trace_lead
from thinkbias.llm.types import ModelSpec

BASE = ModelSpec(id="m", backend="llamacpp")


def test_arm_prefills_per_thinking_control():
    assert arm_prefill(replace(BASE, thinking="prefill"), "think") == "<think>\n"
    assert arm_prefill(replace(BASE, thinking="prompt"), "think") == "<think>\n"
    assert arm_prefill(replace(BASE, thinking="native"), "think") == ""
    for mode in ("native", "prefill", "prompt"):
        assert arm_prefill(replace(BASE, thinking=mode), "nothink") == "<think>\n\n</think>\n\n"
    assert arm_prefill(replace(BASE, thinking="none"), "nothink") == ""
    with pytest.raises(ValueError, match="no think arm"):
        arm_prefill(replace(BASE, thinking="none"), "think")
    with pytest.raises(ValueError, match="unknown arm"):
        arm_prefill(BASE, "maybe")


def test_thinking_instruction_only_for_prompt_models():
    text = thinking_instruction(replace(BASE, thinking="prompt"))
    assert "<think>" in text and "</think>" in text
    assert thinking_instruction(replace(BASE, thinking="prefill")) == ""


def test_split_thinking_cases():
    s = split_thinking("<think>\nreason here\n</think>\n\nYes", "<think>\n", "</think>")
    assert (s.thinking, s.answer, s.closed) == ("reason here", "Yes", True)
    # opened by the prompt (native template): only the close tag appears
    s = split_thinking("reason</think> No", "<think>\n", "</think>", opened=True)
    assert (s.thinking, s.answer) == ("reason", "No")
    # opened, never closed: all thinking
    s = split_thinking("<think>\nstill going", "<think>\n", "</think>")
    assert (s.thinking, s.answer, s.closed) == ("still going", "", False)
    # no tags at all: all answer
    s = split_thinking("Yes.", "<think>\n", "</think>")
    assert (s.thinking, s.answer) == ("", "Yes.")
    # non-thinking arm
    s = split_thinking("<think>\n\n</think>\n\nNo", "<think>\n", "</think>")
    assert (s.thinking, s.answer) == ("", "No")


def test_thinking_token_span_hand_case():
    pieces = [b"Step", b" one", b".", b"</", b"think", b">", b" Yes"]
    text = "Step one.</think> Yes"
    assert thinking_token_span(text, pieces, "<think>\n", "</think>", True) == (0, 3)
    pieces = [b"<think>", b"\n", b"Hm", b"</think>", b"No"]
    assert thinking_token_span("<think>\nHm</think>No", pieces, "<think>\n", "</think>", False) == (2, 3)


def test_thinking_span_leaves_out_the_newlines_split_thinking_strips():
    """The probed span is the stored trace's characters: a leading newline after the prompt's open
    tag and a trailing one before the close tag belong to neither."""
    text = "\nStep one.\n</think> Yes"
    start, end = thinking_char_span(text, "<think>\n", "</think>", True)
    assert text[start:end] == split_thinking("<think>\n" + text, "<think>\n", "</think>").thinking == "Step one."
    pieces = [b"\n", b"Step", b" one", b".", b"\n", b"</think>", b" Yes"]
    assert thinking_token_span(text, pieces, "<think>\n", "</think>", True) == (1, 4)
    assert thinking_token_span(text, pieces, "<think>\n", "</think>", True, trace="text") == (0, 7)
    assert trace_lead(text, "<think>\n", "</think>", True) == "\n"
    assert trace_lead("<think>\n\nHm</think>", "<think>\n", "</think>", False) == "<think>\n\n"
    with pytest.raises(ValueError, match="unknown probe trace 'answer'"):
        thinking_token_span(text, pieces, "<think>\n", "</think>", True, trace="answer")
