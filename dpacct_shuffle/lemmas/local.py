"""Local DP ([HC] §4, Cor 3.1): replacement ⇔ deletion LDP, chained randomizers, the profile of any
ε0-LDP randomizer, advanced grouposition.

[EFMRSTT20] Erlingsson et al., "Encode, Shuffle, Analyze Privacy Revisited", arXiv:2001.03618;
[NV20] Naor, Vexler, FORC 2020; [FMT21] Feldman, McMillan, Talwar, "Hiding Among the Clones",
FOCS 2021, arXiv:2012.12803; [BNS19] Bun, Nelson, Stemmer, "Heavy Hitters and the Structure of
Local Privacy", ACM TALG 2019; [KOV15] Kairouz, Oh, Viswanath, "The Composition Theorem for
Differential Privacy", ICML 2015; [HC] Y. Huang and C. L. Canonne, "Lemmas of Differential
Privacy".
"""

from __future__ import annotations

import math

from dpacct_shuffle.core.rounding import round_loss_up
from dpacct_shuffle.core.validation import check_epsilon, check_num_users, check_range
from dpacct_shuffle.lemmas.checks import Profile, check_delta_closed, check_epsilon_or_inf, check_profile


def replacement_to_deletion(eps: float, delta: float) -> tuple[float, float]:
    """[HC] Lemma 4.1: (ε, δ)-replacement LDP ⇒ (ε, δ)-deletion LDP (reference R0 = R(x0))."""
    return check_epsilon(eps, "eps"), check_delta_closed(delta)


def deletion_to_replacement(eps: float, delta: float) -> tuple[float, float]:
    """[HC] Lemma 4.2: (ε, δ)-deletion LDP ⇒ (2ε, (e^ε + 1)δ)-replacement LDP.

    Not (2ε, 2δ) as stated in [EFMRSTT20]: [HC]'s explicit 3-output counterexample
    (ε = 1/4, δ = 1/6, uniform reference) attains (e^ε + 1)δ exactly. δ is capped at 1; both
    values are rounded up.
    """
    epsilon = check_epsilon(eps, "eps")
    delta_value = check_delta_closed(delta)
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
    check_profile(profile)

    def delta_of_eps(eps: float) -> float:
        epsilon = check_epsilon(eps, "eps")
        half = epsilon / 2.0  # exact
        base_delta = check_delta_closed(profile(half), "profile(eps)")
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
    first = check_epsilon_or_inf(eps1, "eps1")
    second = check_epsilon_or_inf(eps2, "eps2")
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
    delta_value = check_delta_closed(delta)
    group = check_num_users(k, "k")
    tail = check_range("delta_prime", delta_prime, 0.0, 1.0, low_open=True)
    epsilon_prime = advanced_grouposition(epsilon, group, tail)
    return epsilon_prime, min(1.0, round_loss_up(tail + group * delta_value))


__all__ = [
    "advanced_grouposition",
    "advanced_grouposition_approx",
    "chained_ldp",
    "chained_ldp_product_bound",
    "deletion_to_replacement",
    "deletion_to_replacement_profile",
    "pure_ldp_profile",
    "replacement_to_deletion",
]
