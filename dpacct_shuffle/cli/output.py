"""Output of the command line: printed numbers rounded outward, JSON payloads, randomizer labels.

Printed upper bounds are rounded *up* to the displayed significant digits and lower bounds rounded
*down* (:func:`format_upper`, :func:`format_lower`), so a printed bound is still a bound; JSON
carries the library's floats unrounded, non-finite floats as ``null``.
"""

from __future__ import annotations

import decimal
import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:  # the command line imports the library only when a command runs (lean --help)
    from dpacct_shuffle.randomizers.base import Randomizer
    from dpacct_shuffle.randomizers.personalized import PersonalizedShuffle

DISPLAY_DIGITS = 6


def _round_significant(value: float, digits: int, rounding: str) -> str:
    if not math.isfinite(value):
        return repr(value)
    if value == 0.0:
        return "0"
    exact = decimal.Decimal(value)  # the float's exact binary value, no rounding yet
    quantum = decimal.Decimal(1).scaleb(exact.adjusted() - digits + 1)
    rounded = exact.quantize(quantum, rounding=rounding).normalize()
    scientific = rounded.adjusted() < -4 or rounded.adjusted() >= digits
    return format(rounded, "e" if scientific else "f")


def format_upper(value: float, digits: int = DISPLAY_DIGITS) -> str:
    """``value`` to ``digits`` significant digits, rounded towards +∞ (printed upper bounds stay
    upper bounds: the printed number is ≥ the computed one)."""
    return _round_significant(float(value), digits, decimal.ROUND_CEILING)


def format_lower(value: float, digits: int = DISPLAY_DIGITS) -> str:
    """``value`` to ``digits`` significant digits, rounded towards −∞ (printed lower bounds stay
    lower bounds)."""
    return _round_significant(float(value), digits, decimal.ROUND_FLOOR)


def describe_randomizer(randomizer: Randomizer | PersonalizedShuffle) -> str:
    """``name(key=value, ...)`` of a randomizer and its parameters; for users with different
    randomizers ``personalized[name(...) x count, ...]``."""
    from dpacct_shuffle.randomizers.personalized import PersonalizedShuffle

    if isinstance(randomizer, PersonalizedShuffle):
        inner = ", ".join(f"{describe_randomizer(member)} x {count}"
                          for member, count in randomizer.groups)
        return f"personalized[{inner}]"
    params = ", ".join(f"{k}={v}" for k, v in randomizer.parameters.items())
    return f"{randomizer.name}({params})"


def _json_default(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item"):
        return value.item()  # numpy scalars
    return str(value)


def _finite_or_none(value: object) -> object:
    """Replace non-finite floats by None (JSON has no inf/nan), recursively."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _finite_or_none(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_none(v) for v in value]
    return value


def emit_json(payload: Mapping[str, object], out: TextIO) -> None:
    """Write ``payload`` to ``out`` as one indented JSON object."""
    out.write(json.dumps(_finite_or_none(payload), default=_json_default, indent=2) + "\n")


__all__ = ["DISPLAY_DIGITS", "describe_randomizer", "emit_json", "format_lower", "format_upper"]
