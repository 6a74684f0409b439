"""The pipeline schema's steps (shuffle, personalized shuffle, parallel, LDP, DP-SGD, Gaussian),
each turned into its dp-accounting event, and :class:`Pipeline`, the validated whole."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Literal, Optional, Protocol, Union

from dp_accounting import dp_event
from pydantic import BeforeValidator, Discriminator, PrivateAttr, Tag, model_validator
from pydantic_core import PydanticCustomError

from dpacct_shuffle.events import LDPCompositionEvent, ParallelCompositionEvent, ShuffleEvent
from dpacct_shuffle.pipeline.fields import (
    MAX_DISCRETIZATION,
    MIN_DISCRETIZATION,
    STEP_TYPES,
    Count,
    Probability,
    Real,
    Users,
    _invalid,
    _Strict,
    _users_or_groups,
)
from dpacct_shuffle.pipeline.randomizer_models import RandomizerSpec
from dpacct_shuffle.randomizers.base import Randomizer
from dpacct_shuffle.randomizers.personalized import PersonalizedShuffle


class RandomizerEntry(Protocol):
    """What a step reads from its validated randomizer entries (every member of
    :data:`~dpacct_shuffle.pipeline.randomizer_models.RandomizerSpec`)."""

    @property
    def randomizer(self) -> Randomizer: ...


# The field types below carry pydantic validators built at run time, which type checkers cannot
# read: they see the validated values' own types.
if TYPE_CHECKING:
    _RandomizerField = RandomizerEntry
    _HonestFraction = float
    _NoiseMultiplier = float
    _LocalEpsilon = float
    _LocalDelta = float
    _TargetDelta = float
    _TargetEpsilon = float
    _Discretization = float
else:
    _RandomizerField = RandomizerSpec
    _HonestFraction = Real(0.0, 1.0, low_open=True)
    _NoiseMultiplier = Real(0.0, math.inf, low_open=True, high_open=True)
    _LocalEpsilon = Real(0.0, math.inf, high_open=True)
    _LocalDelta = Real(0.0, 1.0, high_open=True)
    _TargetDelta = Real(0.0, 1.0, low_open=True, high_open=True)
    _TargetEpsilon = Real(0.0, math.inf, high_open=True)
    _Discretization = Real(MIN_DISCRETIZATION, MAX_DISCRETIZATION)


class _Step(_Strict):
    """Base of the step models: ``count`` repetitions of one event."""

    count: Count = 1
    _event: dp_event.DpEvent = PrivateAttr()

    def single_event(self) -> dp_event.DpEvent:
        """The event of one repetition."""
        raise NotImplementedError

    @model_validator(mode="after")
    def _build(self) -> "_Step":
        try:
            event = self.single_event()
        except (ValueError, TypeError) as exc:
            raise _invalid(exc) from None
        self._event = dp_event.SelfComposedDpEvent(event, self.count) if self.count > 1 else event
        return self

    @property
    def event(self) -> dp_event.DpEvent:
        """The dp-accounting event of this step (``count`` repetitions)."""
        return self._event


class ShuffleStep(_Step):
    """One shuffle round among ``users`` users (:class:`~dpacct_shuffle.events.ShuffleEvent`);
    with ``sampling_probability`` each user takes part with that probability
    (``PoissonSampledDpEvent``, client sampling); with ``sample_size`` m, exactly m of the
    ``users`` users are drawn uniformly without replacement and their reports shuffled
    (``SampledWithoutReplacementDpEvent(users, m, ShuffleEvent(randomizer, m))``, a fixed-size
    cohort). At most one of the two."""

    type: Literal["shuffle"]
    randomizer: _RandomizerField
    users: Users
    honest_fraction: _HonestFraction = 1.0
    sampling_probability: Optional[Probability] = None
    sample_size: Optional[Users] = None

    @model_validator(mode="before")
    @classmethod
    def _one_sampling(cls, data: object) -> object:
        if isinstance(data, Mapping) and "sampling_probability" in data and "sample_size" in data:
            raise PydanticCustomError(
                "conflict", "give 'sampling_probability' (Poisson sampling) or 'sample_size' "
                            "(a fixed-size cohort), not both")
        return data

    def single_event(self) -> dp_event.DpEvent:
        if self.sample_size is not None:
            if self.sample_size > self.users:
                raise ValueError(f"sample_size must be <= users ({self.users}), "
                                 f"got {self.sample_size}")
            return dp_event.SampledWithoutReplacementDpEvent(
                self.users, self.sample_size,
                ShuffleEvent(self.randomizer.randomizer, self.sample_size, self.honest_fraction))
        event: dp_event.DpEvent = ShuffleEvent(self.randomizer.randomizer, self.users,
                                               self.honest_fraction)
        if self.sampling_probability is not None:
            event = dp_event.PoissonSampledDpEvent(self.sampling_probability, event)
        return event


class PersonalizedGroup(_Strict):
    """One group of a ``personalized_shuffle`` step: ``users`` users applying ``randomizer``."""

    randomizer: _RandomizerField
    users: Users


class PersonalizedShuffleStep(_Step):
    """One shuffle round of several groups of users, each with its own randomizer
    (:class:`~dpacct_shuffle.randomizers.PersonalizedShuffle` in a
    :class:`~dpacct_shuffle.events.ShuffleEvent` of all their users); with
    ``sampling_probability`` each user takes part with that probability
    (``PoissonSampledDpEvent``, client sampling)."""

    type: Literal["personalized_shuffle"]
    groups: list[PersonalizedGroup]
    honest_fraction: _HonestFraction = 1.0
    sampling_probability: Optional[Probability] = None

    def single_event(self) -> dp_event.DpEvent:
        round_ = PersonalizedShuffle([(group.randomizer.randomizer, group.users)
                                      for group in self.groups])
        event: dp_event.DpEvent = ShuffleEvent(round_, round_.num_users, self.honest_fraction)
        if self.sampling_probability is not None:
            event = dp_event.PoissonSampledDpEvent(self.sampling_probability, event)
        return event


class ParallelStep(_Step):
    """One round answering several queries
    (:class:`~dpacct_shuffle.events.ParallelCompositionEvent`): ``mode = "random"`` (each user
    picks a branch, ``users`` is one number) or ``"disjoint"`` (``users`` lists the group sizes)."""

    type: Literal["parallel"]
    branches: list[_RandomizerField]
    users: Annotated[object, BeforeValidator(_users_or_groups)]
    probabilities: Optional[list[Probability]] = None
    mode: Literal["random", "disjoint"] = "random"
    honest_fraction: _HonestFraction = 1.0

    def single_event(self) -> dp_event.DpEvent:
        if self.mode == "random" and isinstance(self.users, list):
            raise ValueError("users must be one number of users when mode = 'random' (a list of "
                             "group sizes needs mode = 'disjoint')")
        if self.mode == "disjoint":
            if not isinstance(self.users, list) or len(self.users) != len(self.branches):
                raise ValueError(f"users must list one group size per branch "
                                 f"({len(self.branches)}) when mode = 'disjoint', got {self.users!r}")
            if self.probabilities is not None:
                raise ValueError("probabilities cannot be given when mode = 'disjoint' (each "
                                 "group answers its own branch)")
        users = tuple(self.users) if isinstance(self.users, list) else self.users
        probabilities = None if self.probabilities is None else tuple(self.probabilities)
        return ParallelCompositionEvent(tuple(b.randomizer for b in self.branches), users,
                                        probabilities, self.mode, self.honest_fraction)


class LDPStep(_Step):
    """A user's local reports without a shuffler
    (:class:`~dpacct_shuffle.events.LDPCompositionEvent`)."""

    type: Literal["ldp"]
    epsilons: list[_LocalEpsilon]
    deltas: Optional[list[_LocalDelta]] = None
    mode: Literal["sequential", "chained"] = "sequential"

    def single_event(self) -> dp_event.DpEvent:
        deltas = None if self.deltas is None else tuple(self.deltas)
        return LDPCompositionEvent(tuple(self.epsilons), self.mode, deltas)


class DPSGDStep(_Step):
    """``steps`` Poisson-sampled Gaussian steps (DP-SGD):
    ``SelfComposed(PoissonSampled(Gaussian(noise_multiplier)), steps)``. ``count`` is accepted as
    a synonym of ``steps``; giving both is an error."""

    type: Literal["dpsgd"]
    noise_multiplier: _NoiseMultiplier
    sampling_probability: Probability
    steps: Count

    @model_validator(mode="before")
    @classmethod
    def _steps_or_count(cls, data: object) -> object:
        if isinstance(data, Mapping):
            if "steps" in data and "count" in data:
                raise PydanticCustomError("conflict", "give 'steps' or 'count' (a synonym), not both")
            if "count" in data:
                data = {("steps" if key == "count" else key): value for key, value in data.items()}
        return data

    def single_event(self) -> dp_event.DpEvent:
        return dp_event.SelfComposedDpEvent(
            dp_event.PoissonSampledDpEvent(self.sampling_probability,
                                           dp_event.GaussianDpEvent(self.noise_multiplier)),
            self.steps)


class GaussianStep(_Step):
    """One Gaussian release (``GaussianDpEvent``; replace-one: sensitivity 2 in the PLD)."""

    type: Literal["gaussian"]
    noise_multiplier: _NoiseMultiplier

    def single_event(self) -> dp_event.DpEvent:
        return dp_event.GaussianDpEvent(self.noise_multiplier)


_STEP_MODELS: dict[str, type[_Step]] = {"shuffle": ShuffleStep,
                                        "personalized_shuffle": PersonalizedShuffleStep,
                                        "parallel": ParallelStep,
                                        "ldp": LDPStep, "dpsgd": DPSGDStep,
                                        "gaussian": GaussianStep}


def _step_tag(value: object) -> Optional[str]:
    if isinstance(value, _Step):
        return "step:" + str(value.type)  # type: ignore[attr-defined]
    kind = value.get("type") if isinstance(value, Mapping) else None
    if isinstance(kind, str) and kind in _STEP_MODELS:
        return "step:" + kind
    return None


if TYPE_CHECKING:  # the discriminated union built at run time: a step model to type checkers
    Step = _Step
else:
    Step = Annotated[
        Union[tuple(Annotated[model, Tag("step:" + name)] for name, model in _STEP_MODELS.items())],
        Discriminator(_step_tag, custom_error_type="step_type",
                      custom_error_message="'type' must be one of "
                      + ", ".join(map(repr, STEP_TYPES))),
    ]


class Pipeline(_Strict):
    """A validated pipeline: ``steps`` and the target ``delta`` and/or ``epsilon``;
    ``value_discretization_interval`` None lets the accountant choose the PLD grid."""

    steps: list[Step]
    delta: Optional[_TargetDelta] = None
    epsilon: Optional[_TargetEpsilon] = None
    value_discretization_interval: Optional[_Discretization] = None

    @model_validator(mode="after")
    def _has_target(self) -> "Pipeline":
        if not self.steps:
            raise PydanticCustomError("empty", "'steps' must list at least one step")
        if self.delta is None and self.epsilon is None:
            raise PydanticCustomError("target", "give 'delta' (to report epsilon) and/or "
                                      "'epsilon' (to report delta)")
        return self

    def event(self) -> dp_event.ComposedDpEvent:
        """The dp-accounting event of the whole pipeline (its steps composed)."""
        return dp_event.ComposedDpEvent([step.event for step in self.steps])
