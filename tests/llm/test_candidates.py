import math

import numpy as np
import pytest
from scipy.special import softmax

from thinkbias.llm.candidates import candidate_token_ids, normalise, scores_from_logits, scores_from_top_logprobs

VOCAB = {"Yes": 1, " Yes": 2, "yes": 1, "No": 3, " No": 4, "(": 5}


def first(text):
    return VOCAB.get(text)


def test_ids_deduplicated_and_ambiguous_dropped():
    ids = candidate_token_ids(
        {"Yes": ["Yes", " Yes", "yes", "(Y"], "No": ["No", " No", "(N"]},
        lambda t: VOCAB.get(t, VOCAB["("] if t.startswith("(") else None),
    )
    assert ids == {"Yes": (1, 2), "No": (3, 4)}  # "(" shared by both: dropped
    with pytest.raises(ValueError, match="without an unambiguous token"):
        candidate_token_ids({"A": ["(A"], "B": ["(B"]}, lambda t: 5)


def test_scores_from_logits_match_scipy_softmax():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=10) * 3
    p = softmax(logits)
    s = scores_from_logits(logits, {"Yes": (1, 2), "No": (3, 4)})
    raw_yes, raw_no = p[1] + p[2], p[3] + p[4]
    assert s.probs["Yes"] == pytest.approx(raw_yes / (raw_yes + raw_no))
    assert sum(s.probs.values()) == pytest.approx(1.0)
    assert s.outside_mass == pytest.approx(1 - raw_yes - raw_no)


def test_top_logprobs_hand_case():
    top = {" Yes": math.log(0.5), "Yes": math.log(0.1), " No": math.log(0.2), "Maybe": math.log(0.2)}
    s = scores_from_top_logprobs(top, {"Yes": [" Yes", "Yes", " Yes"], "No": [" No", "No"]})
    assert s.probs["Yes"] == pytest.approx(0.6 / 0.8)
    assert s.outside_mass == pytest.approx(0.2)


def test_zero_mass_gives_nan_not_a_guess():
    s = normalise({"Yes": 0.0, "No": 0.0})
    assert math.isnan(s.probs["Yes"]) and s.outside_mass == 1.0
