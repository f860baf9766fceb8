"""The final-answer cascade (Appendix A.2) and the letter-frequency fallback on hand-written responses."""

import pytest

from tests.position.fallback_texts import COMMITTING, LETTERS, committing_cases, negative_cases
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
    assert letter_frequency_answer("Maybe B. Maybe C.") == "C"
    assert letter_frequency_answer("B or C") is None  # a hedge names no choice


def test_fallback_recovers_every_letter_equally():
    """Each committing sentence is recovered with every letter, so recovery is the same per letter."""
    recovered = {letter: 0 for letter in LETTERS}
    for text, letter in committing_cases():
        found = extract_final_answer(text, text)
        assert found.status == "fallback", text
        recovered[letter] += found.letter == letter
    n = len(COMMITTING)
    assert n >= 40
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
