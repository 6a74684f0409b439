"""Plain-JSON form of the privacy events a :class:`ShufflePrivacyAccountant` composes.

dp-accounting events are written by :mod:`dpacct_shuffle.event_serialization` (randomizers in the
JSON form of :mod:`dpacct_shuffle.randomizers.serialization`: a catalog call, an analyzed matrix or
a VariationRatio's fields); this module adds only what is Flower's:

* Flower's ``GaussianPrivacyEvent``, which is not a DpEvent:
  ``{"flower_event": "GaussianPrivacyEvent", "noise_multiplier": ..., "sample_size": ...,
  "population_size": ...}``;
* the events the accountant accepts: :func:`check_serializable` raises TypeError for any other
  event, and for a randomizer without a JSON form (e.g. a custom ``delta(ε, n)`` object).

Python's ``float`` ``repr`` round-trips through JSON, so the rebuilt events are equal to the
originals and give the same ε.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Union

from dp_accounting import dp_event
from flwr.serverapp import GaussianPrivacyEvent

from dpacct_shuffle.event_serialization import event_from_dict, event_to_dict
from dpacct_shuffle.events import LDPCompositionEvent, ParallelCompositionEvent, ShuffleEvent
from dpacct_shuffle.randomizers.serialization import JSONValue

_ACCEPTED = ("GaussianPrivacyEvent, ShuffleEvent, ParallelCompositionEvent, LDPCompositionEvent, "
            "and PoissonSampledDpEvent / SampledWithoutReplacementDpEvent around a shuffle event")
_GAUSSIAN_FIELDS = ("noise_multiplier", "sample_size", "population_size")

FlowerEvent = Union[GaussianPrivacyEvent, dp_event.DpEvent]


def _accepted(event: object) -> bool:
    if isinstance(event, (GaussianPrivacyEvent, ShuffleEvent, ParallelCompositionEvent,
                          LDPCompositionEvent)):
        return True
    sampled = (dp_event.PoissonSampledDpEvent, dp_event.SampledWithoutReplacementDpEvent)
    return isinstance(event, sampled) and isinstance(event.event, (ShuffleEvent,
                                                                   ParallelCompositionEvent))


def event_to_json(event: FlowerEvent) -> dict[str, JSONValue]:
    """Plain-data form of ``event`` (module docstring); TypeError for an event the accountant does not
    compose or a randomizer without a JSON form."""
    if not _accepted(event):
        raise TypeError(f"{type(event).__name__} cannot be composed by ShufflePrivacyAccountant; "
                        f"accepted: {_ACCEPTED}")
    if isinstance(event, GaussianPrivacyEvent):
        return {"flower_event": "GaussianPrivacyEvent",
                **{name: getattr(event, name) for name in _GAUSSIAN_FIELDS}}
    return event_to_dict(event)


def check_serializable(event: FlowerEvent) -> None:
    """TypeError unless :func:`event_to_json` accepts ``event``."""
    event_to_json(event)


def event_from_json(value: object) -> FlowerEvent:
    """Inverse of :func:`event_to_json` (ValueError for anything else)."""
    if not isinstance(value, Mapping):
        raise ValueError(f"not a stored event: {value!r}")
    if "flower_event" not in value:
        try:
            return event_from_dict(value)
        except TypeError as error:
            raise ValueError(f"stored event {value!r} is invalid: {error}") from None
    if value["flower_event"] != "GaussianPrivacyEvent" or set(value) != {"flower_event",
                                                                         *_GAUSSIAN_FIELDS}:
        raise ValueError(f"stored Flower event must be {{'flower_event': 'GaussianPrivacyEvent', "
                         f"{', '.join(repr(name) for name in _GAUSSIAN_FIELDS)}}}, got {value!r}")
    try:
        return GaussianPrivacyEvent(**{name: value[name] for name in _GAUSSIAN_FIELDS})
    except TypeError as error:
        raise ValueError(f"stored event {value!r} is invalid: {error}") from None


__all__ = ["check_serializable", "event_from_json", "event_to_json"]
