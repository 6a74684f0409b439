"""RDP conversion: an upper bound on the Rényi divergence of every pair a profile covers.

Rényi divergence from a profile
-------------------------------
For L = dP/dQ and a > 1, ``L^a = a(a−1)∫_0^∞ g^{a−2}(L − g)⁺ dg`` (Taylor with integral remainder
around 0), so ``E_Q[L^a] = a(a−1)∫_0^∞ g^{a−2} H_g dg`` with ``H_g = E_Q[(L − g)⁺] = D_g(P‖Q)``.
Splitting at g = 1 and using ``H_g = 1 − g + g·D_{1/g}(Q‖P)`` for g < 1
(``a(a−1)∫_0^1 g^{a−2}(1 − g) dg = 1``) and the substitution u = 1/g:

    E_Q[L^a] = 1 + a(a−1)·[ ∫_1^∞ g^{a−2} D_g(P‖Q) dg + ∫_1^∞ u^{−a−1} D_u(Q‖P) du ].

Both divergences are ≤ δ(ln g). δ is evaluated on the PLD grid; between grid points the convex,
non-increasing H is below the chord of the grid values, the chord is sampled on
``_RDP_SUBDIVISIONS`` sub-points per interval, and each sub-interval uses the value at its left
end (upper Riemann sum, exact weight integrals). The result bounds D_a in both directions; it is
finally capped by the Rényi divergence of binary randomized response with ε_cap, which dominates
every ε_cap-DP pair (Kairouz, Oh & Viswanath, ICML 2015; Feldman, McMillan & Talwar, FOCS 2021,
Lemma 3.4: the pair is a post-processing of it)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray
from scipy import special

from dpacct_shuffle.profiles.adaptive_grid import (
    DEFAULT_EPSILON_TOLERANCE,
    DEFAULT_MAX_STEP,
    DEFAULT_MIN_DELTA,
    ProfileGrid,
    profile_grid,
)
from dpacct_shuffle.profiles.privacy_profile import PrivacyProfile

_RDP_SUBDIVISIONS = 32


def randomized_response_rdp(epsilon0: float, orders: Sequence[float]) -> NDArray[np.float64]:
    """D_a of binary randomized response with parameter ε0 (both directions are equal), a ≥ 1.

    D_a = ln(π^a (1−π)^{1−a} + (1−π)^a π^{1−a})/(a − 1), π = e^ε0/(1 + e^ε0); at a = 1 the
    KL divergence (2π − 1)·ε0 = ε0·tanh(ε0/2); at a = ∞, ε0.
    """
    a = _check_orders(orders)
    if math.isinf(epsilon0):
        return np.full_like(a, np.inf)
    if epsilon0 == 0.0:
        return np.zeros_like(a)
    log_pi = -np.logaddexp(0.0, -epsilon0)
    log_rest = -np.logaddexp(0.0, epsilon0)
    finite = np.isfinite(a) & (a > 1.0)
    af = a[finite]
    result = np.full_like(a, epsilon0)  # a = ∞
    result[a == 1.0] = epsilon0 * math.tanh(epsilon0 / 2.0)
    result[finite] = np.logaddexp(af * log_pi + (1 - af) * log_rest,
                                  af * log_rest + (1 - af) * log_pi) / (af - 1.0)
    return result


def _check_orders(orders: Sequence[float]) -> NDArray[np.float64]:
    a = np.atleast_1d(np.asarray(orders, dtype=np.float64))
    if a.ndim != 1 or np.any(~(a >= 1.0)):
        raise ValueError(f"orders must all be >= 1 (Rényi orders), got {orders!r}")
    return a


def rdp_from_grid(grid: ProfileGrid, orders: Sequence[float],
                  epsilon_cap: float) -> NDArray[np.float64]:
    """Upper bound on D_a (both directions) at each order a ≥ 1 (see the module docstring).

    Orders a = 1 and a = ∞ use the randomized-response bound only.
    """
    all_orders = _check_orders(orders)
    pure = randomized_response_rdp(epsilon_cap, all_orders.tolist())
    integrable = np.isfinite(all_orders) & (all_orders > 1.0)
    if not grid.capped or not np.any(integrable):
        return pure
    a = all_orders[integrable]
    # chord in g = e^ε between grid points, sampled at sub-points: upper bounds on H at each point
    eps = grid.rounded_epsilons * grid.discretization
    g = np.exp(eps)
    t = np.linspace(0.0, 1.0, _RDP_SUBDIVISIONS, endpoint=False)
    g_left = (g[:-1, None] + (g[1:] - g[:-1])[:, None] * t[None, :]).ravel()
    h_left = (grid.deltas[:-1, None]
              + (grid.deltas[1:] - grid.deltas[:-1])[:, None] * t[None, :]).ravel()
    g_right = np.append(g_left[1:], g[-1])
    keep = h_left > 0.0
    log_gl, log_gr, log_h = np.log(g_left[keep]), np.log(g_right[keep]), np.log(h_left[keep])
    width = (log_gr - log_gl)[None, :]
    order = a[:, None]
    # ∫_{gl}^{gr} g^{a-2} dg = gr^{a-1}(1 - (gl/gr)^{a-1})/(a-1)
    log_w_forward = ((order - 1.0) * log_gr[None, :] + np.log(-np.expm1(-(order - 1.0) * width))
                     - np.log(order - 1.0))
    # ∫_{gl}^{gr} u^{-a-1} du = gl^{-a}(1 - (gl/gr)^{a})/a
    log_w_reverse = (-order * log_gl[None, :] + np.log(-np.expm1(-order * width)) - np.log(order))
    log_sum = special.logsumexp(
        np.concatenate([log_w_forward + log_h[None, :], log_w_reverse + log_h[None, :]], axis=1),
        axis=1) + np.log(order[:, 0]) + np.log(order[:, 0] - 1.0)
    profile_bound = np.logaddexp(0.0, log_sum) / (a - 1.0)
    result = pure.copy()
    result[integrable] = np.minimum(profile_bound, pure[integrable])
    return np.asarray(result, dtype=np.float64)


def rdp_from_profile(profile: PrivacyProfile, orders: Sequence[float],
                     value_discretization_interval: float | None = None, *,
                     epsilon_tolerance: float = DEFAULT_EPSILON_TOLERANCE,
                     max_step: float = DEFAULT_MAX_STEP,
                     min_delta: float = DEFAULT_MIN_DELTA) -> NDArray[np.float64]:
    """Upper bound on the Rényi divergence (both directions) at ``orders`` (all ≥ 1); the grid
    options are those of :func:`dpacct_shuffle.profiles.profile_grid`."""
    grid = profile_grid(profile, value_discretization_interval, epsilon_tolerance=epsilon_tolerance,
                        max_step=max_step, min_delta=min_delta)
    return rdp_from_grid(grid, orders, profile.epsilon_cap)
