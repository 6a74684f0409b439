"""dp-accounting events for shuffled and local reports (subclasses of ``dp_accounting.DpEvent``).

All events are frozen ``attrs`` classes like dp-accounting's own, with tuple-valued fields, so they
are hashable, comparable and survive ``to_named_tuple()`` / ``DpEvent.from_named_tuple()``. Modes
are enums (dp-accounting's named-tuple conversion treats a ``str`` field as a sequence of
characters, so string-valued fields would not round-trip); the constructors also accept the
strings ``"sequential"``, ``"chained"``, ``"random"``, ``"disjoint"``.

Neighbouring relation: **replace-one** — one user's input is replaced by another value, all other
users' inputs are fixed (docs/theory.md, "Setting"). The shuffle bounds hold for this relation
only; the accountants in :mod:`dpacct_shuffle.accountants` refuse these events under add/remove-one
(the report count reveals presence), except inside ``PoissonSampledDpEvent`` (docs/theory.md,
"Client sampling").

A "randomizer" below is anything :func:`dpacct_shuffle.profiles.as_shuffle_bound` accepts: a
catalog ``Randomizer`` (``.variation_ratio``), a :class:`~dpacct_shuffle.VariationRatio`, or any
object with ``delta(epsilon, n)`` and ``epsilon0``.
"""

from __future__ import annotations

import enum
import math
import warnings
from collections.abc import Sequence
from typing import Optional, Tuple, Union, cast

import attr
from dp_accounting import dp_event

from dpacct_shuffle.core.bound import VariationRatio
from dpacct_shuffle.core.validation import check_num_users, check_range
from dpacct_shuffle.randomizers.personalized import PersonalizedShuffle
from dpacct_shuffle.profiles import (
    PARALLEL_STRUCTURE_MAX_USERS,
    PrivacyProfile,
    RandomizerDescription,
    ShuffleBound,
    as_shuffle_bound,
    check_probabilities,
    variation_ratios_of,
)


class LDPCompositionMode(enum.Enum):
    """How a user's local reports are combined (see :class:`LDPCompositionEvent`)."""

    SEQUENTIAL = "sequential"
    CHAINED = "chained"


class ParallelMode(enum.Enum):
    """How users are assigned to the branches of a :class:`ParallelCompositionEvent`."""

    RANDOM = "random"
    DISJOINT = "disjoint"


def _parallel_mode(value: object) -> ParallelMode:
    try:
        return ParallelMode(value)
    except ValueError:
        raise ValueError(f"mode must be one of 'random', 'disjoint', got {value!r}") from None


def _ldp_mode(value: object) -> LDPCompositionMode:
    try:
        return LDPCompositionMode(value)
    except ValueError:
        raise ValueError(f"mode must be one of 'sequential', 'chained', got {value!r}") from None


def _num_users(value: object) -> int:
    return check_num_users(value, "num_users")


def _honest_fraction(value: object) -> float:
    return check_range("honest_fraction", value, 0.0, 1.0, low_open=True)


def _randomizer(value: object) -> RandomizerDescription:
    if isinstance(value, list):  # keep events hashable: sequences become tuples
        value = tuple(value)
    randomizer = cast(RandomizerDescription, value)
    as_shuffle_bound(randomizer)  # raises TypeError for anything that certifies no bound
    return randomizer


def _tuple_of_randomizers(value: object) -> tuple[RandomizerDescription, ...]:
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise TypeError(f"branches must be a sequence of randomizers, got {type(value).__name__}")
    if len(value) == 0:
        raise ValueError("branches must contain at least one randomizer")
    return tuple(_randomizer(item) for item in value)


def _optional_probabilities(value: object) -> Optional[tuple[float, ...]]:
    if value is None:
        return None
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise TypeError(f"probabilities must be a sequence of floats or None, got {value!r}")
    return tuple(check_range(f"probabilities[{i}]", v, 0.0, 1.0) for i, v in enumerate(value))


def _users_or_group_sizes(value: object) -> Union[int, tuple[int, ...]]:
    if isinstance(value, Sequence) and not isinstance(value, str):
        return tuple(check_num_users(v, f"num_users[{i}]") for i, v in enumerate(value))
    return _num_users(value)


def _epsilons(value: object) -> tuple[float, ...]:
    if not isinstance(value, Sequence) or isinstance(value, str) or len(value) == 0:
        raise TypeError(f"epsilons must be a non-empty sequence of floats, got {value!r}")
    return tuple(check_range(f"epsilons[{i}]", v, 0.0, math.inf, high_open=True)
                 for i, v in enumerate(value))


def _optional_deltas(value: object) -> Optional[tuple[float, ...]]:
    if value is None:
        return None
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise TypeError(f"deltas must be a sequence of floats or None, got {value!r}")
    return tuple(check_range(f"deltas[{i}]", v, 0.0, 1.0) for i, v in enumerate(value))


@attr.s(frozen=True, slots=True, auto_attribs=True)
class ShuffleEvent(dp_event.DpEvent):  # type: ignore[misc]  # dp-accounting has no type hints
    """One shuffle round in which the focal user sends one report.

    ``num_users`` users each apply ``randomizer`` to their input and a trusted shuffler releases
    the multiset of reports. With ``honest_fraction`` γ < 1 only ⌊γ·n⌋ users follow the protocol
    (robust shuffling, Huang & Canonne, Def 2.6): the others' reports may be arbitrary, so every
    bound uses ⌊γ·n⌋ users.

    Mathematics: for replace-one neighbours the released laws P (victim input x⁰) and Q (x¹)
    satisfy max(D_{e^ε}(P‖Q), D_{e^ε}(Q‖P)) ≤ δ(ε) with δ the certified variation-ratio bound
    (docs/theory.md, "Neutral-aware bound") for ⌊γ·n⌋ users, and δ(ε) = 0 for ε ≥ ε0 = ln p
    (post-processing of the victim's ε0-LDP report).

    Users with different randomizers: ``randomizer`` a
    :class:`~dpacct_shuffle.randomizers.PersonalizedShuffle` of groups (randomizer, count) and
    ``num_users`` their total (docs/theory.md, "Users with different randomizers").

    Under ``PoissonSampledDpEvent(γ_s, ShuffleEvent(R, n))`` ``num_users`` is the population the
    sample is drawn from (client sampling; replace-one and add/remove-one); see
    :func:`dpacct_shuffle.sampling.poisson_sampled_profile`.
    """

    randomizer: RandomizerDescription = attr.ib(converter=_randomizer)
    num_users: int = attr.ib(converter=_num_users)
    honest_fraction: float = attr.ib(default=1.0, converter=_honest_fraction)

    def __attrs_post_init__(self) -> None:
        if isinstance(self.randomizer, PersonalizedShuffle) and (
                self.num_users != self.randomizer.num_users):
            raise ValueError(f"num_users must equal the {self.randomizer.num_users} users of the "
                             f"PersonalizedShuffle's groups, got {self.num_users}")

    def profile(self) -> PrivacyProfile:
        """Deprecated: :func:`dpacct_shuffle.event_profiles.event_profile` (``event_profile(event)``)."""
        return _deprecated_profile(self)


@attr.s(frozen=True, slots=True, auto_attribs=True)
class ParallelCompositionEvent(dp_event.DpEvent):  # type: ignore[misc]  # (no type hints)
    """k queries answered in one shuffle round, each user answering exactly one of them.

    ``mode=RANDOM`` (default): each user independently picks branch j with probability π_j
    (``probabilities``, uniform if None), answers with ``branches[j]`` and sends (j, report); all
    ``num_users`` reports are shuffled together. This is one shuffle round of the composite
    randomizer of :func:`dpacct_shuffle.profiles.parallel_composite`:
    p = max_j p_j, β = Σ_j π_j β_j, q = max_j q_j, generic neutral share w/q (valid, proof there),
    tightened by the bounds that keep each branch's own structure — the composite matrix of finite
    branches on the product of their domains and the multi-level bound with each branch's levels
    (:func:`dpacct_shuffle.event_profiles.parallel_round_bound`,
    :mod:`dpacct_shuffle.randomizers.composite`). One branch is exactly
    a :class:`ShuffleEvent` of it.
    Compared with k separate rounds (each user answering every query), the victim sends a single
    report, so its privacy cost is one round at an averaged β instead of k rounds.

    ``mode=DISJOINT``: users are split into fixed groups (independently of the data, e.g. by user
    id), group j of size ``num_users[j]`` answers query j and each group is shuffled separately.
    A replace-one change touches one group only and the other groups' outputs do not depend on
    the victim, so δ(ε) = max_j δ_j(ε) with δ_j the bound of branch j for its group size.

    ``honest_fraction`` applies to every group (⌊γ·n⌋ honest users in the round or group).
    """

    branches: Tuple[RandomizerDescription, ...] = attr.ib(converter=_tuple_of_randomizers)
    num_users: Union[int, Tuple[int, ...]] = attr.ib(converter=_users_or_group_sizes)
    probabilities: Optional[Tuple[float, ...]] = attr.ib(default=None,
                                                         converter=_optional_probabilities)
    mode: ParallelMode = attr.ib(default=ParallelMode.RANDOM, converter=_parallel_mode)
    honest_fraction: float = attr.ib(default=1.0, converter=_honest_fraction)

    def __attrs_post_init__(self) -> None:
        if self.mode is ParallelMode.RANDOM:
            if not isinstance(self.num_users, int):
                raise TypeError("num_users must be one integer (all users) when mode='random'")
            check_probabilities(self.probabilities, len(self.branches))
            for j, branch in enumerate(self.branches):  # the composite needs (p, β, q) per branch
                variation_ratios_of(branch, f"branches[{j}]")
        else:
            if not isinstance(self.num_users, tuple) or len(self.num_users) != len(self.branches):
                raise ValueError("num_users must give one group size per branch when "
                                 f"mode='disjoint' ({len(self.branches)} branches), "
                                 f"got {self.num_users!r}")
            if self.probabilities is not None:
                raise ValueError("probabilities must be None when mode='disjoint'")

    def composite_randomizer(self) -> VariationRatio:
        """Deprecated: :func:`dpacct_shuffle.event_profiles.parallel_composite_randomizer`."""
        _warn("ParallelCompositionEvent.composite_randomizer()",
              "dpacct_shuffle.event_profiles.parallel_composite_randomizer(event)")
        from dpacct_shuffle import event_profiles
        return event_profiles.parallel_composite_randomizer(self)

    def composite_bound(self) -> ShuffleBound:
        """Deprecated: :func:`dpacct_shuffle.event_profiles.parallel_round_bound` with
        ``structure_max_users=profiles.PARALLEL_STRUCTURE_MAX_USERS``."""
        _warn("ParallelCompositionEvent.composite_bound()",
              "dpacct_shuffle.event_profiles.parallel_round_bound(event)")
        from dpacct_shuffle import event_profiles
        return event_profiles.parallel_round_bound(
            self, structure_max_users=PARALLEL_STRUCTURE_MAX_USERS)

    def profile(self) -> PrivacyProfile:
        """Deprecated: :func:`dpacct_shuffle.event_profiles.event_profile` (``event_profile(event)``)."""
        return _deprecated_profile(self)


@attr.s(frozen=True, slots=True, auto_attribs=True)
class LDPCompositionEvent(dp_event.DpEvent):  # type: ignore[misc]  # (no type hints)
    """A user's own local reports, released without a shuffler.

    ``epsilons[i]`` (and ``deltas[i]``, default 0) is the local guarantee of report/stage i.

    ``mode=SEQUENTIAL``: k independent reports. Every (ε, δ)-LDP randomizer pair is a
    post-processing of leaky randomized response (Kairouz, Oh & Viswanath, ICML 2015; for δ = 0
    binary randomized response, Feldman, McMillan & Talwar, FOCS 2021, Lemma 3.4), so the exact
    worst-case profile is the composition of the k leaky-RR privacy-loss distributions (losses
    ±ε_i, +∞ w.p. δ_i).

    ``mode=CHAINED``: one report R_k ∘ … ∘ R_1(x). A block of pure stages is ε-LDP with ε from
    Erlingsson et al., arXiv:2001.03618, Cor A.2 applied repeatedly, ln((e^{ε1+ε2} + 1)/(e^{ε1} +
    e^{ε2})); stages with δ > 0 contribute their leaky RR; the profile is the minimum over blocks
    (:func:`dpacct_shuffle.profiles.chained_ldp_profile`).

    Neighbouring relation: replace-one (the user's input is replaced by another value).
    """

    epsilons: Tuple[float, ...] = attr.ib(converter=_epsilons)
    mode: LDPCompositionMode = attr.ib(default=LDPCompositionMode.SEQUENTIAL,
                                       converter=_ldp_mode)
    deltas: Optional[Tuple[float, ...]] = attr.ib(default=None, converter=_optional_deltas)

    def __attrs_post_init__(self) -> None:
        if self.deltas is not None and len(self.deltas) != len(self.epsilons):
            raise ValueError(f"deltas must have one entry per epsilon ({len(self.epsilons)}), "
                             f"got {len(self.deltas)}")

    @property
    def delta_values(self) -> tuple[float, ...]:
        """Deprecated: :func:`dpacct_shuffle.ldp_events.ldp_deltas`."""
        _warn("LDPCompositionEvent.delta_values", "dpacct_shuffle.ldp_events.ldp_deltas(event)")
        return self.deltas if self.deltas is not None else (0.0,) * len(self.epsilons)

    def chained_profile(self) -> PrivacyProfile:
        """Deprecated: :func:`dpacct_shuffle.event_profiles.event_profile`."""
        _warn("LDPCompositionEvent.chained_profile()",
              "dpacct_shuffle.event_profiles.event_profile(event)")
        if self.mode is not LDPCompositionMode.CHAINED:
            raise ValueError("chained_profile is only defined for mode='chained'")
        from dpacct_shuffle import event_profiles
        return event_profiles.event_profile(self)


# ---------------------------------------------------------------------------------------------
# deprecated computing methods: thin delegations to dpacct_shuffle.event_profiles (the one place
# that turns an event into numbers), kept because earlier documentation showed them
# ---------------------------------------------------------------------------------------------


def _warn(old: str, new: str) -> None:
    warnings.warn(f"{old} is deprecated: events are data; use {new}", DeprecationWarning,
                  stacklevel=3)


def _deprecated_profile(event: dp_event.DpEvent) -> PrivacyProfile:
    _warn(f"{type(event).__name__}.profile()", "dpacct_shuffle.event_profiles.event_profile(event)")
    from dpacct_shuffle import event_profiles
    return event_profiles.event_profile(event)


__all__ = [
    "LDPCompositionEvent",
    "LDPCompositionMode",
    "ParallelCompositionEvent",
    "ParallelMode",
    "ShuffleEvent",
]
