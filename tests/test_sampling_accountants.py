"""Poisson-sampled shuffle rounds through the accountants, Opacus and the parameter helpers."""

from __future__ import annotations

import math

import pytest
from dp_accounting import dp_event, privacy_accountant
from dp_accounting.pld import pld_privacy_accountant

from dpacct_shuffle import VariationRatio, randomizers
from dpacct_shuffle.accountants import ShufflePLDAccountant, ShuffleRdpAccountant
from dpacct_shuffle.events import ShuffleEvent
from dpacct_shuffle.sampling import poisson_sampled_profile, void_variation_ratios
from dpacct_shuffle.shuffle_round import ROUND_EPSILON_RTOL, round_epsilon

NR = privacy_accountant.NeighboringRelation
VR = VariationRatio.worst_case(1.0)
POPULATION, GAMMA, DELTA = 60, 0.3, 1e-4
SAMPLED = dp_event.PoissonSampledDpEvent(GAMMA, ShuffleEvent(VR, POPULATION))


def _profile_epsilon(profile, delta: float, hi: float) -> float:
    lo = 0.0
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if profile.delta(mid) > delta else (lo, mid)
    return hi


@pytest.mark.parametrize("relation", [NR.REPLACE_ONE, NR.ADD_OR_REMOVE_ONE])
def test_pld_of_one_sampled_round_is_its_profile(relation) -> None:
    profile = poisson_sampled_profile(VR, POPULATION, GAMMA, neighboring_relation=relation)
    expected = _profile_epsilon(profile, DELTA, 4.0)
    epsilon = ShufflePLDAccountant(relation).compose(SAMPLED).get_epsilon(DELTA)
    # the PLD may sit a little below the profile's own ε: Connect-the-Dots interpolates the
    # profile's grid values linearly in e^ε, which is valid (the true divergence curve is convex)
    # and can be below the profile between grid points
    assert 0.99 * expected <= epsilon <= 1.02 * expected + 1e-4


def test_add_remove_composes_with_dp_sgd_steps() -> None:
    """Opacus-style pipeline under add/remove-one: Poisson-sampled Gaussian steps (dp-accounting's
    own PLD) and sampled shuffle rounds; the composition is at least each part, at most their sum."""
    sgd = dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.0))
    total = ShufflePLDAccountant(NR.ADD_OR_REMOVE_ONE)
    total.compose(sgd, 100).compose(SAMPLED, 3)
    sgd_only = pld_privacy_accountant.PLDAccountant(NR.ADD_OR_REMOVE_ONE).compose(sgd, 100)
    rounds_only = ShufflePLDAccountant(NR.ADD_OR_REMOVE_ONE).compose(SAMPLED, 3)
    eps = total.get_epsilon(DELTA)
    assert eps >= max(sgd_only.get_epsilon(DELTA), rounds_only.get_epsilon(DELTA))
    assert eps <= sgd_only.get_epsilon(DELTA / 2) + rounds_only.get_epsilon(DELTA / 2)


def test_sampling_amplifies_the_issue_example() -> None:
    """Binary RR ε0 = 1, N = 1000, γ = 0.1, δ = 1e-3: exact ε ≈ 0.0098
    (tests/test_binary_rr_sampled.py: the exact sampled profile, certified in [0.00983, 0.00987]);
    the participant-count bound alone gave 0.2385, the void view 0.0130."""
    event = dp_event.PoissonSampledDpEvent(0.1, ShuffleEvent(randomizers.binary_rr(1.0), 1000))
    epsilon = ShufflePLDAccountant().compose(event).get_epsilon(1e-3)
    assert 0.0098 <= epsilon <= 0.0100


def test_rdp_refuses_add_remove_sampled_round_with_the_reason() -> None:
    accountant = ShuffleRdpAccountant(neighboring_relation=NR.ADD_OR_REMOVE_ONE)
    assert accountant.supports(SAMPLED) is False
    with pytest.raises(privacy_accountant.UnsupportedEventError, match="infinite"):
        accountant.compose(SAMPLED)
    assert ShuffleRdpAccountant().supports(SAMPLED)


@pytest.mark.parametrize("accountant", [ShufflePLDAccountant(NR.ADD_OR_REMOVE_ONE),
                                        ShuffleRdpAccountant(neighboring_relation=NR.ADD_OR_REMOVE_ONE)])
def test_unsampled_round_refused_under_add_remove_with_the_reason(accountant) -> None:
    with pytest.raises(privacy_accountant.UnsupportedEventError,
                       match="reveals whether the victim is present.*PoissonSampledDpEvent"):
        accountant.compose(ShuffleEvent(VR, POPULATION))
    cohort = dp_event.SampledWithoutReplacementDpEvent(POPULATION, 50, ShuffleEvent(VR, 50))
    assert accountant.supports(cohort) is False


def test_opacus_step_shuffle_with_sampling_probability() -> None:
    pytest.importorskip("opacus")
    from dpacct_shuffle.opacus import ShuffleAccountant

    accountant = ShuffleAccountant("add_or_remove_one")
    accountant.step_shuffle(VR, POPULATION, count=2, sampling_probability=GAMMA)
    assert accountant.events == [(SAMPLED, 2)]
    reference = ShufflePLDAccountant(NR.ADD_OR_REMOVE_ONE).compose(SAMPLED, 2)
    assert accountant.get_epsilon(DELTA) == reference.get_epsilon(DELTA)
    with pytest.raises(ValueError, match="sampling_probability"):
        accountant.step_shuffle(VR, POPULATION, sampling_probability=1.5)
    with pytest.raises(ValueError, match="sampling_probability=..."):
        accountant.step_shuffle(VR, POPULATION)  # unsampled: refused under add/remove


# ---------------------------------------------------------------------------------------------
# the void parameters
# ---------------------------------------------------------------------------------------------


def test_void_parameters_of_krr() -> None:
    """k-RR d = 5: same p and q, β' = γβ, clone rates γ·r, one neutral part per type."""
    base = randomizers.krr(1.0, 5).variation_ratio
    gamma = 0.3
    for vr in void_variation_ratios(base, gamma):
        assert (vr.p, vr.q0, vr.q1) == (base.p, base.q0, base.q1)
        assert vr.beta == pytest.approx(gamma * base.beta, rel=1e-14)
        assert vr.r0 == pytest.approx(gamma * base.r0, rel=1e-14)
        assert vr.neutral_mass == pytest.approx(gamma * base.neutral_mass + 1 - gamma, rel=1e-14)
        assert vr.neutral_share <= gamma * base.neutral_share + 1 - gamma
    # k-RR's own part has λ = 1: a single candidate, share γ·s + 1 − γ at weight = share
    (only,) = void_variation_ratios(base, gamma)
    assert only.neutral_share == pytest.approx(gamma * base.neutral_share + 1 - gamma, rel=1e-10)
    assert only.neutral_weight == pytest.approx(only.neutral_share, rel=1e-10)


def test_void_parameters_edges_and_errors() -> None:
    assert void_variation_ratios(VR, 1.0) == (VR,)
    (silent,) = void_variation_ratios(VR, 0.0)
    assert silent.beta == 0.0 and silent.delta(0.0, 10) == 0.0
    with pytest.raises(ValueError, match=r"sampling_probability must be in \[0.0, 1.0\]"):
        void_variation_ratios(VR, -0.1)
    with pytest.raises(TypeError, match="variation_ratio must be a VariationRatio"):
        void_variation_ratios("krr", 0.5)
    with pytest.raises(ValueError, match="neighboring_relation"):
        poisson_sampled_profile(VR, 10, 0.5, neighboring_relation=next(
            r for r in NR if r not in (NR.REPLACE_ONE, NR.ADD_OR_REMOVE_ONE)))
    with pytest.raises(ValueError, match="num_users"):
        poisson_sampled_profile(VR, 0, 0.5)
    assert poisson_sampled_profile(VR, 10, 0.0).delta(0.0) == 0.0
    assert math.isinf(poisson_sampled_profile(VR, 10, 0.5,
                                              neighboring_relation=NR.ADD_OR_REMOVE_ONE).epsilon_cap)


# ---------------------------------------------------------------------------------------------
# calibration of sampled rounds
# ---------------------------------------------------------------------------------------------


def test_calibration_of_sampled_rounds() -> None:
    from dpacct_shuffle.calibration import largest_epsilon0, shuffled_delta, smallest_num_users

    target, delta = 0.5, 1e-4
    eps0 = largest_epsilon0(VariationRatio.worst_case, target, delta, POPULATION,
                            sampling_probability=GAMMA, rtol=1e-2)
    sampled = poisson_sampled_profile(VariationRatio.worst_case(eps0), POPULATION, GAMMA)
    assert sampled.delta(target) <= delta
    assert poisson_sampled_profile(VariationRatio.worst_case(eps0 * 1.01), POPULATION,
                                   GAMMA).delta(target) > delta
    # sampling amplifies: a larger ε0 than for the unsampled round of the whole population
    assert eps0 > largest_epsilon0(VariationRatio.worst_case, target, delta, POPULATION, rtol=1e-2)
    users = smallest_num_users(VR, target, delta, sampling_probability=GAMMA,
                               neighboring_relation=NR.ADD_OR_REMOVE_ONE)
    assert shuffled_delta(VR, target, users, GAMMA, NR.ADD_OR_REMOVE_ONE) <= delta
    assert shuffled_delta(VR, target, users - 1, GAMMA, NR.ADD_OR_REMOVE_ONE) > delta
    with pytest.raises(ValueError, match="sampling_probability"):
        shuffled_delta(VR, target, 100, neighboring_relation=NR.ADD_OR_REMOVE_ONE)


# ---------------------------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------------------------


def test_cli_sampling_probability() -> None:
    import io
    import json

    from dpacct_shuffle.cli import main

    def run(*argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        return main(list(argv), stdout=out, stderr=err), out.getvalue(), err.getvalue()

    args = ("--randomizer", "worst_case_ldp", "--epsilon0", "1", "--users", str(POPULATION))
    code, out, _ = run("epsilon", *args, "--delta", "1e-4", "--sampling-probability",
                       str(GAMMA), "--json")
    assert code == 0
    payload = json.loads(out)
    expected = round_epsilon(randomizers.worst_case_ldp(1.0), POPULATION, 1e-4,
                             sampling_probability=GAMMA)
    assert payload["epsilon_upper"] == expected and payload["sampling_probability"] == GAMMA
    # the round's own profile, below the accountant's (a PLD of the curve form, discretised)
    # up to the tolerance of the ε search
    composed = ShufflePLDAccountant().compose(SAMPLED).get_epsilon(1e-4)
    assert expected <= composed * (1.0 + ROUND_EPSILON_RTOL)
    assert payload["epsilon_lower"] is None
    code, out, _ = run("delta", *args, "--epsilon", "0.3", "--sampling-probability", str(GAMMA),
                       "--no-lower")
    assert code == 0 and "each reporting with probability 0.3" in out
    code, _, err = run("epsilon", *args, "--delta", "1e-4", "--sampling-probability", "2")
    assert code == 2 and "--sampling-probability must be in [0.0, 1.0]" in err
    code, _, err = run("epsilon", *args, "--delta", "1e-4", "--sampling-probability", "0.3",
                       "--compare")
    assert code == 2 and "--compare" in err


def test_sampled_parallel_composition_round() -> None:
    """A RANDOM parallel round inside PoissonSampledDpEvent: the void view of the composite
    VariationRatio (both relations), under replace-one never above the participant-count bound of
    the composite bound."""
    from dpacct_shuffle.accountants import event_profile
    from dpacct_shuffle.events import ParallelCompositionEvent
    from dpacct_shuffle.profiles import poisson_sampled_shuffle_profile

    inner = ParallelCompositionEvent([VR, VariationRatio.worst_case(0.5)], POPULATION)
    event = dp_event.PoissonSampledDpEvent(GAMMA, inner)
    replace = event_profile(event)
    count = poisson_sampled_shuffle_profile(inner.composite_bound(), POPULATION, GAMMA)
    for eps in (0.05, 0.2):
        assert replace.delta(eps) <= count.delta(eps)
    assert replace.delta(0.2) < 0.5 * count.delta(0.2)  # amplified, not only δ scaled by γ
    add_remove = event_profile(event, NR.ADD_OR_REMOVE_ONE)
    assert 0.0 < add_remove.delta(0.2) < 1.0
