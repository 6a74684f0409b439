"""Exact shuffled δ(ε) at small n (dpacct_shuffle.randomizers.exact_small_n) against the
independent brute-force oracle (tests/oracle.py): every configuration of the others, every pair."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import dpacct_shuffle.randomizers as rz
from dpacct_shuffle.randomizers.base import ExactSmallNBound
from dpacct_shuffle.randomizers.exact_small_n import (
    WORK_BUDGET,
    ExactShuffle,
    MatrixExact,
    merge_identical_columns,
)
from dpacct_shuffle.randomizers.lower_bounds import ExactLowerInstance
from tests.oracle import exact_shuffled_delta

EPSILONS = np.array([0.0, 0.05, 0.3, 1.0, 2.5])
#: The upper bound charges cells whose likelihood ratio is within τ = 1e-11 of e^ε with
#: (e^{2τ} − 1)·e^ε·(their mass) (module docstring of exact_small_n): at ε = ε0 exactly, where
#: the exact δ is 0, the upper bound is up to ~2e-11·e^ε.
SLACK = 3e-11


def brute_worst(matrix: np.ndarray, n: int, eps: float) -> float:
    """max over ordered pairs and every multiset of the n − 1 others' inputs (oracle)."""
    d = matrix.shape[0]
    return max(exact_shuffled_delta(matrix, x0, x1, list(others), eps)
               for x0 in range(d) for x1 in range(d) if x0 != x1
               for others in itertools.combinations_with_replacement(range(d), n - 1))


def random_matrix(seed: int, inputs: int, outputs: int) -> np.ndarray:
    return np.random.default_rng(seed).dirichlet(np.ones(outputs), size=inputs)


def exact_of(matrix: np.ndarray, n: int) -> ExactShuffle:
    shuffle = MatrixExact(matrix).shuffle(n)
    assert shuffle is not None
    return shuffle


@pytest.mark.parametrize("seed,inputs,outputs,n", [
    (0, 2, 2, 6), (1, 2, 3, 5), (2, 3, 2, 5), (3, 3, 3, 4), (4, 4, 3, 3), (5, 3, 4, 3)])
def test_random_matrices_equal_the_oracle(seed: int, inputs: int, outputs: int, n: int) -> None:
    matrix = random_matrix(seed, inputs, outputs)
    lower, upper = exact_of(matrix, n).delta_bounds(EPSILONS)
    for k, eps in enumerate(EPSILONS):
        exact = brute_worst(matrix, n, float(eps))
        assert lower[k] <= exact <= upper[k]
        assert upper[k] - lower[k] <= 1e-9 * exact + SLACK * math.exp(eps)


@pytest.mark.parametrize("build,n", [
    (lambda: rz.krr(1.5, 4), 5), (lambda: rz.subset_selection(1.0, 4, 2), 4),
    (lambda: rz.rappor(2.0, 2), 4)])
def test_symmetric_and_merged_entries_equal_the_oracle(build, n: int) -> None:
    """The reductions (one victim pair with sorted counts; identical columns merged) are exact."""
    randomizer = build()
    matrix = np.asarray(randomizer.matrix)
    family = MatrixExact(matrix).family(n)
    assert family is not None
    if randomizer.name in ("krr", "subset_selection"):
        assert family.symmetric and family.pairs == ((0, 1),)
    lower, upper = exact_of(matrix, n).delta_bounds(EPSILONS)
    for k, eps in enumerate(EPSILONS):
        exact = brute_worst(matrix, n, float(eps))
        assert lower[k] <= exact <= upper[k] <= exact * (1 + 1e-9) + SLACK * math.exp(eps)


def test_identical_columns_are_merged_losslessly() -> None:
    base = random_matrix(7, 3, 3)
    widened = np.concatenate([base[:, :1] / 2, base[:, :1] / 2, base[:, 1:]], axis=1)
    (merged,), largest = merge_identical_columns([widened])
    assert merged.shape == (3, 3) and largest == 2
    lower, upper = exact_of(widened, 4).delta_bounds(EPSILONS)
    for k, eps in enumerate(EPSILONS):
        exact = brute_worst(widened, 4, float(eps))
        assert lower[k] <= exact <= upper[k]


def test_asymmetric_matrix_is_not_reduced() -> None:
    family = MatrixExact(random_matrix(8, 3, 3)).family(5)
    assert family is not None and not family.symmetric and len(family.pairs) == 3


def test_epsilon_inverse_is_certified_both_ways() -> None:
    matrix = random_matrix(9, 3, 3)
    shuffle = exact_of(matrix, 6)
    for delta in (1e-1, 1e-3, 1e-6):
        eps_lower, eps_upper = shuffle.epsilon_bounds(delta)
        assert 0.0 < eps_lower <= eps_upper <= eps_lower * (1 + 1e-9) + 1e-12
        assert brute_worst(matrix, 6, eps_upper) <= delta
        assert brute_worst(matrix, 6, eps_lower) >= delta


def test_vectorised_deltas_match_pointwise() -> None:
    randomizer = rz.from_matrix(random_matrix(10, 3, 3))
    (bound,) = [b for b in randomizer.fallbacks if isinstance(b, ExactSmallNBound)]
    grid = np.linspace(0.0, 3.0, 13)
    together = bound.deltas_at_rtol(grid, 8, 1e-3)
    assert together.tolist() == [bound.delta(float(eps), 8) for eps in grid]


@pytest.mark.parametrize("seed,inputs,outputs,n", [(1, 2, 3, 5), (3, 3, 3, 4), (5, 3, 4, 3)])
def test_upper_deltas_are_the_upper_ends_of_the_bounds(seed: int, inputs: int, outputs: int,
                                                       n: int) -> None:
    """upper_deltas (what ExactSmallNBound reads) is delta_bounds' upper end, value for value,
    and brackets the oracle from above as tightly."""
    matrix = random_matrix(seed, inputs, outputs)
    upper = exact_of(matrix, n).upper_deltas(EPSILONS)
    assert upper.tolist() == exact_of(matrix, n).delta_bounds(EPSILONS)[1].tolist()
    for k, eps in enumerate(EPSILONS):
        exact = brute_worst(matrix, n, float(eps))
        assert exact <= upper[k] <= exact * (1.0 + 1e-9) + SLACK * math.exp(eps)


def test_subset_selection_at_n_30_is_exact() -> None:
    """The issue's case: subset_selection(5.0, 3, 2) at n = 30 (was 4.87 at δ = 0.05 and 5.0 at
    δ = 1e-4 above the exact 1.64 and 2.69): upper within 1.25x of the certified lower bound, and
    the oracle's worst case over all 465 configurations brackets the reported values."""
    randomizer = rz.subset_selection(5.0, 3, 2)
    shuffled = randomizer.shuffled(30)
    matrix = np.asarray(randomizer.matrix)
    for delta, exact in ((0.05, 1.64), (1e-4, 2.69)):
        lower, upper = shuffled.epsilon_interval(delta)
        assert lower == pytest.approx(exact, abs=0.005)
        assert upper <= 1.25 * lower and upper <= lower * (1 + 1e-9)
        worst_at = [max(exact_shuffled_delta(matrix, 0, 1, list(conf), eps)
                        for conf in itertools.combinations_with_replacement(range(3), 29))
                    for eps in (lower, upper)]
        assert worst_at[0] >= delta >= worst_at[1]


def test_over_budget_falls_back_to_the_other_bounds() -> None:
    randomizer = rz.from_matrix(random_matrix(11, 3, 3))
    (bound,) = [b for b in randomizer.fallbacks if isinstance(b, ExactSmallNBound)]
    n = 200  # 20100 configurations x 40401 cells: far above the budget
    assert MatrixExact(np.asarray(randomizer.matrix)).family(n) is None
    assert bound.shuffle(n) is None and bound.delta(0.5, n) == 1.0 and bound.epsilon(1e-6, n) == math.inf
    others = min([max(b.delta(0.5, n) for b in randomizer.cover)]
                 + [b.delta(0.5, n) for b in randomizer.fallbacks if b is not bound])
    assert randomizer.delta(0.5, n) == others
    lower = randomizer.lower_bound(n)
    assert lower is not None and not any(isinstance(p, ExactLowerInstance) for p in lower.pairs)
    # a tiny budget rejects even small n
    assert MatrixExact(np.asarray(randomizer.matrix), budget=1000).family(10) is None
    assert MatrixExact(np.asarray(randomizer.matrix)).family(10).work() <= WORK_BUDGET


def test_exact_value_tightens_from_matrix_and_catalog_bounds() -> None:
    """Within the budget the reported interval is the exact value (upper/lower − 1 ≤ 1e-9)."""
    for randomizer, n in ((rz.from_matrix(random_matrix(12, 3, 3)), 30),
                          (rz.krr(3.0, 3), 25), (rz.binary_rr(1.0), 100)):
        lower, upper = randomizer.shuffled(n).epsilon_interval(1e-4)
        assert 0.0 < lower <= upper <= lower * (1 + 1e-9)


def test_personalized_rounds_are_exact() -> None:
    """Seeded random two-group rounds (as tests/test_personalized.py, where the variation-ratio
    bound is 1.8–5.1x the exact value): now upper and lower bracket the brute force to 1e-9."""
    from tests.test_personalized import exact_round_delta

    rng = np.random.default_rng(7)
    for _ in range(4):
        groups = []
        for _ in range(2):
            matrix = rng.uniform(0.2, 1.0, size=(int(rng.integers(2, 4)), 3))
            groups.append((matrix / matrix.sum(axis=1, keepdims=True), int(rng.integers(1, 4))))
        round_ = rz.PersonalizedShuffle([(rz.from_matrix(m), c) for m, c in groups])
        assert round_.exact() is not None
        analyzed = [(np.asarray(randomizer.matrix), count) for randomizer, count in round_.groups]
        for eps in (0.1, 0.3):
            exact = exact_round_delta(analyzed, eps)
            lower, upper = round_.shuffled().delta_interval(eps)
            assert lower <= exact <= upper <= exact * (1 + 1e-9) + SLACK * math.exp(eps)
            assert lower >= exact * (1 - 1e-9) - SLACK * math.exp(eps)
