"""Bound → profile of one round: a shuffle round (with honest users) and a shuffle round on a
Poisson sample of the population (the participant-count bound)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from dpacct_shuffle.core.validation import check_range
from dpacct_shuffle.profiles.privacy_profile import PrivacyProfile, randomized_response_delta
from dpacct_shuffle.profiles.shuffle_bounds import (
    RandomizerDescription,
    as_shuffle_bound,
    honest_users,
)

DEFAULT_SAMPLING_TAIL = 1e-14


def shuffle_profile(randomizer: RandomizerDescription, num_users: int, honest_fraction: float = 1.0) -> PrivacyProfile:
    """Profile of one shuffle round: the victim sends one report, ⌊γ·n⌋ users are honest.

    ``δ(ε) = bound.delta(ε, ⌊γ·n⌋)``; δ = 0 for ε ≥ ε0 (post-processing of the victim's ε0-LDP
    report).
    """
    bound = as_shuffle_bound(randomizer)
    users = honest_users(num_users, honest_fraction)

    def delta_upper(epsilon: float) -> float:
        return bound.delta_upper(epsilon, users)

    array_form = bound.deltas_upper
    deltas_upper = (None if array_form is None
                    else lambda epsilons: array_form(epsilons, users))
    return PrivacyProfile(delta_upper, bound.epsilon0, f"shuffle({bound.source!r}, n={users})",
                          deltas_upper)


def sampled_users_lower_bound(population: int, sampling_probability: float,
                              tail: float = DEFAULT_SAMPLING_TAIL) -> tuple[int, float]:
    """(m, τ): with the victim sampled, P[#sampled users < m] ≤ τ.

    The other ``population − 1`` users are sampled independently with probability γ, so the
    number of sampled users is 1 + Bin(population − 1, γ). m is the largest value whose lower
    tail (scipy's binomial cdf, inflated by a relative 1e-9 for float error) is ≤ ``tail``.
    """
    others = population - 1
    if others == 0 or sampling_probability == 0.0:
        return 1, 0.0
    distribution = stats.binom(others, sampling_probability)
    k = int(distribution.ppf(tail))  # smallest k with cdf(k) >= tail
    # P[X < k] = cdf(k - 1) < tail by definition of ppf; re-check with the safety factor
    while k > 0 and distribution.cdf(k - 1) * (1.0 + 1e-9) > tail:
        k -= 1
    mass = 0.0 if k == 0 else float(distribution.cdf(k - 1)) * (1.0 + 1e-9)
    return 1 + k, min(mass, 1.0)


def poisson_sampled_shuffle_profile(randomizer: RandomizerDescription, num_users: int, sampling_probability: float,
                                    honest_fraction: float = 1.0,
                                    tail: float = DEFAULT_SAMPLING_TAIL) -> PrivacyProfile:
    """Profile of a shuffle round on a Poisson sample (client sampling), replace-one neighbours.

    Every one of the ``num_users`` users (the population; ⌊γ_h·n⌋ of them honest) takes part
    independently with probability γ = ``sampling_probability``, then the participants' reports
    are shuffled. Conditioned on the sample S of the other users, the two output laws are
    ``(1−γ)·A + γ·B`` and ``(1−γ)·A + γ·B'`` (A: victim not sampled, the same under both inputs;
    B, B': shuffle of S ∪ {victim} under x⁰, x¹). Joint convexity of the hockey-stick divergence
    and D_{e^ε}(A‖A) = 0 for ε ≥ 0 give, at the *same* ε,

        δ'(ε) ≤ γ · E_S[δ_{|S|+1}(ε)] ≤ γ · (δ_m(ε) + τ·δ_RR,ε0(ε)),

    where m and τ come from :func:`sampled_users_lower_bound` (the true δ is non-increasing in the
    number of users: an extra user with known input is a post-processing) and δ_RR,ε0 bounds a
    round with few participants by the victim's local guarantee. This is the always-valid
    amplification for replace-one; the stronger ε' = ln(1 + γ(e^ε − 1)) of Steinke,
    arXiv:2210.00597, Thm 28 (Balle, Barthe & Gaboardi, NeurIPS 2018)
    needs add/remove-type comparisons that a replace-one shuffle bound does not provide.
    The accountants use :func:`dpacct_shuffle.sampling.poisson_sampled_profile`, the minimum of this
    bound and the void view, which amplifies ε as well (docs/theory.md, "Client sampling").
    """
    gamma = check_range("sampling_probability", sampling_probability, 0.0, 1.0)
    bound = as_shuffle_bound(randomizer)
    honest = honest_users(num_users, honest_fraction)
    users, tail_mass = sampled_users_lower_bound(honest, gamma, tail)

    def delta_upper(epsilon: float) -> float:
        if gamma == 0.0:
            return 0.0
        value = bound.delta_upper(epsilon, users)
        value += tail_mass * randomized_response_delta(bound.epsilon0, epsilon)
        return min(1.0, gamma * value)

    array_form = bound.deltas_upper
    if array_form is None:
        return PrivacyProfile(delta_upper, bound.epsilon0,
                              f"poisson({gamma!r}, shuffle({bound.source!r}, n>={users}))")
    deltas_of = array_form

    def deltas_upper(epsilons: NDArray[np.float64]) -> NDArray[np.float64]:
        if gamma == 0.0:
            return np.zeros(len(epsilons))
        local = np.array([randomized_response_delta(bound.epsilon0, float(e)) for e in epsilons])
        return np.minimum(1.0, gamma * (deltas_of(epsilons, users) + tail_mass * local))

    return PrivacyProfile(delta_upper, bound.epsilon0,
                          f"poisson({gamma!r}, shuffle({bound.source!r}, n>={users}))",
                          deltas_upper)
