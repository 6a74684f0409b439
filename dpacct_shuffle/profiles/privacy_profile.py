"""Profile algebra: :class:`PrivacyProfile` (δ(ε) with an ε cap), pointwise max/min of profiles,
the profiles of (leaky) randomized response and of a chain of LDP randomizers.

Why only a profile's values matter, not its shape: :mod:`dpacct_shuffle.profiles.connect_the_dots`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Optional

import attr
import numpy as np
from numpy.typing import NDArray

from dpacct_shuffle.lemmas import chained_ldp


@attr.s(frozen=True, slots=True, auto_attribs=True, eq=False)
class PrivacyProfile:
    """δ(ε) upper bound for ε ≥ 0 (both directions), with δ(ε) = 0 for ε ≥ ``epsilon_cap``.

    Attributes:
      delta_upper: ε -> δ, an upper bound on max(D_{e^ε}(P‖Q), D_{e^ε}(Q‖P)) over all
        neighbouring pairs. Only its values matter, not its shape (see the module docstring).
      epsilon_cap: ε at and above which the profile is 0 (``math.inf``: no cap).
      description: human-readable provenance.
      deltas_upper: optional array form of ``delta_upper`` (one call for many ε).
    """

    delta_upper: Callable[[float], float]
    epsilon_cap: float
    description: str = ""
    deltas_upper: Optional[Callable[[NDArray[np.float64]], NDArray[np.float64]]] = None

    def delta(self, epsilon: float) -> float:
        """The profile at ε ≥ 0 (0 at and above the cap)."""
        if epsilon >= self.epsilon_cap:
            return 0.0
        return self.delta_upper(epsilon)

    def deltas(self, epsilons: NDArray[np.float64]) -> NDArray[np.float64]:
        """:meth:`delta` at every ε ≥ 0 of ``epsilons`` (one call of ``deltas_upper`` if given)."""
        eps = np.asarray(epsilons, dtype=np.float64)
        if self.deltas_upper is None:
            return np.array([self.delta(float(value)) for value in eps], dtype=np.float64)
        return np.where(eps >= self.epsilon_cap, 0.0,
                        np.asarray(self.deltas_upper(eps), dtype=np.float64))


def _pointwise_profile(profiles: Sequence[PrivacyProfile], name: str,
                       combine: Callable[..., float],
                       combine_arrays: Callable[..., NDArray[np.float64]]) -> PrivacyProfile:
    """The profile ``combine`` (max or min) of ``profiles`` at every ε, and of their ε caps (with
    an array form when every profile has one)."""
    if len(profiles) == 0:
        raise ValueError("profiles must not be empty")
    items = tuple(profiles)

    def delta_upper(epsilon: float) -> float:
        return combine(profile.delta(epsilon) for profile in items)

    def deltas_upper(epsilons: NDArray[np.float64]) -> NDArray[np.float64]:
        return combine_arrays([profile.deltas(epsilons) for profile in items], axis=0)

    arrays = all(profile.deltas_upper is not None for profile in items)
    return PrivacyProfile(delta_upper, combine(p.epsilon_cap for p in items),
                          f"{name}(" + ", ".join(p.description for p in items) + ")",
                          deltas_upper if arrays else None)


def max_profile(profiles: Sequence[PrivacyProfile]) -> PrivacyProfile:
    """Pointwise maximum: valid whenever the neighbouring pair is covered by one of the profiles
    (with an array form when every profile has one)."""
    return _pointwise_profile(profiles, "max", max, np.max)


def min_profile(profiles: Sequence[PrivacyProfile]) -> PrivacyProfile:
    """Pointwise minimum: valid when every profile bounds every neighbouring pair (with an array
    form when every profile has one)."""
    return _pointwise_profile(profiles, "min", min, np.min)


def randomized_response_delta(epsilon0: float, epsilon: float) -> float:
    """Profile of binary randomized response with parameter ε0: (e^ε0 − e^ε)⁺/(e^ε0 + 1).

    Every ε0-DP pair is a post-processing of it (Feldman, McMillan & Talwar, FOCS 2021,
    arXiv:2012.12803, Lemma 3.4), so this bounds any ε0-DP pair.
    """
    if epsilon >= epsilon0:
        return 0.0
    if math.isinf(epsilon0):
        return 1.0
    return -math.expm1(epsilon - epsilon0) / (1.0 + math.exp(-epsilon0))


def leaky_randomized_response_delta(epsilon0: float, delta0: float, epsilon: float) -> float:
    """Profile of any (ε0, δ0)-DP pair (leaky randomized response, Kairouz, Oh &
    Viswanath, ICML 2015).

    δ(ε) = δ0 + (1 − δ0)·(e^ε0 − e^ε)⁺/(e^ε0 + 1).
    """
    return delta0 + (1.0 - delta0) * randomized_response_delta(epsilon0, epsilon)


def chained_ldp_profile(epsilons: Sequence[float], deltas: Sequence[float]) -> PrivacyProfile:
    """Profile of the chain R_k ∘ … ∘ R_1 of (ε_i, δ_i)-LDP randomizers (one final report).

    * A randomizer applied to a *random* input keeps its guarantee: for input laws ν, ν',
      R(ν)(S) = Σ_y ν(y) R(y)(S) ≤ Σ_y ν(y)(e^ε R(y')(S) + δ) for every y', hence
      ≤ e^ε R(ν')(S) + δ. So the chain is (ε, δ)-LDP for any *contiguous block* of stages that is
      (ε, δ)-LDP: the stages before the block produce its (random) input, those after it
      post-process its output.
    * A block of pure stages is ε-LDP with ε from Erlingsson et al., arXiv:2001.03618, Cor A.2
      applied repeatedly (:func:`dpacct_shuffle.lemmas.chained_ldp`); a single stage with
      δ_i > 0 is its leaky RR.

    The profile is the pointwise minimum over all maximal pure blocks and all approximate stages
    (each is a valid profile, so is their minimum).
    """
    if len(epsilons) != len(deltas) or len(epsilons) == 0:
        raise ValueError("epsilons and deltas must be non-empty and of equal length")
    candidates: list[tuple[float, float]] = []
    block: float | None = None
    for eps_i, delta_i in zip(epsilons, deltas):
        if delta_i == 0.0:
            block = eps_i if block is None else chained_ldp(block, eps_i)
        else:
            if block is not None:
                candidates.append((block, 0.0))
                block = None
            candidates.append((eps_i, delta_i))
    if block is not None:
        candidates.append((block, 0.0))
    pure = [eps for eps, delta in candidates if delta == 0.0]
    cap = min(pure) if pure else math.inf

    def delta_upper(epsilon: float) -> float:
        return min(leaky_randomized_response_delta(e0, d0, epsilon) for e0, d0 in candidates)

    return PrivacyProfile(delta_upper, cap, f"chained_ldp({tuple(epsilons)!r}, {tuple(deltas)!r})")
