"""Client sampling against brute force: exact laws of sampled shuffle rounds, every configuration.

The exact side never uses the void view or the core: a Poisson-sampled round's release is the
histogram of the participants' reports (the participant count is visible), computed by
convolving every user's law "no report w.p. 1 − γ, else R(x)"; the add/remove pair drops the
victim; a fixed-size cohort mixes hypergeometric draws of the others. ε is compared through
bisection on the exact δ (max over configurations and both directions).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import Counter

import numpy as np
import pytest
from dp_accounting import dp_event, privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant
from scipy import stats

from dpacct_shuffle import VariationRatio, randomizers
from dpacct_shuffle.accountants import (
    ShufflePLDAccountant,
    ShuffleRdpAccountant,
    event_on_users_grid,
    event_profile,
)
from dpacct_shuffle.events import ShuffleEvent
from dpacct_shuffle.profiles import (
    PrivacyProfile,
    pld_from_grid,
    poisson_sampled_shuffle_profile,
    profile_grid,
    rdp_from_grid,
    shuffle_profile,
    users_grid_floor,
)
from dpacct_shuffle.sampling import add_remove_variation_ratios, poisson_sampled_profile
from dpacct_shuffle.without_replacement import shuffled_cohort_profile, without_replacement_profile
from tests.oracle import epsilon_by_bisection

NeighborRel = privacy_accountant.NeighboringRelation


# ---------------------------------------------------------------------------------------------
# exact laws (independent of the package)
# ---------------------------------------------------------------------------------------------


def _convolve_user(law: np.ndarray, row: np.ndarray) -> np.ndarray:
    """Histogram law of report counts (one axis per output) after one more user.

    ``row[j]`` is the probability of report j; 1 − Σ row is the probability of no report.
    """
    new = np.zeros(tuple(s + 1 for s in law.shape))
    core = tuple(slice(0, s) for s in law.shape)
    new[core] += (1.0 - math.fsum(row)) * law
    for j in range(len(row)):
        shifted = tuple(slice(1, s + 1) if ax == j else slice(0, s) for ax, s in enumerate(law.shape))
        new[shifted] += row[j] * law
    return new


def _others_law(rows: list[np.ndarray], outputs: int) -> np.ndarray:
    law = np.ones((1,) * outputs)
    for row in rows:
        law = _convolve_user(law, row)
    return law


def _pad(law: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    out = np.zeros(shape)
    out[tuple(slice(0, s) for s in law.shape)] = law
    return out


def _pair_laws(others: np.ndarray, victim0: np.ndarray, victim1: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    p = _convolve_user(others, victim0)
    q = _convolve_user(others, victim1)
    return p, q


def _hockey(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    x = math.exp(eps)
    return max(float(np.sum(np.maximum(p - x * q, 0.0))), float(np.sum(np.maximum(q - x * p, 0.0))))


def _exact_delta(pairs: list[tuple[np.ndarray, np.ndarray]], eps: float) -> float:
    return max(_hockey(p, q, eps) for p, q in pairs)


def _sampled_pairs(matrix: np.ndarray, gamma: float, n: int, x0: int, x1: int
                   ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Exact (P, Q) of the Poisson-sampled round for every configuration (multiset) of the
    n − 1 others' inputs; victim x0 vs x1."""
    d_in, d_out = matrix.shape
    rows = gamma * matrix
    pairs = []
    for config in itertools.combinations_with_replacement(range(d_in), n - 1):
        others = _others_law([rows[c] for c in config], d_out)
        pairs.append(_pair_laws(others, rows[x0], rows[x1]))
    return pairs


def _bound_epsilon(profile: PrivacyProfile, delta: float) -> float:
    hi = profile.epsilon_cap if math.isfinite(profile.epsilon_cap) else 8.0
    return epsilon_by_bisection(profile.delta, delta, hi, steps=50)


def _binary_rr_matrix(eps0: float) -> np.ndarray:
    e = math.exp(eps0)
    return np.array([[e, 1.0], [1.0, e]]) / (e + 1.0)


# ---------------------------------------------------------------------------------------------
# the void view is the sampled round
# ---------------------------------------------------------------------------------------------


def test_participants_multiset_law_equals_void_histogram_law() -> None:
    """N = 4, binary RR: enumerate who takes part and every report sequence; the law of the
    multiset of reports equals the histogram law of the void randomizer (⊥ count implied)."""
    matrix, gamma, inputs = _binary_rr_matrix(1.0), 0.3, (0, 0, 1, 0)
    law: Counter[tuple[int, int]] = Counter()
    for takes_part in itertools.product((0, 1), repeat=len(inputs)):
        weight = math.prod(gamma if t else 1.0 - gamma for t in takes_part)
        members = [x for x, t in zip(inputs, takes_part) if t]
        for reports in itertools.product(range(2), repeat=len(members)):
            prob = weight * math.prod(matrix[x, y] for x, y in zip(members, reports))
            law[(reports.count(0), reports.count(1))] += prob
    void = _others_law([gamma * matrix[x] for x in inputs], 2)
    for (c0, c1), prob in law.items():
        assert void[c0, c1] == pytest.approx(prob, rel=1e-12, abs=1e-15)
    assert math.fsum(law.values()) == pytest.approx(1.0)


# ---------------------------------------------------------------------------------------------
# replace-one: bound >= exact, and close
# ---------------------------------------------------------------------------------------------

# The issue's criterion: ε within 25 % of the exact value. Largest measured ratio bound ε / exact
# ε over the cases below is 1.237 (the worst-case VariationRatio against binary RR), then 1.146
# (the random matrix); the void view alone gives binary RR up to 1.47 (the clone reduction's own
# gap) and RAPPOR on two values 1.25, which their exact sampled profiles remove (docs/theory.md,
# "Exact sampled binary randomized response", "Binary reduction of two-input randomizers").
EPSILON_RATIO = 1.25
# binary RR: the exact sampled profile, certified to its rtol (1 %) and grid
BINARY_RR_EPSILON_RATIO = 1.011


def _check_against_exact(profile: PrivacyProfile, pairs, delta: float, eps_cap: float,
                         ratio: float = EPSILON_RATIO) -> float:
    exact_eps = epsilon_by_bisection(lambda e: _exact_delta(pairs, e), delta, eps_cap, steps=50)
    assert exact_eps > 0.0
    for eps in np.linspace(0.0, 1.5 * exact_eps, 5):
        assert profile.delta(float(eps)) >= _exact_delta(pairs, float(eps)) - 1e-15
    # the bound's ε is at most ratio × exact: at ratio·ε_exact the bound is already ≤ δ
    assert profile.delta(ratio * exact_eps) <= delta
    # and it is not trivially loose in the other direction: just below the exact ε it is > δ
    assert profile.delta(0.999 * exact_eps) > delta
    return exact_eps


@pytest.mark.parametrize("eps0, n, gamma, delta", [
    (1.0, 60, 0.1, 1e-3), (1.0, 40, 0.5, 1e-4), (1.0, 20, 0.3, 1e-2),
    (2.0, 20, 0.1, 1e-3), (2.0, 40, 0.3, 1e-3),
])
def test_binary_rr_sampled_round_against_exact(eps0: float, n: int, gamma: float, delta: float) -> None:
    pairs = _sampled_pairs(_binary_rr_matrix(eps0), gamma, n, 0, 1)
    profile = poisson_sampled_profile(randomizers.binary_rr(eps0), n, gamma)
    _check_against_exact(profile, pairs, delta, eps0, ratio=BINARY_RR_EPSILON_RATIO)


def test_worst_case_variation_ratio_sampled_round_against_exact() -> None:
    """A bare VariationRatio (worst case ε0-LDP) is valid for binary RR, its extremal member."""
    eps0, n, gamma, delta = 1.5, 40, 0.2, 1e-3
    pairs = _sampled_pairs(_binary_rr_matrix(eps0), gamma, n, 0, 1)
    profile = poisson_sampled_profile(VariationRatio.worst_case(eps0), n, gamma)
    _check_against_exact(profile, pairs, delta, eps0)


@pytest.mark.parametrize("name, randomizer, matrix, n, gamma, delta", [
    ("krr", randomizers.krr(2.0, 3), None, 8, 0.5, 1e-2),
    ("rappor", randomizers.rappor(2.0, 2), None, 9, 0.5, 1e-2),
    ("matrix", None, np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.25, 0.25, 0.5]]), 6, 0.4, 1e-2),
])
def test_finite_randomizers_sampled_round_against_exact(name: str, randomizer, matrix, n: int,
                                                        gamma: float, delta: float) -> None:
    """k-RR, RAPPOR (two neutral types) and an analyzed matrix: every victim pair, every multiset
    of the others' inputs."""
    if randomizer is None:
        randomizer = randomizers.from_matrix(matrix)
    mat = np.asarray(randomizer.matrix)
    profile = poisson_sampled_profile(randomizer, n, gamma)
    pairs = [pair for x0, x1 in itertools.combinations(range(mat.shape[0]), 2)
             for pair in _sampled_pairs(mat, gamma, n, x0, x1)]
    eps_cap = math.log(float(np.max(mat[:, None, :] / mat[None, :, :])))
    _check_against_exact(profile, pairs, delta, eps_cap)


@pytest.mark.parametrize("randomizer", [randomizers.binary_rr(1.0), randomizers.krr(2.0, 10),
                                        randomizers.rappor(2.0, 4), VariationRatio.worst_case(1.0)])
def test_never_looser_than_participant_count_bound(randomizer) -> None:
    new = poisson_sampled_profile(randomizer, 500, 0.2)
    old = poisson_sampled_shuffle_profile(randomizer, 500, 0.2)
    for eps in (0.0, 0.02, 0.1, 0.5):
        assert new.delta(eps) <= old.delta(eps)


def test_issue_example_binary_rr_population_1000() -> None:
    """Binary RR ε0 = 1, N = 1000, γ = 0.1, δ = 1e-3. A certified lower bound on the exact ε: the
    exact δ of one configuration (every other user holds 0; the two laws of (#0, #1) reports are
    trinomial mixtures, summed over at most 249 reports of each kind). The bound is ≥ it and
    within 1.01× (the exact sampled profile; the participant-count bound alone gives 0.2385)."""
    eps0, n, gamma, delta = 1.0, 1000, 0.1, 1e-3
    pi = math.exp(eps0) / (1.0 + math.exp(eps0))
    c = np.arange(250)  # ~100 ± 10 reports: the cells left out only lower the sum
    c0, c1 = np.meshgrid(c, c, indexing="ij")

    def others(a, b):  # Mult(n − 1; γπ, γ(1 − π), 1 − γ) pmf at (a, b)
        rest = (n - 1) - a - b
        ok = (a >= 0) & (b >= 0) & (rest >= 0)
        a, b, rest = (np.where(ok, v, 0) for v in (a, b, rest))
        from scipy.special import gammaln, xlogy
        log = (gammaln(n) - gammaln(a + 1.0) - gammaln(b + 1.0) - gammaln(rest + 1.0)
               + xlogy(a, gamma * pi) + xlogy(b, gamma * (1 - pi)) + xlogy(rest, 1 - gamma))
        return np.exp(np.where(ok, log, -np.inf))

    base, shift0, shift1 = others(c0, c1), others(c0 - 1, c1), others(c0, c1 - 1)
    p = gamma * pi * shift0 + gamma * (1 - pi) * shift1 + (1 - gamma) * base
    q = gamma * (1 - pi) * shift0 + gamma * pi * shift1 + (1 - gamma) * base
    lower = epsilon_by_bisection(lambda e: _hockey(p, q, e), delta, eps0, steps=50)
    assert lower == pytest.approx(0.0098, rel=0.05)  # the issue's exact value (worst configuration)
    profile = poisson_sampled_profile(randomizers.binary_rr(eps0), n, gamma)
    assert profile.delta(0.999 * lower) > delta
    assert profile.delta(1.01 * lower) <= delta


# ---------------------------------------------------------------------------------------------
# add/remove-one: the victim present or absent, the server sees the participants' reports
# ---------------------------------------------------------------------------------------------


def _add_remove_pairs(matrix: np.ndarray, gamma: float, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(with victim, without victim) for every victim input and every multiset of the n − 1 others."""
    d_in, d_out = matrix.shape
    rows = gamma * matrix
    pairs = []
    for config in itertools.combinations_with_replacement(range(d_in), n - 1):
        others = _others_law([rows[c] for c in config], d_out)
        padded = _pad(others, tuple(s + 1 for s in others.shape))
        pairs.extend((_convolve_user(others, rows[x]), padded) for x in range(d_in))
    return pairs


@pytest.mark.parametrize("eps0, n, gamma, delta", [
    (1.0, 60, 0.1, 1e-3), (1.0, 40, 0.3, 1e-3), (2.0, 40, 0.2, 1e-4), (0.5, 30, 0.5, 1e-2),
])
def test_binary_rr_add_remove_against_exact(eps0: float, n: int, gamma: float, delta: float) -> None:
    pairs = _add_remove_pairs(_binary_rr_matrix(eps0), gamma, n)
    profile = poisson_sampled_profile(randomizers.binary_rr(eps0), n, gamma,
                                      neighboring_relation=NeighborRel.ADD_OR_REMOVE_ONE)
    assert math.isinf(profile.epsilon_cap)  # all n reports is impossible without the victim
    _check_against_exact(profile, pairs, delta, 8.0, ratio=BINARY_RR_EPSILON_RATIO)


@pytest.mark.parametrize("eps0", [1.0, 2.0])
def test_krr_add_remove_against_exact(eps0: float) -> None:
    """k-RR, d = 3, N = 8, γ = 0.4, δ = 1e-2, every victim input and multiset of the others."""
    randomizer = randomizers.krr(eps0, 3)
    pairs = _add_remove_pairs(np.asarray(randomizer.matrix), 0.4, 8)
    profile = poisson_sampled_profile(randomizer, 8, 0.4,
                                      neighboring_relation=NeighborRel.ADD_OR_REMOVE_ONE)
    _check_against_exact(profile, pairs, 1e-2, 8.0)


def test_add_remove_variation_ratios_are_presence_pairs() -> None:
    vrs = add_remove_variation_ratios(randomizers.krr(1.0, 5), 0.2)
    for vr in vrs:
        assert math.isinf(vr.p) and vr.beta == pytest.approx(0.2)
        assert vr.r0 <= 0.2 / math.exp(1.0) and vr.r1 + vr.neutral_share <= 0.8
    with pytest.raises(TypeError, match="VariationRatio"):
        add_remove_variation_ratios(object(), 0.2)


# ---------------------------------------------------------------------------------------------
# fixed-size cohorts: m of N users, replace-one
# ---------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _binary_rr_cohort_pairs(eps0: float, population: int, m: int
                            ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Exact laws of the number of 1-reports of a uniform m-subset, victim 0 vs 1, for every
    number k of the N − 1 others holding 0 (hypergeometric mixtures of binomial convolutions)."""
    pi = math.exp(eps0) / (1.0 + math.exp(eps0))
    others_n = population - 1

    def ones_law(zeros: int, ones: int) -> np.ndarray:
        return np.convolve(stats.binom.pmf(np.arange(zeros + 1), zeros, 1 - pi),
                           stats.binom.pmf(np.arange(ones + 1), ones, pi))

    eta = m / population
    pairs = []
    for k in range(others_n + 1):
        outside = np.zeros(m + 1)
        for j in range(max(0, m - (others_n - k)), min(k, m) + 1):
            outside += stats.hypergeom.pmf(j, others_n, k, m) * ones_law(j, m - j)
        laws = []
        for victim_one in (0.0, 1.0):
            inside = np.zeros(m + 1)
            for j in range(max(0, m - 1 - (others_n - k)), min(k, m - 1) + 1):
                rest = _pad(ones_law(j, m - 1 - j), (m + 1,))
                shifted = np.concatenate([[0.0], rest[:-1]])
                keep_one = pi if victim_one else 1 - pi
                inside += stats.hypergeom.pmf(j, others_n, k, m - 1) * (
                    keep_one * shifted + (1 - keep_one) * rest)
            laws.append(eta * inside + (1 - eta) * outside)
        pairs.append((laws[0], laws[1]))
    return pairs


# The subsampling theorem alone measures 1.41-3.03 on these cases: it bounds both D(B0‖A) and
# D(B0‖B1) by the m-user profile at one ε. shuffled_cohort_profile also divides Poisson-sampled
# rounds of the population by P[Bin(N, γ) ≥ m] (docs/theory.md, "Cohorts from Poisson rounds").
# For the binary_rr entry it also takes the exact cohort profile (docs/theory.md, "Exact sampled
# binary randomized response"; 1.09-1.12 from the Poisson rounds alone), certified to its rtol
# (1 %) and grid. For the worst-case VariationRatio (the void view of the clone bound) 1.27-1.52:
# the Poisson bound's own gap times the price of the tail factor.
BINARY_RR_COHORT_RATIO = 1.02
COHORT_EPSILON_RATIO = 1.55


@pytest.mark.parametrize("eps0, population, m, delta", [
    (1.0, 40, 10, 1e-3), (2.0, 60, 20, 1e-3), (1.0, 60, 30, 1e-4),
])
def test_binary_rr_cohort_against_exact(eps0: float, population: int, m: int, delta: float) -> None:
    pairs = _binary_rr_cohort_pairs(eps0, population, m)
    profile = shuffled_cohort_profile(randomizers.binary_rr(eps0), m, population)
    _check_against_exact(profile, pairs, delta, eps0, ratio=BINARY_RR_COHORT_RATIO)


def test_cohort_profile_never_looser_than_the_subsampling_theorem() -> None:
    randomizer, population, m = randomizers.krr(1.0, 4), 100, 25
    theorem = without_replacement_profile(shuffle_profile(randomizer, m), m, population)
    cohort = shuffled_cohort_profile(randomizer, m, population)
    for eps in (0.05, 0.5):
        assert cohort.delta(eps) <= theorem.delta(eps)
    assert cohort.delta(0.2) < theorem.delta(0.2)  # the Poisson route wins here
    with pytest.raises(ValueError, match="sample_size"):
        shuffled_cohort_profile(randomizer, 201, population)


# The accountants account SampledWithoutReplacementDpEvent(N, m, ShuffleEvent(R, m)) with the
# minimum of the subsampling theorem and shuffled_cohort_profile. Measured bound ε / exact ε of
# one round through ShufflePLDAccountant: binary_rr within 1.02 (the exact cohort profile);
# worst case 1.35, 1.52 and 1.28 (ε0 = 1, 30 of 60); the subsampling theorem alone gives 1.97,
# 3.03 and 1.41.
@pytest.mark.parametrize("form, eps0, population, m, delta", [
    ("binary_rr", 1.0, 40, 10, 1e-3), ("binary_rr", 2.0, 60, 20, 1e-3),
    ("worst_case", 1.0, 40, 10, 1e-3), ("worst_case", 2.0, 60, 20, 1e-3),
    ("worst_case", 1.0, 60, 30, 1e-4),
])
def test_cohort_round_through_the_accountants_against_exact(form: str, eps0: float, population: int,
                                                            m: int, delta: float) -> None:
    randomizer = (randomizers.binary_rr(eps0) if form == "binary_rr"
                  else VariationRatio.worst_case(eps0))  # binary RR is its extremal member
    pairs = _binary_rr_cohort_pairs(eps0, population, m)
    exact_eps = epsilon_by_bisection(lambda e: _exact_delta(pairs, e), delta, eps0, steps=50)
    event = dp_event.SampledWithoutReplacementDpEvent(population, m, ShuffleEvent(randomizer, m))
    pld_eps = ShufflePLDAccountant().compose(event).get_epsilon(delta)
    ratio = BINARY_RR_COHORT_RATIO if form == "binary_rr" else COHORT_EPSILON_RATIO
    assert exact_eps <= pld_eps <= ratio * exact_eps
    # never above the subsampling theorem alone (the accountants' previous profile)
    theorem = profile_grid(without_replacement_profile(shuffle_profile(randomizer, m), m, population))
    assert pld_eps <= pld_from_grid(theorem).get_epsilon_for_delta(delta)
    if form == "worst_case":  # (the RDP route is the same profile; one form suffices)
        orders = ShuffleRdpAccountant()._orders
        before = rdp_privacy_accountant.compute_epsilon(
            orders, rdp_from_grid(theorem, orders, eps0), delta)[0]
        rdp_eps = ShuffleRdpAccountant().compose(event).get_epsilon(delta)
        assert exact_eps <= rdp_eps <= before


def test_cohort_bound_needs_all_sampled_users_to_report() -> None:
    """With drop-outs (fewer reports than m) or dishonest users only the subsampling theorem
    applies; the users grid leaves a whole cohort unchanged (its bound is not monotone in m)."""
    randomizer, population, m = randomizers.binary_rr(1.0), 40, 10
    # the theorem on the round's profile as the accountants build it (binary RR: its exact curve)
    theorem = without_replacement_profile(event_profile(ShuffleEvent(randomizer, m - 1)), m,
                                          population)
    dropped = dp_event.SampledWithoutReplacementDpEvent(population, m,
                                                        ShuffleEvent(randomizer, m - 1))
    assert event_profile(dropped).delta(0.3) == theorem.delta(0.3)
    whole = dp_event.SampledWithoutReplacementDpEvent(population, m, ShuffleEvent(randomizer, m))
    assert event_profile(whole).delta(0.3) < theorem.delta(0.3)
    assert event_on_users_grid(whole, 1.5) == whole
    assert event_on_users_grid(dropped, 1.5).event.num_users == users_grid_floor(m - 1, 1.5) == 7
