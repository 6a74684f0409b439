"""Numerical kernels for the neutral-aware variation-ratio bound (docs/theory.md, "Neutral-aware
bound").

The divergence of the dominating pair is

    δ(ε) = (1/n) · E[(c_A·A + c_B·B + c_K·K)⁺],   (A, B, K, rest) ~ Multinomial(n; r_A, r_B, s, ρ).

It is evaluated as a sum over C = A + B ~ Bin(n, r_A + r_B) and K | C = c ~ Bin(n − c, s/(1 − r_A − r_B))
of the inner expectation over A | C = c ~ Bin(c, π), π = r_A/(r_A + r_B), which has the closed form

    g(c, k) = E[(x·A + y)⁺] = x·c·π·P[Bin(c−1, π) ≥ t−1] + y·P[Bin(c, π) ≥ t],

with slope x = c_A − c_B > 0, offset y = c_B·c + c_K·k (``slope`` and ``offset`` in the code) and t
the smallest integer with x·t + y > 0 (E[A·1{A ≥ t}] = c·π·P[Bin(c−1, π) ≥ t−1]). g is non-increasing in k (c_K ≤ 0), so grouping k into
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

:func:`directional_bracket` dispatches one direction to the first evaluator that applies:

1. huge e^ε, where only cells without B- (and K-) clones can be positive: a closed form
   (:func:`~dpacct_shuffle.core.isolated_clone.isolated_clone_bracket`; p = ∞ tends to
   β·(1 − r_B − s)^(n−1));
2. small problems (≤ ``EXACT_CELL_LIMIT`` cells): every cell summed
   (:func:`~dpacct_shuffle.core.cellwise.cellwise_directional_bracket`, also the reference the
   other paths are tested against);
3. tiny δ: every cell of a window around the exponentially tilted law, the rest bounded by Chernoff
   times a tilted tail mass (:func:`~dpacct_shuffle.core.tails.tilted_window_bracket`);
4. otherwise the blocked fast path (:func:`~dpacct_shuffle.core.blocked.blocked_directional_bracket`:
   coupled K laws per block of C values, binomial tails carried by the recurrences of
   :mod:`dpacct_shuffle.core.chains`, re-anchored exactly), whose extra approximations are all on
   the safe side.

The problem, its result types and margins live in :mod:`dpacct_shuffle.core.problem`, the inner
expectation g(c, k) in :mod:`dpacct_shuffle.core.inner_expectation`.
"""

from __future__ import annotations

from dpacct_shuffle.core.blocked import MAX_BLOCK, blocked_directional_bracket
from dpacct_shuffle.core.cellwise import EXACT_CELL_LIMIT, cellwise_directional_bracket
from dpacct_shuffle.core.isolated_clone import isolated_clone_bracket
from dpacct_shuffle.core.problem import DirectionalProblem, DirectionalResult, derived_rates
from dpacct_shuffle.core.tails import tilted_window_bracket


def directional_bracket(problem: DirectionalProblem, bands: int, tail: float,
                        shift_tol: float = 1e-4, max_block: int = MAX_BLOCK) -> DirectionalResult:
    """Bracket (1/n)·E[(c_A·A + c_B·B + c_K·K)⁺] for one direction: 0 when c_A ≤ 0 (no cell is
    positive), else the first evaluator of the module docstring that applies.

    ``bands`` is the number of K bands per C value, ``tail`` the probability mass of C (and K) left
    out on each side; ``shift_tol`` and ``max_block`` set the block length of the blocked path.
    """
    if problem.c_a <= 0.0:
        return DirectionalResult(0.0, 0.0, 0.0)
    isolated = isolated_clone_bracket(problem)
    if isolated is not None:
        return isolated
    if derived_rates(problem).cells <= EXACT_CELL_LIMIT:
        return cellwise_directional_bracket(problem, bands, tail)
    tilted = tilted_window_bracket(problem, tail)
    if tilted is not None:
        return tilted
    return blocked_directional_bracket(problem, bands, tail, shift_tol, max_block)


__all__ = ["directional_bracket"]
