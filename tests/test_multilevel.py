"""The multi-level (blanket) bound: soundness against brute force, tightness against the core.

References:
* exact shuffled δ of finite randomizers by enumerating output histograms for every victim pair and
  every configuration of the other users (tests/oracle.py);
* the core's certified bracket of the clone pair, which the three levels of a VariationRatio
  reproduce term by term (core/multilevel.py);
* the exact-sum path, which the convex-order reduction must never undercut.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpacct_shuffle import VariationRatio
from dpacct_shuffle import randomizers as rz
from dpacct_shuffle.core import multilevel
from dpacct_shuffle.core.multilevel import PrivacyLossLevels
from dpacct_shuffle.randomizers.multilevel import MultiLevelBound, matrix_levels, pair_levels
from tests.oracle import exact_shuffled_delta, shuffled_delta_by_sequences

EPSILONS = (0.0, 0.1, 0.3, 0.6, 1.0)


def worst_exact(matrix: np.ndarray, i: int, j: int, n: int, eps: float) -> float:
    """max over every configuration of the n − 1 others of the exact shuffled δ of pair (i, j)
    (output histograms; by output sequences when there are more than 8 outputs)."""
    exact = exact_shuffled_delta if matrix.shape[1] <= 8 else shuffled_delta_by_sequences
    return max(exact(matrix, i, j, list(others), eps)
               for others in itertools.combinations_with_replacement(range(matrix.shape[0]), n - 1))


def random_matrix(rng: np.random.Generator, inputs: int, outputs: int) -> np.ndarray:
    raw = rng.uniform(0.05, 1.0, size=(inputs, outputs)) ** 3
    return raw / raw.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("seed", range(6))
def test_pair_bound_covers_every_configuration_of_random_matrices(seed: int) -> None:
    rng = np.random.default_rng(seed)
    matrix = rz.from_matrix(random_matrix(rng, 3, 4)).matrix
    blanket = matrix.min(axis=0)
    n = 3
    ratios = []
    for i, j in itertools.combinations(range(3), 2):
        levels = pair_levels(matrix, blanket, i, j)
        for eps in EPSILONS:
            exact = worst_exact(matrix, i, j, n, eps)
            bound = levels.delta(eps, n)
            assert bound >= exact
            if exact > 1e-6:
                ratios.append(bound / exact)
    # the blanket keeps every other user's report except its own excess over the column minimum
    assert max(ratios) < 3.0
    assert min(ratios) < 1.5


@pytest.mark.parametrize("seed", range(4))
def test_convex_order_path_never_undercuts_the_exact_sum(seed: int, monkeypatch) -> None:
    """Soundness only: at small n merging the positive levels into one costs up to ~50% here; the
    reduction is meant for large n (tightness there: the RAPPOR test and the benchmark)."""
    rng = np.random.default_rng(100 + seed)
    matrix = rz.from_matrix(random_matrix(rng, 3, 5)).matrix
    levels = pair_levels(matrix, matrix.min(axis=0), 0, 1)
    n = 6
    exact = [levels.delta(eps, n) for eps in EPSILONS]
    monkeypatch.setattr(multilevel, "EXACT_CELL_LIMIT", 0)
    monkeypatch.setattr(multilevel, "WINDOW_CELL_LIMIT", 0)
    multilevel._levels_bracket.cache_clear()
    reduced = [levels.delta(eps, n) for eps in EPSILONS]
    multilevel._levels_bracket.cache_clear()
    for value, bound, eps in zip(exact, reduced, EPSILONS):
        assert bound >= value * (1.0 - 1e-12)
        assert bound >= worst_exact(matrix, 0, 1, n, eps)


@pytest.mark.parametrize("seed", range(4))
def test_windowed_path_covers_brute_force(seed: int, monkeypatch) -> None:
    rng = np.random.default_rng(200 + seed)
    matrix = rz.from_matrix(random_matrix(rng, 3, 5)).matrix
    levels = pair_levels(matrix, matrix.min(axis=0), 0, 1)
    n = 6
    exact_sum = [levels.delta(eps, n) for eps in EPSILONS]
    monkeypatch.setattr(multilevel, "EXACT_CELL_LIMIT", 0)
    multilevel._levels_bracket.cache_clear()
    windowed = [levels.delta(eps, n) for eps in EPSILONS]
    multilevel._levels_bracket.cache_clear()
    for value, bound, eps in zip(exact_sum, windowed, EPSILONS):
        assert bound >= worst_exact(matrix, 0, 1, n, eps)
        assert value * (1.0 - 1e-12) <= bound <= value * (1.0 + 1e-6) + 1e-15


@pytest.mark.parametrize("seed", range(6))
def test_windowed_sum_matches_the_exact_sum(seed: int) -> None:
    """Random laws of four or five atoms, n = 40: the windowed sum (truncated, closed form over one
    positive atom) is >= the exact multinomial sum and within its stated relative accuracy (the
    positive values are several at odd seeds)."""
    rng = np.random.default_rng(300 + seed)
    k = 4 + seed % 2
    values = np.sort(rng.uniform(-3.0, 1.0 + seed % 2, size=k))
    values[-1] = abs(values[-1]) + 0.5
    masses = rng.dirichlet(np.ones(k + 1))[:k] * 0.9
    n = 40 if k == 4 else 20
    exact = multilevel.exact_direction(values, masses, n)
    windowed = multilevel.windowed_direction(values, masses, n, 1e-6)
    assert windowed is not None
    # the exact sum is itself an upper value, above the true one by its summation margin
    # (cells + 8)·u < 2e-11 relative here: the true value is >= exact·(1 − 1e-10)
    assert windowed.lower <= exact
    assert exact * (1.0 - 1e-10) <= windowed.upper <= exact * (1.0 + 1e-6)


def _direction_by_fractions(values: list[float], masses: list[float], n: int) -> float:
    """(1/n)·E[(Σ_{i ≤ n} Z_i)⁺] in exact rational arithmetic over every multinomial cell (Z_i =
    values[t] w.p. masses[t], 0 with the rest)."""
    from fractions import Fraction
    atoms = [Fraction(v) for v in values] + [Fraction(0)]
    probs = [Fraction(m) for m in masses]
    probs.append(1 - sum(probs))
    total = Fraction(0)
    for draw in itertools.product(range(len(atoms)), repeat=n):
        level = sum(atoms[t] for t in draw)
        if level > 0:
            weight = Fraction(1)
            for t in draw:
                weight *= probs[t]
            total += weight * level
    return float(total / n)


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("values, masses, n", [
    # −1.7e308 stands for a level below the float range; 1e217·n would overflow unscaled sums
    ([-np.finfo(float).max, -1.9e130, 1.4e217], [3.6e-218, 0.5, 3.6e-218], 3),
    ([-np.finfo(float).max, 1e300, 1.5e308], [0.25, 0.25, 0.25], 3),
    ([-2.0, 1e-310, 0.5], [0.3, 0.3, 0.2], 4),
])
def test_exact_sum_at_the_ends_of_the_float_range(values, masses, n) -> None:
    """Values near the float range's ends (sums that overflow, subnormal levels): the exact sum is
    ≥ the rational value and within its margin, or 1 (its cap) when that is above 1. The margin
    on each cell's log-probability is 64u·(Σ|log terms| + 1), about 1.1e-11 at n = 3 masses of
    e^−500: 1e-10 relative covers it."""
    exact = multilevel.exact_direction(np.array(values), np.array(masses), n)
    reference = min(1.0, _direction_by_fractions(values, masses, n))
    assert reference <= exact <= max(reference * (1.0 + 1e-10), reference + 1e-300)


@pytest.mark.parametrize("p, beta, q, share", [
    (math.e, 0.3, math.e, None), (math.exp(2.0), 0.5, math.exp(2.0), 0.1), (3.0, 0.2, 4.0, None)])
def test_three_levels_of_a_variation_ratio_reproduce_the_core(p, beta, q, share) -> None:
    vr = VariationRatio(p, beta, q, neutral_share=share)
    levels = PrivacyLossLevels.of_variation_ratio(vr)
    for n in (4, 40, 200):
        for eps in (0.05, 0.3, 0.8):
            core = vr.delta_interval(eps, n, rtol=1e-4)
            value = levels.delta_interval(eps, n, rtol=1e-4)
            assert value.upper >= core.lower * (1.0 - 1e-9)
            assert value.upper <= core.upper * (1.0 + 1e-4)


FAMILIES = [
    ("rappor", lambda: rz.rappor(2.0, 3)),
    ("oue", lambda: rz.oue(2.0, 3)),
    ("subset_selection", lambda: rz.subset_selection(2.0, 4, 2)),
    ("local_hashing", lambda: rz.local_hashing(2.0, 2, 3)),
    ("hadamard_response", lambda: rz.hadamard_response(2.0, 8)),
    ("sampling_rappor", lambda: rz.sampling_rappor(2.0, 3, 2)),
]


@pytest.mark.parametrize("name, make", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_catalog_families_multilevel_bound_covers_brute_force(name, make) -> None:
    randomizer = make()
    bounds = [b for b in randomizer.fallbacks if isinstance(b, MultiLevelBound)]
    assert len(bounds) == 1 and bounds[0].level_sets, name
    matrix = randomizer.matrix
    n = 3 if matrix.shape[1] * matrix.shape[0] <= 32 else 2
    for eps in (0.0, 0.3, 0.8):
        exact = max(worst_exact(matrix, i, j, n, eps)
                    for i, j in itertools.combinations(range(matrix.shape[0]), 2))
        assert bounds[0].delta(eps, n) >= exact
        assert randomizer.shuffled(n).delta(eps) >= exact


@pytest.mark.parametrize("make", [lambda: rz.rappor(4.0, 3), lambda: rz.oue(1.0, 4),
                                  lambda: rz.rappor(1.0, 2)])
def test_unary_closed_form_levels_equal_the_matrix_levels(make) -> None:
    randomizer = make()
    closed = [b for b in randomizer.fallbacks if isinstance(b, MultiLevelBound)][0]
    exhaustive = MultiLevelBound(matrix_levels(randomizer.matrix))
    for n in (5, 60):
        for eps in (0.1, 0.5):
            assert closed.delta(eps, n) == pytest.approx(exhaustive.delta(eps, n), rel=1e-6)


def test_rappor_multilevel_tightens_the_clone_bound() -> None:
    """RAPPOR ε0 = 4, n = 1000, δ = 1e-6: clone pairs 1.664, blanket (windowed sum) 1.4884, below
    the optimal decomposition's 1.490 reported by Su, Cheng, Wang (float FFT); still above the
    certified lower bound."""
    shuffled = rz.rappor(4.0, 100).shuffled(1000)
    clone = min(vr.epsilon(1e-6, 1000) for vr in shuffled.randomizer.variation_ratios)
    upper = shuffled.epsilon(1e-6)
    lower = shuffled.epsilon_lower(1e-6)
    assert clone == pytest.approx(1.664, abs=1e-3)
    assert lower < upper <= 1.490


@pytest.mark.parametrize("make", [lambda: rz.rappor(2.0, 64),
                                  lambda: rz.optimized_unary_encoding(2.0, 64)])
def test_delta_floor_is_below_the_certified_bound_and_decides_the_skip(make) -> None:
    """delta_floor (coarse lower ends of the convex-order problems) never exceeds the refined
    certified δ; at n = 10⁴ it is positive and within 4 % of it (3.3 % for RAPPOR at ε = 0.12,
    4 coarse bands against the refined bound), so MultiLevelBound.epsilon_below
    skips the refinement where the bound cannot help, with the answer the refined check gives."""
    randomizer = make()
    bound = [b for b in randomizer.fallbacks if isinstance(b, MultiLevelBound)][0]
    levels = bound.level_sets[0]
    for eps in (0.05, 0.0875, 0.12):
        floor, upper = levels.delta_floor(eps, 10_000), levels.delta(eps, 10_000)
        assert 0.96 * upper < floor <= upper
    assert levels.delta_floor(0.3, 30) == 0.0  # every count vector summed: no floor
    assert levels.delta_floor(levels.epsilon0, 10_000) == 0.0
    current = randomizer.cover[0].epsilon(1e-6, 10_000)
    point = (1.0 - 1e-3) * current
    assert levels.delta_floor(point, 10_000) > 1e-6  # the refinement is skipped …
    assert levels.delta(point, 10_000) > 1e-6  # … where it would have found the same
    assert bound.epsilon_below(1e-6, 10_000, current) == current


def test_matrix_bound_is_inert_where_the_clone_pair_has_every_level() -> None:
    """k-RR: three levels per pair, the clone analysis evaluates the same expression."""
    krr = rz.krr(2.0, 4)
    bound = [b for b in krr.fallbacks if isinstance(b, MultiLevelBound)][0]
    assert bound.level_sets == ()
    assert bound.delta(0.1, 100) == 1.0 and bound.epsilon(1e-6, 100) == math.inf
    assert krr.shuffled(100).delta(0.1) == min(vr.delta(0.1, 100) for vr in krr.variation_ratios)


def test_levels_validate() -> None:
    with pytest.raises(ValueError, match="masses"):
        PrivacyLossLevels([1.0], [1.0], [0.0])
    with pytest.raises(ValueError, match="equal length"):
        PrivacyLossLevels([1.0, 2.0], [1.0], [0.5])
    with pytest.raises(ValueError, match="ratios0"):
        PrivacyLossLevels([math.nan], [1.0], [0.5])
    with pytest.raises(ValueError, match="sum to at most 1"):
        PrivacyLossLevels([1.0, 1.0], [1.0, 1.0], [0.7, 0.7])
    with pytest.raises(ValueError, match="victim"):
        PrivacyLossLevels([3.0], [1.0], [0.5])
    levels = PrivacyLossLevels([2.0, 0.5], [0.5, 2.0], [0.4, 0.4])
    with pytest.raises(ValueError, match="epsilon"):
        levels.delta(-1.0, 10)
    with pytest.raises(ValueError, match="n"):
        levels.delta(0.1, 0)
    assert levels.delta(levels.epsilon0, 10) == 0.0
