"""What the request cache stores, as JSON: generations and candidate scores to and from their stored
form, and the canonical JSON of the candidates and cuts that enter cache keys."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Mapping

from thinkbias.llm.types import CandidateScores, Generation


def generation_to_json(g: Generation) -> dict:
    """A generation as the cache stores it (``cached`` left out: it says how it was obtained)."""
    d = asdict(g)
    d.pop("cached", None)
    return d


def generation_from_json(d: Mapping) -> Generation:
    """A stored generation, marked as served from the cache."""
    return Generation(**{**d, "cached": True})


def scores_to_json(s: CandidateScores) -> dict:
    """Candidate scores as the cache stores them."""
    return {"probs": s.probs, "outside_mass": s.outside_mass}


def scores_from_json(d: Mapping) -> CandidateScores:
    """Stored candidate scores."""
    return CandidateScores(dict(d["probs"]), float(d["outside_mass"]))


def canonical(obj: object) -> str:
    """Canonical JSON of candidates/cuts for cache keys."""
    if isinstance(obj, Mapping):
        obj = {k: list(v) if isinstance(v, (list, tuple)) else v for k, v in obj.items()}
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))
