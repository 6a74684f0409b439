"""The personalized bound at every ε (dpacct_shuffle.core.personalized_curve): above the exact
worst case of small rounds, close to the point-query bound, and what a round's PLD is built from.

References: exact shuffled output laws over every victim group, victim pair and configuration of
the other users (tests/test_personalized.py), the point-query bound and the certified lower bound.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpacct_shuffle import profiles
from dpacct_shuffle.accountants import ShufflePLDAccountant
from dpacct_shuffle.core.batched import DEFAULT_LOWERING
from dpacct_shuffle.core.personalized import PersonalizedPair, pairs_delta
from dpacct_shuffle.core.personalized_curve import homogeneous_variation_ratio
from dpacct_shuffle.events import ShuffleEvent
from dpacct_shuffle.randomizers import from_matrix, krr, personalized_krr, PersonalizedShuffle
from tests.test_personalized import KRR_CASES, exact_round_delta

EPSILONS = np.array([0.0, 0.2, 0.5, 0.9])


@pytest.mark.parametrize("domain, groups, eps", KRR_CASES)
def test_personalized_curve_bounds_the_exact_worst_case(domain: int, groups, eps: float) -> None:
    round_ = personalized_krr(domain, groups)
    values = round_.curve_deltas(EPSILONS, None, DEFAULT_LOWERING)
    assert values is not None
    matrices = [(krr(e0, domain).matrix, c) for e0, c in groups]
    for epsilon, value in zip(EPSILONS, values):
        exact = exact_round_delta(matrices, float(epsilon))
        assert value >= exact - 1e-15, (epsilon, value, exact)
        # the curve's pointwise minimum over candidates is never far above the point rule of the
        # personalized bound (round_.delta also takes the exact small-n value, which is lower)
        pairs = [pair for group in round_.victim_pairs() for pair in group]
        assert value <= pairs_delta(pairs, float(epsilon), 1e-3) * 1.01 + 1e-12


def _curve_epsilon(round_: PersonalizedShuffle, delta: float) -> float:
    low, high = 0.0, max(e0 for e0, _ in [(g[0].epsilon0, g[1]) for g in round_.groups])
    for _ in range(60):
        middle = 0.5 * (low + high)
        value = round_.curve_deltas(np.array([middle]), None, profiles.ROUND_LOWERING)[0]
        low, high = (middle, high) if value > delta else (low, middle)
    return high


@pytest.mark.parametrize("groups", [[(1.0, 500), (2.0, 500)], [(0.5, 50_000), (3.0, 50_000)]])
def test_personalized_curve_epsilon_is_within_a_fifth_of_a_percent(groups) -> None:
    round_ = personalized_krr(10, groups)
    point = round_.epsilon(1e-6, rtol=1e-5)
    ours = _curve_epsilon(round_, 1e-6)
    lower = round_.shuffled().epsilon_lower(1e-6)
    assert lower <= ours <= point * 1.002, (lower, ours, point)
    # (a pointwise minimum over more candidates than the point rule reads may be lower)
    assert ours >= point * (1.0 - 2e-3)


def test_personalized_round_pld_reads_the_curve() -> None:
    round_ = personalized_krr(10, [(0.5, 50_000), (3.0, 50_000)])
    bound = profiles.round_randomizer(round_)
    assert isinstance(bound, profiles.ShuffleBound) and bound.deltas_upper is not None
    accountant = ShufflePLDAccountant().compose(ShuffleEvent(round_, 100_000))
    point = round_.epsilon(1e-6, rtol=1e-5)
    assert point * (1.0 - 2e-3) <= accountant.get_epsilon(1e-6) <= point * 1.002


def test_homogeneous_pair_rates_are_rounded_down_and_asymmetric_shapes_have_no_curve() -> None:
    pair = PersonalizedPair(3.0, 0.4, (0.25, 0.25, 0.5), ((10, 0.6),))
    vr = homogeneous_variation_ratio(pair, 0.6)
    assert vr is not None
    assert vr.r0 == vr.r1 <= 0.6 * 0.25 and vr.r0 >= 0.6 * 0.25 * (1.0 - 1e-15)
    assert vr.neutral_share <= 0.6 * 0.5
    assert homogeneous_variation_ratio(pair._replace(proportions=(0.3, 0.2, 0.5)), 0.6) is None
    # generic matrices whose victim proportions differ: point queries (no curve)
    a = from_matrix([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.25, 0.25, 0.5]])
    b = from_matrix([[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5]])
    round_ = PersonalizedShuffle([(a, 3), (b, 3)])
    assert round_.curve_deltas(EPSILONS, None, DEFAULT_LOWERING) is None
