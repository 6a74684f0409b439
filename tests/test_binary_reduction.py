"""Two-input randomizers that are sampled binary RR in disguise (RAPPOR and OUE on two values):
their shuffled rounds, sampled or not, against brute force over every configuration."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpacct_shuffle import randomizers
from dpacct_shuffle.randomizers.binary_reduction import BinaryReductionUpper
from dpacct_shuffle.sampling import poisson_sampled_profile
from tests.oracle import exact_shuffled_delta

ENTRIES = [("rappor", randomizers.rappor), ("oue", randomizers.oue)]


def _classes(matrix: np.ndarray) -> tuple[float, float]:
    """(p, ρ) of a two-row matrix whose columns have ratio p, 1/p or 1 and R(0)(Y₊) = R(1)(Y₋)
    (asserted): the structure the reduction needs, read off the matrix itself."""
    ratios = matrix[0] / matrix[1]
    p = float(np.max(ratios))
    plus, minus = np.isclose(ratios, p, rtol=1e-12), np.isclose(ratios, 1.0 / p, rtol=1e-12)
    same = np.isclose(ratios, 1.0, rtol=1e-12)
    assert np.all(plus | minus | same)
    assert matrix[0][plus].sum() == pytest.approx(matrix[1][minus].sum(), rel=1e-12)
    return p, float(matrix[0][plus | minus].sum())


@pytest.mark.parametrize("name, entry", ENTRIES)
@pytest.mark.parametrize("eps0", [1.0, 4.0])
def test_catalog_parameters_match_the_matrix(name: str, entry, eps0: float) -> None:
    randomizer = entry(eps0, 2)
    p, rho = _classes(np.asarray(randomizer.matrix))
    (bound,) = [b for b in randomizer.fallbacks if isinstance(b, BinaryReductionUpper)]
    assert p == pytest.approx(math.exp(eps0), rel=1e-12)
    assert bound.epsilon0 == eps0
    assert rho <= bound.reporting <= rho * (1.0 + 1e-14)


def test_no_reduction_beyond_two_values() -> None:
    for randomizer in (randomizers.rappor(1.0, 3), randomizers.oue(1.0, 3)):
        assert not any(isinstance(b, BinaryReductionUpper) for b in randomizer.fallbacks)


def _exact_round_delta(matrix: np.ndarray, n: int, eps: float) -> float:
    """Exact shuffled δ(ε) of n users: max over the m others holding input 1 (both directions)."""
    return max(exact_shuffled_delta(matrix, 0, 1, [1] * m + [0] * (n - 1 - m), eps)
               for m in range(n))


def _epsilon(delta_of, delta: float, high: float) -> float:
    low = 0.0
    for _ in range(45):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if delta_of(mid) > delta else (low, mid)
    return high


@pytest.mark.parametrize("name, entry", ENTRIES)
@pytest.mark.parametrize("eps0, n", [(1.0, 6), (2.0, 10), (4.0, 12)])
def test_unsampled_round_is_exact(name: str, entry, eps0: float, n: int) -> None:
    randomizer = entry(eps0, 2)
    matrix = np.asarray(randomizer.matrix)
    shuffled = randomizer.shuffled(n)
    for eps in np.linspace(0.0, 0.9 * eps0, 7):
        exact = _exact_round_delta(matrix, n, float(eps))
        bound = shuffled.delta(float(eps))
        assert exact - 1e-15 <= bound <= exact * 1.01 + 1e-12
    delta = 1e-3
    exact_eps = _epsilon(lambda e: _exact_round_delta(matrix, n, e), delta, eps0)
    assert exact_eps <= shuffled.epsilon(delta) <= 1.011 * exact_eps


def _void_matrix(matrix: np.ndarray, gamma: float) -> np.ndarray:
    return np.hstack([gamma * matrix, np.full((2, 1), 1.0 - gamma)])


@pytest.mark.parametrize("name, entry", ENTRIES)
@pytest.mark.parametrize("eps0, n, gamma", [(2.0, 9, 0.5), (4.0, 10, 0.3), (1.0, 12, 0.2)])
def test_sampled_round_is_exact(name: str, entry, eps0: float, n: int, gamma: float) -> None:
    """The server sees the participants' reports: the void matrix (⊥ = no report) of n users."""
    randomizer = entry(eps0, 2)
    void = _void_matrix(np.asarray(randomizer.matrix), gamma)
    profile = poisson_sampled_profile(randomizer, n, gamma)
    delta = 1e-3
    exact_eps = _epsilon(lambda e: _exact_round_delta(void, n, e), delta, eps0)
    assert exact_eps > 0.0
    for eps in np.linspace(0.0, 1.5 * exact_eps, 5):
        assert profile.delta(float(eps)) >= _exact_round_delta(void, n, float(eps)) - 1e-15
    assert profile.delta(1.011 * exact_eps) <= delta < profile.delta(0.999 * exact_eps)


def test_reporting_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="reporting"):
        BinaryReductionUpper(1.0, 0.0)
    with pytest.raises(ValueError, match="reporting"):
        BinaryReductionUpper(1.0, 1.5)
