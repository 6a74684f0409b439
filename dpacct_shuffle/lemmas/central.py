"""Central DP conversions ([HC] §3, §6): pure ⇔ approximate DP, basic composition, the KL bound of
pure DP, amplification by subsampling.

[ASZ18] Acharya, Sun, Zhang, NeurIPS 2018; [DR14] C. Dwork and A. Roth, "The Algorithmic
Foundations of Differential Privacy", 2014, ch. 3; [Ste22] Steinke, "Composition of Differential
Privacy & Privacy Amplification by Subsampling", arXiv:2210.00597; [HC] Y. Huang and
C. L. Canonne, "Lemmas of Differential Privacy".
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpacct_shuffle.core.rounding import round_loss_down, round_loss_up
from dpacct_shuffle.core.validation import (
    check_distribution,
    check_epsilon,
    check_num_users,
    check_range,
    check_stochastic_matrix,
)
from dpacct_shuffle.lemmas.checks import Profile, check_delta_closed, check_profile


def pure_to_approx(eps: float, delta: float) -> float:
    """[ASZ18, Lemma 5] ([HC] Lemma 3.1): any (ε + δ, 0)-DP mechanism is (ε, δ)-DP.

    Direction of use: ``eps`` is the **pure** ε of a mechanism you have and ``delta`` the δ you are
    willing to add; the return value is the approximate ε' such that the mechanism is (ε', δ)-DP:

        ε' = max(ε − δ, 0).

    (If δ ≥ ε the mechanism is δ-DP hence (0, δ)-DP by the lemma with ε = 0.) The returned value
    is rounded up.
    """
    pure_epsilon = check_epsilon(eps, "eps")
    delta_value = check_delta_closed(delta)
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
    delta_value = check_delta_closed(delta)
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
    checked: NDArray[np.float64]
    if array.ndim == 1:
        checked = check_distribution("distributions", array)
    else:
        checked = check_stochastic_matrix("distributions", array)
    outputs: int = checked.shape[-1]
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
        deltas.append(check_delta_closed(delta_i, f"pairs[{index}].delta"))
    if not epsilons:
        raise ValueError("pairs must contain at least one (eps, delta) pair")
    try:
        total = round_loss_up(math.fsum(epsilons))
    except OverflowError:  # the sum exceeds the float range: (∞, Σδ)-DP holds trivially
        total = math.inf
    return total, min(1.0, round_loss_up(math.fsum(deltas)))


def kl_divergence_bound(eps: float) -> float:
    """[DR14] Lemma 3.18: ``D_∞(P‖Q) ≤ ε`` and ``D_∞(Q‖P) ≤ ε`` imply ``D(P‖Q) ≤ ε(e^ε − 1)``."""
    epsilon = check_epsilon(eps, "eps")
    if epsilon > 700.0:  # ε(e^ε − 1) > 1e306 overflows: the bound is +∞ in floats
        return math.inf
    return round_loss_up(epsilon * math.expm1(epsilon), zero_is_exact=epsilon == 0.0)


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
    delta_value = check_delta_closed(delta)
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
    check_profile(profile)
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
        base_delta = check_delta_closed(profile(base_eps), "profile(eps)")
        return min(1.0, round_loss_up(gamma * base_delta, zero_is_exact=base_delta == 0.0))

    return delta_of_eps


__all__ = [
    "approx_to_pure",
    "basic_composition",
    "kl_divergence_bound",
    "mix_with_uniform",
    "pure_to_approx",
    "subsampled_profile",
    "subsampling",
]
