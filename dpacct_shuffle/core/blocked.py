"""The blocked fast path: K laws coupled per block of C values, binomial tails carried along C by
the recurrences of :mod:`dpacct_shuffle.core.chains`, re-anchored exactly every block."""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from dpacct_shuffle.core.binomial import binomial_pmf
from dpacct_shuffle.core.chains import (
    CHAIN_UNDERFLOW,
    advance_chains,
    anchor_chains,
    chain_values,
    move_threshold,
    positive_threshold,
    reanchor_chains,
)
from dpacct_shuffle.core.inner_expectation import (
    band_edge_tails,
    inner_expectation,
    k_band_edges,
    upper_tail,
)
from dpacct_shuffle.core.problem import (
    SUMMATION_RTOL,
    UNIT_ROUNDOFF,
    DirectionalProblem,
    DirectionalResult,
    derived_rates,
    kept_c_range,
    special_function_rtol,
    stats,
)


# Longest run of C values carried by recurrences from one exact anchor.
MAX_BLOCK = 256


def band_masses_with_error(edges: np.ndarray, m: np.ndarray, p: float
                            ) -> tuple[np.ndarray, np.ndarray]:
    """``band_masses`` plus an absolute error bound (relative accuracy of each cdf/sf value).

    The cdf and sf values of :func:`~dpacct_shuffle.core.inner_expectation.band_edge_tails`."""
    cdf, sf, use_sf = band_edge_tails(edges, m, p)
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
    full = k_band_edges(m_upper, k_rate, bands, tail)  # [0, k_0 … k_{E−1}, m_upper + 1]
    edges = full[:, 1:-1]
    mm = m_upper[:, None]
    mass, mass_err = band_masses_with_error(full, mm, k_rate)
    shifted = np.maximum(full - 1.0, 0.0)
    mm1 = np.maximum(mm - 1.0, 0.0)
    fm_mass, fm_err = band_masses_with_error(shifted, mm1, k_rate)
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

    ml = m_lower[:, None]
    if np.array_equal(m_lower, m_upper):  # blocks of one C value: K'' is K'
        l_mass, l_fm = mass, fm_mass
    else:
        full_lower = full.copy()
        full_lower[:, -1] = m_lower + 1.0
        l_mass, _ = band_masses_with_error(full_lower, ml, k_rate)
        l_fm, _ = band_masses_with_error(np.maximum(full_lower - 1.0, 0.0),
                                          np.maximum(ml - 1.0, 0.0), k_rate)
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
    weights = binomial_pmf(c_all, n, r_c)
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


def _lower_line_ratios(block_bands: _BlockBands) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Positions of the interior band means on the neighbouring chords (for the lower estimate).

    For convex g, a chord extended beyond its interval lies below g: for k ≥ k_j,
    g(k) ≥ g(k_j) + (g(k_j) − g(k_{j−1}))·(k − k_j)/(k_j − k_{j−1}), and symmetrically from the
    right. Returns (ratio_left, valid_left, ratio_right, valid_right), each (blocks, E − 1).
    """
    k = block_bands.edges
    mean = block_bands.lower_mean[:, 1:-1]
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


def blocked_directional_bracket(problem: DirectionalProblem, bands: int, tail: float,
                                shift_tol: float = 1e-4, max_block: int = MAX_BLOCK
                                ) -> DirectionalResult:
    """Bracket (1/n)·E[(c_A·A + c_B·B + c_K·K)⁺] for one direction with c_A > 0 (fast path; the
    dispatcher :func:`dpacct_shuffle.core.numerics.directional_bracket` sends small problems, huge
    e^ε and tiny δ elsewhere).

    The kept C range is cut into blocks of at most ``max_block`` consecutive values. In each
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
    n, s = problem.n, problem.s
    c_b, c_k = problem.c_b, problem.c_k
    r_c, pi, slope, k_rate, _ = derived_rates(problem)
    # s' = 1 (no "rest" users): K = n − c exactly, a one-dimensional problem. A rest share at the
    # rounding level of 1 − r_A − r_B (e.g. s = 1 − r0 − r1 computed in floating point) counts as 0.
    no_rest = k_rate > 0.0 and (1.0 - r_c - s) <= 8.0 * UNIT_ROUNDOFF
    if no_rest:
        k_rate = 1.0
    use_k = 0.0 < k_rate < 1.0 and c_k != 0.0

    c_lo, c_hi, dropped = kept_c_range(n, r_c, tail)
    count = c_hi - c_lo + 1
    block = min(max_block, count)
    if use_k:
        sd_a = math.sqrt(max(c_lo, 1) * pi * (1.0 - pi))
        width = shift_tol * slope * sd_a / (abs(c_k) * k_rate)  # may overflow to inf (ε0 near 500)
        block = max(1, min(block, int(min(width, float(block))) + 1))
    starts, weights_2d = _block_weights(n, r_c, c_lo, c_hi, block)
    n_blocks = len(starts)
    ends = starts + (block - 1)

    if use_k:
        block_bands = _cached_block_bands(n, k_rate, c_lo, c_hi, block, bands, tail)
        # chains at the band edges (upper bound) and at the interior band means under K''
        # (Jensen's lower estimate, g convex); the means get no weight in the upper bound
        n_edges = block_bands.edges.shape[1]
        means = block_bands.lower_mean[:, 1:-1]
        means = np.where(block_bands.lower_mass[:, 1:-1] > 0.0, means, block_bands.edges[:, :-1])
        k_edges = np.concatenate([block_bands.edges, means], axis=1)
        coef = np.concatenate([block_bands.upper_coef, np.zeros_like(means)], axis=1)
        ratio_left, valid_left, ratio_right, valid_right = _lower_line_ratios(block_bands)
    else:
        n_edges = 1
        k_edges = np.zeros((n_blocks, 1))
        coef = np.ones((n_blocks, 1))
        block_bands = None
    n_chains = k_edges.shape[1]
    if no_rest:  # y = c_B·c + c_K·(n − c)
        slope_b, base_y = c_b - c_k, np.full((n_blocks, 1), c_k * float(n))
    else:
        slope_b, base_y = c_b, c_k * k_edges

    # -- anchors --------------------------------------------------------------------------
    c0 = starts[:, None]
    t = positive_threshold(slope_b * c0 + base_y, slope)
    state = anchor_chains(np.broadcast_to(c0, t.shape), t, pi)
    irregular = (t > c0) | ~(state.pmf >= CHAIN_UNDERFLOW)
    bounded = np.zeros_like(irregular)
    bound_value = np.zeros_like(state.tail)
    if np.any(irregular):  # the bound below, evaluated at the irregular chains only
        c1 = np.broadcast_to(ends[:, None], t.shape)[irregular]
        offset_end = slope_b * c1 + np.broadcast_to(base_y, t.shape)[irregular]
        t_min = np.minimum(t[irregular], positive_threshold(offset_end, slope))  # t(c) is monotone in c
        sup = (slope * pi * c1 * upper_tail(t_min - 1.0, c1 - 1.0, pi)
               * (1.0 + special_function_rtol(c1)))
        block_weight = np.broadcast_to(weights_2d.sum(axis=1)[:, None] * coef, t.shape)[irregular]
        negligible = sup * block_weight <= 1e-6 * tail * n / (n_blocks * n_chains)
        bounded[irregular] = negligible
        bound_value[irregular] = np.where(negligible, sup, 0.0)
    exact = irregular & ~bounded
    state = state._replace(tail=np.where(irregular, 0.0, state.tail),
                           pmf=np.where(irregular, 0.0, state.pmf))
    any_bounded = bool(bounded.any())

    upper_total = 0.0
    lower_total = 0.0
    for step in range(block):
        c = starts + step
        c_column = c[:, None]
        offset = slope_b * c_column + base_y
        if step > 0:
            t_next = positive_threshold(offset, slope)
            carried = ~exact & ~bounded
            state = advance_chains(state, c_column - 1.0,
                                   np.minimum(np.maximum(t_next, state.t), state.t + 1.0), pi)
            state = move_threshold(state, c_column, t_next, pi)
            bad = carried & (state.t > c_column)
            # re-anchor where the step was not a unit step, the carried point probability fell
            # towards underflow, or the running error bound grew past _REANCHOR_RTOL
            bad |= carried & ~(state.pmf >= CHAIN_UNDERFLOW)
            if bad.any():
                state, lost = reanchor_chains(state, bad, np.broadcast_to(c_column, bad.shape), pi)
                exact = exact | lost
        # at step 0 every chain is an anchor: nothing carried can be stale
        g_lo, g_up, stale = chain_values(state, c_column, offset, slope, pi, with_stale=step > 0)
        stale &= ~exact & ~bounded
        if step > 0 and stale.any():  # carried error grew past what an anchor would have
            state, lost = reanchor_chains(state, stale, np.broadcast_to(c_column, stale.shape), pi)
            exact = exact | lost
            g_lo, g_up, _ = chain_values(state, c_column, offset, slope, pi)
        if exact.any():
            rows, cols = np.nonzero(exact)
            k_exact = (n - c[rows]) if no_rest else k_edges[rows, cols]
            lo_e, up_e = inner_expectation(c[rows], k_exact, slope, c_b, c_k, pi, problem.c_a)
            g_lo[rows, cols] = lo_e
            g_up[rows, cols] = up_e
        if any_bounded:
            g_up = np.where(bounded, bound_value, g_up)
            g_lo = np.where(bounded, 0.0, g_lo)
        w = weights_2d[:, step]
        h_up = (coef * g_up).sum(axis=1)
        if block_bands is not None:
            h_up = h_up + block_bands.low_tail_mass * slope * c * pi
            h_lo = _lower_value(block_bands, g_lo[:, :n_edges], g_up[:, :n_edges], g_lo[:, n_edges:],
                                ratio_left, valid_left, ratio_right, valid_right)
        else:
            h_lo = g_lo[:, 0]
        upper_total += float(np.dot(w, h_up))
        lower_total += float(np.dot(w, h_lo))

    weight_rtol = SUMMATION_RTOL + float(special_function_rtol(n))
    lower = max(0.0, lower_total / n * (1.0 - weight_rtol))
    upper = min(1.0, upper_total / n * (1.0 + weight_rtol) + dropped * (1.0 + weight_rtol))
    if block_bands is not None:  # the [0, k_0) band is bounded crudely: report it with the truncated mass
        dropped += float(np.sum(weights_2d * (starts[:, None] + np.arange(block)[None, :])
                                * block_bands.low_tail_mass[:, None])) * slope * pi / n
    return DirectionalResult(lower, upper, dropped)


def _lower_value(block_bands: _BlockBands, g_lo: np.ndarray, g_up: np.ndarray, g_mean_lo: np.ndarray,
                 ratio_left: np.ndarray, valid_left: np.ndarray, ratio_right: np.ndarray,
                 valid_right: np.ndarray) -> np.ndarray:
    """Lower estimate Σ_bands M''·(lower bound of E[g | band]), see :func:`_lower_line_ratios`.

    [0, k_0): g ≥ g(k_0); interior band [k_j, k_{j+1}): the largest of Jensen's g(band mean),
    g(k_{j+1}) and the two extended neighbouring chords at the band mean; [k_{E−1}, m]: 0.
    """
    value: np.ndarray = block_bands.lower_mass[:, 0] * g_lo[:, 0]
    if g_lo.shape[1] < 2:
        return value
    inner = g_lo[:, 1:-1]
    left = np.zeros(ratio_left.shape)
    extended = left[:, 1:]  # g(k_j) + (g(k_j) − g(k_{j−1}))·ratio, evaluated in place
    np.subtract(inner, g_up[:, :-2], out=extended)
    extended *= ratio_left[:, 1:]
    extended += inner
    right = np.zeros(ratio_right.shape)
    extended = right[:, :-1]
    np.subtract(inner, g_up[:, 2:], out=extended)
    extended *= ratio_right[:, :-1]
    extended += inner
    np.copyto(left, 0.0, where=~valid_left)
    np.copyto(right, 0.0, where=~valid_right)
    best = np.maximum(g_lo[:, 1:], g_mean_lo)
    np.maximum(best, np.maximum(left, right, out=left), out=best)
    best *= block_bands.lower_mass[:, 1:-1]
    total: np.ndarray = value + best.sum(axis=1)
    return total
