"""Tightness of the client-sampling bounds against brute force (docs/theory.md, "Client sampling").

For each case: the exact ε (bisection on the exact δ, every multiset of the others' inputs, every
victim pair, both directions; the exact laws of tests/test_sampling_bruteforce.py), the bound's ε
(bisection on its profile) and their ratio. Poisson-sampled rounds under replace-one and
add/remove-one, and fixed-size cohorts (m of N, replace-one); then the time of one exact sampled
binary-RR profile at N = 10³, 10⁴, 10⁵ (Poisson rounds and fixed-size cohorts).

Usage: ``python benchmarks/bench_sampling.py`` (from the repository root) — prints a markdown table.
"""

from __future__ import annotations

import itertools
import math
import time

import numpy as np

from dpacct_shuffle import randomizers
from dpacct_shuffle.profiles import PrivacyProfile, shuffle_profile
from dpacct_shuffle.randomizers.binary_rr_sampled import BinaryRRCohortProfile, SampledBinaryRRProfile
from dpacct_shuffle.sampling import NeighborRel, poisson_sampled_profile
from dpacct_shuffle.without_replacement import shuffled_cohort_profile, without_replacement_profile
from tests.test_sampling_bruteforce import (
    _add_remove_pairs,
    _binary_rr_cohort_pairs,
    _binary_rr_matrix,
    _epsilon_of,
    _exact_delta,
    _sampled_pairs,
)

ADD_REMOVE = NeighborRel.ADD_OR_REMOVE_ONE


def _all_pairs(matrix: np.ndarray, gamma: float, n: int) -> list:
    return [pair for x0, x1 in itertools.combinations(range(matrix.shape[0]), 2)
            for pair in _sampled_pairs(matrix, gamma, n, x0, x1)]


def _row(label: str, profile: PrivacyProfile, pairs: list, delta: float) -> str:
    start = time.perf_counter()
    exact = _epsilon_of(lambda e: _exact_delta(pairs, e), delta, 16.0)
    hi = profile.epsilon_cap if math.isfinite(profile.epsilon_cap) else 16.0
    bound = _epsilon_of(profile.delta, delta, hi)
    seconds = time.perf_counter() - start
    return f"| {label} | {delta:g} | {exact:.5g} | {bound:.5g} | {bound / exact:.3f} | {seconds:.1f} |"


def main() -> None:
    print("| case | δ | exact ε | bound ε | ratio | s |")
    print("|---|---|---|---|---|---|")
    for eps0, n, gamma, delta in [(1.0, 60, 0.1, 1e-3), (1.0, 40, 0.5, 1e-4), (1.0, 20, 0.3, 1e-2),
                                  (2.0, 20, 0.1, 1e-3), (2.0, 40, 0.3, 1e-3), (2.0, 60, 0.3, 1e-2)]:
        rr = randomizers.binary_rr(eps0)
        matrix = _binary_rr_matrix(eps0)
        print(_row(f"binary RR ε0={eps0:g} N={n} γ={gamma:g}, replace-one",
                   poisson_sampled_profile(rr, n, gamma), _sampled_pairs(matrix, gamma, n, 0, 1),
                   delta), flush=True)
        print(_row(f"binary RR ε0={eps0:g} N={n} γ={gamma:g}, add/remove-one",
                   poisson_sampled_profile(rr, n, gamma, neighboring_relation=ADD_REMOVE),
                   _add_remove_pairs(matrix, gamma, n), delta), flush=True)
    for name, randomizer, n, gamma in [
            ("k-RR ε0=2 d=3", randomizers.krr(2.0, 3), 8, 0.5),
            ("RAPPOR ε0=2 d=2", randomizers.rappor(2.0, 2), 9, 0.5),
            ("matrix 3×3", randomizers.from_matrix(
                [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.25, 0.25, 0.5]]), 6, 0.4)]:
        matrix = np.asarray(randomizer.matrix)
        print(_row(f"{name} N={n} γ={gamma:g}, replace-one",
                   poisson_sampled_profile(randomizer, n, gamma), _all_pairs(matrix, gamma, n),
                   1e-2), flush=True)
        print(_row(f"{name} N={n} γ={gamma:g}, add/remove-one",
                   poisson_sampled_profile(randomizer, n, gamma, neighboring_relation=ADD_REMOVE),
                   _add_remove_pairs(matrix, gamma, n), 1e-2), flush=True)
    for eps0, population, m, delta in [(1.0, 40, 10, 1e-3), (2.0, 60, 20, 1e-3), (1.0, 60, 30, 1e-4)]:
        profile = without_replacement_profile(shuffle_profile(randomizers.binary_rr(eps0), m), m,
                                              population)
        pairs = _binary_rr_cohort_pairs(eps0, population, m)
        print(_row(f"binary RR ε0={eps0:g} cohort {m} of {population}, subsampling theorem",
                   profile, pairs, delta), flush=True)
        print(_row(f"binary RR ε0={eps0:g} cohort {m} of {population}, shuffled_cohort_profile",
                   shuffled_cohort_profile(randomizers.binary_rr(eps0), m, population), pairs,
                   delta), flush=True)
    exact_profile_timings()


def exact_profile_timings() -> None:
    """Time of one exact sampled binary-RR profile (the whole ε grid, every configuration covered),
    ε0 = 1, with its certified interval of ε at δ = 1e-6; then exact fixed-size cohorts."""
    print()
    print("| exact sampled binary RR, ε0 = 1 | N | γ | ε at δ=1e-6 in | certified to rtol | laws | s |")
    print("|---|---|---|---|---|---|---|")
    for relation in ("replace_one", "add_remove"):
        for n, gamma in [(10**3, 0.1), (10**4, 0.01), (10**4, 0.1), (10**5, 0.001), (10**5, 0.003)]:
            start = time.perf_counter()
            profile = SampledBinaryRRProfile(1.0, n, gamma, relation)
            low, high = profile.epsilon_interval(1e-6)
            seconds = time.perf_counter() - start
            print(f"| {relation} | {n} | {gamma:g} | [{low:.5g}, {high:.5g}] | {profile.is_exact} | "
                  f"{profile.laws_evaluated} | {seconds:.1f} |", flush=True)
    for n, m in [(10**3, 100), (10**4, 100), (10**5, 300)]:
        start = time.perf_counter()
        cohort = BinaryRRCohortProfile(1.0, m, n)
        low, high = cohort.epsilon_interval(1e-6)
        seconds = time.perf_counter() - start
        print(f"| cohort of {m} | {n} | {m / n:g} | [{low:.5g}, {high:.5g}] | {cohort.is_exact} | "
              f"{cohort.laws_evaluated} | {seconds:.1f} |", flush=True)


if __name__ == "__main__":
    main()
