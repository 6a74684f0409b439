"""Users with different randomizers in one shuffle round (docs/theory.md, "Users with different
randomizers"): the bound against brute force over every configuration of the others, the
homogeneous special case, the mixture it relaxes, events and accountants, bad input."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from dp_accounting import dp_event, privacy_accountant

from dpacct_shuffle.accountants import ShufflePLDAccountant
from dpacct_shuffle.core import personalized as core_personalized
from dpacct_shuffle.events import ShuffleEvent
from dpacct_shuffle.randomizers import (PersonalizedShuffle, binary_rr, from_matrix, krr,
                                        personalized_krr)
from dpacct_shuffle.pipeline import load_pipeline
from dpacct_shuffle.sampling import poisson_sampled_profile, void_personalized_round
from tests.oracle import _add_user


def exact_round_delta(groups: list[tuple[np.ndarray, int]], eps: float) -> float:
    """Exact worst-case shuffled δ(ε): every victim group, victim pair (both orders) and multiset
    of the other users' inputs, by convolving the exact output-histogram laws."""
    worst = 0.0
    outputs = groups[0][0].shape[1]
    for v, (victim, _) in enumerate(groups):
        others = [(matrix, count - (g == v)) for g, (matrix, count) in enumerate(groups)]
        configurations = [list(itertools.combinations_with_replacement(range(m.shape[0]), c))
                          for m, c in others]
        for x0, x1 in itertools.permutations(range(victim.shape[0]), 2):
            for configuration in itertools.product(*configurations):
                law = np.ones((1,) * (outputs - 1))
                for (matrix, _), inputs in zip(others, configuration):
                    for x in inputs:
                        law = _add_user(law, matrix[x])
                diff = _add_user(law, victim[x0] - math.exp(eps) * victim[x1])
                worst = max(worst, math.fsum(diff[diff > 0].tolist()))
    return worst


# (domain size, [(ε0, count), ...], ε)
KRR_CASES = [
    (3, [(1.0, 3), (2.0, 3)], 0.5),
    (2, [(0.5, 4), (2.0, 4)], 0.3),
    (3, [(1.0, 2), (1.5, 2), (3.0, 2)], 0.8),
    (2, [(1.0, 3), (3.0, 5)], 0.2),
    (2, [(0.5, 2), (1.0, 2), (2.0, 2), (3.0, 2)], 0.3),  # 3^4 split configurations: the 3 uniform ones
]


@pytest.mark.parametrize("domain, groups, eps", KRR_CASES)
def test_krr_groups_bounds_bracket_exact_and_are_close(domain: int, groups: list[tuple[float, int]],
                                                       eps: float) -> None:
    round_ = personalized_krr(domain, groups)
    bound = round_.delta(eps)
    lower = round_.shuffled().delta_lower(eps)
    exact = exact_round_delta([(krr(e0, domain).matrix, c) for e0, c in groups], eps)
    assert lower <= exact <= bound
    assert bound <= 1.25 * exact  # measured ratios 1.03–1.16 (docs/personalized.md)
    # d = 3: the counts of x0 and x1, others at a third value, lose nothing; d = 2: the count of x0
    # with each group's inputs split evenly is the whole histogram of the worst configuration
    assert lower >= exact * (1.0 - 1e-6)


def test_lower_bound_gap_at_larger_n() -> None:
    """2000 users, k-RR d = 4, ε0 = 1 and 2 (half each): upper/lower measured 1.022 at ε = 0.2
    and 1.0015 for ε at δ = 1e-6 (docs/personalized.md)."""
    round_ = personalized_krr(4, [(1.0, 1000), (2.0, 1000)])
    lower, upper = round_.shuffled().delta_lower(0.2), round_.delta(0.2)
    assert 0.0 < lower <= upper <= 1.03 * lower


def test_lower_bound_of_one_group_and_of_a_robust_subset() -> None:
    same = personalized_krr(3, [(1.0, 4), (1.0, 4)])
    assert same.shuffled().delta_lower(0.3) == krr(1.0, 3).shuffled(8).delta_lower(0.3)
    mixed = personalized_krr(3, [(1.0, 4), (2.0, 4)])
    assert mixed.lower_bound(8) is not None
    assert mixed.lower_bound(7) is None  # no instance is offered for n honest users below all
    assert mixed.shuffled(7).delta_lower(0.3) == 0.0
    blank = PersonalizedShuffle([(from_matrix([[0.5, 0.5], [0.5, 0.5]]), 3),
                                 (from_matrix([[0.3, 0.7], [0.3, 0.7]]), 2)])
    assert blank.lower_bound() is None and blank.delta(0.0) == 0.0  # no input changes any report


def test_generic_matrices_on_one_output_space() -> None:
    first = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.25, 0.25, 0.5]])
    second = np.array([[0.4, 0.35, 0.25], [0.3, 0.4, 0.3]])
    groups = [(first, 3), (second, 3)]
    round_ = PersonalizedShuffle([(from_matrix(m), c) for m, c in groups])
    for eps in (0.1, 0.4):
        bound = round_.delta(eps)
        exact = exact_round_delta(groups, eps)
        assert exact <= bound
        lower = round_.shuffled().delta_lower(eps)
        assert 0.9 * exact <= lower <= exact  # measured 0.986 and 0.959 of the exact value
        # measured ratios 1.5 (ε = 0.1) and 3.3 (ε = 0.4): for generic matrices the proportions π
        # come from the victim group's own column minima, which fit the other group less well
        assert bound <= 4.0 * exact


def test_random_matrices_both_bounds_bracket_exact() -> None:
    """Seeded random rounds (two groups of 2–3-row matrices on 3 outputs, 1–3 users each): lower ≤
    exact ≤ upper. Measured on these five: lower/exact 0.65–1.0, upper/exact 1.8–5.1
    (docs/personalized.md)."""
    rng = np.random.default_rng(7)
    for _ in range(5):
        groups = []
        for _ in range(2):
            matrix = rng.uniform(0.2, 1.0, size=(int(rng.integers(2, 4)), 3))
            groups.append((matrix / matrix.sum(axis=1, keepdims=True), int(rng.integers(1, 4))))
        round_ = PersonalizedShuffle([(from_matrix(m), c) for m, c in groups])
        analyzed = [(np.asarray(randomizer.matrix), count) for randomizer, count in round_.groups]
        eps = 0.3
        exact = exact_round_delta(analyzed, eps)
        lower = round_.shuffled().delta_lower(eps) if round_.num_users >= 2 else 0.0
        assert lower <= exact <= round_.delta(eps)
        assert lower >= 0.6 * exact


def test_one_group_is_the_homogeneous_bound_exactly() -> None:
    same = personalized_krr(4, [(1.0, 7), (1.0, 5)])  # equal randomizers are merged
    assert len(same.groups) == 1
    homogeneous = krr(1.0, 4).shuffled(12)
    for eps in (0.05, 0.3):
        assert same.delta(eps) == homogeneous.delta(eps)
    assert same.epsilon(1e-3) == homogeneous.epsilon(1e-3)


def test_equal_rates_reproduce_the_core_pair() -> None:
    """The mixture machinery itself with every other user at one rate is the homogeneous pair."""
    round_ = personalized_krr(3, [(1.0, 20), (2.0, 20)])
    pair = round_.victim_pairs()[0][0]  # victim of the ε0 = 1 group
    own_rate = max(rate for _, rate in pair.others)
    pair = pair._replace(others=((40, own_rate),))
    vr = krr(1.0, 3).variation_ratio
    for eps in (0.2, 0.5):
        value = core_personalized.pair_delta(pair, eps, rtol=1e-6)
        reference = vr.delta(eps, 41)
        assert reference <= value <= reference * (1.0 + 1e-3)


def test_bound_is_close_to_the_poisson_binomial_mixture() -> None:
    """bound ≥ E f(M) (the exact mixture, f from the core at every m) and within 15 % of it."""
    round_ = personalized_krr(3, [(1.0, 12), (2.0, 12)])
    eps = 0.4
    for pair in (pairs[0] for pairs in round_.victim_pairs()):
        law = np.ones(1)
        for count, rate in pair.others:
            law = np.convolve(law, stats.binom.pmf(np.arange(count + 1), count, rate))
        mixture = math.fsum(mass * core_personalized._binomial_upper(pair, eps, m, 1.0, 1e-4)
                            for m, mass in enumerate(law) if mass > 1e-16)
        value = core_personalized.pair_delta(pair, eps)
        assert mixture * (1.0 - 1e-3) <= value <= 1.15 * mixture


def test_stronger_privacy_among_others_helps_the_weak_group() -> None:
    """A victim of the ε0 = 2 group hides better among ε0 = 0.5 users than among its own group."""
    mixed = personalized_krr(3, [(0.5, 30), (2.0, 30)])
    alone = krr(2.0, 3).shuffled(60)
    assert mixed.delta(0.5) < alone.delta(0.5)
    # and the round is no better than the ε0 = 0.5 users alone would be
    assert mixed.delta(0.5) >= krr(0.5, 3).shuffled(60).delta(0.5)


def test_robust_subset_keeps_the_weakest_others() -> None:
    round_ = personalized_krr(2, [(1.0, 5), (3.0, 5)])
    pair = round_.victim_pairs(6)[0][0]  # victim in the ε0 = 1 group, 5 honest others
    assert sum(count for count, _ in pair.others) == 5
    rates = sorted(rate for _, rate in round_.victim_pairs()[0][0].others)
    assert max(rate for _, rate in pair.others) == rates[0]  # the ε0 = 3 users (smallest rate)
    assert round_.delta(0.2, 6) >= round_.delta(0.2)


def test_shuffle_event_and_pld_accountant() -> None:
    round_ = personalized_krr(2, [(1.0, 6), (2.0, 6)])
    event = ShuffleEvent(round_, 12)
    assert hash(event) == hash(ShuffleEvent(personalized_krr(2, [(1.0, 6), (2.0, 6)]), 12))
    accountant = ShufflePLDAccountant()
    accountant.compose(event)
    eps = 0.5
    delta = accountant.get_delta(eps)
    assert delta >= exact_round_delta([(binary_rr(1.0).matrix, 6), (binary_rr(2.0).matrix, 6)], eps)
    assert delta >= round_.delta(eps) * (1.0 - 1e-9)
    with pytest.raises(ValueError, match="num_users must equal the 12 users"):
        ShuffleEvent(round_, 13)


def test_bad_input() -> None:
    with pytest.raises(TypeError, match="groups must be a non-empty sequence"):
        PersonalizedShuffle([])
    with pytest.raises(TypeError, match=r"groups\[0\]\[0\] must be a finite randomizer"):
        PersonalizedShuffle([(1.0, 3)])
    with pytest.raises(ValueError, match="same output space"):
        PersonalizedShuffle([(krr(1.0, 3), 2), (krr(1.0, 4), 2)])
    with pytest.raises(ValueError, match=r"groups\[1\]\[1\] must be a positive integer"):
        personalized_krr(3, [(1.0, 2), (2.0, 0)])
    with pytest.raises(ValueError, match="epsilon0"):
        personalized_krr(3, [(-1.0, 2)])
    with pytest.raises(ValueError, match="n must be at most the round's 4 users"):
        personalized_krr(3, [(1.0, 2), (2.0, 2)]).delta(0.1, 5)
    with pytest.raises(ValueError, match="epsilon"):
        personalized_krr(3, [(1.0, 2), (2.0, 2)]).delta(math.nan)


def test_pipeline_step() -> None:
    groups = [{"randomizer": "krr:epsilon0=1,domain_size=2", "users": 5},
              {"randomizer": {"name": "krr", "epsilon0": 2.0, "domain_size": 2}, "users": 5}]
    pipeline = load_pipeline({"epsilon": 0.5, "steps": [{"type": "personalized_shuffle",
                                                         "groups": groups}]})
    expected = ShuffleEvent(personalized_krr(2, [(1.0, 5), (2.0, 5)]), 10)
    assert pipeline.steps[0].event == expected
    with pytest.raises(ValueError, match=r"steps\[0\]\.groups\[0\]: unknown key 'cuont'"):
        load_pipeline({"epsilon": 0.5, "steps": [{"type": "personalized_shuffle", "groups": [
            {**groups[0], "cuont": 2}]}]})


@pytest.mark.parametrize("domain, groups, gamma, eps, ratio, lower_ratio", [
    (3, [(1.0, 3), (2.0, 3)], 0.5, 0.3, 1.4, 0.9999),  # measured bound/exact 1.28, lower 0.999995
    (2, [(0.5, 4), (2.0, 4)], 0.2, 0.2, 2.5, 0.65),  # measured 2.29 and 0.69
])
def test_poisson_sampled_round_against_exact_laws_with_void(domain: int, groups, gamma: float,
                                                           eps: float, ratio: float,
                                                           lower_ratio: float) -> None:
    """Every user of group g sends γ·R_g(x) + (1 − γ)·⊥; the released multiset with the ⊥ counts is
    the sampled round's release (a bijection for a known population), so its exact worst case is
    the exact δ of the sampled round."""
    round_ = personalized_krr(domain, groups)
    bound = poisson_sampled_profile(round_, round_.num_users, gamma).delta(eps)
    void = [(np.hstack([gamma * krr(e0, domain).matrix, np.full((domain, 1), 1.0 - gamma)]), count)
            for e0, count in groups]
    exact = exact_round_delta(void, eps)
    lower = void_personalized_round(round_, gamma, round_up=False).shuffled().delta_lower(eps)
    assert lower_ratio * exact <= lower <= exact <= bound <= ratio * exact
    assert bound < round_.delta(eps)  # sampling helps here


def test_sampled_round_in_accountant_and_pipeline() -> None:
    round_ = personalized_krr(2, [(1.0, 6), (2.0, 6)])
    event = dp_event.PoissonSampledDpEvent(0.3, ShuffleEvent(round_, 12))
    groups = [{"randomizer": "krr:epsilon0=1,domain_size=2", "users": 6},
              {"randomizer": "krr:epsilon0=2,domain_size=2", "users": 6}]
    pipeline = load_pipeline({"epsilon": 0.5, "steps": [{"type": "personalized_shuffle",
                                                         "groups": groups,
                                                         "sampling_probability": 0.3}]})
    assert pipeline.steps[0].event == event
    delta = ShufflePLDAccountant().compose(event).get_delta(0.5)
    assert delta >= poisson_sampled_profile(round_, 12, 0.3).delta(0.5) * (1.0 - 1e-9)
    one_group = personalized_krr(3, [(1.0, 5), (1.0, 5)])
    assert (poisson_sampled_profile(one_group, 10, 0.3).delta(0.2)
            == poisson_sampled_profile(krr(1.0, 3), 10, 0.3).delta(0.2))
    with pytest.raises(TypeError, match="replace-one neighbours only"):
        poisson_sampled_profile(round_, 12, 0.3, neighboring_relation=(
            privacy_accountant.NeighboringRelation.ADD_OR_REMOVE_ONE))
