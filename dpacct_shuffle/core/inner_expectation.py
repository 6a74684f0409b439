"""The inner expectation g(c, k) = E[(x·A + y)⁺], A ~ Bin(c, π), in closed form and by sums, and
the K-band masses and edges the evaluators group k into (:mod:`dpacct_shuffle.core.numerics`)."""

from __future__ import annotations

import numpy as np
from scipy import special

from dpacct_shuffle.core.binomial import (
    binomial_edge_tails,
    binomial_pmf,
    binomial_points,
)
from dpacct_shuffle.core.problem import UNIT_ROUNDOFF, special_function_rtol, stats


# from this many values on, upper_tail evaluates each distinct (t, c) pair once
_DISTINCT_PAIRS_FROM = 1 << 10


def upper_tail(t: np.ndarray, c: np.ndarray, pi: float) -> np.ndarray:
    """P[Bin(c, π) ≥ t] for integer-valued float arrays (broadcast), exact at the ends.

    Integer points go through the memo of :func:`~dpacct_shuffle.core.binomial.binomial_points`
    (searches evaluate the same anchors again and again); where it declines, large arrays evaluate
    each distinct pair (t, c) once (windowed sums and chain anchors share many): indexed on their
    (c, t) grid when it is small, else sorted. Every path gives the same betainc values."""
    t, c = np.broadcast_arrays(t, c)
    out = np.where(t <= 0, 1.0, 0.0)
    inner = (t >= 1) & (t <= c)
    if np.any(inner):
        every = bool(inner.all())  # then no compression: the arrays themselves, flattened
        ti, ci = (t.ravel(), c.ravel()) if every else (t[inner], c[inner])
        integral = np.array_equal(ti, np.floor(ti)) and np.array_equal(ci, np.floor(ci))
        memoized = binomial_points("tail", ti, ci, pi) if integral else None
        if memoized is not None:
            if every:
                return memoized.reshape(out.shape)
            out[inner] = memoized
            return out
        t_low, c_low = float(ti.min()), float(ci.min())
        width = float(ti.max()) - t_low + 1.0
        grid = (float(ci.max()) - c_low + 1.0) * width
        if ti.size >= _DISTINCT_PAIRS_FROM and grid <= 4.0 * ti.size and integral:
            # many cells share (t, c): index the pairs on their (c, t) grid, evaluate each once
            index = ((ci - c_low) * width + (ti - t_low)).astype(np.int64)
            present = np.zeros(int(grid), dtype=bool)
            present[index] = True
            distinct = np.flatnonzero(present)
            position = np.cumsum(present) - 1
            c_distinct = c_low + (distinct // int(width)).astype(float)
            t_distinct = t_low + (distinct % int(width)).astype(float)
            values = special.betainc(t_distinct, c_distinct - t_distinct + 1.0, pi)
            out[inner] = values[position[index]]
        elif ti.size >= _DISTINCT_PAIRS_FROM and integral and grid < 2.0**52:
            index = ((ci - c_low) * width + (ti - t_low)).astype(np.int64)
            distinct, position = np.unique(index, return_inverse=True)
            c_distinct = c_low + (distinct // int(width)).astype(float)
            t_distinct = t_low + (distinct % int(width)).astype(float)
            values = special.betainc(t_distinct, c_distinct - t_distinct + 1.0, pi)
            out[inner] = values[position.ravel()]
        else:
            out[inner] = special.betainc(ti, ci - ti + 1.0, pi)
    return out


def inner_expectation(
    c: np.ndarray, k: np.ndarray, slope: float, c_b: float, c_k: float, pi: float,
    c_a: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Lower/upper values of g(c, k) = E[(x·A + c_B·c + c_K·k)⁺], A ~ Bin(c, π).

    Returns two arrays (broadcast over c, k) that bracket the exact value; the bracket only reflects
    special-function rounding (relative :func:`special_function_rtol` (c) of the two closed-form
    terms).
    """
    offset = c_b * c + c_k * k
    t = np.floor(-offset / slope) + 1.0
    if c_a is not None:
        # −y/x rounds (badly when e^ε is huge): fix t with the level c_A·t + c_B·(c − t) + c_K·k,
        # which has no cancellation at t = c
        def level_at(t_value: np.ndarray) -> np.ndarray:
            level: np.ndarray = c_a * t_value + c_b * (c - t_value) + c_k * k
            return level

        t = np.where(level_at(t - 1.0) > 0.0, t - 1.0, t)
        t = np.where(level_at(t) <= 0.0, t + 1.0, t)
    mean_term = slope * c * pi
    first = mean_term * upper_tail(t - 1.0, c - 1.0, pi)
    second = offset * upper_tail(t, c, pi)
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
    slope = c_a - c_b
    offset = c_b * c + c_k * k

    def level_at(t_value: np.ndarray) -> np.ndarray:
        return c_a * t_value + c_b * (c - t_value) + c_k * k

    t = np.clip(np.floor(-offset / slope) + 1.0, 0.0, c + 1.0)
    # fix the threshold with the accurate level (the division may be off by one)
    t = np.where(level_at(t - 1.0) > 0.0, t - 1.0, t)
    t = np.where((level_at(t) <= 0.0) & (t <= c), t + 1.0, t)
    t = np.maximum(t, 0.0)
    pmf = binomial_pmf(np.arange(c + 1), c, pi)
    tail = np.concatenate([np.cumsum(pmf[::-1])[::-1], [0.0, 0.0]])  # tail[j] = P[A ≥ j]
    excess = np.concatenate([np.cumsum(tail[::-1])[::-1], [0.0]])  # excess[j] = Σ_{i ≥ j} P[A ≥ i]
    index = np.clip(t, 0, c + 1).astype(np.int64)
    level = np.maximum(level_at(t), 0.0)
    value = slope * excess[index + 1] + level * tail[index]
    value = np.where(t > c, 0.0, value)
    rtol = float(special_function_rtol(c)) + (c + 8.0) * UNIT_ROUNDOFF
    # when the level at t − 1 or t is within rounding of 0 the threshold may be off by one: that
    # term is a rounding-size multiple r = 8u·(|c_A·t| + |c_B|·(c − t) + |c_K·k|) of its probability
    def rounding_at(t_value: np.ndarray) -> np.ndarray:
        size: np.ndarray = 8.0 * UNIT_ROUNDOFF * (
            abs(c_a) * np.abs(t_value) + abs(c_b) * np.abs(c - t_value) + abs(c_k) * k)
        return size

    rounding_below, rounding_level = rounding_at(t - 1.0), rounding_at(t)
    pmf_padded = np.concatenate([pmf, [0.0, 0.0]])
    slack = (rounding_below * np.where(level_at(t - 1.0) > -rounding_below,
                                       pmf_padded[np.maximum(index - 1, 0)], 0.0)
             + rounding_level * np.where(level_at(t) < rounding_level, pmf_padded[index], 0.0))
    return np.maximum(value * (1.0 - rtol) - slack, 0.0), value * (1.0 + rtol) + slack



def band_edge_tails(edges: np.ndarray, m: np.ndarray, p: float
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(cdf, sf, use_sf) for the bands [e_j, e_{j+1}) of K ~ Bin(m, p) (edges (rows, B+1), m
    (rows, 1)): a band above the mean (use_sf) is read from P[K > e − 1] differences, the others
    from P[K ≤ e − 1] differences; each edge's cdf (sf) is evaluated only where a band ending at
    it reads it (0 elsewhere)."""
    use_sf = edges[:, 1:] > (m * p)
    need_sf = np.zeros(edges.shape, dtype=bool)
    need_sf[:, 1:] |= use_sf
    need_sf[:, :-1] |= use_sf
    need_cdf = np.zeros(edges.shape, dtype=bool)
    need_cdf[:, 1:] |= ~use_sf
    need_cdf[:, :-1] |= ~use_sf
    trials = np.broadcast_to(m, edges.shape)
    cdf = np.zeros(edges.shape)
    cdf[need_cdf] = binomial_edge_tails("cdf", edges[need_cdf] - 1.0, trials[need_cdf], p)
    sf = np.zeros(edges.shape)
    sf[need_sf] = binomial_edge_tails("sf", edges[need_sf] - 1.0, trials[need_sf], p)
    return cdf, sf, use_sf


def band_masses(edges: np.ndarray, m: np.ndarray, p: float) -> np.ndarray:
    """P[K ∈ [e_j, e_{j+1})] for K ~ Bin(m, p); edges shape (rows, B+1), m shape (rows, 1).

    Uses CDF differences below the mean and survival-function differences above it, so tail band
    masses keep their relative accuracy (:func:`band_edge_tails`).
    """
    cdf, sf, use_sf = band_edge_tails(edges, m, p)
    lower_side = cdf[:, 1:] - cdf[:, :-1]
    upper_side = sf[:, :-1] - sf[:, 1:]
    masses: np.ndarray = np.maximum(np.where(use_sf, upper_side, lower_side), 0.0)
    return masses


def k_band_edges(m: np.ndarray, p: float, bands: int, tail: float) -> np.ndarray:
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
