"""The cell-wise evaluator: every (C value, K band) term with its own special-function calls, every
cell when the problem is small. It is the reference the blocked fast path
(:mod:`dpacct_shuffle.core.blocked`) is tested against."""

from __future__ import annotations

import numpy as np

from dpacct_shuffle.core.binomial import binomial_pmf
from dpacct_shuffle.core.inner_expectation import (
    band_masses,
    inner_expectation,
    inner_expectation_by_sums,
    k_band_edges,
)
from dpacct_shuffle.core.isolated_clone import isolated_clone_bracket
from dpacct_shuffle.core.problem import (
    SUMMATION_RTOL,
    DirectionalProblem,
    DirectionalResult,
    derived_rates,
    kept_c_range,
    special_function_rtol,
)


# Below this many (c, k) cells every cell is summed exactly (no banding, no truncation).
EXACT_CELL_LIMIT = 60_000


# Exact path: inner expectations for C values up to this are summed term by term (no cancellation).
DIRECT_SUM_MAX_C = 2_000


# … when the closed form's rounding margin of that C value exceeds this fraction of the chunk's
# average weighted value (so the remaining margins total at most that fraction of the sum)
_DIRECT_SUM_TRIGGER = 1e-11


# Memory/time guard: number of C values processed per chunk.
C_CHUNK = 20_000


def cellwise_directional_bracket(problem: DirectionalProblem, bands: int, tail: float
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
    r_c, pi, slope, k_rate, cells = derived_rates(problem)
    exact = cells <= EXACT_CELL_LIMIT
    if exact:
        c_lo, c_hi, dropped = 0, n, 0.0
    else:
        c_lo, c_hi, dropped = kept_c_range(n, r_c, tail)

    lower_total = 0.0
    upper_total = 0.0
    for start in range(c_lo, c_hi + 1, C_CHUNK):
        c = np.arange(start, min(c_hi, start + C_CHUNK - 1) + 1, dtype=float)
        weight_c = binomial_pmf(c, n, r_c)
        m = n - c
        if k_rate == 0.0:
            lo, hi = inner_expectation(c, np.zeros_like(c), slope, problem.c_b, 0.0, pi, problem.c_a)
            if exact:  # small c, visible cancellation: sums without cancellation instead
                _resum_loose_cells(c, weight_c, lo, hi, problem, pi)
            lower_total += float(np.sum(weight_c * lo))
            upper_total += float(np.sum(weight_c * hi))
            continue
        if exact:
            # every k: cells (c, k) with k ≤ n − c
            for ci, wc in zip(c, weight_c):
                k = np.arange(0.0, n - ci + 1.0)
                wk = binomial_pmf(k, n - ci, k_rate)
                lo, hi = inner_expectation_by_sums(int(ci), k, problem.c_a, problem.c_b, problem.c_k,
                                                   pi)
                lower_total += float(wc * np.sum(wk * lo))
                upper_total += float(wc * np.sum(wk * hi))
            continue
        band_lower, band_upper = _banded_sums(c, m, k_rate, bands, tail, slope, problem, pi)
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
    slope: float,
    problem: DirectionalProblem,
    pi: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Lower/upper values of Σ_k P[K = k | c]·g(c, k) for each c, K | c ~ Bin(m, k_rate).

    g(c, ·) is convex (an expectation of the positive part of a function affine in k), so on a band
    [k0, k1] it lies below its chord: Σ_band P(k)·g(k) ≤ mass·g(k0) + (g(k1) − g(k0))·(E[K·1_band] −
    k0·mass)/(k1 − k0) — a certified upper bound, exact to second order in the band width; Jensen's
    inequality gives the lower estimate mass·g(E[K | band]).
    """
    edges = k_band_edges(m, k_rate, bands, tail)
    mm = m[:, None]
    mass = band_masses(edges, mm, k_rate)
    # E[K·1{K ∈ [e0, e1)}] = m·p·P[Bin(m − 1, p) ∈ [e0 − 1, e1 − 1)]
    first_moment = mm * k_rate * band_masses(np.maximum(edges - 1.0, 0.0), np.maximum(mm - 1.0, 0.0),
                                              k_rate)
    k0 = edges[:, :-1]
    k1 = np.maximum(edges[:, 1:] - 1.0, k0)
    c_column = c[:, None]
    _, g0 = inner_expectation(c_column, k0, slope, problem.c_b, problem.c_k, pi)
    _, g1 = inner_expectation(c_column, k1, slope, problem.c_b, problem.c_k, pi)
    width = k1 - k0
    safe_width = np.where(width > 0.0, width, 1.0)
    offset = np.clip(first_moment - k0 * mass, 0.0, width * mass)
    upper = mass * g0 + np.where(width > 0.0, (g1 - g0) * offset / safe_width, 0.0)
    safe_mass = np.where(mass > 0.0, mass, 1.0)
    band_mean = np.clip(first_moment / safe_mass, k0, k1)
    g_mean, _ = inner_expectation(c_column, band_mean, slope, problem.c_b, problem.c_k, pi)
    lower = np.where(mass > 0.0, mass * g_mean, 0.0)
    return np.sum(lower, axis=1), np.sum(np.maximum(upper, 0.0), axis=1)
