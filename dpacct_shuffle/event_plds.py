"""Event → PLD / RDP / ε cap / loss scale, from the one profile of :mod:`dpacct_shuffle.event_profiles`.

* :func:`shuffle_event_grid` — the profile's adaptive grid
  (:func:`dpacct_shuffle.profiles.profile_grid`), cached per event, interval and relation, shared by
  the PLD and the RDP conversions;
* :func:`shuffle_event_pld` — the pessimistic PLD of that grid (dp-accounting's Connect-the-Dots);
  :func:`event_pmfs` — any event of this package as
  :class:`~dpacct_shuffle.pld_composition.LossPmfs` (the accountants compose these), tails cut to
  dp-accounting's 1e-15;
* :func:`shuffle_event_rdp` — the RDP of that grid (replace-one);
* :func:`event_epsilon_cap` — an ε with which an event (or a composition) is pure DP;
* :func:`event_loss_scale` — the scale of an event's privacy loss (steers the automatic interval).

Caching: events are frozen and hashed by value, so the caches are keyed by the event itself;
unhashable events (a mutable user-defined randomizer) are computed without the cache.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, Optional, TypeVar

import numpy as np
from dp_accounting import dp_event
from dp_accounting import privacy_accountant
from dp_accounting.privacy_accountant import NeighboringRelation as NeighborRel
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from numpy.typing import NDArray

from dpacct_shuffle.event_profiles import Precision, event_profile
from dpacct_shuffle.events import LDPCompositionEvent
from dpacct_shuffle.events import LDPCompositionMode
from dpacct_shuffle.ldp_events import ldp_deltas, ldp_epsilon_cap, ldp_loss_scale, ldp_profile
from dpacct_shuffle.pld_composition import (
    TAIL_MASS_TRUNCATION,
    LossPmfs,
    compose_exactly,
    connect_the_dots_pmf,
    leaky_rr_pmf,
    truncated,
)
from dpacct_shuffle.profiles import (
    PARALLEL_STRUCTURE_PROFILE_MAX_USERS,
    ProfileGrid,
    connect_the_dots_points,
    loss_scale,
    pld_from_grid,
    profile_grid,
    rdp_from_grid,
)
from dpacct_shuffle.relations import (
    SHUFFLE_EVENTS,
    is_own,
    is_sampled_shuffle,
    supported_relation,
)


#: The precision of the profile every PLD and RDP is built from (a grid of about a hundred
#: points): the batched curve alone — the grid stops refining at δ ≤ 1e-16, where the curve's
#: floor of about 1e-22 moves ε by about 1e-13 relative — and the structured bounds of random-mode
#: parallel rounds up to ``profiles.PARALLEL_STRUCTURE_PROFILE_MAX_USERS`` users
#: (docs/theory.md, "Sampled and parallel round profiles for PLDs").
PLD_PRECISION = Precision(pointwise_below=0.0,
                          structure_max_users=PARALLEL_STRUCTURE_PROFILE_MAX_USERS)
#: The profile grid of a round's PLD is evaluated up to a point with δ at most this
#: (:func:`dpacct_shuffle.profiles.profile_grid`'s ``stop_delta``): the chord from there to the cap
#: puts about that δ as mass at the largest loss ε_cap, and with it well below the accountants'
#: per-side tail cut (``accountants.TAIL_TRUNCATION``/2 = 5e-21) that mass is cut to +∞ instead of
#: stretching the round's pmf out to ε_cap.
GRID_STOP_DELTA = 1e-22

_Result = TypeVar("_Result")


def _cached(function: Callable[..., _Result]) -> Callable[..., _Result]:
    """lru_cache that falls back to a plain call for unhashable events (e.g. mutable randomizers)."""
    cached = functools.lru_cache(maxsize=4096)(function)

    @functools.wraps(function)
    def wrapper(*args: Any) -> _Result:
        try:
            hash(args)
        except TypeError:
            return function(*args)
        return cached(*args)

    return wrapper


@_cached
def shuffle_event_grid(event: dp_event.DpEvent,
                       value_discretization_interval: Optional[float] = None,
                       relation: NeighborRel = NeighborRel.REPLACE_ONE
                       ) -> tuple[ProfileGrid, float]:
    """Profile grid and ε cap of one (possibly sampled) shuffle event under ``relation``, from
    :func:`dpacct_shuffle.event_profiles.event_profile` at ``PLD_PRECISION``. Interval None:
    chosen from the event's loss scale (:func:`dpacct_shuffle.profiles.discretization_for_scale`)."""
    profile = event_profile(event, relation, precision=PLD_PRECISION)
    return (profile_grid(profile, value_discretization_interval, stop_delta=GRID_STOP_DELTA),
            profile.epsilon_cap)


@_cached
def shuffle_event_pld(event: dp_event.DpEvent,
                      value_discretization_interval: Optional[float] = None,
                      relation: NeighborRel = NeighborRel.REPLACE_ONE
                      ) -> pld_lib.PrivacyLossDistribution:
    """Pessimistic PLD of one (possibly sampled) shuffle event under ``relation``. No mass at +∞
    when the event has an ε cap (an ε0-LDP randomizer): its losses are ≤ ε_cap + d."""
    return pld_from_grid(shuffle_event_grid(event, value_discretization_interval, relation)[0])


@_cached
def shuffle_event_pmfs(event: dp_event.DpEvent, value_discretization_interval: float,
                       relation: NeighborRel = NeighborRel.REPLACE_ONE,
                       tail_mass_truncation: Optional[float] = None) -> LossPmfs:
    """:func:`shuffle_event_pld` as this package's pmfs
    (:func:`dpacct_shuffle.pld_composition.connect_the_dots_pmf` of the same grid points); with
    ``tail_mass_truncation``, its right tail cut to that mass and its left tail to
    dp-accounting's 1e-15 (moved up to the first kept loss: the left end's mass is the float
    remainder 1 − Σ of the others, about 1e-16, and moving it up changes δ only through the other
    rounds' largest losses; docs/theory.md, "Tiny δ: certified tails")."""
    grid = shuffle_event_grid(event, value_discretization_interval, relation)[0]
    ks, ys = connect_the_dots_points(grid)
    left = None if tail_mass_truncation is None else TAIL_MASS_TRUNCATION
    return LossPmfs(connect_the_dots_pmf(grid.discretization, ks, ys, tail_mass_truncation, left))


def ldp_event_pmfs(event: LDPCompositionEvent, value_discretization_interval: float) -> LossPmfs:
    """Pmfs of a user's local reports, those of :func:`dpacct_shuffle.ldp_events.ldp_event_pld`:
    sequential reports compose the leaky randomized responses of their (ε, δ) pairs exactly;
    chained reports are a leaky randomized response of their ε (pure) or their profile's
    Connect-the-Dots pmf."""
    d = value_discretization_interval
    deltas = ldp_deltas(event)
    if max(deltas) >= 1.0:  # a report with δ = 1 carries no guarantee: all loss mass infinite
        return LossPmfs(leaky_rr_pmf(event.epsilons[deltas.index(max(deltas))], 1.0, d))
    if event.mode is LDPCompositionMode.SEQUENTIAL:
        pmfs = [leaky_rr_pmf(epsilon, delta, d) for epsilon, delta in zip(event.epsilons, deltas)]
        return LossPmfs(functools.reduce(compose_exactly, pmfs))
    profile = ldp_profile(event)
    if all(delta == 0.0 for delta in deltas):
        return LossPmfs(leaky_rr_pmf(profile.epsilon_cap, 0.0, d))
    ks, ys = connect_the_dots_points(profile_grid(profile, d))
    return LossPmfs(connect_the_dots_pmf(d, ks, ys))


def event_pmfs(event: dp_event.DpEvent, value_discretization_interval: float,
               relation: NeighborRel = NeighborRel.REPLACE_ONE,
               tail_mass_truncation: float = TAIL_MASS_TRUNCATION) -> LossPmfs:
    """Pmfs of one event of this package (:func:`dpacct_shuffle.relations.is_own`): local reports
    (:func:`ldp_event_pmfs`) or a shuffle round / sampled Gaussian (:func:`shuffle_event_pmfs`),
    the right tail cut to ``tail_mass_truncation`` (by default dp-accounting's 1e-15; the mass
    beyond goes to +∞ — pessimistic) and the left tail to 1e-15 (moved up onto the smallest kept
    loss)."""
    if isinstance(event, LDPCompositionEvent):
        return ldp_event_pmfs(event, value_discretization_interval)
    return shuffle_event_pmfs(event, value_discretization_interval, relation, tail_mass_truncation)


def shuffle_event_rdp(event: dp_event.DpEvent, orders: Sequence[float]) -> NDArray[np.float64]:
    """RDP upper bound (both directions) of one (possibly sampled) shuffle event, replace-one."""
    grid, epsilon_cap = shuffle_event_grid(event)
    return rdp_from_grid(grid, orders, epsilon_cap)


@_cached
def shuffle_event_loss_scale(event: dp_event.DpEvent,
                             relation: NeighborRel = NeighborRel.REPLACE_ONE) -> float:
    """:func:`dpacct_shuffle.profiles.loss_scale` of one (possibly sampled) shuffle event."""
    return loss_scale(event_profile(event, relation, precision=PLD_PRECISION))


def _gaussian_loss_scale(event: dp_event.DpEvent, relation: NeighborRel) -> Optional[float]:
    """Loss scale of a (Poisson-sampled) Gaussian step, None for other events.

    Gaussian: μ = sensitivity/σ (sensitivity 2 under replace-one), the loss is N(μ²/2, μ²);
    sampled with probability γ: about γ·√(e^{μ²} − 1), the standard deviation of the sampled
    likelihood ratio.
    """
    sensitivity = 2.0 if relation is NeighborRel.REPLACE_ONE else 1.0
    gamma, inner = 1.0, event
    if isinstance(event, dp_event.PoissonSampledDpEvent):
        gamma, inner = event.sampling_probability, event.event
    if not isinstance(inner, dp_event.GaussianDpEvent) or inner.noise_multiplier == 0:
        return None
    mu = float(sensitivity / inner.noise_multiplier)
    if gamma == 1.0:
        return mu
    return float(gamma * math.sqrt(math.expm1(min(mu * mu, 700.0))))


def event_loss_scale(event: dp_event.DpEvent,
                     relation: NeighborRel = NeighborRel.REPLACE_ONE) -> Optional[float]:
    """Scale of one leaf event's privacy loss: :func:`dpacct_shuffle.profiles.loss_scale` of a
    shuffle round, √(Σ ε_i²) of local reports, μ of a (sampled) Gaussian step; None if unknown
    (Laplace, mixtures, …). Steers the accountants' automatic interval only."""
    if isinstance(event, LDPCompositionEvent):
        return ldp_loss_scale(event)
    if is_own(event):
        return shuffle_event_loss_scale(event, relation)
    return _gaussian_loss_scale(event, relation)


def event_epsilon_cap(event: dp_event.DpEvent,
                      relation: NeighborRel = NeighborRel.REPLACE_ONE) -> float:
    """An ε with which ``event`` is pure ε-DP under ``relation``, ``inf`` if none is known.

    Shuffle rounds (sampled or not): their profile's ε cap (ε0 for an ε0-LDP randomizer under
    replace-one: the shuffled output is a post-processing of the victim's report, and a sampled
    round is a mixture of such outputs); pure local reports: Σ ε_i (sequential) or the chained
    ε; compositions: the sum (basic composition of pure DP, adaptive); ``NoOpDpEvent``: 0.
    Everything else: ``inf``.
    """
    if isinstance(event, dp_event.NoOpDpEvent):
        return 0.0
    if isinstance(event, dp_event.ComposedDpEvent):
        return math.fsum(event_epsilon_cap(e, relation) for e in event.events)
    if isinstance(event, dp_event.SelfComposedDpEvent):
        cap = event_epsilon_cap(event.event, relation)
        return 0.0 if event.count == 0 else event.count * cap
    if ((isinstance(event, SHUFFLE_EVENTS) or is_sampled_shuffle(event))
            and supported_relation(event, relation)):
        return event_profile(event, relation, precision=PLD_PRECISION).epsilon_cap
    if isinstance(event, LDPCompositionEvent) and relation is NeighborRel.REPLACE_ONE:
        return ldp_epsilon_cap(event)
    return math.inf


__all__ = [
    "GRID_STOP_DELTA",
    "PLD_PRECISION",
    "event_epsilon_cap",
    "event_loss_scale",
    "event_pmfs",
    "ldp_event_pmfs",
    "shuffle_event_grid",
    "shuffle_event_loss_scale",
    "shuffle_event_pld",
    "shuffle_event_pmfs",
    "shuffle_event_rdp",
]
