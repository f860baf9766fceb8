"""The prompts table: one row per (pair, side), rendered by the fixed templates (paper §4.1,
``thinkbias.tasks.templates``) from the sampled records (``thinkbias.tasks.records``).

Columns: dataset, pair_id, side (``alpha`` / ``alpha_prime``), attribute (the protected value on
that side, e.g. Male), label (the dataset's true outcome, 1 = Yes), profile (rendered text),
user (the full user message asked in both arms).
"""

from __future__ import annotations

import pandas as pd

from thinkbias.tasks.records import LABEL_COLUMN
from thinkbias.tasks.templates import PROTECTED, QUESTIONS, counterfactual_differences, counterfactual_pair

SIDES = ("alpha", "alpha_prime")
ANSWER_INSTRUCTION = "Reply with a single word, Yes or No."


def user_message(dataset: str, profile: str) -> str:
    """The user turn: profile, the dataset's Yes/No question, and the answer format."""
    return f"{profile}\n\n{QUESTIONS[dataset]}\n{ANSWER_INSTRUCTION}"


def build_prompts(dataset: str, records: pd.DataFrame) -> pd.DataFrame:
    """Render both counterfactual sides of every record (in the records' order).

    Raises ``ValueError`` if any pair's texts differ by more than the protected word and its
    dependent pronouns (checked on every pair).
    """
    _, (alpha, alpha_prime) = PROTECTED[dataset]
    label_col = LABEL_COLUMN[dataset]
    rows: list[dict] = []
    bad: list[str] = []
    for rec in records.to_dict(orient="records"):
        text_a, text_b = counterfactual_pair(dataset, rec)
        problems = counterfactual_differences(dataset, text_a, text_b)
        if problems:
            bad.append(f"{rec['record_id']}: {'; '.join(problems)}")
        label = int(bool(rec[label_col])) if pd.notna(rec[label_col]) else -1
        for side, attr, text in (("alpha", alpha, text_a), ("alpha_prime", alpha_prime, text_b)):
            rows.append(
                {
                    "dataset": dataset,
                    "pair_id": str(rec["record_id"]),
                    "side": side,
                    "attribute": attr,
                    "label": label,
                    "profile": text,
                    "user": user_message(dataset, text),
                }
            )
    if bad:
        raise ValueError(f"{len(bad)} counterfactual pairs differ beyond the protected words: " + " | ".join(bad[:5]))
    return pd.DataFrame(rows, columns=["dataset", "pair_id", "side", "attribute", "label", "profile", "user"])


def shard_slice(prompts: pd.DataFrame, shard: int, shard_size: int) -> pd.DataFrame:
    """The pairs of one shard: pairs ``shard*shard_size`` .. ``(shard+1)*shard_size - 1`` (both sides)."""
    pair_ids = list(dict.fromkeys(prompts["pair_id"]))
    chosen = set(pair_ids[shard * shard_size : (shard + 1) * shard_size])
    return prompts[prompts["pair_id"].isin(chosen)].reset_index(drop=True)
