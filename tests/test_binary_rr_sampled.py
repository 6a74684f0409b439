"""The exact Poisson-sampled binary-RR profile against independent enumeration.

The exact side builds each configuration's law of (number of 0-reports, number of 1-reports)
from the trinomial pmfs of the two groups of other users (log-gamma formula) and a 2-D FFT
convolution, adds the victim, and takes the hockey-stick divergence in both directions — none of
the package's code. Every configuration m of the others is enumerated (a chosen subset, giving a
lower bound on the exact value, at N = 1000).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting import dp_event, privacy_accountant
from scipy import stats
from scipy.signal import fftconvolve
from scipy.special import gammaln, xlogy

from dpacct_shuffle import VariationRatio, randomizers
from dpacct_shuffle.accountants import event_profile
from dpacct_shuffle.events import ShuffleEvent
from dpacct_shuffle.profiles import poisson_sampled_shuffle_profile
from dpacct_shuffle.randomizers.binary_rr_sampled import (GRID_RATIO, BinaryRRCohortProfile,
                                                          SampledBinaryRRProfile)
from dpacct_shuffle.sampling import exact_sampled_profile, poisson_sampled_profile
from tests.oracle import epsilon_by_bisection

NR = privacy_accountant.NeighboringRelation


def _trinomial(users: int, zero: float, one: float, size: int) -> np.ndarray:
    """pmf of (#0-reports, #1-reports) of ``users`` users reporting 0 w.p. ``zero``, 1 w.p.
    ``one``, nothing otherwise, on [0, size)²."""
    i, j = np.meshgrid(np.arange(size, dtype=float), np.arange(size, dtype=float), indexing="ij")
    rest = users - i - j
    ok = rest >= 0
    rest = np.where(ok, rest, 0.0)
    log = (gammaln(users + 1.0) - gammaln(i + 1.0) - gammaln(j + 1.0) - gammaln(rest + 1.0)
           + xlogy(i, zero) + xlogy(j, one) + xlogy(rest, 1.0 - zero - one))
    return np.where(ok, np.exp(log), 0.0)


def _laws(eps0: float, n: int, gamma: float, m: int, relation: str, size: int
          ) -> tuple[np.ndarray, np.ndarray]:
    """(victim holding 0, victim holding 1 / victim absent) with m of the n − 1 others holding 1."""
    a = math.exp(eps0) / (1.0 + math.exp(eps0))
    ones = _trinomial(m, gamma * (1 - a), gamma * a, size)
    zeros = _trinomial(n - 1 - m, gamma * a, gamma * (1 - a), size)
    others = np.clip(fftconvolve(ones, zeros)[: size, : size], 0.0, None)

    def with_victim(zero: float, one: float) -> np.ndarray:
        out = np.zeros((size + 1, size + 1))
        out[:-1, :-1] += (1 - gamma) * others
        out[1:, :-1] += zero * others
        out[:-1, 1:] += one * others
        return out

    present = with_victim(gamma * a, gamma * (1 - a))
    if relation == "add_remove":
        absent = np.zeros_like(present)
        absent[:-1, :-1] = others
        return present, absent
    return present, with_victim(gamma * (1 - a), gamma * a)


def _support(n: int, gamma: float) -> int:
    """Reports of each kind counted below this size: the mass left out, P[Bin(n, γ) ≥ size]
    (at most 12 standard deviations and 10 above the mean), is below 1e-20 in these cases."""
    mean, sd = n * gamma, math.sqrt(n * gamma * (1 - gamma))
    size = min(n + 1, int(mean + 12 * sd) + 10)
    assert size == n + 1 or stats.binom.sf(size - 1, n, gamma) < 1e-20
    return size


def _pairs(eps0: float, n: int, gamma: float, relation: str = "replace_one",
           configurations=None, size: int | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    size = size or _support(n, gamma)
    ms = range(n) if configurations is None else configurations
    return [tuple(law.ravel() for law in _laws(eps0, n, gamma, m, relation, size)) for m in ms]


def _exact_deltas(pairs, epsilons) -> np.ndarray:
    """max over configurations and both directions of the hockey-stick divergence at each ε."""
    x = np.exp(np.atleast_1d(np.asarray(epsilons, dtype=float)))[:, None]
    best = np.zeros(len(x))
    for p, q in pairs:
        forward = np.sum(np.maximum(p[None, :] - x * q[None, :], 0.0), axis=1)
        backward = np.sum(np.maximum(q[None, :] - x * p[None, :], 0.0), axis=1)
        best = np.maximum(best, np.maximum(forward, backward))
    return best


CASES = [  # (ε0, N, γ, relation, δ); N = 150 and 200 go through the block search
    (1.0, 40, 0.3, "replace_one", 1e-3), (2.0, 60, 0.1, "replace_one", 1e-2),
    (1.5, 150, 0.2, "replace_one", 1e-3), (1.0, 200, 0.1, "replace_one", 1e-4),
    (0.5, 150, 0.2, "replace_one", 1e-3),
    (1.0, 60, 0.1, "add_remove", 1e-3), (2.0, 80, 0.2, "add_remove", 1e-3),
]


@pytest.mark.parametrize("eps0, n, gamma, relation, delta", CASES)
def test_interval_contains_the_exact_value(eps0, n, gamma, relation, delta) -> None:
    profile = SampledBinaryRRProfile(eps0, n, gamma, relation)
    pairs = _pairs(eps0, n, gamma, relation)
    exact_eps = epsilon_by_bisection(lambda e: _exact_deltas(pairs, e)[0], delta, 4.0, steps=32)
    epsilons = np.concatenate((np.linspace(0.0, 2.0 * exact_eps, 9), [0.3 * exact_eps + 1e-4]))
    exact = _exact_deltas(pairs, epsilons)
    for eps, value in zip(epsilons, exact):
        lower, upper = profile.delta_interval(float(eps))
        # the FFT-convolved exact laws carry absolute errors of ~1e-16 per cell
        assert lower <= value + 1e-12 and value <= upper + 1e-12
        if value > 1e-6:
            assert upper <= 1.05 * value
    assert profile.is_exact
    eps_lo, eps_hi = profile.epsilon_interval(delta)
    assert eps_lo <= exact_eps <= eps_hi * (1 + 1e-9)
    # within rtol (1 %) and the grid spacing of the exact ε: far inside the issue's 25 %
    assert eps_hi <= exact_eps * (1.0 + profile.rtol) * GRID_RATIO


@pytest.mark.parametrize("eps0, gamma, exact", [(1.0, 0.1, 0.0098), (2.0, 0.05, None)])
def test_issue_example_population_1000(eps0: float, gamma: float, exact: float | None) -> None:
    """Binary RR, N = 1000, δ = 1e-3. An independent lower bound: the exact δ of 38 of the 500
    configurations (all m ≤ 16 and every 25th beyond; at most 169 reports of each kind, seven
    standard deviations above the mean count: the cells left out only lower the sum). The profile's certified ε is at least it, and within 1 %
    of it — so the configurations left out cannot raise the exact ε by more than 1 %."""
    n, delta = 1000, 1e-3
    configurations = list(range(17)) + list(range(25, 500, 25))
    pairs = _pairs(eps0, n, gamma, configurations=configurations, size=170)
    lower = epsilon_by_bisection(lambda e: _exact_deltas(pairs, e)[0], delta, eps0, steps=32)
    if exact is not None:
        assert lower == pytest.approx(exact, rel=0.01)  # the issue's value
    sampled = poisson_sampled_profile(randomizers.binary_rr(eps0), n, gamma)
    assert sampled.delta(0.999 * lower) > delta
    assert sampled.delta(1.01 * lower) <= delta
    counted = poisson_sampled_shuffle_profile(randomizers.binary_rr(eps0), n, gamma)
    assert counted.delta(20.0 * lower) > delta  # the participant-count bound: > 20× exact


def test_worst_configuration_is_not_always_homogeneous_and_is_found() -> None:
    """Small N: the profile's lower end is the max over all configurations, which the homogeneous
    configurations (m = 0, m = N − 1) alone can miss."""
    eps0, n, gamma = 2.0, 10, 0.9
    profile = SampledBinaryRRProfile(eps0, n, gamma)
    epsilons = np.linspace(0.05, 1.0, 12)
    every = _exact_deltas(_pairs(eps0, n, gamma), epsilons)
    homogeneous = _exact_deltas(_pairs(eps0, n, gamma, configurations=[0, n - 1]), epsilons)
    assert np.any(every > homogeneous * (1 + 1e-6))
    for eps, value in zip(epsilons, every):
        lower, upper = profile.delta_interval(float(eps))
        assert lower <= value + 1e-12 <= upper + 2e-12
    # the lower end at ε is an evaluated configuration's δ at the next grid point (≤ ε·GRID_RATIO)
    above = _exact_deltas(_pairs(eps0, n, gamma), epsilons * GRID_RATIO)
    for eps, value in zip(epsilons, above):
        assert profile.delta_interval(float(eps))[0] >= value * (1 - 1e-6) - 1e-12


def test_stopped_search_stays_certified() -> None:
    """With a budget of one law per query the blocks stay unsettled: the upper end is still an
    upper bound (looser), and ``is_exact`` says so."""
    eps0, n, gamma = 1.0, 200, 0.1
    profile = SampledBinaryRRProfile(eps0, n, gamma, max_laws=1)
    epsilons = np.array([0.0, 0.05, 0.1, 0.2])
    exact = _exact_deltas(_pairs(eps0, n, gamma), epsilons)
    for eps, value in zip(epsilons, exact):
        lower, upper = profile.delta_interval(float(eps))
        assert lower <= value + 1e-12 <= upper + 2e-12
    assert not profile.is_exact


@pytest.mark.parametrize("relation, name", [(NR.REPLACE_ONE, "replace_one"),
                                            (NR.ADD_OR_REMOVE_ONE, "add_remove")])
def test_accountants_use_the_exact_round(relation, name) -> None:
    """The profile the accountants compose for a PoissonSampledDpEvent of a binary-RR
    ShuffleEvent (:func:`dpacct_shuffle.accountants.event_profile`) is the exact round's: within
    its certified interval, and below the bound of the worst-case ε0-LDP parameters (binary RR
    is their extremal member; measured 0.57-0.74 of it here under replace-one, 0.83-0.84 under
    add/remove-one, whose generic bound is the merged presence pair of docs/theory.md, "Presence
    pairs at every ε")."""
    event = dp_event.PoissonSampledDpEvent(0.1, ShuffleEvent(randomizers.binary_rr(1.0), 1000))
    profile = event_profile(event, relation)
    exact = SampledBinaryRRProfile(1.0, 1000, 0.1, name)
    generic = poisson_sampled_profile(VariationRatio.worst_case(1.0), 1000, 0.1,
                                      neighboring_relation=relation)
    for eps in (0.005, 0.0125):
        lower, upper = exact.delta_interval(eps)
        assert lower <= profile.delta(eps) <= upper
        assert profile.delta(eps) < (0.8 if name == "replace_one" else 0.9) * generic.delta(eps)


@pytest.mark.parametrize("kwargs, match", [
    ({"epsilon0": 0.0}, "epsilon0"), ({"epsilon0": 31.0}, "epsilon0"),
    ({"num_users": 1}, "num_users"), ({"num_users": 2.5}, "num_users"),
    ({"sampling_probability": 1.0}, "sampling_probability"),
    ({"sampling_probability": -0.1}, "sampling_probability"),
    ({"relation": "add_one"}, "relation"), ({"rtol": 0.0}, "rtol"), ({"floor": 1.0}, "floor"),
    ({"max_laws": 0}, "max_laws"),
])
def test_bad_parameters_are_refused(kwargs, match) -> None:
    arguments = {"epsilon0": 1.0, "num_users": 10, "sampling_probability": 0.5, **kwargs}
    with pytest.raises((ValueError, TypeError), match=match):
        SampledBinaryRRProfile(**arguments)


def test_exact_sampled_profile_is_offered_for_binary_rr_only() -> None:
    """The round reports (``shuffle_round``, the CLI) print its lower end beside the upper bound."""
    profile = exact_sampled_profile(randomizers.binary_rr(1.0), 40, 0.3)
    assert isinstance(profile, SampledBinaryRRProfile) and profile.gamma == 0.3
    exact = _exact_deltas(_pairs(1.0, 40, 0.3), [0.1])[0]
    assert profile.delta_interval(0.1)[0] <= exact + 1e-12
    assert exact_sampled_profile(randomizers.krr(1.0, 3), 40, 0.3) is None
    assert exact_sampled_profile(VariationRatio.worst_case(1.0), 40, 0.3) is None
    assert exact_sampled_profile(randomizers.binary_rr(1.0), 10**6, 0.3) is None  # not tractable
    with pytest.raises(ValueError, match="sampling_probability"):
        exact_sampled_profile(randomizers.binary_rr(1.0), 40, 1.5)


def _cohort_pairs(eps0: float, population: int, m: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Exact laws of the number of ones among a uniform m-subset of the N users, victim holding
    0 vs 1, for every number h of the N − 1 others holding 1: the victim is drawn with
    probability m/N, the holders of 1 among the other drawn users are hypergeometric."""
    a = math.exp(eps0) / (1.0 + math.exp(eps0))
    others = population - 1
    ks = np.arange(m + 1)

    def conditional(drawn: int) -> np.ndarray:  # row j: ones of j holders of 1, drawn − j of 0
        rows = np.zeros((drawn + 1, m + 1))
        for j in range(drawn + 1):
            rows[j, : drawn + 1] = np.convolve(stats.binom.pmf(ks[: j + 1], j, a),
                                               stats.binom.pmf(ks[: drawn - j + 1], drawn - j, 1 - a))
        return rows

    full, short = conditional(m), conditional(m - 1)
    pairs = []
    for h in range(others + 1):
        out = stats.hypergeom.pmf(np.arange(m + 1), others, h, m) @ full
        rest = stats.hypergeom.pmf(np.arange(m), others, h, m - 1) @ short
        shifted = np.concatenate(([0.0], rest[:-1]))
        laws = [m / population * (keep * shifted + (1 - keep) * rest) + (1 - m / population) * out
                for keep in (1 - a, a)]
        pairs.append((laws[0], laws[1]))
    return pairs


@pytest.mark.parametrize("eps0, population, m, delta", [
    (1.0, 40, 10, 1e-3), (2.0, 60, 20, 1e-3), (1.0, 300, 60, 1e-3),  # 300: block bounds
])
def test_cohort_profile_contains_the_exact_value(eps0: float, population: int, m: int,
                                                 delta: float) -> None:
    pairs = _cohort_pairs(eps0, population, m)
    profile = BinaryRRCohortProfile(eps0, m, population)
    exact_eps = epsilon_by_bisection(lambda e: _exact_deltas(pairs, e)[0], delta, eps0, steps=32)
    epsilons = np.linspace(0.0, 1.5 * exact_eps, 7)
    for eps, value in zip(epsilons, _exact_deltas(pairs, epsilons)):
        lower, upper = profile.delta_interval(float(eps))
        assert lower <= value + 1e-12 and value <= upper + 1e-12
    assert profile.is_exact
    eps_lo, eps_hi = profile.epsilon_interval(delta)
    assert eps_lo <= exact_eps <= eps_hi * (1 + 1e-9)
    assert eps_hi <= exact_eps * (1.0 + profile.rtol) * GRID_RATIO


def test_cohort_profile_refuses_bad_sizes() -> None:
    with pytest.raises(ValueError, match="sample_size"):
        BinaryRRCohortProfile(1.0, 40, 40)
    with pytest.raises(ValueError, match="sample_size"):
        BinaryRRCohortProfile(1.0, 0, 40)
    with pytest.raises(ValueError, match="population_size"):
        BinaryRRCohortProfile(1.0, 10, 0)
