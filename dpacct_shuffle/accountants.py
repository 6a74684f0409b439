"""dp-accounting accountants that understand shuffled and local reports.

* :class:`ShufflePLDAccountant` — a ``dp_accounting.pld.PLDAccountant``;
* :class:`ShuffleRdpAccountant` — a ``dp_accounting.rdp.RdpAccountant``.

Both are constructible with no arguments and then use the **replace-one** neighbouring relation
(one user's input replaced, everything else fixed): the relation the shuffle bounds hold for.
Under that relation dp-accounting's PLD treats a ``GaussianDpEvent`` with sensitivity 2 (a
replaced record can move a norm-≤C sum by 2C); :class:`ShuffleRdpAccountant` does the same (its
parent used sensitivity 1 — see below). Pass another relation explicitly to get the parents'
behaviour for their own events; the events of :mod:`dpacct_shuffle.events` are then unsupported
(``supports()`` returns False, never raises) — except Poisson-sampled shuffle rounds, which
:class:`ShufflePLDAccountant` also accounts under ``ADD_OR_REMOVE_ONE`` (client sampling hides
whether the victim is present; an unsampled round's message count reveals it).

Supported, anywhere inside ``ComposedDpEvent`` / ``SelfComposedDpEvent``:

* :class:`~dpacct_shuffle.events.ShuffleEvent`, :class:`~dpacct_shuffle.events.ParallelCompositionEvent`
  (PLD via :func:`dpacct_shuffle.profiles.pld_from_profile`, RDP via
  :func:`dpacct_shuffle.profiles.rdp_from_profile`); a round's profile comes from the batched
  pair curve wherever it carries the randomizer's rule
  (:func:`dpacct_shuffle.profiles.round_randomizer`: one pass for every ε, within 0.2 % of the
  core's ε), else from the randomizer's own bound; a random-mode parallel round keeps its
  structured bounds up to ``profiles.PARALLEL_STRUCTURE_PROFILE_MAX_USERS`` users
  (docs/theory.md, "Sampled and parallel round profiles for PLDs");
* ``PoissonSampledDpEvent(γ, ·)`` around either of them (client sampling from a population of
  ``num_users``): replace-one and, PLD only, add/remove-one, through the void view of
  :mod:`dpacct_shuffle.sampling` (:func:`~dpacct_shuffle.sampling.poisson_sampled_profile`; the
  Rényi divergence under add/remove-one is infinite, so the RDP accountant refuses it);
* ``SampledWithoutReplacementDpEvent(N, m, ·)`` around either of them, or around a
  ``GaussianDpEvent`` (m of N clients sampled uniformly, replace-one; the PLD accountant's
  parent does not support this event): profile η·δ(ln(1 + (e^ε − 1)/η)), η = m/N, of
  :func:`dpacct_shuffle.without_replacement.without_replacement_profile`, with the Gaussian's
  exact profile at sensitivity 2 (``ShuffleRdpAccountant`` keeps the parent's RDP bound for the
  Gaussian, at sensitivity 2 as below); around ``ShuffleEvent(R, m)`` (all m sampled users
  report) the minimum of that and the Poisson-round bound of
  :func:`dpacct_shuffle.without_replacement.shuffled_cohort_profile`;
* :class:`~dpacct_shuffle.events.LDPCompositionEvent` (PLD: leaky randomized response losses,
  dp-accounting's ``from_privacy_parameters``; RDP: binary randomized response, pure LDP only);
* everything the parent supports.

Parent defects fixed here rather than inherited (dp-accounting 0.6.0):

* ``PLDAccountant`` ignores ``count`` for ``RandomizedResponseDpEvent`` (5 × 1-LDP reports came
  out as ε = 1); here the randomized-response PLD is self-composed ``count`` times. A noise
  parameter of 1 (output independent of the input) is a no-op instead of a ValueError.
* ``RdpAccountant`` under ``REPLACE_ONE`` computes a ``GaussianDpEvent`` (and a
  ``LaplaceDpEvent``) with sensitivity 1, as for add/remove — an under-report. Here they are
  computed with sensitivity 2 (noise multiplier halved), matching dp-accounting's PLD.

RDP of shuffle events reuses the PLD grid, which stops evaluating the core at δ ≤ 1e-16; the chord
to the cap that bounds the rest is loose at high Rényi orders, so the RDP numbers are valid but can
be far above the PLD ones — prefer :class:`ShufflePLDAccountant` for shuffle rounds.

Not changed: ``RdpAccountant`` refuses ``PoissonSampledDpEvent`` of a Gaussian under
``REPLACE_ONE`` (so does this subclass); the mixture-of-Gaussians PLD path of dp-accounting 0.6.0
fails under numpy 2 and is not used by anything here.

Private parent attributes relied on (guarded by ``tests/test_accountants.py``):
``PLDAccountant._pld``, ``._contains_non_dp_event``, ``._value_discretization_interval``,
``PrivacyLossDistribution._pmf_remove/_pmf_add._infinity_mass`` (and those of
:mod:`dpacct_shuffle.pld_composition`);
``RdpAccountant._rdp``, ``._orders``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, Optional, TypeVar

import numpy as np
from dp_accounting import dp_event
from dp_accounting import privacy_accountant
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.rdp import rdp_privacy_accountant
from numpy.typing import NDArray

from dpacct_shuffle.core.validation import check_range
from dpacct_shuffle.events import (
    LDPCompositionEvent,
    LDPCompositionMode,
    ParallelCompositionEvent,
    ParallelMode,
    ShuffleEvent,
)
from dpacct_shuffle.pld_composition import (TAIL_MASS_TRUNCATION, dense, self_compose, tree_compose,
                                            truncated)
from dpacct_shuffle.profiles import (
    COHORT_LOWERING,
    DEFAULT_VALUE_DISCRETIZATION,
    PARALLEL_STRUCTURE_PROFILE_MAX_USERS,
    PrivacyProfile,
    ProfileGrid,
    ROUND_LOWERING,
    ShuffleBound,
    check_probabilities,
    discretization_for_scale,
    honest_users,
    batched_randomizer,
    ldp_pld,
    loss_scale,
    max_profile,
    min_profile,
    parallel_composite_bound,
    pld_from_grid,
    poisson_sampled_shuffle_profile,
    profile_grid,
    randomized_response_rdp,
    rdp_from_grid,
    round_randomizer,
    shuffle_profile,
    users_grid_floor,
)
from dpacct_shuffle.sampling import poisson_sampled_profile
from dpacct_shuffle.user_anchors import UserCountAnchors
from dpacct_shuffle.without_replacement import (
    gaussian_profile,
    shuffled_cohort_profile,
    without_replacement_profile,
)

NeighborRel = privacy_accountant.NeighboringRelation
CompositionErrorDetails = privacy_accountant.PrivacyAccountant.CompositionErrorDetails

_SHUFFLE_EVENTS = (ShuffleEvent, ParallelCompositionEvent)
_OWN_EVENTS = (ShuffleEvent, ParallelCompositionEvent, LDPCompositionEvent)


# ---------------------------------------------------------------------------------------------
# event -> profile
# ---------------------------------------------------------------------------------------------


def _sampled_profile(event: dp_event.PoissonSampledDpEvent,
                     relation: NeighborRel = NeighborRel.REPLACE_ONE) -> PrivacyProfile:
    """Profile of ``PoissonSampledDpEvent(γ, ShuffleEvent | ParallelCompositionEvent)``: the void
    view (:func:`dpacct_shuffle.sampling.poisson_sampled_profile`) under ``relation``, its
    VariationRatios read from batched pair curves at ``ROUND_LOWERING`` (one curve per
    VariationRatio and number of users for every ε, like an unsampled round's PLD)."""
    inner, gamma = event.event, event.sampling_probability
    if isinstance(inner, ShuffleEvent):
        return poisson_sampled_profile(inner.randomizer, inner.num_users, gamma,
                                       inner.honest_fraction, relation, lowering=ROUND_LOWERING)
    if inner.mode is ParallelMode.RANDOM:
        # the void view needs VariationRatio parameters: the composite VariationRatio; under
        # replace-one the participant-count bound of the (tighter) composite bound also applies
        void = poisson_sampled_profile(inner.composite_randomizer(), inner.num_users, gamma,
                                       inner.honest_fraction, relation, lowering=ROUND_LOWERING)
        if relation is not NeighborRel.REPLACE_ONE:
            return void
        count = poisson_sampled_shuffle_profile(_parallel_round_bound(inner), inner.num_users,
                                                gamma, inner.honest_fraction)
        return min_profile([void, count])
    return max_profile([poisson_sampled_profile(branch, size, gamma, inner.honest_fraction, relation,
                                                lowering=ROUND_LOWERING)
                        for branch, size in zip(inner.branches, inner.num_users)])


def _parallel_round_bound(event: ParallelCompositionEvent) -> ShuffleBound:
    """The bound a random-mode parallel round's PLD is built from: the composite VariationRatio
    and composite matrix from batched pair curves at ``ROUND_LOWERING``, the structured bounds
    for at most ``PARALLEL_STRUCTURE_PROFILE_MAX_USERS`` users
    (:func:`dpacct_shuffle.profiles.parallel_composite_bound`; a PLD evaluates its profile at
    about a hundred points, the multi-level bound costs seconds per point at 1000 users)."""
    return parallel_composite_bound(event.branches,
                                    check_probabilities(event.probabilities, len(event.branches)),
                                    lowering=ROUND_LOWERING,
                                    structure_max_users=PARALLEL_STRUCTURE_PROFILE_MAX_USERS)


def _parallel_round_profile(event: ParallelCompositionEvent) -> PrivacyProfile:
    """The profile a parallel round's PLD is built from: :func:`_parallel_round_bound` (random
    mode) or every group's round from its batched curve (disjoint mode, the maximum over groups;
    :func:`dpacct_shuffle.profiles.round_randomizer`)."""
    if event.mode is ParallelMode.RANDOM:
        return shuffle_profile(_parallel_round_bound(event), event.num_users, event.honest_fraction)
    return max_profile([shuffle_profile(round_randomizer(branch), size, event.honest_fraction)
                        for branch, size in zip(event.branches, event.num_users)])


def _shuffled_users(event: ShuffleEvent | ParallelCompositionEvent) -> int:
    """Number of reports a shuffle round shuffles (all groups of a disjoint round together)."""
    users = event.num_users
    return users if isinstance(users, int) else sum(users)


def _is_whole_cohort(event: dp_event.SampledWithoutReplacementDpEvent) -> bool:
    """``SampledWithoutReplacementDpEvent(N, m, ShuffleEvent(R, m))`` with every user honest: the
    m sampled users' reports are exactly what is shuffled."""
    inner = event.event
    return (isinstance(inner, ShuffleEvent) and inner.num_users == event.sample_size
            and inner.honest_fraction == 1.0)


def _without_replacement_profile(event: dp_event.SampledWithoutReplacementDpEvent) -> PrivacyProfile:
    """Profile of ``SampledWithoutReplacementDpEvent(N, m, inner)``, replace-one.

    ``inner`` is a ``GaussianDpEvent`` (a sum of updates clipped to norm C with noise σ·C: under
    replace-one the sensitivity is 2C) or a shuffle round of at most m reports (the round on the
    sample; fewer reports than m, e.g. drop-outs independent of the data, only make its bound
    larger): the subsampling theorem
    (:func:`dpacct_shuffle.without_replacement.without_replacement_profile`). A shuffle round of
    exactly the m sampled users (:func:`_is_whole_cohort`) gets the minimum of that theorem and
    the Poisson-round bound of
    :func:`dpacct_shuffle.without_replacement.shuffled_cohort_profile`.
    """
    inner = event.event
    if isinstance(inner, dp_event.GaussianDpEvent):
        base = gaussian_profile(inner.noise_multiplier, sensitivity=2.0)
    else:
        if _shuffled_users(inner) > event.sample_size:
            raise ValueError(
                f"the shuffle round inside SampledWithoutReplacementDpEvent shuffles "
                f"{_shuffled_users(inner)} reports, more than sample_size={event.sample_size}")
        if _is_whole_cohort(event):
            return shuffled_cohort_profile(inner.randomizer, event.sample_size,
                                           event.source_dataset_size, lowering=ROUND_LOWERING)
        base = (_round_event(inner).profile() if isinstance(inner, ShuffleEvent)
                else _parallel_round_profile(inner))
    return without_replacement_profile(base, event.sample_size, event.source_dataset_size)


def event_profile(event: dp_event.DpEvent,
                  relation: NeighborRel = NeighborRel.REPLACE_ONE) -> PrivacyProfile:
    """The privacy profile of a (possibly Poisson- or without-replacement-sampled) shuffle event,
    or of a without-replacement-sampled Gaussian, under ``relation``: ``REPLACE_ONE`` for all of
    them, ``ADD_OR_REMOVE_ONE`` for Poisson-sampled shuffle rounds only."""
    if not _supported_relation(event, relation):
        raise ValueError(relation_message(event, relation))
    if isinstance(event, dp_event.PoissonSampledDpEvent):
        return _sampled_profile(event, relation)
    if isinstance(event, dp_event.SampledWithoutReplacementDpEvent):
        return _without_replacement_profile(event)
    if isinstance(event, ShuffleEvent):
        return _round_event(event).profile()
    if isinstance(event, ParallelCompositionEvent):
        return _parallel_round_profile(event)
    raise TypeError(f"no shuffle profile for {type(event).__name__}")


def _round_event(event: ShuffleEvent) -> ShuffleEvent:
    """The round with the randomizer its PLD is built from by default: the batched pair curve
    where it carries the randomizer's rule (:func:`dpacct_shuffle.profiles.round_randomizer`)."""
    randomizer = round_randomizer(event.randomizer)
    if randomizer is event.randomizer:
        return event
    return ShuffleEvent(randomizer, event.num_users, event.honest_fraction)


def _is_sampled_shuffle(event: dp_event.DpEvent) -> bool:
    return (isinstance(event, (dp_event.PoissonSampledDpEvent,
                               dp_event.SampledWithoutReplacementDpEvent))
            and isinstance(event.event, _SHUFFLE_EVENTS))


def _is_without_replacement_gaussian(event: dp_event.DpEvent) -> bool:
    return (isinstance(event, dp_event.SampledWithoutReplacementDpEvent)
            and isinstance(event.event, dp_event.GaussianDpEvent)
            and event.event.noise_multiplier > 0)


def _is_poisson_shuffle(event: dp_event.DpEvent) -> bool:
    return (isinstance(event, dp_event.PoissonSampledDpEvent)
            and isinstance(event.event, _SHUFFLE_EVENTS))


def _supported_relation(event: dp_event.DpEvent, relation: NeighborRel) -> bool:
    """Replace-one for every event here; add/remove-one for Poisson-sampled shuffle rounds."""
    if relation is NeighborRel.REPLACE_ONE:
        return True
    return relation is NeighborRel.ADD_OR_REMOVE_ONE and _is_poisson_shuffle(event)


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
    """Profile grid and ε cap of one (possibly sampled) shuffle event under ``relation`` (cached
    per event, shared by the PLD and the RDP conversions). Interval None: chosen from the
    event's loss scale (:func:`dpacct_shuffle.profiles.discretization_for_scale`)."""
    profile = event_profile(event, relation)
    return profile_grid(profile, value_discretization_interval), profile.epsilon_cap


@_cached
def shuffle_event_pld(event: dp_event.DpEvent,
                      value_discretization_interval: Optional[float] = None,
                      relation: NeighborRel = NeighborRel.REPLACE_ONE
                      ) -> pld_lib.PrivacyLossDistribution:
    """Pessimistic PLD of one (possibly sampled) shuffle event under ``relation`` (cached per
    event). No mass at +∞ when the event has an ε cap (an ε0-LDP randomizer): its losses are
    ≤ ε_cap + d."""
    return pld_from_grid(shuffle_event_grid(event, value_discretization_interval, relation)[0])


@_cached
def shuffle_event_loss_scale(event: dp_event.DpEvent,
                             relation: NeighborRel = NeighborRel.REPLACE_ONE) -> float:
    """:func:`dpacct_shuffle.profiles.loss_scale` of one (possibly sampled) shuffle event."""
    return loss_scale(event_profile(event, relation))


def event_on_users_grid(event: dp_event.DpEvent, ratio: float) -> dp_event.DpEvent:
    """A shuffle event with every user count rounded down to the geometric grid of ``ratio``
    (:func:`dpacct_shuffle.profiles.users_grid_floor`), as :func:`event_with_user_counts` does
    with any rule; ``ShufflePLDAccountant(users_grid_ratio=r)`` anchors the counts on the rounds'
    own counts instead (:class:`dpacct_shuffle.user_anchors.UserCountAnchors`). Other events are
    returned unchanged."""
    return event_with_user_counts(event, lambda users: users_grid_floor(users, ratio))


def event_with_user_counts(event: dp_event.DpEvent,
                           accounted: Callable[[int], int]) -> dp_event.DpEvent:
    """A shuffle event with every count of honest users n replaced by ``accounted(n)`` ≤ n.

    Honest users ⌊γ·n⌋ become the count (honest fraction 1) and are passed to ``accounted``;
    under ``PoissonSampledDpEvent`` the population is replaced, under
    ``SampledWithoutReplacementDpEvent`` the round on the sample — except a round of exactly the
    m sampled users, returned unchanged (its cohort bound needs the m reports; a cohort bound is
    not monotone in m). Sound for any ``accounted(n)`` ≤ n: every bound is non-increasing in the
    number of honest users (:func:`dpacct_shuffle.profiles.users_grid_floor`), so the returned
    event's PLD dominates the original's. Other events are returned unchanged.
    """
    if isinstance(event, dp_event.PoissonSampledDpEvent) and isinstance(event.event, _SHUFFLE_EVENTS):
        inner = event_with_user_counts(event.event, accounted)
        return (event if inner is event.event
                else dp_event.PoissonSampledDpEvent(event.sampling_probability, inner))
    if (isinstance(event, dp_event.SampledWithoutReplacementDpEvent)
            and isinstance(event.event, _SHUFFLE_EVENTS) and not _is_whole_cohort(event)):
        inner = event_with_user_counts(event.event, accounted)
        return (event if inner is event.event else dp_event.SampledWithoutReplacementDpEvent(
            event.source_dataset_size, event.sample_size, inner))
    if isinstance(event, ShuffleEvent):
        users = _accounted_users(honest_users(event.num_users, event.honest_fraction), accounted)
        if users == event.num_users and event.honest_fraction == 1.0:
            return event
        return ShuffleEvent(event.randomizer, users)
    if isinstance(event, ParallelCompositionEvent):
        fraction = event.honest_fraction
        if isinstance(event.num_users, tuple):
            sizes: Any = tuple(_accounted_users(honest_users(size, fraction), accounted)
                               for size in event.num_users)
        else:
            sizes = _accounted_users(honest_users(event.num_users, fraction), accounted)
        if sizes == event.num_users and fraction == 1.0:
            return event
        return ParallelCompositionEvent(event.branches, sizes, event.probabilities, event.mode)
    return event


def _accounted_users(users: int, accounted: Callable[[int], int]) -> int:
    """``accounted(users)``, checked to be a count in [1, users] (the soundness condition)."""
    value = accounted(users)
    if not 1 <= value <= users:
        raise ValueError(f"a shuffle round with {users} honest users may be accounted at a count "
                         f"in [1, {users}] only, got {value!r}")
    return value


def user_counts(event: dp_event.DpEvent) -> tuple[int, ...]:
    """The counts of honest users that :func:`event_with_user_counts` replaces in ``event``."""
    counts: list[int] = []

    def record(users: int) -> int:
        counts.append(users)
        return users

    event_with_user_counts(event, record)
    return tuple(counts)


def _batched(event: dp_event.DpEvent) -> dp_event.DpEvent:
    """A shuffle round whose randomizer is evaluated with the batched pair curve at
    ``COHORT_LOWERING`` where it applies (:func:`dpacct_shuffle.profiles.batched_randomizer`);
    other events unchanged."""
    if isinstance(event, ShuffleEvent):
        randomizer = batched_randomizer(event.randomizer, COHORT_LOWERING)
        if randomizer is not event.randomizer:
            return ShuffleEvent(randomizer, event.num_users, event.honest_fraction)
    return event


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
    if ((isinstance(event, _SHUFFLE_EVENTS) or _is_sampled_shuffle(event))
            and _supported_relation(event, relation)):
        return event_profile(event, relation).epsilon_cap
    if isinstance(event, LDPCompositionEvent) and relation is NeighborRel.REPLACE_ONE:
        if event.mode is LDPCompositionMode.CHAINED:
            return event.chained_profile().epsilon_cap
        if all(delta == 0.0 for delta in event.delta_values):
            return math.fsum(event.epsilons)
    return math.inf


def shuffle_event_rdp(event: dp_event.DpEvent, orders: Sequence[float]) -> NDArray[np.float64]:
    """RDP upper bound (both directions) of one (possibly sampled) shuffle event, replace-one."""
    grid, epsilon_cap = shuffle_event_grid(event)
    return rdp_from_grid(grid, orders, epsilon_cap)


def ldp_event_pld(event: LDPCompositionEvent,
                  value_discretization_interval: float = DEFAULT_VALUE_DISCRETIZATION
                  ) -> pld_lib.PrivacyLossDistribution:
    """PLD of a user's local reports (sequential: composed leaky-RR PLDs; chained: its profile)."""
    deltas = event.delta_values
    if max(deltas) >= 1.0:  # a report with δ = 1 carries no guarantee: all loss mass infinite
        return ldp_pld(event.epsilons[deltas.index(max(deltas))], 1.0, value_discretization_interval)
    if event.mode is LDPCompositionMode.SEQUENTIAL:
        result = pld_lib.identity(value_discretization_interval)
        for epsilon, delta in zip(event.epsilons, deltas):
            result = result.compose(ldp_pld(epsilon, delta, value_discretization_interval))
        return result
    profile = event.chained_profile()
    if all(delta == 0.0 for delta in deltas):
        return ldp_pld(profile.epsilon_cap, 0.0, value_discretization_interval)
    return pld_from_grid(profile_grid(profile, value_discretization_interval))


def ldp_event_rdp(event: LDPCompositionEvent, orders: Sequence[float]) -> Optional[NDArray[np.float64]]:
    """RDP of a user's local reports, or None if some report is only (ε, δ>0)-LDP without a
    pure block (the Rényi divergence of a leaky randomized response is infinite)."""
    deltas = event.delta_values
    orders_array = np.asarray(orders, dtype=np.float64)
    if event.mode is LDPCompositionMode.SEQUENTIAL:
        if any(delta > 0.0 for delta in deltas):
            return None
        return sum((randomized_response_rdp(eps, orders_array) for eps in event.epsilons),
                   np.zeros_like(orders_array))
    cap = event.chained_profile().epsilon_cap
    if math.isinf(cap):
        return None
    return randomized_response_rdp(cap, orders_array)


def relation_message(event: dp_event.DpEvent, relation: NeighborRel) -> str:
    """Why ``event`` has no guarantee under ``relation`` here, and what would work."""
    if isinstance(event, _SHUFFLE_EVENTS) or _is_sampled_shuffle(event):
        if _is_poisson_shuffle(event):
            return (f"a Poisson-sampled shuffle round has a guarantee under REPLACE_ONE and "
                    f"ADD_OR_REMOVE_ONE only. Found {relation}.")
        return (f"{type(event).__name__} has a guarantee for replace-one neighbours only, none "
                f"under {relation}: the number of shuffled reports reveals whether the victim is "
                "present. Use neighboring_relation REPLACE_ONE, or wrap the round in "
                "PoissonSampledDpEvent(sampling_probability, ...) (client sampling hides "
                "presence; accepted under ADD_OR_REMOVE_ONE).")
    return (f"neighboring_relation must be `REPLACE_ONE` for {type(event).__name__} "
            f"(local-report and Gaussian bounds here hold for replace-one neighbours). "
            f"Found {relation}.")


def _relation_error(event: dp_event.DpEvent, relation: NeighborRel) -> CompositionErrorDetails:
    return CompositionErrorDetails(invalid_event=event,
                                   error_message=relation_message(event, relation))


# ---------------------------------------------------------------------------------------------
# accountants
# ---------------------------------------------------------------------------------------------


_Leaf = tuple[dp_event.DpEvent, int]
# an event's loss range shrinks the automatic interval at most to this fraction of its scale
# (bounds dense array sizes when scales differ a lot); see _auto_discretization
_MAX_SCALE_SPREAD = 64.0
# equal events composed more often than this are self-composed by dp-accounting (see _own_leaves)
_SELF_COMPOSE_MIN = 16
# relative margin on the summed ε caps (float sums of products are rounded to nearest)
_CAP_ROUNDING = 1e-12


def _gaussian_loss_scale(event: dp_event.DpEvent, relation: NeighborRel) -> Optional[float]:
    """Loss scale of a (Poisson-sampled) Gaussian step, None for other events (steering only).

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
    mu = sensitivity / inner.noise_multiplier
    if gamma == 1.0:
        return mu
    return gamma * math.sqrt(math.expm1(min(mu * mu, 700.0)))


def _is_own(event: dp_event.DpEvent) -> bool:
    """A shuffle round (possibly sampled), local reports, or a without-replacement-sampled
    Gaussian: PLDs built here."""
    return (isinstance(event, _OWN_EVENTS) or _is_sampled_shuffle(event)
            or _is_without_replacement_gaussian(event))


class _CheckedQueries:
    """``get_epsilon``/``get_delta`` with their arguments validated and their results in range.

    The parents accept NaN and out-of-range targets (NaN in, NaN or an arbitrary number out) and
    can return δ marginally above 1. Here a bad target is a ValueError naming it, ε ≥ 0 and δ is
    clipped to [0, 1] (both sound: δ ≤ 1 always holds); a NaN from the parent on valid input is
    reported as no guarantee (ε = inf, δ = 1)."""

    def get_epsilon(self, target_delta: float) -> float:
        """Smallest ε with (ε, target_delta)-DP for everything composed; target_delta in [0, 1]."""
        delta = check_range("target_delta", target_delta, 0.0, 1.0)
        value = float(super().get_epsilon(delta))  # type: ignore[misc]
        return math.inf if math.isnan(value) else max(0.0, value)

    def get_delta(self, target_epsilon: float) -> float:
        """Smallest δ with (target_epsilon, δ)-DP for everything composed; target_epsilon >= 0."""
        epsilon = check_range("target_epsilon", target_epsilon, 0.0, math.inf)
        value = float(super().get_delta(epsilon))  # type: ignore[misc]
        return 1.0 if math.isnan(value) else min(1.0, max(0.0, value))


def _infinity_mass(pld: pld_lib.PrivacyLossDistribution) -> float:
    """Probability of an infinite privacy loss in either direction of ``pld``."""
    return float(max(pld._pmf_remove._infinity_mass, pld._pmf_add._infinity_mass))


class ShufflePLDAccountant(_CheckedQueries, pld_privacy_accountant.PLDAccountant):
    """``PLDAccountant`` that also accounts shuffle rounds and local reports (replace-one default).

    Args:
      neighboring_relation: defaults to ``REPLACE_ONE``, the relation the shuffle bounds hold for
        (dp-accounting's PLD then treats a Gaussian step with sensitivity 2). Under
        ``ADD_OR_REMOVE_ONE`` only Poisson-sampled shuffle rounds of this package are supported
        (see the module docstring).
      value_discretization_interval: PLD grid of every composed event. ``None`` (default):
        chosen from the scale of the composed events (below); a number: that grid, fixed, each
        event composed as it arrives (dp-accounting's behaviour).
      users_grid_ratio: ``None`` (default): every round is accounted at its own user count. A
        ratio r in (1, 2]: every round is accounted at an anchor a ≤ n < a·r chosen among the
        rounds' own user counts when they are composed
        (:class:`~dpacct_shuffle.user_anchors.UserCountAnchors`: greedily, the fewest anchors;
        rounds composed earlier keep theirs; sound because the bounds are non-increasing in n),
        so a cohort that changes every round costs one PLD per anchor, cached across rounds and
        accountants; each round's ε grows by at most about √r − 1 (0.5 % at r = 1.01). Each
        anchor's profile comes from the batched pair curve at ``profiles.COHORT_LOWERING``
        (:class:`dpacct_shuffle.profiles.BatchedRandomizer`: one pass per n for every ε, at most
        about 0.3 % above the core's ε) wherever it applies.

    Automatic interval. Shuffle rounds and local reports are recorded by :meth:`compose` and
    composed when ε or δ is asked for; other events are composed at once at the current interval
    (so their errors surface there) and again if the interval changes. Without shuffle or
    local-report events the interval is dp-accounting's 1e-4 (the parent's numbers exactly). Otherwise it is
    ``discretization_for_scale(max(σ_rms, σ_max/64))``: σ_i is each event's loss scale
    (:func:`dpacct_shuffle.profiles.loss_scale` for shuffle rounds, the ε of a local report, μ
    of a Gaussian step), σ_rms their root mean square over all composed copies, σ_max the
    largest; an event of unknown scale (Laplace, mixture of Gaussians, …) keeps 1e-4. The
    interval is a power-of-two fraction of 1e-4, so it changes rarely; when it does, the PLD is
    rebuilt from the recorded events (their PLDs are cached per event and interval). The choice
    steers tightness only: every PLD is pessimistic at any interval.

    Shuffle rounds are grouped (equal events self-composed once), cut to dp-accounting's tail
    truncation 1e-15 and composed pairwise. With ``value_discretization_interval`` a number,
    composition happens at :meth:`compose` time, as in the parent.

    ε0 cap. If every composed event is pure DP with a known ε (:func:`event_epsilon_cap`:
    shuffle rounds of ε0-LDP randomizers, pure local reports), their sum Σ ε0 bounds the
    composition (basic composition of pure DP): :meth:`get_epsilon` returns at most Σ ε0 —
    finite at any δ, however much mass the truncated PLD keeps at +∞ — and :meth:`get_delta`
    returns 0 at ε ≥ Σ ε0.
    """

    def __init__(self, neighboring_relation: NeighborRel = NeighborRel.REPLACE_ONE,
                 value_discretization_interval: Optional[float] = None,
                 users_grid_ratio: Optional[float] = None) -> None:
        fixed = (None if value_discretization_interval is None else check_range(
            "value_discretization_interval", value_discretization_interval, 0.0, 1.0,
            low_open=True))
        self._anchors = None if users_grid_ratio is None else UserCountAnchors(users_grid_ratio)
        super().__init__(neighboring_relation,
                         DEFAULT_VALUE_DISCRETIZATION if fixed is None else fixed)
        self._fixed_discretization = fixed
        self._leaves: list[_Leaf] = []
        self._pending: list[int] = []  # indices in _leaves of own events not composed yet
        self._replaying = False
        self._epsilon_caps: list[float] = []

    # -- composition ----------------------------------------------------------------------
    def compose(self, event: dp_event.DpEvent, count: int = 1) -> "ShufflePLDAccountant":
        super().compose(event, count)
        if count > 0:
            self._epsilon_caps.append(count * event_epsilon_cap(event, self.neighboring_relation))
        return self

    def _own_pld(self, event: dp_event.DpEvent, count: int) -> pld_lib.PrivacyLossDistribution:
        """PLD of ``count`` copies of a shuffle or local-report event, tails cut to 1e-15."""
        pld = self._single_pld(event)
        return pld.self_compose(count) if count > 1 else pld

    def _single_pld(self, event: dp_event.DpEvent) -> pld_lib.PrivacyLossDistribution:
        """PLD of one shuffle or local-report event, tails cut to 1e-15 (dp-accounting's default
        truncation: mass beyond goes to +∞ on the right — pessimistic — and onto the smallest kept
        loss on the left), which keeps dense arrays to the bulk of the loss distribution."""
        d = self._value_discretization_interval
        if isinstance(event, LDPCompositionEvent):
            return ldp_event_pld(event, d)
        return truncated(shuffle_event_pld(event, d, self.neighboring_relation), TAIL_MASS_TRUNCATION)

    def _own_leaves(self, event: dp_event.DpEvent,
                    count: int) -> list[pld_lib.PrivacyLossDistribution]:
        """PLDs whose composition is ``count`` copies of an event: one PLD self-composed by
        dp-accounting for more than ``_SELF_COMPOSE_MIN`` copies, else the dense PLD's FFT power
        (:func:`dpacct_shuffle.pld_composition.self_compose`: a few copies cost less that way
        than through ``self_compose``'s tail bounds or pairwise compositions)."""
        if count > _SELF_COMPOSE_MIN:
            return [self._own_pld(event, count)]
        return [self_compose(dense(self._single_pld(event)), count)]

    def _compose_pld(self, pld: pld_lib.PrivacyLossDistribution, count: int) -> None:
        if _infinity_mass(pld) >= 1.0:
            # no finite privacy loss at all (δ(ε) = 1 for every ε, e.g. an (ε, 1)-LDP report or a
            # p = ∞ randomizer with one user): the parent's non-private state (ε = inf, δ = 1);
            # dp-accounting cannot compose a PLD without finite mass (IndexError)
            self._contains_non_dp_event = True
            return
        self._pld = self._pld.compose(pld.self_compose(count) if count > 1 else pld)

    def _leaf_error(self, event: dp_event.DpEvent) -> Optional[CompositionErrorDetails]:
        if _is_own(event):
            if not _supported_relation(event, self.neighboring_relation):
                return _relation_error(event, self.neighboring_relation)
            return None
        if self._is_fixed_randomized_response(event):
            return None
        return super()._maybe_compose(event, 0, False)

    def _is_fixed_randomized_response(self, event: dp_event.DpEvent) -> bool:
        return (isinstance(event, dp_event.RandomizedResponseDpEvent)
                and self.neighboring_relation is not NeighborRel.ADD_OR_REMOVE_ONE  # both replace relations
                and event.num_buckets > 1 and 0.0 < event.noise_parameter <= 1.0)

    def _accounted(self, event: dp_event.DpEvent) -> dp_event.DpEvent:
        """The event a recorded own event is accounted as: with ``users_grid_ratio``, its user
        counts at their anchors (:class:`~dpacct_shuffle.user_anchors.UserCountAnchors`, extended
        with them beforehand) and its randomizer on the batched pair curve."""
        if self._anchors is None:
            return event
        return event_with_user_counts(_batched(event), self._anchors.anchor)

    def _compose_leaf(self, event: dp_event.DpEvent, count: int) -> None:
        if _is_own(event):
            self._compose_pld(self._own_pld(event, count), 1)
        elif self._is_fixed_randomized_response(event):
            # parent defect: it composes the randomized-response PLD once, whatever `count` is
            if event.noise_parameter < 1.0:
                self._compose_pld(pld_lib.from_randomized_response(
                    noise_parameter=event.noise_parameter,
                    num_buckets=event.num_buckets,
                    value_discretization_interval=self._value_discretization_interval,
                    neighboring_relation=self.neighboring_relation,
                ), count)
        else:
            super()._maybe_compose(event, count, True)

    def _maybe_compose(self, event: dp_event.DpEvent, count: int,
                       do_compose: bool) -> Optional[CompositionErrorDetails]:
        if isinstance(event, (dp_event.ComposedDpEvent, dp_event.SelfComposedDpEvent)):
            return super()._maybe_compose(event, count, do_compose)  # recurses into the leaves
        error = self._leaf_error(event)
        if error is not None or not do_compose:
            return error
        if self._fixed_discretization is None and not self._replaying:
            self._leaves.append((event, count))
            if _is_own(event):
                self._pending.append(len(self._leaves) - 1)
                return None
        # fixed interval, replay, or a parent event (composed now: its errors surface here)
        if self._anchors is not None and _is_own(event):
            self._anchors.extend(user_counts(event))
            event = self._accounted(event)
        self._compose_leaf(event, count)
        return None

    # -- automatic interval and lazy composition -------------------------------------------
    def _leaf_scale(self, event: dp_event.DpEvent) -> Optional[float]:
        """Loss scale of one leaf event; None: no shuffle/local scale known (see the class)."""
        if isinstance(event, LDPCompositionEvent):
            return math.sqrt(math.fsum(eps * eps for eps in event.epsilons))
        if _is_own(event):
            return shuffle_event_loss_scale(event, self.neighboring_relation)
        return _gaussian_loss_scale(event, self.neighboring_relation)

    def _auto_discretization(self) -> float:
        if not any(_is_own(event) for event, _ in self._leaves):
            return DEFAULT_VALUE_DISCRETIZATION
        squares, copies, largest = [], 0, 0.0
        for event, count in self._leaves:
            if isinstance(event, (dp_event.NoOpDpEvent, dp_event.NonPrivateDpEvent)):
                continue
            scale = self._leaf_scale(event)
            if scale is None:
                return DEFAULT_VALUE_DISCRETIZATION
            squares.append(count * scale * scale)
            copies += count
            largest = max(largest, scale)
        rms = math.sqrt(math.fsum(squares) / copies) if copies else 0.0
        return discretization_for_scale(max(rms, largest / _MAX_SCALE_SPREAD))

    def _build(self) -> None:
        """Compose the pending shuffle/local events; rebuild everything if the interval changed."""
        if self._fixed_discretization is not None:
            return
        if self._anchors is not None:
            # the new rounds' anchors, then each recorded round replaced by the event it is
            # accounted as (rounds recorded earlier keep their anchors)
            self._anchors.extend(users for index in self._pending
                                 for users in user_counts(self._leaves[index][0]))
            for index in self._pending:
                event, count = self._leaves[index]
                self._leaves[index] = (self._accounted(event), count)
        d = self._auto_discretization()
        if d != self._value_discretization_interval:
            self._value_discretization_interval = d
            self._pld = pld_lib.identity(d)
            self._contains_non_dp_event = False
            self._replaying = True
            try:
                for event, count in self._leaves:
                    if not _is_own(event):
                        self._compose_leaf(event, count)
            finally:
                self._replaying = False
            self._pending = [index for index, (e, _) in enumerate(self._leaves) if _is_own(e)]
        if not self._pending:
            return
        groups: dict[Any, list[Any]] = {}
        separate: list[_Leaf] = []
        for index in self._pending:
            event, count = self._leaves[index]
            try:
                groups.setdefault(event, [event, 0])[1] += count
            except TypeError:  # unhashable event (mutable randomizer): composed on its own
                separate.append((event, count))
        leaves = [(event, count) for event, count in groups.values()] + separate
        self._compose_pld(tree_compose([pld for e, c in leaves for pld in self._own_leaves(e, c)]),
                          1)
        self._pending = []

    # -- queries --------------------------------------------------------------------------
    def _epsilon_cap(self) -> float:
        if not self._epsilon_caps:
            return 0.0
        total = math.fsum(self._epsilon_caps)
        return total * (1.0 + _CAP_ROUNDING) if math.isfinite(total) else math.inf

    def get_epsilon(self, target_delta: float) -> float:
        """ε at ``target_delta`` from the composed PLD, at most Σ ε0 (see the class docstring)."""
        self._build()
        return min(super().get_epsilon(target_delta), self._epsilon_cap())

    def get_delta(self, target_epsilon: float) -> float:
        """δ at ``target_epsilon`` from the composed PLD; 0 at ε ≥ Σ ε0."""
        self._build()
        if target_epsilon >= self._epsilon_cap() and not self._contains_non_dp_event:
            return 0.0
        return super().get_delta(target_epsilon)


class ShuffleRdpAccountant(_CheckedQueries, rdp_privacy_accountant.RdpAccountant):
    """``RdpAccountant`` that also accounts shuffle rounds and local reports (replace-one default).

    Args:
      orders: RDP orders (default: dp-accounting's ``DEFAULT_RDP_ORDERS``), all >= 1.
      neighboring_relation: defaults to ``REPLACE_ONE``, the relation the shuffle bounds hold for;
        a ``GaussianDpEvent``/``LaplaceDpEvent`` is then computed with sensitivity 2 (the parent
        used 1). Under any other relation the shuffle/LDP events are unsupported.
    """

    def __init__(self, orders: Optional[Sequence[float]] = None,
                 neighboring_relation: NeighborRel = NeighborRel.REPLACE_ONE) -> None:
        super().__init__(orders, neighboring_relation)

    def _maybe_compose(self, event: dp_event.DpEvent, count: int,
                       do_compose: bool) -> Optional[CompositionErrorDetails]:
        replace_one = self.neighboring_relation is NeighborRel.REPLACE_ONE
        if isinstance(event, _OWN_EVENTS) or _is_sampled_shuffle(event):
            if not replace_one and _supported_relation(event, self.neighboring_relation):
                return CompositionErrorDetails(
                    invalid_event=event,
                    error_message="the Rényi divergence of a Poisson-sampled shuffle round under "
                                  "ADD_OR_REMOVE_ONE is infinite (with the victim present every "
                                  "user may report, an outcome impossible without it); use "
                                  "ShufflePLDAccountant.")
            if not replace_one:
                return _relation_error(event, self.neighboring_relation)
            if isinstance(event, LDPCompositionEvent):
                rdp = ldp_event_rdp(event, self._orders)
                if rdp is None:
                    return CompositionErrorDetails(
                        invalid_event=event,
                        error_message="RDP of an (epsilon, delta>0)-LDP report is unbounded; "
                                      "use ShufflePLDAccountant.")
            elif do_compose:
                rdp = shuffle_event_rdp(event, self._orders)
            if do_compose:
                self._rdp = self._rdp + count * rdp
            return None
        if replace_one and isinstance(event, dp_event.GaussianDpEvent):
            # parent defect: sensitivity 1 under replace-one; a replaced record moves the sum by 2C
            return super()._maybe_compose(
                dp_event.GaussianDpEvent(event.noise_multiplier / 2.0), count, do_compose)
        if replace_one and isinstance(event, dp_event.LaplaceDpEvent):
            return super()._maybe_compose(
                dp_event.LaplaceDpEvent(event.noise_multiplier / 2.0), count, do_compose)
        if (replace_one and isinstance(event, dp_event.SampledWithoutReplacementDpEvent)
                and isinstance(event.event, dp_event.GaussianDpEvent)):
            # same defect inside the parent's sampling-without-replacement bound (Wang, Balle,
            # Kasiviswanathan): its base RDP is the Gaussian's, which under replace-one has
            # sensitivity 2, i.e. the curve of noise_multiplier / 2
            halved = dp_event.SampledWithoutReplacementDpEvent(
                event.source_dataset_size, event.sample_size,
                dp_event.GaussianDpEvent(event.event.noise_multiplier / 2.0))
            return super()._maybe_compose(halved, count, do_compose)
        return super()._maybe_compose(event, count, do_compose)


__all__ = [
    "ShufflePLDAccountant",
    "ShuffleRdpAccountant",
    "event_epsilon_cap",
    "event_on_users_grid",
    "event_profile",
    "event_with_user_counts",
    "ldp_event_pld",
    "ldp_event_rdp",
    "relation_message",
    "shuffle_event_grid",
    "shuffle_event_loss_scale",
    "shuffle_event_pld",
    "shuffle_event_rdp",
    "user_counts",
]
