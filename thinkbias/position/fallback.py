"""Letter-frequency fallback of the final-answer extraction (the paper names one, Appendix A.2 and
Section 4, but does not define it).

It runs only when the four-pattern cascade finds nothing, on the *final answer region*: the response
after the thinking trace when the record has one (non-empty), else the last ``FALLBACK_REGION_CHARS``
characters of the text. There it reads every option letter A-D the text names, sorts each into a
*choice*, a *possibility* or a *mention*, and answers with the most frequent choice (ties: the
latest) - unless the text leaves two or more letters open. Every rule looks only at the letter's
context, never at the letter itself, so the same sentence with A, B, C or D is read the same way (a
position-bias study cannot have an extractor that prefers or loses one position). The cue words are
data: resources/position/fallback_cues.yaml (:mod:`thinkbias.position.fallback_cues`).

A capital letter A-D is skipped when

1. it is part of a word or token (``A12``, ``B's``, ``C-level``, ``C++``, ``A/B``);
2. it labels an option in a restatement of the options: the region has option labels (``B. text``,
   ``B) text``, ``(B) text``, ``B: text``) of two or more different letters, and all such labels
   are then ignored;
3. it is part of a name or term, or excluded: the words right before it (same line, spaces only,
   optional ``**``, ``(`` or a quote between) end in none of the cue lists ("Vitamin D",
   "Hepatitis B", "type A", "Plan B"), or in a negation ("not C", "neither D", "except A");
4. it opens a sentence (start of region, after ``. ! ? :`` or a line break) and a lower-case word
   follows that is neither a ``sentence_start_followers`` word nor the start of a
   ``possibility_after`` phrase: the article reading ("A cat sat");
5. the text rejects it: "B is (clearly) wrong / not / incorrect", "B can be ruled out",
   "B does not apply".

The others are read by the words right before them: ``choice_before`` ("go with B", "I conclude C",
"option D", "is A") makes a choice, ``possibility_before`` ("maybe B", "could be C") a possibility,
``mention_before`` ("and C", "rather than D") a mention; a letter with nothing before it (it opens
a sentence, or follows punctuation) is a choice. ``possibility_after`` ("C could be right", "D is
just as likely") makes any of them a possibility. Letters joined by *or* / *and* ("B or C",
"A, B or D", "between C and D") are each a possibility, whatever comes before the first (unless
that is a name or a negation: "type A or B", "neither B nor C").

Then: without a choice, a possibility is the answer when it is the only letter named ("maybe B");
two or more letters named without a choice ("It could be A or B", "Maybe A, maybe B, maybe
neither") give nothing. With a choice, the answer is the most frequent choice, ties to the latest;
but when two or more letters are named and, after the last choice, the text names a possibility of
another letter or says it cannot decide (``uncertainty``: "not sure", "just as likely"; or an
``uncertainty_openers`` word before an ``uncertainty_verbs`` one: "I can't tell", "hard to decide"),
it gives nothing.

And it abstains altogether when the region states a final answer that is not an option
("The answer is (F)", "Answer: E"): the model answered, just not with an option.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from thinkbias.position.fallback_cues import FallbackCues, load_cues

FALLBACK_REGION_CHARS = 400

CHOICE, POSSIBILITY, MENTION = "choice", "possibility", "mention"
# cue list -> how a letter after it is read ("negation": skipped)
BEFORE_KINDS = {
    "choice_before": CHOICE,
    "possibility_before": POSSIBILITY,
    "mention_before": MENTION,
    "negation_before": "negation",
}

_TOKEN_EDGE = r"\w'’\-/+#"
_LETTER = re.compile(rf"(?<![{_TOKEN_EDGE}])([A-D])(?![{_TOKEN_EDGE}])")
_LABEL = re.compile(r"(?:^|(?<=[\s,;:]))(?:\(([A-D])\)|([A-D])[.):])(?=[ \t]+\S)", re.MULTILINE)
_MARKUP = r"(?:\*\*|[(\"“'‘])?"
_WORDS_BEFORE = re.compile(rf"(?<![\w'’])([^\W\d_][\w'’]*(?:[ \t]+[^\W\d_][\w'’]*){{0,3}})[ \t]+{_MARKUP}[ \t]*$")
_SENTENCE_END = re.compile(rf"[.!?:\n][ \t]*{_MARKUP}[ \t]*$")
_ONLY_MARKUP = re.compile(rf"[ \t]*{_MARKUP}[ \t]*")
_WORD_AFTER = re.compile(r"[*)\]\"”’']*[ \t]+([a-z][\w'’]*)")
_GROUP_TOKEN = rf"(?:\*\*)?[(\[]?(?<![{_TOKEN_EDGE}])[A-D](?![{_TOKEN_EDGE}])[)\]]?(?:\*\*)?"
_GROUP_SEP = r"[ \t]*,[ \t]*"
_GROUP_CONJ = r"[ \t]*,?[ \t]+(?:and/or|or|and|nor|&)[ \t]+"
_GROUP = re.compile(
    rf"{_GROUP_TOKEN}(?:{_GROUP_SEP}{_GROUP_TOKEN})*{_GROUP_CONJ}{_GROUP_TOKEN}"
    rf"(?:(?:{_GROUP_SEP}|{_GROUP_CONJ}){_GROUP_TOKEN})*"
)
_NON_OPTION_ANSWER = re.compile(r"(?i:\banswer)\s*(?:(?i:is)|[:\uFF1A])\s*[(\[]?\s*(?:\*\*)?\s*([E-HJ-Z])(?![\w'’])")


@dataclass(frozen=True)
class Mention:
    """One option letter the region names: its character position, the letter, and how it is read
    (``choice``, ``possibility`` or ``mention``)."""

    pos: int
    letter: str
    kind: str


def _phrase_pattern(phrases: tuple[tuple[str, ...], ...], tail: str = "") -> str:
    """Alternation of ``phrases`` (words joined by spaces, apostrophes as ' or ’), longest first."""
    out = []
    for words in sorted(phrases, key=lambda p: (-len(" ".join(p)), p)):
        out.append(r"[ \t]+".join(re.escape(w).replace("'", "['’]") for w in words))
    return "(?:" + "|".join(out) + ")" + tail


@dataclass(frozen=True)
class _Compiled:
    """The cue lists as the lookups and patterns the rules use."""

    before: dict[tuple[str, ...], str]
    max_before: int
    followers: frozenset[str]
    possibility_after: re.Pattern[str]
    rejected_after: re.Pattern[str]
    uncertainty: re.Pattern[str]


@lru_cache(maxsize=8)
def _compile(cues: FallbackCues) -> _Compiled:
    before: dict[tuple[str, ...], str] = {}
    for key, kind in BEFORE_KINDS.items():
        for phrase in cues.phrases(key):
            before.setdefault(phrase, kind)
    close = r"[*)\]\"”’']*\s+"
    rejected = (
        rf"{close}(?:"
        rf"{_phrase_pattern(cues.phrases('rejection_copulas'))}\s+(?:\w+ly\s+)?"
        rf"{_phrase_pattern(cues.phrases('rejection_verdicts'))}\b"
        rf"|{_phrase_pattern(cues.phrases('rejection_modals'))}\s+(?:\w+ly\s+)?(?:be\s+)?"
        rf"{_phrase_pattern(cues.phrases('rejection_participles'))}\b"
        rf"|{_phrase_pattern(cues.phrases('rejection_negations'))}(?![\w'’]))"
    )
    return _Compiled(
        before=before,
        max_before=max(len(p) for p in before),
        followers=cues.words("sentence_start_followers"),
        possibility_after=re.compile(
            rf"{close}{_phrase_pattern(cues.phrases('possibility_after'))}(?![\w'’])", re.IGNORECASE
        ),
        rejected_after=re.compile(rejected, re.IGNORECASE),
        uncertainty=re.compile(
            rf"(?<![\w'’])(?:{_phrase_pattern(cues.phrases('uncertainty'))}"
            rf"|{_phrase_pattern(cues.phrases('uncertainty_openers'))}\s+(?:\w+ly\s+)?"
            rf"{_phrase_pattern(cues.phrases('uncertainty_verbs'))})(?![\w'’])",
            re.IGNORECASE,
        ),
    )


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


def before_kind(region: str, pos: int, compiled: _Compiled) -> str | None:
    """How the words right before the letter at ``pos`` read it: a ``BEFORE_KINDS`` value for the
    longest cue phrase they end in, ``"name"`` when they end in none, None when no word is there."""
    found = _WORDS_BEFORE.search(region[max(0, pos - 80) : pos])
    if not found:
        return None
    words = tuple(w.lower().replace("’", "'") for w in found.group(1).split())
    for n in range(min(len(words), compiled.max_before), 0, -1):
        kind = compiled.before.get(words[-n:])
        if kind is not None:
            return kind
    return "name"


def _is_article(region: str, pos: int, compiled: _Compiled) -> bool:
    """Rule 4: the letter opens a sentence and a lower-case word comes next that is neither a follower
    nor the start of a possibility (``possibility_after``)."""
    start = max(0, pos - 60)
    before = region[start:pos]
    opens = bool(_SENTENCE_END.search(before)) or (start == 0 and _ONLY_MARKUP.fullmatch(before) is not None)
    if not opens:
        return False
    after = region[pos + 1 :]
    follower = _WORD_AFTER.match(after)
    return (
        bool(follower) and follower.group(1) not in compiled.followers and not compiled.possibility_after.match(after)
    )


def _letter_kind(region: str, pos: int, compiled: _Compiled) -> str | None:
    """How the standalone letter at ``pos`` (not a restatement label, not in a group) is read; None
    when it is skipped (rules 3-5)."""
    kind = before_kind(region, pos, compiled)
    if kind in ("name", "negation"):
        return None
    if kind is None:
        if _is_article(region, pos, compiled):
            return None
        kind = CHOICE
    return kind


def _group_mentions(region: str, labels: set[int], compiled: _Compiled) -> dict[int, str | None]:
    """Letters joined by or / and: position -> ``possibility``, or None for a group of names or a
    negated group (every letter of the group alike)."""
    out: dict[int, str | None] = {}
    for group in _GROUP.finditer(region):
        positions = [group.start() + m.start(1) for m in _LETTER.finditer(group.group(0))]
        if any(p in labels for p in positions):
            continue
        kind = before_kind(region, positions[0], compiled)
        for p in positions:
            out[p] = None if kind in ("name", "negation") else POSSIBILITY
    return out


def letter_mentions(region: str, cues: FallbackCues | None = None) -> list[Mention]:
    """Every option letter the region names, in order, with how it is read (module docstring)."""
    compiled = _compile(cues or load_cues())
    labels = restatement_labels(region)
    grouped = _group_mentions(region, labels, compiled)
    mentions = []
    for m in _LETTER.finditer(region):
        pos = m.start(1)
        if pos in labels:
            continue
        kind = grouped[pos] if pos in grouped else _letter_kind(region, pos, compiled)
        after = region[pos + 1 :]
        if kind is None or compiled.rejected_after.match(after):
            continue
        if compiled.possibility_after.match(after):
            kind = POSSIBILITY
        mentions.append(Mention(pos, m.group(1), kind))
    return mentions


def decide(mentions: list[Mention], uncertain_at: list[int]) -> str | None:
    """The answer the mentions give (module docstring); ``uncertain_at``: positions where the text
    says it cannot decide."""
    named = {m.letter for m in mentions}
    choices = [m for m in mentions if m.kind == CHOICE]
    if not choices:
        possible = {m.letter for m in mentions if m.kind == POSSIBILITY}
        return next(iter(possible)) if len(named) == 1 and possible else None
    counts = Counter(m.letter for m in choices)
    last_seen = {m.letter: m.pos for m in choices}
    answer = max(counts, key=lambda c: (counts[c], last_seen[c]))
    if len(named) >= 2:
        last = max(m.pos for m in choices)
        if any(u > last for u in uncertain_at):
            return None
        if any(m.pos > last and m.kind == POSSIBILITY and m.letter != answer for m in mentions):
            return None
    return answer


def letter_frequency_answer(text: str, response: str | None = None, cues: FallbackCues | None = None) -> str | None:
    """The option letter the final answer region commits to (most frequent choice, ties: latest);
    None when it names none, leaves two or more open, or states an answer that is not an option."""
    region = final_answer_region(text, response)
    if _NON_OPTION_ANSWER.search(region):
        return None
    cues = cues or load_cues()
    uncertain_at = [m.start() for m in _compile(cues).uncertainty.finditer(region)]
    return decide(letter_mentions(region, cues), uncertain_at)
