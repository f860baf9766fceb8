"""Thinking / response split of texts with think tags (Appendix A.4) and what each step then reads."""

import pandas as pd

from thinkbias.position.records import extract_records
from thinkbias.position.think_tags import split_think_tags

THINKING = "Option B looks plausible. I pick B for now, but let me check the units again."
RESPONSE = "I would go for C here."


def _table(texts, answers=None):
    t = pd.DataFrame({"question_id": "q", "permutation": range(len(texts)), "full_text": texts})
    if answers is not None:
        t["answer"] = answers
    return t


def test_split_like_the_workflow_trajectory():
    texts = [
        f"<think>\n{THINKING}\n</think>\n\n{RESPONSE}",  # both tags
        f"{THINKING}\n</think>\n\n{RESPONSE}",  # the prompt opened the block
        f"<think>\n{THINKING}",  # cut off inside the trace
        RESPONSE,
    ]  # no tags: all response
    out = split_think_tags(_table(texts))
    joined = f"{THINKING}\n\n{RESPONSE}"
    assert out["full_text"].tolist() == [joined, joined, THINKING, RESPONSE]
    assert out["answer"].tolist() == [RESPONSE, RESPONSE, "", None]


def test_a_given_response_column_is_kept():
    out = split_think_tags(_table([f"<think>{THINKING}</think>{RESPONSE}"], ["Final: C"]))
    assert out["answer"].tolist() == ["Final: C"] and out["full_text"].iloc[0] == f"{THINKING}\n\n{RESPONSE}"


def test_each_step_reads_its_part():
    text = f"<think>\n{THINKING}\n</think>\n\n{RESPONSE}"
    unsplit = extract_records(_table([text]))
    split = extract_records(split_think_tags(_table([text])))
    # the fallback reads the response: C, not the B the trace leaned to (the unsplit region holds both)
    assert unsplit["final_answer"].iloc[0] == "B"
    assert split["final_answer"].iloc[0] == "C" and split["extraction_status"].iloc[0] == "fallback"
    # trajectory and length are over thinking + response, tags removed
    assert split["length_chars"].iloc[0] == len(THINKING) + 2 + len(RESPONSE)
    assert split["n_mentions"].iloc[0] == unsplit["n_mentions"].iloc[0] >= 2
