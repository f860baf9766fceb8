"""Position Bias Score (paper Eq. 1).

PBS(q) = || pbar_q - u ||_2 with pbar_q the distribution of the chosen *absolute* position over the
option orderings of question q (4 cyclic shifts, or all 24) and u uniform. Eq. 1's L2 norm is the
default; total variation (0.5 * L1) is offered because the paper's Appendix E calls 0.75 the
"theoretical maximum", which is the TV maximum: always answering one position gives sqrt(0.75) =
0.866 under L2 and 0.75 under TV.
The paper's example PBS 0.612 (Appendix E) is the L2 value of a 3-1-0-0 split and no TV value, so
the paper computed Eq. 1.
pbar_q is taken over the permutations whose answer could be extracted.

PBS is computed from the integer answer counts c (n = their sum): PBS^2 = sum (4c - n)^2 / (16 n^2)
under L2 and PBS = sum |4c - n| / (8 n) under TV, each reduced as a fraction before the one float
operation. Two questions with the same PBS therefore get the *same* float whichever positions hold
the counts (the float arithmetic on shares gives a 1-1-1-0 split 0.28867513459481287 or
0.2886751345948129 depending on which position is empty), so a tie in Table 4's paired test is a
zero difference.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Iterable, Literal, Sequence

import numpy as np

from thinkbias.position.extract import OPTION_LETTERS

Norm = Literal["l2", "tv"]
UNIFORM = np.full(4, 0.25)


def position_counts(answers: Iterable[str | None]) -> list[int]:
    """Number of extracted answers at each position A-D (None / NaN entries skipped)."""
    counts = [0, 0, 0, 0]
    for a in answers:
        if isinstance(a, str) and a in OPTION_LETTERS:
            counts[OPTION_LETTERS.index(a)] += 1
    return counts


def position_distribution(answers: Iterable[str | None]) -> np.ndarray | None:
    """Empirical distribution over A-D of the extracted answers (None / NaN entries skipped);
    None when no answer was extracted."""
    counts = np.array(position_counts(answers), dtype=float)
    total = counts.sum()
    return counts / total if total else None


def pbs_from_counts(counts: Sequence[int], norm: Norm = "l2") -> float:
    """PBS from integer counts per position, exactly up to one final rounding (module docstring);
    NaN when every count is zero."""
    n = int(sum(counts))
    if n == 0:
        return math.nan
    k = len(counts)
    if norm == "l2":
        return math.sqrt(Fraction(sum((k * int(c) - n) ** 2 for c in counts), k * k * n * n))
    if norm == "tv":
        return float(Fraction(sum(abs(k * int(c) - n) for c in counts), 2 * k * n))
    raise ValueError(f"unknown PBS norm '{norm}' (expected 'l2' or 'tv')")


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
    return pbs_from_counts(position_counts(answers), norm)


def max_pbs(norm: Norm = "l2") -> float:
    """The largest possible PBS (all mass on one position)."""
    return distance_from_uniform(np.array([1.0, 0, 0, 0]), norm)
