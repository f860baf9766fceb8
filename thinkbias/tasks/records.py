"""The records of the tabular tasks: the paper's column choices, the label column and the seeded sample.

The sample is the fairness study's (paper §4.1): records ranked by sha256(``fairness-<dataset>:<seed>:<record_id>``),
so the first ``n`` of a larger sample are the sample of ``n``. Blindspot's fairness tasks draw the
same records, so both studies see the same people.
"""

from __future__ import annotations

import pandas as pd

from thinkbias.data.sampling import sample_rows
from thinkbias.tasks.templates import compas_race_group

# The dataset's true outcome (1 = Yes to its question).
LABEL_COLUMN = {"adult": "income_gt_50k", "compas": "two_year_recid", "credit": "default_next_month"}


def prepare_records(dataset: str, records: pd.DataFrame) -> pd.DataFrame:
    """Apply the paper's column choices: Adult drops race, COMPAS binarises race and drops sex."""
    out = records.copy()
    if dataset == "adult":
        out = out.drop(columns=["race"], errors="ignore")
    elif dataset == "compas":
        out["race"] = out["race"].map(compas_race_group)
        out = out.drop(columns=["sex"], errors="ignore")
    return out


def sample_records(dataset: str, records: pd.DataFrame, n: int | None, seed: int) -> pd.DataFrame:
    """The study's seeded sample of ``n`` prepared records (:func:`prepare_records`), in rank order;
    growing ``n`` keeps every record of the smaller sample (:func:`thinkbias.data.sampling.sample_rows`)."""
    return sample_rows(prepare_records(dataset, records), n, seed, "record_id", f"fairness-{dataset}")
