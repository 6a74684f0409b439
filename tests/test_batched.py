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
    # binary RR: its exact fallback stays part of the minimum, so the batched rule is as tight
    rr = rz.binary_rr(1.0)
    for n in (50, 2000):
        for eps in (0.02, 0.1):
            plain = ShuffleEvent(rr, n).profile().delta(eps)
            batched = ShuffleEvent(batched_randomizer(rr), n).profile().delta(eps)
            assert plain * (1.0 - 1e-12) <= batched <= plain * (1.0 + 1e-3)


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
