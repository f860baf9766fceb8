"""What the model-written steps produced and what of it could not be used: the hypothesis replies
(concepts parsed and rejected per reply, replies cut off at their token budget), the duplicate
judgements (unparsable ones keep both concepts) and the model-written variation pairs (invalid ones
are never sent to the target). The jobs write the per-reply and per-judgement tables; the study
report shows the counts, so nothing a model wrote is dropped without a number."""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from thinkbias.blindspot.concepts import parse_concepts, parse_same
from thinkbias.llm.types import Generation

REPLY_COLUMNS = ["reply", "completion_tokens", "finish_reason", "n_concepts", "n_rejected"]
JUDGEMENT_COLUMNS = ["concept_1", "concept_2", "same"]
COUNT_COLUMNS = ["task", "step", "quantity", "n"]


def reply_text(gen: Generation) -> str:
    """The part of a generation an autorater's answer is parsed from (the answer after any thinking)."""
    return gen.answer or gen.text


def parse_hypothesis_replies(gens: Sequence[Generation]) -> tuple[list[dict], pd.DataFrame]:
    """The valid concepts of every hypothesis reply, in reply order, and one row per reply:
    ``reply, completion_tokens, finish_reason, n_concepts, n_rejected`` (a reply with no concept
    and none rejected had nothing parsable)."""
    items, rows = [], []
    for i, g in enumerate(gens):
        found, rejected = parse_concepts(reply_text(g))
        items += found
        rows.append(
            {
                "reply": i,
                "completion_tokens": g.completion_tokens,
                "finish_reason": g.finish_reason,
                "n_concepts": len(found),
                "n_rejected": rejected,
            }
        )
    return items, pd.DataFrame(rows, columns=REPLY_COLUMNS)


def parse_dedup_judgements(
    concepts: pd.DataFrame, pairs: Sequence[tuple[int, int]], gens: Sequence[Generation]
) -> tuple[list[tuple[int, int]], pd.DataFrame]:
    """Duplicate edges (pairs judged the same) and one row per judged pair: ``concept_1, concept_2,
    same`` (True, False, or missing when the reply did not parse; such a pair stays distinct)."""
    verdicts = [parse_same(reply_text(g)) for g in gens]
    ids = concepts["concept_id"].tolist()
    table = pd.DataFrame(
        {
            "concept_1": [ids[i] for i, _ in pairs],
            "concept_2": [ids[j] for _, j in pairs],
            "same": pd.Series(verdicts, dtype="boolean"),
        },
        columns=JUDGEMENT_COLUMNS,
    )
    return [pair for pair, v in zip(pairs, verdicts) if v], table


def model_output_counts(
    task: str, replies: pd.DataFrame, generated: pd.DataFrame, judgements: pd.DataFrame, variations: pd.DataFrame
) -> pd.DataFrame:
    """``task, step, quantity, n`` rows: hypothesis replies (cut off at max_tokens, without a valid
    concept), concepts parsed, rejected as malformed and kept (``max_concepts``); duplicate
    judgements and the unparsable ones; model-written variation pairs and the invalid ones."""
    same = judgements["same"] if len(judgements) else pd.Series([], dtype="boolean")
    written = variations[variations["method"] == "autorater"] if len(variations) else variations
    counts = [
        ("hypothesis", "replies", len(replies)),
        ("hypothesis", "replies cut off at max_tokens", int((replies["finish_reason"] == "length").sum())),
        ("hypothesis", "replies without a valid concept", int((replies["n_concepts"] == 0).sum())),
        ("hypothesis", "concepts parsed", int(replies["n_concepts"].sum())),
        ("hypothesis", "concepts rejected as malformed", int(replies["n_rejected"].sum())),
        ("hypothesis", "concepts kept", len(generated)),
        ("dedup", "judgements", len(judgements)),
        ("dedup", "judgements unparsable (concepts kept distinct)", int(same.isna().sum())),
        ("variations", "model-written pairs", len(written)),
        (
            "variations",
            "invalid pairs (unparsable or identical sides; not tested)",
            int((~written["valid"].astype(bool)).sum()) if len(written) else 0,
        ),
    ]
    return pd.DataFrame(
        [{"task": task, "step": s, "quantity": q, "n": int(n)} for s, q, n in counts], columns=COUNT_COLUMNS
    )
