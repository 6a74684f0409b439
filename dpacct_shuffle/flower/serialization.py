"""Plain-JSON form of the privacy events a :class:`ShufflePrivacyAccountant` composes.

Every event becomes a dict with a ``"type"`` key; randomizers become their origin:

* a catalog entry ``{"catalog": "krr", "args": [2.0, 10], "kwargs": {}}`` (the call that built
  it; it is rebuilt by calling :data:`dpacct_shuffle.randomizers.CATALOG` again);
* an analyzed matrix ``{"matrix": [[...], ...], "name": "..."}`` (rebuilt by ``from_matrix``'s
  unpickling path, which analyzes the stored matrix as it is).

Python's ``float`` ``repr`` round-trips through JSON, so the rebuilt events are equal to the
originals and give the same ε. Other randomizers (a bare ``VariationRatio``, custom ``delta(ε, n)``
objects) have no plain-data form: :func:`check_serializable` raises TypeError for them.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from dp_accounting import dp_event
from flwr.serverapp import GaussianPrivacyEvent

from dpacct_shuffle.events import (
    LDPCompositionEvent,
    ParallelCompositionEvent,
    ShuffleEvent,
)
from dpacct_shuffle.randomizers import CATALOG, Randomizer
from dpacct_shuffle.randomizers import matrix as matrix_module

_SERIALIZABLE = ("GaussianPrivacyEvent, ShuffleEvent, ParallelCompositionEvent, "
                 "LDPCompositionEvent, and PoissonSampledDpEvent / "
                 "SampledWithoutReplacementDpEvent around a shuffle event")


def _randomizer_to_json(randomizer: object) -> dict[str, Any]:
    if isinstance(randomizer, Randomizer):
        try:
            rebuild, _ = randomizer.__reduce__()
        except TypeError:
            rebuild = None
        if isinstance(rebuild, functools.partial):
            name = getattr(rebuild.func, "__name__", None)
            if name in CATALOG and CATALOG[name] is rebuild.func:
                return {"catalog": name, "args": list(rebuild.args),
                        "kwargs": dict(rebuild.keywords)}
            if rebuild.func is matrix_module._reanalyze:
                matrix, label = rebuild.args
                return {"matrix": matrix.tolist(), "name": label}
    raise TypeError(f"randomizer {randomizer!r} has no plain-data form: only catalog entries "
                    "(dpacct_shuffle.randomizers.CATALOG) and from_matrix randomizers can be "
                    "stored in a ShufflePrivacyAccountant state_dict")


def _randomizer_from_json(value: object) -> Randomizer:
    if isinstance(value, Mapping) and set(value) == {"catalog", "args", "kwargs"}:
        name = value["catalog"]
        if name not in CATALOG:
            raise ValueError(f"unknown catalog randomizer {name!r}")
        return CATALOG[name](*value["args"], **value["kwargs"])
    if isinstance(value, Mapping) and set(value) == {"matrix", "name"}:
        return matrix_module._reanalyze(value["matrix"], value["name"])
    raise ValueError(f"not a stored randomizer: {value!r}")


def event_to_json(event: object) -> dict[str, Any]:
    """Plain-data form of ``event`` (TypeError for anything outside the module docstring's list)."""
    if isinstance(event, GaussianPrivacyEvent):
        return {"type": "gaussian", "noise_multiplier": event.noise_multiplier,
                "sample_size": event.sample_size, "population_size": event.population_size}
    if isinstance(event, ShuffleEvent):
        return {"type": "shuffle", "randomizer": _randomizer_to_json(event.randomizer),
                "num_users": event.num_users, "honest_fraction": event.honest_fraction}
    if isinstance(event, ParallelCompositionEvent):
        users = event.num_users
        return {"type": "parallel",
                "branches": [_randomizer_to_json(branch) for branch in event.branches],
                "num_users": users if isinstance(users, int) else list(users),
                "probabilities": None if event.probabilities is None else list(event.probabilities),
                "mode": event.mode.value, "honest_fraction": event.honest_fraction}
    if isinstance(event, LDPCompositionEvent):
        return {"type": "ldp", "epsilons": list(event.epsilons), "mode": event.mode.value,
                "deltas": None if event.deltas is None else list(event.deltas)}
    if isinstance(event, dp_event.PoissonSampledDpEvent) and _is_shuffle(event.event):
        return {"type": "poisson_sampled", "sampling_probability": event.sampling_probability,
                "event": event_to_json(event.event)}
    if isinstance(event, dp_event.SampledWithoutReplacementDpEvent) and _is_shuffle(event.event):
        return {"type": "sampled_without_replacement",
                "source_dataset_size": event.source_dataset_size,
                "sample_size": event.sample_size, "event": event_to_json(event.event)}
    raise TypeError(f"{type(event).__name__} cannot be composed by ShufflePrivacyAccountant; "
                    f"accepted: {_SERIALIZABLE}")


def _is_shuffle(event: object) -> bool:
    return isinstance(event, (ShuffleEvent, ParallelCompositionEvent))


def check_serializable(event: object) -> None:
    """TypeError unless :func:`event_to_json` accepts ``event``."""
    event_to_json(event)


def event_from_json(value: object) -> Any:
    """Inverse of :func:`event_to_json` (ValueError for anything else)."""
    if not isinstance(value, Mapping) or "type" not in value:
        raise ValueError(f"not a stored event: {value!r}")
    kind = value["type"]
    fields = {key: item for key, item in value.items() if key != "type"}
    try:
        if kind == "gaussian":
            return GaussianPrivacyEvent(**fields)
        if kind == "shuffle":
            return ShuffleEvent(_randomizer_from_json(fields["randomizer"]), fields["num_users"],
                                fields["honest_fraction"])
        if kind == "parallel":
            return ParallelCompositionEvent(
                [_randomizer_from_json(branch) for branch in fields["branches"]],
                fields["num_users"], fields["probabilities"], fields["mode"],
                fields["honest_fraction"])
        if kind == "ldp":
            return LDPCompositionEvent(fields["epsilons"], fields["mode"], fields["deltas"])
        if kind == "poisson_sampled":
            return dp_event.PoissonSampledDpEvent(fields["sampling_probability"],
                                                  event_from_json(fields["event"]))
        if kind == "sampled_without_replacement":
            return dp_event.SampledWithoutReplacementDpEvent(
                fields["source_dataset_size"], fields["sample_size"],
                event_from_json(fields["event"]))
    except (KeyError, TypeError) as error:
        raise ValueError(f"stored event {value!r} is invalid: {error}") from None
    raise ValueError(f"unknown stored event type {kind!r}")


__all__ = ["check_serializable", "event_from_json", "event_to_json"]
