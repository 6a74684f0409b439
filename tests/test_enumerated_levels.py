"""The every-ε curve of a multi-level bound from its enumerated count vectors
(dpacct_shuffle.core.enumerated_levels).

References: the exact shuffled δ of every victim pair and every configuration of the other users
(tests/oracle.py), and the multi-level bound's own exact multinomial sum at the same n.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpacct_shuffle import randomizers as rz
from dpacct_shuffle.accountants import ShufflePLDAccountant
from dpacct_shuffle.core import enumerated_levels
from dpacct_shuffle.core.enumerated_levels import count_vectors_curve
from dpacct_shuffle.core.multilevel import PrivacyLossLevels
from dpacct_shuffle.events import ParallelCompositionEvent
from dpacct_shuffle.randomizers.multilevel import pair_levels
from dpacct_shuffle.core.bound import VariationRatio
from dpacct_shuffle.profiles.shuffle_bounds import small_users_curve
from tests.oracle import exact_shuffled_delta, krr_matrix, pair_delta_bruteforce

EPSILONS = (0.0, 0.1, 0.3, 0.6, 1.0, 1.5, 2.5)


def random_matrix(rng: np.random.Generator, inputs: int, outputs: int) -> np.ndarray:
    raw = rng.uniform(0.05, 1.0, size=(inputs, outputs)) ** 3
    return raw / raw.sum(axis=1, keepdims=True)


def product_matrix(matrices: list[np.ndarray], pis: list[float]) -> np.ndarray:
    """The parallel round's composite: rows (x_1, x_2), entries π_j·R_j(x_j)(y)."""
    rows = [np.concatenate([pi * m[x] for pi, m, x in zip(pis, matrices, index)])
            for index in itertools.product(*(range(m.shape[0]) for m in matrices))]
    return np.array(rows)


def worst_exact(matrix: np.ndarray, i: int, j: int, n: int, eps: float) -> float:
    rows = range(matrix.shape[0])
    return max(exact_shuffled_delta(matrix, i, j, list(others), eps)
               for others in itertools.combinations_with_replacement(rows, n - 1))


@pytest.mark.parametrize("seed", range(4))
def test_curve_covers_brute_force_of_random_matrices(seed: int) -> None:
    """Asymmetric level sets of random 3×4 matrices, n = 3: curve ≥ the exact worst δ of the
    pair, and equal to the bound's exact multinomial sum up to the loss grid."""
    rng = np.random.default_rng(400 + seed)
    matrix = rz.from_matrix(random_matrix(rng, 3, 4)).matrix
    blanket = matrix.min(axis=0)
    n = 3
    for i, j in itertools.combinations(range(3), 2):
        levels = pair_levels(matrix, blanket, i, j)
        curve = count_vectors_curve(levels, n)
        assert curve is not None
        values = curve.deltas(np.array(EPSILONS))
        for eps, value in zip(EPSILONS, values):
            assert value >= worst_exact(matrix, i, j, n, eps)
            point = levels.delta(eps, n)  # the exact multinomial sum at this n
            assert point * (1.0 - 1e-12) <= value <= point * (1.0 + 1e-6) + 1e-15


@pytest.mark.parametrize("branches, pis", [
    ([rz.binary_rr(2.0), rz.krr(1.0, 3)], [0.3, 0.7]),
    ([rz.krr(2.0, 3), rz.binary_rr(1.0)], [0.5, 0.5]),
])
def test_parallel_composite_levels_cover_every_pair_and_configuration(branches, pis) -> None:
    """The composite matrix of a parallel round (a pair differing in both branches has four
    clone levels): the maximum of the curves over its level sets ≥ the exact worst δ, n = 4."""
    composite = rz.from_matrix(product_matrix([b.matrix for b in branches], pis))
    multilevel = composite.fallbacks[-1]
    n = 4
    epsilons = np.array(EPSILONS)
    curve = multilevel.curve_deltas(epsilons, n, 1e-4)
    assert curve is not None
    rows = composite.matrix.shape[0]
    for k, eps in enumerate(EPSILONS):
        exact = max(worst_exact(composite.matrix, i, j, n, eps)
                    for i, j in itertools.combinations(range(rows), 2))
        assert curve[k] >= exact


def test_curve_matches_the_point_bound_at_64_users() -> None:
    """Two k-RR branches (ε0 = 2, d = 10 and ε0 = 1, d = 4), the pair differing in both: five
    levels, n = 64. The curve is the bound's windowed value within 1e-6 where δ ≥ 1e-12, never
    below its certified lower end, and its pruned mass stays below 1e-16."""
    e = np.e
    levels = PrivacyLossLevels([1.0, 1.0, 1.0, e, e * e], [1.0, e, e * e, 1.0, 1.0],
                               [0.41894301, 0.08743885, 0.03050816, 0.08743885, 0.03050816])
    curve = count_vectors_curve(levels, 64)
    assert curve is not None
    assert max(direction.truncated for direction in curve.directions) < 1e-16
    for eps in (0.0, 0.3, 0.6, 0.8433, 1.0):
        bracket = levels.delta_interval(eps, 64, rtol=1e-9)
        value = curve.delta(eps)
        assert value >= bracket.lower
        assert value <= bracket.upper * (1.0 + 1e-6) + 1e-15
        assert bracket.upper > 1e-12


def test_over_budget_gives_no_curve(monkeypatch) -> None:
    levels = PrivacyLossLevels([1.0, 2.0, 1.0], [2.0, 1.0, 1.0], [0.2, 0.2, 0.4])
    monkeypatch.setattr(enumerated_levels, "MAX_CELLS", 10)
    enumerated_levels._count_vectors_curve.cache_clear()
    try:
        assert count_vectors_curve(levels, 50) is None
    finally:
        enumerated_levels._count_vectors_curve.cache_clear()


def test_parallel_round_of_64_and_65_users() -> None:
    """The measured round: ε(1e-6) of one PLD not above the point-by-point value it replaces
    (0.8433356595445447) nor below the bound's own ε (0.84326 by bisection of its windowed
    value), and 65 users never above 64."""
    values = []
    for n in (64, 65):
        accountant = ShufflePLDAccountant()
        accountant.compose(ParallelCompositionEvent([rz.krr(2.0, 10), rz.krr(1.0, 4)], n))
        values.append(accountant.get_epsilon(1e-6))
    assert 0.84325 <= values[0] <= 0.8433356595445447
    assert values[1] <= values[0]


@pytest.mark.parametrize("a, b, m, n", [
    ([1e-300, 2.0], [2.0, 1e-300], [0.3, 0.3], 20),  # losses near the float range
    ([3.0, 1.0], [1.0, 3.0], [0.25, 0.25], 1),  # one user: the victim's own divergence
    ([1.0, 2.0, 0.5], [1.5, 1.0, 0.5], [0.2, 0.3, 0.4], 12),  # asymmetric, zero atom 0.1
])
def test_curve_at_extreme_levels_stays_above_the_exact_sum(a, b, m, n) -> None:
    levels = PrivacyLossLevels(a, b, m)
    curve = count_vectors_curve(levels, n)
    assert curve is not None
    epsilons = np.array([0.0, 0.3, 1.0, 5.0, 700.0])
    with np.errstate(all="raise"):
        values = curve.deltas(epsilons)
    for eps, value in zip(epsilons, values):
        point = levels.delta(float(eps), n)  # the exact multinomial sum here
        assert point * (1.0 - 1e-12) <= value <= point * (1.0 + 1e-6) + 1e-15


@pytest.mark.parametrize("params", [
    dict(p=math.e ** 2, beta=0.6, q0=math.e ** 2, q1=None, neutral_share=None),
    dict(p=3.0, beta=0.4, q0=3.0, q1=2.0, neutral_share=0.3),
    dict(p=20.0, beta=0.9, q0=20.0, q1=None, neutral_share=None),
])
@pytest.mark.parametrize("n", [2, 5, 12])
def test_small_users_curve_covers_the_dominating_pair(params: dict, n: int) -> None:
    """The every-count-vector curve a round PLD reads for a VariationRatio at few users
    (``shuffle_bounds.small_users_curve``) is at least the pair's exact δ (brute force of the
    dominating pair, both directions) and, two loss bins β lower in ε (the curve reads the bins
    around ε at their lower edge), within 1 % of the core's point bound."""
    vr = VariationRatio(params["p"], params["beta"], params["q0"], q1=params["q1"],
                        neutral_share=params["neutral_share"])
    curve = small_users_curve(vr, n)
    assert curve is not None
    epsilons = np.array([0.0, 0.05, 0.2, 0.5, 1.0, 2.0])
    values = curve.deltas(epsilons)
    bin_width = min(math.log(params["p"]), enumerated_levels.LOSS_RANGE) / enumerated_levels.LOSS_BINS
    for eps, value in zip(epsilons.tolist(), values.tolist()):
        exact = max(pair_delta_bruteforce(params["p"], params["beta"], params["q0"], params["q1"],
                                          params["neutral_share"], n, eps, direction)
                    for direction in (0, 1))
        assert value >= exact * (1 - 1e-12), (eps, value, exact)
        point = vr.delta(max(eps - 2 * bin_width, 0.0), n)
        assert value <= point * 1.01 + 1e-15, (eps, value, point)


def test_small_users_curve_of_krr_covers_the_exact_shuffled_law() -> None:
    randomizer = rz.krr(2.0, 3)
    matrix = krr_matrix(2.0, 3)
    for n in (2, 4, 6):
        curves = [small_users_curve(vr, n) for bound in randomizer.cover
                  for vr in getattr(bound, "candidates", ())]
        curves = [curve for curve in curves if curve is not None]
        assert curves
        for eps in (0.0, 0.3, 1.0):
            exact = worst_exact(matrix, 0, 1, n, eps)
            assert min(float(curve.deltas(np.array([eps]))[0]) for curve in curves) >= exact * (1 - 1e-12)
