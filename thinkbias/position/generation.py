"""Requests for the main experiment and the generations table they produce (paper Sections 3.1, 4).

Greedy decoding. Per mode:
- ``reasoning``: the model's think-arm prefill (``<think>\\n`` or nothing when it opens thinking
  natively), plus the engine's thinking instruction in the user prompt when the model's thinking is
  prompt-elicited;
- ``cot`` and ``direct``: the non-thinking prefill where the model has a thinking mode (so the
  reasoning, if any, is the visible response), nothing otherwise.

The full trajectory of a record is ``thinking + "\\n\\n" + response`` (either part may be empty):
for the OpenAI-compatible path that is ``reasoning_content`` followed by ``content``.
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from thinkbias.llm.types import Generation, Request, Sampling
from thinkbias.position.items import OPTION_COLUMNS
from thinkbias.position.prompts import system_prompt, user_prompt

TRAJECTORY_SEPARATOR = "\n\n"

GENERATION_COLUMNS = (
    "question_id",
    "benchmark",
    "item_id",
    "permutation",
    "model",
    "mode",
    "correct_position",
    "prefill",
    "text",
    "thinking",
    "answer",
    "full_text",
    "prompt_tokens",
    "completion_tokens",
    "finish_reason",
)


def mode_prefill(mode: str, think_prefill: str, nothink_prefill: str) -> str:
    """The assistant prefill a mode uses, given the model's two arm prefills."""
    return think_prefill if mode == "reasoning" else nothink_prefill


def prompt_request(row, mode: str, prefill: str, instruction: str, sampling: Sampling) -> Request:
    """The chat request of one permutation row (a prompts-table row) in one mode."""
    options = [getattr(row, c) if hasattr(row, c) else row[c] for c in OPTION_COLUMNS]
    question = row.question if hasattr(row, "question") else row["question"]
    extra = instruction if mode == "reasoning" else ""
    return Request.chat(
        user=user_prompt(question, options, mode, extra),
        system=system_prompt(mode),
        prefill=prefill,
        sampling=sampling,
    )


def build_requests(
    prompts: pd.DataFrame, mode: str, think_prefill: str, nothink_prefill: str, instruction: str, max_tokens: int
) -> list[Request]:
    """Greedy requests, one per prompts-table row, in row order."""
    sampling = Sampling(temperature=0.0, max_tokens=int(max_tokens))
    prefill = mode_prefill(mode, think_prefill, nothink_prefill)
    return [prompt_request(row, mode, prefill, instruction, sampling) for row in prompts.itertuples(index=False)]


def full_trajectory(thinking: str, response: str) -> str:
    """Thinking trace and response joined (either may be empty)."""
    parts = [p for p in (thinking or "", response or "") if p]
    return TRAJECTORY_SEPARATOR.join(parts)


def generations_table(
    prompts: pd.DataFrame, model: str, mode: str, requests: Sequence[Request], generations: Sequence[Generation]
) -> pd.DataFrame:
    """One row per prompt with the model's output (columns ``GENERATION_COLUMNS``)."""
    rows = []
    for row, req, gen in zip(prompts.itertuples(index=False), requests, generations, strict=True):
        rows.append(
            {
                "question_id": row.question_id,
                "benchmark": row.benchmark,
                "item_id": row.item_id,
                "permutation": int(row.permutation),
                "model": model,
                "mode": mode,
                "correct_position": row.correct_position,
                "prefill": req.prefill,
                "text": gen.text,
                "thinking": gen.thinking,
                "answer": gen.answer,
                "full_text": full_trajectory(gen.thinking, gen.answer),
                "prompt_tokens": int(gen.prompt_tokens),
                "completion_tokens": int(gen.completion_tokens),
                "finish_reason": gen.finish_reason,
            }
        )
    return pd.DataFrame(rows, columns=list(GENERATION_COLUMNS))
