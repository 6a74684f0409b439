"""Input validation shared by every layer: clear errors naming the parameter and its range."""

from __future__ import annotations

import math
import numbers
import sys

import numpy as np

PROBABILITY_SUM_TOLERANCE = 1e-9
# numbers of users enter float arithmetic (n·p, n/…); above 2**53 consecutive integers are no longer
# distinct floats, and no population is that large
MAX_NUM_USERS = 2**53


def check_real(name: str, value: object) -> float:
    """Return ``value`` as a float, or raise TypeError/ValueError (bool, NaN and numbers beyond the
    float range, such as the integer 10**400, rejected)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    try:
        result = float(value)
    except OverflowError:
        raise ValueError(f"{name} must be within the float range (|{name}| < {sys.float_info.max!r}), "
                         "got an integer too large to convert") from None
    if math.isnan(result):
        raise ValueError(f"{name} must not be NaN")
    return result


def check_range(
    name: str,
    value: object,
    low: float = -math.inf,
    high: float = math.inf,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Validate a real number in [low, high] (or open ends); the message states the range."""
    result = check_real(name, value)
    too_low = result <= low if low_open else result < low
    too_high = result >= high if high_open else result > high
    if too_low or too_high:
        left = "(" if low_open else "["
        right = ")" if high_open else "]"
        raise ValueError(f"{name} must be in {left}{low}, {high}{right}, got {result!r}")
    return result


def check_epsilon(value: object, name: str = "epsilon") -> float:
    """ε ≥ 0 and finite."""
    return check_range(name, value, 0.0, math.inf, high_open=True)


# Local budgets ε0 of the closed forms (catalog entries, VariationRatio.worst_case): exp(ε0) and
# its products with domain sizes must stay finite floats, and e^ε0 − 1 computed as exp(ε0) − 1
# keeps a relative error below 1e-10 (u/ε0).
MIN_EPSILON0 = 1e-6
MAX_EPSILON0 = 500.0


def check_epsilon0(value: object, name: str = "epsilon0") -> float:
    """A local budget ε0 (or a metric distance in the exponent) in [MIN_EPSILON0, MAX_EPSILON0]."""
    return check_range(name, value, MIN_EPSILON0, MAX_EPSILON0)


def check_delta(value: object, name: str = "delta") -> float:
    """0 < δ < 1."""
    return check_range(name, value, 0.0, 1.0, low_open=True, high_open=True)


def check_num_users(value: object, name: str = "n") -> int:
    """A positive integer number of users, at most ``MAX_NUM_USERS`` = 2**53 (floats such as 1e6
    accepted when integral)."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a positive integer, got bool")
    if isinstance(value, numbers.Integral):
        result = int(value)
    elif isinstance(value, numbers.Real) and math.isfinite(float(value)) and float(value).is_integer():
        result = int(float(value))
    else:
        raise TypeError(f"{name} must be a positive integer, got {value!r}")
    if result < 1:
        raise ValueError(f"{name} must be a positive integer (>= 1), got {result}")
    if result > MAX_NUM_USERS:
        raise ValueError(f"{name} must be an integer in [1, 2**53 = {MAX_NUM_USERS}], "
                         f"got an integer of {result.bit_length()} bits")
    return result


def check_distribution(name: str, values: object) -> np.ndarray:
    """A non-empty 1-D vector of finite probabilities ≥ 0 summing to 1 (± PROBABILITY_SUM_TOLERANCE)."""
    try:
        array = np.asarray(values, dtype=float)
    except OverflowError:  # an integer beyond the float range
        raise ValueError(f"{name} must contain finite probabilities in [0, 1]") from None
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a 1-D array of probabilities: {exc}") from None
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of probabilities, got shape {array.shape}")
    if not np.all(np.isfinite(array)) or np.any(array < 0.0):
        raise ValueError(f"{name} must contain finite probabilities in [0, 1]")
    total = math.fsum(array.tolist())
    if abs(total - 1.0) > PROBABILITY_SUM_TOLERANCE:
        raise ValueError(f"{name} must sum to 1 (within {PROBABILITY_SUM_TOLERANCE}), got {total!r}")
    return array


def check_stochastic_matrix(name: str, matrix: object, *, min_rows: int = 1) -> np.ndarray:
    """A 2-D row-stochastic array (rows = inputs, columns = outputs) with at least ``min_rows`` rows;
    each row is checked by :func:`check_distribution`."""
    try:
        array = np.asarray(matrix, dtype=float)
    except OverflowError:  # an integer beyond the float range
        raise ValueError(f"{name} must contain finite probabilities in [0, 1]") from None
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a 2-D row-stochastic array: {exc}") from None
    if array.ndim != 2 or array.shape[0] < min_rows or array.shape[1] < 1:
        raise ValueError(f"{name} must be a 2-D array (inputs x outputs) with at least {min_rows} "
                         f"row(s) and one column, got shape {array.shape}")
    for row_index, row in enumerate(array):
        check_distribution(f"{name}[{row_index}]", row)
    return array
