"""Which responses a stage still needs, request seeds, the long-to-wide pair tables, and the token
line of model jobs with nothing to run."""

import logging

import numpy as np
import pandas as pd

from thinkbias.blindspot.calls import (
    needed_responses,
    pairs_from_responses,
    run_targets,
    target_requests,
    verdict_pairs,
)
from thinkbias.llm.roles import ModelRole, request_seed, run_role

VARIATIONS = pd.DataFrame(
    {
        "concept_id": ["a", "a", "a", "b"],
        "input_id": ["x1", "x2", "x3", "x1"],
        "positive": ["p1", "p2", "p3", "q1"],
        "negative": ["n1", "n2", "n3", "m1"],
        "valid": [True, True, False, True],
        "method": "rule",
    }
)


def test_needed_responses_skip_invalid_pairs_inactive_concepts_and_earlier_answers():
    need = needed_responses(["x1", "x2", "x3"], ["a"], VARIATIONS, None)
    assert list(zip(need["input_id"], need["side"], need["text"])) == [
        ("x1", "pos", "p1"),
        ("x1", "neg", "n1"),
        ("x2", "pos", "p2"),
        ("x2", "neg", "n2"),
    ]
    previous = need.iloc[:2].assign(stage_added=0)
    again = needed_responses(["x1", "x2", "x3"], ["a"], VARIATIONS, previous)
    assert again["input_id"].tolist() == ["x2", "x2"]


def test_request_seeds_are_stable_and_distinct():
    assert request_seed(1, "a", "x1", "pos") == request_seed(1, "a", "x1", "pos")
    assert request_seed(1, "a", "x1", "pos") != request_seed(1, "a", "x1", "neg")
    need = needed_responses(["x1"], ["a"], VARIATIONS, None)
    target = ModelRole(model="m", registry="r", cache_dir="c", seed=7, temperature=0.7, top_p=0.95, max_tokens=64)
    reqs = target_requests(need, "Decide: $application", "", target)
    assert reqs[0].messages == (("user", "Decide: p1"),) and reqs[0].sampling.temperature == 0.7
    assert reqs[0].sampling.seed == request_seed(7, "a", "x1", "pos") and reqs[0].sampling.top_p == 0.95
    assert reqs[0].sampling.seed != reqs[1].sampling.seed


def test_pairs_and_verdicts_long_to_wide():
    resp = pd.DataFrame(
        {
            "concept_id": ["a"] * 4,
            "input_id": ["x1", "x1", "x2", "x2"],
            "side": ["pos", "neg", "pos", "neg"],
            "decision": [1.0, 0.0, np.nan, 1.0],
        }
    )
    pairs = pairs_from_responses(resp).set_index("input_id")
    assert pairs.loc["x1", "y_pos"] == 1 and pairs.loc["x1", "y_neg"] == 0
    assert np.isnan(pairs.loc["x2", "y_pos"]) and pairs.loc["x2", "y_neg"] == 1
    v = pd.DataFrame(
        {"concept_id": ["a", "a"], "input_id": ["x1", "x1"], "side": ["pos", "neg"], "verbalized": [True, None]}
    )
    w = verdict_pairs(v).iloc[0]
    assert bool(w["verbalized_pos"]) and pd.isna(w["verbalized_neg"])


def test_model_jobs_with_nothing_to_run_report_zero_generated_tokens(caplog):
    logger = logging.getLogger("thinkbias.test")
    with caplog.at_level(logging.INFO, logger="thinkbias.test"):
        role = ModelRole(model="smollm2-135m", registry="config/models.yaml", cache_dir="cache", seed=1)
        assert run_role(role, [], logger) == []
        assert run_targets(role, [], "loan", True, logger).empty
    closing = [r.message for r in caplog.records if "generated_tokens" in r.message]
    assert closing == ["generate: finished, generated_tokens=0 cached=0 retries=0 retry_wait_s=0.0"] * 2
