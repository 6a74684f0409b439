"""Argument checks and the profile type shared by the lemmas of :mod:`dpacct_shuffle.lemmas`."""

from __future__ import annotations

import math
from collections.abc import Callable

from dpacct_shuffle.core.validation import check_range

Profile = Callable[[float], float]
"""A privacy profile: ``delta(eps) -> delta``, non-increasing, values in [0, 1]."""


def check_delta_closed(value: object, name: str = "delta") -> float:
    """δ ∈ [0, 1]."""
    return check_range(name, value, 0.0, 1.0)


def check_epsilon_or_inf(value: object, name: str) -> float:
    """ε ∈ [0, +inf] (+inf = no guarantee)."""
    return check_range(name, value, 0.0, math.inf)


def check_profile(profile: object) -> None:
    """``profile`` is a callable (TypeError naming the parameter otherwise)."""
    if not callable(profile):
        raise TypeError(f"profile must be a callable delta(eps) -> delta, got {type(profile).__name__}")


__all__ = ["Profile", "check_delta_closed", "check_epsilon_or_inf", "check_profile"]
