"""The requests of the blindspot model steps, built from their model roles, are the ones the study
built before the roles existed: same prompt text, seed, temperature, top-p, max_tokens and schema,
so the request cache keys (and every cached result) still match.

The expected keys were produced by running the step scripts as they were before the roles
(scripts/blindspot/{rewrite,hypothesize,dedup,variations,quality}.py and the old
``thinkbias.blindspot.calls.run_judge`` signature) on the fixtures below, capturing each request
they sent and hashing it with ``request_key``; they were not written by hand.
"""

import hashlib
import json
import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from thinkbias.blindspot.calls import run_judge
from thinkbias.blindspot.clusters import cluster_inputs
from thinkbias.blindspot.concepts import concepts_table, curated_concepts, dedup_pairs, deduplicate
from thinkbias.blindspot.step_requests import (
    dedup_requests,
    hypothesis_requests,
    quality_requests,
    rewrite_requests,
    variation_requests,
)
from thinkbias.blindspot.variations import quality_sample
from thinkbias.llm.roles import ModelRole
from thinkbias.llm.types import Generation

REPO = Path(__file__).resolve().parents[2]
PROMPTS = REPO / "resources/blindspot/prompts"
SEED = 11
GENERATED = [
    {
        "title": "Older applicant — age",
        "verbalization_check_guide": "Mentions age.",
        "addition_action": "Say the applicant is 61.",
        "removal_action": "Drop the age.",
        "keywords": ["age", "older"],
    },
    {
        "title": "Rural address — residence",
        "verbalization_check_guide": "Mentions where they live.",
        "addition_action": "Add a rural address.",
        "removal_action": "Drop the address.",
    },
]
# recorded from the pre-role scripts (see the module docstring)
EXPECTED = {
    "rewrite": [
        "707bc621576286eb",
        "454e6a0706bc3654",
        "c5ef6796b76ea552",
        "b492db9ee73df61b",
        "c6e2b5b8180ee949",
        "ae51b8f3a267e09d",
    ],
    "hypothesis": ["1b5b4d309dcb9ab9", "50dd7b86ae6cafcd", "10bbc9a69ae91dbd"],
    "dedup": ["09211fdefde8d4bd", "ba2565f07bea225c", "96198ee22294e79f", "c16b61b89aaac344", "9d2e7ae4cd940054"],
    "variations": [
        "280f62d7a3202241",
        "6cc1e65b77208fc8",
        "d22f935284e26088",
        "ba78b7725b8063b2",
        "6cd6bb50f3f45a82",
        "39351272558f57cf",
        "b07ab65ddd74d2f8",
        "ac2e8e8cb80f3a95",
        "8ac8dad775c455b0",
        "73589447d6b2f997",
        "5daecfeb173833d9",
        "2f66082fd503292f",
    ],
    "quality": [
        "07f74b2f11d3e3ac",
        "3b779093b441edad",
        "39969c5beba14872",
        "16dc011fbed29c96",
        "96ef4256b406578c",
        "1b785b9221127069",
        "b53fb9d0028a81a8",
        "2112dc3da5977005",
        "e02a20324e8b2ebb",
        "4dedd57d74414137",
        "685b7fa5efdb81f9",
        "0b9a19ee6e8a0f8a",
    ],
    "verbalization": [
        "4d124ad7c5a034cf",
        "324bd37d85ca96ad",
        "e0cdf8ad0469766c",
        "67694f151cf10c26",
        "150eca84397816ec",
        "635b79f5ac1544b3",
        "436d3a8b5e41ee16",
        "07e42c25590f888e",
    ],
}


def request_key(req) -> str:
    """What the cache keys a request by (messages, prefill, sampling incl. seed and schema), hashed."""
    return hashlib.sha256(json.dumps([req.messages, req.prefill, req.sampling.key()]).encode()).hexdigest()[:16]


def role(temperature: float, max_tokens: int, constrained: bool) -> ModelRole:
    return ModelRole(
        model="smollm2-135m",
        registry="config/models.yaml",
        cache_dir="cache",
        seed=SEED,
        temperature=temperature,
        max_tokens=max_tokens,
        constrained=constrained,
    )


@pytest.fixture(scope="module")
def frames():
    inputs = pd.DataFrame(
        {
            "input_id": [f"x{i}" for i in range(6)],
            "text": [
                f"I ask for a loan of {1000 * (i + 1)} dollars to fix my roof.\nIncome {30 + i}k." for i in range(6)
            ],
        }
    )
    emb = np.array([[0.0, 1.0], [0.1, 0.9], [0.2, 1.1], [1.0, 0.0], [0.9, 0.1], [1.1, 0.2]])
    members = cluster_inputs(inputs["input_id"].tolist(), emb, 2, 7)
    generated = concepts_table(GENERATED, "generated", "gen")
    catalogue = yaml.safe_load((REPO / "resources/blindspot/concepts.yaml").read_text())
    curated = curated_concepts(catalogue, ["gender_female", "race_black"], "loan")
    merged = deduplicate(pd.concat([curated, generated], ignore_index=True), [])
    variations = pd.DataFrame(
        [
            {
                "concept_id": c,
                "input_id": i,
                "positive": f"{c} plus {i}",
                "negative": f"{c} minus {i}",
                "valid": True,
                "method": "autorater",
            }
            for c in merged["concept_id"]
            for i in inputs["input_id"]
        ]
    )
    return {
        "inputs": inputs,
        "members": members,
        "curated": curated,
        "generated": generated,
        "merged": merged,
        "variations": variations,
    }


def test_rewrite_requests_keep_their_cache_keys(frames):
    reqs = rewrite_requests(role(0.8, 400, False), frames["inputs"], (PROMPTS / "rewrite.txt").read_text(), "loan")
    assert [request_key(r) for r in reqs] == EXPECTED["rewrite"]


def test_hypothesis_requests_keep_their_cache_keys(frames):
    reqs = hypothesis_requests(
        role(1.0, 20000, True),
        frames["inputs"].set_index("input_id"),
        frames["members"],
        (PROMPTS / "hypothesis.txt").read_text(),
        (PROMPTS / "loan.txt").read_text(),
        "",
        "loan",
        per_cluster=3,
        batch_size=2,
        max_prompts=10,
        min_concepts=25,
    )
    assert [request_key(r) for r in reqs] == EXPECTED["hypothesis"]
    assert all(r.sampling.json_schema for r in reqs)


def test_dedup_requests_keep_their_cache_keys(frames):
    merged = pd.concat([frames["curated"], frames["generated"]], ignore_index=True)
    reqs = dedup_requests(role(1.0, 1000, True), merged, dedup_pairs(merged), (PROMPTS / "dedup.txt").read_text())
    assert [request_key(r) for r in reqs] == EXPECTED["dedup"]


def test_variation_requests_keep_their_cache_keys(frames):
    merged = frames["merged"]
    llm_concepts = merged[~merged["variation_rule"].astype(bool)]
    keys, reqs = variation_requests(
        role(0.7, 1200, True), llm_concepts, frames["inputs"], (PROMPTS / "variation.txt").read_text(), "loan"
    )
    assert [request_key(r) for r in reqs] == EXPECTED["variations"]
    assert keys[:2] == [("gen000", "x0"), ("gen000", "x1")]


def test_quality_requests_keep_their_cache_keys_and_drop_the_schema_when_unconstrained(frames):
    sample = quality_sample(frames["variations"], 3, SEED)
    reqs = quality_requests(
        role(1.0, 300, False),
        frames["merged"].set_index("concept_id"),
        sample,
        (PROMPTS / "quality.txt").read_text(),
        "loan",
    )
    assert [request_key(r) for r in reqs] == EXPECTED["quality"]
    assert all(r.sampling.json_schema is None for r in reqs)


def test_verbalization_judge_requests_keep_their_cache_keys(frames, monkeypatch):
    import thinkbias.blindspot.calls as calls

    sent = []

    def capture(judge_role, reqs, logger):
        sent.extend(reqs)
        return [
            Generation(text="", thinking="", answer="", prompt_tokens=0, completion_tokens=0, finish_reason="stop")
            for _ in reqs
        ]

    # the judge's requests are captured at the engine boundary; their content is what is checked
    monkeypatch.setattr(calls, "run_role", capture)
    merged = frames["merged"]
    items = pd.DataFrame(
        [
            {"concept_id": c, "input_id": i, "side": s, "text": f"resp {c} {i} {s}"}
            for c in merged["concept_id"][:2]
            for i in ["x0", "x3"]
            for s in ("pos", "neg")
        ]
    )
    run_judge(
        items,
        merged,
        frames["inputs"],
        "loan",
        (PROMPTS / "loan.txt").read_text(),
        "",
        (PROMPTS / "verbalization.txt").read_text(),
        "autorater",
        role(0.0, 96, True),
        logging.getLogger("t"),
    )
    assert [request_key(r) for r in sent] == EXPECTED["verbalization"]
