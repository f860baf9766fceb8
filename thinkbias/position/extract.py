"""Final-answer extraction (paper Appendix A.2) with a documented letter-frequency fallback.

The cascade tries four patterns in order; the first pattern with any match decides, and within a
pattern the *last* match in the text wins (the final statement of the answer; the paper does not say
which occurrence it takes). Patterns 1 and 2 accept the full-width colon U+FF1A.

Pattern 4 ("single terminal letter") is anchored at the end of the whole text (after trailing
whitespace), i.e. the text ends with a bare option letter, optionally followed by a period.
Pattern 2 also skips bold markers right after the colon, so "**Answer:** B" (the paper's own example)
matches; the regex printed in the paper only accepts "**Answer**: B".

The letter-frequency fallback (``thinkbias.position.fallback``) runs only when the cascade finds
nothing; it reads the final answer region the same way whichever letter it names, with the cue
words of resources/position/fallback_cues.yaml.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from thinkbias.position.fallback import final_answer_region, letter_frequency_answer
from thinkbias.position.fallback_cues import FallbackCues

__all__ = [
    "OPTION_LETTERS",
    "FINAL_ANSWER_PATTERNS",
    "Extraction",
    "cascade_answer",
    "extract_final_answer",
    "final_answer_region",
    "letter_frequency_answer",
]

OPTION_LETTERS = ("A", "B", "C", "D")

FINAL_ANSWER_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("answer_is", re.compile(r"[Tt]he\s+answer\s+is\s*[(:\uFF1A]?\s*([A-D])\b")),
    ("answer_colon", re.compile(r"\*?\*?[Aa]nswer\*?\*?\s*[:\uFF1A]\s*\*?\*?\s*[(]?\s*([A-D])\b")),
    ("boxed", re.compile(r"\\boxed\{([A-D])\}")),
    ("terminal_letter", re.compile(r"\b([A-D])\s*\.?\s*$")),
)


@dataclass(frozen=True)
class Extraction:
    """One record's final answer: the letter (None when nothing matched) and how it was found.

    ``status`` is ``cascade:<pattern name>``, ``fallback`` or ``none``.
    """

    letter: str | None
    status: str


def cascade_answer(text: str) -> Extraction:
    """The four-pattern cascade of Appendix A.2 alone (no fallback)."""
    for name, pattern in FINAL_ANSWER_PATTERNS:
        source = text.rstrip() if name == "terminal_letter" else text
        matches = list(pattern.finditer(source))
        if matches:
            return Extraction(matches[-1].group(1), f"cascade:{name}")
    return Extraction(None, "none")


def extract_final_answer(
    text: str, response: str | None = None, fallback: bool = True, cues: FallbackCues | None = None
) -> Extraction:
    """Cascade on the full text first; when it finds nothing and ``fallback`` is on, the
    letter-frequency fallback on the final answer region (``response`` = post-thinking part, if any)
    with ``cues`` (default: resources/position/fallback_cues.yaml)."""
    found = cascade_answer(text)
    if found.letter is not None or not fallback:
        return found
    letter = letter_frequency_answer(text, response, cues)
    return Extraction(letter, "fallback") if letter else Extraction(None, "none")
