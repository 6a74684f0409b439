"""Poisson-sampled rounds from batched pair curves: the profile the accountants build a sampled
round's PLD from (``poisson_sampled_profile(..., lowering=ROUND_LOWERING)``) against brute force,
and one sampled round's ε through ``ShufflePLDAccountant`` against the core-evaluated profile."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from dp_accounting import dp_event

from dpacct_shuffle import VariationRatio, randomizers
from dpacct_shuffle.accountants import ShufflePLDAccountant
from dpacct_shuffle.events import ShuffleEvent
from dpacct_shuffle.profiles import ROUND_LOWERING
from dpacct_shuffle.sampling import poisson_sampled_profile
from tests.test_sampling_bruteforce import (
    EPSILON_RATIO,
    _binary_rr_matrix,
    _epsilon_of,
    _exact_delta,
    _sampled_pairs,
)

# one sampled round's ε through the PLD against the profile evaluated by the core (issue 11)
ROUND_GAP = 2e-3
MATRIX = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.25, 0.25, 0.5]])


def _all_pairs(matrix: np.ndarray, gamma: float, n: int) -> list:
    return [pair for x0, x1 in itertools.combinations(range(matrix.shape[0]), 2)
            for pair in _sampled_pairs(matrix, gamma, n, x0, x1)]


@pytest.mark.parametrize("name, randomizer, matrix, n, gamma, delta", [
    ("binary RR", randomizers.binary_rr(1.0), _binary_rr_matrix(1.0), 20, 0.3, 1e-2),
    ("binary RR", randomizers.binary_rr(2.0), _binary_rr_matrix(2.0), 40, 0.3, 1e-3),
    ("worst case", VariationRatio.worst_case(1.5), _binary_rr_matrix(1.5), 40, 0.2, 1e-3),
    ("k-RR", randomizers.krr(2.0, 3), None, 8, 0.5, 1e-2),
    ("RAPPOR", randomizers.rappor(2.0, 2), None, 9, 0.5, 1e-2),
    ("matrix", randomizers.from_matrix(MATRIX), MATRIX, 5, 0.4, 1e-2),
])
def test_batched_sampled_profile_against_exact(name: str, randomizer, matrix, n: int,
                                               gamma: float, delta: float) -> None:
    """Every victim pair, every multiset of the others' inputs (exact laws with ⊥): the batched
    profile is ≥ the exact δ at every ε tried and its ε at δ is within the non-batched profile's
    tolerance of the exact ε."""
    mat = np.asarray(randomizer.matrix if matrix is None else matrix)
    pairs = _all_pairs(mat, gamma, n)
    profile = poisson_sampled_profile(randomizer, n, gamma, lowering=ROUND_LOWERING)
    assert profile.deltas_upper is not None
    eps_cap = math.log(float(np.max(mat[:, None, :] / mat[None, :, :])))
    exact_eps = _epsilon_of(lambda e: _exact_delta(pairs, e), delta, eps_cap)
    grid = np.linspace(0.0, 1.5 * exact_eps, 7)
    values = profile.deltas(grid)
    for eps, value in zip(grid, values):
        assert value >= _exact_delta(pairs, float(eps)) - 1e-15
        assert value == profile.delta(float(eps))  # array and scalar forms agree
    assert profile.delta(EPSILON_RATIO * exact_eps) <= delta
    assert profile.delta(0.999 * exact_eps) > delta


def _profile_epsilon(profile, delta: float, hi: float, steps: int = 30) -> float:
    lo = 0.0
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if profile.delta(mid) > delta else (lo, mid)
    return hi


@pytest.mark.parametrize("randomizer, n, gamma", [
    (randomizers.krr(2.0, 100), 10_000, 0.1),
    (VariationRatio.worst_case(1.0), 10_000, 0.05),
    (randomizers.krr(2.0, 10), 10_000, 0.1),
])
def test_one_sampled_round_pld_is_the_core_profile(randomizer, n: int, gamma: float) -> None:
    """One sampled round through ``ShufflePLDAccountant`` (batched curves) is within 0.2 % of the
    ε of the same profile evaluated by the core."""
    delta = 1e-6
    core = poisson_sampled_profile(randomizer, n, gamma)
    expected = _profile_epsilon(core, delta, core.epsilon_cap)
    event = dp_event.PoissonSampledDpEvent(gamma, ShuffleEvent(randomizer, n))
    epsilon = ShufflePLDAccountant().compose(event).get_epsilon(delta)
    assert abs(epsilon / expected - 1.0) <= ROUND_GAP


@pytest.mark.parametrize("lowering", [0.0, -1e-4, 0.02, math.nan])
def test_lowering_out_of_range_is_refused(lowering: float) -> None:
    with pytest.raises(ValueError, match="lowering"):
        poisson_sampled_profile(randomizers.krr(2.0, 10), 100, 0.1, lowering=lowering)


def test_lowering_of_wrong_type_is_refused() -> None:
    with pytest.raises(TypeError, match="lowering"):
        poisson_sampled_profile(randomizers.krr(2.0, 10), 100, 0.1, lowering="fast")
