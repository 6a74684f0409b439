"""Closed-form multi-level bounds of the set-boost entries (subset selection, local hashing,
Hadamard response): the combinatorial levels against the levels read off the exhaustive matrices,
soundness against brute force (exact shuffled laws, every configuration of the others), and the
tightening they bring at n = 1000.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpacct_shuffle import randomizers as rz
from dpacct_shuffle.core import multilevel
from dpacct_shuffle.randomizers.multilevel import (MultiLevelBound, corner_levels, matrix_levels,
                                                   pair_levels)
from tests.test_multilevel import worst_exact


def closed_form(randomizer: rz.Randomizer) -> MultiLevelBound:
    bounds = [b for b in randomizer.fallbacks if isinstance(b, MultiLevelBound)]
    assert len(bounds) == 1 and bounds[0].level_sets
    return bounds[0]


@pytest.mark.parametrize("make", [
    lambda: rz.subset_selection(2.0, 5, 2), lambda: rz.subset_selection(1.0, 6, 3),
    lambda: rz.subset_selection(3.0, 4, 3),
    lambda: rz.hadamard_response(2.0, 8), lambda: rz.hadamard_response(2.0, 16, 2),
    lambda: rz.hadamard_response(1.0, 16, 1, 5), lambda: rz.hadamard_response(2.0, 32, 4),
    lambda: rz.hadamard_response(2.0, 16, 2, 9), lambda: rz.hadamard_response(1.5, 16, 4)])
def test_set_boost_closed_form_levels_equal_the_matrix_levels(make) -> None:
    """The column minimum of the explicit matrix gives the same level sets (hence the same bound):
    the combinatorics of the docstrings, including the outputs every Hadamard input boosts."""
    randomizer = make()
    closed = closed_form(randomizer)
    exhaustive = matrix_levels(randomizer.matrix)
    assert exhaustive is not None and len(exhaustive) == len(closed.level_sets)
    exhaustive_bound = MultiLevelBound(exhaustive)
    for n in (5, 60):
        for eps in (0.1, 0.5):
            assert closed.delta(eps, n) == pytest.approx(exhaustive_bound.delta(eps, n), rel=1e-9)


@pytest.mark.parametrize("eps0, l, d", [(2.0, 2, 3), (1.0, 3, 3), (3.0, 2, 4)])
def test_local_hashing_levels_are_those_of_the_base_blanket(eps0, l, d) -> None:
    """Against the blanket P(h)·g (below the column minimum only at constant hashes) every pair of
    the uniform family of all functions has the closed-form levels."""
    randomizer = rz.local_hashing(eps0, l, d)
    g = 1.0 / (math.exp(eps0) + l - 1.0)
    blanket = np.full(randomizer.matrix.shape[1], g / l**d)
    closed = closed_form(randomizer)
    for i, j in itertools.combinations(range(d), 2):
        pair = pair_levels(randomizer.matrix, blanket, i, j)
        for n in (5, 60):
            for eps in (0.1, 0.5):
                assert closed.delta(eps, n) == pytest.approx(pair.delta(eps, n), rel=1e-9)


def hash_family_matrix(eps0: float, l: int, functions: list[tuple[int, ...]]) -> np.ndarray:
    """Local hashing with a uniformly drawn hash from ``functions`` (tuples h(0), …, h(d − 1))."""
    e = math.exp(eps0)
    g = 1.0 / (e + l - 1.0)
    d = len(functions[0])
    matrix = np.full((d, len(functions) * l), g / len(functions))
    for x in range(d):
        for k, h in enumerate(functions):
            matrix[x, k * l + h[x]] = e * g / len(functions)
    return matrix


@pytest.mark.parametrize("eps0", [0.5, 2.0])
def test_local_hashing_collision_lower_bound_covers_a_family_with_more_collisions(eps0) -> None:
    """A family whose pairs collide with different probabilities (1/4, 1/2, 3/4 here): the
    closed form at the smallest of them is >= the exact worst case of every pair (monotonicity in
    the collision probability), and at collision 0 it is larger still."""
    functions = [(0, 0, 0), (0, 0, 1), (0, 1, 1), (1, 0, 0)]
    matrix = hash_family_matrix(eps0, 2, functions)
    collisions = [sum(h[i] == h[j] for h in functions) / len(functions)
                  for i, j in itertools.combinations(range(3), 2)]
    assert sorted(collisions) == [0.25, 0.5, 0.75]
    at_min = closed_form(rz.local_hashing(eps0, 2, collision_probability=min(collisions)))
    at_zero = closed_form(rz.local_hashing(eps0, 2, collision_probability=0.0))
    n = 3
    for eps in (0.0, 0.1, 0.3):
        exact = max(worst_exact(matrix, i, j, n, eps)
                    for i, j in itertools.combinations(range(3), 2))
        assert exact > 0.0 or eps > 0.0
        assert at_min.delta(eps, n) >= exact
        assert at_zero.delta(eps, n) >= at_min.delta(eps, n)


@pytest.mark.parametrize("make", [lambda: rz.subset_selection(1.5, 4, 2),
                                  lambda: rz.local_hashing(1.5, 2, 3),
                                  lambda: rz.hadamard_response(1.5, 8, 2)])
def test_closed_form_levels_cover_brute_force(make) -> None:
    randomizer = make()
    bound = closed_form(randomizer)
    matrix = randomizer.matrix
    n = 3 if matrix.shape[1] <= 8 else 2
    for eps in (0.0, 0.3, 0.8):
        exact = max(worst_exact(matrix, i, j, n, eps)
                    for i, j in itertools.combinations(range(matrix.shape[0]), 2))
        assert exact <= bound.delta(eps, n) <= 4.0 * exact + 1e-12


def test_corner_levels_drop_empty_levels() -> None:
    levels = corner_levels(3.0, 0.0, 0.1, 0.1, 0.5)
    assert levels.masses.tolist() == [0.1, 0.1, 0.5]
    assert levels.ratios0.tolist() == [3.0, 1.0, 1.0]


@pytest.mark.parametrize("make, clone, reported", [
    (lambda: rz.local_hashing(4.0, 8), 1.669, 1.496),
    (lambda: rz.subset_selection(4.0, 100, 10), 1.674, 1.462)])
def test_closed_form_levels_tighten_the_clone_bound(make, clone, reported) -> None:
    """ε0 = 4, n = 1000, δ = 1e-6 (windowed sum of the four levels): well below the clone pair
    (its δ at its own ε, 1.669 or 1.674, is still about 1e-6), above the certified lower bound."""
    randomizer = make()
    upper = closed_form(randomizer).epsilon(1e-6, 1000)
    assert upper == pytest.approx(reported, abs=1e-3)
    for vr in randomizer.variation_ratios:
        assert vr.delta(clone - 2e-3, 1000) > 1e-6 >= vr.delta(clone + 2e-3, 1000)
    assert randomizer.shuffled(1000).epsilon_lower(1e-6) < upper


@pytest.mark.parametrize("seed", range(4))
def test_windowed_sum_over_a_negative_widest_atom_matches_the_exact_sum(seed) -> None:
    """The windowed sum takes the atom of largest count variance in closed form; here it is a
    negative one (mass near 1/2, the others small): it stays >= the exact multinomial sum and
    within its stated relative accuracy, at the levels of the RAPPOR-like corner structure."""
    rng = np.random.default_rng(400 + seed)
    values = np.array([-3.0 - rng.uniform(), -1.0 - rng.uniform(), -0.2 * rng.uniform() - 0.05,
                       1.5 + rng.uniform()])
    masses = np.array([0.05, 0.02, 0.45, 0.06]) * rng.uniform(0.8, 1.2, size=4)
    assert np.argmax(masses * (1.0 - masses)) == 2
    n = 40
    exact = multilevel.exact_direction(values, masses, n)
    windowed = multilevel.windowed_direction(values, masses, n, 1e-6)
    assert windowed is not None
    assert windowed.lower <= exact
    assert exact * (1.0 - 1e-10) <= windowed.upper <= exact * (1.0 + 1e-6)


def test_upper_tail_of_many_shared_pairs_equals_the_elementwise_values() -> None:
    """Large arrays evaluate each distinct (t, c) once: bit-identical to betainc per element."""
    from scipy import special

    from dpacct_shuffle.core.inner_expectation import upper_tail

    rng = np.random.default_rng(5)
    c = rng.integers(50, 90, size=200_000).astype(float)
    t = rng.integers(-2, 95, size=c.size).astype(float)
    inner = (t >= 1) & (t <= c)
    expected = np.where(t <= 0, 1.0, 0.0)
    expected[inner] = special.betainc(t[inner], c[inner] - t[inner] + 1.0, 0.3)
    assert np.array_equal(upper_tail(t, c, 0.3), expected)


def test_hadamard_response_across_blocks_only_keeps_its_clone_pair() -> None:
    """Blocks of two outputs: every pair is across blocks, three levels, the cover's clone pair
    with share w; no closed-form multi-level bound is attached (the matrix one has nothing to add)."""
    randomizer = rz.hadamard_response(1.5, 8, 4)
    assert all(not b.level_sets for b in randomizer.fallbacks if isinstance(b, MultiLevelBound))
    assert randomizer.shuffled(50).delta(0.2) == min(
        vr.delta(0.2, 50) for bound in randomizer.cover for vr in bound.candidates)


def test_subset_selection_beyond_the_float_range_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="subset_size"):
        rz.subset_selection(3.0, 10**6, 500)
