"""Local-side calibration: certified at the returned value, failing just beyond it, and consistent
with the FMT closed form and the exact shuffled binary randomized response."""

from __future__ import annotations

import math

import pytest
from scipy import optimize

from dpacct_shuffle import VariationRatio, randomizers
from dpacct_shuffle.calibration import largest_epsilon0, shuffled_delta, smallest_num_users
from dpacct_shuffle.core.closed_forms import fmt_epsilon
from dpacct_shuffle.randomizers.binary_rr_exact import binary_rr_exact_delta
from dpacct_shuffle.sampling import NeighborRel

RTOL = 1e-3


def test_largest_epsilon0_krr_is_certified_and_maximal() -> None:
    target, delta, n = 0.5, 1e-6, 1000
    epsilon0 = largest_epsilon0(randomizers.krr, target, delta, n, domain_size=4, rtol=RTOL)
    assert shuffled_delta(randomizers.krr(epsilon0, 4), target, n) <= delta
    assert shuffled_delta(randomizers.krr(epsilon0 * (1 + 2 * RTOL), 4), target, n) > delta
    # the core's own epsilon search agrees (its bracket is rtol=1e-4 wide)
    assert randomizers.krr(epsilon0, 4).shuffled(n).epsilon(delta) <= target * (1 + 1e-4)
    # a larger domain has a larger neutral share, hence more amplification
    assert largest_epsilon0(randomizers.krr, target, delta, n, domain_size=16) > epsilon0


def test_largest_epsilon0_beats_fmt_closed_form() -> None:
    target, delta, n = 0.5, 1e-6, 1000
    # epsilon0 at which the FMT closed form (Feldman, McMillan & Talwar, arXiv:2208.04591, Thm 3.2) reaches the target
    fmt_epsilon0 = optimize.brentq(lambda e0: fmt_epsilon(e0, n, delta) - target, 1e-3, 2.0)
    ours = largest_epsilon0(VariationRatio.worst_case, target, delta, n, rtol=RTOL)
    assert shuffled_delta(VariationRatio.worst_case(ours), target, n) <= delta
    assert ours > fmt_epsilon0 * 1.5  # the numerical bound is much tighter than the closed form


def test_largest_epsilon0_is_sound_against_exact_binary_rr() -> None:
    target, delta, n = 1.0, 1e-4, 40
    epsilon0 = largest_epsilon0(randomizers.binary_rr, target, delta, n, rtol=RTOL)
    assert epsilon0 > target
    assert binary_rr_exact_delta(epsilon0, n, target) <= delta


def test_largest_epsilon0_ceiling() -> None:
    assert largest_epsilon0(VariationRatio.worst_case, 2.0, 1e-6, 10**6, max_epsilon0=3.0) == 3.0


def test_smallest_num_users_is_certified_and_minimal() -> None:
    randomizer = randomizers.krr(2.0, 4)
    target, delta = 0.5, 1e-6
    n = smallest_num_users(randomizer, target, delta)
    assert shuffled_delta(randomizer, target, n) <= delta < shuffled_delta(randomizer, target, n - 1)
    # consistency with the other search: at n users, epsilon0 = 2 is feasible
    assert largest_epsilon0(randomizers.krr, target, delta, n, domain_size=4,
                            rtol=RTOL) >= 2.0 / (1 + RTOL)
    # a VariationRatio works as well (krr's own parameters give the same answer)
    assert smallest_num_users(randomizer.variation_ratio, target, delta) == n


def test_smallest_num_users_trivial_and_unreachable() -> None:
    assert smallest_num_users(randomizers.krr(0.5, 4), 0.5, 1e-6) == 1
    with pytest.raises(ValueError, match="max_users"):
        smallest_num_users(randomizers.krr(3.0, 4), 0.1, 1e-9, max_users=100)


@pytest.mark.parametrize("call, error", [
    (lambda: largest_epsilon0(randomizers.krr, 0.0, 1e-6, 100, domain_size=4), ValueError),
    (lambda: largest_epsilon0(randomizers.krr, 0.5, 1.0, 100, domain_size=4), ValueError),
    (lambda: largest_epsilon0(randomizers.krr, 0.5, 1e-6, 0, domain_size=4), ValueError),
    (lambda: largest_epsilon0(randomizers.krr, 0.5, 1e-6, 100, max_epsilon0=0.4,
                              domain_size=4), ValueError),
    (lambda: largest_epsilon0(randomizers.krr, 0.5, 1e-6, 100, rtol=0.0, domain_size=4),
     ValueError),
    (lambda: largest_epsilon0("krr", 0.5, 1e-6, 100), TypeError),
    (lambda: smallest_num_users("krr", 0.5, 1e-6), TypeError),
    (lambda: smallest_num_users(randomizers.krr(1.0, 4), math.nan, 1e-6), ValueError),
    (lambda: smallest_num_users(randomizers.krr(1.0, 4), 0.5, 0.0), ValueError),
    (lambda: smallest_num_users(randomizers.krr(1.0, 4), 0.5, 1e-6, max_users=0), ValueError),
])
def test_bad_input(call, error) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error):
        call()


def test_largest_epsilon0_of_a_fixed_size_cohort_is_certified_maximal_and_amplified() -> None:
    target, delta, population, m = 0.3, 1e-4, 400, 40
    family = VariationRatio.worst_case
    rtol = 1e-2
    epsilon0 = largest_epsilon0(family, target, delta, population, rtol=rtol, sample_size=m)
    assert shuffled_delta(family(epsilon0), target, population, sample_size=m) <= delta
    assert shuffled_delta(family(epsilon0 * (1 + 2 * rtol)), target, population,
                          sample_size=m) > delta
    # sampling m of the population amplifies: a larger ε0 than a round of m users allows
    assert epsilon0 > largest_epsilon0(family, target, delta, m, rtol=rtol)


@pytest.mark.parametrize("kwargs, message", [
    ({"sample_size": 10, "sampling_probability": 0.1}, "not both"),
    ({"sample_size": 10, "neighboring_relation": NeighborRel.ADD_OR_REMOVE_ONE},
     "REPLACE_ONE only"),
    ({"sample_size": 101}, "sample_size must be <= population_size"),
])
def test_bad_cohort_arguments(kwargs, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=message):
        shuffled_delta(VariationRatio.worst_case(1.0), 0.1, 100, **kwargs)


def test_largest_epsilon0_treats_a_refused_epsilon0_as_infeasible() -> None:
    # the family refuses ε0 > 3 (as catalog entries refuse values outside their range): the search
    # stays below it instead of crashing, and the result passes the certified test
    def family(epsilon0: float) -> randomizers.Randomizer:
        if epsilon0 > 3.0:
            raise ValueError(f"epsilon0 must be in [1e-06, 3.0], got {epsilon0!r}")
        return randomizers.krr(epsilon0, 10)

    result = largest_epsilon0(family, 2.5, 1e-6, 1000, max_epsilon0=20.0)
    # every ε0 ≤ 3 passes here (krr(3, 10) shuffled among 1000 is (2.5, 1e-6)-DP), so the
    # bracket closes on the refusal boundary: ε0·(1 + rtol) is refused
    assert largest_epsilon0(lambda e: randomizers.krr(e, 10), 2.5, 1e-6, 1000,
                            max_epsilon0=3.0) == 3.0
    assert 3.0 / (1.0 + 1e-3) <= result <= 3.0


def test_largest_epsilon0_reports_a_refusal_at_the_first_probe() -> None:
    def family(epsilon0: float) -> randomizers.Randomizer:
        raise ValueError("epsilon0 must be in [5.0, 6.0]")

    with pytest.raises(ValueError, match="refused by the family: epsilon0 must be in"):
        largest_epsilon0(family, 1.0, 1e-6, 1000)
