"""The letter-frequency fallback on held-out texts (tests/position/fallback_heldout.yaml): phrasings
its cue lists were not written from. Open possibilities must stay unparsed; a committed answer must
never be read as another letter, and is read for most phrasings, alike for every letter."""

from pathlib import Path

import pytest
import yaml

from tests.position.fallback_texts import LETTERS, fill
from thinkbias.position.extract import cascade_answer, extract_final_answer

HELDOUT = yaml.safe_load((Path(__file__).parent / "fallback_heldout.yaml").read_text(encoding="utf-8"))
# the least share of the held-out committed (revised) phrasings the fallback must read
MIN_COMMITTED, MIN_REVISED = 0.9, 0.8


def heldout_texts() -> list[str]:
    """Every held-out text with every letter."""
    return [fill(t, x) for section in ("committed", "revised", "open") for t in HELDOUT[section] for x in LETTERS]


def _successor(letter: str) -> str:
    return LETTERS[(LETTERS.index(letter) + 1) % 4]


def test_the_file_states_no_cascade_form():
    assert {k: len(v) >= 10 for k, v in HELDOUT.items()} == {"committed": True, "revised": True, "open": True}
    assert [t for t in heldout_texts() if cascade_answer(t).letter is not None] == []


@pytest.mark.parametrize(
    "section, kept, least", [("committed", lambda x: x, MIN_COMMITTED), ("revised", _successor, MIN_REVISED)]
)
def test_committed_answers_are_read_and_never_as_another_letter(section, kept, least):
    read = {x: 0 for x in LETTERS}
    wrong = []
    for template in HELDOUT[section]:
        for x in LETTERS:
            text = fill(template, x)
            found = extract_final_answer(text, text)
            if found.letter is None:
                continue
            if (found.letter, found.status) == (kept(x), "fallback"):
                read[x] += 1
            else:
                wrong.append((text, found))
    assert wrong == []
    n = len(HELDOUT[section])
    assert len(set(read.values())) == 1, read  # the same phrasings are read for every letter
    assert read["A"] >= least * n, f"{read['A']} of {n} held-out {section} phrasings read"


def test_open_possibilities_stay_unparsed():
    answered = [(t, extract_final_answer(t, t)) for x in LETTERS for t in (fill(o, x) for o in HELDOUT["open"])]
    assert [(t, f) for t, f in answered if f.status != "none"] == []
