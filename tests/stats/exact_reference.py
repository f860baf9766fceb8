"""Independent references for the tail tests: exact integer arithmetic and mpmath at 60 digits."""

import math
from fractions import Fraction

import mpmath

mpmath.mp.dps = 60


def binomial_lower_sum(m: int, n: int) -> int:
    """sum_{k <= m} C(n, k) in exact integers (C(n, k) = C(n, k - 1) (n - k + 1) / k)."""
    term = total = 1
    for k in range(1, m + 1):
        term = term * (n - k + 1) // k
        total += term
    assert term == math.comb(n, m)
    return total


def log10_fraction(x: Fraction) -> float:
    """log10 of an exact fraction, in mpmath."""
    return float(mpmath.log10(mpmath.mpf(x.numerator) / x.denominator))


def log10_chi2_sf_1df(x: Fraction) -> float:
    """log10 P(chi-square_1 > x) = log10 erfc(sqrt(x / 2)), x an exact fraction, in mpmath."""
    return float(mpmath.log10(mpmath.erfc(mpmath.sqrt(mpmath.mpf(x.numerator) / x.denominator / 2))))
