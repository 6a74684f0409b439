"""Random-mode parallel rounds whose branches differ: the composite matrix and the per-branch levels.

References: exact shuffled δ of the composite randomizer on the product of the branch domains
(rows (x_1, …, x_k), entries π_j·R_j(x_j)(y)), by enumerating output histograms for every victim
pair and every configuration of the other users (tests/oracle.py), written here without the
package's composite code.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dpacct_shuffle import randomizers as rz
from dpacct_shuffle.events import ParallelCompositionEvent, ShuffleEvent
from dpacct_shuffle.profiles import parallel_composite, parallel_composite_bound
from tests.oracle import exact_shuffled_delta


def product_matrix(matrices: list[np.ndarray], pis: list[float]) -> np.ndarray:
    rows = []
    for index in itertools.product(*(range(m.shape[0]) for m in matrices)):
        rows.append(np.concatenate([pi * m[x] for pi, m, x in zip(pis, matrices, index)]))
    return np.array(rows)


def worst_exact(matrix: np.ndarray, n: int, eps: float) -> float:
    rows = range(matrix.shape[0])
    return max(exact_shuffled_delta(matrix, i, j, list(others), eps)
               for i, j in itertools.combinations(rows, 2)
               for others in itertools.combinations_with_replacement(rows, n - 1))


def epsilon_of(delta_upper, delta: float, n: int, high: float) -> float:
    """Smallest ε on a 1e-6 grid (bisection) with delta_upper(ε, n) ≤ delta."""
    low = 0.0
    while high - low > 1e-6:
        middle = 0.5 * (low + high)
        if delta_upper(middle, n) > delta:
            low = middle
        else:
            high = middle
    return high


BRANCHES = [rz.binary_rr(3.0), rz.krr(1.0, 3)]
PIS = [0.2, 0.8]


def test_measured_case_within_25_percent_of_exact() -> None:
    """Binary RR (ε0 = 3, w.p. 0.2) next to 3-ary RR (ε0 = 1, w.p. 0.8), n = 12, δ = 1e-3.

    The worst pair found by brute force (victim (0, 0) vs (1, 1), all others at (0, 1)) has exact
    ε = 1.5609; p = max p_j gives 2.997; the composite keeps both branches' structure."""
    n, delta = 12, 1e-3
    matrix = product_matrix([b.matrix for b in BRANCHES], PIS)
    exact = epsilon_of(lambda eps, _: exact_shuffled_delta(matrix, 0, 4, [1] * (n - 1), eps),
                       delta, n, 3.0)
    assert exact == pytest.approx(1.5609, abs=1e-3)
    bound = ParallelCompositionEvent(BRANCHES, n, probabilities=PIS).composite_bound()
    ours = epsilon_of(bound.delta_upper, delta, n, 3.0)
    today = parallel_composite(BRANCHES, PIS).epsilon(delta, n)
    assert today == pytest.approx(2.997, abs=1e-3)
    assert exact <= ours <= 1.25 * exact


@pytest.mark.parametrize("branches, pis", [
    ([rz.binary_rr(2.0), rz.krr(1.0, 3)], [0.3, 0.7]),
    ([rz.krr(0.5, 3), rz.binary_rr(3.0)], [0.5, 0.5]),
])
def test_composite_bound_covers_every_pair_and_configuration(branches, pis) -> None:
    matrix = product_matrix([b.matrix for b in branches], pis)
    n = 3
    finite = parallel_composite_bound(branches, pis)
    clone_only = parallel_composite_bound([b.variation_ratio for b in branches], pis)
    today = parallel_composite(branches, pis)
    for eps in (0.0, 0.2, 0.5, 1.0, 1.8):
        exact = worst_exact(matrix, n, eps)
        for bound in (finite, clone_only):
            assert bound.delta_upper(eps, n) >= exact
            assert bound.delta_upper(eps, n) <= today.delta(eps, n)


def test_each_branch_keeps_its_own_levels_without_matrices() -> None:
    """VariationRatio branches only (no matrix): the clone levels of each branch beat p = max p_j."""
    clone_only = parallel_composite_bound([b.variation_ratio for b in BRANCHES], PIS)
    today = parallel_composite(BRANCHES, PIS)
    for n, eps in ((12, 1.0), (500, 0.5)):
        assert clone_only.delta_upper(eps, n) < 0.9 * today.delta(eps, n)


@pytest.mark.parametrize("branch", [rz.krr(2.0, 10), rz.rappor(1.0, 5)], ids=["krr", "rappor"])
def test_single_branch_is_the_shuffle_round(branch: rz.Randomizer) -> None:
    parallel = ParallelCompositionEvent([branch], 500).profile()
    single = ShuffleEvent(branch, 500).profile()
    assert parallel.epsilon_cap == single.epsilon_cap
    for eps in (0.05, 0.2, 0.6):
        assert parallel.delta(eps) == single.delta(eps)
