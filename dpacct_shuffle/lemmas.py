"""The lemma toolbox: small, validated conversions between privacy guarantees.

Every function cites the lemma it implements and returns plain numbers, a privacy profile (a
callable ``delta(eps) -> delta``) or, for constructions, a numpy array. Sources (full references
and the list of lemmas in docs/theory.md, "Lemmas"):

* [HC] Y. Huang and C. L. Canonne, "Lemmas of Differential Privacy" (a compendium; its numbering
  is used where a lemma has no earlier source, and in parentheses otherwise);
* [DR14] C. Dwork and A. Roth, "The Algorithmic Foundations of Differential Privacy",
  Foundations and Trends in Theoretical Computer Science 9(3–4), 2014, ch. 3;
* [ASZ18] Acharya, Sun, Zhang, NeurIPS 2018; [KOV15] Kairouz, Oh, Viswanath, "The Composition
  Theorem for Differential Privacy", ICML 2015; [BNS19] Bun, Nelson, Stemmer, "Heavy Hitters and
  the Structure of Local Privacy", ACM TALG 2019; [EFMRSTT20] Erlingsson et al., "Encode, Shuffle,
  Analyze Privacy Revisited", arXiv:2001.03618; [NV20] Naor, Vexler, FORC 2020; [CSUZZ19] Cheu,
  Smith, Ullman, Zeber, Zhilyaev, "Distributed Differential Privacy via Shuffling", EUROCRYPT
  2019; [FMT21] Feldman, McMillan, Talwar, "Hiding Among the Clones", FOCS 2021,
  arXiv:2012.12803; [FMT22] Feldman, McMillan, Talwar, "Stronger Privacy Amplification by
  Shuffling for Rényi and Approximate Differential Privacy", SODA 2023, arXiv:2208.04591;
  [Ste22] Steinke, "Composition of Differential Privacy & Privacy Amplification by Subsampling",
  arXiv:2210.00597.

Soundness conventions:

* every ε or δ returned as a *guarantee* is rounded **up** by a few ulps
  (:func:`~dpacct_shuffle.core.rounding.round_loss_up`), and quantities that are inverted to
  feed a non-increasing profile are rounded **down**;
* exact zeros and infinities are returned as such;
* every input is validated: bad input raises ``ValueError``/``TypeError`` naming the parameter
  and its allowed range, and no function returns a bound outside its lemma's validity condition.

The divergence helpers (:func:`hockey_stick_divergence`, :func:`max_divergence`,
:func:`approximate_max_divergence`, :func:`kl_divergence`, :func:`randomizer_delta`,
:func:`randomizer_epsilon`, :func:`deletion_delta`) compute the exact quantity of *explicit*
finite distributions; they are the tools the tests use to check each lemma on concrete
randomizers.

Correction to [HC] (documented in :func:`advanced_grouposition_approx`): Theorem 4.2 as printed
there adds ``δ + k·δ'`` (δ = the LDP parameter, δ' = the tail parameter inside ε'); that is
false — a leaky randomized response violates it — and the valid additive term is ``δ' + k·δ``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpacct_shuffle.core.closed_forms import fmt_epsilon, fmt_validity_limit
from dpacct_shuffle.core.rounding import round_loss_down, round_loss_up
from dpacct_shuffle.core.validation import (
    check_distribution,
    check_epsilon,
    check_num_users,
    check_range,
    check_stochastic_matrix,
)

Profile = Callable[[float], float]

# ---------------------------------------------------------------------------------------------
# validation helpers
# ---------------------------------------------------------------------------------------------


def _check_delta_closed(value: object, name: str = "delta") -> float:
    """δ ∈ [0, 1]."""
    return check_range(name, value, 0.0, 1.0)


def _check_epsilon_or_inf(value: object, name: str) -> float:
    """ε ∈ [0, +inf] (+inf = no guarantee)."""
    return check_range(name, value, 0.0, math.inf)


def _check_pair(p: ArrayLike, q: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    first = check_distribution("p", p)
    second = check_distribution("q", q)
    if first.shape != second.shape:
        raise ValueError(f"p and q must have the same length, got {first.size} and {second.size}")
    return first, second


def _check_randomizer(name: str, matrix: ArrayLike) -> NDArray[np.float64]:
    """A row-stochastic matrix: row x is the output distribution R(x)."""
    return check_stochastic_matrix(name, matrix)


def _check_profile(profile: object) -> None:
    if not callable(profile):
        raise TypeError(f"profile must be a callable delta(eps) -> delta, got {type(profile).__name__}")


def _hockey_stick(p: NDArray[np.float64], q: NDArray[np.float64], factor: float) -> float:
    """Σ_y max(0, p(y) − factor·q(y)) for factor ∈ [0, +inf] (points with q = 0 contribute p)."""
    with np.errstate(invalid="ignore", over="ignore"):
        terms = np.where(q > 0.0, np.maximum(p - factor * q, 0.0), p)
    return math.fsum(terms.tolist())


# ---------------------------------------------------------------------------------------------
# divergences of explicit finite distributions ([DR14], Def 3.5, Def 3.6, Remark 3.2)
# ---------------------------------------------------------------------------------------------


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
    delta_value = _check_delta_closed(delta)
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


def kl_divergence_bound(eps: float) -> float:
    """[DR14] Lemma 3.18: ``D_∞(P‖Q) ≤ ε`` and ``D_∞(Q‖P) ≤ ε`` imply ``D(P‖Q) ≤ ε(e^ε − 1)``."""
    epsilon = check_epsilon(eps, "eps")
    if epsilon > 700.0:  # ε(e^ε − 1) > 1e306 overflows: the bound is +∞ in floats
        return math.inf
    return round_loss_up(epsilon * math.expm1(epsilon), zero_is_exact=epsilon == 0.0)


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
    delta_value = _check_delta_closed(delta)
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


# ---------------------------------------------------------------------------------------------
# central DP conversions ([HC] §3)
# ---------------------------------------------------------------------------------------------


def pure_to_approx(eps: float, delta: float) -> float:
    """[ASZ18, Lemma 5] ([HC] Lemma 3.1): any (ε + δ, 0)-DP mechanism is (ε, δ)-DP.

    Direction of use: ``eps`` is the **pure** ε of a mechanism you have and ``delta`` the δ you are
    willing to add; the return value is the approximate ε' such that the mechanism is (ε', δ)-DP:

        ε' = max(ε − δ, 0).

    (If δ ≥ ε the mechanism is δ-DP hence (0, δ)-DP by the lemma with ε = 0.) The returned value
    is rounded up.
    """
    pure_epsilon = check_epsilon(eps, "eps")
    delta_value = _check_delta_closed(delta)
    if delta_value >= pure_epsilon:
        return 0.0
    return round_loss_up(pure_epsilon - delta_value)


def approx_to_pure(eps: float, delta: float, k: int, eta: float) -> float:
    """[HC] Lemma 3.2: (ε, δ)-DP with k possible outputs → ε'-DP after mixing with uniform.

    Mixing A with the uniform distribution on its k outputs with weight η (see
    :func:`mix_with_uniform`) gives a mechanism A' with TV(A(x), A'(x)) ≤ η that is ε'-DP:

        ε' = ln(e^ε + kδ/η) = ε + ln(1 + kδ e^{-ε}/η).

    Requires ε ≥ 0, δ ∈ [0, 1], integer k ≥ 1, η ∈ (0, 1]. Rounded up.
    """
    epsilon = check_epsilon(eps, "eps")
    delta_value = _check_delta_closed(delta)
    outputs = check_num_users(k, "k")
    mixing = check_range("eta", eta, 0.0, 1.0, low_open=True)
    value = epsilon + math.log1p(outputs * delta_value * math.exp(-epsilon) / mixing)
    return round_loss_up(value, zero_is_exact=epsilon == 0.0 and delta_value == 0.0)


def mix_with_uniform(distributions: ArrayLike, eta: float) -> NDArray[np.float64]:
    """The construction of [HC] Lemma 3.2: ``(1 − η)·A(x) + η·Uniform(k)`` row by row.

    Accepts one distribution (1-D) or a randomizer matrix (2-D, one row per input).
    """
    mixing = check_range("eta", eta, 0.0, 1.0, low_open=True)
    array = np.asarray(distributions, dtype=float)
    if array.ndim == 1:
        checked = check_distribution("distributions", array)
    else:
        checked = _check_randomizer("distributions", array)
    outputs = checked.shape[-1]
    return (1.0 - mixing) * checked + mixing / outputs


def basic_composition(pairs: Iterable[tuple[float, float]]) -> tuple[float, float]:
    """[DR14] Thm 3.14 / Cor 3.15 / Thm 3.16 (basic composition).

    Running mechanisms M_i that are (ε_i, δ_i)-DP (with independent coins, possibly adaptively)
    is (Σ ε_i, Σ δ_i)-DP. Returns ``(Σε, min(1, Σδ))`` (sums with ``math.fsum``, rounded up).
    ``pairs`` must be non-empty; each element is ``(eps_i, delta_i)`` with ε_i ≥ 0, δ_i ∈ [0, 1].
    """
    epsilons: list[float] = []
    deltas: list[float] = []
    if isinstance(pairs, (str, bytes)) or not hasattr(pairs, "__iter__"):
        raise TypeError(f"pairs must be an iterable of (eps, delta) pairs, got {type(pairs).__name__}")
    for index, pair in enumerate(pairs):
        try:
            eps_i, delta_i = pair
        except (TypeError, ValueError):
            raise TypeError(f"pairs[{index}] must be a pair (eps, delta), got {pair!r}") from None
        epsilons.append(check_epsilon(eps_i, f"pairs[{index}].eps"))
        deltas.append(_check_delta_closed(delta_i, f"pairs[{index}].delta"))
    if not epsilons:
        raise ValueError("pairs must contain at least one (eps, delta) pair")
    try:
        total = round_loss_up(math.fsum(epsilons))
    except OverflowError:  # the sum exceeds the float range: (∞, Σδ)-DP holds trivially
        total = math.inf
    return total, min(1.0, round_loss_up(math.fsum(deltas)))


# ---------------------------------------------------------------------------------------------
# local DP ([HC] §4, Cor 3.1)
# ---------------------------------------------------------------------------------------------


def replacement_to_deletion(eps: float, delta: float) -> tuple[float, float]:
    """[HC] Lemma 4.1: (ε, δ)-replacement LDP ⇒ (ε, δ)-deletion LDP (reference R0 = R(x0))."""
    return check_epsilon(eps, "eps"), _check_delta_closed(delta)


def deletion_to_replacement(eps: float, delta: float) -> tuple[float, float]:
    """[HC] Lemma 4.2: (ε, δ)-deletion LDP ⇒ (2ε, (e^ε + 1)δ)-replacement LDP.

    Not (2ε, 2δ) as stated in [EFMRSTT20]: [HC]'s explicit 3-output counterexample
    (ε = 1/4, δ = 1/6, uniform reference) attains (e^ε + 1)δ exactly. δ is capped at 1; both
    values are rounded up.
    """
    epsilon = check_epsilon(eps, "eps")
    delta_value = _check_delta_closed(delta)
    if delta_value == 0.0:
        scaled = 0.0
    elif epsilon + math.log(delta_value) >= 1.0:
        scaled = 1.0  # e^ε·δ ≥ e > 1 (e^ε itself may overflow)
    elif epsilon > 700.0:  # e^ε·δ = exp(ε + ln δ), the rounding of ln δ (≤ 1e-13 relative) covered
        scaled = round_loss_up(math.exp(epsilon + math.log(delta_value)) * (1.0 + 1e-12) + delta_value)
    else:
        scaled = round_loss_up((math.exp(epsilon) + 1.0) * delta_value)
    return round_loss_up(2.0 * epsilon), min(1.0, scaled)


def deletion_to_replacement_profile(profile: Profile) -> Profile:
    """[HC] Lemma 4.2 applied at every ε: deletion profile δ_del(ε) → replacement profile.

    ``δ_rep(ε') = (e^{ε'/2} + 1)·δ_del(ε'/2)`` (capped at 1, rounded up). ``profile`` must return
    values in [0, 1] (ValueError otherwise).
    """
    _check_profile(profile)

    def delta_of_eps(eps: float) -> float:
        epsilon = check_epsilon(eps, "eps")
        half = epsilon / 2.0  # exact
        base_delta = _check_delta_closed(profile(half), "profile(eps)")
        value = (math.exp(half) + 1.0) * base_delta
        return min(1.0, round_loss_up(value, zero_is_exact=base_delta == 0.0))

    return delta_of_eps


def chained_ldp(eps1: float, eps2: float) -> float:
    """[EFMRSTT20, Cor A.2; NV20, Thm 4.3] ([HC] Cor 4.1): ε1-LDP R1 then ε2-LDP R2.

    R2∘R1 is ε-LDP (replacement, and deletion if R1 is deletion LDP) with

        ε = ln((e^{ε1+ε2} + 1)/(e^{ε1} + e^{ε2})) = ln(1 + (e^{ε1} − 1)(e^{ε2} − 1)/(e^{ε1} + e^{ε2})),

    which is tight (attained by binary randomized response composed with binary randomized
    response) and ≤ min(ε1, ε2) and ≤ ε1·ε2/2 (:func:`chained_ldp_product_bound`). Either
    argument may be ``+inf`` (no guarantee): ``chained_ldp(inf, e) = e``. Rounded up, then capped
    at min(ε1, ε2) (post-processing, itself a valid bound).
    """
    first = _check_epsilon_or_inf(eps1, "eps1")
    second = _check_epsilon_or_inf(eps2, "eps2")
    small, large = min(first, second), max(first, second)
    if math.isinf(small):
        return math.inf
    if large <= 30.0:
        value = math.log1p(math.expm1(first) * math.expm1(second) / (math.exp(first) + math.exp(second)))
    else:
        # divide numerator and denominator by e^{large}: no overflow, no cancellation
        value = small + math.log1p(math.exp(-large - small)) - math.log1p(math.exp(small - large))
    return min(round_loss_up(value, zero_is_exact=small == 0.0), small)


def chained_ldp_product_bound(eps1: float, eps2: float) -> float:
    """[HC] Cor 4.1 / App. 7.1 [NV20]: the weaker closed form ε ≤ ε1·ε2/2 (rounded up).

    Always ≥ :func:`chained_ldp`; easier to manipulate, but can exceed min(ε1, ε2) for large ε.
    """
    first = check_epsilon(eps1, "eps1")
    second = check_epsilon(eps2, "eps2")
    return round_loss_up(first * second / 2.0, zero_is_exact=first == 0.0 or second == 0.0)


def pure_ldp_profile(eps0: float) -> Profile:
    """Privacy profile of any ε0-LDP randomizer pair ([FMT21, Lemma 3.4]; [HC] Cor 3.1).

    Every ε0-LDP randomizer is a post-processing of binary randomized response with parameter ε0,
    so for every pair of inputs ``D_{e^ε}(R(x)‖R(x')) ≤ δ_RR(ε) = max(0, e^{ε0} − e^ε)/(e^{ε0} + 1)``
    (tight for randomized response). Returns ``delta(eps)`` for ε ≥ 0 (values rounded up).
    """
    epsilon0 = check_epsilon(eps0, "eps0")

    def delta_of_eps(eps: float) -> float:
        epsilon = check_epsilon(eps, "eps")
        if epsilon >= epsilon0:
            return 0.0
        # (e^{ε0} − e^{ε})/(e^{ε0} + 1) = −expm1(ε − ε0)/(1 + e^{−ε0})
        value = -math.expm1(epsilon - epsilon0) / (1.0 + math.exp(-epsilon0))
        return min(1.0, round_loss_up(value, zero_is_exact=False))

    return delta_of_eps


def advanced_grouposition(eps: float, k: int, delta: float) -> float:
    """[BNS19, Thm 4.2] ([HC] Thm 4.1): advanced grouposition for pure LDP.

    If every user's randomizer is ε-LDP and datasets differ in at most k entries, the privacy loss
    exceeds ``ε' = k·ε²/2 + ε·sqrt(2k·ln(1/δ))`` with probability ≤ δ; in particular the protocol is
    (ε', δ)-DP for such pairs. Requires ε ≥ 0, integer k ≥ 1, δ ∈ (0, 1]. Rounded up.

    Note: plain group privacy gives k·ε (with δ = 0), which is smaller when ε is large; take
    ``min(k*eps, advanced_grouposition(eps, k, delta))`` if you want the better of the two.
    """
    epsilon = check_epsilon(eps, "eps")
    group = check_num_users(k, "k")
    delta_value = check_range("delta", delta, 0.0, 1.0, low_open=True)
    value = group * epsilon * epsilon / 2.0 + epsilon * math.sqrt(2.0 * group * -math.log(delta_value))
    return round_loss_up(value, zero_is_exact=epsilon == 0.0)


def advanced_grouposition_approx(
    eps: float, delta: float, k: int, delta_prime: float
) -> tuple[float, float]:
    """Advanced grouposition for approximate LDP ([BNS19, Thm 4.3], corrected;
    [HC] Thm 4.2).

    Every randomizer (ε, δ)-LDP, datasets differing in at most k entries, any δ' ∈ (0, 1]: the
    protocol is (ε', δ' + k·δ)-DP with ε' = k·ε²/2 + ε·sqrt(2k·ln(1/δ')) (:func:`advanced_grouposition`).

    [HC] prints the additive term as ``δ + k·δ'``; that is false: for k users running a leaky
    randomized response (reveal the input with probability δ) the hockey-stick divergence is at
    least 1 − (1 − δ)^k ≈ kδ at every ε', which exceeds δ + kδ' when δ' is small (see the tests).
    Proof of δ' + kδ: by [KOV15] ([HC] Lemma 3.3) each differing user's pair is
    R(x_i) = (1 − δ)M_i + δL_i, R(x'_i) = (1 − δ)M'_i + δL'_i with (M_i, M'_i) an ε-DP pair
    (binary-RR weights). With probability (1 − δ)^k no differing user leaks and the outputs follow
    the pure product pair, for which Thm 4.1 gives slack δ'; the leak event has probability
    1 − (1 − δ)^k ≤ kδ. Hence Pr[A(X) ∈ T] ≤ (1 − δ)^k(e^{ε'}Pr[M(X') ∈ T] + δ') + kδ
    ≤ e^{ε'}Pr[A(X') ∈ T] + δ' + kδ.

    Returns ``(ε', min(1, δ' + k·δ))``, both rounded up.
    """
    epsilon = check_epsilon(eps, "eps")
    delta_value = _check_delta_closed(delta)
    group = check_num_users(k, "k")
    tail = check_range("delta_prime", delta_prime, 0.0, 1.0, low_open=True)
    epsilon_prime = advanced_grouposition(epsilon, group, tail)
    return epsilon_prime, min(1.0, round_loss_up(tail + group * delta_value))


# ---------------------------------------------------------------------------------------------
# shuffle model ([HC] §5)
# ---------------------------------------------------------------------------------------------


def shuffle_to_ldp(eps: float, delta: float, n: int) -> tuple[float, float]:
    """[CSUZZ19, Thm 6.2] ([HC] Thm 5.1): one-message shuffle (ε_S, δ_S)-DP ⇒ LDP.

    If the shuffled one-message protocol with n users is (ε_S, δ_S)-DP, the local randomizer is
    (ε_S + ln n, δ_S)-LDP. Returns ``(ε_S + ln n, δ_S)`` (ε rounded up).
    """
    epsilon = check_epsilon(eps, "eps")
    delta_value = _check_delta_closed(delta)
    users = check_num_users(n, "n")
    if users == 1:
        return epsilon, delta_value
    return round_loss_up(epsilon + math.log(users)), delta_value


def shuffle_to_ldp_profile(profile: Profile, n: int) -> Profile:
    """[HC] Thm 5.1 applied at every ε: shuffled profile δ_S(ε) → local profile δ_L.

    ``δ_L(ε) = δ_S(ε − ln n)`` for ε ≥ ln n; below ln n the theorem says nothing and the trivial
    bound 1 is returned. ε − ln n is rounded down (δ_S is non-increasing). ``profile`` must return
    values in [0, 1] (ValueError otherwise).
    """
    _check_profile(profile)
    users = check_num_users(n, "n")
    log_n = math.log(users)

    def delta_of_eps(eps: float) -> float:
        epsilon = check_epsilon(eps, "eps")
        if users == 1:
            return _check_delta_closed(profile(epsilon), "profile(eps)")
        shifted = round_loss_down(epsilon - round_loss_up(log_n))
        if shifted < 0.0:
            return 1.0
        return _check_delta_closed(profile(shifted), "profile(eps)")

    return delta_of_eps


def fmt_shuffle_bound(eps0: float, n: int, delta: float) -> float:
    """[FMT22, Thm 3.2] ([HC] Thm 5.2): shuffling n reports of an ε0-LDP randomizer is (ε, δ)-DP,

        ε = ln(1 + 4(e^{ε0} − 1)(sqrt(2 ln(4/δ)/((e^{ε0} + 1) n)) + 1/n)),

    valid only when ε0 ≤ ln(n/(8 ln(2/δ)) − 1) (raises ValueError naming ``eps0`` otherwise) and
    δ ∈ (0, 1). Delegates to :func:`dpacct_shuffle.core.closed_forms.fmt_epsilon` (which rounds up
    and explains why the bound holds for *every* ε0-LDP randomizer despite the FMT22 erratum).
    """
    epsilon0 = check_epsilon(eps0, "eps0")
    users = check_num_users(n, "n")
    delta_value = check_range("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    limit = fmt_validity_limit(users, delta_value)
    if epsilon0 > limit:
        allowed = f"eps0 <= {limit!r}" if math.isfinite(limit) else "no eps0 (n too small for this delta)"
        raise ValueError(
            f"fmt_shuffle_bound is valid only when eps0 <= ln(n/(8 ln(2/delta)) - 1); for n={users}, "
            f"delta={delta_value!r} this allows {allowed}, got eps0={epsilon0!r}"
        )
    return fmt_epsilon(epsilon0, users, delta_value)


def robust_fmt_shuffle_bound(eps0: float, n: int, delta: float, honest_fraction: float) -> float:
    """Robust shuffle DP ([HC] Def 2.6 and the remark after Thm 5.2).

    If only a fraction γ of the n users follow the protocol, apply :func:`fmt_shuffle_bound` to the
    ⌊γ·n⌋ honest users (the floor keeps it sound: fewer users means a larger ε). Raises ValueError
    when γ ∉ (0, 1], ⌊γ·n⌋ < 1, or the validity condition fails for ⌊γ·n⌋.
    """
    epsilon0 = check_epsilon(eps0, "eps0")
    users = check_num_users(n, "n")
    fraction = check_range("honest_fraction", honest_fraction, 0.0, 1.0, low_open=True)
    honest = math.floor(fraction * users)
    if honest < 1:
        raise ValueError(
            f"honest_fraction * n must leave at least one honest user, got floor({fraction!r} * {users}) = {honest}"
        )
    return fmt_shuffle_bound(epsilon0, honest, delta)


# ---------------------------------------------------------------------------------------------
# subsampling ([HC] §6)
# ---------------------------------------------------------------------------------------------


def subsampling(eps: float, delta: float, rate: float) -> tuple[float, float]:
    """[Ste22, Thm 28] ([HC] Thm 6.1): amplification by subsampling.

    If M is (ε, δ)-DP and M^U runs M on a random subset U whose inclusion probability for every
    record is at most γ = ``rate`` ([HC]'s proof: a uniformly random subset of fixed size
    m = γn, replacement neighbours), then M^U is (ε', δ')-DP with

        ε' = ln(1 + γ(e^ε − 1)),   δ' = γ·δ.

    Tight for pure DP (randomized response on a single sampled record). Returns ``(ε', δ')``,
    rounded up; γ ∈ [0, 1].
    """
    epsilon = check_epsilon(eps, "eps")
    delta_value = _check_delta_closed(delta)
    gamma = check_range("rate", rate, 0.0, 1.0)
    delta_prime = round_loss_up(gamma * delta_value, zero_is_exact=gamma == 0.0 or delta_value == 0.0)
    return _subsampled_epsilon(epsilon, gamma), min(1.0, delta_prime)


def _subsampled_epsilon(epsilon: float, gamma: float) -> float:
    """ln(1 + γ(e^ε − 1)) rounded up, overflow-safe for large ε."""
    if epsilon <= 700.0:
        value = math.log1p(gamma * math.expm1(epsilon))
        return round_loss_up(value, zero_is_exact=gamma == 0.0 or epsilon == 0.0)
    if gamma == 0.0:
        return 0.0
    # ln(γ e^ε + 1 − γ) = ε + ln γ + ln(1 + (1 − γ) e^{−ε}/γ)
    return round_loss_up(epsilon + math.log(gamma) + math.log1p((1.0 - gamma) * math.exp(-epsilon) / gamma))


def subsampled_profile(profile: Profile, rate: float) -> Profile:
    """[HC] Thm 6.1 applied at every ε: the privacy profile of the subsampled mechanism.

    If M has profile δ(ε) (M is (ε, δ(ε))-DP for every ε ≥ 0), then for every ε' ≥ 0

        δ'(ε') = γ·δ(ε),   ε = ln(1 + (e^{ε'} − 1)/γ)   (the inverse of ε ↦ ln(1 + γ(e^ε − 1))).

    ``profile`` must be non-increasing with values in [0, 1] (values outside raise ValueError).
    ε is rounded **down** before calling ``profile`` (δ is non-increasing, so a smaller ε can only
    increase δ) and δ' is rounded up. γ = 0 gives the zero profile.
    """
    _check_profile(profile)
    gamma = check_range("rate", rate, 0.0, 1.0)

    def delta_of_eps(eps: float) -> float:
        epsilon_prime = check_epsilon(eps, "eps")
        if gamma == 0.0:
            return 0.0
        if epsilon_prime <= 700.0:
            base_eps = math.log1p(math.expm1(epsilon_prime) / gamma)
        else:
            base_eps = epsilon_prime - math.log(gamma) + math.log1p((gamma - 1.0) * math.exp(-epsilon_prime))
        base_eps = max(0.0, round_loss_down(base_eps))
        base_delta = _check_delta_closed(profile(base_eps), "profile(eps)")
        return min(1.0, round_loss_up(gamma * base_delta, zero_is_exact=base_delta == 0.0))

    return delta_of_eps


__all__ = [
    "Profile",
    "advanced_grouposition",
    "advanced_grouposition_approx",
    "approx_to_pure",
    "approximate_max_divergence",
    "basic_composition",
    "chained_ldp",
    "chained_ldp_product_bound",
    "deletion_delta",
    "deletion_to_replacement",
    "deletion_to_replacement_profile",
    "fmt_shuffle_bound",
    "hockey_stick_divergence",
    "kl_divergence",
    "kl_divergence_bound",
    "max_divergence",
    "mix_with_uniform",
    "pure_ldp_profile",
    "pure_to_approx",
    "randomizer_delta",
    "randomizer_epsilon",
    "replacement_to_deletion",
    "robust_fmt_shuffle_bound",
    "shuffle_to_ldp",
    "shuffle_to_ldp_profile",
    "subsampled_profile",
    "subsampling",
]
