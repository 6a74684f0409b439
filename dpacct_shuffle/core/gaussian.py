"""The exact hockey-stick profile of the Gaussian mechanism, with certified rounding.

For noise N(0, σ²·I) and two inputs at ℓ2 distance Δ, the pair N(0, σ²) vs N(Δ, σ²) (on the line
through the two means; the orthogonal coordinates have the same law under both) has, in both
directions, with μ = Δ/σ,

    δ_μ(ε) = Φ(μ/2 − ε/μ) − e^ε · Φ(−μ/2 − ε/μ)

(Balle & Wang, "Improving the Gaussian Mechanism for Differential Privacy", ICML 2018, Theorem 8).
δ_μ is non-decreasing in μ and non-increasing in ε. It is evaluated in the log domain as
e^A·(−expm1(ε + B − A)) with A, B the ``log_ndtr`` of the two arguments; scipy's ``log_ndtr`` is
accurate to a few ulps, and the margin e^A·m, m = 1e-12·(1 + |A| + |B| + ε), covers the absolute
error of A and B. Upper values are that plus the margin, moved up by four ulps; lower values
minus it, moved down (floored at 0).
"""

from __future__ import annotations

import math

from scipy import special

from dpacct_shuffle.core.rounding import step_down, step_up
from dpacct_shuffle.core.validation import check_epsilon, check_range

#: Absolute error allowed for scipy's ``log_ndtr``, relative to the size of its arguments.
LOG_NDTR_ERROR = 1e-12


def check_gaussian_mu(value: object, name: str = "mu") -> float:
    """μ = Δ/σ > 0 and finite (sensitivity over noise standard deviation)."""
    return check_range(name, value, 0.0, math.inf, low_open=True, high_open=True)


def gaussian_delta_and_margin(shift: float, scaled: float, epsilon: float) -> tuple[float, float]:
    """(value, margin) of Φ(shift − scaled) − e^ε·Φ(−shift − scaled), shift = μ/2, scaled = ε/μ,
    evaluated in the log domain (module docstring): the exact value lies within ± margin."""
    log_a = float(special.log_ndtr(shift - scaled))
    log_b = float(special.log_ndtr(-shift - scaled))
    value = math.exp(log_a) * (-math.expm1(min(epsilon + log_b - log_a, 0.0)))
    margin = math.exp(log_a) * LOG_NDTR_ERROR * (1.0 + abs(log_a) + abs(log_b) + epsilon)
    return value, margin


def gaussian_delta(epsilon: float, mu: float, *, upper: bool = True) -> float:
    """δ_μ(ε) of the Gaussian mechanism (module docstring), rounded up (``upper``) or down."""
    eps = check_epsilon(epsilon)
    scale = check_gaussian_mu(mu)
    if math.isinf(eps):  # no mass at infinite loss
        return 0.0
    value, margin = gaussian_delta_and_margin(scale / 2.0, eps / scale, eps)
    if upper:
        return min(1.0, step_up(value + margin))
    return max(0.0, step_down(value - margin))


__all__ = ["LOG_NDTR_ERROR", "check_gaussian_mu", "gaussian_delta", "gaussian_delta_and_margin"]
