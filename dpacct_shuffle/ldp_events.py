"""Numbers of :class:`~dpacct_shuffle.events.LDPCompositionEvent`: a user's own local reports.

Replace-one neighbours (the user's input replaced). Sequential reports: every (ε, δ)-LDP pair is a
post-processing of leaky randomized response (Kairouz, Oh & Viswanath, ICML 2015), so the exact
worst-case PLD is the composition of the leaky-RR PLDs (dp-accounting's public
``from_privacy_parameters``, through :func:`dpacct_shuffle.profiles.ldp_pld`). Chained reports:
the profile of :func:`dpacct_shuffle.profiles.chained_ldp_profile`. RDP: binary randomized
response, pure reports only (the Rényi divergence of a leaky randomized response is infinite).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Optional

import numpy as np
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from numpy.typing import NDArray

from dpacct_shuffle.events import LDPCompositionEvent, LDPCompositionMode
from dpacct_shuffle.profiles import (
    DEFAULT_VALUE_DISCRETIZATION,
    PrivacyProfile,
    chained_ldp_profile,
    ldp_pld,
    pld_from_grid,
    profile_grid,
    randomized_response_rdp,
)


def ldp_deltas(event: LDPCompositionEvent) -> tuple[float, ...]:
    """The event's ``deltas`` with the default (all zero) filled in."""
    return event.deltas if event.deltas is not None else (0.0,) * len(event.epsilons)


def ldp_profile(event: LDPCompositionEvent) -> PrivacyProfile:
    """Privacy profile of a ``CHAINED`` event (:func:`dpacct_shuffle.profiles.chained_ldp_profile`);
    ValueError for ``SEQUENTIAL`` (several reports: use :func:`ldp_event_pld`)."""
    if event.mode is not LDPCompositionMode.CHAINED:
        raise ValueError("a privacy profile of local reports is defined for mode='chained' (one "
                         "report); compose sequential reports with ldp_event_pld or an accountant")
    return chained_ldp_profile(event.epsilons, ldp_deltas(event))


def ldp_epsilon_cap(event: LDPCompositionEvent) -> float:
    """ε with which the reports are pure ε-DP (replace-one): Σ ε_i for pure sequential reports,
    the chained ε; ``inf`` if none is known."""
    if event.mode is LDPCompositionMode.CHAINED:
        return ldp_profile(event).epsilon_cap
    if all(delta == 0.0 for delta in ldp_deltas(event)):
        return math.fsum(event.epsilons)
    return math.inf


def ldp_loss_scale(event: LDPCompositionEvent) -> float:
    """Scale of the privacy loss of the reports, √(Σ ε_i²) (steers the automatic PLD interval)."""
    return math.sqrt(math.fsum(eps * eps for eps in event.epsilons))


def ldp_event_pld(event: LDPCompositionEvent,
                  value_discretization_interval: float = DEFAULT_VALUE_DISCRETIZATION
                  ) -> pld_lib.PrivacyLossDistribution:
    """PLD of a user's local reports (sequential: composed leaky-RR PLDs; chained: its profile)."""
    deltas = ldp_deltas(event)
    if max(deltas) >= 1.0:  # a report with δ = 1 carries no guarantee: all loss mass infinite
        return ldp_pld(event.epsilons[deltas.index(max(deltas))], 1.0, value_discretization_interval)
    if event.mode is LDPCompositionMode.SEQUENTIAL:
        result = pld_lib.identity(value_discretization_interval)
        for epsilon, delta in zip(event.epsilons, deltas):
            result = result.compose(ldp_pld(epsilon, delta, value_discretization_interval))
        return result
    profile = ldp_profile(event)
    if all(delta == 0.0 for delta in deltas):
        return ldp_pld(profile.epsilon_cap, 0.0, value_discretization_interval)
    return pld_from_grid(profile_grid(profile, value_discretization_interval))


def ldp_event_rdp(event: LDPCompositionEvent,
                  orders: Sequence[float]) -> Optional[NDArray[np.float64]]:
    """RDP of a user's local reports, or None if some report is only (ε, δ>0)-LDP without a
    pure block (the Rényi divergence of a leaky randomized response is infinite)."""
    if event.mode is LDPCompositionMode.SEQUENTIAL:
        if any(delta > 0.0 for delta in ldp_deltas(event)):
            return None
        total = np.zeros(len(orders), dtype=np.float64)
        for eps in event.epsilons:
            total = total + randomized_response_rdp(eps, orders)
        return total
    cap = ldp_profile(event).epsilon_cap
    if math.isinf(cap):
        return None
    return randomized_response_rdp(cap, orders)


__all__ = [
    "ldp_deltas",
    "ldp_epsilon_cap",
    "ldp_event_pld",
    "ldp_event_rdp",
    "ldp_loss_scale",
    "ldp_profile",
]
