"""Letter-frequency fallback of the final-answer extraction (the paper names one, Appendix A.2 and
Section 4, but does not define it).

It runs only when the four-pattern cascade finds nothing, on the *final answer region*: the response
after the thinking trace when the record has one (non-empty), else the last ``FALLBACK_REGION_CHARS``
characters of the text. There it counts the option letters A-D that the text *names as a choice* and
returns the most frequent (ties: the latest). Every rule looks only at the letter's context, never at
the letter itself, so the same sentence with A, B, C or D is read the same way (a position-bias study
cannot have an extractor that prefers or loses one position). A capital letter A-D counts unless:

1. it is part of a word or token (``A12``, ``B's``, ``C-level``, ``C++``, ``A/B``);
2. it labels an option in a restatement of the options: the region has option labels (``B. text``,
   ``B) text``, ``(B) text``, ``B: text``) of two or more different letters, and all such labels
   are then ignored;
3. it is part of a name or term: the word right before it (same line, spaces only, optional ``**``,
   ``(`` or a quote between) is not one of ``CUE_WORDS`` - so "Vitamin D", "Hepatitis B",
   "type A", "Plan B", "not C", "and D" never count, while "option D", "go with B", "is C" do;
4. it opens a sentence (start of region, after ``. ! ? :`` or a line break) and a lower-case word
   follows that is not one of ``ASSESSMENT_VERBS``: the article reading ("A cat sat") - applied to
   every letter alike;
5. the text rejects it: "B is (clearly) wrong / not / incorrect", "B can be ruled out",
   "B does not apply".

And it abstains altogether when the region states a final answer that is not an option
("The answer is (F)", "Answer: E"): the model answered, just not with an option.
"""

from __future__ import annotations

import re
from collections import Counter

FALLBACK_REGION_CHARS = 400

CUE_WORDS = frozenset(
    """
option options choice answer letter response pick picked picking choose chose choosing select selected selecting
is be it's it’s its so then hence thus therefore clearly only leaves with for to toward towards
say think believe guess probably likely maybe perhaps definitely surely obviously
confirms suggests indicates supports favours favors prefer prefers means
""".split()
)

ASSESSMENT_VERBS = frozenset(
    """
is seems seem looks appears would could should must might remains fits matches satisfies follows describes
corresponds works holds has wins
""".split()
)

_LETTER = re.compile(r"(?<![\w'’\-/+#])([A-D])(?![\w'’\-/+#])")
_LABEL = re.compile(r"(?:^|(?<=[\s,;:]))(?:\(([A-D])\)|([A-D])[.):])(?=[ \t]+\S)", re.MULTILINE)
_WORD_BEFORE = re.compile(r"([^\W\d_][\w'’]*)[ \t]+(?:\*\*|[(\"“'‘])?[ \t]*$")
_SENTENCE_END = re.compile(r"[.!?:\n][ \t]*(?:\*\*|[(\"“'‘])?[ \t]*$")
_ONLY_MARKUP = re.compile(r"[ \t]*(?:\*\*|[(\"“'‘])?[ \t]*")
_WORD_AFTER = re.compile(r"[*)\]\"”’']*[ \t]+([a-z][\w'’]*)")
_REJECTED_AFTER = re.compile(
    r"[*)\]\"”’']*\s+(?:"
    r"(?:is|was|seems|looks|appears)\s+(?:\w+ly\s+)?(?:not\b|wrong|incorrect|false|invalid|impossible|out\b|ruled|eliminated|excluded)"
    r"|(?:can|could|should|must|may)\s+(?:\w+ly\s+)?(?:be\s+)?(?:ruled|eliminated|excluded|discarded|rejected|dismissed)"
    r"|(?:does|do|did)\s+not\b|(?:isn|doesn|can)[’']t\b|cannot\b)",
    re.IGNORECASE,
)
_NON_OPTION_ANSWER = re.compile(r"(?i:\banswer)\s*(?:(?i:is)|[:\uFF1A])\s*[(\[]?\s*(?:\*\*)?\s*([E-HJ-Z])(?![\w'’])")


def final_answer_region(text: str, response: str | None = None) -> str:
    """The part of a trajectory that states the final answer (see the module docstring)."""
    if response and response.strip():
        return response
    return text[-FALLBACK_REGION_CHARS:]


def restatement_labels(region: str) -> set[int]:
    """Character positions of option labels when the region restates two or more options."""
    labels = [(m.start(1) if m.group(1) else m.start(2), m.group(1) or m.group(2)) for m in _LABEL.finditer(region)]
    if len({letter for _, letter in labels}) < 2:
        return set()
    return {pos for pos, _ in labels}


def names_a_choice(region: str, pos: int) -> bool:
    """Whether the letter at ``pos`` (already standalone, not a restatement label) names a choice:
    rules 3-5 of the module docstring."""
    start = max(0, pos - 60)
    before, after = region[start:pos], region[pos + 1 :]
    word = _WORD_BEFORE.search(before)
    if word and word.group(1).lower() not in CUE_WORDS:
        return False
    opens_sentence = bool(_SENTENCE_END.search(before)) or (start == 0 and _ONLY_MARKUP.fullmatch(before) is not None)
    if not word and opens_sentence:
        follower = _WORD_AFTER.match(after)
        if follower and follower.group(1) not in ASSESSMENT_VERBS:
            return False
    return not _REJECTED_AFTER.match(after)


def letter_frequency_answer(text: str, response: str | None = None) -> str | None:
    """Most frequent option letter named as a choice in the final answer region (ties: latest);
    None when there is none or the region states an answer that is not an option."""
    region = final_answer_region(text, response)
    if _NON_OPTION_ANSWER.search(region):
        return None
    labels = restatement_labels(region)
    counts: Counter[str] = Counter()
    last_seen: dict[str, int] = {}
    for m in _LETTER.finditer(region):
        pos = m.start(1)
        if pos in labels or not names_a_choice(region, pos):
            continue
        counts[m.group(1)] += 1
        last_seen[m.group(1)] = pos
    if not counts:
        return None
    return max(counts, key=lambda c: (counts[c], last_seen[c]))
