"""JSON form of DpEvents — dp-accounting's own and :mod:`dpacct_shuffle.events` — and back.

Encoding is dp-accounting's ``DpEvent.to_named_tuple()`` written out as plain data: each event is
an object with its ``module_name``, ``class_name`` and one key per attrs field, nested events are
objects of the same form, sequences are lists, enum fields (``mode``) their string value, and a
randomizer field the randomizer's JSON form (:mod:`dpacct_shuffle.randomizers.serialization`).

    {"module_name": "dp_accounting.dp_event", "class_name": "SelfComposedDpEvent",
     "event": {"module_name": "dpacct_shuffle.events", "class_name": "ShuffleEvent",
               "randomizer": {"kind": "catalog", "name": "krr",
                              "arguments": {"epsilon0": 2.0, "domain_size": 100}},
               "num_users": 10000, "honest_fraction": 1.0},
     "count": 5}

Decoding mirrors ``DpEvent.from_named_tuple`` — the fields are decoded recursively and the class
is called with them, so every converter and check of the event applies — with two differences:
only DpEvent classes of ``dp_accounting.dp_event`` and ``dpacct_shuffle.events`` are resolved
(``from_named_tuple`` imports whatever module a file names), and string fields are passed as
strings (``from_named_tuple`` rebuilds every sequence, turning a string into its characters).
Unknown fields are ValueErrors naming the class and its fields.
"""

from __future__ import annotations

import enum
import importlib
import json
import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import attr
import numpy as np
from dp_accounting import dp_event

from dpacct_shuffle.core.bound import VariationRatio
from dpacct_shuffle.core.json_text import check_json_depth, loads_strict
from dpacct_shuffle.randomizers.base import Randomizer
from dpacct_shuffle.randomizers.personalized import PersonalizedShuffle
from dpacct_shuffle.randomizers.serialization import (
    JSONValue,
    decode_float,
    plain_value,
    randomizer_from_dict,
    randomizer_to_dict,
)

EVENT_MODULES = ("dp_accounting.dp_event", "dpacct_shuffle.events")
_HEADER = ("module_name", "class_name")


def _encode(value: object, path: str) -> JSONValue:
    if isinstance(value, dp_event.DpEventNamedTuple):
        return {key: _encode(getattr(value, key), f"{path}.{key}") for key in value._fields}
    if isinstance(value, (Randomizer, VariationRatio, PersonalizedShuffle)):
        return randomizer_to_dict(value)
    if isinstance(value, enum.Enum):
        return _encode(value.value, path)
    if value is None or isinstance(value, (bool, str, numbers.Real, np.integer, np.floating)):
        return plain_value(path, value)
    if isinstance(value, Mapping):
        return {str(key): _encode(item, f"{path}[{key!r}]") for key, item in value.items()}
    if isinstance(value, Sequence):
        return [_encode(item, f"{path}[{i}]") for i, item in enumerate(value)]
    raise TypeError(f"{path} = {value!r} has no JSON form")


def event_to_dict(event: dp_event.DpEvent) -> dict[str, JSONValue]:
    """The JSON form (module docstring) of ``event``; TypeError if a field has none (e.g. a
    randomizer built directly with the Randomizer constructor)."""
    if not isinstance(event, dp_event.DpEvent):
        raise TypeError(f"event must be a dp_accounting DpEvent, got {type(event).__name__}")
    encoded = _encode(event.to_named_tuple(), "event")
    assert isinstance(encoded, dict)
    return encoded


def _event_class(data: Mapping[str, Any], path: str) -> type[dp_event.DpEvent]:
    module_name, class_name = data["module_name"], data["class_name"]
    if module_name not in EVENT_MODULES:
        raise ValueError(f"{path}.module_name must be one of {list(EVENT_MODULES)}, got {module_name!r}")
    cls = getattr(importlib.import_module(module_name), str(class_name), None)
    if not (isinstance(cls, type) and issubclass(cls, dp_event.DpEvent) and attr.has(cls)
            and cls is not dp_event.DpEvent):
        raise ValueError(f"{path}.class_name: {module_name} has no DpEvent class {class_name!r}")
    return cls


def _decode(value: object, path: str) -> Any:
    if isinstance(value, Mapping):
        if "class_name" in value or "module_name" in value:
            return _decode_event(value, path)
        if "kind" in value:
            return randomizer_from_dict(value)
        return {key: _decode(item, f"{path}[{key!r}]") for key, item in value.items()}
    if isinstance(value, list):
        return [_decode(item, f"{path}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, float) and math.isnan(value):  # never a valid field of an event
        raise ValueError(f"{path} must not be NaN")
    if value in ("inf", "-inf"):
        return decode_float(path, value)
    return value


def _decode_event(data: Mapping[str, Any], path: str) -> dp_event.DpEvent:
    missing = [key for key in _HEADER if key not in data]
    if missing:
        raise ValueError(f"{path} lacks {missing}: an event's JSON form names its module and class")
    cls = _event_class(data, path)
    fields = [field.name for field in attr.fields(cls)]
    unknown = sorted(set(data) - set(fields) - set(_HEADER))
    if unknown:
        raise ValueError(f"{path} ({cls.__name__}): unknown fields {unknown} "
                         f"(fields: {', '.join(fields) or 'none'})")
    values = {key: _decode(item, f"{path}.{key}") for key, item in data.items() if key not in _HEADER}
    try:
        return cls(**values)
    except (ValueError, TypeError) as error:
        raise type(error)(f"{path} ({cls.__name__}): {error}") from None


def event_from_dict(data: Mapping[str, Any]) -> dp_event.DpEvent:
    """Rebuild an event from :func:`event_to_dict`'s form; it compares equal to the original."""
    if not isinstance(data, Mapping):
        raise TypeError(f"an event's JSON form is an object, got {type(data).__name__}")
    check_json_depth("event", dict(data))
    return _decode_event(data, "event")


def event_to_json(event: dp_event.DpEvent) -> str:
    """:func:`event_to_dict` as strict JSON text."""
    return json.dumps(event_to_dict(event), allow_nan=False)


def event_from_json(text: str) -> dp_event.DpEvent:
    """Inverse of :func:`event_to_json` (invalid JSON is a ValueError)."""
    return event_from_dict(loads_strict(text, "event JSON"))


__all__ = [
    "EVENT_MODULES",
    "event_from_dict",
    "event_from_json",
    "event_to_dict",
    "event_to_json",
]
