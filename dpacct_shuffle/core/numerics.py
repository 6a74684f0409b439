"""Numerical kernels for the neutral-aware variation-ratio bound (docs/theory.md, "Neutral-aware
bound").

The divergence of the dominating pair is

    δ(ε) = (1/n) · E[(c_A·A + c_B·B + c_K·K)⁺],   (A, B, K, rest) ~ Multinomial(n; r_A, r_B, s, ρ).

It is evaluated as a sum over C = A + B ~ Bin(n, r_A + r_B) and K | C = c ~ Bin(n − c, s/(1 − r_A − r_B))
of the inner expectation over A | C = c ~ Bin(c, π), π = r_A/(r_A + r_B), which has the closed form

    g(c, k) = E[(x·A + y)⁺] = x·c·π·P[Bin(c−1, π) ≥ t−1] + y·P[Bin(c, π) ≥ t],

with x = c_A − c_B > 0, y = c_B·c + c_K·k and t the smallest integer with x·t + y > 0
(E[A·1{A ≥ t}] = c·π·P[Bin(c−1, π) ≥ t−1]).  g is non-increasing in k (c_K ≤ 0), so grouping k into
bands and evaluating each band at its lowest k is an upper bound, at its highest k a lower estimate.

Every quantity returned as an upper bound carries explicit margins:

* special-function error: scipy's binomial pmf/cdf/sf and regularized incomplete beta lose accuracy
  as the number of trials m grows (measured against 30-digit mpmath sums: up to ≈ 10·u·√m, e.g.
  2.4e-11 at m = 1e9, u = 2⁻⁵³); every such value is taken with relative error
  :func:`special_function_rtol` (m) = max(1e-12, 100·u·√m), a tenfold safety factor. Each
  closed-form term is computed from two incomplete beta values; we add that tolerance ×
  (|first term| + |second term|), which dominates the cancellation error of the difference;
* truncated C tails: under the first distribution of the pair C = C' + V with C' ~ Bin(n−1, r_A+r_B),
  V ∈ {0, 1}, and each (c, k) cell contributes at most its probability (the conditional hockey-stick
  divergence is ≤ 1), so the dropped cells contribute at most P[C' ≤ c_lo − 1] + P[C' ≥ c_hi];
* floating-point summation and the C weights: the final sum is multiplied by
  (1 + ``SUMMATION_RTOL`` + special_function_rtol(n)), the dropped mass by (1 + special_function_rtol(n)).

The fast path (:func:`directional_bracket`) is documented there; its extra approximations (coupled
K laws per block of C values, recurrences re-anchored exactly) are all on the safe side. Two regimes
have their own evaluation, used by both paths where stated: huge e^ε, where only cells without
B- (and K-) clones can be positive (:func:`isolated_clone_bracket`, a closed form: p = ∞ tends to
β·(1 − r_B − s)^(n−1)), and tiny δ on the fast path (:func:`tilted_window_bracket`: every cell of a
window around the exponentially tilted law, the rest bounded by Chernoff times a tilted tail mass).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np
from scipy import special

from dpacct_shuffle.core.lazy_import import LazyModule
from dpacct_shuffle.core.search import bisect, smallest_true_integer

stats = LazyModule("scipy.stats")  # imported on first use (lean `import dpacct_shuffle`)

SCIPY_RTOL_FLOOR = 1e-12  # floor of special_function_rtol (small numbers of trials)
SUMMATION_RTOL = 1e-10
UNIT_ROUNDOFF = 2.0**-53
# Below this many (c, k) cells every cell is summed exactly (no banding, no truncation).
EXACT_CELL_LIMIT = 60_000
# Exact path: inner expectations for C values up to this are summed term by term (no cancellation).
DIRECT_SUM_MAX_C = 2_000
# … when the closed form's rounding margin of that C value exceeds this fraction of the chunk's
# average weighted value (so the remaining margins total at most that fraction of the sum)
_DIRECT_SUM_TRIGGER = 1e-11
# Memory/time guard: number of C values processed per chunk.
C_CHUNK = 20_000


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
    c: np.ndarray, k: np.ndarray, x: float, c_b: float, c_k: float, pi: float,
    c_a: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Lower/upper values of g(c, k) = E[(x·A + c_B·c + c_K·k)⁺], A ~ Bin(c, π).

    Returns two arrays (broadcast over c, k) that bracket the exact value; the bracket only reflects
    special-function rounding (relative :func:`special_function_rtol` (c) of the two closed-form
    terms).
    """
    y = c_b * c + c_k * k
    t = np.floor(-y / x) + 1.0
    if c_a is not None:
        # −y/x rounds (badly when e^ε is huge): fix t with the level c_A·t + c_B·(c − t) + c_K·k,
        # which has no cancellation at t = c
        def level_at(t_value: np.ndarray) -> np.ndarray:
            return c_a * t_value + c_b * (c - t_value) + c_k * k

        t = np.where(level_at(t - 1.0) > 0.0, t - 1.0, t)
        t = np.where(level_at(t) <= 0.0, t + 1.0, t)
    mean_term = x * c * pi
    first = mean_term * _upper_tail(t - 1.0, c - 1.0, pi)
    second = y * _upper_tail(t, c, pi)
    value = first + second
    margin = special_function_rtol(c) * (np.abs(first) + np.abs(second))
    upper = np.minimum(np.maximum(value + margin, 0.0), np.maximum(mean_term, 0.0) + margin)
    lower = np.maximum(value - margin, 0.0)
    return lower, upper


def inner_expectation_by_sums(c: int, k: np.ndarray, c_a: float, c_b: float, c_k: float,
                              pi: float) -> tuple[np.ndarray, np.ndarray]:
    """Lower/upper values of g(c, k) = E[(x·A + y)⁺], A ~ Bin(c, π), without cancellation.

    x = c_A − c_B, y = c_B·c + c_K·k ≤ 0. With t the smallest integer such that the level
    x·t + y = c_A·t + c_B·(c − t) + c_K·k is > 0 (computed in this form: no cancellation at t = c
    even when e^ε is huge),

        E[(x·A + y)⁺] = x·E[(A − t)⁺] + (x·t + y)·P[A ≥ t],  E[(A − t)⁺] = Σ_{j > t} P[A ≥ j],

    a sum of non-negative terms (tails by reverse cumulative sums of the pmf). Relative error: the
    pmf's special_function_rtol(c) plus (c + 8)·u for the sums.
    """
    k = np.asarray(k, dtype=float)
    x = c_a - c_b
    y = c_b * c + c_k * k

    def level_at(t_value: np.ndarray) -> np.ndarray:
        return c_a * t_value + c_b * (c - t_value) + c_k * k

    t = np.clip(np.floor(-y / x) + 1.0, 0.0, c + 1.0)
    # fix the threshold with the accurate level (the division may be off by one)
    t = np.where(level_at(t - 1.0) > 0.0, t - 1.0, t)
    t = np.where((level_at(t) <= 0.0) & (t <= c), t + 1.0, t)
    t = np.maximum(t, 0.0)
    pmf = stats.binom.pmf(np.arange(c + 1), c, pi)
    tail = np.concatenate([np.cumsum(pmf[::-1])[::-1], [0.0, 0.0]])  # tail[j] = P[A ≥ j]
    excess = np.concatenate([np.cumsum(tail[::-1])[::-1], [0.0]])  # excess[j] = Σ_{i ≥ j} P[A ≥ i]
    index = np.clip(t, 0, c + 1).astype(np.int64)
    level = np.maximum(level_at(t), 0.0)
    value = x * excess[index + 1] + level * tail[index]
    value = np.where(t > c, 0.0, value)
    rtol = float(special_function_rtol(c)) + (c + 8.0) * UNIT_ROUNDOFF
    # when the level at t − 1 or t is within rounding of 0 the threshold may be off by one: that
    # term is a rounding-size multiple r = 8u·(|c_A·t| + |c_B|·(c − t) + |c_K·k|) of its probability
    def rounding_at(t_value: np.ndarray) -> np.ndarray:
        return 8.0 * UNIT_ROUNDOFF * (abs(c_a) * np.abs(t_value) + abs(c_b) * np.abs(c - t_value)
                                      + abs(c_k) * k)

    rounding_below, rounding_level = rounding_at(t - 1.0), rounding_at(t)
    pmf_padded = np.concatenate([pmf, [0.0, 0.0]])
    slack = (rounding_below * np.where(level_at(t - 1.0) > -rounding_below,
                                       pmf_padded[np.maximum(index - 1, 0)], 0.0)
             + rounding_level * np.where(level_at(t) < rounding_level, pmf_padded[index], 0.0))
    return np.maximum(value * (1.0 - rtol) - slack, 0.0), value * (1.0 + rtol) + slack


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
    """One direction of the dominating pair at privacy level ε (notation of docs/theory.md,
    "Neutral-aware bound")."""

    n: int
    r_a: float  # clone rate of the type favoured by the first distribution
    r_b: float  # clone rate of the other type
    s: float  # neutral share of the other users
    c_a: float
    c_b: float
    c_k: float


def isolated_clone_bracket(problem: DirectionalProblem) -> DirectionalResult | None:
    """Closed form when only cells without B- (and K-) clones can be positive, else ``None``.

    If c_A·n + c_B ≤ 0, every cell with B ≥ 1 has c_A·A + c_B·B + c_K·K ≤ c_A·(n − 1) + c_B < 0;
    likewise every cell with K ≥ 1 when c_K < 0 and c_A·n + c_K ≤ 0. The remaining cells have value
    c_A·A ≥ 0, so with s* = s if c_K < 0 (else 0)

        (1/n)·E[(c_A·A + c_B·B + c_K·K)⁺] = (1/n)·c_A·E[A·1{B = 0, K·1{c_K < 0} = 0}]
                                           = c_A·r_A·(1 − r_B − s*)^(n − 1)

    (E[A·1{…}] = Σ_i P[user i is an A-clone, no other user is a B- or counted K-clone]). This is the
    regime of huge e^ε (p = ∞: δ(ε) tends to β·(1 − r_B − s)^(n−1), the chance that the victim's
    clone type is unique), where the closed forms of the other paths cancel catastrophically
    (their rounding margins grow like |c_B| ∝ e^ε). The conditions are checked with c_A·n rounded
    up by 4u; the value carries the rounding margin of its logarithm,
    8u·(|L| + |ln(c_A·r_A)| + 1) + 2u·(n − 1)·rate/(1 − rate) with L = (n − 1)·ln(1 − rate),
    rate = r_B + s*.
    """
    n, c_a = problem.n, problem.c_a
    reach = c_a * n * (1.0 + 4.0 * UNIT_ROUNDOFF)
    if not c_a > 0.0 or not reach + problem.c_b <= 0.0:
        return None
    if problem.c_k < 0.0 and not reach + problem.c_k <= 0.0:
        return None
    rate = problem.r_b + (problem.s if problem.c_k < 0.0 else 0.0)
    if not 0.0 <= rate < 1.0:
        return None
    log_mass = (n - 1) * math.log1p(-rate)
    log_scale = math.log(c_a * problem.r_a)
    log_error = (8.0 * UNIT_ROUNDOFF * (abs(log_mass) + abs(log_scale) + 1.0)
                 + 2.0 * UNIT_ROUNDOFF * (n - 1) * rate / (1.0 - rate))
    log_value = log_mass + log_scale
    upper = min(1.0, math.exp(log_value + log_error) * (1.0 + 4.0 * UNIT_ROUNDOFF))
    lower = min(upper, math.exp(log_value - log_error) * (1.0 - 4.0 * UNIT_ROUNDOFF))
    return DirectionalResult(lower, upper, 0.0)


def _derived(problem: DirectionalProblem) -> tuple[float, float, float, float, int]:
    """(r_C, π, x, s', cells) of one direction: clone rate r_A + r_B, π = r_A/r_C, slope
    x = c_A − c_B of A in the inner expectation, the rate s' of K | C, and the number of (c, k)
    cells of the full sum."""
    r_c = problem.r_a + problem.r_b
    k_rate = _neutral_rate(problem.s, r_c)
    n = problem.n
    cells = (n + 1) * (n + 2) // 2 if k_rate > 0.0 else n + 1
    return r_c, problem.r_a / r_c, problem.c_a - problem.c_b, k_rate, cells


def _neutral_rate(s: float, r_c: float) -> float:
    """s' = s/(1 − r_c), the rate of K | C = c ~ Bin(n − c, s').

    Shares below 1e-290 are treated as 0 (scipy's binomial overflows at denormal rates); a smaller
    share only loosens the bound (δ is non-increasing in s), so this stays an upper bound.
    """
    if s < 1e-290 or r_c >= 1.0:
        return 0.0
    return min(1.0, s / (1.0 - r_c))


def _c_range(n: int, r_c: float, tail: float) -> tuple[int, int, float]:
    """Range [c_lo, c_hi] of C = A + B kept, and a certified bound on the dropped cells' mass.

    With C' ~ Bin(n − 1, r_c): c_lo is the largest value with P[C' ≤ c_lo − 1] ≤ tail and c_hi the
    smallest with P[C' ≥ c_hi] ≤ tail, found by bisection on scipy's cdf/sf (scipy's own binomial
    ppf/isf are unreliable for tiny tails: isf(1e-18, 1999, 0.02) returns 1999).
    """
    if n <= 1 or r_c >= 1.0:
        return (n if r_c >= 1.0 else 0), n, 0.0
    m = n - 1
    mean = int(m * r_c)
    c_hi = smallest_true_integer(lambda k: float(stats.binom.sf(k - 1, m, r_c)) <= tail, mean, n)
    c_lo = smallest_true_integer(lambda k: float(stats.binom.cdf(mean - k, m, r_c)) <= tail, 0,
                           mean + 1)
    c_lo = max(0, mean + 1 - c_lo)
    dropped = 0.0
    if c_lo >= 1:
        dropped += float(stats.binom.cdf(c_lo - 1, m, r_c))
    if c_hi <= n - 1:
        dropped += float(stats.binom.sf(c_hi - 1, m, r_c))
    return c_lo, c_hi, dropped


def reference_directional_bracket(problem: DirectionalProblem, bands: int, tail: float
                                  ) -> DirectionalResult:
    """Reference path: bracket (1/n)·E[(c_A·A + c_B·B + c_K·K)⁺] with special functions per cell.

    Every (C value, K band) term is evaluated with its own incomplete-beta calls. Kept as the
    reference that :func:`directional_bracket` (the fast path) is tested against.

    ``bands`` controls the number of K bands per C value; ``tail`` the probability mass of C (and K)
    left out on each side. Small problems (≤ ``EXACT_CELL_LIMIT`` cells) sum every cell.
    """
    if problem.c_a <= 0.0:
        return DirectionalResult(0.0, 0.0, 0.0)
    isolated = isolated_clone_bracket(problem)
    if isolated is not None:
        return isolated
    n = problem.n
    r_c, pi, x, k_rate, cells = _derived(problem)
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
            lo, hi = inner_expectation(c, np.zeros_like(c), x, problem.c_b, 0.0, pi, problem.c_a)
            if exact:  # small c, visible cancellation: sums without cancellation instead
                _resum_loose_cells(c, weight_c, lo, hi, problem, pi)
            lower_total += float(np.sum(weight_c * lo))
            upper_total += float(np.sum(weight_c * hi))
            continue
        if exact:
            # every k: cells (c, k) with k ≤ n − c
            for ci, wc in zip(c, weight_c):
                k = np.arange(0.0, n - ci + 1.0)
                wk = _binom_pmf(k, n - ci, k_rate)
                lo, hi = inner_expectation_by_sums(int(ci), k, problem.c_a, problem.c_b, problem.c_k,
                                                   pi)
                lower_total += float(wc * np.sum(wk * lo))
                upper_total += float(wc * np.sum(wk * hi))
            continue
        band_lower, band_upper = _banded_sums(c, m, k_rate, bands, tail, x, problem, pi)
        lower_total += float(np.sum(weight_c * band_lower))
        upper_total += float(np.sum(weight_c * band_upper))

    weight_rtol = SUMMATION_RTOL + float(special_function_rtol(n))
    lower = max(0.0, lower_total / n * (1.0 - weight_rtol))
    upper = min(1.0, upper_total / n * (1.0 + weight_rtol) + dropped * (1.0 + weight_rtol))
    return DirectionalResult(lower, upper, dropped)


def _resum_loose_cells(c: np.ndarray, weight_c: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                       problem: DirectionalProblem, pi: float) -> None:
    """Replace (in place) closed-form values g(c, 0) whose rounding margin is visible by sums.

    A cell is re-evaluated by :func:`inner_expectation_by_sums` (no cancellation) when c ≤
    ``DIRECT_SUM_MAX_C`` and its weighted margin exceeds ``_DIRECT_SUM_TRIGGER`` times the chunk's
    average weighted upper value. The average is recomputed after each pass: when e^ε is huge the
    closed form's margins (∝ |c_B|) can dominate every upper value, and a trigger measured against
    those inflated values would leave most cells loose.
    """
    done = np.zeros(len(c), dtype=bool)
    while True:
        width = weight_c * (upper - lower)
        loose = ~done & (c <= DIRECT_SUM_MAX_C) & (
            width > _DIRECT_SUM_TRIGGER * float(np.sum(weight_c * upper)) / len(c))
        if not np.any(loose):
            return
        for i in np.nonzero(loose)[0]:
            lower[i], upper[i] = (v[0] for v in inner_expectation_by_sums(
                int(c[i]), np.array([0.0]), problem.c_a, problem.c_b, 0.0, pi))
        done |= loose


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




# -------------------------------------------------------------------------------------------------
# Fast path: binomial tails carried along C by O(1) recurrences, re-anchored exactly every block.
# -------------------------------------------------------------------------------------------------

# Longest run of C values carried by recurrences from one exact anchor.
MAX_BLOCK = 256
# Anchors whose point probability is below this are not carried (underflow territory).
_UNDERFLOW = 1e-280
# A chain whose carried margin on g exceeds twice a fresh anchor's plus this fraction of g is
# re-anchored exactly.
_REANCHOR_RTOL = 1e-8
# Per-step growth of the relative error bound of a carried point probability (four roundings,
# with a safety factor 1.5).
_PMF_STEP_ERROR = 6.0 * UNIT_ROUNDOFF


class ChainState(NamedTuple):
    """Binomial quantities along chains (c, t): A ~ Bin(c, π).

    ``tail`` = P[A ≥ t] with absolute error at most ``tail_error``; ``pmf`` = P[A = t] with relative
    error at most ``pmf_rtol`` (broadcastable to the chains).
    """

    t: np.ndarray
    tail: np.ndarray
    pmf: np.ndarray
    tail_error: np.ndarray
    pmf_rtol: np.ndarray


def anchor_chains(c: np.ndarray, t: np.ndarray, pi: float) -> ChainState:
    """Exact anchors: P[Bin(c, π) ≥ t] by the regularized incomplete beta, P[Bin(c, π) = t] by scipy.

    Both carry relative error ≤ :func:`special_function_rtol` (c).
    """
    c, t = np.broadcast_arrays(np.asarray(c, dtype=float), np.asarray(t, dtype=float))
    tail = _upper_tail(t, c, pi)
    with np.errstate(all="ignore"):
        pmf = np.where((t >= 0.0) & (t <= c), stats.binom.pmf(t, c, pi), 0.0)
    rtol = special_function_rtol(c)
    return ChainState(t.copy(), tail, pmf, rtol * tail, rtol)


def advance_chains(state: ChainState, c: np.ndarray, t_next: np.ndarray, pi: float) -> ChainState:
    """One step (c, t) → (c + 1, t_next) with t_next − t ∈ {0, 1} and 1 ≤ t ≤ c.

    Recurrences (A' = A + Bernoulli(π)):

    * t_next = t:     P[A' ≥ t]   = P[A ≥ t] + π·P[A = t − 1] = S + pmf·t(1 − π)/(c − t + 1),
                      P[A' = t]   = pmf·(1 − π)(c + 1)/(c + 1 − t);
    * t_next = t + 1: P[A' ≥ t+1] = P[A ≥ t] − (1 − π)·P[A = t],
                      P[A' = t+1] = pmf·π(c + 1)/(t + 1).

    Error propagation (first order, rounding unit u): the increment carries the point
    probability's relative error plus ≤ 6u, the sum one more rounding, so
    err' = err + |increment|·(pmf_rtol + 6u) + 2u·|S'|, and pmf_rtol' = pmf_rtol + 6u.
    """
    t = state.t
    up = t_next > t
    one_m_pi = 1.0 - pi
    denom = c - t + 1.0
    safe = np.where(denom > 0.0, denom, 1.0)
    with np.errstate(all="ignore"):
        increment = np.where(up, -one_m_pi * state.pmf, state.pmf * (t * one_m_pi / safe))
        factor = np.where(up, pi * (c + 1.0) / (t + 1.0), one_m_pi * (c + 1.0) / safe)
    tail = state.tail + increment
    error = (state.tail_error + np.abs(increment) * (state.pmf_rtol + 6.0 * UNIT_ROUNDOFF)
             + 2.0 * UNIT_ROUNDOFF * np.abs(tail))
    return ChainState(np.asarray(t_next, dtype=float), tail, state.pmf * factor, error,
                      state.pmf_rtol + _PMF_STEP_ERROR)


def move_threshold(state: ChainState, c: np.ndarray, t_target: np.ndarray, pi: float
                   ) -> ChainState:
    """Move each chain's threshold to ``t_target`` at fixed c, one unit at a time (A ~ Bin(c, π)).

    t → t + 1: P[A ≥ t+1] = S − pmf,        pmf' = pmf·(c − t)π/((t + 1)(1 − π));
    t → t − 1: pmf' = pmf·t(1 − π)/((c − t + 1)π),  P[A ≥ t−1] = S + pmf'.
    Errors as in :func:`advance_chains` (every chain is charged for the largest number of moves).
    Chains moved above c get S = pmf = 0 (exact) and are left for the caller to re-anchor.
    """
    t, tail, pmf, error, rtol = state
    t = t.copy()
    remaining = t_target - t
    moves = int(np.max(np.abs(remaining))) if remaining.size else 0
    one_m_pi = 1.0 - pi
    for _ in range(moves):
        up = remaining > 0.0
        down = remaining < 0.0
        with np.errstate(all="ignore"):
            pmf_down = pmf * (t * one_m_pi / np.where(c - t + 1.0 > 0.0, (c - t + 1.0) * pi, 1.0))
            pmf_up = pmf * ((c - t) * pi / ((t + 1.0) * one_m_pi))
        increment = np.where(up, -pmf, np.where(down, pmf_down, 0.0))
        rtol = rtol + _PMF_STEP_ERROR
        tail = tail + increment
        error = error + np.abs(increment) * (rtol + 6.0 * UNIT_ROUNDOFF) + 2.0 * UNIT_ROUNDOFF * np.abs(tail)
        pmf = np.where(up, pmf_up, np.where(down, pmf_down, pmf))
        t = t + np.sign(remaining)
        remaining = t_target - t
        above = t > c
        tail = np.where(above, 0.0, tail)
        pmf = np.where(above, 0.0, pmf)
    return ChainState(t, tail, pmf, error, rtol)


def _threshold(y: np.ndarray, x: float) -> np.ndarray:
    """Smallest integer t with x·t + y > 0."""
    return np.floor(-y / x) + 1.0


def chain_inner_expectation(
    state: ChainState, c: np.ndarray, y: np.ndarray, x: float, pi: float
) -> tuple[np.ndarray, np.ndarray]:
    """Lower/upper values of g = E[(x·A + y)⁺], A ~ Bin(c, π), from carried S = P[A ≥ t], P[A = t].

    Identity (E[A·1{A ≥ t}] = cπ·P[Bin(c−1, π) ≥ t−1] and cπ·P[Bin(c−1, π) = t−1] = t·P[A = t]):

        g = (x·c·π + y)·P[A ≥ t] + x(1 − π)·t·P[A = t].

    The margin is |xcπ + y|·err(S) + x(1 − π)t·pmf·pmf_rtol, plus 8u of the magnitudes of every
    term (rounding of the products and of the threshold t: a threshold off by one changes the
    value by at most |x·t + y|·P[A = t], which is a rounding-size multiple of |y|·P[A = t]).
    """
    lower, upper, _ = _chain_values(state, c, y, x, pi)
    return lower, upper


def _chain_values(state: ChainState, c: np.ndarray, y: np.ndarray, x: float, pi: float
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`chain_inner_expectation` plus ``stale``: where the carried margin exceeds twice the
    margin an exact anchor at the same point would have (plus ``_REANCHOR_RTOL`` of the value), i.e.
    where re-anchoring would visibly tighten the value (cancellation in g amplifies carried error).
    """
    mean_term = x * c * pi
    slope_term = x * (1.0 - pi) * state.t * state.pmf
    level = mean_term + y
    value = level * state.tail + slope_term
    rounding = 8.0 * UNIT_ROUNDOFF * ((mean_term + np.abs(y)) * (np.abs(state.tail) + state.pmf)
                                      + slope_term)
    margin = np.abs(level) * state.tail_error + slope_term * state.pmf_rtol + rounding
    fresh_rtol = special_function_rtol(c)
    fresh = fresh_rtol * (np.abs(level) * np.abs(state.tail) + slope_term) + rounding
    stale = margin > 2.0 * fresh + _REANCHOR_RTOL * np.abs(value)
    cap = np.maximum(mean_term, 0.0) * (1.0 + 4.0 * UNIT_ROUNDOFF)
    upper = np.minimum(np.maximum(value + margin, 0.0), cap)
    lower = np.clip(value - margin, 0.0, cap)
    return lower, upper, stale


def _band_masses_with_error(edges: np.ndarray, m: np.ndarray, p: float
                            ) -> tuple[np.ndarray, np.ndarray]:
    """``_band_masses`` plus an absolute error bound (relative accuracy of each cdf/sf value)."""
    cdf = stats.binom.cdf(edges - 1.0, m, p)
    sf = stats.binom.sf(edges - 1.0, m, p)
    use_sf = edges[:, 1:] > (m * p)
    mass = np.where(use_sf, sf[:, :-1] - sf[:, 1:], cdf[:, 1:] - cdf[:, :-1])
    size = np.where(use_sf, sf[:, :-1] + sf[:, 1:], cdf[:, 1:] + cdf[:, :-1])
    return np.maximum(mass, 0.0), (special_function_rtol(m) + 4.0 * UNIT_ROUNDOFF) * size


class _BlockBands(NamedTuple):
    """K bands of one block of C values (see :func:`_block_bands`)."""

    edges: np.ndarray  # (blocks, E) chain edges k_0 < … < k_{E−1}
    upper_coef: np.ndarray  # (blocks, E) weight of g(c, k_j) in the upper bound
    low_tail_mass: np.ndarray  # (blocks,) upper bound on P[K' < k_0] (bounded by g ≤ x·c·π)
    lower_mass: np.ndarray  # (blocks, E + 1) masses under K'' of [0,k_0), [k_j, k_{j+1}), [k_{E−1}, m]
    lower_mean: np.ndarray  # (blocks, E + 1) band means under K''


def _block_bands(m_upper: np.ndarray, m_lower: np.ndarray, k_rate: float, bands: int, tail: float
                 ) -> _BlockBands:
    """Band coefficients for a block of C values [c_0, c_1] with K | c ~ Bin(n − c, s').

    For every c in the block, K | c is stochastically larger than K' ~ Bin(m_upper = n − c_1, s')
    and smaller than K'' ~ Bin(m_lower = n − c_0, s') (binomial coupling), and g(c, ·) is
    non-increasing, so E[g(c, K')] bounds the block's values from above and E[g(c, K'')] from below.

    Upper bound under K' (g convex in k, chord on each closed band [k_j, k_{j+1}]):
    Σ_band P(k)·g(k) ≤ (M0 − θ)·g(k_j) + θ·g(k_{j+1}), θ = (E[K·1_band] − k_j·M0)/(k_{j+1} − k_j);
    θ is rounded down by its error bound (g(k_j) ≥ g(k_{j+1}), so a smaller θ is safe) and masses
    up. Outer bands: [0, k_0) is bounded by g ≤ x·c·π, [k_{E−1}, m] by g(k_{E−1}).
    """
    full = _k_band_edges(m_upper, k_rate, bands, tail)  # [0, k_0 … k_{E−1}, m_upper + 1]
    edges = full[:, 1:-1]
    mm = m_upper[:, None]
    mass, mass_err = _band_masses_with_error(full, mm, k_rate)
    shifted = np.maximum(full - 1.0, 0.0)
    mm1 = np.maximum(mm - 1.0, 0.0)
    fm_mass, fm_err = _band_masses_with_error(shifted, mm1, k_rate)
    first_moment = mm * k_rate * fm_mass
    first_err = mm * k_rate * fm_err + 4.0 * UNIT_ROUNDOFF * first_moment

    k0 = full[:, 1:-2]
    k1 = full[:, 2:-1]
    width = k1 - k0
    interior = slice(1, -1)
    m0 = mass[:, interior]
    m0_up = m0 + mass_err[:, interior]
    offset = first_moment[:, interior] - k0 * m0
    offset_err = (first_err[:, interior] + k0 * mass_err[:, interior]
                  + 4.0 * UNIT_ROUNDOFF * (first_moment[:, interior] + k0 * m0))
    safe_width = np.where(width > 0.0, width, 1.0)
    theta = np.where(width > 0.0, np.clip(offset - offset_err, 0.0, width * m0) / safe_width, 0.0)
    coef = np.zeros_like(edges)
    coef[:, :-1] += m0_up - theta
    coef[:, 1:] += theta
    coef[:, -1] += mass[:, -1] + mass_err[:, -1]
    low_tail = mass[:, 0] + mass_err[:, 0]

    full_lower = full.copy()
    full_lower[:, -1] = m_lower + 1.0
    ml = m_lower[:, None]
    l_mass, _ = _band_masses_with_error(full_lower, ml, k_rate)
    l_fm, _ = _band_masses_with_error(np.maximum(full_lower - 1.0, 0.0), np.maximum(ml - 1.0, 0.0),
                                      k_rate)
    safe_mass = np.where(l_mass > 0.0, l_mass, 1.0)
    l_mean = np.where(l_mass > 0.0, ml * k_rate * l_fm / safe_mass, 0.0)
    return _BlockBands(edges, coef, low_tail, l_mass, l_mean)


@functools.lru_cache(maxsize=8)
def _block_weights(n: int, r_c: float, c_lo: int, c_hi: int, block: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Block starts and P[C = c] laid out as (blocks, block); ε-independent, cached for searches.

    Blocks are [c_lo + i·block, … + block − 1]; the last one is moved back to end at c_hi and its
    overlap with the previous block gets weight 0. The arrays are shared: do not modify them.
    """
    starts = _block_weights_starts(c_lo, c_hi, block)
    n_blocks = len(starts)
    c_all = np.arange(c_lo, c_hi + 1, dtype=float)
    weights = _binom_pmf(c_all, n, r_c)
    position = (starts[:, None] - c_lo + np.arange(block)[None, :]).astype(np.int64)
    weights_2d = weights[position]
    if n_blocks >= 2:
        covered = c_lo + block * (n_blocks - 1)
        weights_2d[-1] = np.where(c_all[position[-1]] < covered, 0.0, weights_2d[-1])
    starts.setflags(write=False)
    weights_2d.setflags(write=False)
    return starts, weights_2d


@functools.lru_cache(maxsize=8)
def _cached_block_bands(n: int, k_rate: float, c_lo: int, c_hi: int, block: int, bands: int,
                        tail: float) -> _BlockBands:
    """:func:`_block_bands` for the blocks of :func:`_block_weights` (ε-independent, cached)."""
    starts = _block_weights_starts(c_lo, c_hi, block)
    result = _block_bands(n - (starts + (block - 1)), n - starts, k_rate, bands, tail)
    for array in result:
        array.setflags(write=False)
    return result


def _block_weights_starts(c_lo: int, c_hi: int, block: int) -> np.ndarray:
    """Block starts as laid out by :func:`_block_weights`."""
    count = c_hi - c_lo + 1
    n_blocks = -(-count // block)
    starts = c_lo + block * np.arange(n_blocks, dtype=float)
    starts[-1] = c_hi - block + 1
    return starts


def _lower_line_ratios(bands_: _BlockBands) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Positions of the interior band means on the neighbouring chords (for the lower estimate).

    For convex g, a chord extended beyond its interval lies below g: for k ≥ k_j,
    g(k) ≥ g(k_j) + (g(k_j) − g(k_{j−1}))·(k − k_j)/(k_j − k_{j−1}), and symmetrically from the
    right. Returns (ratio_left, valid_left, ratio_right, valid_right), each (blocks, E − 1).
    """
    k = bands_.edges
    mean = bands_.lower_mean[:, 1:-1]
    left_width = np.zeros_like(mean)
    left_width[:, 1:] = k[:, 1:-1] - k[:, :-2]
    right_width = np.zeros_like(mean)
    right_width[:, :-1] = k[:, 2:] - k[:, 1:-1]
    valid_left = left_width > 0.0
    valid_right = right_width > 0.0
    ratio_left = np.where(valid_left, (mean - k[:, :-1]) / np.where(valid_left, left_width, 1.0), 0.0)
    ratio_right = np.where(valid_right, (k[:, 1:] - mean) / np.where(valid_right, right_width, 1.0),
                           0.0)
    return np.maximum(ratio_left, 0.0), valid_left, np.maximum(ratio_right, 0.0), valid_right


def directional_bracket(problem: DirectionalProblem, bands: int, tail: float,
                        shift_tol: float = 1e-4, max_block: int = MAX_BLOCK) -> DirectionalResult:
    """Bracket (1/n)·E[(c_A·A + c_B·B + c_K·K)⁺] for one direction (fast path).

    Small problems (≤ ``EXACT_CELL_LIMIT`` cells) sum every cell (:func:`reference_directional_bracket`);
    huge e^ε and tiny δ go to :func:`isolated_clone_bracket` and :func:`tilted_window_bracket`.
    Otherwise the kept C range is cut into blocks of at most ``max_block`` consecutive values. In each
    block, K | c is replaced by the coupled bounds K' (upper) and K'' (lower) of :func:`_block_bands`,
    so the band edges k_j are fixed and along c the threshold t(c) of A | C = c moves by 0 or 1 per
    step (|c_B| < x). P[A ≥ t] and P[A = t] are then carried by :func:`advance_chains` from one exact
    anchor per block and chain, with a running error bound added to the upper value
    (:func:`chain_inner_expectation`). Chains whose anchor point probability underflows, or with t > c,
    are either bounded for the whole block by g(c) ≤ x·c_1·π·P[Bin(c_1 − 1, π) ≥ t_0 − 1] (S is
    non-decreasing in c and non-increasing in t; c ≤ c_1, t(c) ≥ t_0) when that bound is negligible,
    or evaluated exactly at every c.

    ``shift_tol`` sets the block length when K matters: the coupling moves E[K] by at most
    (block − 1)·s', which changes g by at most |c_K|·s'·(block − 1)·P[A ≥ t]; the block is limited to
    shift_tol·x·sd(A)/(|c_K|·s') values, so the upper/lower gap it causes stays ≈ shift_tol·z.
    """
    if problem.c_a <= 0.0:
        return DirectionalResult(0.0, 0.0, 0.0)
    isolated = isolated_clone_bracket(problem)
    if isolated is not None:
        return isolated
    n, s = problem.n, problem.s
    c_b, c_k = problem.c_b, problem.c_k
    r_c, pi, x, k_rate, cells = _derived(problem)
    if cells <= EXACT_CELL_LIMIT:
        return reference_directional_bracket(problem, bands, tail)
    tilted = tilted_window_bracket(problem, tail)
    if tilted is not None:
        return tilted
    # s' = 1 (no "rest" users): K = n − c exactly, a one-dimensional problem. A rest share at the
    # rounding level of 1 − r_A − r_B (e.g. s = 1 − r0 − r1 computed in floating point) counts as 0.
    no_rest = k_rate > 0.0 and (1.0 - r_c - s) <= 8.0 * UNIT_ROUNDOFF
    if no_rest:
        k_rate = 1.0
    use_k = 0.0 < k_rate < 1.0 and c_k != 0.0

    c_lo, c_hi, dropped = _c_range(n, r_c, tail)
    count = c_hi - c_lo + 1
    block = min(max_block, count)
    if use_k:
        sd_a = math.sqrt(max(c_lo, 1) * pi * (1.0 - pi))
        block = max(1, min(block, int(shift_tol * x * sd_a / (abs(c_k) * k_rate)) + 1))
    starts, weights_2d = _block_weights(n, r_c, c_lo, c_hi, block)
    n_blocks = len(starts)
    ends = starts + (block - 1)

    if use_k:
        bb = _cached_block_bands(n, k_rate, c_lo, c_hi, block, bands, tail)
        # chains at the band edges (upper bound) and at the interior band means under K''
        # (Jensen's lower estimate, g convex); the means get no weight in the upper bound
        n_edges = bb.edges.shape[1]
        means = bb.lower_mean[:, 1:-1]
        means = np.where(bb.lower_mass[:, 1:-1] > 0.0, means, bb.edges[:, :-1])
        k_edges = np.concatenate([bb.edges, means], axis=1)
        coef = np.concatenate([bb.upper_coef, np.zeros_like(means)], axis=1)
        ratio_left, valid_left, ratio_right, valid_right = _lower_line_ratios(bb)
    else:
        n_edges = 1
        k_edges = np.zeros((n_blocks, 1))
        coef = np.ones((n_blocks, 1))
        bb = None
    n_chains = k_edges.shape[1]
    if no_rest:  # y = c_B·c + c_K·(n − c)
        slope_b, base_y = c_b - c_k, np.full((n_blocks, 1), c_k * float(n))
    else:
        slope_b, base_y = c_b, c_k * k_edges

    # -- anchors --------------------------------------------------------------------------
    c0 = starts[:, None]
    t = _threshold(slope_b * c0 + base_y, x)
    state = anchor_chains(np.broadcast_to(c0, t.shape), t, pi)
    irregular = (t > c0) | ~(state.pmf >= _UNDERFLOW)
    bounded = np.zeros_like(irregular)
    bound_value = np.zeros_like(state.tail)
    if np.any(irregular):
        c1 = np.broadcast_to(ends[:, None], t.shape)
        t_min = np.minimum(t, _threshold(slope_b * c1 + base_y, x))  # t(c) is monotone in c
        sup = (x * pi * c1 * _upper_tail(t_min - 1.0, c1 - 1.0, pi)
               * (1.0 + special_function_rtol(c1)))
        block_weight = weights_2d.sum(axis=1)[:, None] * coef
        negligible = sup * block_weight <= 1e-6 * tail * n / (n_blocks * n_chains)
        bounded = irregular & negligible
        bound_value = np.where(bounded, sup, 0.0)
    exact = irregular & ~bounded
    state = state._replace(tail=np.where(irregular, 0.0, state.tail),
                           pmf=np.where(irregular, 0.0, state.pmf))

    upper_total = 0.0
    lower_total = 0.0
    for step in range(block):
        c = starts + step
        cc = c[:, None]
        y = slope_b * cc + base_y
        if step > 0:
            t_next = _threshold(y, x)
            carried = ~exact & ~bounded
            state = advance_chains(state, cc - 1.0, np.clip(t_next, state.t, state.t + 1.0), pi)
            state = move_threshold(state, np.broadcast_to(cc, t_next.shape), t_next, pi)
            bad = carried & (state.t > cc)
            # re-anchor where the step was not a unit step, the carried point probability fell
            # towards underflow, or the running error bound grew past _REANCHOR_RTOL
            bad |= carried & ~(state.pmf >= _UNDERFLOW)
            if np.any(bad):
                state, lost = _reanchor(state, bad, np.broadcast_to(cc, t_next.shape), pi)
                exact = exact | lost
        g_lo, g_up, stale = _chain_values(state, cc, y, x, pi)
        stale &= ~exact & ~bounded
        if step > 0 and np.any(stale):  # carried error grew past what an anchor would have
            state, lost = _reanchor(state, stale, np.broadcast_to(cc, stale.shape), pi)
            exact = exact | lost
            g_lo, g_up, _ = _chain_values(state, cc, y, x, pi)
        if np.any(exact):
            rows, cols = np.nonzero(exact)
            k_exact = (n - c[rows]) if no_rest else k_edges[rows, cols]
            lo_e, up_e = inner_expectation(c[rows], k_exact, x, c_b, c_k, pi, problem.c_a)
            g_lo[rows, cols] = lo_e
            g_up[rows, cols] = up_e
        if np.any(bounded):
            g_up = np.where(bounded, bound_value, g_up)
            g_lo = np.where(bounded, 0.0, g_lo)
        w = weights_2d[:, step]
        h_up = np.sum(coef * g_up, axis=1)
        if bb is not None:
            h_up = h_up + bb.low_tail_mass * x * c * pi
            h_lo = _lower_value(bb, g_lo[:, :n_edges], g_up[:, :n_edges], g_lo[:, n_edges:],
                                ratio_left, valid_left, ratio_right, valid_right)
        else:
            h_lo = g_lo[:, 0]
        upper_total += float(np.dot(w, h_up))
        lower_total += float(np.dot(w, h_lo))

    weight_rtol = SUMMATION_RTOL + float(special_function_rtol(n))
    lower = max(0.0, lower_total / n * (1.0 - weight_rtol))
    upper = min(1.0, upper_total / n * (1.0 + weight_rtol) + dropped * (1.0 + weight_rtol))
    if bb is not None:  # the [0, k_0) band is bounded crudely: report it with the truncated mass
        dropped += float(np.sum(weights_2d * (starts[:, None] + np.arange(block)[None, :])
                                * bb.low_tail_mass[:, None])) * x * pi / n
    return DirectionalResult(lower, upper, dropped)


def _reanchor(state: ChainState, where: np.ndarray, c: np.ndarray, pi: float,
              floor: float = _UNDERFLOW) -> tuple[ChainState, np.ndarray]:
    """Replace the carried values at ``where`` by exact evaluations at (c, t).

    Returns the new state and the mask of chains that cannot be carried from here (t > c or a
    point probability below ``floor``); their values are zeroed and they are evaluated exactly.
    """
    fresh = anchor_chains(c[where], state.t[where], pi)
    tail, pmf = state.tail.copy(), state.pmf.copy()
    error = state.tail_error.copy()
    rtol = np.array(np.broadcast_to(state.pmf_rtol, tail.shape), dtype=float)
    tail[where], pmf[where], error[where], rtol[where] = (fresh.tail, fresh.pmf, fresh.tail_error,
                                                          fresh.pmf_rtol)
    lost = np.zeros_like(where)
    lost[where] = (state.t[where] > c[where]) | ~(fresh.pmf >= floor)
    tail[lost], pmf[lost], error[lost] = 0.0, 0.0, 0.0
    return ChainState(state.t, tail, pmf, error, rtol), lost


def _lower_value(bb: _BlockBands, g_lo: np.ndarray, g_up: np.ndarray, g_mean_lo: np.ndarray,
                 ratio_left: np.ndarray, valid_left: np.ndarray, ratio_right: np.ndarray,
                 valid_right: np.ndarray) -> np.ndarray:
    """Lower estimate Σ_bands M''·(lower bound of E[g | band]), see :func:`_lower_line_ratios`.

    [0, k_0): g ≥ g(k_0); interior band [k_j, k_{j+1}): the largest of Jensen's g(band mean),
    g(k_{j+1}) and the two extended neighbouring chords at the band mean; [k_{E−1}, m]: 0.
    """
    value = bb.lower_mass[:, 0] * g_lo[:, 0]
    if g_lo.shape[1] < 2:
        return value
    left = np.full(ratio_left.shape, 0.0)
    left[:, 1:] = g_lo[:, 1:-1] + (g_lo[:, 1:-1] - g_up[:, :-2]) * ratio_left[:, 1:]
    right = np.full(ratio_right.shape, 0.0)
    right[:, :-1] = g_lo[:, 1:-1] + (g_lo[:, 1:-1] - g_up[:, 2:]) * ratio_right[:, :-1]
    best = np.maximum(np.maximum(g_lo[:, 1:], g_mean_lo),
                      np.maximum(np.where(valid_left, left, 0.0), np.where(valid_right, right, 0.0)))
    return value + np.sum(bb.lower_mass[:, 1:-1] * best, axis=1)


def chernoff_log_upper(problem: DirectionalProblem) -> float:
    """ln of a cheap certified upper bound on (1/n)·E[(c_A·A + c_B·B + c_K·K)⁺] (Chernoff).

    z⁺ ≤ e^(λz − 1)/λ for every λ > 0, and E[e^(λZ)] = M(λ)ⁿ for the multinomial counts, with
    M(λ) = 1 + r_A·(e^(λc_A) − 1) + r_B·(e^(λc_B) − 1) + s·(e^(λc_K) − 1); so
    ln δ ≤ n·ln M(λ) − 1 − ln(λ·n), minimised over λ on a logarithmic grid. Rounding of n·ln M is
    covered by adding 16u·n·(|ln M| + 1) + 1e-9.
    Used to answer "δ is below 1e-300" without truncating far into the tails.
    """
    n = problem.n
    if problem.c_a <= 0.0:
        return -math.inf
    best = math.inf
    terms = [(problem.r_a, problem.c_a), (problem.r_b, problem.c_b)]
    # a neutral share treated as 0 elsewhere (or a non-finite c_K) is left out: c_K ≤ 0, so
    # dropping the term only increases M(λ)
    if problem.s >= 1e-290 and math.isfinite(problem.c_k):
        terms.append((problem.s, problem.c_k))
    scale = max(max(abs(coef) for _, coef in terms), 1e-300)
    for lam in np.geomspace(1e-6, 1e3, 200) / scale:
        if not lam > 0.0:
            continue
        if lam * problem.c_a > 700.0:  # e^(λ·c_A) would overflow; larger λ only gets worse
            break
        increment = sum(rate * math.expm1(float(lam) * coef) for rate, coef in terms)
        if increment <= -1.0:
            continue
        log_m = math.log1p(increment)
        value = n * log_m - 1.0 - math.log(lam * n)
        value += 16.0 * UNIT_ROUNDOFF * n * (abs(log_m) + 1.0) + 1e-9
        best = min(best, value)
    return best


# -------------------------------------------------------------------------------------------------
# Tiny δ: every cell of a window around the exponentially tilted law, the rest by Chernoff.
# -------------------------------------------------------------------------------------------------

# The tilted window is used when the Chernoff bound is below this (δ far in the tail, where the
# banded paths need truncation near 1e-300 and hundreds of K bands to resolve g's e^(λ·c_K)
# variation per unit of K) and the window has at most TILTED_WINDOW_CELL_LIMIT (c, k) cells
# (cost ≈ 0.05 µs per cell) …
TILTED_WINDOW_MAX_DELTA = 1e-30
TILTED_WINDOW_CELL_LIMIT = 3 * 10**7
# … or when the Chernoff bound is below this and the window is ten times smaller (then it is
# faster than the banded paths as well).
TILTED_WINDOW_SMALL_MAX_DELTA = 1e-8
# Cells whose weight P[C = c]·P[K = k | c] underflows below this are charged at this weight.
_TINY_WEIGHT = 4.5e-308
# Chains are carried while P[A = t] is at least this (normal floats: the recurrences keep their
# relative accuracy); below it they are bounded (see tilted_window_bracket).
_TILTED_UNDERFLOW = 1e-300


def _tilt_terms(problem: DirectionalProblem) -> list[tuple[float, float]]:
    """(rate, coefficient) of the four per-user types A, B, K, rest (docs/theory.md, "Neutral-aware
    bound")."""
    rest = max(0.0, 1.0 - problem.r_a - problem.r_b - problem.s)
    return [(problem.r_a, problem.c_a), (problem.r_b, problem.c_b), (problem.s, problem.c_k),
            (rest, 0.0)]


def _tilt_log_bound(problem: DirectionalProblem, lam: float) -> float:
    """ln of M(λ)ⁿ/(e·λ·n) rounded up (see :func:`chernoff_log_upper`); +inf on overflow."""
    terms = [(rate, coef) for rate, coef in _tilt_terms(problem)[:3] if rate > 0.0]
    if lam * problem.c_a > 700.0:
        return math.inf
    increment = sum(rate * math.expm1(lam * coef) for rate, coef in terms)
    if increment <= -1.0:
        return math.inf
    log_m = math.log1p(increment)
    n = problem.n
    value = n * log_m - 1.0 - math.log(lam * n)
    return value + 16.0 * UNIT_ROUNDOFF * n * (abs(log_m) + 1.0) + 1e-9


def _chernoff_tilt(problem: DirectionalProblem) -> float:
    """λ > 0 minimising n·ln M(λ) − ln λ (convex in λ): bisection in ln λ on the derivative
    n·E_λ[z] − 1/λ, with E_λ[z] = Σ rate·coef·e^(λ·coef) / M(λ) evaluated with shifted exponents.

    Any λ > 0 gives a valid bound; the optimum centres the tilted law where the divergence lives.
    """
    terms = [(rate, coef) for rate, coef in _tilt_terms(problem) if rate > 0.0]
    n = problem.n

    def slope(lam: float) -> float:
        top = max(lam * coef for _, coef in terms)
        weights = [rate * math.exp(lam * coef - top) for rate, coef in terms]
        mean = sum(w * coef for w, (_, coef) in zip(weights, terms)) / sum(weights)
        return n * mean - 1.0 / lam

    log_high = bisect(lambda log_lam: not slope(math.exp(log_lam)) < 0.0,
                      math.log(1e3 / problem.c_a), math.log(1e-12 / problem.c_a), steps=100)
    return math.exp(log_high)


def _binomial_window(n: int, rate: float, tail: float) -> tuple[int, int, float]:
    """[lo, hi] with P[Bin(n, rate) < lo] ≤ tail and P[Bin(n, rate) > hi] ≤ tail (bisection on
    scipy's cdf/sf), and the certified mass outside, rounded up by special_function_rtol(n)."""
    mean = min(n, max(0, int(n * rate)))
    hi = smallest_true_integer(lambda k: float(stats.binom.sf(k, n, rate)) <= tail, mean, n)
    lo = smallest_true_integer(lambda k: float(stats.binom.cdf(mean - k - 1, n, rate)) <= tail, 0, mean)
    lo = mean - lo
    outside = (float(stats.binom.cdf(lo - 1, n, rate)) if lo >= 1 else 0.0)
    outside += float(stats.binom.sf(hi, n, rate)) if hi < n else 0.0
    return lo, hi, outside * (1.0 + float(special_function_rtol(n)))


def _assign(values: np.ndarray, index: np.ndarray, value: float) -> np.ndarray:
    out = values.copy()
    out[index] = value
    return out


def _binomial_pmf_upper(c: np.ndarray, t: np.ndarray, pi: float) -> np.ndarray:
    """Upper bound on P[Bin(c, π) = t] (0 ≤ t ≤ c) from log-gamma functions, rounding covered.

    ln pmf = lnΓ(c+1) − lnΓ(t+1) − lnΓ(c−t+1) + t·ln π + (c−t)·ln(1−π); every term is accurate to
    a few units of rounding of its magnitude, so 32u of the sum of magnitudes (+1e-12) is added.
    """
    terms = (special.gammaln(c + 1.0), -special.gammaln(t + 1.0), -special.gammaln(c - t + 1.0),
             t * math.log(pi), (c - t) * math.log1p(-pi))
    log_pmf = sum(terms)
    error = 32.0 * UNIT_ROUNDOFF * sum(np.abs(term) for term in terms) + 1e-12
    return np.maximum(np.exp(np.minimum(log_pmf + error, 0.0)), 5e-324)


def tilted_window_bracket(problem: DirectionalProblem, tail: float,
                          max_delta: float = TILTED_WINDOW_MAX_DELTA) -> DirectionalResult | None:
    """Bracket of (1/n)·E[(c_A·A + c_B·B + c_K·K)⁺] for tiny values; ``None`` if not applicable.

    Exponential tilting: with z the per-user value (c_A, c_B, c_K or 0) and M(λ) = E[e^(λz)],
    E[f] = M(λ)ⁿ·E_λ[f·e^(−λZ)] where under E_λ the users are independent with type probabilities
    rate·e^(λ·coef)/M(λ). Since Z⁺·e^(−λZ) ≤ 1/(eλ), the cells outside any set W contribute at most
    M(λ)ⁿ/(eλn)·P_λ[(C, K) ∉ W] (the Chernoff bound times a tilted probability). W is the rectangle
    of C ~ Bin(n, tilted r_A + r_B) and K ~ Bin(n, tilted s) values whose tilted tails beyond it are
    ≤ √tail each, at the λ minimising the Chernoff bound (so W sits where the divergence lives);
    P_λ[∉ W] is bounded by the four tail masses (union bound), doubled for the rounding of the
    tilted rates.

    Inside W every cell is summed: for each c, k runs down from the top of W, P[K = k | c] is
    carried by the pmf ratio (k + 1)(1 − s')/((m − k)·s') (m = n − c, anchored with scipy's pmf;
    a column whose anchor underflows above its mode declines this path) and P[A ≥ t], P[A = t] by
    :func:`move_threshold` (t only decreases, so the tail sums only add positive terms), with the
    error bounds of :func:`_chain_values`. Chains with a carried margin grown stale or a point
    probability below 1e-300 are re-anchored or evaluated by the closed form (t > c: g = 0
    exactly); chains far in A's upper tail (P[A = t] < 1e-300, t > c·π) are bounded by
    g ≤ x·c·P[A = t]/(1 − ρ_t), ρ_t = (c − t)π/((t + 1)(1 − π)) < 0.99 (the pmf decays at least
    geometrically beyond t), with a log-gamma bound on P[A = t], until that point probability is
    representable again. Weights below 4.5e-308 (underflow) are charged at that weight with
    g ≤ x·c·π, and 1e-320 per cell covers denormal rounding: absolute slacks that only matter for
    values near 1e-300.

    Returns ``None`` unless 0 < s' < 1 (with rest users), c_K < 0, and either the Chernoff bound is
    below ``max_delta`` and W has at most ``TILTED_WINDOW_CELL_LIMIT`` cells, or it is below
    ``TILTED_WINDOW_SMALL_MAX_DELTA`` and W has a tenth of that. The bracket is valid for
    any ``max_delta``; the default selects the regime where this path is the efficient one.
    """
    n = problem.n
    r_c, pi, x, k_rate, _ = _derived(problem)
    if not (0.0 < k_rate < 1.0 and problem.c_k < 0.0 and problem.c_a > 0.0):
        return None
    if 1.0 - r_c - problem.s <= 8.0 * UNIT_ROUNDOFF:  # no rest users: K = n − C (1-D problem)
        return None
    log_chernoff = chernoff_log_upper(problem)
    if log_chernoff >= math.log(max(max_delta, TILTED_WINDOW_SMALL_MAX_DELTA)):
        return None
    cell_limit = TILTED_WINDOW_CELL_LIMIT
    if log_chernoff >= math.log(max_delta):
        cell_limit //= 10
    lam = _chernoff_tilt(problem)
    log_bound = _tilt_log_bound(problem, lam)
    if not math.isfinite(log_bound):
        return None
    terms = _tilt_terms(problem)
    top = max(lam * coef for _, coef in terms)
    tilted = [rate * math.exp(lam * coef - top) for rate, coef in terms]
    total = sum(tilted)
    window_tail = math.sqrt(tail)
    c1, c2, out_c = _binomial_window(n, (tilted[0] + tilted[1]) / total, window_tail)
    k1, k2, out_k = _binomial_window(n, tilted[2] / total, window_tail)
    if (c2 - c1 + 1) * (k2 - k1 + 1) > cell_limit:
        return None
    outside = 2.0 * (out_c + out_k) * math.exp(log_bound)

    c = np.arange(c1, c2 + 1, dtype=float)
    m = n - c
    c_b, c_k = problem.c_b, problem.c_k
    weight_c = _binom_pmf(c, n, r_c)
    k_anchor = np.minimum(float(k2), m)
    with np.errstate(all="ignore"):
        anchor_k = np.where(k_anchor >= 0.0, stats.binom.pmf(k_anchor, m, k_rate), 0.0)
    # a column whose anchor underflows above its mode would be carried from 0: not this path
    if np.any((anchor_k < _UNDERFLOW) & (k_anchor > np.floor((m + 1.0) * k_rate))
              & (k_anchor >= k1) & (weight_c >= _TINY_WEIGHT)):
        return None
    odds = (1.0 - k_rate) / k_rate
    weight_k = np.zeros_like(c)
    state = anchor_chains(c, _threshold(c_b * c + c_k * float(k2), x), pi)
    upper_total = lower_total = 0.0
    tiny_cells = 0
    for k in range(k2, k1 - 1, -1):
        with np.errstate(all="ignore"):
            weight_k = np.where(k_anchor == k, anchor_k,
                                weight_k * ((k + 1.0) * odds / np.where(m - k > 0.0, m - k, 1.0)))
        weight_k = np.where(k <= m, weight_k, 0.0)
        weight = weight_c * weight_k
        y = c_b * c + c_k * float(k)
        if k < k2:
            state = move_threshold(state, c, _threshold(y, x), pi)
        g_lo, g_up, stale = _chain_values(state, c, y, x, pi)
        redo = (stale | ~(state.pmf >= _TILTED_UNDERFLOW)) & (state.t <= c) & (weight > 0.0)
        if np.any(redo):
            # far in A's upper tail (P[A = t] below _TILTED_UNDERFLOW): g ≤ x·c·P[A ≥ t] ≤
            # x·c·P[A = t]/(1 − ρ_t), ρ_t = (c − t)π/((t + 1)(1 − π)) < 0.99 (pmf ratios decrease)
            where = np.nonzero(redo)[0]
            cw, tw = c[where], state.t[where]
            point = _binomial_pmf_upper(cw, tw, pi)
            ratio = (cw - tw) * pi / ((tw + 1.0) * (1.0 - pi))
            dormant = (tw > cw * pi) & (ratio < 0.99) & (point < _TILTED_UNDERFLOW)
            if np.any(dormant):
                idle = where[dormant]
                state = state._replace(tail=_assign(state.tail, idle, 0.0),
                                       pmf=_assign(state.pmf, idle, 0.0))
                redo[idle] = False
            if np.any(redo):
                state, lost = _reanchor(state, redo, c, pi, _TILTED_UNDERFLOW)
                g_lo, g_up, _ = _chain_values(state, c, y, x, pi)
                if np.any(lost):  # closed form at this cell
                    lo_e, up_e = inner_expectation(c[lost], np.full(int(np.sum(lost)), float(k)),
                                                   x, c_b, c_k, pi, problem.c_a)
                    g_lo[lost], g_up[lost] = lo_e, up_e
            if np.any(dormant):
                idle = where[dormant]
                g_lo[idle] = 0.0
                # 1 − ρ_t ≥ 0.01 has relative rounding error ≤ 400u
                g_up[idle] = (x * cw[dormant] * point[dormant] / (1.0 - ratio[dormant])
                              * (1.0 + 1e-12))
        tiny_cells += int(np.sum((weight < _TINY_WEIGHT) & (k <= m)))
        upper_total += float(np.dot(weight, g_up))
        lower_total += float(np.dot(weight, g_lo))
    steps = k2 - k1 + 1
    weight_rtol = (SUMMATION_RTOL + 2.0 * float(special_function_rtol(n))
                   + (steps + 2) * 6.0 * UNIT_ROUNDOFF)
    # underflowing weights, plus 1e-320 per cell for denormal rounding of the products
    slack = tiny_cells * _TINY_WEIGHT * x * float(c2) * pi + (c2 - c1 + 1) * steps * 1e-320
    dropped = (outside + slack / n) * (1.0 + weight_rtol)
    upper = min(1.0, upper_total / n * (1.0 + weight_rtol) + dropped)
    lower = max(0.0, lower_total / n * (1.0 - weight_rtol))
    return DirectionalResult(min(lower, upper), upper, dropped)


__all__ = [
    "Bracket",
    "ChainState",
    "DirectionalProblem",
    "DirectionalResult",
    "MAX_BLOCK",
    "SCIPY_RTOL_FLOOR",
    "SUMMATION_RTOL",
    "advance_chains",
    "anchor_chains",
    "chain_inner_expectation",
    "chernoff_log_upper",
    "directional_bracket",
    "inner_expectation",
    "isolated_clone_bracket",
    "reference_directional_bracket",
    "special_function_rtol",
    "tilted_window_bracket",
]
