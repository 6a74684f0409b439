"""One direction of the dominating pair as a numerical problem: its parameters, the rates derived
from them, the result types and the error margins shared by every evaluator.

The margins (special-function error, truncated C tails, summation) are stated in
:mod:`dpacct_shuffle.core.numerics`; :func:`special_function_rtol` is the relative error assumed
for scipy's binomial functions, :func:`kept_c_range` the truncation of C and its dropped mass.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from dpacct_shuffle.core.binomial import binomial_cdf, binomial_sf
from dpacct_shuffle.core.lazy_import import LazyModule
from dpacct_shuffle.core.search import smallest_true_integer


stats = LazyModule("scipy.stats")  # imported on first use (lean `import dpacct_shuffle`)


SCIPY_RTOL_FLOOR = 1e-12  # floor of special_function_rtol (small numbers of trials)


SUMMATION_RTOL = 1e-10


UNIT_ROUNDOFF = 2.0**-53


def special_function_rtol(trials: np.ndarray | float) -> np.ndarray | float:
    """Relative error assumed for scipy binomial pmf/cdf/sf and betainc with ``trials`` trials.

    max(1e-12, 100·u·√m): ten times the largest error seen against 30-digit references
    (m = 1e4 … 1e9, random success rates and thresholds up to 7 standard deviations).
    """
    return np.maximum(SCIPY_RTOL_FLOOR, 100.0 * UNIT_ROUNDOFF * np.sqrt(np.maximum(trials, 0.0)))


class Bracket(NamedTuple):
    """A lower estimate and a certified upper bound of one hockey-stick divergence."""

    lower: float
    upper: float


class DirectionalResult(NamedTuple):
    """Bracket of one direction plus the part of the upper bound that is truncated tail mass."""

    lower: float
    upper: float
    dropped: float


class DirectionalProblem(NamedTuple):
    """One direction of the dominating pair at privacy level ε (notation of docs/theory.md,
    "Neutral-aware bound")."""

    n: int
    r_a: float  # clone rate of the type favoured by the first distribution
    r_b: float  # clone rate of the other type
    s: float  # neutral share of the other users
    c_a: float
    c_b: float
    c_k: float


class DerivedRates(NamedTuple):
    """Rates of one direction derived from its :class:`DirectionalProblem`."""

    r_c: float  # clone rate r_A + r_B of C = A + B
    pi: float  # π = r_A/r_C, the rate of A | C
    slope: float  # x = c_A − c_B, the slope of A in the inner expectation
    k_rate: float  # s', the rate of K | C (:func:`neutral_rate`)
    cells: int  # number of (c, k) cells of the full sum


def derived_rates(problem: DirectionalProblem) -> DerivedRates:
    """The :class:`DerivedRates` (r_C, π, x, s', cells) of one direction."""
    r_c = problem.r_a + problem.r_b
    k_rate = neutral_rate(problem.s, r_c)
    n = problem.n
    cells = (n + 1) * (n + 2) // 2 if k_rate > 0.0 else n + 1
    return DerivedRates(r_c, problem.r_a / r_c, problem.c_a - problem.c_b, k_rate, cells)


def neutral_rate(s: float, r_c: float) -> float:
    """s' = s/(1 − r_c), the rate of K | C = c ~ Bin(n − c, s').

    Shares below 1e-290 are treated as 0 (scipy's binomial overflows at denormal rates); a smaller
    share only loosens the bound (δ is non-increasing in s), so this stays an upper bound.
    """
    if s < 1e-290 or r_c >= 1.0:
        return 0.0
    return min(1.0, s / (1.0 - r_c))


@functools.lru_cache(maxsize=1024)
def kept_c_range(n: int, r_c: float, tail: float) -> tuple[int, int, float]:
    """Range [c_lo, c_hi] of C = A + B kept, and a certified bound on the dropped cells' mass.

    With C' ~ Bin(n − 1, r_c): c_lo is the largest value with P[C' ≤ c_lo − 1] ≤ tail and c_hi the
    smallest with P[C' ≥ c_hi] ≤ tail, found by bisection on scipy's cdf/sf (scipy's own binomial
    ppf/isf are unreliable for tiny tails: isf(1e-18, 1999, 0.02) returns 1999). Cached: it does
    not depend on ε, and a search asks for the same range at every point and band refinement.
    """
    if n <= 1 or r_c >= 1.0:
        return (n if r_c >= 1.0 else 0), n, 0.0
    m = n - 1
    mean = int(m * r_c)
    c_hi = smallest_true_integer(lambda k: float(binomial_sf(k - 1, m, r_c)) <= tail, mean, n)
    c_lo = smallest_true_integer(lambda k: float(binomial_cdf(mean - k, m, r_c)) <= tail, 0,
                           mean + 1)
    c_lo = max(0, mean + 1 - c_lo)
    dropped = 0.0
    if c_lo >= 1:
        dropped += float(binomial_cdf(c_lo - 1, m, r_c))
    if c_hi <= n - 1:
        dropped += float(binomial_sf(c_hi - 1, m, r_c))
    return c_lo, c_hi, dropped
