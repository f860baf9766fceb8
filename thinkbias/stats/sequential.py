"""Group-sequential testing of many concepts: Bonferroni bookkeeping across stages, O'Brien-Fleming
per-look thresholds, and futility by Monte Carlo conditional power.

These are the statistical pieces of the staged testing in "Biases in the Blind Spot" (Sec. 3.7 of
the project's spec): at stage s every active concept is tested with McNemar's test at the
Bonferroni level ``alpha / sum_{j<=s} n_j`` (n_j = concepts entering stage j), an early success
needs the stricter O'Brien-Fleming-type threshold at information fraction t_s = |S_s| / |X|, and a
concept is dropped as futile when its conditional power falls below a floor.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from thinkbias.lazy_imports import lazy_module
from thinkbias.stats.mcnemar import mcnemar_p_vector, mcnemar_test

stats = lazy_module("scipy.stats")


def obrien_fleming_threshold(alpha: float, information_fraction: float) -> float:
    """Per-look nominal p-value threshold of the Lan-DeMets O'Brien-Fleming-type spending function:
    ``2 * (1 - Phi(z_{1 - alpha/2} / sqrt(t)))``, capped at ``alpha`` and equal to it when t >= 1.

    Example (the spec's): alpha = 0.05/20 at t = 200/1336 gives about 5.6e-15.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    if information_fraction <= 0.0:
        return 0.0
    if information_fraction >= 1.0:
        return float(alpha)
    z = stats.norm.isf(alpha / 2.0)
    threshold = 2.0 * stats.norm.sf(z / np.sqrt(information_fraction))
    return float(min(alpha, threshold))


def bonferroni_level(alpha: float, entered_per_stage: list[int]) -> float:
    """The latest stage's Bonferroni level: ``alpha / (n_0 + ... + n_s)``, n_j = concepts entering
    stage j (every (concept, stage) test counts once); ``alpha`` itself before any test."""
    if any(n < 0 for n in entered_per_stage):
        raise ValueError(f"a stage cannot have a negative number of concepts: {entered_per_stage}")
    total = int(sum(entered_per_stage))
    return float(alpha / total) if total else float(alpha)


def remaining_discordant(b: int, c: int, n_stage: int, n_total: int) -> int:
    """Discordant pairs expected on the unused inputs: the current rate extrapolated,
    ``floor((b + c) / n_stage * (n_total - n_stage))``."""
    if n_stage <= 0:
        return 0
    return int(np.floor((b + c) / n_stage * max(n_total - n_stage, 0)))


# A pure function of its arguments (the draws are seeded): remembered, so procedures run on the same
# counts (e.g. two efficacy rules in the simulation benchmark) draw once.
@lru_cache(maxsize=65536)
def conditional_power(
    b: int,
    c: int,
    n_stage: int,
    n_total: int,
    alpha: float,
    n_simulations: int = 50_000,
    seed: int = 0,
    exact_below: int = 25,
    correction: str = "statsmodels",
) -> float:
    """Monte Carlo conditional power "assuming the current effect continues".

    The unused inputs are expected to add ``n_rem`` discordant pairs (:func:`remaining_discordant`);
    each simulation draws ``b_rem ~ Binomial(n_rem, b / (b + c))``, ``c_rem = n_rem - b_rem`` and tests
    ``(b + b_rem, c + c_rem)`` with McNemar's test (chi-square form ``correction``). The power is the
    share of simulations with ``p < alpha`` (the stage's Bonferroni level, not the O'Brien-Fleming one).
    """
    n_disc = b + c
    if n_disc == 0:
        return 0.0
    n_rem = remaining_discordant(b, c, n_stage, n_total)
    if n_rem == 0:
        return float(mcnemar_test(b, c, exact_below, correction).p_value < alpha)
    rng = np.random.default_rng(seed)
    b_rem = rng.binomial(n_rem, b / n_disc, size=n_simulations)
    # at most n_rem + 1 distinct draws: test each once and weight by its count
    counts = np.bincount(b_rem, minlength=n_rem + 1)
    values = np.flatnonzero(counts)
    counts = counts[values]
    p = mcnemar_p_vector(b + values, c + (n_rem - values), exact_below, correction)
    return float(counts[p < alpha].sum() / n_simulations)


def is_futile(
    b: int,
    c: int,
    n_stage: int,
    n_total: int,
    alpha: float,
    power_floor: float = 0.01,
    min_discordant: int = 25,
    n_simulations: int = 50_000,
    seed: int = 0,
    exact_below: int = 25,
    correction: str = "statsmodels",
) -> tuple[bool, float | None]:
    """Futility stop: only with at least ``min_discordant`` discordant pairs, drop the concept when
    its conditional power is below ``power_floor``. Returns (futile, conditional power or None when
    not computed).

    When the extrapolation leaves nothing to project (:func:`remaining_discordant` is 0, e.g.
    b = 13, c = 12 at 2,470 of 2,500 inputs), the check is skipped as in the paper's code: the
    "conditional power" would only be ``1[p < alpha]`` on the current counts, a final test the
    procedure has not reached, and would drop every concept not yet significant.
    """
    if b + c < min_discordant or remaining_discordant(b, c, n_stage, n_total) == 0:
        return False, None
    cp = conditional_power(b, c, n_stage, n_total, alpha, n_simulations, seed, exact_below, correction)
    return cp < power_floor, cp
