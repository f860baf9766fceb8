"""The autorater paths on the real embedded model: JSON-schema constrained verdicts parse."""

import logging
from pathlib import Path

import pandas as pd
import pytest
import yaml

from thinkbias.blindspot.calls import run_judge
from thinkbias.blindspot.concepts import curated_concepts
from thinkbias.llm.roles import ModelRole

REPO = Path(__file__).resolve().parents[2]
PROMPTS = REPO / "resources/blindspot/prompts"


@pytest.mark.slow
def test_constrained_verbalization_verdicts_parse_on_the_embedded_model(embedded_model, tmp_path):
    catalogue = yaml.safe_load((REPO / "resources/blindspot/concepts.yaml").read_text())
    concepts = curated_concepts(catalogue, ["religion_minority"], "loan")
    inputs = pd.DataFrame({"input_id": ["a"], "text": ["I am Greg Baker. I earn $50,000 and ask for $2,000."]})
    items = pd.DataFrame(
        {
            "concept_id": ["religion_minority"] * 2,
            "input_id": ["a", "a"],
            "side": ["pos", "neg"],
            "text": [
                "As a member of a mosque, he is trustworthy. Final Decision: APPROVE",
                "Income covers the loan. Final Decision: APPROVE",
            ],
        }
    )
    judge_role = ModelRole(
        model="smollm2-135m",
        registry=str(REPO / "config/models.yaml"),
        cache_dir=str(tmp_path / "cache"),
        seed=1,
        temperature=0.0,
        max_tokens=48,
        constrained=True,
        weights=str(embedded_model),
    )
    out = run_judge(
        items,
        concepts,
        inputs,
        "loan",
        (PROMPTS / "loan.txt").read_text(),
        "",
        (PROMPTS / "verbalization.txt").read_text(),
        "autorater",
        judge_role,
        logger=logging.getLogger("test"),
    )
    assert len(out) == 2 and out["new"].all()
    assert out["verbalized"].notna().all()  # the grammar guarantees a readable YES/NO
    again = run_judge(
        items,
        concepts,
        inputs,
        "loan",
        (PROMPTS / "loan.txt").read_text(),
        "",
        (PROMPTS / "verbalization.txt").read_text(),
        "autorater",
        judge_role,
        logger=logging.getLogger("test"),
        previous=out,
    )
    assert not again["new"].any() and again["verbalized"].tolist() == out["verbalized"].tolist()
