"""Exact shuffled ε at small n (docs/theory.md, "Exact values at small n"): for each case the
certified lower bound (the exact value, rounded down), the upper bound without and with the exact
enumeration, and the CPU seconds of ``epsilon_interval``.

Usage: ``python benchmarks/bench_exact_small_n.py`` from the repository root.
"""

from __future__ import annotations

import math
import time

import numpy as np

import dpacct_shuffle.randomizers as rz
from dpacct_shuffle.core.personalized import pairs_epsilon
from dpacct_shuffle.randomizers.base import ExactSmallNBound, Randomizer


def upper_without_exact(randomizer: Randomizer, delta: float, n: int) -> float:
    """The shuffled ε(δ) of the randomizer's other entries (max over the cover, min over the other
    fallbacks)."""
    value = max(bound.epsilon(delta, n) for bound in randomizer.cover)
    for bound in randomizer.fallbacks:
        if not isinstance(bound, ExactSmallNBound):
            value = min(value, bound.epsilon_below(delta, n, value))
    return value


def main() -> None:
    rng = np.random.default_rng(2024)
    cases: list[tuple[str, Randomizer, int]] = [
        ("subset_selection(5.0, 3, 2)", rz.subset_selection(5.0, 3, 2), 30),
        ("krr(3.0, 4)", rz.krr(3.0, 4), 30),
        ("random 3x3 from_matrix", rz.from_matrix(rng.dirichlet(np.ones(3), size=3)), 50),
        ("random 3x4 from_matrix", rz.from_matrix(rng.dirichlet(np.ones(4), size=3)), 20),
        ("binary_rr(1.0)", rz.binary_rr(1.0), 1000),
    ]
    print("| case | n | δ | exact (lower) | upper without | upper with | seconds |")
    print("|---|---|---|---|---|---|---|")
    for name, randomizer, n in cases:
        for delta in (0.05, 1e-4):
            start = time.process_time()
            lower, upper = randomizer.shuffled(n).epsilon_interval(delta)
            seconds = time.process_time() - start
            old = upper_without_exact(randomizer, delta, n)
            print(f"| {name} | {n} | {delta:g} | {lower:.4f} | {old:.4f} | {upper:.4f} | "
                  f"{seconds:.2f} |")
    groups = []
    for _ in range(2):
        matrix = rng.uniform(0.2, 1.0, size=(3, 3))
        groups.append((rz.from_matrix(matrix / matrix.sum(axis=1, keepdims=True)), 8))
    round_ = rz.PersonalizedShuffle(groups)
    for delta in (0.05, 1e-4):
        start = time.process_time()
        lower, upper = round_.shuffled().epsilon_interval(delta)
        seconds = time.process_time() - start
        pairs = [pair for group in round_.victim_pairs() for pair in group]
        old = pairs_epsilon(pairs, delta, 1e-3) if pairs else math.nan
        print(f"| personalized 2 groups of 8, random 3x3 | 16 | {delta:g} | {lower:.4f} | "
              f"{old:.4f} | {upper:.4f} | {seconds:.2f} |")


if __name__ == "__main__":
    main()
