"""The shuffled binary RR curve at every ε (binary_rr_curve.BinaryRRCurve) and one round's PLD.

Reference values: the exact worst case over every configuration of the other users, computed here
from scipy.stats binomial pmfs (independently of the package's laws), the certified intervals of
binary_rr_exact.BinaryRRProfile at large n, and the core's shuffled(n).epsilon(δ).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats

from dpacct_shuffle import randomizers
from dpacct_shuffle.core.bound import VariationRatio
from dpacct_shuffle.accountants import ShufflePLDAccountant
from dpacct_shuffle.events import ShuffleEvent
from dpacct_shuffle.profiles import round_randomizer
from dpacct_shuffle.randomizers.binary_rr_curve import (CURVE_MAX_USERS, BinaryRRCurve,
                                                        BinaryRRExactUpper, binary_rr_curve)
from dpacct_shuffle.randomizers.binary_rr_exact import BinaryRRProfile


class ExactWorstCase:
    """The exact shuffled binary RR δ(ε): max over m = 0..n−1 (others holding 1) and both
    directions of the hockey-stick divergence of the count, from scipy.stats binomial pmfs."""

    def __init__(self, eps0: float, n: int) -> None:
        self.eps0 = eps0
        self.a = math.exp(eps0) / (math.exp(eps0) + 1.0)
        laws = [np.convolve(stats.binom.pmf(np.arange(m + 1), m, self.a),
                            stats.binom.pmf(np.arange(n - m), n - 1 - m, 1.0 - self.a))
                for m in range(n)]
        self.here = np.array([np.concatenate([law, [0.0]]) for law in laws])  # S(c), c = 0..n
        self.below = np.array([np.concatenate([[0.0], law]) for law in laws])  # S(c − 1)

    def deltas(self, epsilons: np.ndarray) -> np.ndarray:
        a, values = self.a, []
        for eps in np.asarray(epsilons, dtype=float):
            # P − e^ε·Q per count as coefficients of S(c) and S(c − 1) (the victim holding 0 keeps
            # its 0 w.p. a): a − e^ε(1 − a) = −a·expm1(ε − ε0) (exactly 0 at ε0), (1 − a) − e^ε·a
            kept, flipped = -a * math.expm1(eps - self.eps0), (1.0 - a) - math.exp(eps) * a
            forward = np.maximum(kept * self.here + flipped * self.below, 0.0).sum(axis=1)
            backward = np.maximum(flipped * self.here + kept * self.below, 0.0).sum(axis=1)
            values.append(max(forward.max(), backward.max()))
        return np.array(values)

    def delta(self, epsilon: float) -> float:
        return float(self.deltas(np.array([epsilon]))[0])


def epsilon_at(delta_of: Callable[[float], float], delta: float, high: float) -> float:
    """Smallest ε (bisection, 60 steps) with a non-increasing δ(ε) ≤ delta."""
    low = 0.0
    for _ in range(60):
        middle = 0.5 * (low + high)
        if delta_of(middle) > delta:
            low = middle
        else:
            high = middle
    return high


@pytest.mark.parametrize("eps0,n", [(1.0, 2), (0.5, 7), (1.0, 30), (3.0, 60), (0.5, 200),
                                    (3.0, 200)])
def test_curve_is_above_the_exact_worst_case_and_close_to_it(eps0: float, n: int) -> None:
    curve = BinaryRRCurve(eps0, n)
    exact = ExactWorstCase(eps0, n)
    if n >= 200:
        assert curve.blocks  # the block bounds are in use
    rng = np.random.default_rng(n)
    grid = curve.epsilons[::2]  # every other grid point, the midpoints between them, random ε
    epsilons = np.sort(np.concatenate([grid, 0.5 * (grid[1:] + grid[:-1]),
                                       rng.uniform(0.0, eps0, 100), [eps0, 1.5 * eps0]]))
    reference = exact.deltas(epsilons)
    ours = curve.deltas(epsilons)
    assert np.all(ours >= reference), float(np.max(reference - ours))
    assert np.all(ours[epsilons >= eps0] == 0.0)
    # tight in ε at small δ, and in the bulk (what composition sees): the excess of ∫δ dε
    for delta in (1e-4, 1e-6, 1e-9):
        if exact.delta(0.0) <= delta:
            continue
        exact_eps = epsilon_at(exact.delta, delta, eps0)
        ours_eps = epsilon_at(curve.delta, delta, eps0)
        assert exact_eps <= ours_eps <= exact_eps * (1.0 + 1e-3), (delta, ours_eps, exact_eps)
    uniform = np.linspace(0.0, eps0, 801)
    excess = np.sum(curve.deltas(uniform) - exact.deltas(uniform)) / np.sum(exact.deltas(uniform))
    assert 0.0 <= excess <= 1e-3


@pytest.mark.parametrize("eps0,n", [(1.0, 5_000), (3.0, 2_000)])
def test_curve_lies_between_the_certified_ends_of_the_exact_profile(eps0: float, n: int) -> None:
    """Large n: the curve is ≥ the certified lower end of the branch and bound (the exact δ of an
    evaluated configuration) and its ε(δ) within 0.1 % of the certified exact ε."""
    curve = binary_rr_curve(eps0, n)
    profile = BinaryRRProfile(eps0, n)
    for delta in (1e-6, 1e-9):
        eps_lo, eps_hi = profile.epsilon_interval(delta)
        lower, _ = profile.delta_interval(eps_lo)
        assert curve.delta(eps_lo) >= lower
        ours = epsilon_at(curve.delta, delta, eps0)
        assert eps_lo <= ours <= eps_lo * (1.0 + 1e-3), (delta, ours, eps_lo, eps_hi)


def test_fallback_answers_many_epsilons_from_the_curve() -> None:
    upper = BinaryRRExactUpper(1.0)
    epsilons = np.array([0.0, 0.02, 0.05, 1.0])
    from_curve = upper.deltas_at_rtol(epsilons, 2000, 1e-2)
    assert np.array_equal(from_curve, binary_rr_curve(1.0, 2000).deltas(epsilons))
    # the point-by-point queries read the same curve (min with the clone bound), so that
    # delta(epsilon(δ)) ≤ δ holds exactly
    pointwise = np.array([upper.delta(float(e), 2000) for e in epsilons])
    clone = np.array([VariationRatio.worst_case(1.0).delta(float(e), 2000) for e in epsilons])
    assert np.array_equal(pointwise, np.minimum(clone, from_curve)) and from_curve[-1] == 0.0
    for delta in (1e-4, 1e-9):
        assert upper.delta(upper.epsilon(delta, 2000), 2000) <= delta
    # n = 1: the local pair, point by point
    assert np.array_equal(upper.deltas_at_rtol(epsilons, 1, 1e-2),
                          np.array([upper.delta(float(e), 1) for e in epsilons]))
    assert CURVE_MAX_USERS >= 10**6


@pytest.mark.parametrize("eps0,n", [(1.0, 1_000), (1.0, 20_000), (3.0, 5_000)])
def test_one_binary_rr_round_through_the_accountant_is_within_0_2_percent_of_the_core(
        eps0: float, n: int) -> None:
    rr = randomizers.binary_rr(eps0)
    shuffled = rr.shuffled(n)
    accountant = ShufflePLDAccountant().compose(ShuffleEvent(rr, n))
    for delta in (1e-6, 1e-9):
        ours = accountant.get_epsilon(delta)
        lower, upper = shuffled.epsilon_interval(delta)
        assert lower <= ours <= 1.002 * upper, (delta, lower, ours, upper)
    # the round's profile reads the curve, lowered where the exact small-n value fits its budget
    read = round_randomizer(rr).deltas(np.array([0.0]), n)[0]
    assert shuffled.delta_lower(0.0) <= read <= binary_rr_curve(eps0, n).delta(0.0) * (1 + 1e-12)


def test_bad_curve_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="n must be at least 2"):
        BinaryRRCurve(1.0, 1)
    with pytest.raises(ValueError, match="epsilon0"):
        BinaryRRCurve(0.0, 10)
    with pytest.raises(ValueError, match="epsilon"):
        BinaryRRCurve(1.0, 10).delta(-0.5)
