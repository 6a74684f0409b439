"""The pipeline schema's building blocks: its limits, one validator per kind of number (messages
state the allowed range) and the strict base model (unknown keys rejected, the allowed ones
listed)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, model_validator
from pydantic_core import PydanticCustomError

#: Largest number of users of a step (and of a parallel group).
MAX_USERS = 10**15
#: Largest ``count`` of a step and ``steps`` of a ``dpsgd`` step: the support of a k-fold composed
#: privacy-loss distribution grows with k (a composition that still does not fit in memory is
#: reported as a ValueError, never a MemoryError).
MAX_COUNT = 10**6
#: Range of ``value_discretization_interval`` (the PLD grid; finer grids need more memory).
MIN_DISCRETIZATION, MAX_DISCRETIZATION = 1e-6, 1.0
STEP_TYPES = ("shuffle", "personalized_shuffle", "parallel", "ldp", "dpsgd", "gaussian")


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _real_validator(low: float, high: float, low_open: bool, high_open: bool
                    ) -> Callable[[object], float]:
    left, right = "(" if low_open else "[", ")" if high_open else "]"
    allowed = (f"a real number in {left}{low:g}, {high:g}{right}"
               if math.isfinite(low) or math.isfinite(high) else "a finite real number")

    def validate(value: object) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise PydanticCustomError("number", "must be {allowed}, got {got}",
                                      {"allowed": allowed, "got": _shown(value)})
        try:
            number = float(value)
        except OverflowError:  # an integer beyond float range
            number = math.inf if value > 0 else -math.inf
        inside = (math.isfinite(number)
                  and (number > low if low_open else number >= low)
                  and (number < high if high_open else number <= high))
        if not inside:
            raise PydanticCustomError("number", "must be {allowed}, got {got}",
                                      {"allowed": allowed, "got": _shown(value)})
        return number

    return validate


def _power_of_ten(value: int) -> str:
    exponent = len(str(value)) - 1
    return f"10^{exponent}" if value >= 10**6 and value == 10**exponent else str(value)


def _integer_validator(low: int, high: int) -> Callable[[object], int]:
    allowed = f"an integer in [{low}, {_power_of_ten(high)}]"

    def validate(value: object) -> int:
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)  # JSON and TOML write 1e6 as a float
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise PydanticCustomError("integer", "must be {allowed}, got {got}",
                                      {"allowed": allowed, "got": _shown(value)})
        return value

    return validate


def Real(low: float = -math.inf, high: float = math.inf, *, low_open: bool = False,
         high_open: bool = False) -> Any:
    """A finite real number in the given range (booleans, NaN and ±inf rejected)."""
    return Annotated[float, BeforeValidator(_real_validator(low, high, low_open, high_open))]


def Integer(low: int, high: int) -> Any:
    """An integer in [low, high] (integral floats such as ``1e6`` accepted, booleans rejected)."""
    return Annotated[int, BeforeValidator(_integer_validator(low, high))]


def _users_or_groups(value: object) -> int | list[int]:
    """``users`` of a parallel step: one number of users, or a list of group sizes."""
    if isinstance(value, list):
        if not value:
            raise PydanticCustomError("integer", "must list at least one group size")
        return [_USERS(item) for item in value]
    return _USERS(value)


_USERS = _integer_validator(1, MAX_USERS)
Probability = Real(0.0, 1.0)
Users = Integer(1, MAX_USERS)
Count = Integer(1, MAX_COUNT)


def _unknown_key_error(key: object, allowed: list[str]) -> PydanticCustomError:
    return PydanticCustomError("unknown_key", "unknown key {key} (allowed keys here: {allowed})",
                               {"key": _shown(key), "allowed": ", ".join(sorted(allowed))})


def _invalid(exc: Exception) -> PydanticCustomError:
    return PydanticCustomError("invalid", "{message}", {"message": " ".join(str(exc).split())})


class _Strict(BaseModel):
    """Base of every pipeline model: unknown keys rejected with the allowed ones listed."""

    model_config = ConfigDict(extra="forbid", strict=True, arbitrary_types_allowed=True)

    @model_validator(mode="before")
    @classmethod
    def _reject_unknown_keys(cls, data: object) -> object:
        if isinstance(data, Mapping):
            allowed = list(cls.model_fields)
            for key in data:
                if key not in allowed:
                    raise _unknown_key_error(key, allowed)
        return data


def __getattr__(name: str) -> int:
    """Deprecated names of this module (PEP 562)."""
    if name == "MAX_INTEGER_PARAMETER":
        warnings.warn("dpacct_shuffle.pipeline.fields.MAX_INTEGER_PARAMETER is deprecated: the "
                      "integer parameters of catalog entries are checked by the randomizer schema "
                      "(dpacct_shuffle.randomizers.schema) and each entry's own range",
                      DeprecationWarning, stacklevel=2)
        return 10**15
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
