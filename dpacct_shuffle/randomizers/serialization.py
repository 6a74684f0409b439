"""JSON form of randomizers: plain data (dicts, lists, strings, numbers) and back, equal by value.

Five forms, told apart by ``"kind"`` (``docs/serialization.md``):

* ``{"kind": "catalog", "name": "krr", "arguments": {"epsilon0": 2.0, "domain_size": 100}}`` — a
  catalog entry and the arguments it was called with (by parameter name); decoding reads name
  and arguments with the one randomizer schema (:func:`~dpacct_shuffle.randomizers.schema.describe`:
  the same names, aliases, kinds and messages as spec strings, pipeline files and the command
  line) and calls the entry again, so every check of the constructor applies.
  ``approximate_ldp``, ``gaussian`` and ``gaussian_vector``
  (:data:`~dpacct_shuffle.randomizers.schema.APPROXIMATE_FACTORIES`) take the same form.
* ``{"kind": "approximate", "randomizer": {...}, "delta0": 1e-9}`` — :func:`approximate` of the
  randomizer given by its own JSON form.
* ``{"kind": "matrix", "name": "matrix", "matrix": [[...], ...]}`` — a :func:`from_matrix`
  randomizer: its analyzed (row-renormalised) matrix, analyzed again as it is on decoding.
* ``{"kind": "variation_ratio", "p": ..., "beta": ..., "q": ..., "q1": ..., "neutral_share": ...,
  "neutral_weight": ...}`` — a :class:`~dpacct_shuffle.VariationRatio` by its fields.
* ``{"kind": "personalized", "groups": [{"randomizer": {...}, "users": 500}, ...]}`` — a
  :class:`~dpacct_shuffle.randomizers.PersonalizedShuffle` (users with different randomizers): each
  group's randomizer in its own JSON form and its number of users, in the round's group order.

Floats are written with ``repr`` precision (the JSON text round-trips them exactly); an infinite
value (p = ∞) is the string ``"inf"``, so the text is strict JSON. A Randomizer built directly with
its constructor records no origin and has no JSON form (TypeError), as it cannot be pickled.
"""

from __future__ import annotations

import functools
import inspect
import json
import math
import numbers
from collections.abc import Mapping
from typing import Any, Union

import numpy as np

from dpacct_shuffle.core.bound import VariationRatio
from dpacct_shuffle.core.json_text import check_json_depth, loads_strict
from dpacct_shuffle.randomizers import matrix as matrix_module
from dpacct_shuffle.randomizers.approximate import approximate
from dpacct_shuffle.randomizers.base import Randomizer
from dpacct_shuffle.randomizers.personalized import PersonalizedShuffle
from dpacct_shuffle.randomizers.schema import SCHEMAS, describe, matrix_rows

JSONValue = Union[None, bool, int, float, str, list["JSONValue"], dict[str, "JSONValue"]]
SerializableRandomizer = Union[Randomizer, VariationRatio, PersonalizedShuffle]

_VARIATION_RATIO_FIELDS = ("p", "beta", "q", "q1", "neutral_share", "neutral_weight")


def encode_float(value: float) -> Union[float, str]:
    """A float as JSON data: itself if finite, ``"inf"``/``"-inf"`` otherwise (NaN refused)."""
    number = float(value)
    if math.isnan(number):
        raise ValueError("NaN has no JSON form")
    if math.isinf(number):
        return "inf" if number > 0 else "-inf"
    return number


def decode_float(name: str, value: object) -> float:
    """Inverse of :func:`encode_float` (also accepts JSON integers); TypeError otherwise."""
    if value in ("inf", "-inf"):
        return math.inf if value == "inf" else -math.inf
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number or 'inf', got {value!r}")
    return float(value)


def plain_value(name: str, value: object) -> JSONValue:
    """A constructor argument as JSON data: None, bool, int, str or a float (:func:`encode_float`)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (numbers.Integral, np.integer)):
        return int(value)
    if isinstance(value, (numbers.Real, np.floating)):
        return encode_float(float(value))
    raise TypeError(f"{name} = {value!r} has no JSON form (numbers, strings, booleans, None only)")


def randomizer_to_dict(randomizer: SerializableRandomizer) -> dict[str, JSONValue]:
    """The JSON form (module docstring) of a catalog entry, a ``from_matrix`` randomizer, a
    VariationRatio or a PersonalizedShuffle of such randomizers. TypeError for anything else."""
    if isinstance(randomizer, PersonalizedShuffle):
        return {"kind": "personalized",
                "groups": [{"randomizer": randomizer_to_dict(member), "users": int(count)}
                           for member, count in randomizer.groups]}
    if isinstance(randomizer, VariationRatio):
        return {"kind": "variation_ratio",
                **{field: encode_float(value)
                   for field, value in zip(_VARIATION_RATIO_FIELDS, randomizer._key())}}
    if not isinstance(randomizer, Randomizer):
        raise TypeError("only catalog Randomizers, from_matrix Randomizers, VariationRatio and "
                        f"PersonalizedShuffle have a JSON form, got {type(randomizer).__name__}")
    rebuild = randomizer._rebuild
    if not isinstance(rebuild, functools.partial):
        raise TypeError(f"{randomizer!r} has no JSON form: only catalog entries and from_matrix "
                        "randomizers record how to rebuild themselves")
    if rebuild.func is matrix_module._reanalyze:
        matrix, name = rebuild.args
        return {"kind": "matrix", "name": name,
                "matrix": [[float(x) for x in row] for row in np.asarray(matrix).tolist()]}
    if rebuild.func is approximate:
        inner, delta0 = rebuild.args
        return {"kind": "approximate", "randomizer": randomizer_to_dict(inner),
                "delta0": plain_value("approximate(delta0)", delta0)}
    name = getattr(rebuild.func, "__name__", "")
    if name not in SCHEMAS or SCHEMAS[name].factory is not rebuild.func:
        raise TypeError(f"{randomizer!r} has no JSON form: it is not a catalog entry")
    bound = inspect.signature(rebuild.func).bind(*rebuild.args, **rebuild.keywords)
    return {"kind": "catalog", "name": name,
            "arguments": {key: plain_value(f"{name}({key})", value)
                          for key, value in bound.arguments.items()}}


def _check_keys(data: Mapping[str, Any], required: tuple[str, ...], optional: tuple[str, ...] = ()
                ) -> None:
    missing = [key for key in required if key not in data]
    unknown = sorted(set(data) - set(required) - set(optional))
    if missing or unknown:
        allowed = ", ".join(required + optional)
        problems = ([f"missing {missing}"] if missing else []) + ([f"unknown {unknown}"] if unknown else [])
        raise ValueError(f"randomizer of kind {data.get('kind')!r}: {'; '.join(problems)} "
                         f"(allowed keys: {allowed})")


def randomizer_from_dict(data: Mapping[str, Any]) -> SerializableRandomizer:
    """Rebuild a randomizer from :func:`randomizer_to_dict`'s form (validated: unknown keys, wrong
    types and out-of-range values are ValueError/TypeError naming them)."""
    if not isinstance(data, Mapping):
        raise TypeError(f"a randomizer's JSON form is an object, got {type(data).__name__}")
    check_json_depth("randomizer", dict(data))
    kind = data.get("kind")
    if kind == "variation_ratio":
        _check_keys(data, ("kind",) + _VARIATION_RATIO_FIELDS)
        values = {field: decode_float(field, data[field]) for field in _VARIATION_RATIO_FIELDS}
        return VariationRatio.from_fields(**values)
    if kind == "matrix":
        _check_keys(data, ("kind", "name", "matrix"))
        if not isinstance(data["name"], str):
            raise TypeError(f"name must be a string, got {data['name']!r}")
        # the form checked by the schema, then that it is stochastic
        return matrix_module._reanalyze(np.asarray(matrix_rows(data["matrix"])), data["name"])
    if kind == "approximate":
        _check_keys(data, ("kind", "randomizer", "delta0"))
        inner = randomizer_from_dict(data["randomizer"])
        if not isinstance(inner, Randomizer):
            raise TypeError(f"randomizer of approximate must be a Randomizer's form, got {inner!r}")
        return approximate(inner, decode_float("delta0", data["delta0"]))
    if kind == "catalog":
        _check_keys(data, ("kind", "name", "arguments"))
        arguments = data["arguments"]
        if not isinstance(arguments, Mapping):
            raise TypeError(f"arguments must be an object, got {type(arguments).__name__}")
        values = {key: decode_float(key, value) if value in ("inf", "-inf") else value
                  for key, value in arguments.items()}
        return describe(data["name"], values).build()
    if kind == "personalized":
        _check_keys(data, ("kind", "groups"))
        return _personalized_from_groups(data["groups"])
    raise ValueError("kind must be one of 'catalog', 'approximate', 'matrix', 'variation_ratio', "
                     f"'personalized', got {kind!r}")


def _personalized_from_groups(groups: object) -> PersonalizedShuffle:
    if not isinstance(groups, list):
        raise TypeError(f"groups of a personalized round must be a list, got {type(groups).__name__}")
    pairs = []
    for index, group in enumerate(groups):
        if not isinstance(group, Mapping):
            raise TypeError(f"groups[{index}] must be an object with randomizer and users, got {group!r}")
        unknown = sorted(set(group) - {"randomizer", "users"})
        missing = [key for key in ("randomizer", "users") if key not in group]
        if unknown or missing:
            raise ValueError(f"groups[{index}]: the keys are randomizer and users "
                             f"(missing {missing}, unknown {unknown})")
        member = randomizer_from_dict(group["randomizer"])
        if not isinstance(member, Randomizer):
            raise TypeError(f"groups[{index}].randomizer must be a Randomizer's form, got {member!r}")
        pairs.append((member, group["users"]))
    return PersonalizedShuffle(pairs)


def randomizer_to_json(randomizer: SerializableRandomizer) -> str:
    """:func:`randomizer_to_dict` as strict JSON text."""
    return json.dumps(randomizer_to_dict(randomizer), allow_nan=False)


def randomizer_from_json(text: str) -> SerializableRandomizer:
    """Inverse of :func:`randomizer_to_json` (invalid JSON is a ValueError)."""
    return randomizer_from_dict(loads_strict(text, "randomizer JSON"))


__all__ = [
    "randomizer_from_dict",
    "randomizer_from_json",
    "randomizer_to_dict",
    "randomizer_to_json",
]
