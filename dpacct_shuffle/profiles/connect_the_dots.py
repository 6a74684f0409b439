"""Discretisation, second half: a profile grid → a pessimistic dp-accounting
``PrivacyLossDistribution`` by dp-accounting's own Connect-the-Dots
(``pld_pmf.create_pmf_pessimistic_connect_dots``, Doroshenko et al. 2022, Algorithm 1), and the
PLD of an (ε, δ)-DP pair.

Why a profile determines a dominating pair
------------------------------------------
Write x = e^ε and H(x) = D_x(P‖Q) for any pair (P, Q) of the mechanism. H is convex and
non-increasing in x ∈ [0, ∞), with H(0) = 1 (it is a supremum of the affine functions
P(S) − x·Q(S)). For x < 1 the identity ``D_x(P‖Q) = 1 − x + x·D_{1/x}(Q‖P)`` turns the bound on the
reverse direction into ``H(e^{−ε}) ≤ 1 − e^{−ε}(1 − δ(ε))`` ("mirrored" points). So on a grid of
losses ±ε_k the values y_k = δ(ε_k) (resp. the mirrored values) bound H from above at every grid
point, for every pair and both directions. The *lower convex hull* of the points
{(0, 1)} ∪ {(x_k, y_k)} is a convex function that is still ≥ H everywhere (H is convex and below
every point, and the hull is the largest convex minorant of the points). Connect-the-Dots
realises exactly that piecewise-linear-in-x curve as the hockey-stick curve of an explicit
discrete pair supported on the grid losses; because it dominates H on all of [0, ∞) — i.e. for all
real ε — it is a dominating pair in the sense of Zhu, Dong & Wang (AISTATS 2022), and dominating
pairs compose adaptively. That is what makes ``PLD.compose`` sound for these profiles.
"""

from __future__ import annotations

import numpy as np
from dp_accounting.pld import common as pld_common
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from numpy.typing import NDArray

from dpacct_shuffle.profiles.adaptive_grid import (
    DEFAULT_VALUE_DISCRETIZATION,
    ProfileGrid,
    profile_grid,
)
from dpacct_shuffle.profiles.privacy_profile import PrivacyProfile
from dpacct_shuffle.progress import ProgressOption

# relative margin on the values fed to Connect-the-Dots (float cancellation in the masses)
_CONNECT_DOTS_MARGIN = 1e-9


def _lower_convex_hull(xs: NDArray[np.float64], ys: NDArray[np.float64]) -> NDArray[np.int64]:
    """Indices of the lower convex hull of points sorted by x (strict vertices, as Andrew's
    monotone chain keeps them).

    A middle point on or above the segment joining its two neighbours (cross product ≤ 0) is not
    a strict vertex of the lower hull of any set containing those three points, so all such
    points are removed at once, with numpy, until every consecutive triple turns strictly left:
    the remaining points are exactly the strict vertices.
    """
    hull = np.arange(len(xs), dtype=np.int64)
    while len(hull) >= 3:
        o, a, b = hull[:-2], hull[1:-1], hull[2:]
        cross = (xs[a] - xs[o]) * (ys[b] - ys[o]) - (ys[a] - ys[o]) * (xs[b] - xs[o])
        keep = np.concatenate(([True], cross > 0.0, [True]))
        if keep.all():
            break
        hull = hull[keep]
    return hull


def connect_the_dots_points(grid: ProfileGrid) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Mirrored, convexified points (rounded losses, δ) fed to Connect-the-Dots.

    Positive losses carry δ(ε_k); negative losses −ε_k carry 1 − e^{−ε_k}(1 − δ(ε_k)) (the bound on
    D_{e^{−ε}} implied by the reverse direction); then the lower convex hull in (e^ε, δ) together
    with the anchor (0, 1) is kept. The values enter raised by a relative ``_CONNECT_DOTS_MARGIN``
    (1e-9): dp-accounting computes the masses from differences of neighbouring values and the
    hockey-stick divergence from sums of them, and in float arithmetic a PLD read back at a grid
    point fell below the value put in by 2.5e-11 relative (tests/test_round_plds.py).
    """
    k_pos = grid.rounded_epsilons
    d_pos = np.minimum(1.0, grid.deltas * (1.0 + _CONNECT_DOTS_MARGIN))
    eps_pos = k_pos * grid.discretization
    mirrored = np.minimum(1.0, -np.expm1(-eps_pos) + np.exp(-eps_pos) * d_pos)
    nonzero = k_pos > 0
    ks = np.concatenate([-k_pos[nonzero][::-1], k_pos])
    ys = np.concatenate([mirrored[nonzero][::-1], d_pos])
    xs = np.exp(ks * grid.discretization)
    hull = _lower_convex_hull(np.concatenate([[0.0], xs]), np.concatenate([[1.0], ys]))
    hull = hull[hull > 0] - 1
    return ks[hull], ys[hull]


def pld_from_grid(grid: ProfileGrid) -> pld_lib.PrivacyLossDistribution:
    """Pessimistic Connect-the-Dots PLD (symmetric) from a profile grid."""
    ks, ys = connect_the_dots_points(grid)
    pmf = pld_pmf.create_pmf_pessimistic_connect_dots(grid.discretization, ks, ys)
    return pld_lib.PrivacyLossDistribution(pmf)


def pld_from_profile(profile: PrivacyProfile,
                     value_discretization_interval: float | None = None,
                     progress: ProgressOption = False,
                     **grid_options: float) -> pld_lib.PrivacyLossDistribution:
    """Pessimistic ``PrivacyLossDistribution`` dominating every pair the profile covers.

    With an ε cap (an ε0-LDP randomizer) the PLD has no mass at +∞ and its losses are
    ≤ ε_cap + d. ``value_discretization_interval`` None: chosen from the profile's loss scale;
    PLDs that are composed with each other need one common interval (dp-accounting raises
    ValueError otherwise).
    ``grid_options`` are passed to :func:`profile_grid` (``epsilon_tolerance``, ``max_step``,
    ``min_delta``); so is ``progress`` (a tqdm count of the profile evaluations when True).
    """
    return pld_from_grid(profile_grid(profile, value_discretization_interval,
                                      progress=progress, **grid_options))


def ldp_pld(epsilon: float, delta: float = 0.0,
            value_discretization_interval: float = DEFAULT_VALUE_DISCRETIZATION
            ) -> pld_lib.PrivacyLossDistribution:
    """PLD of any (ε, δ)-DP pair: dp-accounting's ``from_privacy_parameters`` (leaky RR).

    Every (ε, δ)-DP pair is a post-processing of the leaky randomized response of Kairouz,
    Oh & Viswanath, ICML 2015 (infinite loss w.p. δ, ±ε otherwise), whose PLD this is (losses
    rounded up).
    """
    return pld_lib.from_privacy_parameters(
        pld_common.DifferentialPrivacyParameters(epsilon, delta), value_discretization_interval)
