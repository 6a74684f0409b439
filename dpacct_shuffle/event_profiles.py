"""Event → privacy profile: the one place that turns an event of this package into δ(ε).

Every caller — the accountants (through :mod:`dpacct_shuffle.event_plds`), the Opacus and Flower
adapters, pipelines, calibration and the CLI — gets a round's numbers from :func:`event_profile`,
so one event gives one profile everywhere. Events themselves are data
(:mod:`dpacct_shuffle.events`).

A round's profile is the pointwise minimum of two certified upper bounds, both valid for every
victim pair and configuration of the other users (so is their minimum):

* the **batched pair curve** (:func:`dpacct_shuffle.profiles.round_randomizer`, η =
  ``profiles.ROUND_LOWERING``): every ε from one curve per number of users, within about 0.2 %
  of the core's ε in the bulk; its truncated windows put a mass of about 1e-22 at the largest
  loss, so in the deep tail it is flat at that level (``ShuffleEvent(krr(2, 10), 2000)`` at
  ε = 0.6: 8.0e-22 where the core certifies 7.9e-37);
* the **core's point bound** (the randomizer's own ``delta(ε, n)``, bracket ``profiles.CORE_RTOL``):
  tight at any δ, one evaluation per ε (about 25 ms there).

:class:`Precision` says where the core is evaluated too (``pointwise_below``: where the curve is at
most that δ) and up to how many users a random-mode
:class:`~dpacct_shuffle.events.ParallelCompositionEvent` keeps the bounds that follow each
branch's structure (``structure_max_users``: the multi-level bound costs about 0.02 s per point at
50 users, 2.5 s at 1000; :func:`parallel_round_bound`). Two settings are used:

* ``Precision()`` (default of :func:`event_profile`, point queries): the core at every ε and the
  structured bounds up to ``profiles.PARALLEL_STRUCTURE_MAX_USERS`` = 1000 users — the smaller of
  both bounds everywhere; a Poisson-sampled ``ShuffleEvent`` (replace-one) likewise, and a whole
  cohort with its m-user round by the core. One round's ε and δ
  (:func:`dpacct_shuffle.shuffle_round.round_epsilon`) are read from this profile;
* :data:`dpacct_shuffle.event_plds.PLD_PRECISION` (the profile a PLD or RDP is built from, about
  a hundred points): the curve alone (a PLD's grid stops refining at δ ≤ 1e-16, where only the
  first point below matters) and the structured bounds up to
  ``profiles.PARALLEL_STRUCTURE_PROFILE_MAX_USERS`` = 64 users.
"""

from __future__ import annotations

from typing import Optional, Union

import attr
import numpy as np
from dp_accounting import dp_event
from dp_accounting import privacy_accountant
from dp_accounting.privacy_accountant import NeighboringRelation as NeighborRel
from numpy.typing import NDArray

from dpacct_shuffle.core.bound import VariationRatio
from dpacct_shuffle.core.validation import check_num_users, check_range
from dpacct_shuffle.events import LDPCompositionEvent, ParallelCompositionEvent, ParallelMode, ShuffleEvent
from dpacct_shuffle.ldp_events import ldp_profile
from dpacct_shuffle.profiles import (
    PARALLEL_STRUCTURE_MAX_USERS,
    PARALLEL_STRUCTURE_PROFILE_MAX_USERS,
    ROUND_LOWERING,
    PrivacyProfile,
    RandomizerDescription,
    ShuffleBound,
    check_probabilities,
    max_profile,
    min_profile,
    parallel_composite,
    parallel_composite_bound,
    poisson_sampled_shuffle_profile,
    round_randomizer,
    shuffle_profile,
)
from dpacct_shuffle.randomizers.personalized import PersonalizedShuffle
from dpacct_shuffle.relations import relation_message, supported_relation
from dpacct_shuffle.sampling import poisson_sampled_profile
from dpacct_shuffle.without_replacement import (
    gaussian_profile,
    shuffled_cohort_profile,
    without_replacement_profile,
)

ShuffleRound = Union[ShuffleEvent, ParallelCompositionEvent]



def _probability(value: object) -> float:
    return check_range("pointwise_below", value, 0.0, 1.0)


def _users(value: object) -> int:
    return check_num_users(value, "structure_max_users")


@attr.s(frozen=True, slots=True, auto_attribs=True)
class Precision:
    """How much work a round's profile may do (module docstring).

    Attributes:
      pointwise_below: the core's point bound is evaluated wherever the batched curve is at most
        this δ, and the smaller value kept (1: at every ε; 0: the curve alone).
      structure_max_users: random-mode parallel rounds keep their structured bounds up to this
        many users (the composite VariationRatio alone above).
    """

    pointwise_below: float = attr.ib(default=1.0, converter=_probability)
    structure_max_users: int = attr.ib(default=PARALLEL_STRUCTURE_MAX_USERS, converter=_users)



def _tail_refined(curve: PrivacyProfile, point: PrivacyProfile, below: float) -> PrivacyProfile:
    """min(curve, point) wherever the curve is ≤ ``below``, the curve elsewhere (both are upper
    bounds, so each value is one). Scalar and array forms give the same numbers."""

    def refine(epsilon: float, value: float) -> float:
        return min(value, point.delta(epsilon)) if 0.0 < value <= below else value

    def delta_upper(epsilon: float) -> float:
        return refine(epsilon, curve.delta(epsilon))

    def deltas_upper(epsilons: NDArray[np.float64]) -> NDArray[np.float64]:
        values = np.array(curve.deltas(epsilons), dtype=np.float64)
        for i in np.flatnonzero((values > 0.0) & (values <= below)):
            values[i] = refine(float(epsilons[i]), float(values[i]))
        return values

    return PrivacyProfile(delta_upper, min(curve.epsilon_cap, point.epsilon_cap),
                          f"min({curve.description}, {point.description} where <= {below:g})",
                          deltas_upper)


def _round(curve: RandomizerDescription, point: RandomizerDescription, num_users: int,
           honest_fraction: float, below: float) -> PrivacyProfile:
    """One round's profile from its curve form and its point form (the same object: no curve)."""
    if curve is point:
        return shuffle_profile(point, num_users, honest_fraction)
    curve_profile = shuffle_profile(curve, num_users, honest_fraction)
    if below <= 0.0:
        return curve_profile
    return _tail_refined(curve_profile, shuffle_profile(point, num_users, honest_fraction), below)


def parallel_composite_randomizer(event: ParallelCompositionEvent) -> VariationRatio:
    """The composite VariationRatio of a ``RANDOM`` round (Wang et al., arXiv:2304.05007, §6;
    :func:`dpacct_shuffle.profiles.parallel_composite`)."""
    if event.mode is not ParallelMode.RANDOM:
        raise ValueError("the composite randomizer is only defined for mode='random'")
    return parallel_composite(event.branches,
                              check_probabilities(event.probabilities, len(event.branches)))


def parallel_round_bound(event: ParallelCompositionEvent, *, lowering: Optional[float] = None,
                         structure_max_users: int = PARALLEL_STRUCTURE_PROFILE_MAX_USERS
                         ) -> ShuffleBound:
    """Certified bound of a ``RANDOM`` round: the minimum of the composite VariationRatio, the
    composite matrix (finite branches) and, up to ``structure_max_users`` users, the multi-level
    bound with each branch's own levels; a single branch is the branch itself
    (:func:`dpacct_shuffle.profiles.parallel_composite_bound`; ``lowering`` η: VariationRatios
    read from batched pair curves, with an array form)."""
    if event.mode is not ParallelMode.RANDOM:
        raise ValueError("the composite bound is only defined for mode='random'")
    return parallel_composite_bound(event.branches,
                                    check_probabilities(event.probabilities, len(event.branches)),
                                    lowering=lowering, structure_max_users=structure_max_users)


def _shuffle_round_profile(event: ShuffleRound, precision: Precision) -> PrivacyProfile:
    """Profile of an unsampled shuffle round (see the module docstring)."""
    below = precision.pointwise_below
    if isinstance(event, ShuffleEvent):
        return _round(round_randomizer(event.randomizer), event.randomizer, event.num_users,
                      event.honest_fraction, below)
    if event.mode is ParallelMode.RANDOM:
        assert isinstance(event.num_users, int)  # checked by the event
        if below <= 0.0:
            curve = parallel_round_bound(event, lowering=ROUND_LOWERING,
                                         structure_max_users=precision.structure_max_users)
            return shuffle_profile(curve, event.num_users, event.honest_fraction)
        # the curve keeps the structured bounds only where they are cheap, the point bound as far
        # as the precision asks (so they are evaluated once per ε)
        curve = parallel_round_bound(
            event, lowering=ROUND_LOWERING,
            structure_max_users=min(precision.structure_max_users,
                                    PARALLEL_STRUCTURE_PROFILE_MAX_USERS))
        point = parallel_round_bound(event, structure_max_users=precision.structure_max_users)
        return _round(curve, point, event.num_users, event.honest_fraction, below)
    assert isinstance(event.num_users, tuple)  # checked by the event
    return max_profile([_round(round_randomizer(branch), branch, size, event.honest_fraction, below)
                        for branch, size in zip(event.branches, event.num_users)])


def _poisson_profile(event: dp_event.PoissonSampledDpEvent, relation: NeighborRel,
                     precision: Precision) -> PrivacyProfile:
    """``PoissonSampledDpEvent(γ, round)``: the void view
    (:func:`dpacct_shuffle.sampling.poisson_sampled_profile`) under ``relation``, its
    VariationRatios read from batched pair curves at ``ROUND_LOWERING`` and, for a
    ``ShuffleEvent`` under replace-one, by the core too wherever the curve is at most
    ``precision.pointwise_below`` (the smaller value kept, as for an unsampled round); a
    random-mode parallel round under replace-one also keeps the participant-count bound of its
    composite bound."""
    inner, gamma = event.event, event.sampling_probability
    if isinstance(inner, ShuffleEvent):
        curve = poisson_sampled_profile(inner.randomizer, inner.num_users, gamma,
                                        inner.honest_fraction, relation, lowering=ROUND_LOWERING)
        randomizer = inner.randomizer
        if (precision.pointwise_below <= 0.0 or relation is not NeighborRel.REPLACE_ONE
                or isinstance(randomizer, PersonalizedShuffle) and len(randomizer.groups) > 1):
            return curve  # the point form would be the same profile
        point = poisson_sampled_profile(randomizer, inner.num_users, gamma,
                                        inner.honest_fraction, relation)
        return _tail_refined(curve, point, precision.pointwise_below)
    if inner.mode is ParallelMode.RANDOM:
        void = poisson_sampled_profile(parallel_composite_randomizer(inner), inner.num_users, gamma,
                                       inner.honest_fraction, relation,
                                       lowering=ROUND_LOWERING)
        if relation is not NeighborRel.REPLACE_ONE:
            return void
        bound = parallel_round_bound(
            inner, lowering=ROUND_LOWERING,
            structure_max_users=min(precision.structure_max_users,
                                    PARALLEL_STRUCTURE_PROFILE_MAX_USERS))
        count = poisson_sampled_shuffle_profile(bound, inner.num_users, gamma, inner.honest_fraction)
        return min_profile([void, count])
    return max_profile([poisson_sampled_profile(branch, size, gamma, inner.honest_fraction,
                                                relation, lowering=ROUND_LOWERING)
                        for branch, size in zip(inner.branches, inner.num_users)])


def shuffled_reports(event: ShuffleRound) -> int:
    """Number of reports a shuffle round shuffles (all groups of a disjoint round together)."""
    users = event.num_users
    return users if isinstance(users, int) else sum(users)


def is_whole_cohort(event: dp_event.SampledWithoutReplacementDpEvent) -> bool:
    """``SampledWithoutReplacementDpEvent(N, m, ShuffleEvent(R, m))`` with every user honest: the
    m sampled users' reports are exactly what is shuffled."""
    inner = event.event
    return (isinstance(inner, ShuffleEvent) and inner.num_users == event.sample_size
            and inner.honest_fraction == 1.0)


def _without_replacement_profile(event: dp_event.SampledWithoutReplacementDpEvent,
                                 precision: Precision) -> PrivacyProfile:
    """``SampledWithoutReplacementDpEvent(N, m, inner)``, replace-one.

    ``inner`` a ``GaussianDpEvent`` (a sum of updates clipped to norm C with noise σ·C: under
    replace-one the sensitivity is 2C) or a shuffle round of at most m reports (fewer reports
    than m, e.g. drop-outs independent of the data, only make its bound larger): the subsampling
    theorem (:func:`dpacct_shuffle.without_replacement.without_replacement_profile`). A round of
    exactly the m sampled users (:func:`is_whole_cohort`) gets the minimum of that theorem and
    the Poisson-round bound of :func:`dpacct_shuffle.without_replacement.shuffled_cohort_profile`
    (its m-user round read from the batched curve when ``precision.pointwise_below`` is 0, as for
    a PLD, else from the core).
    """
    inner = event.event
    if isinstance(inner, dp_event.GaussianDpEvent):
        base = gaussian_profile(inner.noise_multiplier, sensitivity=2.0)
    else:
        if shuffled_reports(inner) > event.sample_size:
            raise ValueError(
                f"the shuffle round inside SampledWithoutReplacementDpEvent shuffles "
                f"{shuffled_reports(inner)} reports, more than sample_size={event.sample_size}")
        if is_whole_cohort(event):  # the m-user round by its curve, or by the core for points
            return shuffled_cohort_profile(
                inner.randomizer, event.sample_size, event.source_dataset_size,
                lowering=ROUND_LOWERING if precision.pointwise_below <= 0.0 else None)
        base = _shuffle_round_profile(inner, precision)
    return without_replacement_profile(base, event.sample_size, event.source_dataset_size)


def event_profile(event: dp_event.DpEvent, relation: NeighborRel = NeighborRel.REPLACE_ONE, *,
                  precision: Precision = Precision()) -> PrivacyProfile:
    """The privacy profile δ(ε) of an event under ``relation`` (the one dispatch).

    Supported: :class:`~dpacct_shuffle.events.ShuffleEvent`,
    :class:`~dpacct_shuffle.events.ParallelCompositionEvent`, either inside
    ``PoissonSampledDpEvent`` (client sampling; replace-one and add/remove-one) or
    ``SampledWithoutReplacementDpEvent`` (replace-one), a without-replacement-sampled
    ``GaussianDpEvent`` (replace-one, sensitivity 2), and a chained
    :class:`~dpacct_shuffle.events.LDPCompositionEvent` (replace-one; sequential reports are a
    composition: :func:`dpacct_shuffle.event_plds.event_pmfs`).

    Args:
      event: the event.
      relation: ``REPLACE_ONE`` (default) or, for Poisson-sampled shuffle rounds,
        ``ADD_OR_REMOVE_ONE`` (:mod:`dpacct_shuffle.relations`).
      precision: how much work unsampled rounds may do (:class:`Precision`; default: the
        tightest, the minimum of the batched curve and the core at every ε). The accountants
        build PLDs with :data:`dpacct_shuffle.event_plds.PLD_PRECISION`.

    Raises:
      ValueError: the event has no guarantee under ``relation`` (the message says what would
        work).
      TypeError: an event this package does not compute, or ``precision`` not a Precision.
    """
    if not isinstance(precision, Precision):
        raise TypeError(f"precision must be an event_profiles.Precision, got {precision!r}")
    if not supported_relation(event, relation):
        raise ValueError(relation_message(event, relation))
    if isinstance(event, dp_event.PoissonSampledDpEvent) and isinstance(
            event.event, (ShuffleEvent, ParallelCompositionEvent)):
        return _poisson_profile(event, relation, precision)
    if isinstance(event, dp_event.SampledWithoutReplacementDpEvent) and isinstance(
            event.event, (ShuffleEvent, ParallelCompositionEvent, dp_event.GaussianDpEvent)):
        return _without_replacement_profile(event, precision)
    if isinstance(event, (ShuffleEvent, ParallelCompositionEvent)):
        return _shuffle_round_profile(event, precision)
    if isinstance(event, LDPCompositionEvent):
        return ldp_profile(event)
    raise TypeError(f"no privacy profile here for {type(event).__name__}")


__all__ = [
    "Precision",
    "event_profile",
    "is_whole_cohort",
    "parallel_composite_randomizer",
    "parallel_round_bound",
    "shuffled_reports",
]
