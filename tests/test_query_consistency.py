"""The two queries of a shuffled randomizer agree: ``delta(epsilon(δ)) ≤ δ`` for every entry, and
the certified lower ends never exceed what the local guarantee allows."""

from __future__ import annotations

import math

import pytest

from dpacct_shuffle import randomizers
from dpacct_shuffle.randomizers.binary_rr_exact import BinaryRRProfile

ENTRIES = [
    ("binary_rr", lambda: randomizers.binary_rr(1.0)),
    ("krr d=2", lambda: randomizers.krr(2.0, 2)),
    ("krr d=100", lambda: randomizers.krr(2.0, 100)),
    ("rappor", lambda: randomizers.rappor(2.0, 16)),
    ("oue", lambda: randomizers.optimized_unary_encoding(2.0, 16)),
    ("subset", lambda: randomizers.subset_selection(2.0, 10, 3)),
    ("local_hashing", lambda: randomizers.local_hashing(2.0, 4)),
    ("hadamard", lambda: randomizers.hadamard_response(2.0, 16)),
    ("laplace", lambda: randomizers.laplace(1.0)),
    ("from_matrix", lambda: randomizers.from_matrix([[0.6, 0.3, 0.1], [0.2, 0.3, 0.5]])),
]


@pytest.mark.parametrize("name, make", ENTRIES, ids=[name for name, _ in ENTRIES])
@pytest.mark.parametrize("n", [1000])
@pytest.mark.parametrize("delta", [1e-6])
def test_delta_at_the_reported_epsilon_is_within_delta(name: str, make, n: int, delta: float) -> None:
    shuffled = make().shuffled(n)
    epsilon = shuffled.epsilon(delta)
    assert math.isfinite(epsilon)
    assert shuffled.delta(epsilon) <= delta


@pytest.mark.parametrize("n", [1000, 10**4])
@pytest.mark.parametrize("delta", [1e-6, 1e-10])
def test_binary_rr_epsilon_is_its_delta_inverse_and_near_exact(n: int, delta: float) -> None:
    # was 1.042·δ at n = 10⁵: ε came from the profile at rtol 1e-3, δ from a coarser one
    shuffled = randomizers.binary_rr(1.0).shuffled(n)
    epsilon = shuffled.epsilon(delta)
    assert shuffled.delta(epsilon) <= delta
    low, high = BinaryRRProfile(1.0, n).epsilon_interval(delta)
    assert low <= epsilon <= high  # certified exact ε(δ) lies in [low, high], width 1e-3
    assert shuffled.delta(low) > delta  # the δ query stays above δ where ε(δ) is not reached


@pytest.mark.parametrize("epsilon0", [50.0, 300.0])
def test_lower_epsilon_never_exceeds_the_local_epsilon0(epsilon0: float) -> None:
    # the collision entry's projection lost the victims' rest mass to rounding and reported 700
    shuffled = randomizers.collision(epsilon0, 3, 2, 1).shuffled(1000)
    lower, upper = shuffled.epsilon_interval(1e-8)
    assert lower <= upper <= epsilon0
    assert shuffled.delta_lower(epsilon0) == 0.0


@pytest.mark.parametrize("epsilon0, delta0, n", [(1.0, 1e-6, 100), (3.0, 0.1, 10), (1.0, 1e-6, 1),
                                                 (500.0, 1e-300, 10**6), (5.0, 5e-324, 10**6)])
def test_an_approximate_ldp_class_meets_its_own_guarantee(epsilon0: float, delta0: float,
                                                          n: int) -> None:
    # the victim's own report alone is (ε0, δ0)-DP: ε(δ0) ≤ ε0 (was ∞: δ0 was rounded up)
    shuffled = randomizers.approximate_ldp(epsilon0, delta0).shuffled(n)
    assert shuffled.epsilon(delta0) <= epsilon0
    assert shuffled.delta(epsilon0) == delta0
    assert shuffled.delta(shuffled.epsilon(delta0)) <= delta0


@pytest.mark.parametrize("epsilon0, delta0, n", [(1.0, 1e-6, 100), (2.0, 0.3, 5)])
def test_a_leaky_randomizer_meets_its_own_guarantee(epsilon0: float, delta0: float, n: int) -> None:
    inner = randomizers.krr(epsilon0, 4)
    shuffled = randomizers.approximate(inner, delta0).shuffled(n)
    assert shuffled.epsilon(delta0) == inner.epsilon0  # ε0 = ln p, p = e^ε0 rounded up
    assert shuffled.delta(inner.epsilon0) == delta0
    assert shuffled.epsilon(1.5 * delta0) < 0.9 * epsilon0  # above δ0, shuffling amplifies
