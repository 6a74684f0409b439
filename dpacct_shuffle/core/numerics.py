"""Numerical kernels for the neutral-aware variation-ratio bound (SPEC §3).

The divergence of the dominating pair is

    δ(ε) = (1/n) · E[(c_A·A + c_B·B + c_K·K)⁺],   (A, B, K, rest) ~ Multinomial(n; r_A, r_B, s, ρ).

It is evaluated as a sum over C = A + B ~ Bin(n, r_A + r_B) and K | C = c ~ Bin(n − c, s/(1 − r_A − r_B))
of the inner expectation over A | C = c ~ Bin(c, π), π = r_A/(r_A + r_B), which has the closed form

    g(c, k) = E[(x·A + y)⁺] = x·c·π·P[Bin(c−1, π) ≥ t−1] + y·P[Bin(c, π) ≥ t],

with x = c_A − c_B > 0, y = c_B·c + c_K·k and t the smallest integer with x·t + y > 0
(E[A·1{A ≥ t}] = c·π·P[Bin(c−1, π) ≥ t−1]).  g is non-increasing in k (c_K ≤ 0), so grouping k into
bands and evaluating each band at its lowest k is an upper bound, at its highest k a lower estimate.

Every quantity returned as an upper bound carries explicit margins:

* special-function error: each closed-form term is computed from two regularized incomplete beta
  values; we add ``SPECIAL_FUNCTION_RTOL`` × (|first term| + |second term|), which dominates the
  cancellation error of the difference;
* truncated C tails: under the first distribution of the pair C = C' + V with C' ~ Bin(n−1, r_A+r_B),
  V ∈ {0, 1}, and each (c, k) cell contributes at most its probability (the conditional hockey-stick
  divergence is ≤ 1), so the dropped cells contribute at most P[C' ≤ c_lo − 1] + P[C' ≥ c_hi];
* floating-point summation: the final sum is multiplied by (1 + ``SUMMATION_RTOL``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import special, stats

SPECIAL_FUNCTION_RTOL = 1e-12
SUMMATION_RTOL = 1e-10
# Below this many (c, k) cells every cell is summed exactly (no banding, no truncation).
EXACT_CELL_LIMIT = 60_000
# Memory/time guard: number of C values processed per chunk.
C_CHUNK = 20_000


class Bracket(NamedTuple):
    """A lower estimate and a certified upper bound of one hockey-stick divergence."""

    lower: float
    upper: float


class DirectionalResult(NamedTuple):
    """Bracket of one direction plus the part of the upper bound that is truncated tail mass."""

    lower: float
    upper: float
    dropped: float


def _upper_tail(t: np.ndarray, c: np.ndarray, pi: float) -> np.ndarray:
    """P[Bin(c, π) ≥ t] for integer-valued float arrays (broadcast), exact at the ends."""
    t, c = np.broadcast_arrays(t, c)
    out = np.where(t <= 0, 1.0, 0.0)
    inner = (t >= 1) & (t <= c)
    if np.any(inner):
        ti = t[inner]
        out[inner] = special.betainc(ti, c[inner] - ti + 1.0, pi)
    return out


def inner_expectation(
    c: np.ndarray, k: np.ndarray, x: float, c_b: float, c_k: float, pi: float
) -> tuple[np.ndarray, np.ndarray]:
    """Lower/upper values of g(c, k) = E[(x·A + c_B·c + c_K·k)⁺], A ~ Bin(c, π).

    Returns two arrays (broadcast over c, k) that bracket the exact value; the bracket only reflects
    special-function rounding (relative ``SPECIAL_FUNCTION_RTOL`` of the two closed-form terms).
    """
    y = c_b * c + c_k * k
    t = np.floor(-y / x) + 1.0
    mean_term = x * c * pi
    first = mean_term * _upper_tail(t - 1.0, c - 1.0, pi)
    second = y * _upper_tail(t, c, pi)
    value = first + second
    margin = SPECIAL_FUNCTION_RTOL * (np.abs(first) + np.abs(second))
    upper = np.minimum(np.maximum(value + margin, 0.0), np.maximum(mean_term, 0.0) + margin)
    lower = np.maximum(value - margin, 0.0)
    return lower, upper


def _binom_pmf(k: np.ndarray, n: np.ndarray | int, p: float) -> np.ndarray:
    return stats.binom.pmf(k, n, p)


def _band_masses(edges: np.ndarray, m: np.ndarray, p: float) -> np.ndarray:
    """P[K ∈ [e_j, e_{j+1})] for K ~ Bin(m, p); edges shape (rows, B+1), m shape (rows, 1).

    Uses CDF differences below the mean and survival-function differences above it, so tail band
    masses keep their relative accuracy.
    """
    cdf = stats.binom.cdf(edges - 1.0, m, p)
    sf = stats.binom.sf(edges - 1.0, m, p)
    lower_side = cdf[:, 1:] - cdf[:, :-1]
    upper_side = sf[:, :-1] - sf[:, 1:]
    use_sf = edges[:, 1:] > (m * p)
    return np.maximum(np.where(use_sf, upper_side, lower_side), 0.0)


class DirectionalProblem(NamedTuple):
    """One direction of the dominating pair at privacy level ε (SPEC §3 notation)."""

    n: int
    r_a: float  # clone rate of the type favoured by the first distribution
    r_b: float  # clone rate of the other type
    s: float  # neutral share of the other users
    c_a: float
    c_b: float
    c_k: float


def _c_range(n: int, r_c: float, tail: float) -> tuple[int, int, float]:
    """Range [c_lo, c_hi] of C = A + B kept, and a certified bound on the dropped cells' mass."""
    if n <= 1 or r_c >= 1.0:
        return (n if r_c >= 1.0 else 0), n, 0.0
    c_lo = int(max(0.0, stats.binom.ppf(tail, n - 1, r_c) - 1.0))
    c_hi = int(min(float(n), stats.binom.isf(tail, n - 1, r_c) + 2.0))
    dropped = 0.0
    if c_lo >= 1:
        dropped += float(stats.binom.cdf(c_lo - 1, n - 1, r_c))
    if c_hi <= n - 1:
        dropped += float(stats.binom.sf(c_hi - 1, n - 1, r_c))
    return c_lo, c_hi, dropped


def directional_bracket(problem: DirectionalProblem, bands: int, tail: float) -> DirectionalResult:
    """Bracket (1/n)·E[(c_A·A + c_B·B + c_K·K)⁺] for one direction.

    ``bands`` controls the number of K bands per C value; ``tail`` the probability mass of C (and K)
    left out on each side. Small problems (≤ ``EXACT_CELL_LIMIT`` cells) sum every cell.
    """
    n, r_a, r_b, s = problem.n, problem.r_a, problem.r_b, problem.s
    if problem.c_a <= 0.0:
        return DirectionalResult(0.0, 0.0, 0.0)
    r_c = r_a + r_b
    pi = r_a / r_c
    x = problem.c_a - problem.c_b
    k_rate = 0.0 if (s <= 0.0 or r_c >= 1.0) else min(1.0, s / (1.0 - r_c))

    cells = (n + 1) * (n + 2) // 2 if k_rate > 0.0 else n + 1
    exact = cells <= EXACT_CELL_LIMIT
    if exact:
        c_lo, c_hi, dropped = 0, n, 0.0
    else:
        c_lo, c_hi, dropped = _c_range(n, r_c, tail)

    lower_total = 0.0
    upper_total = 0.0
    for start in range(c_lo, c_hi + 1, C_CHUNK):
        c = np.arange(start, min(c_hi, start + C_CHUNK - 1) + 1, dtype=float)
        weight_c = _binom_pmf(c, n, r_c)
        m = n - c
        if k_rate == 0.0:
            lo, hi = inner_expectation(c, np.zeros_like(c), x, problem.c_b, 0.0, pi)
            lower_total += float(np.sum(weight_c * lo))
            upper_total += float(np.sum(weight_c * hi))
            continue
        if exact:
            # every k: cells (c, k) with k ≤ n − c
            for ci, wc in zip(c, weight_c):
                k = np.arange(0.0, n - ci + 1.0)
                wk = _binom_pmf(k, n - ci, k_rate)
                lo, hi = inner_expectation(ci, k, x, problem.c_b, problem.c_k, pi)
                lower_total += float(wc * np.sum(wk * lo))
                upper_total += float(wc * np.sum(wk * hi))
            continue
        band_lower, band_upper = _banded_sums(c, m, k_rate, bands, tail, x, problem, pi)
        lower_total += float(np.sum(weight_c * band_lower))
        upper_total += float(np.sum(weight_c * band_upper))

    lower = max(0.0, lower_total / n * (1.0 - SUMMATION_RTOL))
    upper = min(1.0, upper_total / n * (1.0 + SUMMATION_RTOL) + dropped)
    return DirectionalResult(lower, upper, dropped)


def _banded_sums(
    c: np.ndarray,
    m: np.ndarray,
    k_rate: float,
    bands: int,
    tail: float,
    x: float,
    problem: DirectionalProblem,
    pi: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Lower/upper values of Σ_k P[K = k | c]·g(c, k) for each c, K | c ~ Bin(m, k_rate).

    g(c, ·) is convex (an expectation of the positive part of a function affine in k), so on a band
    [k0, k1] it lies below its chord: Σ_band P(k)·g(k) ≤ mass·g(k0) + (g(k1) − g(k0))·(E[K·1_band] −
    k0·mass)/(k1 − k0) — a certified upper bound, exact to second order in the band width; Jensen's
    inequality gives the lower estimate mass·g(E[K | band]).
    """
    edges = _k_band_edges(m, k_rate, bands, tail)
    mm = m[:, None]
    mass = _band_masses(edges, mm, k_rate)
    # E[K·1{K ∈ [e0, e1)}] = m·p·P[Bin(m − 1, p) ∈ [e0 − 1, e1 − 1)]
    first_moment = mm * k_rate * _band_masses(np.maximum(edges - 1.0, 0.0), np.maximum(mm - 1.0, 0.0),
                                              k_rate)
    k0 = edges[:, :-1]
    k1 = np.maximum(edges[:, 1:] - 1.0, k0)
    cc = c[:, None]
    _, g0 = inner_expectation(cc, k0, x, problem.c_b, problem.c_k, pi)
    _, g1 = inner_expectation(cc, k1, x, problem.c_b, problem.c_k, pi)
    width = k1 - k0
    safe_width = np.where(width > 0.0, width, 1.0)
    offset = np.clip(first_moment - k0 * mass, 0.0, width * mass)
    upper = mass * g0 + np.where(width > 0.0, (g1 - g0) * offset / safe_width, 0.0)
    safe_mass = np.where(mass > 0.0, mass, 1.0)
    band_mean = np.clip(first_moment / safe_mass, k0, k1)
    g_mean, _ = inner_expectation(cc, band_mean, x, problem.c_b, problem.c_k, pi)
    lower = np.where(mass > 0.0, mass * g_mean, 0.0)
    return np.sum(lower, axis=1), np.sum(np.maximum(upper, 0.0), axis=1)


def _k_band_edges(m: np.ndarray, p: float, bands: int, tail: float) -> np.ndarray:
    """Band edges for K ~ Bin(m, p), one row per m: [0, lo, …(bands interior)…, hi, m+1].

    The outer bands [0, lo) and [hi, m] carry at most ``tail`` mass each (normal-approximation
    placement; any placement is valid, the placement only affects tightness). Interior edges are
    spaced evenly in standard deviations, finer near the mean.
    """
    mean = m * p
    sd = np.sqrt(np.maximum(m * p * (1.0 - p), 1e-300))
    z_tail = max(1.0, float(-stats.norm.ppf(max(tail, 1e-300)))) + 1.0
    # symmetric z grid, denser in the centre: z = z_tail * u^1.5 for u on a uniform grid
    u = np.linspace(-1.0, 1.0, bands + 1)
    z = z_tail * np.sign(u) * np.abs(u) ** 1.5
    raw = mean[:, None] + sd[:, None] * z[None, :]
    # round outwards from the mean so the outer bands never swallow the bulk of the mass
    interior = np.where(z[None, :] < 0.0, np.floor(raw), np.ceil(raw))
    interior[:, bands // 2] = np.floor(mean)
    interior = np.clip(interior, 0.0, m[:, None] + 1.0)
    edges = np.concatenate([np.zeros((len(m), 1)), interior, (m + 1.0)[:, None]], axis=1)
    return np.maximum.accumulate(edges, axis=1)


__all__ = [
    "Bracket",
    "DirectionalProblem",
    "DirectionalResult",
    "directional_bracket",
    "inner_expectation",
    "SPECIAL_FUNCTION_RTOL",
    "SUMMATION_RTOL",
]
