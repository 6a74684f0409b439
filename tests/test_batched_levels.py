"""The multi-level curve (dpacct_shuffle.core.batched_levels): an upper bound at every ε, close to
the point-query multi-level bound.

References: the multi-level pair's divergence by enumerating every count vector of the
multinomial (written here, independent of the package), exact shuffled output laws over every
victim pair and configuration of the other users (tests/oracle.py), and the multi-level bound's
certified point queries for large n.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpacct_shuffle import randomizers as rz
from dpacct_shuffle.core import batched_levels
from dpacct_shuffle.core.batched import DEFAULT_LOWERING, BatchedDelta
from dpacct_shuffle.core.batched_levels import (
    LevelShape,
    enumerated_levels_curve,
    levels_curve,
    supports_levels_curve,
    variation_ratio_curve,
)
from dpacct_shuffle.core.multilevel import PrivacyLossLevels
from dpacct_shuffle.randomizers.multilevel import MultiLevelBound, corner_levels, matrix_levels
from tests import oracle

EPSILONS = [0.0, 0.05, 0.3, 0.9, 1.5]


def multilevel_fallback(randomizer: rz.Randomizer) -> MultiLevelBound:
    bounds = [b for b in randomizer.fallbacks if isinstance(b, MultiLevelBound)]
    assert len(bounds) == 1 and bounds[0].level_sets
    return bounds[0]


def enumerated_delta(levels: PrivacyLossLevels, n: int, eps: float) -> float:
    """(1/n)·E[(Z_1 + … + Z_n)⁺] of both directions by summing every count vector of the
    multinomial (counts N_t of each level, the rest at 0)."""
    from scipy import special

    m = levels.masses
    rest = 1.0 - math.fsum(m.tolist())
    grids = np.meshgrid(*[np.arange(n + 1)] * len(m), indexing="ij")
    counts = np.stack([g.ravel() for g in grids], axis=1).astype(float)
    left = n - counts.sum(axis=1)
    counts, left = counts[left >= 0], left[left >= 0]
    log_p = (special.gammaln(n + 1.0) - special.gammaln(left + 1.0)
             + special.xlogy(left, rest) + (counts * np.log(m) - special.gammaln(counts + 1.0)).sum(axis=1))
    x = math.exp(eps)
    best = 0.0
    for a, b in ((levels.ratios0, levels.ratios1), (levels.ratios1, levels.ratios0)):
        level = counts @ (a - x * b)
        positive = level > 0.0
        best = max(best, math.fsum((np.exp(log_p[positive]) * level[positive]).tolist()) / n)
    return best


CORNER_SETS = {
    "rappor": multilevel_fallback(rz.rappor(1.5, 4)).level_sets[0],
    "oue": multilevel_fallback(rz.optimized_unary_encoding(2.0, 5)).level_sets[0],
    "subset": multilevel_fallback(rz.subset_selection(2.0, 6, 2)).level_sets[0],
    "local-hashing": multilevel_fallback(rz.local_hashing(1.5, 3)).level_sets[0],
    "hadamard": multilevel_fallback(rz.hadamard_response(2.0, 8)).level_sets[0],
    # (Σ a_t m_t = ρ·(both + first) + second + neither = 1, the victim's law)
    "rho-e4": corner_levels(math.exp(4.0), 0.004, 0.01, 0.01, 0.99 - 0.014 * math.exp(4.0)),
    "one-neutral": corner_levels(math.exp(1.0), 0.0, 0.2, 0.2, 0.8 - 0.2 * math.exp(1.0)),
}


@pytest.mark.parametrize("name", sorted(CORNER_SETS))
def test_catalog_corner_levels_have_a_curve(name: str) -> None:
    levels = CORNER_SETS[name]
    shape = LevelShape.of(levels)
    assert shape is not None and supports_levels_curve(levels)
    assert shape.a > shape.b > 0.0 and 1 <= len(shape.neutrals) <= 2


@pytest.mark.parametrize("name", sorted(CORNER_SETS))
@pytest.mark.parametrize("n", [1, 2, 5, 12, 25])
def test_levels_curve_bounds_the_enumerated_pair(name: str, n: int) -> None:
    levels = CORNER_SETS[name]
    curve = levels_curve(levels, n)
    assert curve is not None
    for eps in EPSILONS:
        exact = enumerated_delta(levels, n, eps)
        value = curve.delta(eps)
        # (the reference's own float error is far below 1e-12 relative)
        assert value >= exact * (1.0 - 1e-12) - 1e-300, (n, eps, value, exact)
        # tight: at these n the blocks are single C values and the second neutral level's bands
        # single counts, so the only loosening is each T lowered by a relative ≤ η (the levels'
        # growth), which raises a loss ℓ = ln((T + hΔ)/(T − hΔ)) by ≤ η·T·|dℓ/dT| = η·sinh(ℓ)
        # ≤ η·sinh(ε0): the curve is below the pair's value at ε − η·sinh(ε0) (masses rounded up
        # by 1e-6, truncated tails ≤ 1e-12)
        shift = 1.01 * DEFAULT_LOWERING * math.sinh(levels.epsilon0)
        closer = enumerated_delta(levels, n, max(0.0, eps - shift))
        assert value <= closer * (1.0 + 3e-6) + 1e-12, (n, eps, value, exact, closer)


@pytest.mark.parametrize("make, n", [(lambda: rz.rappor(1.0, 3), 4),
                                     (lambda: rz.optimized_unary_encoding(1.5, 3), 4),
                                     (lambda: rz.subset_selection(1.5, 4, 2), 5),
                                     (lambda: rz.hadamard_response(1.5, 8, 2), 3)])
def test_levels_curve_bounds_the_exact_shuffled_law_of_every_configuration(make, n: int) -> None:
    randomizer = make()
    bound = multilevel_fallback(randomizer)
    matrix = randomizer.matrix
    d = matrix.shape[0]
    epsilons = np.array([0.0, 0.2, 0.6])
    values = bound.curve_deltas(epsilons, n, DEFAULT_LOWERING)
    assert values is not None
    for x0, x1 in itertools.combinations(range(d), 2):
        for others in itertools.combinations_with_replacement(range(d), n - 1):
            for eps, value in zip(epsilons, values):
                exact = oracle.exact_shuffled_delta(matrix, x0, x1, list(others), float(eps))
                assert value >= exact - 1e-14, (x0, x1, others, eps)


def _curve_epsilon(values_at, delta: float, high: float) -> float:
    low = 0.0
    for _ in range(60):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if values_at(middle) > delta else (low, middle)
    return high


def _assert_curve_epsilon_is_near_the_point_query(levels: PrivacyLossLevels, delta_of, n: int
                                                  ) -> None:
    """ε at δ = 1e-6 read from a curve: never where the bound's certified lower estimate is above
    δ, and at most 0.2 % above the point query's ε."""
    point = levels.epsilon(1e-6, n, rtol=1e-5)
    from_curve = _curve_epsilon(delta_of, 1e-6, levels.epsilon0)
    assert levels.delta_interval(from_curve, n).lower <= 1e-6 * (1.0 + 1e-9)
    assert point * (1.0 - 1e-3) <= from_curve <= point * 1.002, (from_curve, point)


@pytest.mark.parametrize("make, n", [(lambda: rz.rappor(2.0, 64), 1_000_000),
                                     (lambda: rz.rappor(4.0, 64), 300_000),
                                     (lambda: rz.local_hashing(4.0, 8), 1_000_000)])
def test_levels_curve_epsilon_is_within_a_fifth_of_a_percent_of_the_point_query(make, n) -> None:
    """ε at δ = 1e-6 from the curve (η = ROUND_LOWERING) against the multi-level bound's certified
    point queries: never below their lower estimate, at most 0.2 % above their ε."""
    from dpacct_shuffle.profiles import ROUND_LOWERING

    levels = multilevel_fallback(make()).level_sets[0]
    curve = levels_curve(levels, n, ROUND_LOWERING)
    assert curve is not None
    _assert_curve_epsilon_is_near_the_point_query(levels, curve.delta, n)


def test_levels_curve_is_none_outside_its_shape() -> None:
    # three distinct clone-like levels (a matrix pair): no curve, point queries instead
    levels = PrivacyLossLevels([2.0, 0.5, 1.5, 0.8], [0.5, 2.0, 0.8, 1.5], [0.1, 0.1, 0.2, 0.2])
    assert not supports_levels_curve(levels)
    assert levels_curve(levels, 100) is None
    # unequal clone masses
    levels = PrivacyLossLevels([3.0, 1.0, 1.0], [1.0, 3.0, 1.0], [0.1, 0.12, 0.5])
    assert levels_curve(levels, 100) is None


def test_levels_curve_vanishes_at_epsilon0_and_is_non_increasing() -> None:
    levels = CORNER_SETS["rappor"]
    curve = levels_curve(levels, 10**6)
    assert curve is not None
    epsilons = np.linspace(0.0, levels.epsilon0 * 1.1, 200)
    values = curve.deltas(epsilons)
    assert np.all(np.diff(values) <= 0.0)
    assert np.all(values[epsilons >= levels.epsilon0] == 0.0)
    assert values[0] <= levels.total_variation * (1.0 + 1e-6)


@pytest.mark.parametrize("make", [lambda: rz.rappor(4.0, 64), lambda: rz.local_hashing(4.0, 8)])
def test_multilevel_round_through_the_accountant_is_within_a_fifth_of_a_percent(make) -> None:
    """A round's PLD reads the multi-level fallback from its curve (no point queries) and its ε
    is within 0.2 % of the entry's own ``epsilon`` (cover searches, multi-level search), never
    below it by more than that search's relative tolerance."""
    from dpacct_shuffle import profiles
    from dpacct_shuffle.accountants import ShufflePLDAccountant
    from dpacct_shuffle.events import ShuffleEvent

    randomizer, n = make(), 1_000_000
    fallback = multilevel_fallback(randomizer)
    assert fallback.curve_deltas(np.array([0.01]), n, profiles.ROUND_LOWERING) is not None
    assert isinstance(profiles.round_randomizer(randomizer), profiles.BatchedRandomizer)
    accountant = ShufflePLDAccountant().compose(ShuffleEvent(randomizer, n))
    for delta in (1e-5, 1e-9):
        point = randomizer.epsilon(delta, n)
        ours = accountant.get_epsilon(delta)
        assert point * (1.0 - 1e-4) <= ours <= 1.002 * point, (delta, ours, point)


# -- the enumerated curve of any level set ---------------------------------------------------

GENERAL_SETS = {
    # a pair of a 3×3 matrix against its column minima (unequal clone masses, three ratios)
    "matrix-pair": PrivacyLossLevels([2.0, 0.5, 1.5, 0.8], [0.5, 2.0, 0.8, 1.5],
                                     [0.1, 0.1, 0.2, 0.2]),
    # unequal clone masses (not of clone-pair shape)
    "unequal-clones": PrivacyLossLevels([3.0, 1.0, 1.0], [1.0, 3.0, 1.0], [0.1, 0.12, 0.5]),
    # a Poisson-sampled (void) 3×3 matrix pair: a dominant neutral level and three small ones
    "void-pair": PrivacyLossLevels([1.0, 1.0, 1.2, 3.0], [1.0, 3.0, 2.0, 1.0],
                                   [0.9, 0.01, 0.025, 0.02]),
    # two neutral levels besides the clones, and a zero level (the rest)
    "two-neutrals": PrivacyLossLevels([4.0, 1.0, 1.0, 2.0, 0.0], [1.0, 3.0, 1.0, 2.0, 0.0],
                                      [0.05, 0.08, 0.3, 0.2, 0.05]),
}


def _enumerated_shift(levels: PrivacyLossLevels) -> float:
    """Largest amount by which the enumerated curve raises a loss: the main neutral count lowered
    within its band (relative ≤ 16η of the common level beyond two standard deviations, so
    ≤ 16η·sinh(ε0) on the loss) and the loss grid (relative 1e-4)."""
    return 1.01 * (16.0 * DEFAULT_LOWERING * math.sinh(levels.epsilon0)
                   + 1e-4 * levels.epsilon0) + 1e-11


@pytest.mark.parametrize("name, n", [(name, n) for name in sorted(GENERAL_SETS)
                                     for n in (1, 2, 5, 12, 25)
                                     if GENERAL_SETS[name].masses.size < 5 or n <= 12])
def test_enumerated_curve_bounds_the_enumerated_pair(name: str, n: int) -> None:
    levels = GENERAL_SETS[name]
    curve = enumerated_levels_curve(levels, n)
    assert curve is not None
    values = curve.deltas(np.array(EPSILONS))
    for eps, value in zip(EPSILONS, values):
        exact = enumerated_delta(levels, n, eps)
        assert value >= exact * (1.0 - 1e-12) - 1e-300, (n, eps, value, exact)
        assert curve.delta(eps) == value
        # tight: every loss is raised by at most the shift, masses by 1e-6, plus the truncated
        # windows' mass (≤ 1e-15 here); below the shift, δ(0) moves by at most the shift times
        # |dδ/dε| = e^ε·Q[L > ε] ≤ 1
        shift = _enumerated_shift(levels)
        closer = enumerated_delta(levels, n, max(0.0, eps - shift))
        assert value <= closer * (1.0 + 3e-6) + 1e-14 + max(0.0, shift - eps), (
            n, eps, value, exact, closer)


@pytest.mark.parametrize("name", sorted(GENERAL_SETS))
def test_enumerated_curve_in_small_chunks_is_the_same_curve(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cells evaluated in many chunks of a few count vectors each (the bands of every S padded
    to one width; S = n leaves a single band) give the curve of one chunk, up to the order of the
    bin sums, and bound the enumerated pair."""
    levels, n = GENERAL_SETS[name], 12
    batched_levels._enumerated_curve.cache_clear()
    whole = enumerated_levels_curve(levels, n)
    monkeypatch.setattr(batched_levels, "_ENUMERATED_CHUNK_CELLS", 16)
    batched_levels._enumerated_curve.cache_clear()
    try:
        chunked = enumerated_levels_curve(levels, n)
    finally:
        batched_levels._enumerated_curve.cache_clear()
    assert whole is not None and chunked is not None
    epsilons = np.array(EPSILONS)
    values = chunked.deltas(epsilons)
    np.testing.assert_allclose(values, whole.deltas(epsilons), rtol=1e-12, atol=1e-300)
    for eps, value in zip(EPSILONS, values):
        exact = enumerated_delta(levels, n, eps)
        assert value >= exact * (1.0 - 1e-12) - 1e-300, (eps, value, exact)
        shift = _enumerated_shift(levels)
        closer = enumerated_delta(levels, n, max(0.0, eps - shift))
        assert value <= closer * (1.0 + 3e-6) + 1e-14 + max(0.0, shift - eps), (eps, value)


@pytest.mark.parametrize("matrix, n", [
    ([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.25, 0.25, 0.5]], 4),
    ([[0.5, 0.2, 0.2, 0.1], [0.1, 0.6, 0.1, 0.2], [0.2, 0.2, 0.4, 0.2]], 3),
    # a Poisson-sampled round's void matrix (γ = 0.3: the ⊥ column)
    ([[0.18, 0.09, 0.03, 0.7], [0.06, 0.15, 0.09, 0.7], [0.075, 0.075, 0.15, 0.7]], 4),
])
def test_enumerated_curve_bounds_the_exact_shuffled_law_of_every_configuration(matrix, n) -> None:
    rows = np.asarray(matrix, dtype=float)
    level_sets = matrix_levels(rows)
    assert level_sets is not None
    bound = MultiLevelBound(level_sets)
    assert all(levels_curve(levels, n) is None for levels in bound.level_sets)
    epsilons = np.array([0.0, 0.1, 0.3, 0.6])
    values = bound.curve_deltas(epsilons, n, DEFAULT_LOWERING)
    assert values is not None
    gap = 0.0
    for x0, x1 in itertools.permutations(range(rows.shape[0]), 2):
        for others in itertools.combinations_with_replacement(range(rows.shape[0]), n - 1):
            for eps, value in zip(epsilons, values):
                exact = oracle.exact_shuffled_delta(rows, x0, x1, list(others), float(eps))
                assert value >= exact - 1e-14, (x0, x1, others, eps)
                gap = max(gap, exact)
    assert gap > 0.0


@pytest.mark.parametrize("n", [3, 8])
def test_unequal_clone_rate_curve_bounds_the_exact_pair(n: int) -> None:
    """A VariationRatio with unequal clone rates (q1 ≠ q) gets the enumerated curve of its three
    levels; it bounds the brute-force neutral-aware pair (tests/oracle.py) in both directions."""
    from dpacct_shuffle import VariationRatio

    vr = VariationRatio(5.0, 0.4, 3.0, q1=5.0, neutral_share=0.14)
    curve = variation_ratio_curve(vr, n)
    assert curve is not None and not isinstance(curve, BatchedDelta)
    for eps in (0.0, 0.1, 0.4, 1.0):
        exact = oracle.pair_delta_max(5.0, 0.4, 3.0, 5.0, 0.14, n, eps)
        assert curve.delta(eps) >= exact * (1.0 - 1e-12), (eps, curve.delta(eps), exact)
        assert curve.delta(eps) <= vr.delta(eps, n) * 1.01 + 1e-12


@pytest.mark.parametrize("n", [1000, 10_000])
def test_enumerated_curve_epsilon_is_within_a_fifth_of_a_percent_of_the_point_query(n) -> None:
    """ε at δ = 1e-6 from the enumerated curve (η = ROUND_LOWERING) of a void matrix pair against
    the multi-level bound's certified point queries: never below their lower estimate, at most
    0.2 % above their ε."""
    from dpacct_shuffle.profiles import ROUND_LOWERING

    levels = PrivacyLossLevels([1.0, 1.0, 1.2, 3.0], [1.0, 3.0, 2.0, 1.0],
                               [0.99, 0.001, 0.0025, 0.002])
    curve = enumerated_levels_curve(levels, n, ROUND_LOWERING)
    assert curve is not None
    _assert_curve_epsilon_is_near_the_point_query(levels, curve.delta, n)


def test_enumerated_curve_is_none_for_infinite_ratios_and_huge_windows() -> None:
    assert enumerated_levels_curve(PrivacyLossLevels([2.0, 0.0], [1.0, 1.0], [0.3, 0.3]), 10) is None
    # clone masses of 0.3 at 10⁶ users: windows of thousands of counts each
    assert enumerated_levels_curve(GENERAL_SETS["matrix-pair"], 10**6) is None


def test_multilevel_curve_falls_back_to_a_coarser_lowering_within_a_fifth_of_a_percent() -> None:
    """At 10⁴ users the two-neutral computation at η = ROUND_LOWERING exceeds its limits; the
    multi-level fallback then reads the level set's curve at a coarser η (at most
    COARSEST_LOWERING), within 0.2 % of the point queries' ε. (Here the point query evaluates the
    four levels through the convex-order reduction, an upper bound itself, whose lower end is not
    a lower bound of the level set's value: the curve may be below it. That the curve is an upper
    bound at every η is asserted against the enumerated pair and the exact shuffled laws above.)"""
    from dpacct_shuffle.profiles import ROUND_LOWERING
    from dpacct_shuffle.randomizers.multilevel import COARSEST_LOWERING

    n = 10**4
    bound = multilevel_fallback(rz.rappor(2.0, 16))
    levels = bound.level_sets[0]
    assert levels_curve(levels, n, ROUND_LOWERING) is None
    assert levels_curve(levels, n, COARSEST_LOWERING) is not None

    def delta_of(eps: float) -> float:
        values = bound.curve_deltas(np.array([eps]), n, ROUND_LOWERING)
        assert values is not None
        return float(values[0])

    point = levels.epsilon(1e-6, n, rtol=1e-5)
    from_curve = _curve_epsilon(delta_of, 1e-6, levels.epsilon0)
    assert point * (1.0 - 2e-3) <= from_curve <= point * 1.002, (from_curve, point)


@pytest.mark.parametrize("seed", range(6))
def test_two_neutral_bands_from_entries_equal_the_dense_rows_bit_for_bit(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """_TwoNeutralTypes.bands sums the sparse rows (each count's level found directly) as entries;
    the same bands, bit for bit, as with every row a dense array over its levels."""
    rng = np.random.default_rng(seed)
    lam_b, lam_r = sorted(rng.uniform(0.2, 3.0, size=2))
    two = batched_levels._TwoNeutralTypes((lam_b, rng.uniform(0.05, 0.4)),
                                          (lam_r, rng.uniform(0.05, 0.4)),
                                          r_c=rng.uniform(0.05, 0.5), width=int(rng.integers(1, 4)))
    kappa = rng.uniform(0.5, 2.0)
    starts = np.sort(rng.integers(0, 60, size=int(rng.integers(3, 40))))
    trials = rng.integers(1, 400, size=len(starts))
    # a geometric grid of levels, fine enough that many rows are sparse
    growth = rng.uniform(1e-4, 3e-3)
    t_grid = 0.5 * kappa * (1.0 + growth) ** np.arange(int(math.log(4000.0) / growth))
    z = float(rng.uniform(3.0, 8.0))
    sparse_rows = []
    neutral_count_bands = batched_levels._neutral_count_bands

    def counted(*args: object) -> object:
        rows = neutral_count_bands(*args)  # type: ignore[arg-type]
        sparse_rows.append(isinstance(rows, batched_levels._BandEntries))
        return rows

    monkeypatch.setattr(batched_levels, "_neutral_count_bands", counted)
    entries = two.bands(trials, starts, t_grid, kappa, z)
    assert any(sparse_rows)
    monkeypatch.setattr(batched_levels, "_neutral_count_bands",
                        batched_levels._Bands.of_neutral_counts)
    dense = two.bands(trials, starts, t_grid, kappa, z)
    assert np.array_equal(entries.first_level, dense.first_level)
    assert np.array_equal(entries.weights, dense.weights)
    assert np.array_equal(entries.below, dense.below)
    assert (entries.rtol, entries.span, entries.values) == (dense.rtol, dense.span, dense.values)
    assert np.sum(dense.weights) > 0.5
