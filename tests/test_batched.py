"""The batched pair curve (dpacct_shuffle.core.batched): an upper bound at every ε, close to exact.

References: the dominating pair's divergence by full enumeration (tests/oracle.py, independent of
the package), exact shuffled output laws of k-ary randomized response over every configuration of
the other users, and the core's certified brackets and ε for large n.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpacct_shuffle import VariationRatio
from dpacct_shuffle import randomizers as rz
from dpacct_shuffle.accountants import ShufflePLDAccountant, event_with_user_counts
from dpacct_shuffle.core.batched import DEFAULT_LOWERING, batched_delta, supports_batched_delta
from dpacct_shuffle.events import ShuffleEvent
from dpacct_shuffle.profiles import BatchedRandomizer, batched_randomizer
from dpacct_shuffle.user_anchors import UserCountAnchors
from tests import oracle

# (p, beta, q, neutral_share): worst case (w = 0), generic share w/q, a proven larger share
PAIRS = [
    (math.exp(1.0), math.tanh(0.5), math.exp(1.0), None),
    (math.exp(2.0), 0.5, math.exp(2.0), None),
    (math.exp(2.0), 0.3, math.exp(2.0), 0.5),
]
EPSILONS = [0.0, 0.05, 0.3, 0.9, 1.5]
RECORDED_PAIRS = {
    "krr": rz.krr(2.0, 100).variation_ratio,
    "worst": VariationRatio.worst_case(0.5),
    "share": VariationRatio(math.exp(2.0), 0.5, math.exp(2.0), neutral_share=0.3),
}
# (pair, n, lowering, ε, δ(ε)): batched_delta(vr, n, lowering).delta(ε) as computed by the
# implementation of commit d90655c (binomial pmfs from log-factorials, K' band masses as
# differences of a cumulative sum, scipy's cdf/sf for wide bands), printed to 10 significant
# digits, at ε = 0 and at the ε (4 digits) where that curve crossed δ = 1e-4, 1e-6, …, 1e-14, 1e-15
RECORDED_CURVES = [
    ('krr', 20000, 0.0005, [0.0, 0.01086, 0.02008, 0.02683, 0.03238, 0.0372, 0.04152, 0.04353], [0.002470341291, 9.997355172e-05, 9.980101939e-07, 9.973780924e-09, 1.002092299e-10, 1.004133542e-12, 9.999802358e-15, 1.001585427e-15]),
    ('krr', 150000, 0.0005, [0.0, 0.002975, 0.006699, 0.009299, 0.0114, 0.01321, 0.01481, 0.01556], [0.0009026163665, 0.0001000371871, 9.995836185e-07, 9.998334974e-09, 1.000976821e-10, 9.916151983e-13, 1.011606483e-14, 1.000076688e-15]),
    ('krr', 1000000, 0.0005, [0.0, 0.0007273, 0.002348, 0.003414, 0.004258, 0.004978, 0.005614, 0.005908], [0.0003496380205, 0.0001000071891, 9.988539698e-07, 9.982199696e-09, 1.00286625e-10, 9.980598592e-13, 9.98283958e-15, 1.00178926e-15]),
    ('krr', 40000, 0.000125, [0.0, 0.007048, 0.01378, 0.01863, 0.02261, 0.02604, 0.02911, 0.03054], [0.001747080298, 9.998088256e-05, 9.986866225e-07, 1.004072003e-08, 9.942950766e-11, 1.001884188e-12, 9.999255494e-15, 9.967872151e-16]),
    ('worst', 3000, 0.0005, [0.0, 0.02013, 0.03477, 0.0457, 0.05474, 0.06262, 0.06968, 0.07297], [0.004107623663, 9.992084837e-05, 1.001645624e-06, 9.983655388e-09, 1.001928739e-10, 1.000318595e-12, 9.997221007e-15, 1.000681747e-15]),
    ('share', 7000, 0.0005, [0.0, 0.07095, 0.1105, 0.1411, 0.1668, 0.1893, 0.2097, 0.2192], [0.01205691154, 0.0001000334439, 1.003545052e-06, 9.944825785e-09, 9.914759316e-11, 1.004606028e-12, 9.926076822e-15, 9.970778277e-16])
]


def _vr(p: float, beta: float, q: float, share: float | None) -> VariationRatio:
    return VariationRatio(p, beta, q, neutral_share=share)


@pytest.mark.parametrize("params", PAIRS)
@pytest.mark.parametrize("n", [1, 2, 5, 12, 25])
def test_batched_curve_bounds_the_enumerated_pair(params: tuple, n: int) -> None:
    p, beta, q, share = params
    vr = _vr(p, beta, q, share)
    curve = batched_delta(vr, n)
    for eps in EPSILONS:
        exact = oracle.pair_delta_max(p, beta, q, None, share, n, eps) if eps < vr.epsilon0 else 0.0
        value = curve.delta(eps)
        assert value >= exact * (1.0 - 1e-12) - 1e-300, (n, eps, value, exact)
        # tight: every loss grows by at most about η·(1 + ε0) relative, so the curve is below the
        # exact pair's at ε/(1 + 4η) (masses rounded up by 1e-6, truncated tails ≤ 1e-12)
        shifted = eps / (1.0 + 4.0 * DEFAULT_LOWERING)
        closer = oracle.pair_delta_max(p, beta, q, None, share, n, shifted) if eps > 0.0 else exact
        assert value <= closer * (1.0 + 3e-6) + 1e-12, (n, eps, value, exact, closer)


@pytest.mark.parametrize("recorded", RECORDED_CURVES, ids=lambda r: f"{r[0]}-{r[1]}-{r[2]}")
def test_batched_curve_keeps_its_recorded_values(recorded: tuple) -> None:
    name, n, lowering, epsilons, deltas = recorded
    curve = batched_delta(RECORDED_PAIRS[name], n, lowering)
    values = curve.deltas(np.array(epsilons))
    assert np.all(np.abs(values / np.array(deltas) - 1.0) <= 1e-3), (values, deltas)
    # the array query and the point query run the same formula; numpy's SIMD loops and the scalar
    # libm may round exp/log differently in the last place
    np.testing.assert_allclose(values, [curve.delta(eps) for eps in epsilons], rtol=1e-12, atol=0)


def test_batched_curve_bounds_exact_shuffled_krr_for_every_configuration() -> None:
    eps0, d, n = 1.5, 3, 6
    matrix = oracle.krr_matrix(eps0, d)
    vr = rz.krr(eps0, d).variation_ratio
    curve = batched_delta(vr, n)
    for others in itertools.combinations_with_replacement(range(d), n - 1):
        for eps in (0.0, 0.3, 0.8):
            exact = oracle.exact_shuffled_delta(matrix, 0, 1, list(others), eps)
            assert curve.delta(eps) >= exact - 1e-14, (others, eps)


@pytest.mark.parametrize("vr", [rz.krr(2.0, 100).variation_ratio, VariationRatio.worst_case(0.5),
                                VariationRatio(math.exp(2.0), 0.5, math.exp(2.0),
                                               neutral_share=0.3)])
@pytest.mark.parametrize("n", [20_000, 500_000])
def test_batched_curve_against_the_core_for_large_n(vr: VariationRatio, n: int) -> None:
    curve = batched_delta(vr, n)
    core = vr.epsilon(1e-6, n)
    for eps in (0.0, 0.5 * core, core, 1.6 * core):
        assert curve.delta(eps) >= vr.delta_interval(eps, n, rtol=1e-4).lower * (1.0 - 1e-9)
        closer = eps / (1.0 + 4.0 * DEFAULT_LOWERING)
        # (at ε = 0 only the spread of Δ acts: E|Δ| grows by at most 2η relative)
        limit = vr.delta_interval(closer, n, rtol=1e-4).upper * (1.0 + 2.0 * DEFAULT_LOWERING)
        assert curve.delta(eps) <= limit + 1e-17
    # ε at 1e-6 by bisection on the curve: above the core's ε (within its rtol 1e-4), within 0.25 %
    low, high = 0.0, vr.epsilon0
    for _ in range(60):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if curve.delta(middle) > 1e-6 else (low, middle)
    assert core * (1.0 - 1e-4) <= high <= core * 1.0025


def test_batched_curve_stays_tight_for_a_large_epsilon0_and_many_users() -> None:
    # p = e^8: blocks wider than c0·(p + 1)/((p − 1)(1 + g)) would put their only level below
    # h·c1 and all their mass at the top loss (δ = 1 up to ε0)
    vr = rz.krr(8.0, 2).variation_ratio
    n = 3_000_000
    curve = batched_delta(vr, n)
    core = vr.epsilon(1e-6, n)
    assert curve.truncated_mass < 1e-15
    low, high = 0.0, vr.epsilon0
    for _ in range(60):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if curve.delta(middle) > 1e-6 else (low, middle)
    assert core * (1.0 - 1e-4) <= high <= core * 1.0025


def test_batched_curve_vanishes_at_epsilon0_and_is_non_increasing() -> None:
    vr = rz.krr(2.0, 10).variation_ratio
    curve = batched_delta(vr, 5000)
    eps = np.linspace(0.0, 2.5, 400)
    values = curve.deltas(eps)
    assert np.all(np.diff(values) <= 1e-18)
    assert np.all(values[eps >= vr.epsilon0] == 0.0)
    assert curve.delta(vr.epsilon0) == 0.0


def test_batched_curve_rejects_bad_input() -> None:
    vr = VariationRatio.worst_case(1.0)
    asymmetric = VariationRatio(math.exp(2.0), 0.5, math.exp(2.0), q1=math.exp(1.5) * 1.6)
    assert not supports_batched_delta(asymmetric)
    assert not supports_batched_delta(VariationRatio(math.inf, 0.4, 3.0))
    with pytest.raises(ValueError, match="equal clone rates"):
        batched_delta(asymmetric, 100)
    with pytest.raises(ValueError, match="lowering"):
        batched_delta(vr, 100, lowering=0.5)
    with pytest.raises(ValueError, match="n"):
        batched_delta(vr, 0)
    with pytest.raises(ValueError, match="epsilon"):
        batched_delta(vr, 100).delta(-1.0)


def test_batched_randomizer_keeps_the_randomizers_rule() -> None:
    krr = rz.krr(2.0, 100)
    wrapped = batched_randomizer(krr)
    assert isinstance(wrapped, BatchedRandomizer) and wrapped.randomizer is krr
    assert batched_randomizer(VariationRatio(math.inf, 0.4, 3.0)) == VariationRatio(math.inf, 0.4, 3.0)
    # binary RR: its exact fallback stays part of the minimum (read from its every-ε curve, which
    # is tighter than the point queries at δ-rtol 0.05), so the batched rule is as tight: between
    # the exact profile's certified lower end and the point-query rule
    rr = rz.binary_rr(1.0)
    for n in (50, 2000):
        for eps in (0.02, 0.1):
            plain = ShuffleEvent(rr, n).profile().delta(eps)
            batched = ShuffleEvent(batched_randomizer(rr), n).profile().delta(eps)
            assert rr.shuffled(n).delta_lower(eps) <= batched <= plain * (1.0 + 1e-3)


def test_grid_accountant_uses_the_batched_curve_and_stays_above_the_core() -> None:
    krr = rz.krr(2.0, 100)
    sizes = [12_000, 12_050, 40_000]
    grid = ShufflePLDAccountant(users_grid_ratio=1.01)
    for n in sizes:
        grid.compose(ShuffleEvent(krr, n))
    epsilon = grid.get_epsilon(1e-6)
    # the same anchors (12 000 for the first two rounds, 40 000) accounted one by one with the
    # core: within 0.3 %, and one round at an anchor is never below the core's own ε there
    anchors = UserCountAnchors(1.01)
    anchors.extend(sizes)
    assert anchors.anchors == (12_000, 40_000)
    reference = ShufflePLDAccountant()
    for n in sizes:
        reference.compose(event_with_user_counts(ShuffleEvent(krr, n), anchors.anchor))
    assert abs(epsilon / reference.get_epsilon(1e-6) - 1.0) <= 3e-3
    single = ShufflePLDAccountant(users_grid_ratio=1.01).compose(ShuffleEvent(krr, 40_000))
    core = krr.variation_ratio.epsilon(1e-6, 40_000, rtol=1e-6)
    assert core * (1.0 - 1e-6) <= single.get_epsilon(1e-6) <= core * 1.004


@pytest.mark.parametrize("lam, rate, eta", [(2.718, 0.11, 2.5e-4), (1.0, 0.25, 1.25e-4),
                                            (0.7, 0.4, 1e-3), (30.0, 0.02, 1e-4)])
def test_sparse_band_masses_are_the_dense_ones(lam: float, rate: float, eta: float) -> None:
    """Where a window's counts span more levels than they have values, each count's band is found
    directly (core.batched._sparse_band_entries); the masses are the dense computation's
    (_level_windows + _band_sums on the cuts), bit for bit, and each count lies in the band the
    cut rule defines (checked count by count in scalar arithmetic)."""
    from dpacct_shuffle.core import batched
    from dpacct_shuffle.core.binomial_rows import BinomialRows

    rng = np.random.default_rng(7)
    trials = rng.integers(0, 400, size=40)
    base = rng.uniform(0.0, 300.0, size=40) * (rng.random(40) < 0.9)
    t_grid = 0.5 * np.exp(math.log1p(eta) * np.arange(int(math.log(2000.0) / math.log1p(eta))))
    t_over_lam, offsets = t_grid / lam, base / lam
    k_first = np.maximum(batched._cuts(t_over_lam[None, :1], offsets, trials)[:, 0],
                         np.floor(trials * rate - 30.0).astype(np.int64))
    k_last = np.maximum(k_first, np.minimum(trials, np.ceil(trials * rate + 30.0).astype(np.int64)))
    span = int(np.max(k_last - k_first)) + 1
    top_k = k_first + span
    rows = BinomialRows(trials, k_first, span, rate)
    first, row, column, mass, top_band = batched._sparse_band_entries(rows, t_over_lam, offsets,
                                                                      k_first, trials)
    assert np.all(np.diff(row) >= 0)
    weights = np.zeros((len(trials), int(max(np.max(column), np.max(top_band))) + 1))
    weights[row, column] = mass
    dense_first, cuts = batched._level_windows(t_over_lam, offsets, k_first, top_k, trials)
    dense = batched._band_sums(rows, cuts - k_first[:, None])
    dense_top = np.maximum(np.sum(cuts[:, :-1] <= top_k[:, None], axis=1) - 1, 0)
    pmf = rows.values()
    for b in range(len(trials)):
        by_level = {int(dense_first[b]) + j: v for j, v in enumerate(dense[b]) if v != 0.0}
        assert by_level == {int(first[b]) + j: v for j, v in enumerate(weights[b]) if v != 0.0}
        if top_k[b] <= trials[b]:
            assert first[b] + top_band[b] == dense_first[b] + dense_top[b]
        # the cut rule count by count: the band of k is the last level whose cut is ≤ k
        cut = np.ceil(t_over_lam * (1.0 + 1e-9) - offsets[b])
        for i in np.flatnonzero(pmf[b] > 0.0):
            k = int(k_first[b]) + int(i)
            if k <= trials[b]:
                level = int(np.flatnonzero(cut <= k)[-1])
                assert weights[b, level - first[b]] >= pmf[b, i] * (1.0 - 1e-12)


def test_levels_of_counts_follow_the_cut_rule_at_rounding_ties() -> None:
    """The level of a count k is the last j with ⌈fl(t_j/λ·(1 + 1e-9)) − offset⌉ ≤ k even when
    k + offset rounds across a level (offsets built so that t_j/λ·(1 + 1e-9) − offset is within a
    few ulps of an integer): the binary search's answer is corrected on the computed cuts."""
    from dpacct_shuffle.core import batched

    rng = np.random.default_rng(11)
    t_over_lam = 0.3 * np.exp(math.log1p(1e-4) * np.arange(60_000))
    scaled = t_over_lam * (1.0 + 1e-9)
    rows = 400
    j = rng.integers(1000, len(t_over_lam) - 1000, size=rows)
    k = rng.integers(0, 50, size=rows)
    offsets = (scaled[j] - k) * (1.0 + rng.integers(-4, 5, size=rows) * 2.0**-52)
    counts = k[:, None] + np.arange(-1, 2)[None, :]
    counts = np.maximum(counts, 0)
    level = batched._levels_of_counts(t_over_lam, offsets, counts)
    for b in range(rows):
        cut = np.ceil(scaled - offsets[b])
        for c, found in zip(counts[b], level[b]):
            assert found == int(np.count_nonzero(cut <= c)) - 1  # a prefix (−1: none)
