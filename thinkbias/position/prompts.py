"""The project's prompts for the three modes, following the structure of paper Appendix A.1.

Each mode is a (system, user) pair. ``direct`` asks for the letter only in the form
"The answer is (X)"; ``cot`` asks for short step-by-step reasoning then the same final form;
``reasoning`` asks for step-by-step reasoning without the brevity request (the thinking itself is
opened by the engine's think-arm prefill, plus the thinking instruction for models whose thinking is
prompt-elicited). Options are written one per line as "A. <text>".
"""

from __future__ import annotations

from typing import Literal

Mode = Literal["direct", "cot", "reasoning"]
MODES: tuple[str, ...] = ("direct", "cot", "reasoning")

SYSTEM_PROMPTS: dict[str, str] = {
    "direct": (
        "You answer multiple-choice questions. Reply with nothing but the letter of the correct "
        "option, written exactly as: The answer is (X). Give no explanation and no working."
    ),
    "cot": (
        "You solve multiple-choice questions. Reason through the question step by step, keeping "
        "the reasoning brief, and then state your final choice exactly as: The answer is (X)."
    ),
    "reasoning": (
        "You solve multiple-choice questions. Reason through the question step by step, and then "
        "state your final choice exactly as: The answer is (X)."
    ),
}

USER_SUFFIX: dict[str, str] = {
    "direct": "",
    "cot": "Reason step by step, then give your final answer.",
    "reasoning": "Reason step by step, then give your final answer.",
}


def format_options(options: list[str] | tuple[str, ...]) -> str:
    """ "A. first\\nB. second\\n..." for the options in shown order."""
    return "\n".join(f"{letter}. {text}" for letter, text in zip("ABCD", options))


def user_prompt(question: str, options: list[str] | tuple[str, ...], mode: str, extra_instruction: str = "") -> str:
    """The user message: question, options, the mode's closing request and an optional extra
    instruction (the thinking instruction of prompt-elicited reasoning models)."""
    parts = [question.strip(), format_options(options)]
    if USER_SUFFIX[mode]:
        parts.append(USER_SUFFIX[mode])
    if extra_instruction:
        parts.append(extra_instruction.strip())
    return "\n\n".join(parts)


def system_prompt(mode: str) -> str:
    """The system message of a mode."""
    return SYSTEM_PROMPTS[mode]
