"""Tests for dpacct_shuffle.profiles: pessimistic PLDs and RDP curves from privacy profiles.

Independent references: exact hockey-stick divergences / Rényi divergences of explicit pairs
(numpy), dp-accounting's own exact PLD of an explicit pair, brute-force mixture randomizers, and
exact shuffled divergences from tests/oracle.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats

from dpacct_shuffle import VariationRatio
from dpacct_shuffle import profiles
from dpacct_shuffle.lemmas import chained_ldp
from tests import oracle

ORDERS = np.array([1.5, 2.0, 3.0, 5.0, 8.0, 16.0, 32.0, 64.0, 256.0])


# ---------------------------------------------------------------------------------------------
# an explicit pair: shuffled binary randomized response, others all holding 0
# ---------------------------------------------------------------------------------------------


def binary_rr_shuffle_pair(eps0: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Laws of the number of 1-reports when the victim holds 0 (P) or 1 (Q), n-1 others hold 0."""
    low = 1.0 / (1.0 + math.exp(eps0))
    others = stats.binom.pmf(np.arange(n), n - 1, low)
    law0 = np.convolve(others, [1.0 - low, low])
    law1 = np.convolve(others, [low, 1.0 - low])
    return law0, law1


def hockey_stick(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    return float(np.maximum(p - math.exp(eps) * q, 0.0).sum())


def renyi(p: np.ndarray, q: np.ndarray, order: float) -> float:
    mask = (p > 0) & (q > 0)
    return float(special.logsumexp(order * np.log(p[mask]) + (1 - order) * np.log(q[mask]))
                 / (order - 1))


def pair_profile(eps0: float, n: int) -> tuple[profiles.PrivacyProfile, np.ndarray, np.ndarray]:
    law0, law1 = binary_rr_shuffle_pair(eps0, n)

    def delta_upper(eps: float) -> float:
        return max(hockey_stick(law0, law1, eps), hockey_stick(law1, law0, eps))

    return profiles.PrivacyProfile(delta_upper, eps0, "binary RR pair"), law0, law1


@pytest.mark.parametrize("eps0,n", [(1.0, 50), (2.0, 200), (4.0, 30)])
def test_pld_dominates_explicit_pair_for_all_real_epsilon(eps0: float, n: int) -> None:
    profile, law0, law1 = pair_profile(eps0, n)
    pld = profiles.pld_from_profile(profile)
    for eps in np.linspace(-eps0 - 0.5, eps0 + 0.5, 161):
        exact = max(hockey_stick(law0, law1, eps), hockey_stick(law1, law0, eps))
        assert pld.get_delta_for_epsilon(float(eps)) >= exact - 1e-14, eps


@pytest.mark.parametrize("eps0,n", [(1.0, 50), (2.0, 200)])
def test_pld_epsilon_close_to_exact_pair(eps0: float, n: int) -> None:
    """ε read off our PLD vs dp-accounting's own (pessimistic) PLD of the exact pair."""
    profile, law0, law1 = pair_profile(eps0, n)
    pld = profiles.pld_from_profile(profile)
    logs0 = {i: math.log(v) for i, v in enumerate(law0) if v > 0}
    logs1 = {i: math.log(v) for i, v in enumerate(law1) if v > 0}
    exact = [pld_lib.from_two_probability_mass_functions(a, b) for a, b in ((logs0, logs1),
                                                                           (logs1, logs0))]
    for delta in (1e-3, 1e-6, 1e-9):
        ours = pld.get_epsilon_for_delta(delta)
        reference = max(e.get_epsilon_for_delta(delta) for e in exact)
        # both are pessimistic discretisations of the same curve: within a few grid steps
        assert abs(ours - reference) <= 5e-4 + 2e-3 * reference, (delta, ours, reference)


@settings(max_examples=max(5, settings.default.max_examples // 3))
@given(eps_a=st.floats(0.2, 4.0), n_a=st.integers(2, 60), eps_b=st.floats(0.2, 4.0),
       n_b=st.integers(2, 60), epsilon=st.floats(-1.0, 8.0))
def test_composed_plds_dominate_the_exact_product_pair(eps_a, n_a, eps_b, n_b, epsilon) -> None:
    """Composition soundness: our PLDs composed by dp-accounting dominate the exact composition
    (product laws) in both directions — this needs dominance at negative losses too."""
    (profile_a, a0, a1), (profile_b, b0, b1) = pair_profile(eps_a, n_a), pair_profile(eps_b, n_b)
    # PLDs compose on a common interval (each one's automatic interval follows its own scale)
    composed = profiles.pld_from_profile(profile_a, 1e-4).compose(
        profiles.pld_from_profile(profile_b, 1e-4))
    p, q = np.outer(a0, b0).ravel(), np.outer(a1, b1).ravel()
    mixed_p, mixed_q = np.outer(a0, b1).ravel(), np.outer(a1, b0).ravel()
    exact = max(hockey_stick(p, q, epsilon), hockey_stick(q, p, epsilon),
                hockey_stick(mixed_p, mixed_q, epsilon), hockey_stick(mixed_q, mixed_p, epsilon))
    assert composed.get_delta_for_epsilon(epsilon) >= exact - 1e-13


def test_connect_the_dots_points_are_a_valid_convex_curve() -> None:
    profile, _, _ = pair_profile(2.0, 100)
    grid = profiles.profile_grid(profile)
    ks, ys = profiles.connect_the_dots_points(grid)
    assert np.all(np.diff(ks) > 0)
    assert np.all(np.diff(ys) <= 0)
    xs = np.exp(ks * grid.discretization)
    slopes = np.diff(np.concatenate([[1.0], ys])) / np.diff(np.concatenate([[0.0], xs]))
    assert np.all(np.diff(slopes) >= -1e-9)  # convex
    assert slopes[0] >= -1.0 - 1e-12  # a hockey-stick curve starts with slope >= -1
    assert ys[-1] == 0.0 and ks[-1] == math.ceil(2.0 / grid.discretization)


def test_grid_skips_the_deep_tail_but_keeps_the_cap_point() -> None:
    """δ falls below 1e-16 long before the cap: no evaluation there, yet the chord to the cap
    point (δ = 0) keeps every grid value and stays above the profile."""
    profile, law0, law1 = pair_profile(3.0, 3000)
    grid = profiles.profile_grid(profile)
    eps = grid.rounded_epsilons * grid.discretization
    assert grid.rounded_epsilons[-1] == math.ceil(3.0 / grid.discretization) and grid.deltas[-1] == 0.0
    assert 0.0 < grid.deltas[-2] <= 1e-16 and eps[-2] < 2.0  # the last evaluated point is kept
    assert grid.deltas[-2] == profile.delta(eps[-2])
    pld = profiles.pld_from_grid(grid)
    for e in np.linspace(0.0, 3.2, 120):
        exact = max(hockey_stick(law0, law1, e), hockey_stick(law1, law0, e))
        assert pld.get_delta_for_epsilon(float(e)) >= exact - 1e-15, e


def test_grid_values_are_upper_bounds_and_non_increasing() -> None:
    calls = []

    def bumpy(eps: float) -> float:  # a non-monotone (but valid, >= RR) upper bound
        calls.append(eps)
        return min(1.0, profiles.randomized_response_delta(1.0, eps) * (1.2 + 0.1 * math.sin(40 * eps)))

    grid = profiles.profile_grid(profiles.PrivacyProfile(bumpy, 1.0))
    assert np.all(np.diff(grid.deltas) <= 0)
    for k, value in zip(grid.rounded_epsilons, grid.deltas):
        assert value <= bumpy(k * grid.discretization)
        assert value >= profiles.randomized_response_delta(1.0, k * grid.discretization) - 1e-15


@pytest.mark.parametrize("eps0,n", [(1.0, 100), (2.0, 300), (3.0, 200), (2.0, 10_000), (4.0, 100_000)])
def test_shuffle_pld_tightness_against_core(eps0: float, n: int) -> None:
    """One ShuffleEvent: ε from the PLD is >= the core's ε and within 0.2 % of it.

    Discretisation chosen from the round's loss scale (>= 500 steps per scale unit), adaptive
    grid with ε tolerance d + 1e-3·ε.
    """
    vr = VariationRatio.worst_case(eps0)
    pld = profiles.pld_from_profile(profiles.shuffle_profile(vr, n))
    for delta in (1e-6, 1e-8, 1e-10):
        core_eps = vr.epsilon(delta, n, rtol=1e-6)
        ours = pld.get_epsilon_for_delta(delta)
        assert ours >= core_eps * (1.0 - 1e-6), (delta, ours, core_eps)
        assert ours <= 1.002 * core_eps, (delta, ours, core_eps)


def test_honest_fraction_uses_floor() -> None:
    assert profiles.honest_users(1000, 0.5) == 500
    assert profiles.honest_users(10, 0.25) == 2
    assert profiles.honest_users(10, 0.3) == 2  # binary 0.3 < 3/10: never rounded up
    assert profiles.honest_users(10, 1.0) == 10
    assert profiles.honest_users(7, 0.99) == 6
    assert profiles.honest_users(3, 0.1) == 1
    vr = VariationRatio.worst_case(1.0)
    robust = profiles.shuffle_profile(vr, 1000, 0.25)
    plain = profiles.shuffle_profile(vr, 250)
    assert robust.delta(0.3) == plain.delta(0.3)
    with pytest.raises(ValueError, match="honest_fraction"):
        profiles.honest_users(10, 0.0)


# ---------------------------------------------------------------------------------------------
# RDP
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps0,n", [(1.0, 50), (2.0, 200)])
def test_rdp_from_profile_bounds_exact_renyi(eps0: float, n: int) -> None:
    profile, law0, law1 = pair_profile(eps0, n)
    ours = profiles.rdp_from_profile(profile, ORDERS)
    for order, value in zip(ORDERS, ours):
        exact = max(renyi(law0, law1, order), renyi(law1, law0, order))
        assert value >= exact - 1e-12, (order, value, exact)
        assert value <= max(1.25 * exact, exact + 1e-3), (order, value, exact)


@settings(max_examples=max(5, settings.default.max_examples // 3))
@given(eps0=st.floats(0.1, 5.0), n=st.integers(2, 400), order=st.floats(1.01, 300.0))
def test_rdp_bound_is_sound_on_random_pairs(eps0: float, n: int, order: float) -> None:
    profile, law0, law1 = pair_profile(eps0, n)
    bound = profiles.rdp_from_profile(profile, [order])[0]
    exact = max(renyi(law0, law1, order), renyi(law1, law0, order))
    assert bound >= exact - 1e-12


def test_rdp_capped_by_randomized_response_and_matches_it_without_amplification() -> None:
    pure = profiles.PrivacyProfile(lambda eps: profiles.randomized_response_delta(1.5, eps), 1.5)
    ours = profiles.rdp_from_profile(pure, ORDERS)
    closed = profiles.randomized_response_rdp(1.5, ORDERS)
    np.testing.assert_allclose(ours, closed, rtol=1e-12)
    # closed form vs an explicit binary RR pair
    big = math.exp(1.5)
    p = np.array([big, 1.0]) / (1 + big)
    for order, value in zip(ORDERS, closed):
        assert value == pytest.approx(renyi(p, p[::-1], order), rel=1e-10)


def test_rdp_rejects_bad_orders_and_handles_kl_and_infinity() -> None:
    profile, law0, law1 = pair_profile(1.0, 10)
    with pytest.raises(ValueError, match="orders"):
        profiles.rdp_from_profile(profile, [0.5, 2.0])
    kl, top = profiles.rdp_from_profile(profile, [1.0, math.inf])
    mask = law0 > 0
    exact_kl = max(float(np.sum(law0[mask] * np.log(law0[mask] / law1[mask]))),
                   float(np.sum(law1[mask] * np.log(law1[mask] / law0[mask]))))
    assert exact_kl <= kl == pytest.approx(math.tanh(0.5))
    assert top == 1.0


# ---------------------------------------------------------------------------------------------
# parallel composition: composite variation ratio vs a brute-force mixture randomizer
# ---------------------------------------------------------------------------------------------


def krr_vr(eps0: float, d: int) -> VariationRatio:
    kw = oracle.krr_neutral_aware_params(eps0, d)
    return VariationRatio(kw["p"], kw["beta"], kw["q"], neutral_share=kw["neutral_share"])


def mixture_matrix(matrices: list[np.ndarray], pis: list[float]) -> np.ndarray:
    """Output (j, y) with probability π_j R_j(x)(y)."""
    return np.concatenate([pi * m for pi, m in zip(pis, matrices)], axis=1)


def brute_force_parameters(matrix: np.ndarray) -> tuple[float, float, float]:
    """(max ratio p, max TV β, max q-ratio) over all input pairs of a finite randomizer."""
    rows = range(matrix.shape[0])
    p = max(np.max(matrix[a] / matrix[b]) for a in rows for b in rows)
    beta = max(0.5 * np.abs(matrix[a] - matrix[b]).sum() for a in rows for b in rows)
    return float(p), float(beta), float(p)


@pytest.mark.parametrize("eps0s,pis,d", [((1.0, 3.0), (0.5, 0.5), 3),
                                         ((0.5, 2.0, 4.0), (0.2, 0.3, 0.5), 4),
                                         ((2.0, 2.0), (0.9, 0.1), 5)])
def test_parallel_composite_beta_is_the_mixture_average(eps0s, pis, d) -> None:
    matrices = [oracle.krr_matrix(e, d) for e in eps0s]
    composite = profiles.parallel_composite([krr_vr(e, d) for e in eps0s], pis)
    p, beta, q = brute_force_parameters(mixture_matrix(matrices, list(pis)))
    assert composite.beta == pytest.approx(beta, rel=1e-11)  # k-RR: every pair has the same TV
    assert composite.p >= p * (1 - 1e-12) and composite.q0 >= q * (1 - 1e-12)
    # the overwrite bug (β of the last branch) would differ from the average
    if len(set(eps0s)) > 1:
        assert composite.beta != pytest.approx(krr_vr(eps0s[-1], d).beta, rel=1e-3)


def test_parallel_composite_bound_covers_exact_shuffled_mixture() -> None:
    eps0s, pis, d, n = (1.0, 3.0), [0.5, 0.5], 3, 6
    matrix = mixture_matrix([oracle.krr_matrix(e, d) for e in eps0s], pis)
    composite = profiles.parallel_composite([krr_vr(e, d) for e in eps0s], pis)
    for others in ([0] * (n - 1), [2] * (n - 1), [0, 1, 2, 2, 1]):
        for eps in (0.0, 0.3, 0.8, 1.5):
            exact = oracle.exact_shuffled_delta(matrix, 0, 1, others, eps)
            assert composite.delta(eps, n) >= exact - 1e-12, (others, eps)


def test_parallel_composite_validates() -> None:
    vr = VariationRatio.worst_case(1.0)
    with pytest.raises(ValueError, match="probabilities"):
        profiles.parallel_composite([vr, vr], [0.5, 0.6])
    with pytest.raises(ValueError, match="probabilities"):
        profiles.parallel_composite([vr, vr], [1.0])
    with pytest.raises(TypeError, match="branches"):
        profiles.parallel_composite([vr, object()], [0.5, 0.5])


# ---------------------------------------------------------------------------------------------
# Poisson subsampling (client sampling)
# ---------------------------------------------------------------------------------------------


def exact_sampled_rr_delta(eps0: float, population: int, gamma: float, eps: float) -> float:
    """Exact δ of: sample each user w.p. γ, release (#sampled, #ones) of binary RR reports.

    Others hold 0; victim holds 0 (P) or 1 (Q). Both directions.
    """
    low = 1.0 / (1.0 + math.exp(eps0))
    m_max = population
    laws = []
    for victim_one in (low, 1.0 - low):
        law = np.zeros((m_max + 1, m_max + 1))
        for m in range(population):  # sampled others
            weight = stats.binom.pmf(m, population - 1, gamma)
            ones = stats.binom.pmf(np.arange(m + 1), m, low)
            law[m, : m + 1] += (1 - gamma) * weight * ones
            with_victim = np.convolve(ones, [1 - victim_one, victim_one])
            law[m + 1, : m + 2] += gamma * weight * with_victim
        laws.append(law.ravel())
    return max(hockey_stick(laws[0], laws[1], eps), hockey_stick(laws[1], laws[0], eps))


def test_poisson_sampled_profile_covers_exact_sampled_mechanism() -> None:
    eps0, population, gamma = 1.0, 300, 0.3
    vr = krr_vr(eps0, 2)
    profile = profiles.poisson_sampled_shuffle_profile(vr, population, gamma)
    for eps in (0.0, 0.1, 0.3, 0.6, 0.9):
        exact = exact_sampled_rr_delta(eps0, population, gamma, eps)
        assert profile.delta(eps) >= exact, eps
        # both the factor γ and the shuffle amplification of the sampled round are used
        assert profile.delta(eps) < gamma * profiles.randomized_response_delta(eps0, eps)


def test_sampled_users_lower_bound_tail() -> None:
    users, tail = profiles.sampled_users_lower_bound(10_001, 0.1, 1e-14)
    assert stats.binom.cdf(users - 2, 10_000, 0.1) <= 1e-14 * (1 + 1e-6)
    assert stats.binom.cdf(users - 1, 10_000, 0.1) > 1e-14  # largest such m
    assert 0 < tail <= 1e-14
    assert profiles.sampled_users_lower_bound(1, 0.5) == (1, 0.0)
    assert profiles.sampled_users_lower_bound(100, 0.0) == (1, 0.0)


# ---------------------------------------------------------------------------------------------
# local reports
# ---------------------------------------------------------------------------------------------


def test_chained_profile_uses_pure_blocks_and_approximate_stages() -> None:
    pure = profiles.chained_ldp_profile([1.0, 2.0, 0.5], [0.0, 0.0, 0.0])
    expected = chained_ldp(chained_ldp(1.0, 2.0), 0.5)
    assert pure.epsilon_cap == expected
    assert pure.delta(0.1) == pytest.approx(profiles.randomized_response_delta(expected, 0.1))
    mixed = profiles.chained_ldp_profile([3.0, 1.0, 2.0], [0.0, 1e-3, 0.0])
    assert mixed.epsilon_cap == 2.0
    assert mixed.delta(0.5) == pytest.approx(min(
        profiles.randomized_response_delta(3.0, 0.5), profiles.randomized_response_delta(2.0, 0.5),
        profiles.leaky_randomized_response_delta(1.0, 1e-3, 0.5)))
    only_approx = profiles.chained_ldp_profile([1.0], [1e-4])
    assert math.isinf(only_approx.epsilon_cap) and only_approx.delta(5.0) == pytest.approx(1e-4)


def test_as_shuffle_bound_adapters() -> None:
    vr = VariationRatio.worst_case(1.0)

    class Catalog:
        variation_ratio = (vr, VariationRatio.worst_case(2.0))

    class DeltaStyle:
        epsilon0 = 1.0

        def delta(self, epsilon: float, n: int) -> float:
            return vr.delta(epsilon, n)

    catalog = profiles.as_shuffle_bound(Catalog())
    assert catalog.epsilon0 == pytest.approx(2.0)
    assert catalog.delta_upper(0.5, 50) == pytest.approx(VariationRatio.worst_case(2.0).delta(0.5, 50),
                                                         rel=2e-2)
    assert profiles.as_shuffle_bound(DeltaStyle()).delta_upper(0.5, 50) == vr.delta(0.5, 50)
    with pytest.raises(TypeError, match="randomizer"):
        profiles.as_shuffle_bound(3.0)
