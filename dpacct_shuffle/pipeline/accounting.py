"""Accounting a pipeline with :class:`~dpacct_shuffle.accountants.ShufflePLDAccountant`: every
step alone, then all steps composed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from dp_accounting import dp_event

from dpacct_shuffle.pipeline.loading import load_pipeline
from dpacct_shuffle.pipeline.steps import (
    DPSGDStep,
    LDPStep,
    ParallelStep,
    PersonalizedShuffleStep,
    Pipeline,
    ShuffleStep,
    _Step,
)
from dpacct_shuffle.progress import ProgressOption, ProgressReporter

if TYPE_CHECKING:  # imported when an accountant is built (dp-accounting's PLD modules are heavy)
    from dpacct_shuffle.accountants import ShufflePLDAccountant


@dataclass(frozen=True)
class StepAccount:
    """ε at the pipeline's δ and/or δ at its ε of one step alone (all ``count`` repetitions)."""

    index: int
    type: str
    count: int
    description: str
    epsilon: Optional[float]
    delta: Optional[float]

    def as_dict(self) -> dict[str, object]:
        """Plain-data form (for JSON)."""
        return {"index": self.index, "type": self.type, "count": self.count,
                "description": self.description, "epsilon": self.epsilon, "delta": self.delta}


@dataclass(frozen=True)
class PipelineAccount:
    """The accounting of a pipeline: the composed total and every step alone.

    ``epsilon`` is the certified ε at ``target_delta`` (None if the pipeline gives no δ) and
    ``delta`` the certified δ at ``target_epsilon``; the composed total is at most the sum of the
    steps' ε (basic composition) and usually far less.
    """

    target_delta: Optional[float]
    target_epsilon: Optional[float]
    epsilon: Optional[float]
    delta: Optional[float]
    steps: tuple[StepAccount, ...]

    def as_dict(self) -> dict[str, object]:
        """Plain-data form (for JSON)."""
        return {"target_delta": self.target_delta, "target_epsilon": self.target_epsilon,
                "epsilon": self.epsilon, "delta": self.delta,
                "steps": [step.as_dict() for step in self.steps]}


def describe_step(step: _Step) -> str:
    """A short label: the step type and its randomizer(s) or noise."""
    kind = step.type  # type: ignore[attr-defined]
    if isinstance(step, ShuffleStep):
        randomizer = step.randomizer.randomizer
        params = ", ".join(f"{k}={v}" for k, v in randomizer.parameters.items())
        sampled = ("" if step.sampling_probability is None
                   else f", sampling_probability={step.sampling_probability:g}")
        if step.sample_size is not None:
            sampled = f", cohort of {step.sample_size}"
        return f"{kind} {randomizer.name}({params}), n = {step.users}{sampled}"
    if isinstance(step, PersonalizedShuffleStep):
        groups = ", ".join(f"{group.randomizer.randomizer.name}("
                           + ", ".join(f"{k}={v}" for k, v in group.randomizer.randomizer.parameters.items())
                           + f") x{group.users}" for group in step.groups)
        return f"{kind} [{groups}]"
    if isinstance(step, ParallelStep):
        names = ", ".join(branch.randomizer.name for branch in step.branches)
        return f"{kind} {step.mode} [{names}], n = {step.users}"
    if isinstance(step, LDPStep):
        return f"{kind} {step.mode} epsilons = {step.epsilons}"
    if isinstance(step, DPSGDStep):
        return (f"{kind} sigma = {step.noise_multiplier:g}, q = {step.sampling_probability:g}, "
                f"{step.steps} steps")
    return f"{kind} sigma = {step.noise_multiplier:g}"  # type: ignore[attr-defined]


def _accountant(pipeline: Pipeline, events: list[dp_event.DpEvent], where: str
                ) -> ShufflePLDAccountant:
    from dpacct_shuffle.accountants import ShufflePLDAccountant

    accountant = ShufflePLDAccountant(
        value_discretization_interval=pipeline.value_discretization_interval, progress=False)
    event = dp_event.ComposedDpEvent(events)
    if not accountant.supports(event):
        raise ValueError(f"{where}: ShufflePLDAccountant does not support this event: {event!r}")
    try:
        accountant.compose(event)
    except MemoryError:
        raise ValueError(f"{where}: the privacy-loss distribution does not fit in memory; lower "
                         "'count'/'steps' or raise 'value_discretization_interval'") from None
    return accountant


def _values(pipeline: Pipeline, accountant: ShufflePLDAccountant
            ) -> tuple[Optional[float], Optional[float]]:
    epsilon = None if pipeline.delta is None else float(accountant.get_epsilon(pipeline.delta))
    delta = None if pipeline.epsilon is None else float(accountant.get_delta(pipeline.epsilon))
    return epsilon, delta


def account_pipeline(pipeline: Pipeline | Mapping[str, Any] | str | Path, *,
                     progress: ProgressOption = False) -> PipelineAccount:
    """Account ``pipeline`` (a :class:`Pipeline`, or anything :func:`load_pipeline` takes) with
    :class:`~dpacct_shuffle.accountants.ShufflePLDAccountant`: every step alone, then the
    composition of all steps. ``progress=True`` shows a tqdm bar on stderr (one tick per step and
    one for the total); a callback ``progress(done, total)`` is called instead if given."""
    model = pipeline if isinstance(pipeline, Pipeline) else load_pipeline(pipeline)
    results: list[StepAccount] = []
    several = len(model.steps) > 1
    with ProgressReporter(len(model.steps) + int(several), "account", progress,
                          unit="step") as bar:
        for index, step in enumerate(model.steps):
            epsilon, delta = _values(model, _accountant(model, [step.event], f"steps[{index}]"))
            results.append(StepAccount(index, step.type, step.count,  # type: ignore[attr-defined]
                                       describe_step(step), epsilon, delta))
            bar.tick()
        if several:
            epsilon, delta = _values(model, _accountant(model, [s.event for s in model.steps],
                                                        "pipeline"))
            bar.tick()
    return PipelineAccount(model.delta, model.epsilon, epsilon, delta, tuple(results))
