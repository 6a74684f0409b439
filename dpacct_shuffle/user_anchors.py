"""User counts at which a changing cohort is accounted: anchors chosen among the rounds' own counts.

A shuffle round with n honest users may be accounted at any n' ≤ n (docs/theory.md, "PLD
accounting of shuffle rounds", changing cohorts: the true δ is non-increasing in n). With a ratio
r > 1, :class:`UserCountAnchors` keeps a sorted set of *anchors* and accounts a count n at the
largest anchor a ≤ n; it adds anchors so that every count it has seen satisfies a ≤ n < a·r. So
every round is accounted within a factor r below its own count, and rounds whose counts share an
anchor share one PLD.

Anchors are taken among the counts themselves, greedily: the smallest count not yet covered
becomes an anchor and covers every count below r times it; repeat. For counts given at once this
is the fewest anchors any choice of anchors among values ≤ the counts can have (an interval
cover: the smallest uncovered count needs an anchor in (n/r, n], and n itself covers the most
beyond it). Counts added later never change the anchor of a count seen earlier: a new anchor c
is a count not covered by the anchors below it, so every count already covered by an anchor
a < c lies below a·r ≤ c and keeps its anchor (the largest one ≤ it).

:func:`event_with_user_counts` rewrites the user counts of an event (the rule it is given, e.g.
:meth:`UserCountAnchors.anchor` or :func:`event_on_users_grid`'s geometric grid), and
:func:`user_counts` lists the counts it would rewrite.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from typing import Union

from dp_accounting import dp_event

from dpacct_shuffle.core.validation import check_num_users, check_range
from dpacct_shuffle.event_profiles import is_whole_cohort
from dpacct_shuffle.events import ParallelCompositionEvent, ShuffleEvent
from dpacct_shuffle.profiles import COHORT_LOWERING, batched_randomizer, honest_users, users_grid_floor
from dpacct_shuffle.relations import SHUFFLE_EVENTS


class UserCountAnchors:
    """Anchors of user counts within a factor ``ratio`` (see the module docstring).

    Args:
      ratio: r in (1, 2]: every count n seen is accounted at an anchor a with a ≤ n < a·r.
    """

    __slots__ = ("ratio", "_anchors")

    def __init__(self, ratio: float) -> None:
        self.ratio = check_range("users_grid_ratio", ratio, 1.0, 2.0, low_open=True)
        self._anchors: list[int] = []

    @property
    def anchors(self) -> tuple[int, ...]:
        """The anchors, increasing."""
        return tuple(self._anchors)

    def _below(self, n: int) -> int:
        """Largest anchor ≤ n, 0 if there is none."""
        index = bisect.bisect_right(self._anchors, n)
        return self._anchors[index - 1] if index else 0

    def covers(self, n: int) -> bool:
        """Whether the largest anchor a ≤ n satisfies n < a·r."""
        below = self._below(n)
        return below > 0 and n < below * self.ratio

    def extend(self, counts: Iterable[int]) -> None:
        """Add anchors (greedily, among ``counts``) until every count is covered."""
        for n in sorted({check_num_users(count, "num_users") for count in counts}):
            if not self.covers(n):
                bisect.insort(self._anchors, n)

    def anchor(self, n: int) -> int:
        """The count n is accounted at: the largest anchor ≤ n (call :meth:`extend` first)."""
        users = check_num_users(n, "num_users")
        if not self.covers(users):
            raise ValueError(f"num_users={users} has no anchor within users_grid_ratio="
                             f"{self.ratio!r} below it; extend the anchors with it first")
        return self._below(users)



def event_on_users_grid(event: dp_event.DpEvent, ratio: float) -> dp_event.DpEvent:
    """A shuffle event with every user count rounded down to the geometric grid of ``ratio``
    (:func:`dpacct_shuffle.profiles.users_grid_floor`), as :func:`event_with_user_counts` does
    with any rule; ``ShufflePLDAccountant(users_grid_ratio=r)`` anchors the counts on the rounds'
    own counts instead (:class:`UserCountAnchors`). Other events are returned unchanged."""
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
    if isinstance(event, dp_event.PoissonSampledDpEvent) and isinstance(event.event, SHUFFLE_EVENTS):
        inner = event_with_user_counts(event.event, accounted)
        return (event if inner is event.event
                else dp_event.PoissonSampledDpEvent(event.sampling_probability, inner))
    if (isinstance(event, dp_event.SampledWithoutReplacementDpEvent)
            and isinstance(event.event, SHUFFLE_EVENTS) and not is_whole_cohort(event)):
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
        sizes: Union[int, tuple[int, ...]]
        if isinstance(event.num_users, tuple):
            sizes = tuple(_accounted_users(honest_users(size, fraction), accounted)
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


def anchored_event(event: dp_event.DpEvent, anchors: UserCountAnchors) -> dp_event.DpEvent:
    """The event a changing-cohort round is accounted as: its user counts at their anchors
    (extend ``anchors`` with :func:`user_counts` first) and a ``ShuffleEvent``'s randomizer on the
    batched pair curve at ``profiles.COHORT_LOWERING``
    (:func:`dpacct_shuffle.profiles.batched_randomizer`) where it applies."""
    if isinstance(event, ShuffleEvent):
        randomizer = batched_randomizer(event.randomizer, COHORT_LOWERING)
        if randomizer is not event.randomizer:
            event = ShuffleEvent(randomizer, event.num_users, event.honest_fraction)
    return event_with_user_counts(event, anchors.anchor)


__all__ = ["UserCountAnchors", "anchored_event", "event_on_users_grid", "event_with_user_counts",
           "user_counts"]
