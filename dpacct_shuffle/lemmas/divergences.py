"""Exact divergences of explicit finite distributions and randomizer matrices ([DR14] Def 3.5,
Def 3.6, Remark 3.2): the tools the tests use to check each lemma on concrete randomizers.

[DR14] C. Dwork and A. Roth, "The Algorithmic Foundations of Differential Privacy", Foundations
and Trends in Theoretical Computer Science 9(3–4), 2014, ch. 3; [HC] Y. Huang and C. L. Canonne,
"Lemmas of Differential Privacy".
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpacct_shuffle.core.rounding import round_loss_up
from dpacct_shuffle.core.validation import check_distribution, check_epsilon, check_stochastic_matrix
from dpacct_shuffle.lemmas.checks import check_delta_closed


def _check_pair(p: ArrayLike, q: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    first = check_distribution("p", p)
    second = check_distribution("q", q)
    if first.shape != second.shape:
        raise ValueError(f"p and q must have the same length, got {first.size} and {second.size}")
    return first, second


def _check_randomizer(name: str, matrix: ArrayLike) -> NDArray[np.float64]:
    """A row-stochastic matrix: row x is the output distribution R(x)."""
    return check_stochastic_matrix(name, matrix)


def _hockey_stick(p: NDArray[np.float64], q: NDArray[np.float64], factor: float) -> float:
    """Σ_y max(0, p(y) − factor·q(y)) for factor ∈ [0, +inf] (points with q = 0 contribute p)."""
    with np.errstate(invalid="ignore", over="ignore"):
        terms = np.where(q > 0.0, np.maximum(p - factor * q, 0.0), p)
    return math.fsum(terms.tolist())



def hockey_stick_divergence(p: ArrayLike, q: ArrayLike, eps: float) -> float:
    """Hockey-stick divergence ``D_{e^ε}(P‖Q) = Σ_y max(0, P(y) − e^ε Q(y))``.

    Equals ``max_S P(S) − e^ε Q(S)``; a mechanism is (ε, δ)-DP iff this is ≤ δ in both directions
    for every neighbouring pair ([DR14] Remark 3.2). Summed with ``math.fsum``.

    Raises ValueError unless ``p``, ``q`` are probability vectors of equal length and ``eps ≥ 0``.
    """
    first, second = _check_pair(p, q)
    epsilon = check_epsilon(eps, "eps")
    return _hockey_stick(first, second, math.exp(epsilon) if epsilon < 709.0 else math.inf)


def max_divergence(p: ArrayLike, q: ArrayLike) -> float:
    """Max divergence ``D_∞(P‖Q) = max_{S ⊆ Supp(P)} ln(P(S)/Q(S)) = max_{P(y)>0} ln(P(y)/Q(y))``.

    [DR14] Def 3.6. ``+inf`` if Q(y) = 0 for some y with P(y) > 0. A mechanism is ε-DP iff
    ``D_∞ ≤ ε`` in both directions for every neighbouring pair ([DR14] Remark 3.2).
    """
    first, second = _check_pair(p, q)
    support = first > 0.0
    if np.any(second[support] == 0.0):
        return math.inf
    return round_loss_up(float(np.max(_log_ratio(first[support], second[support]))))


def _log_ratio(p: NDArray[np.float64], q: NDArray[np.float64]) -> NDArray[np.float64]:
    """ln(p/q) for positive arrays, with log1p((p − q)/q) near 1 (p − q exact there, Sterbenz)."""
    ratio = p / q
    near_one = (ratio >= 0.5) & (ratio <= 2.0)
    return np.where(near_one, np.log1p((p - q) / q), np.log(ratio))


def approximate_max_divergence(p: ArrayLike, q: ArrayLike, delta: float) -> float:
    """δ-approximate max divergence ([DR14] Def 3.6) as a privacy parameter: clipped at 0.

    ``max(0, D_∞^δ(P‖Q))``, ``D_∞^δ(P‖Q) = max_{S ⊆ Supp(P), P(S) ≥ δ} ln((P(S) − δ)/Q(S))``
    ``= inf{ε ∈ ℝ : D_{e^ε}(P‖Q) ≤ δ}`` (hockey-stick form, used here); i.e. the smallest ε ≥ 0
    with D_{e^ε}(P‖Q) ≤ δ.

    By [DR14] Remark 3.2 a mechanism is (ε, δ)-DP iff this is ≤ ε in both directions. The
    unclipped divergence can be negative (P = Q, δ > 0 gives ln(1 − δ); δ ≥ TV(P, Q) gives a value
    ≤ 0), which is no privacy parameter: 0 is returned then. ``+inf`` when the mass of P where
    Q = 0 exceeds δ. Computed exactly from the piecewise-linear map
    t ↦ Σ_y max(0, P(y) − t·Q(y)); the result is then moved up until ``D_{e^ε}(P‖Q) ≤ δ`` holds
    in floating point, so the returned ε is never below the true value.
    """
    first, second = _check_pair(p, q)
    delta_value = check_delta_closed(delta)
    if delta_value == 0.0:
        return max_divergence(first, second)  # D_∞^0 = D_∞ (log1p form: better accuracy)
    zero_q = second == 0.0
    infinite_mass = math.fsum(first[zero_q].tolist())
    if infinite_mass > delta_value:
        return math.inf
    pos_p = first[~zero_q]
    pos_q = second[~zero_q]
    order = np.argsort(-(pos_p / pos_q), kind="stable")
    pos_p, pos_q = pos_p[order], pos_q[order]
    ratios = pos_p / pos_q
    cum_p = np.concatenate([[0.0], np.cumsum(pos_p)])
    cum_q = np.concatenate([[0.0], np.cumsum(pos_q)])
    # f(r_j) with the points of larger ratio (indices < j) included: non-decreasing in j.
    at_breakpoints = infinite_mass + cum_p[:-1] - ratios * cum_q[:-1]
    above = np.nonzero(at_breakpoints > delta_value)[0]
    # j ≥ 1 because f(r_0) = m_inf ≤ δ. On [r_j, r_{j-1}] (or [0, r_{last}] when j = size),
    # f(t) = m_inf + cum_p[j] − t·cum_q[j], with cum_q[j] > 0.
    j = int(above[0]) if above.size else ratios.size
    threshold = (infinite_mass + cum_p[j] - delta_value) / cum_q[j]
    if threshold <= 1.0:  # D_∞^δ ≤ 0: every ε ≥ 0 already satisfies D_{e^ε}(P‖Q) ≤ δ
        return 0.0
    epsilon = math.log(threshold)
    for _ in range(200):
        if _hockey_stick(first, second, math.exp(epsilon)) <= delta_value:
            return epsilon
        epsilon = epsilon + max(abs(epsilon), 1e-300) * 4e-16 + 1e-15
    raise ArithmeticError("approximate_max_divergence: could not certify the result")  # pragma: no cover


def kl_divergence(p: ArrayLike, q: ArrayLike) -> float:
    """KL divergence ``D(P‖Q) = Σ_y P(y) ln(P(y)/Q(y))`` ([DR14] Def 3.5); ``+inf`` if P ≪̸ Q."""
    first, second = _check_pair(p, q)
    support = first > 0.0
    if np.any(second[support] == 0.0):
        return math.inf
    terms = first[support] * (np.log(first[support]) - np.log(second[support]))
    return math.fsum(terms.tolist())


def randomizer_delta(matrix: ArrayLike, eps: float) -> float:
    """Smallest δ such that the finite randomizer ``matrix`` (rows R(x)) is (ε, δ)-LDP (replacement).

    ``max_{x ≠ x'} D_{e^ε}(R(x)‖R(x'))`` over ordered row pairs.
    """
    rows = _check_randomizer("matrix", matrix)
    epsilon = check_epsilon(eps, "eps")
    factor = math.exp(epsilon) if epsilon < 709.0 else math.inf
    best = 0.0
    for i in range(rows.shape[0]):
        for j in range(rows.shape[0]):
            if i != j:
                best = max(best, _hockey_stick(rows[i], rows[j], factor))
    return min(1.0, best)  # a hockey-stick divergence is at most 1 (the sum's rounding may exceed it)


def randomizer_epsilon(matrix: ArrayLike, delta: float = 0.0) -> float:
    """Smallest ε ≥ 0 such that the finite randomizer ``matrix`` is (ε, δ)-LDP (replacement).

    ``max(0, max_{x ≠ x'} D_∞^δ(R(x)‖R(x')))`` ([DR14] Remark 3.2); for δ = 0 the pure LDP ε.
    """
    rows = _check_randomizer("matrix", matrix)
    delta_value = check_delta_closed(delta)
    best = 0.0
    for i in range(rows.shape[0]):
        for j in range(rows.shape[0]):
            if i != j:
                best = max(best, approximate_max_divergence(rows[i], rows[j], delta_value))
    return best


def deletion_delta(matrix: ArrayLike, reference: ArrayLike, eps: float) -> float:
    """Smallest δ making ``matrix`` an (ε, δ)-deletion LDP randomizer w.r.t. ``reference`` R0.

    [HC] Def 2.3: ``e^{-ε}(R0(S) − δ) ≤ R(x)(S) ≤ e^ε R0(S) + δ`` for all x, S, i.e.
    ``max_x max(D_{e^ε}(R(x)‖R0), D_{e^ε}(R0‖R(x)))``.
    """
    rows = _check_randomizer("matrix", matrix)
    reference_dist = check_distribution("reference", reference)
    if reference_dist.size != rows.shape[1]:
        raise ValueError(
            f"reference must have one entry per output ({rows.shape[1]}), got {reference_dist.size}"
        )
    epsilon = check_epsilon(eps, "eps")
    factor = math.exp(epsilon) if epsilon < 709.0 else math.inf
    return max(
        max(_hockey_stick(row, reference_dist, factor), _hockey_stick(reference_dist, row, factor))
        for row in rows
    )


__all__ = [
    "approximate_max_divergence",
    "deletion_delta",
    "hockey_stick_divergence",
    "kl_divergence",
    "max_divergence",
    "randomizer_delta",
    "randomizer_epsilon",
]
