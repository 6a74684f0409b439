"""Binomial tails carried along chains (c, t) by O(1) recurrences with running error bounds, and
the inner expectation read off a chain (the recurrences of the blocked fast path and of the tilted
window)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from dpacct_shuffle.core.binomial import binomial_pmf, binomial_points
from dpacct_shuffle.core.inner_expectation import upper_tail
from dpacct_shuffle.core.problem import UNIT_ROUNDOFF, special_function_rtol, stats


# Anchors whose point probability is below this are not carried (underflow territory).
CHAIN_UNDERFLOW = 1e-280


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
    """Exact anchors: P[Bin(c, π) ≥ t] by the regularized incomplete beta, P[Bin(c, π) = t] by scipy
    (both through the memo of :func:`~dpacct_shuffle.core.binomial.binomial_points` for integer
    points: a search anchors the same (c, t) again and again).

    Both carry relative error ≤ :func:`special_function_rtol` (c).
    """
    c, t = np.broadcast_arrays(np.asarray(c, dtype=float), np.asarray(t, dtype=float))
    tail = upper_tail(t, c, pi)
    inside = (t >= 0.0) & (t <= c)
    with np.errstate(all="ignore"):
        memoized = (binomial_points("pmf", t[inside], c[inside], pi)
                    if np.array_equal(t, np.floor(t)) and np.array_equal(c, np.floor(c)) else None)
        if memoized is not None:  # the same kernel values, each distinct point evaluated once
            pmf = np.zeros(t.shape)
            pmf[inside] = memoized
        else:
            pmf = np.where(inside, binomial_pmf(t, c, pi), 0.0)
    rtol = np.asarray(special_function_rtol(c), dtype=float)
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
    # c − t + 1 is integer-valued (or ±inf): at least 1 where positive, 1 elsewhere (NaN too)
    safe = np.fmax(c - t + 1.0, 1.0)
    c_next = c + 1.0
    with np.errstate(all="ignore"):
        increment = np.where(up, -one_m_pi * state.pmf, state.pmf * (t * one_m_pi / safe))
        factor = np.where(up, pi * c_next / (t + 1.0), one_m_pi * c_next / safe)
    tail = state.tail + increment
    error = (state.tail_error + np.abs(increment) * (state.pmf_rtol + 6.0 * UNIT_ROUNDOFF)
             + 2.0 * UNIT_ROUNDOFF * np.abs(tail))
    return ChainState(np.asarray(t_next, dtype=float), tail, state.pmf * factor, error,
                      state.pmf_rtol + _PMF_STEP_ERROR)


def move_threshold(state: ChainState, c: np.ndarray, t_target: np.ndarray, pi: float
                   ) -> ChainState:
    """Move each chain's threshold to ``t_target`` at fixed c, one unit at a time (A ~ Bin(c, π));
    ``c`` broadcasts against the chains (e.g. one column per block).

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


def positive_threshold(offset: np.ndarray, slope: float) -> np.ndarray:
    """Smallest integer t with x·t + y > 0."""
    return np.floor(-offset / slope) + 1.0


def chain_inner_expectation(
    state: ChainState, c: np.ndarray, offset: np.ndarray, slope: float, pi: float
) -> tuple[np.ndarray, np.ndarray]:
    """Lower/upper values of g = E[(x·A + y)⁺], A ~ Bin(c, π), from carried S = P[A ≥ t], P[A = t].

    Identity (E[A·1{A ≥ t}] = cπ·P[Bin(c−1, π) ≥ t−1] and cπ·P[Bin(c−1, π) = t−1] = t·P[A = t]):

        g = (x·c·π + y)·P[A ≥ t] + x(1 − π)·t·P[A = t].

    The margin is |xcπ + y|·err(S) + x(1 − π)t·pmf·pmf_rtol, plus 8u of the magnitudes of every
    term (rounding of the products and of the threshold t: a threshold off by one changes the
    value by at most |x·t + y|·P[A = t], which is a rounding-size multiple of |y|·P[A = t]).
    """
    lower, upper, _ = chain_values(state, c, offset, slope, pi)
    return lower, upper


def chain_values(state: ChainState, c: np.ndarray, offset: np.ndarray, slope: float, pi: float,
                 *, with_stale: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`chain_inner_expectation` plus ``stale``: where the carried margin exceeds twice the
    margin an exact anchor at the same point would have (plus ``_REANCHOR_RTOL`` of the value), i.e.
    where re-anchoring would visibly tighten the value (cancellation in g amplifies carried error).
    ``with_stale=False`` (chains just anchored, nothing carried) skips that comparison: ``stale``
    is then all False.
    """
    mean_term = slope * c * pi
    slope_term = slope * (1.0 - pi) * state.t * state.pmf
    level = mean_term + offset
    abs_level = np.abs(level)
    abs_tail = np.abs(state.tail)
    # products first (arrays of the chains' full shape), then updated in place: fewer temporaries
    value = level * state.tail
    value += slope_term
    rounding = (mean_term + np.abs(offset)) * (abs_tail + state.pmf)
    rounding += slope_term
    rounding *= 8.0 * UNIT_ROUNDOFF
    margin = abs_level * state.tail_error
    margin += slope_term * state.pmf_rtol
    margin += rounding
    cap = np.maximum(mean_term, 0.0) * (1.0 + 4.0 * UNIT_ROUNDOFF)
    upper = np.minimum(np.maximum(value + margin, 0.0), cap)
    lower = np.minimum(np.maximum(value - margin, 0.0), cap)
    if not with_stale:
        return lower, upper, np.zeros(upper.shape, dtype=bool)
    fresh = abs_level * abs_tail
    fresh += slope_term
    fresh *= special_function_rtol(c)
    fresh += rounding
    fresh *= 2.0
    fresh += _REANCHOR_RTOL * np.abs(value)
    stale = margin > fresh
    return lower, upper, stale


def reanchor_chains(state: ChainState, where: np.ndarray, c: np.ndarray, pi: float,
              floor: float = CHAIN_UNDERFLOW) -> tuple[ChainState, np.ndarray]:
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
