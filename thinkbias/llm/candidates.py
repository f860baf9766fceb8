"""Candidate scoring at one next-token position: P(Yes) vs P(No), P(A..D), summed over token variants.

A candidate (``"Yes"``) has several surface variants (``" Yes"``, ``"Yes"``, ``"yes"`` ...). Each
variant contributes the probability of its *first* token; token ids are deduplicated within a
candidate, and an id reachable from two candidates (e.g. ``"("`` as the first token of both ``"(A"``
and ``"(B"``) is ambiguous and dropped from both. The candidate probabilities are renormalised to
sum to 1, and the raw mass on every other token is reported as ``outside_mass`` (a high value means
the model did not want to answer in the candidate set at that point).
"""

from __future__ import annotations

import math
from typing import Callable, Mapping, Sequence

import numpy as np

from thinkbias.llm.types import CandidateScores


def candidate_token_ids(
    candidates: Mapping[str, Sequence[str]], first_token: Callable[[str], int | None]
) -> dict[str, tuple[int, ...]]:
    """Map each candidate to the distinct first-token ids of its variants (ambiguous ids dropped).

    ``first_token(text)`` returns the id of the first token of ``text`` (None if it has none).
    Raises ``ValueError`` when a candidate is left without any token.
    """
    ids: dict[str, list[int]] = {}
    for name, variants in candidates.items():
        seen: list[int] = []
        for v in variants:
            t = first_token(v)
            if t is not None and t not in seen:
                seen.append(t)
        ids[name] = seen
    owners: dict[int, set[str]] = {}
    for name, toks in ids.items():
        for t in toks:
            owners.setdefault(t, set()).add(name)
    out = {name: tuple(t for t in toks if len(owners[t]) == 1) for name, toks in ids.items()}
    empty = [name for name, toks in out.items() if not toks]
    if empty:
        raise ValueError(f"candidates without an unambiguous token: {', '.join(empty)}")
    return out


def normalise(raw: Mapping[str, float]) -> CandidateScores:
    """Renormalise raw candidate masses; ``outside_mass = 1 - sum(raw)`` (clipped at 0).

    All-zero raw mass gives NaN probabilities (nothing to normalise), never a silent guess.
    """
    total = float(sum(raw.values()))
    outside = max(0.0, 1.0 - total)
    if total <= 0.0:
        return CandidateScores({k: math.nan for k in raw}, outside)
    return CandidateScores({k: float(v) / total for k, v in raw.items()}, outside)


def scores_from_logits(logits: np.ndarray, cand_ids: Mapping[str, Sequence[int]]) -> CandidateScores:
    """Candidate scores from the full next-token logit vector (softmax in float64)."""
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max()
    p = np.exp(z)
    p /= p.sum()
    return normalise({k: float(p[list(ids)].sum()) for k, ids in cand_ids.items()})


def scores_from_top_logprobs(top: Mapping[object, float], cand_keys: Mapping[str, Sequence[object]]) -> CandidateScores:
    """Candidate scores from a truncated top-k logprob list (APIs, vLLM).

    ``top`` maps a token (id or text) to its logprob; ``cand_keys`` maps each candidate to the token
    keys that count for it (deduplicated here). Variant tokens missing from the top-k list add
    nothing, so their (small) mass ends up in ``outside_mass``.
    """
    raw = {}
    for name, keys in cand_keys.items():
        raw[name] = sum(math.exp(top[k]) for k in dict.fromkeys(keys) if k in top)
    return normalise(raw)
