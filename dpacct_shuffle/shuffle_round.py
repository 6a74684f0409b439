"""ε(δ) and δ(ε) of one shuffle round — the canonical point queries — and both bounds of a round
with the labelled references printed beside them.

The canonical signature: :func:`round_epsilon` ``(randomizer, users, delta, *,
sampling_probability=None, sample_size=None, neighboring_relation=REPLACE_ONE)`` and
:func:`round_delta` (the same with ε in place of δ). Every other entry point returns exactly their
number:

* ``randomizer.shuffled(n).epsilon(δ)`` / ``.delta(ε)`` (and ``randomizer.epsilon(δ, n)``) is the
  round in which every one of n users reports: :func:`round_epsilon` returns it unchanged;
* :func:`epsilon_bounds` / :func:`delta_bounds` (the ``epsilon`` and ``delta`` commands) report it
  as ``upper``, beside a certified lower bound;
* :func:`dpacct_shuffle.calibration.shuffled_delta` is an alias of :func:`round_delta`, and the
  calibration searches test :func:`round_delta` at the target.

The number, by kind of round (replace-one neighbours unless said otherwise):

* every user reports (also a cohort of all ``users``, and γ = 1 under replace-one): the
  randomizer's certified point bound — for a catalog ``Randomizer`` the maximum over its cover
  lowered by its fallbacks (:mod:`dpacct_shuffle.randomizers.cover_rule`), the neutral-aware
  variation-ratio bound (docs/theory.md, "Neutral-aware bound") for a ``VariationRatio``;
* a sampled round: the profile of its event, ``PoissonSampledDpEvent(γ, ShuffleEvent(R, users))``
  (each of the ``users``, the population, reports with probability γ = ``sampling_probability``;
  add/remove-one too) or ``SampledWithoutReplacementDpEvent(users, m, ShuffleEvent(R, m))`` (a
  cohort of exactly m = ``sample_size``), from :func:`dpacct_shuffle.event_profiles.event_profile`
  at its point-query precision — the void view and the participant-count bound with every
  VariationRatio by the core and by its batched pair curve, the smaller kept
  (:func:`dpacct_shuffle.sampling.poisson_sampled_profile`), resp.
  :func:`dpacct_shuffle.without_replacement.shuffled_cohort_profile` with the core;

and for a sampled round ε(δ) is the point the one monotone search
(:func:`dpacct_shuffle.core.search.epsilon_search`) finds on that δ(ε), started from the ε of the
event's curve-only profile (``CURVE_PRECISION``, cheap): a point where the certified δ(ε) was
evaluated and found ≤ δ, within a relative ``ROUND_EPSILON_RTOL`` of the smallest such ε.
These are the round's own bounds, without the discretisation a composition needs: the
accountants (:class:`~dpacct_shuffle.accountants.ShufflePLDAccountant`, for rounds composed with
other events) build a PLD from the same event's curve profile.

:func:`epsilon_bounds` and :func:`delta_bounds` return a :class:`RoundBounds`:

* ``upper`` — the certified upper bound, :func:`round_epsilon` (resp. :func:`round_delta`);
* ``lower`` — the certified lower bound of the entry's explicit instance
  (:mod:`dpacct_shuffle.randomizers.lower_bounds`), with a :class:`LowerBoundStatus` saying why there is
  none when it is absent (not requested, a sampled round, more than ``lower_max_users`` users — its
  cost grows with n —, no instance for this entry, or an evaluation that failed). A sampled round of
  users with different randomizers has one: that of its void groups at γ
  (:func:`~dpacct_shuffle.sampling.void_personalized_round`).

The true ε(δ) (resp. δ(ε)) of the round lies in ``[lower, upper]``.

References, never guarantees for the entry at hand: :func:`fmt_closed_form` (Feldman, McMillan &
Talwar, SODA 2023, arXiv:2208.04591, Thm 3.2: valid for any ε0-LDP randomizer inside its validity
condition) and :func:`published_pair_epsilon` (Wang et al., arXiv:2304.05007, Thm 4.1, with the
published parameters; not a valid bound in general, docs/theory.md, "Published pair").
"""

from __future__ import annotations

import enum
import math
import time
from dataclasses import dataclass
from typing import Literal, Optional, Union

from dp_accounting import dp_event

from dpacct_shuffle.core.bound import VariationRatio, published_pair
from dpacct_shuffle.core.search import epsilon_search
from dpacct_shuffle.core.validation import check_delta, check_epsilon, check_num_users
from dpacct_shuffle.event_profiles import Precision, event_profile
from dpacct_shuffle.events import ShuffleEvent
from dpacct_shuffle.lemmas import fmt_shuffle_bound
from dpacct_shuffle.randomizers.base import LOWER_BOUND_MAX_USERS, Randomizer, ShuffledRandomizer
from dpacct_shuffle.randomizers.personalized import PersonalizedShuffle
from dpacct_shuffle.sampling import (NeighborRel, check_sampling_probability, exact_sampled_profile,
                                     void_personalized_round)

Quantity = Literal["epsilon", "delta"]
#: One randomizer for every user, or groups of users with their own (``users`` is then their total).
RoundRandomizer = Union[Randomizer, PersonalizedShuffle]
#: What :func:`round_epsilon` and :func:`round_delta` accept: a round randomizer or the
#: variation-ratio parameters of one (:class:`~dpacct_shuffle.VariationRatio`).
AnyRoundRandomizer = Union[Randomizer, PersonalizedShuffle, VariationRatio]
#: Relative tolerance of the ε search of a sampled round (:func:`round_epsilon`): a few more
#: evaluations from the curve's ε, far below what a PLD's discretisation adds to a round's ε.
ROUND_EPSILON_RTOL = 1e-6
#: The precision of the profile a sampled round's ε search starts from: batched curves only.
CURVE_PRECISION = Precision(pointwise_below=0.0)


def _sampled_event(randomizer: AnyRoundRandomizer, users: int,
                   sampling_probability: Optional[float], sample_size: Optional[int],
                   neighboring_relation: NeighborRel) -> Optional[dp_event.DpEvent]:
    """The event of a sampled round (module docstring); None for a round where every user
    reports (then only replace-one is valid), which a cohort of all the users and, under
    replace-one, a sampling probability of 1 are."""
    if not isinstance(randomizer, (Randomizer, PersonalizedShuffle, VariationRatio)):
        raise TypeError("randomizer must be a dpacct_shuffle Randomizer, PersonalizedShuffle or "
                        f"VariationRatio, got {type(randomizer).__name__}")
    population = check_num_users(users, "users")
    if sample_size is not None:
        if sampling_probability is not None:
            raise ValueError("give sampling_probability (Poisson sampling) or sample_size (a "
                             "fixed-size cohort), not both")
        if neighboring_relation is not NeighborRel.REPLACE_ONE:
            raise ValueError("a fixed-size cohort (sample_size) has a guarantee for REPLACE_ONE "
                             f"only, got {neighboring_relation!r}")
        size = check_num_users(sample_size, "sample_size")
        if size > population:
            raise ValueError(f"sample_size must be <= population_size ({population}), got {size}")
        if size == population:
            return None  # every user reports
        return dp_event.SampledWithoutReplacementDpEvent(population, size,
                                                         ShuffleEvent(randomizer, size))
    if sampling_probability is not None:
        gamma = check_sampling_probability(sampling_probability)
        if gamma == 1.0 and neighboring_relation is NeighborRel.REPLACE_ONE:
            return None  # every user reports
        return dp_event.PoissonSampledDpEvent(gamma, ShuffleEvent(randomizer, population))
    if neighboring_relation is not NeighborRel.REPLACE_ONE:
        raise ValueError("an unsampled shuffle round has a guarantee for REPLACE_ONE only (its "
                         "report count reveals whether the victim is present); give "
                         f"sampling_probability for add/remove-one, got {neighboring_relation!r}")
    return None


def round_delta(randomizer: AnyRoundRandomizer, users: int, epsilon: float, *,
                sampling_probability: Optional[float] = None, sample_size: Optional[int] = None,
                neighboring_relation: NeighborRel = NeighborRel.REPLACE_ONE) -> float:
    """Certified upper bound on δ(ε) of one shuffle round (the canonical query; module docstring).

    Args:
      randomizer: a catalog :class:`~dpacct_shuffle.randomizers.Randomizer` (or a ``from_matrix``
        result), a :class:`~dpacct_shuffle.randomizers.PersonalizedShuffle` (users with different
        randomizers; ``users`` is then their total) or a :class:`~dpacct_shuffle.VariationRatio`.
      users: number of users, ≥ 1 (the population of a sampled round).
      epsilon: ε ≥ 0.
      sampling_probability: None (every user reports), or γ ∈ [0, 1]: each of the ``users``
        reports independently with probability γ.
      sample_size: None, or m ∈ [1, users]: a cohort of exactly m of the ``users``, drawn
        uniformly without replacement (replace-one); not together with ``sampling_probability``.
      neighboring_relation: ``REPLACE_ONE``; ``ADD_OR_REMOVE_ONE`` for a Poisson-sampled round
        only (an unsampled round's report count reveals whether the victim is present).

    Raises:
      TypeError: ``randomizer`` of another type.
      ValueError: a parameter out of range, both sampling options, or a relation the round has no
        guarantee for.
    """
    eps = check_epsilon(epsilon)
    event = _sampled_event(randomizer, users, sampling_probability, sample_size,
                           neighboring_relation)
    if event is None:
        return randomizer.delta(eps, users)
    return event_profile(event, neighboring_relation).delta(eps)


def round_epsilon(randomizer: AnyRoundRandomizer, users: int, delta: float, *,
                  sampling_probability: Optional[float] = None, sample_size: Optional[int] = None,
                  neighboring_relation: NeighborRel = NeighborRel.REPLACE_ONE) -> float:
    """Certified upper bound on ε(δ) of one shuffle round: the round is (ε, δ)-DP at the returned
    ε (the canonical query; arguments as in :func:`round_delta`, with δ ∈ (0, 1) in place of ε).

    Every user reporting: ``randomizer.epsilon(delta, users)``, the number of
    ``randomizer.shuffled(users).epsilon(delta)``. A sampled round: the one monotone search on
    :func:`round_delta` (module docstring)."""
    target = check_delta(delta)
    event = _sampled_event(randomizer, users, sampling_probability, sample_size,
                           neighboring_relation)
    if event is None:
        return randomizer.epsilon(target, users)
    # the search starts from the ε of the event's curve-only profile (cheap, at most a few tenths
    # of a percent away): a few evaluations of the point profile instead of a few dozen
    curve = event_profile(event, neighboring_relation, precision=CURVE_PRECISION)
    guess = epsilon_search(curve.delta, target, 1.0, curve.epsilon_cap, 1.0, ROUND_EPSILON_RTOL)
    profile = event_profile(event, neighboring_relation)
    cap = profile.epsilon_cap
    start = guess if 0.0 < guess < cap else min(1.0, 0.5 * cap)
    return epsilon_search(profile.delta, target, 1.0, cap, start, ROUND_EPSILON_RTOL)


class LowerBoundStatus(enum.Enum):
    """Whether :attr:`RoundBounds.lower` holds a value, and why not."""

    COMPUTED = "computed"
    NOT_REQUESTED = "not requested"
    SAMPLED_ROUND = "no instance for a client-sampled round (Poisson or fixed-size cohort)"
    ABOVE_MAX_USERS = "more users than lower_max_users"
    NO_INSTANCE = "the entry has no lower-bound instance"
    EVALUATION_FAILED = "the instance evaluated to NaN"


@dataclass(frozen=True)
class RoundBounds:
    """Certified upper and lower bound of ε(δ) or δ(ε) of one shuffle round.

    Attributes:
      randomizer: the local randomizer, or the groups of a
        :class:`~dpacct_shuffle.randomizers.PersonalizedShuffle`.
      users: the number of users (the population of a sampled round).
      quantity: ``"epsilon"`` (ε at δ = ``level``) or ``"delta"`` (δ at ε = ``level``).
      level: the given δ (resp. ε).
      sampling_probability: γ of a Poisson-sampled round, None when every user reports.
      upper: the certified upper bound.
      upper_seconds: time spent computing ``upper``.
      lower: the certified lower bound, None unless ``lower_status`` is ``COMPUTED``.
      lower_status: why ``lower`` is (not) there.
      lower_seconds: time spent evaluating the instance (None when it was not evaluated).
      lower_max_users: the largest n for which the instance is evaluated (None: any n).
      sample_size: m of a fixed-size cohort (m of the ``users`` users, drawn uniformly without
        replacement), None otherwise.
    """

    randomizer: RoundRandomizer
    users: int
    quantity: Quantity
    level: float
    sampling_probability: Optional[float]
    upper: float
    upper_seconds: float
    lower: Optional[float]
    lower_status: LowerBoundStatus
    lower_seconds: Optional[float]
    lower_max_users: Optional[int]
    sample_size: Optional[int] = None


def _round_bounds(randomizer: RoundRandomizer, users: int, quantity: Quantity, level: float,
                  sampling_probability: Optional[float], lower: bool,
                  lower_max_users: Optional[int], sample_size: Optional[int]) -> RoundBounds:
    start = time.perf_counter()
    query = round_epsilon if quantity == "epsilon" else round_delta
    upper = query(randomizer, users, level, sampling_probability=sampling_probability,
                  sample_size=sample_size)
    upper_seconds = time.perf_counter() - start
    # the lower bound's cost is limited by lower_max_users here, not by the library's default
    shuffled: ShuffledRandomizer = randomizer.shuffled(users, lower_bound_max_users=None)
    value: Optional[float] = None
    seconds: Optional[float] = None
    if not lower:
        status = LowerBoundStatus.NOT_REQUESTED
    elif sample_size is not None:
        status = LowerBoundStatus.SAMPLED_ROUND
    elif sampling_probability is not None and not isinstance(randomizer, PersonalizedShuffle):
        exact = exact_sampled_profile(randomizer, users, sampling_probability)
        if exact is None:
            status = LowerBoundStatus.SAMPLED_ROUND
        else:  # binary RR: the exact sampled profile's certified lower end
            start = time.perf_counter()
            interval = (exact.epsilon_interval(level) if quantity == "epsilon"
                        else exact.delta_interval(level))
            value, seconds, status = interval[0], time.perf_counter() - start, LowerBoundStatus.COMPUTED
    elif lower_max_users is not None and users > lower_max_users:
        status = LowerBoundStatus.ABOVE_MAX_USERS
    else:
        if sampling_probability is not None and isinstance(randomizer, PersonalizedShuffle):
            # users with different randomizers (the branch above took the others): the void round
            shuffled = void_personalized_round(randomizer, sampling_probability, round_up=False
                                               ).shuffled(users, lower_bound_max_users=None)
        lower_of = shuffled.epsilon_lower if quantity == "epsilon" else shuffled.delta_lower
        start = time.perf_counter()
        value = lower_of(level) if shuffled.lower_bound is not None else None
        seconds = time.perf_counter() - start
        if value is None:
            status = LowerBoundStatus.NO_INSTANCE
        elif math.isnan(value):  # no number is reported for a failed evaluation
            value, status = None, LowerBoundStatus.EVALUATION_FAILED
        else:
            status = LowerBoundStatus.COMPUTED
    return RoundBounds(randomizer, users, quantity, level, sampling_probability, upper,
                       upper_seconds, value, status, seconds, lower_max_users, sample_size)


def epsilon_bounds(randomizer: RoundRandomizer, users: int, delta: float, *,
                   sampling_probability: Optional[float] = None, lower: bool = True,
                   lower_max_users: Optional[int] = LOWER_BOUND_MAX_USERS,
                   sample_size: Optional[int] = None) -> RoundBounds:
    """Certified upper and lower bound on ε(δ) of one shuffle round of ``users`` users: ``upper``
    is :func:`round_epsilon` with the same arguments.

    Args:
      randomizer: the local randomizer (a catalog entry or a :func:`~dpacct_shuffle.randomizers.from_matrix` result),
        or a :class:`~dpacct_shuffle.randomizers.PersonalizedShuffle` (users with different
        randomizers; its lower bound is :meth:`~dpacct_shuffle.randomizers.PersonalizedShuffle.lower_bound`).
      users: number of users, ≥ 1 (the population when ``sampling_probability`` is given; the
        total of the groups for a PersonalizedShuffle).
      delta: δ in (0, 1).
      sampling_probability: γ ∈ [0, 1] for a Poisson-sampled round, None if every user reports.
      lower: evaluate the explicit lower-bound instance (if the entry has one).
      lower_max_users: evaluate the instance only for ``users`` ≤ this (None: always).
      sample_size: m ∈ [1, users] for a fixed-size cohort (m of the ``users`` users drawn
        uniformly without replacement, replace-one), None otherwise; not together with
        ``sampling_probability``.
    """
    return _round_bounds(randomizer, users, "epsilon", delta, sampling_probability, lower,
                         lower_max_users, sample_size)


def delta_bounds(randomizer: RoundRandomizer, users: int, epsilon: float, *,
                 sampling_probability: Optional[float] = None, lower: bool = True,
                 lower_max_users: Optional[int] = LOWER_BOUND_MAX_USERS,
                 sample_size: Optional[int] = None) -> RoundBounds:
    """Certified upper and lower bound on δ(ε) of one shuffle round (arguments as in
    :func:`epsilon_bounds`, with ε ≥ 0 in place of δ): ``upper`` is :func:`round_delta`."""
    return _round_bounds(randomizer, users, "delta", epsilon, sampling_probability, lower,
                         lower_max_users, sample_size)


@dataclass(frozen=True)
class ClosedFormReference:
    """The FMT closed form for an entry's ε0, or the reason it does not apply.

    Attributes:
      value: ε of the closed form, None when it does not apply.
      reason: why ``value`` is None (empty when there is a value).
    """

    value: Optional[float]
    reason: str


def fmt_closed_form(randomizer: Randomizer, users: int, delta: float) -> ClosedFormReference:
    """ε(δ) of the Feldman–McMillan–Talwar closed form
    (:func:`~dpacct_shuffle.lemmas.fmt_shuffle_bound`) at the entry's ``epsilon0`` parameter;
    no value for an entry without ``epsilon0`` or outside the closed form's validity condition."""
    epsilon0 = randomizer.parameters.get("epsilon0")
    if not isinstance(epsilon0, (int, float)):
        return ClosedFormReference(None, "entry has no epsilon0")
    try:
        return ClosedFormReference(fmt_shuffle_bound(float(epsilon0), users, delta), "")
    except ValueError as exc:
        return ClosedFormReference(None, str(exc))


def published_pair_epsilon(randomizer: Randomizer, users: int, delta: float) -> Optional[float]:
    """ε(δ) of the published variation-ratio pair (Wang et al., arXiv:2304.05007, Thm 4.1) with the
    entry's published (p, β, q, q1); None for an entry without published parameters. For
    reproduction only: not a guarantee (docs/theory.md, "Published pair")."""
    if randomizer.published is None:
        return None
    p, beta, q, q1 = randomizer.published
    return published_pair(p, beta, q, q1).epsilon(delta, users)


__all__ = [
    "AnyRoundRandomizer",
    "CURVE_PRECISION",
    "ClosedFormReference",
    "ROUND_EPSILON_RTOL",
    "LowerBoundStatus",
    "RoundBounds",
    "RoundRandomizer",
    "delta_bounds",
    "epsilon_bounds",
    "fmt_closed_form",
    "published_pair_epsilon",
    "round_delta",
    "round_epsilon",
]
