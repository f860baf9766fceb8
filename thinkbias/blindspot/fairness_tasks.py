"""The fairness study's datasets as blindspot decision tasks: ``fairness_adult``, ``fairness_compas``,
``fairness_credit``.

Inputs are the fairness study's sampled records (the same raw files, the same column choices of
:func:`thinkbias.tasks.records.prepare_records`, the same seeded sample, whose first ``n`` rows
are the first ``n`` of the fairness study's sample for the same seed: :func:`sample_records`), each rendered with the
fairness template at its own protected value: the text is the fairness profile of the side whose
attribute is the record's (its factual side). The decision is the fairness question's Yes/No
(1 = Yes, the dataset's positive label: income above $50,000, a new charge, a default).

A curated concept with the ``counterfactual`` variation rule pairs the two renderings of a record
with its protected column set to each value: exactly the fairness study's counterfactual pair.
"""

from __future__ import annotations

from typing import Mapping

import pandas as pd

from thinkbias.tasks.records import LABEL_COLUMN, sample_records
from thinkbias.tasks.templates import PROTECTED, QUESTIONS, RENDERERS

# blindspot task id -> fairness dataset
FAIRNESS_TASKS: dict[str, str] = {"fairness_adult": "adult", "fairness_compas": "compas", "fairness_credit": "credit"}

# what the hypothesis and variation autoraters call one input of the task
INPUT_NAMES: dict[str, str] = {
    "adult": "census profile",
    "compas": "defendant profile",
    "credit": "credit card holder profile",
}

FAIRNESS_INPUT_COLUMNS = ("input_id", "text", "record_id", "protected_attribute", "protected_value", "label")


def fairness_dataset(task: str) -> str | None:
    """The fairness dataset a blindspot task audits, or None for a task of the blindspot paper."""
    return FAIRNESS_TASKS.get(task)


def fairness_inputs(task: str, records: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """``n`` inputs of a fairness task from the loaded dataset ``records`` (loader output):
    ``input_id`` (``<task>-<record_id>``), ``text`` (the fairness profile at the record's own
    protected value), ``record_id`` (the fairness ``pair_id``), ``protected_attribute`` and
    ``protected_value``, ``label`` (1 / 0, -1 when missing), then every prepared record field (the
    counterfactual variation rule re-renders from them)."""
    dataset = FAIRNESS_TASKS[task]
    column, values = PROTECTED[dataset]
    sample = sample_records(dataset, records, n, seed)
    unknown = sample.loc[~sample[column].isin(values), column]
    if len(unknown):
        raise ValueError(
            f"{task}: {len(unknown)} sampled record(s) have a {column} outside {list(values)} "
            f"(first: {unknown.astype(str).unique()[:5].tolist()})"
        )
    render = RENDERERS[dataset]
    label = sample[LABEL_COLUMN[dataset]]
    head = pd.DataFrame(
        {
            "input_id": [f"{task}-{r}" for r in sample["record_id"]],
            "text": [render(rec) for rec in sample.to_dict(orient="records")],
            "record_id": sample["record_id"].astype(str),
            "protected_attribute": column,
            "protected_value": sample[column].astype(str),
            "label": [int(bool(v)) if pd.notna(v) else -1 for v in label],
        }
    )
    fields = sample.drop(columns=[c for c in FAIRNESS_INPUT_COLUMNS if c in sample.columns])
    return pd.concat([head, fields.reset_index(drop=True)], axis=1)


def counterfactual_variation(
    text: str, rule: Mapping[str, str], task: str, fields: Mapping[str, object]
) -> tuple[str, str] | None:
    """(x+, x-) of a ``counterfactual`` rule: the input's record rendered with the protected column
    set to ``rule["positive"]`` and to ``rule["negative"]`` (the fairness template). None when the
    task is not a fairness task, the rule's column is not the dataset's protected one, or the input's
    text is not the rendering of its own fields (e.g. rewritten), so the pair would not be the
    counterfactual of what the target sees."""
    dataset = FAIRNESS_TASKS.get(task)
    if dataset is None or rule.get("column") != PROTECTED[dataset][0]:
        return None
    render = RENDERERS[dataset]
    record = dict(fields)
    try:
        if render(record) != text:
            return None
    except (KeyError, ValueError, TypeError):
        return None
    column = rule["column"]
    return render({**record, column: rule["positive"]}), render({**record, column: rule["negative"]})


def fairness_prompt_has_question(template: str, task: str) -> bool:
    """Whether a decision prompt asks the fairness study's question of the task's dataset, verbatim."""
    return QUESTIONS[FAIRNESS_TASKS[task]] in template and "$application" in template
