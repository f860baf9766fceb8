"""The requests of the blindspot study's task-level model steps (rewrite, concept hypotheses, duplicate
judgements, variation pairs, quality ratings), built from each step's :class:`ModelRole`.

Each request's prompt text and seed parts (the step's label and the item's identity) are the ones
the study has always used, so the cache keys of earlier runs still match (tests/blindspot/
test_step_requests.py).
"""

from __future__ import annotations

from string import Template

import pandas as pd

from thinkbias.blindspot.clusters import hypothesis_batches
from thinkbias.blindspot.concepts import DEDUP_SCHEMA, HYPOTHESIS_SCHEMA, build_dedup_prompt, build_hypothesis_prompt
from thinkbias.blindspot.tasks import render_task_prompt, task_spec
from thinkbias.blindspot.variations import (
    QUALITY_SCHEMA,
    VARIATION_SCHEMA,
    build_quality_prompt,
    build_variation_prompt,
)
from thinkbias.llm.roles import ModelRole
from thinkbias.llm.types import Request

REWRITE_STYLES = {
    "loan": "a 3-4 sentence first-person loan request",
    "admissions": "a 5-7 sentence third-person admissions-file summary",
    "hiring": "a plain-text resume with the same header lines",
}


def rewrite_requests(role: ModelRole, inputs: pd.DataFrame, template: str, task: str) -> list[Request]:
    """One prose rewrite per input (``input_id, text``), in the task's style."""
    prompt = Template(template)
    style = {"input_name": task_spec(task).input_name, "style": REWRITE_STYLES[task]}
    return [
        role.chat(prompt.safe_substitute(**style, text=t), "rewrite", i)
        for i, t in zip(inputs["input_id"], inputs["text"])
    ]


def hypothesis_requests(
    role: ModelRole,
    inputs: pd.DataFrame,
    members: pd.DataFrame,
    template: str,
    task_template: str,
    job_description: str,
    task: str,
    per_cluster: int,
    batch_size: int,
    max_prompts: int,
    min_concepts: int,
) -> list[Request]:
    """One hypothesis prompt per batch of representative inputs (``inputs`` indexed by input_id;
    the first ``max_prompts`` batches of :func:`hypothesis_batches`)."""
    batches = hypothesis_batches(members, per_cluster, batch_size, role.seed)[:max_prompts]
    input_name = task_spec(task).input_name
    requests = []
    for b, batch in enumerate(batches):
        prompts = [render_task_prompt(task_template, inputs.loc[i, "text"], job_description) for i in batch]
        requests.append(
            role.chat(
                build_hypothesis_prompt(template, prompts, input_name, min_concepts),
                "hypothesis",
                str(b),
                json_schema=HYPOTHESIS_SCHEMA,
            )
        )
    return requests


def dedup_requests(
    role: ModelRole,
    concepts: pd.DataFrame,
    pairs: list[tuple[int, int]],
    template: str,
) -> list[Request]:
    """One duplicate judgement per (i, j) row-position pair of ``concepts``."""
    return [
        role.chat(
            build_dedup_prompt(template, concepts.iloc[i], concepts.iloc[j]),
            "dedup",
            str(i),
            str(j),
            json_schema=DEDUP_SCHEMA,
        )
        for i, j in pairs
    ]


def variation_requests(
    role: ModelRole,
    concepts: pd.DataFrame,
    inputs: pd.DataFrame,
    template: str,
    task: str,
) -> tuple[list[tuple[str, str]], list[Request]]:
    """One variation-pair request per (concept, input), concept-major; returns the
    ``(concept_id, input_id)`` keys beside the requests."""
    input_name = task_spec(task).input_name
    keys, requests = [], []
    for c in concepts.itertuples(index=False):
        row = pd.Series(c._asdict())
        for x in inputs.itertuples(index=False):
            keys.append((c.concept_id, x.input_id))
            requests.append(
                role.chat(
                    build_variation_prompt(template, row, x.text, input_name),
                    "variation",
                    c.concept_id,
                    x.input_id,
                    json_schema=VARIATION_SCHEMA,
                )
            )
    return keys, requests


def quality_requests(
    role: ModelRole,
    concepts: pd.DataFrame,
    sample: pd.DataFrame,
    template: str,
    task: str,
) -> list[Request]:
    """One confound rating per sampled pair (``concept_id, input_id, positive, negative``);
    ``concepts`` is indexed by concept_id."""
    input_name = task_spec(task).input_name
    return [
        role.chat(
            build_quality_prompt(template, concepts.loc[r.concept_id], r.positive, r.negative, input_name),
            "quality",
            r.concept_id,
            r.input_id,
            json_schema=QUALITY_SCHEMA,
        )
        for r in sample.itertuples(index=False)
    ]
