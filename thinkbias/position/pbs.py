"""Position Bias Score (paper Eq. 1).

PBS(q) = || pbar_q - u ||_2 with pbar_q the distribution of the chosen *absolute* position over the
four permutations of question q and u uniform. Eq. 1's L2 norm is the default; total variation
(0.5 * L1) is offered because the paper's Appendix E calls 0.75 the "theoretical maximum", which is
the TV maximum: always answering one position gives sqrt(0.75) = 0.866 under L2 and 0.75 under TV.
pbar_q is taken over the permutations whose answer could be extracted.
"""

from __future__ import annotations

import math
from typing import Iterable, Literal

import numpy as np

from thinkbias.position.extract import OPTION_LETTERS

Norm = Literal["l2", "tv"]
UNIFORM = np.full(4, 0.25)


def position_distribution(answers: Iterable[str | None]) -> np.ndarray | None:
    """Empirical distribution over A-D of the extracted answers (None / NaN entries skipped);
    None when no answer was extracted."""
    counts = np.zeros(4)
    for a in answers:
        if isinstance(a, str) and a in OPTION_LETTERS:
            counts[OPTION_LETTERS.index(a)] += 1
    total = counts.sum()
    return counts / total if total else None


def distance_from_uniform(p: np.ndarray, norm: Norm = "l2") -> float:
    """|| p - u ||_2 (``l2``) or 0.5 * || p - u ||_1 (``tv``)."""
    d = np.asarray(p, dtype=float) - UNIFORM
    if norm == "l2":
        return float(np.sqrt(np.sum(d * d)))
    if norm == "tv":
        return float(0.5 * np.sum(np.abs(d)))
    raise ValueError(f"unknown PBS norm '{norm}' (expected 'l2' or 'tv')")


def position_bias_score(answers: Iterable[str | None], norm: Norm = "l2") -> float:
    """PBS of one question from its per-permutation absolute answers; NaN when none extracted."""
    p = position_distribution(answers)
    return math.nan if p is None else distance_from_uniform(p, norm)


def max_pbs(norm: Norm = "l2") -> float:
    """The largest possible PBS (all mass on one position)."""
    return distance_from_uniform(np.array([1.0, 0, 0, 0]), norm)
