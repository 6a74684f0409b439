"""Rounding toward safety: the one place where a computed float is moved to the safe side.

A bound computed in floating point can land a few units in the last place (ulps) below the real
number it stands for. Every guarantee of the package is therefore moved outward by one of these
helpers (docs/theory.md, "Floating point"):

* :func:`step_up` / :func:`step_down` move a value by whole float steps (``math.nextafter``);
* :func:`round_loss_up` / :func:`round_loss_down` do the same for a privacy loss ε or δ ≥ 0,
  with the conventions of a loss (0 may be exact, values near underflow become :data:`TINY_LOSS`);
* :func:`ratio_up` / :func:`ratio_down` scale a ratio bound (e^ε0, a quotient of probabilities,
  a rate) by a relative ``ulps``·2⁻⁵², which covers the relative error of a few float operations.
"""

from __future__ import annotations

import math

# machine epsilon: the distance from 1.0 to the next float, 2u for the unit roundoff u = 2**-53
ULP = 2.0**-52
# float steps by which guarantees are moved outward (covers the few roundings of a closed form)
GUARANTEE_ULPS = 4
# a loss at or below this is reported as this: absolute (subnormal) rounding errors dominate there
TINY_LOSS = 1e-290


def step_up(value: float, steps: int = GUARANTEE_ULPS) -> float:
    """``value`` moved ``steps`` floats toward +inf (``math.nextafter``); ±inf stays where it is."""
    if math.isinf(value):
        return value
    for _ in range(steps):
        value = math.nextafter(value, math.inf)
    return value


def step_down(value: float, steps: int = GUARANTEE_ULPS) -> float:
    """``value`` moved ``steps`` floats toward −inf (``math.nextafter``); ±inf stays where it is."""
    if math.isinf(value):
        return value
    for _ in range(steps):
        value = math.nextafter(value, -math.inf)
    return value


def round_loss_up(value: float, steps: int = GUARANTEE_ULPS, *, zero_is_exact: bool = True) -> float:
    """A privacy loss (ε or δ, ≥ 0) rounded up: :func:`step_up` by ``steps`` floats.

    Values at or below :data:`TINY_LOSS` become :data:`TINY_LOSS`, a safe upper bound where
    absolute rounding errors dominate. A computed 0 is kept only when the caller knows the exact
    value is 0 (``zero_is_exact``); otherwise it may be an underflow and becomes TINY_LOSS.
    +inf (no guarantee) is returned unchanged.
    """
    if math.isinf(value):
        return value
    if value <= TINY_LOSS:
        return 0.0 if (value == 0.0 and zero_is_exact) else TINY_LOSS
    return step_up(value, steps)


def round_loss_down(value: float, steps: int = GUARANTEE_ULPS) -> float:
    """A privacy loss (≥ 0) rounded down by ``steps`` floats; 0 and ±inf are left unchanged."""
    if value == 0.0:
        return value
    return step_down(value, steps)


def ratio_up(ratio: float, ulps: int = GUARANTEE_ULPS) -> float:
    """``ratio·(1 + ulps·2⁻⁵²)``: a ratio bound computed with a few roundings (exp(ε0), a quotient),
    scaled above the true ratio.

    Each correctly rounded operation has relative error ≤ 2⁻⁵³, so a value from at most ``ulps``
    such operations (libm's exp is within 1 ulp) lies below the returned one.
    """
    return ratio * (1.0 + ulps * ULP)


def ratio_down(ratio: float, ulps: int = GUARANTEE_ULPS) -> float:
    """``ratio·(1 − ulps·2⁻⁵²)``: the mirror of :func:`ratio_up`, for a quantity whose smaller
    value is the safe one (a share, a weight)."""
    return ratio * (1.0 - ulps * ULP)


__all__ = ["GUARANTEE_ULPS", "TINY_LOSS", "ULP", "ratio_down", "ratio_up", "round_loss_down",
           "round_loss_up", "step_down", "step_up"]
