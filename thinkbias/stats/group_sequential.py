"""Exact group-sequential boundaries from an alpha-spending function (Lan & DeMets 1983), by
recursive numerical integration over the looks (Armitage, McPherson & Rowe 1969; Jennison &
Turnbull 2000, ch. 19).

Under the null hypothesis the standardised statistics of the looks at information fractions
``t_1 < ... < t_K`` are ``Z_k = W(t_k) / sqrt(t_k)`` for a standard Brownian motion ``W``. Look k's
critical value ``c_k`` is chosen so that the probability of crossing it *for the first time* at
look k equals the alpha spent between ``t_{k-1}`` and ``t_k``:

    P(|Z_1| < c_1, ..., |Z_{k-1}| < c_{k-1}, |Z_k| >= c_k) = 2 (alpha*(t_k) - alpha*(t_{k-1}))

with ``alpha*(t) = spending(alpha / 2, t)``: the symmetric two-sided design of gsDesign
(``test.type = 2``) and ldbounds (``sides = 2``), in which each side spends alpha / 2 (by symmetry
each side's first crossings carry half of the probability above). One-sided, ``Z_j < c_j`` and
``Z_k >= c_k`` spend ``spending(alpha, t)``. The density of ``W(t_k)`` on the continuation region
is carried from look to look by convolution with the Gaussian increment, integrated with Simpson's
rule on a grid over the region (cut at ``tail_sd`` standard deviations, where the density is below
1e-30).

With the Lan-DeMets O'Brien-Fleming-type spending function, per side
``alpha*(t) = 2 (1 - Phi(z_{1 - alpha/4} / sqrt(t)))``, at two-sided 0.05 this gives the bounds
gsDesign and ldbounds publish, e.g. z = 4.877, 3.357, 2.680, 2.290, 2.031 for 5 equal looks
(``gsDesign(k = 5, test.type = 2, alpha = 0.025, sfu = sfLDOF)``; one-sided 0.025 gives the same
to three decimals). docs/blindspot.md tabulates 3, 4 and 5 looks, equal and unequal.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable, Sequence

import numpy as np

from thinkbias.lazy_imports import lazy_module
from thinkbias.stats.sequential import obrien_fleming_threshold

optimize = lazy_module("scipy.optimize")
special = lazy_module("scipy.special")
stats = lazy_module("scipy.stats")

SpendingFunction = Callable[[float, float], float]
_SQRT_2PI = float(np.sqrt(2.0 * np.pi))


def _simpson_grid(lower: float, upper: float, n_points: int) -> tuple[np.ndarray, np.ndarray]:
    """Points and composite-Simpson weights on [lower, upper] (``n_points`` odd)."""
    n = n_points if n_points % 2 else n_points + 1
    x = np.linspace(lower, upper, n)
    h = (upper - lower) / (n - 1)
    w = np.full(n, 2.0)
    w[1::2] = 4.0
    w[0] = w[-1] = 1.0
    return x, w * h / 3.0


def _log_exit(log_mass: np.ndarray, u: np.ndarray, c: float, t: float, sd_step: float, two_sided: bool) -> float:
    """log P(first crossing of ``|Z| >= c`` (or ``Z >= c``) at information ``t``), given the
    log-weighted density ``log_mass`` of W at the previous look on the points ``u``."""
    b = c * np.sqrt(t)
    log_tail = special.log_ndtr((u - b) / sd_step)  # log P(N(0,1) > (b - u) / sd)
    if two_sided:
        log_tail = np.logaddexp(log_tail, special.log_ndtr((-b - u) / sd_step))
    return float(special.logsumexp(log_mass + log_tail))


def _continuation(
    c: float,
    t: np.ndarray,
    k: int,
    u: np.ndarray | None,
    log_mass: np.ndarray | None,
    two_sided: bool,
    n_points: int,
    tail_sd: float,
) -> tuple[np.ndarray, np.ndarray]:
    """The density of W(t_k) on look k's continuation region (``|Z_k| < c`` or ``Z_k < c``), as
    grid points and log(density x Simpson weight), from the previous look's (``u, log_mass``)."""
    sd_k = np.sqrt(t[k])
    upper = min(c, tail_sd) * sd_k
    lower = -upper if two_sided else -tail_sd * sd_k
    x, w = _simpson_grid(lower, upper, n_points)
    if k == 0:
        log_density = -0.5 * (x / sd_k) ** 2 - np.log(sd_k * _SQRT_2PI)
    else:
        # the convolution in linear space, scaled by the largest mass (what underflows is < 1e-300
        # of the total and cannot move a crossing probability)
        step = np.sqrt(t[k] - t[k - 1])
        top = float(np.max(log_mass))
        kernel = np.exp(-0.5 * ((x[:, None] - u[None, :]) / step) ** 2) / (step * _SQRT_2PI)
        with np.errstate(divide="ignore"):
            log_density = np.log(kernel @ np.exp(log_mass - top)) + top
    return x, log_density + np.log(w)


def spending_boundaries(
    alpha: float,
    fractions: Sequence[float],
    spending: SpendingFunction = obrien_fleming_threshold,
    two_sided: bool = True,
    n_points: int = 401,
    tail_sd: float = 12.0,
) -> np.ndarray:
    """Critical values ``c_1..c_K`` (on the z scale) of the group-sequential design at level
    ``alpha`` with looks at ``fractions`` (increasing, in (0, 1]).

    ``two_sided``: the standard symmetric design, boundaries ``|Z_k| >= c_k`` with each side
    spending ``spending(alpha / 2, t)`` cumulatively (both sides together twice that, ``alpha`` by
    t = 1); otherwise the upper boundary ``Z_k >= c_k`` alone spending ``spending(alpha, t)``. A
    look with nothing left to spend gets ``c = inf``. The default spending function is the
    Lan-DeMets O'Brien-Fleming type ``spending(a, t) = 2 (1 - Phi(z_{1 - a/2} / sqrt(t)))``.
    """
    t = np.asarray(fractions, dtype=float)
    if t.ndim != 1 or t.size == 0:
        raise ValueError("fractions must be a non-empty sequence")
    if np.any(t <= 0) or np.any(t > 1) or np.any(np.diff(t) <= 0):
        raise ValueError(f"information fractions must increase strictly within (0, 1], got {list(t)}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    sides = 2.0 if two_sided else 1.0
    per_side = np.array([spending(alpha / sides, float(x)) for x in t])
    increments = sides * np.diff(np.concatenate([[0.0], per_side]))  # what each look spends, both sides
    bounds = np.empty(t.size)
    # look 1: Z_1 ~ N(0, 1)
    bounds[0] = stats.norm.isf(increments[0] / sides) if increments[0] > 0 else np.inf
    u = log_mass = None
    for k in range(t.size):
        if k > 0:
            sd_step = np.sqrt(t[k] - t[k - 1])
            target = increments[k]
            if target <= 0:
                bounds[k] = np.inf
            else:
                log_target = np.log(target)

                def gap(c: float) -> float:
                    return _log_exit(log_mass, u, c, t[k], sd_step, two_sided) - log_target

                hi = 1.0
                while gap(hi) > 0:
                    hi *= 2.0
                lo = 0.0 if two_sided else -tail_sd
                bounds[k] = optimize.brentq(gap, lo, hi, xtol=1e-10) if gap(lo) > 0 else lo
        if k == t.size - 1:
            break
        u, log_mass = _continuation(bounds[k], t, k, u, log_mass, two_sided, n_points, tail_sd)
    return bounds


@lru_cache(maxsize=4096)
def _cached_two_sided(alpha: float, fractions: tuple[float, ...]) -> tuple[float, ...]:
    return tuple(float(b) for b in spending_boundaries(alpha, fractions))


def exact_obrien_fleming_thresholds(alpha: float, fractions: Sequence[float]) -> list[float]:
    """Two-sided nominal p-value thresholds ``2 (1 - Phi(c_k))`` of the exact symmetric two-sided
    Lan-DeMets O'Brien-Fleming design at level ``alpha`` with looks at ``fractions`` (cached): each
    side spends ``alpha*(t) = 2 (1 - Phi(z_{1 - alpha/4} / sqrt(t)))``, the design of gsDesign
    (``test.type = 2``) and ldbounds.

    Unlike :func:`thinkbias.stats.sequential.obrien_fleming_threshold` (the paper's rule, which
    uses the two-sided spending value ``2 (1 - Phi(z_{1 - alpha/2} / sqrt(t)))`` itself as each
    look's threshold), the crossing probabilities of these thresholds sum to ``2 alpha*(t_K)`` over
    the looks: exactly ``alpha`` when the last look is at t = 1.
    """
    bounds = _cached_two_sided(float(alpha), tuple(float(x) for x in fractions))
    return [float(2.0 * stats.norm.sf(b)) for b in bounds]


def crossing_probabilities(
    bounds: Sequence[float],
    fractions: Sequence[float],
    two_sided: bool = True,
    n_points: int = 401,
    tail_sd: float = 12.0,
) -> np.ndarray:
    """Null probability of first crossing each look's boundary (the alpha each look spends): the
    forward computation of :func:`spending_boundaries`, for checking a design."""
    t = np.asarray(fractions, dtype=float)
    c = np.asarray(bounds, dtype=float)
    out = np.empty(t.size)
    out[0] = (2.0 if two_sided else 1.0) * stats.norm.sf(c[0])
    u = log_mass = None
    for k in range(t.size):
        if k > 0:
            out[k] = np.exp(_log_exit(log_mass, u, c[k], t[k], np.sqrt(t[k] - t[k - 1]), two_sided))
        if k == t.size - 1:
            break
        u, log_mass = _continuation(c[k], t, k, u, log_mass, two_sided, n_points, tail_sd)
    return out
