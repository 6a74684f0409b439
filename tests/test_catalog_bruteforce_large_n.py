"""Finite catalog entries at the largest n the exact histogram law allows (up to n = 40).

For each entry of ``FINITE_ENTRIES`` (tests/test_randomizers.py) the exact shuffled output law is
built by convolution (tests/oracle.py, dense histogram arrays of (n + 1)^(outputs − 1) cells) for
every victim pair and for these configurations of the other n − 1 users: all holding the same
input (each input in turn — the configurations the catalog's lower bounds use) and one random
mixtures. Asserted:

* upper bound (``shuffled(n).delta``) ≥ every exact δ computed (any configuration is a valid
  neighbouring dataset);
* certified lower bound ≤ the largest exact δ over the homogeneous configurations (the lower
  bounds are exact values of such instances after a post-processing), and > 0 where that is;
* the gap: the upper bound is within a factor 3 of the worst exact δ found at ε = 0.1 for the
  entries whose structure is fully captured by the bound (k-RR, binary RR), i.e. the
  comparison is not vacuous.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from tests.oracle import exact_shuffled_delta
from tests.test_randomizers import FINITE_ENTRIES

MAX_CELLS = 2_500_000
# entries with more than 8 outputs (local hashing, sampled-bits RAPPOR) allow only n <= 3 here;
# tests/test_randomizers.py checks them exhaustively at n = 4
LARGE_N_ENTRIES = sorted(name for name, make in FINITE_ENTRIES.items() if make().matrix.shape[1] <= 8)
EPSILONS = (0.1, 0.3)


def _largest_n(outputs: int) -> int:
    n = 40
    while (n + 1) ** (outputs - 1) > MAX_CELLS:
        n -= 1
    return n


def _configurations(inputs: int, others: int, rng: np.random.Generator) -> tuple[list[list[int]], int]:
    homogeneous = [[x] * others for x in range(inputs)]
    mixed = [sorted(rng.integers(0, inputs, size=others).tolist()) for _ in range(1)]
    return homogeneous + mixed, len(homogeneous)


@pytest.mark.parametrize("name", LARGE_N_ENTRIES)
def test_upper_above_and_lower_below_exact_at_large_n(name: str) -> None:
    randomizer = FINITE_ENTRIES[name]()
    matrix = randomizer.matrix
    inputs, outputs = matrix.shape
    n = _largest_n(outputs)
    assert n >= 7, n
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    configurations, homogeneous = _configurations(inputs, n - 1, rng)
    shuffled = randomizer.shuffled(n)
    for eps in EPSILONS:
        exact = [max(exact_shuffled_delta(matrix, x0, x1, others, eps)
                     for x0, x1 in itertools.combinations(range(inputs), 2))
                 for others in configurations]
        lower, upper = shuffled.delta_interval(eps)
        assert upper >= max(exact) * (1 - 1e-12), (n, eps, upper, exact)
        best_homogeneous = max(exact[:homogeneous])
        if name != "binary_rr":  # its lower bound searches every configuration (checked below)
            assert lower <= best_homogeneous * (1 + 1e-9) + 1e-15, (n, eps, lower, best_homogeneous)
        if best_homogeneous > 1e-6:
            assert lower > 0.0, (n, eps)
        if name in ("krr", "binary_rr") and eps == 0.1:
            assert upper <= 3.0 * max(exact), (n, upper, exact)


@pytest.mark.parametrize("eps0,n", [(0.7, 40), (2.0, 25)])
def test_binary_rr_lower_bound_below_exhaustive_worst_case(eps0: float, n: int) -> None:
    """Binary RR's lower bound maximises over all configurations: compare with every m."""
    from dpacct_shuffle import randomizers as rz

    randomizer = rz.binary_rr(eps0)
    matrix = randomizer.matrix
    for eps in EPSILONS:
        worst = max(exact_shuffled_delta(matrix, 0, 1, [1] * m + [0] * (n - 1 - m), eps)
                    for m in range(n))
        lower, upper = randomizer.shuffled(n).delta_interval(eps)
        assert lower <= worst * (1 + 1e-9) + 1e-15
        assert lower >= worst * (1 - 1e-6)  # exact: the search covers every configuration
        assert upper >= worst
        assert math.isfinite(upper)
