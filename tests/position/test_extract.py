"""The final-answer cascade (Appendix A.2) and the letter-frequency fallback on hand-written responses."""

import itertools
import re

import pytest

from tests.position.fallback_texts import (
    COMMITTING,
    LETTERS,
    committing_cases,
    negative_cases,
    open_cases,
    revised_cases,
)
from tests.position.test_fallback_heldout import heldout_texts
from thinkbias.position.extract import cascade_answer, extract_final_answer, letter_frequency_answer

CASES = [
    # (text, letter, status)
    ("Let me think. B looks odd. The answer is (C).", "C", "cascade:answer_is"),
    ("the answer is D", "D", "cascade:answer_is"),
    ("The answer is: A because...", "A", "cascade:answer_is"),
    ("所以 The answer is\uff1aB", "B", "cascade:answer_is"),
    ("The answer is (A). Wait, no. The answer is (D).", "D", "cascade:answer_is"),
    ("**Answer:** B", "B", "cascade:answer_colon"),
    ("Answer: (C)", "C", "cascade:answer_colon"),
    ("答案 Answer\uff1aD", "D", "cascade:answer_colon"),
    ("so the final is \\boxed{A}", "A", "cascade:boxed"),
    ("After all that, I pick\nC.", "C", "cascade:terminal_letter"),
    ("Final choice:\nB\n\n", "B", "cascade:terminal_letter"),
    # pattern order: "The answer is" wins over a later box
    ("The answer is (B). \\boxed{C}", "B", "cascade:answer_is"),
    # lower-case letters are not options
    ("the answer is e", None, "none"),
    ("I do not know.", None, "none"),
    ("", None, "none"),
]


@pytest.mark.parametrize("text,letter,status", CASES)
def test_cascade(text, letter, status):
    found = extract_final_answer(text, fallback=False)
    assert (found.letter, found.status) == (letter, status)


def test_fallback_counts_standalone_letters_in_the_response():
    text = "thinking about B and B and B ...\n\nMy pick is C, since C fits; also D? No, C for sure."
    response = "My pick is C, since C fits; also D? No, C for sure."
    found = extract_final_answer(text, response)
    assert (found.letter, found.status) == ("C", "fallback")


def test_fallback_ignores_article_a_and_words():
    assert letter_frequency_answer("A cat sat. A dog ran. Then I go with B") == "B"
    assert letter_frequency_answer("A is right, surely") == "A"
    assert letter_frequency_answer("ABC DEF") is None


def test_fallback_tie_goes_to_latest():
    assert letter_frequency_answer("I pick B. On second thought I pick C.") == "C"
    assert letter_frequency_answer("Option B fits, and so does option D, see above") == "D"


@pytest.mark.parametrize(
    "text, before, now",
    [
        ("It could be A or B, I really can't tell.", "A", None),
        ("Maybe A, maybe B, maybe neither.", "B", None),
        ("I conclude B is correct.", None, "B"),
    ],
)
def test_hedges_stay_unparsed_and_a_conclusion_is_read(text, before, now):
    """Two letters left open give nothing (before: the first or the latest); "I conclude B" is read."""
    assert cascade_answer(text).letter is None
    found = extract_final_answer(text, text)
    assert found.letter == now and found.status == ("fallback" if now else "none")
    assert found.letter != before


def test_open_possibilities_stay_unparsed():
    answered = [t for t in open_cases() if extract_final_answer(t, t).status != "none"]
    assert answered == []
    assert letter_frequency_answer("B or C") is None and letter_frequency_answer("maybe B or so") == "B"


def test_revised_texts_read_the_letter_kept():
    got = [(t, extract_final_answer(t, t)) for t, _ in revised_cases()]
    assert [(f.letter, f.status) for _, f in got] == [(letter, "fallback") for _, letter in revised_cases()]


def test_fallback_recovers_every_letter_equally():
    """Each committing sentence is recovered with every letter, so recovery is the same per letter."""
    recovered = {letter: 0 for letter in LETTERS}
    for text, letter in committing_cases():
        found = extract_final_answer(text, text)
        assert found.status == "fallback", text
        recovered[letter] += found.letter == letter
    n = len(COMMITTING)
    assert n >= 70
    assert recovered == {letter: n for letter in LETTERS}


@pytest.mark.parametrize("text", negative_cases())
def test_fallback_leaves_restatements_names_and_rejections_unparsed(text):
    assert extract_final_answer(text, text).status == "none"


def test_fallback_reads_an_answer_beside_a_restatement():
    text = "A. 12 metres\nB. 15 metres\nC. 18 metres\nD. 21 metres\nI'd go with C here."
    assert letter_frequency_answer(text) == "C"
    assert letter_frequency_answer("The correct answer is B) Paris") == "B"


def test_fallback_region_is_last_400_chars_without_response():
    text = "D " * 300 + "x" * 400
    assert cascade_answer(text).letter is None
    assert letter_frequency_answer(text) is None
    assert extract_final_answer(text).status == "none"


def test_fallback_can_be_disabled():
    assert extract_final_answer("maybe B or so", fallback=False).letter is None
    assert extract_final_answer("maybe B or so").letter == "B"


_STANDALONE = re.compile(r"(?<![^\W\d_])[A-D](?![^\W\d_])")


def relabelled(text: str, mapping: dict[str, str]) -> str:
    """``text`` with every letter A-D that is not part of a word replaced by ``mapping``."""
    return _STANDALONE.sub(lambda m: mapping[m.group(0)], text)


def every_text() -> list[str]:
    texts = [t for t, _ in committing_cases()] + negative_cases() + open_cases() + [t for t, _ in revised_cases()]
    return texts + [t for t, _, _ in CASES] + heldout_texts()


def test_every_relabelling_of_the_letters_relabels_the_answer():
    """All 24 relabellings of A-D, on every text of the tests: the answer is the relabelled answer
    (or none for both), with the same status."""
    texts = every_text()
    assert len(texts) > 800
    broken = []
    for order in itertools.permutations(LETTERS):
        mapping = dict(zip(LETTERS, order))
        for text in texts:
            plain, moved = extract_final_answer(text, text), extract_final_answer(*[relabelled(text, mapping)] * 2)
            expected = mapping[plain.letter] if plain.letter else None
            if (moved.letter, moved.status) != (expected, plain.status):
                broken.append((order, text, plain, moved))
    assert broken == []
