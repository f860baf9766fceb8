"""Trajectory of letter commitments, Commitment Change Point and effective switching
(paper Section 3.3, Eq. 2, and Appendix A.3).

A trajectory is the ordered list of (letter, char position, normalised position) at which the text
commits to an option, found by nine patterns. The paper calls the patterns case-insensitive; we
apply case-insensitivity to their *words* only and keep the option letter upper-case, because a
case-insensitive ``[A-D]`` would read every article "a" and every "(c)" as a commitment. The char
position is that of the letter itself; "so" must start a word (otherwise "also B" would count);
matches of several patterns at one position count once;
the normalised position is char position / text length.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

TRAJECTORY_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("option", re.compile(r"(?i:option)\s+([A-D])\b")),
    ("answer_choice_select", re.compile(r"(?i:answer|choice|select)\s*(?:(?i:is)|[:\uFF1A])?\s*[(]?([A-D])\b")),
    ("parenthesised", re.compile(r"\(([A-D])\)")),
    ("letter_period", re.compile(r"\b([A-D])\.\s")),
    ("is_correct", re.compile(r"\b([A-D])\s+(?i:is|seems?|looks?|appears?)\s+(?i:correct|right|better|more)")),
    ("choose_pick_lean", re.compile(r"(?i:choose|pick|go\s+with|lean\w*\s+(?:towards?|to))\s+[(]?([A-D])\b")),
    ("so_its", re.compile(r"\b(?i:so)\s+(?:(?i:it[’']?s|the\s+answer\s+is))?\s*[(]?([A-D])\b")),
    ("i_think", re.compile(r"(?i:i\s+(?:think|believe))\s+.*\b([A-D])\b")),
    ("boxed", re.compile(r"\\boxed\{([A-D])\}")),
)


@dataclass(frozen=True)
class Mention:
    """One commitment to an option letter."""

    letter: str
    char_pos: int
    norm_pos: float
    pattern: str


def extract_trajectory(text: str) -> list[Mention]:
    """All commitments in ``text`` in order of appearance (Appendix A.3), one per char position."""
    n = len(text)
    if n == 0:
        return []
    by_pos: dict[int, Mention] = {}
    for name, pattern in TRAJECTORY_PATTERNS:
        for m in pattern.finditer(text):
            pos = m.start(1)
            if pos not in by_pos:
                by_pos[pos] = Mention(m.group(1), pos, pos / n, name)
    return [by_pos[p] for p in sorted(by_pos)]


CCP_DEFINITIONS = ("a3", "eq2")


def commitment_change_point(
    letters: list[str], positions: list[float], final: str | None, definition: str = "a3"
) -> float:
    """CCP of one trajectory. The paper gives two readings that disagree (NaN = not detectable):

    | trajectory | ``a3`` (Appendix A.3 formula, default) | ``eq2`` (Eq. 2) |
    |---|---|---|
    | every mention equals the final answer | 0 | the first mention's position |
    | otherwise, last differing mention i* not last | position of mention i* + 1 | the same |
    | the last mention differs from the final answer | NaN | 1.0 (commits only at the end) |
    | no mention | NaN | 1.0 |
    | no final answer | NaN | NaN |

    ``eq2`` reads Eq. 2, CCP = (1/T) min{t : a(t') = a(T) for all t' >= t}, with a(t) the latest
    mention at or before t (no answer before the first mention) and a(T) the final answer.
    """
    if definition not in CCP_DEFINITIONS:
        raise ValueError(f"unknown CCP definition '{definition}' (expected one of {', '.join(CCP_DEFINITIONS)})")
    if final is None:
        return math.nan
    if not letters:
        return 1.0 if definition == "eq2" else math.nan
    differing = [i for i, letter in enumerate(letters) if letter != final]
    if not differing:
        return 0.0 if definition == "a3" else float(positions[0])
    last = differing[-1]
    if last + 1 >= len(letters):
        return 1.0 if definition == "eq2" else math.nan
    return float(positions[last + 1])


def count_switches(letters: list[str]) -> int:
    """Transitions l_i -> l_{i+1} with l_i != l_{i+1} along the trajectory."""
    return sum(1 for a, b in zip(letters, letters[1:]) if a != b)


def effective_switching(letters: list[str], text_length: int) -> tuple[float, float]:
    """Eff-Sw under both normalisations: (switches per mention, switches per 1,000 characters).

    Per mention: switches / number of mentions (NaN without mentions). Per 1,000 characters:
    1000 * switches / text length (NaN for an empty text).
    """
    switches = count_switches(letters)
    per_mention = switches / len(letters) if letters else math.nan
    per_kchar = 1000.0 * switches / text_length if text_length > 0 else math.nan
    return per_mention, per_kchar
