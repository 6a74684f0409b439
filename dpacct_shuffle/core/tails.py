"""Tiny δ: the Chernoff bound, and every cell of a window around the exponentially tilted law with
the rest bounded by Chernoff times a tilted tail mass."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import numpy as np
from scipy import special

from dpacct_shuffle.core.binomial import binomial_cdf, binomial_pmf, binomial_sf
from dpacct_shuffle.core.chains import (
    CHAIN_UNDERFLOW,
    anchor_chains,
    chain_values,
    move_threshold,
    positive_threshold,
    reanchor_chains,
)
from dpacct_shuffle.core.inner_expectation import inner_expectation
from dpacct_shuffle.core.problem import (
    SUMMATION_RTOL,
    UNIT_ROUNDOFF,
    DirectionalProblem,
    DirectionalResult,
    derived_rates,
    special_function_rtol,
    stats,
)
from dpacct_shuffle.core.search import bisect, expand_bracket, smallest_true_integer


@functools.lru_cache(maxsize=1024)
def chernoff_log_upper(problem: DirectionalProblem) -> float:
    """ln of a cheap certified upper bound on (1/n)·E[(c_A·A + c_B·B + c_K·K)⁺] (Chernoff).

    z⁺ ≤ e^(λz − 1)/λ for every λ > 0, and E[e^(λZ)] = M(λ)ⁿ for the multinomial counts, with
    M(λ) = 1 + r_A·(e^(λc_A) − 1) + r_B·(e^(λc_B) − 1) + s·(e^(λc_K) − 1); so
    ln δ ≤ n·ln M(λ) − 1 − ln(λ·n), minimised over λ on a logarithmic grid. Rounding of n·ln M is
    covered by adding 16u·n·(|ln M| + 1) + 1e-9.
    Used to answer "δ is below 1e-300" without truncating far into the tails. Cached (a problem
    is a tuple of numbers): every band refinement of one point asks for it again.
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


def chernoff_epsilon(problems_at: Callable[[float], Sequence[DirectionalProblem] | None],
                     delta: float, cap: float, rtol: float) -> float:
    """Smallest ε in (0, cap] (relative width rtol, the feasible end) at which the Chernoff bound
    :func:`chernoff_log_upper` of every problem of ``problems_at(ε)`` is ≤ ln ``delta``; ``cap`` if
    none below it is (the caller certifies δ = 0 at ``cap``). A problem with a non-finite
    coefficient, or ``None`` (no Chernoff certificate at that ε), counts as failing. Certified where the caller's δ upper bound is capped by the
    same Chernoff bound.
    """
    log_target = math.log(delta)

    def holds(eps: float) -> bool:
        problems = problems_at(eps)
        return problems is not None and all(all(math.isfinite(c) for c in (problem.c_a, problem.c_b, problem.c_k))
                   and chernoff_log_upper(problem) <= log_target for problem in problems)

    bracket = expand_bracket(lambda eps: not holds(eps), 0.0, min(1e-12, cap), ceiling=cap)
    if bracket is None:
        return cap
    infeasible, feasible = bracket
    return bisect(holds, feasible, infeasible, rtol=rtol)


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
    hi = smallest_true_integer(lambda k: float(binomial_sf(k, n, rate)) <= tail, mean, n)
    lo = smallest_true_integer(lambda k: float(binomial_cdf(mean - k - 1, n, rate)) <= tail, 0, mean)
    lo = mean - lo
    outside = (float(binomial_cdf(lo - 1, n, rate)) if lo >= 1 else 0.0)
    outside += float(binomial_sf(hi, n, rate)) if hi < n else 0.0
    return lo, hi, outside * (1.0 + float(special_function_rtol(n)))


def _assign(values: np.ndarray, index: np.ndarray, value: float) -> np.ndarray:
    out: np.ndarray = values.copy()
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
    error bounds of :func:`chain_values`. Chains with a carried margin grown stale or a point
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
    r_c, pi, slope, k_rate, _ = derived_rates(problem)
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
    weight_c = binomial_pmf(c, n, r_c)
    k_anchor = np.minimum(float(k2), m)
    with np.errstate(all="ignore"):
        anchor_k = np.where(k_anchor >= 0.0, binomial_pmf(k_anchor, m, k_rate), 0.0)
    # a column whose anchor underflows above its mode would be carried from 0: not this path
    if np.any((anchor_k < CHAIN_UNDERFLOW) & (k_anchor > np.floor((m + 1.0) * k_rate))
              & (k_anchor >= k1) & (weight_c >= _TINY_WEIGHT)):
        return None
    odds = (1.0 - k_rate) / k_rate
    weight_k = np.zeros_like(c)
    state = anchor_chains(c, positive_threshold(c_b * c + c_k * float(k2), slope), pi)
    upper_total = lower_total = 0.0
    tiny_cells = 0
    for k in range(k2, k1 - 1, -1):
        with np.errstate(all="ignore"):
            weight_k = np.where(k_anchor == k, anchor_k,
                                weight_k * ((k + 1.0) * odds / np.where(m - k > 0.0, m - k, 1.0)))
        weight_k = np.where(k <= m, weight_k, 0.0)
        weight = weight_c * weight_k
        offset = c_b * c + c_k * float(k)
        if k < k2:
            state = move_threshold(state, c, positive_threshold(offset, slope), pi)
        g_lo, g_up, stale = chain_values(state, c, offset, slope, pi)
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
                state, lost = reanchor_chains(state, redo, c, pi, _TILTED_UNDERFLOW)
                g_lo, g_up, _ = chain_values(state, c, offset, slope, pi)
                if np.any(lost):  # closed form at this cell
                    lo_e, up_e = inner_expectation(c[lost], np.full(int(np.sum(lost)), float(k)),
                                                   slope, c_b, c_k, pi, problem.c_a)
                    g_lo[lost], g_up[lost] = lo_e, up_e
            if np.any(dormant):
                idle = where[dormant]
                g_lo[idle] = 0.0
                # 1 − ρ_t ≥ 0.01 has relative rounding error ≤ 400u
                g_up[idle] = (slope * cw[dormant] * point[dormant] / (1.0 - ratio[dormant])
                              * (1.0 + 1e-12))
        tiny_cells += int(np.sum((weight < _TINY_WEIGHT) & (k <= m)))
        upper_total += float(np.dot(weight, g_up))
        lower_total += float(np.dot(weight, g_lo))
    steps = k2 - k1 + 1
    weight_rtol = (SUMMATION_RTOL + 2.0 * float(special_function_rtol(n))
                   + (steps + 2) * 6.0 * UNIT_ROUNDOFF)
    # underflowing weights, plus 1e-320 per cell for denormal rounding of the products
    slack = tiny_cells * _TINY_WEIGHT * slope * float(c2) * pi + (c2 - c1 + 1) * steps * 1e-320
    dropped = (outside + slack / n) * (1.0 + weight_rtol)
    upper = min(1.0, upper_total / n * (1.0 + weight_rtol) + dropped)
    lower = max(0.0, lower_total / n * (1.0 - weight_rtol))
    return DirectionalResult(min(lower, upper), upper, dropped)
