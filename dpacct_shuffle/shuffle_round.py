"""Both bounds of one shuffle round, and the labelled references printed beside them.

:func:`epsilon_bounds` and :func:`delta_bounds` evaluate one round of ``users`` users of a
randomizer and return a :class:`RoundBounds`:

* ``upper`` — the certified upper bound: ``randomizer.shuffled(n).epsilon(δ)`` (resp. ``.delta(ε)``),
  the neutral-aware variation-ratio bound (docs/theory.md, "Neutral-aware bound"); for a
  Poisson-sampled round (each of the ``users`` reports with probability γ, replace-one neighbours)
  the value of :class:`~dpacct_shuffle.accountants.ShufflePLDAccountant` composed with
  ``PoissonSampledDpEvent(γ, ShuffleEvent(randomizer, users))`` (the void view of
  :mod:`dpacct_shuffle.sampling`);
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

from dpacct_shuffle.accountants import ShufflePLDAccountant
from dpacct_shuffle.core.bound import published_pair
from dpacct_shuffle.core.validation import check_num_users
from dpacct_shuffle.events import ShuffleEvent
from dpacct_shuffle.lemmas import fmt_shuffle_bound
from dpacct_shuffle.randomizers.base import LOWER_BOUND_MAX_USERS, Randomizer, ShuffledRandomizer
from dpacct_shuffle.randomizers.personalized import PersonalizedShuffle
from dpacct_shuffle.sampling import (check_sampling_probability, exact_sampled_profile,
                                     void_personalized_round)

Quantity = Literal["epsilon", "delta"]
#: One randomizer for every user, or groups of users with their own (``users`` is then their total).
RoundRandomizer = Union[Randomizer, PersonalizedShuffle]


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


def _sampled_event(randomizer: RoundRandomizer, users: int, sampling_probability: Optional[float],
                   sample_size: Optional[int]) -> dp_event.DpEvent:
    """``PoissonSampledDpEvent(γ, ShuffleEvent(R, users))`` or
    ``SampledWithoutReplacementDpEvent(users, m, ShuffleEvent(R, m))``."""
    if sample_size is not None:
        if sampling_probability is not None:
            raise ValueError("give sampling_probability (Poisson sampling) or sample_size (a "
                             "fixed-size cohort), not both")
        size = check_num_users(sample_size, "sample_size")
        if size > users:
            raise ValueError(f"sample_size must be <= users ({users}), got {size}")
        return dp_event.SampledWithoutReplacementDpEvent(users, size, ShuffleEvent(randomizer, size))
    gamma = check_sampling_probability(sampling_probability)
    return dp_event.PoissonSampledDpEvent(gamma, ShuffleEvent(randomizer, users))


def _sampled_round(event: dp_event.DpEvent, quantity: Quantity, level: float) -> float:
    accountant = ShufflePLDAccountant(progress=False).compose(event)
    if quantity == "epsilon":
        return float(accountant.get_epsilon(level))
    return float(accountant.get_delta(level))


def _round_bounds(randomizer: RoundRandomizer, users: int, quantity: Quantity, level: float,
                  sampling_probability: Optional[float], lower: bool,
                  lower_max_users: Optional[int], sample_size: Optional[int]) -> RoundBounds:
    # the lower bound's cost is limited by lower_max_users here, not by the library's default
    shuffled: ShuffledRandomizer = randomizer.shuffled(users, lower_bound_max_users=None)
    sampled = sampling_probability is not None or sample_size is not None
    start = time.perf_counter()
    if not sampled:
        upper = shuffled.epsilon(level) if quantity == "epsilon" else shuffled.delta(level)
    else:
        event = _sampled_event(randomizer, users, sampling_probability, sample_size)
        upper = _sampled_round(event, quantity, level)
    upper_seconds = time.perf_counter() - start
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
    """Certified upper and lower bound on ε(δ) of one shuffle round of ``users`` users.

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
        uniformly without replacement, replace-one: ``SampledWithoutReplacementDpEvent`` through
        the PLD accountant), None otherwise; not together with ``sampling_probability``.
    """
    return _round_bounds(randomizer, users, "epsilon", delta, sampling_probability, lower,
                         lower_max_users, sample_size)


def delta_bounds(randomizer: RoundRandomizer, users: int, epsilon: float, *,
                 sampling_probability: Optional[float] = None, lower: bool = True,
                 lower_max_users: Optional[int] = LOWER_BOUND_MAX_USERS,
                 sample_size: Optional[int] = None) -> RoundBounds:
    """Certified upper and lower bound on δ(ε) of one shuffle round (arguments as in
    :func:`epsilon_bounds`, with ε ≥ 0 in place of δ)."""
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
    "ClosedFormReference",
    "LowerBoundStatus",
    "RoundBounds",
    "RoundRandomizer",
    "delta_bounds",
    "epsilon_bounds",
    "fmt_closed_form",
    "published_pair_epsilon",
]
