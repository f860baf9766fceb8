"""Final-answer extraction (paper Appendix A.2) with a documented letter-frequency fallback.

The cascade tries four patterns in order; the first pattern with any match decides, and within a
pattern the *last* match in the text wins (the final statement of the answer; the paper does not say
which occurrence it takes). Patterns 1 and 2 accept the full-width colon U+FF1A.

Pattern 4 ("single terminal letter") is anchored at the end of the whole text (after trailing
whitespace), i.e. the text ends with a bare option letter, optionally followed by a period.
Pattern 2 also skips bold markers right after the colon, so "**Answer:** B" (the paper's own example)
matches; the regex printed in the paper only accepts "**Answer**: B".

Letter-frequency fallback (the paper names one but does not define it): in the *final answer region*
- the response after the thinking trace when the record has one (non-empty), else the last
``FALLBACK_REGION_CHARS`` characters of the full text - count standalone capital option letters (not part of a word;
an "A" followed by a lower-case word is read as the article unless that word is is/seems/looks/appears)
and take the most frequent, ties broken by the latest occurrence.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

OPTION_LETTERS = ("A", "B", "C", "D")
FALLBACK_REGION_CHARS = 400

FINAL_ANSWER_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("answer_is", re.compile(r"[Tt]he\s+answer\s+is\s*[(:\uFF1A]?\s*([A-D])\b")),
    ("answer_colon", re.compile(r"\*?\*?[Aa]nswer\*?\*?\s*[:\uFF1A]\s*\*?\*?\s*[(]?\s*([A-D])\b")),
    ("boxed", re.compile(r"\\boxed\{([A-D])\}")),
    ("terminal_letter", re.compile(r"\b([A-D])\s*\.?\s*$")),
)

_STANDALONE = re.compile(r"(?<![\w'’\-])([A-D])(?![\w'’\-])")
_ARTICLE_FOLLOW = re.compile(r"\s+[a-z]")
_VERB_FOLLOW = re.compile(r"\s+(?:is|seems?|looks?|appears?)\b")


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


def final_answer_region(text: str, response: str | None = None) -> str:
    """The part of a trajectory that states the final answer (see the module docstring)."""
    if response and response.strip():
        return response
    return text[-FALLBACK_REGION_CHARS:]


def letter_frequency_answer(text: str, response: str | None = None) -> str | None:
    """Most frequent standalone option letter in the final answer region (ties: latest occurrence)."""
    region = final_answer_region(text, response)
    counts: Counter[str] = Counter()
    last_seen: dict[str, int] = {}
    for m in _STANDALONE.finditer(region):
        letter = m.group(1)
        rest = region[m.end():]
        if letter == "A" and _ARTICLE_FOLLOW.match(rest) and not _VERB_FOLLOW.match(rest):
            continue
        counts[letter] += 1
        last_seen[letter] = m.start()
    if not counts:
        return None
    return max(counts, key=lambda c: (counts[c], last_seen[c]))


def extract_final_answer(text: str, response: str | None = None, fallback: bool = True) -> Extraction:
    """Cascade on the full text first; when it finds nothing and ``fallback`` is on, the
    letter-frequency fallback on the final answer region (``response`` = post-thinking part, if any)."""
    found = cascade_answer(text)
    if found.letter is not None or not fallback:
        return found
    letter = letter_frequency_answer(text, response)
    return Extraction(letter, "fallback") if letter else Extraction(None, "none")
