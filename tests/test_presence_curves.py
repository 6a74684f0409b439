"""The add/remove-one pair of a Poisson-sampled round at every ε (``core.presence``) against brute
force: exact laws of the participants' reports with the victim present or absent, every victim
input and every multiset of the others' inputs (``tests/test_sampling_bruteforce.py``'s laws, which
never use the package), both directions.

Asserted: the curve is ≥ the exact δ at every ε of a grid (never below it), its ε is within a
stated ratio of the exact ε, it is never looser than the point-query bound it replaces (the core's
split presence VariationRatios, ``sampling.add_remove_variation_ratios``) by more than 0.2 % in
ε, and the masses and the truncated tail are what the docstring says.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpacct_shuffle import randomizers
from dpacct_shuffle.core.presence import presence_curves
from dpacct_shuffle.core.rounding import ratio_up
from dpacct_shuffle.profiles import CORE_RTOL
from dpacct_shuffle.sampling import add_remove_variation_ratios
from tests.oracle import epsilon_by_bisection
from tests.test_sampling_bruteforce import _add_remove_pairs, _binary_rr_matrix, _hockey

ETA = 1.25e-4  # the accountants' ROUND_LOWERING


def _exact(pairs, eps: float) -> float:
    return max(_hockey(p, q, eps) for p, q in pairs)


def _curves(eps0: float, gamma: float, n: int):
    return presence_curves(ratio_up(math.exp(eps0)), gamma, n, ETA)


def _point_query(randomizer, gamma: float, n: int, eps: float) -> float:
    """The core's split presence pairs, each direction the minimum over the candidates, and
    absent‖present 0 from −ln(1 − γ) on (the bound the curve replaces)."""
    vrs = add_remove_variation_ratios(randomizer, gamma)
    present = min(vr.delta_interval(eps, n, rtol=CORE_RTOL, direction=0).upper for vr in vrs)
    absent = (0.0 if eps >= -math.log1p(-gamma) else
              min(vr.delta_interval(eps, n, rtol=CORE_RTOL, direction=1).upper for vr in vrs))
    return max(present, absent)


# bound ε / exact ε at the δ of each case: largest measured 1.19 (binary RR ε0 = 1, N = 60,
# γ = 0.1, δ = 1e-6); the clone reduction's own gap, as for the unsampled round
EPSILON_RATIO = 1.25


@pytest.mark.parametrize("eps0, n, gamma, delta", [
    (1.0, 60, 0.1, 1e-3), (1.0, 60, 0.1, 1e-6), (1.0, 40, 0.3, 1e-3), (2.0, 40, 0.2, 1e-4),
    (0.5, 30, 0.5, 1e-2), (0.5, 15, 0.9, 0.3), (2.0, 12, 0.05, 1e-5), (3.0, 25, 0.02, 1e-8),
])
def test_binary_rr_against_exact(eps0: float, n: int, gamma: float, delta: float) -> None:
    pairs = _add_remove_pairs(_binary_rr_matrix(eps0), gamma, n)
    curves = _curves(eps0, gamma, n)
    exact_eps = epsilon_by_bisection(lambda e: _exact(pairs, e), delta, 8.0, steps=50)
    for eps in np.linspace(0.0, 2.0 * exact_eps + 0.1, 13):
        assert curves.delta(float(eps)) >= _exact(pairs, float(eps)) * (1.0 - 1e-12), eps
    assert curves.delta(EPSILON_RATIO * exact_eps) <= delta
    assert curves.delta(0.999 * exact_eps) > delta
    bound_eps = epsilon_by_bisection(curves.delta, delta, 8.0, steps=50)
    point_eps = epsilon_by_bisection(
        lambda e: _point_query(randomizers.binary_rr(eps0), gamma, n, e), delta, 8.0, steps=50)
    assert bound_eps <= 1.002 * point_eps


@pytest.mark.parametrize("eps0, d, n, gamma, delta", [
    (1.0, 3, 8, 0.4, 1e-2), (2.0, 3, 8, 0.4, 1e-3), (2.0, 4, 6, 0.2, 1e-4),
])
def test_krr_against_exact(eps0: float, d: int, n: int, gamma: float, delta: float) -> None:
    randomizer = randomizers.krr(eps0, d)
    pairs = _add_remove_pairs(np.asarray(randomizer.matrix), gamma, n)
    q = add_remove_variation_ratios(randomizer, gamma)[0].q0  # the randomizer's q, rounded up
    curves = presence_curves(q, gamma, n, ETA)
    for eps in np.linspace(0.0, 3.0, 31):
        assert curves.delta(float(eps)) >= _exact(pairs, float(eps)) * (1.0 - 1e-12), eps
    exact_eps = epsilon_by_bisection(lambda e: _exact(pairs, e), delta, 8.0, steps=50)
    bound_eps = epsilon_by_bisection(curves.delta, delta, 8.0, steps=50)
    assert exact_eps <= bound_eps <= EPSILON_RATIO * exact_eps


@pytest.mark.parametrize("eps0, n, gamma", [(2.0, 100_000, 0.01), (1.0, 10_000, 0.1),
                                            (0.5, 3_000, 0.5), (4.0, 1_000_000, 0.001)])
def test_never_looser_than_the_point_queries(eps0: float, n: int, gamma: float) -> None:
    """Large N: ε at δ ∈ {1e-6, 1e-10} within 0.2 % above the point-query bound (in fact below:
    the merged ⊥ label)."""
    randomizer = randomizers.krr(eps0, 100)
    q = add_remove_variation_ratios(randomizer, gamma)[0].q0  # the randomizer's q, rounded up
    curves = presence_curves(q, gamma, n, ETA)
    for delta in (1e-6, 1e-10):
        bound_eps = epsilon_by_bisection(curves.delta, delta, 8.0, steps=40)
        point_eps = epsilon_by_bisection(lambda e: _point_query(randomizer, gamma, n, e),
                                         delta, 8.0, steps=40)
        assert 0.0 < bound_eps <= 1.002 * point_eps


def test_directions_and_tails() -> None:
    """absent‖present vanishes from −ln(1 − γ) on; present‖absent carries the mass of all N users
    reporting (γ^N, infinite loss) and the truncated windows, tiny, at every ε."""
    gamma, n = 0.9, 12
    curves = _curves(1.0, gamma, n)
    cap = -math.log1p(-gamma)
    assert curves.absent.delta(cap * (1.0 + 1e-9)) == 0.0
    assert curves.absent.delta(0.5 * cap) > 0.0
    # all N report (γ^N, infinite loss) is in the mass at +∞
    assert curves.present.truncated_mass >= gamma ** n
    assert curves.present.delta(50.0) >= gamma ** n
    assert curves.present.truncated_mass <= gamma ** n * (1.0 + 1e-6) + 1e-20
    # a large population: the infinite-loss mass is negligible (issue: 7e-27 must not be ∞)
    big = presence_curves(ratio_up(math.exp(2.0)), 0.01, 100_000, ETA)
    assert big.present.truncated_mass < 1e-20
    assert big.delta(1.0) < 1e-20


@pytest.mark.parametrize("kwargs, match", [
    (dict(q=0.5, sampling_probability=0.1, n=10), "q"),
    (dict(q=math.inf, sampling_probability=0.1, n=10), "q"),
    (dict(q=2.0, sampling_probability=0.0, n=10), "sampling_probability"),
    (dict(q=2.0, sampling_probability=1.0, n=10), "sampling_probability"),
    (dict(q=2.0, sampling_probability=0.1, n=0), "num_users|n"),
    (dict(q=2.0, sampling_probability=0.1, n=10, lowering=0.5), "lowering"),
])
def test_bad_input(kwargs, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        presence_curves(**kwargs)
