"""One shuffle round through the PLD path: discretisation from the events' scale, ε0 cap.

References: the core's own certified ε and profile, dp-accounting's randomized-response PLD and
the exact composition of binary randomized response (closed form), exact shuffled laws.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from scipy import stats

from dpacct_shuffle import VariationRatio, randomizers
from dpacct_shuffle import profiles
from dpacct_shuffle.accountants import (
    ShufflePLDAccountant,
    event_epsilon_cap,
    shuffle_event_pld,
)
from dpacct_shuffle.events import LDPCompositionEvent, ShuffleEvent


class RandomizedResponseBound:
    """Binary randomized response with parameter ε0, the same for every n (one local report)."""

    def __init__(self, epsilon0: float) -> None:
        self.epsilon0 = epsilon0

    def delta(self, epsilon: float, n: int) -> float:
        return profiles.randomized_response_delta(self.epsilon0, epsilon)


def exact_rr_composition_delta(eps0: float, k: int, epsilon: float) -> float:
    """δ(ε) of k-fold binary RR: losses ε0(k − 2j), j ~ Bin(k, 1/(1 + e^ε0))."""
    j = np.arange(k + 1)
    probs = stats.binom.pmf(j, k, 1.0 / (1.0 + math.exp(eps0)))
    losses = eps0 * (k - 2 * j)
    return float(np.sum(probs * np.maximum(0.0, -np.expm1(epsilon - losses))))


def test_discretization_for_scale_is_a_power_of_two_fraction_of_the_default() -> None:
    assert profiles.discretization_for_scale(1.0) == 1e-4  # coarse losses keep dp-accounting's
    d = profiles.discretization_for_scale(0.0027)
    assert d == 1e-4 * 2.0**-5 and d <= 0.0027 / profiles.LOSS_RESOLUTION < 2 * d
    for bad in (0.0, math.inf, math.nan):
        assert profiles.discretization_for_scale(bad) == 1e-4


@pytest.mark.parametrize("eps0,n", [(1.0, 100), (0.5, 5000)])
def test_one_round_through_the_accountant_is_within_0_2_percent_of_the_core(eps0, n) -> None:
    vr = VariationRatio.worst_case(eps0)
    accountant = ShufflePLDAccountant().compose(ShuffleEvent(vr, n))
    for delta in (1e-5, 1e-7, 1e-9):
        core = vr.epsilon(delta, n, rtol=1e-6)
        ours = accountant.get_epsilon(delta)
        assert core * (1 - 1e-6) <= ours <= 1.002 * core, (delta, ours, core)


@pytest.mark.parametrize("randomizer,n", [
    (randomizers.krr(2.0, 100), 100_000),
    (randomizers.krr(4.0, 10), 1_000),
    (VariationRatio.worst_case(0.5), 1_000_000),
    (VariationRatio(math.exp(2.0), 0.5, math.exp(2.0), neutral_share=0.3), 1_000_000),
    (VariationRatio.worst_case(3.0), 10_000),
])
def test_batched_round_through_the_accountant_is_within_0_2_percent_of_the_core(randomizer,
                                                                                n) -> None:
    # the default path builds the round's profile from the batched curve at ROUND_LOWERING
    assert isinstance(profiles.round_randomizer(randomizer), profiles.BatchedRandomizer)
    accountant = ShufflePLDAccountant().compose(ShuffleEvent(randomizer, n))
    for delta in (1e-5, 1e-9):
        if isinstance(randomizer, VariationRatio):  # upper end of a bracket of width 1e-4
            core = randomizer.epsilon(delta, n, rtol=1e-4)
        else:  # the rule of shuffled(n).epsilon(δ), without its lower bounds
            core = randomizer.epsilon(delta, n)
        ours = accountant.get_epsilon(delta)
        assert core * (1 - 1e-4) <= ours <= 1.002 * core, (delta, ours, core)


def test_round_randomizer_keeps_randomizers_the_curve_does_not_support() -> None:
    asymmetric = VariationRatio(math.exp(2.0), 0.5, math.exp(2.0), q1=math.exp(1.5) * 1.6)
    assert profiles.round_randomizer(asymmetric) is asymmetric
    # binary RR: its exact fallback stays in the rule
    wrapped = profiles.round_randomizer(randomizers.binary_rr(1.0))
    assert wrapped.lowering == profiles.ROUND_LOWERING and wrapped.randomizer.fallbacks


def test_one_catalog_round_through_the_accountant_is_within_0_2_percent_of_shuffled() -> None:
    """A catalog entry (k-RR, its cover and fallbacks): the PLD's ε is within 0.2 % of the
    entry's own ``shuffled(n).epsilon(δ)``, never below its certified lower bound, and finite at
    δ = 1e-20 (capped at ε0)."""
    krr, n = randomizers.krr(2.0, 10), 500
    accountant = ShufflePLDAccountant().compose(ShuffleEvent(krr, n))
    shuffled = krr.shuffled(n)
    for delta in (1e-5, 1e-8):
        ours = accountant.get_epsilon(delta)
        assert shuffled.epsilon_lower(delta) <= ours <= 1.002 * shuffled.epsilon(delta), delta
    assert accountant.get_epsilon(1e-20) <= krr.epsilon0 * (1 + 1e-9)


def test_round_pld_has_no_mass_at_infinity_and_losses_below_the_cap() -> None:
    event = ShuffleEvent(VariationRatio.worst_case(1.0), 100)
    pld = shuffle_event_pld(event)
    pmf = pld._pmf_remove
    assert pmf._infinity_mass == 0.0
    d = pmf._discretization
    losses = np.array(sorted(pmf._loss_probs)) * d
    assert losses.max() <= 1.0 + d * (1 + 1e-9) and losses.min() >= -1.0 - d * (1 + 1e-9)
    assert pld.get_delta_for_epsilon(1.0 + d * (1 + 1e-9)) == 0.0


def test_pld_dominates_the_core_profile_on_a_grid() -> None:
    """The pessimistic PLD's δ(ε) is >= the certified profile at every ε (grid or not)."""
    vr, n = VariationRatio.worst_case(1.0), 100
    profile = profiles.shuffle_profile(vr, n)
    pld = shuffle_event_pld(ShuffleEvent(vr, n))
    for eps in np.linspace(0.0, 1.05, 43):
        assert pld.get_delta_for_epsilon(float(eps)) >= profile.delta(float(eps)), eps


@pytest.mark.parametrize("eps0,k", [(0.5, 3), (1.0, 6)])
def test_composed_randomized_response_rounds_match_the_closed_form(eps0: float, k: int) -> None:
    """k rounds whose profile is exactly binary RR: ≥ the exact composition, and close to it and
    to dp-accounting's own randomized-response PLD."""
    accountant = ShufflePLDAccountant().compose(ShuffleEvent(RandomizedResponseBound(eps0), 1), k)
    reference = pld_lib.from_randomized_response(
        noise_parameter=2.0 / (1.0 + math.exp(eps0)), num_buckets=2,
        value_discretization_interval=1e-4).self_compose(k)
    for eps in np.linspace(0.0, k * eps0, 9)[:-1]:
        exact = exact_rr_composition_delta(eps0, k, float(eps))
        ours = accountant.get_delta(float(eps))
        assert exact * (1 - 1e-9) <= ours <= exact + 2e-3 * exact + 1e-12, (eps, ours, exact)
        assert ours <= reference.get_delta_for_epsilon(float(eps)) + 2e-3 * exact + 1e-12
    assert accountant.get_delta(k * eps0 * (1 + 1e-9)) == 0.0


def test_composed_epsilon_never_exceeds_the_sum_of_epsilon0_and_tiny_delta_is_finite() -> None:
    vr = VariationRatio.worst_case(1.0)
    accountant = ShufflePLDAccountant().compose(ShuffleEvent(vr, 100), 3)
    accountant.compose(LDPCompositionEvent([0.25]))
    cap = 3 * 1.0 + 0.25
    assert event_epsilon_cap(accountant.ledger) == pytest.approx(cap)
    for delta in (1e-20, 1e-30):
        eps = accountant.get_epsilon(delta)
        assert math.isfinite(eps) and eps <= cap * (1 + 1e-9)
    assert accountant.get_delta(cap * (1 + 1e-9)) == 0.0
    assert accountant.get_epsilon(1e-6) < 1.5  # the PLD itself is far below the cap
    # an event without a pure ε removes the cap
    accountant.compose(dp_event.GaussianDpEvent(3.0))
    assert event_epsilon_cap(accountant.ledger) == math.inf
    assert accountant.get_epsilon(1e-30) > cap


def test_interval_changes_rebuild_the_same_composition_as_a_fresh_accountant() -> None:
    coarse, fine = ShuffleEvent(VariationRatio.worst_case(1.0), 30), ShuffleEvent(
        VariationRatio.worst_case(0.5), 5000)
    gaussian = dp_event.GaussianDpEvent(20.0)
    grown = ShufflePLDAccountant().compose(coarse).compose(gaussian)
    first = grown.get_epsilon(1e-6)
    d_first = grown.value_discretization_interval
    grown.compose(fine, 50)
    assert grown.get_epsilon(1e-6) > first
    assert grown.value_discretization_interval != d_first  # the scale moved: rebuilt
    fresh = ShufflePLDAccountant().compose(fine, 50).compose(gaussian).compose(coarse)
    assert grown.get_epsilon(1e-6) == pytest.approx(fresh.get_epsilon(1e-6), rel=1e-9)


def test_bad_discretization_interval_is_refused() -> None:
    for bad in (0.0, -1e-4, 2.0):
        with pytest.raises(ValueError, match="value_discretization_interval"):
            ShufflePLDAccountant(value_discretization_interval=bad)
    with pytest.raises(TypeError, match="value_discretization_interval"):
        ShufflePLDAccountant(value_discretization_interval="1e-4")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="value_discretization_interval"):
        profiles.pld_from_profile(profiles.shuffle_profile(VariationRatio.worst_case(1.0), 10),
                                  value_discretization_interval=math.nan)


def _scalar_form(profile: profiles.PrivacyProfile) -> profiles.PrivacyProfile:
    """The same values without an array form (the grid is then refined pass by pass)."""
    return profiles.PrivacyProfile(
        lambda epsilon: float(profile.deltas(np.array([epsilon]))[0]), profile.epsilon_cap)


@pytest.mark.parametrize("users", [2_000, 50_000, 1_000_000])
def test_grid_refined_several_levels_per_evaluation_equals_pass_by_pass(users: int) -> None:
    """A profile with an array form (the batched curve) gets the very grid the pass-by-pass
    refinement gives for the same values, in fewer calls of the array form."""
    curve = ShuffleEvent(profiles.batched_randomizer(randomizers.krr(2.0, 100)), users).profile()
    calls: list[int] = []

    def counted(epsilons: np.ndarray) -> np.ndarray:
        calls.append(len(epsilons))
        return curve.deltas(epsilons)

    profile = profiles.PrivacyProfile(curve.delta, curve.epsilon_cap, "counted", counted)
    for d in (6.25e-6, 1e-4):
        calls.clear()
        fast = profiles.profile_grid(profile, d)
        fast_calls = len(calls)
        calls.clear()
        slow = profiles.profile_grid(_scalar_form(profile), d)
        np.testing.assert_array_equal(fast.rounded_epsilons, slow.rounded_epsilons)
        np.testing.assert_array_equal(fast.deltas, slow.deltas)
        # the initial points, then five bisection levels per call (pass by pass: 8 or more
        # passes here, from intervals of 0.0625 down to the final spacing)
        assert fast_calls <= 5 < len(calls), (fast_calls, len(calls))


def test_grid_of_a_profile_with_increasing_values_falls_back_to_pass_by_pass() -> None:
    """Values that increase somewhere couple the intervals through the running minimum: the
    grid is still the pass-by-pass one."""
    def wavy(epsilons: np.ndarray) -> np.ndarray:
        return np.clip(0.4 * np.exp(-8.0 * epsilons) + 0.05 * np.sin(40.0 * epsilons) ** 2, 0.0, 1.0)

    profile = profiles.PrivacyProfile(lambda e: float(wavy(np.array([e]))[0]), 1.0, "wavy", wavy)
    fast = profiles.profile_grid(profile, 1e-3)
    slow = profiles.profile_grid(_scalar_form(profile), 1e-3)
    np.testing.assert_array_equal(fast.rounded_epsilons, slow.rounded_epsilons)
    np.testing.assert_array_equal(fast.deltas, slow.deltas)
    with pytest.raises(ValueError, match="must return values in \\[0, 1\\]"):
        profiles.profile_grid(profiles.PrivacyProfile(
            lambda e: 0.5, 1.0, "bad", lambda e: np.where(e > 0.3, np.nan, 0.5)), 1e-3)
