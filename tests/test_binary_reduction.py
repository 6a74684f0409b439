"""Two-input randomizers bounded by sampled binary RR, exactly for RAPPOR and OUE on two values:
their shuffled rounds, sampled or not, against brute force over every configuration."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpacct_shuffle import randomizers
from dpacct_shuffle.randomizers.binary_reduction import BinaryReductionUpper, binary_reduction
from dpacct_shuffle.randomizers.base import ExactSmallNBound
from dpacct_shuffle.sampling import poisson_sampled_profile
from tests.oracle import epsilon_by_bisection, exact_shuffled_delta

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
    assert eps0 <= bound.epsilon0 <= eps0 * (1.0 + 1e-13)
    assert rho <= bound.reporting <= rho * (1.0 + 1e-13)


def test_no_reduction_beyond_two_values() -> None:
    for randomizer in (randomizers.rappor(1.0, 3), randomizers.oue(1.0, 3),
                       randomizers.from_matrix(np.eye(3) * 0.5 + 0.5 / 3)):
        assert not any(isinstance(b, BinaryReductionUpper) for b in randomizer.fallbacks)
    assert binary_reduction(np.array([[0.5, 0.5], [1.0, 0.0]])) is None  # p = ∞
    assert binary_reduction(np.array([[0.5, 0.5], [0.5, 0.5]])) is None  # nothing differs


# two-input matrices without the class structure (asymmetric, three outputs)
MATRICES = [np.array([[0.7, 0.3], [0.4, 0.6]]), np.array([[0.85, 0.15], [0.45, 0.55]]),
            np.array([[0.5, 0.3, 0.2], [0.2, 0.3, 0.5]]), np.array([[0.6, 0.1, 0.3], [0.3, 0.4, 0.3]])]


def _hockey_stick(first: np.ndarray, second: np.ndarray, x: float) -> float:
    return float(np.sum(np.maximum(first - x * second, 0.0)))


@pytest.mark.parametrize("matrix", MATRICES + [np.asarray(randomizers.rappor(2.0, 2).matrix)])
def test_dominating_binary_rr_pair(matrix: np.ndarray) -> None:
    """The proof's inequality: H_R(x) ≤ H_M(x) at every x ≥ 0, both orders (Blackwell)."""
    bound = binary_reduction(matrix)
    p, rho = math.exp(bound.epsilon0), bound.reporting
    keep = p / (p + 1.0)
    binary = rho * np.array([[keep, 1.0 - keep, 0.0], [1.0 - keep, keep, 0.0]])
    binary[:, 2] = 1.0 - rho
    for x in np.concatenate([np.linspace(0.0, 1.0, 11), np.geomspace(1.0, 2.0 * p, 40)]):
        for i, j in ((0, 1), (1, 0)):
            assert _hockey_stick(matrix[i], matrix[j], x) <= _hockey_stick(
                binary[i], binary[j], x) + 1e-15


def _exact_round_delta(matrix: np.ndarray, n: int, eps: float) -> float:
    """Exact shuffled δ(ε) of n users: max over the m others holding input 1 (both directions)."""
    return max(exact_shuffled_delta(matrix, 0, 1, [1] * m + [0] * (n - 1 - m), eps)
               for m in range(n))


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
    exact_eps = epsilon_by_bisection(lambda e: _exact_round_delta(matrix, n, e), delta, eps0)
    assert exact_eps <= shuffled.epsilon(delta) <= 1.011 * exact_eps


# measured at n = 12, δ = 1e-3, bound ε / exact ε without / with the binary reduction:
# unsampled 1.081 / 1.032, 1.255 / 1.167, 1.06 / 1.001, 1.38 / 1.185; sampled (γ = 0.5) ≤ 1.034
@pytest.mark.parametrize("matrix", MATRICES)
def test_two_input_matrix_round_against_exact(matrix: np.ndarray) -> None:
    """Any two-input matrix: ≥ exact, sampled within the issue's 25 %, and tighter than the
    decomposition bounds alone (the clone reduction's gap)."""
    n, delta = 12, 1e-3
    randomizer = randomizers.from_matrix(matrix)
    without = randomizers.Randomizer(
        randomizer.name, randomizer.parameters, randomizer.cover,
        variation_ratio=randomizer.variation_ratio,  # no matrix: no exact small-n fallback either
        fallbacks=[b for b in randomizer.fallbacks
                   if not isinstance(b, (BinaryReductionUpper, ExactSmallNBound))])
    shuffled = randomizer.shuffled(n)
    cap = math.log(float(np.max(np.maximum(matrix[0] / matrix[1], matrix[1] / matrix[0]))))
    for eps in np.linspace(0.0, 0.9 * cap, 6):
        assert shuffled.delta(float(eps)) >= _exact_round_delta(matrix, n, float(eps)) - 1e-15
    exact_eps = epsilon_by_bisection(lambda e: _exact_round_delta(matrix, n, e), delta, cap)
    assert exact_eps <= shuffled.epsilon(delta) < without.shuffled(n).epsilon(delta)
    void = _void_matrix(matrix, 0.5)
    profile = poisson_sampled_profile(randomizer, n, 0.5)
    exact_eps = epsilon_by_bisection(lambda e: _exact_round_delta(void, n, e), delta, cap)
    for eps in np.linspace(0.0, 1.5 * exact_eps, 5):
        assert profile.delta(float(eps)) >= _exact_round_delta(void, n, float(eps)) - 1e-15
    assert profile.delta(1.25 * exact_eps) <= delta


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
    exact_eps = epsilon_by_bisection(lambda e: _exact_round_delta(void, n, e), delta, eps0)
    assert exact_eps > 0.0
    for eps in np.linspace(0.0, 1.5 * exact_eps, 5):
        assert profile.delta(float(eps)) >= _exact_round_delta(void, n, float(eps)) - 1e-15
    assert profile.delta(1.011 * exact_eps) <= delta < profile.delta(0.999 * exact_eps)


def test_reporting_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="reporting"):
        BinaryReductionUpper(1.0, 0.0)
    with pytest.raises(ValueError, match="reporting"):
        BinaryReductionUpper(1.0, 1.5)
