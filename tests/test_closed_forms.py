"""Closed forms against the numerical core: each must upper-bound the certified pair bound."""

import math

import pytest

from dpacct_shuffle import VariationRatio
from dpacct_shuffle.core.closed_forms import (
    chernoff_delta,
    chernoff_epsilon,
    fmt_epsilon,
    fmt_validity_limit,
)
from tests.oracle import pair_delta_max


@pytest.mark.parametrize("eps0,n,delta", [(0.5, 10_000, 1e-6), (1.0, 10_000, 1e-8), (2.0, 50_000, 1e-6)])
def test_fmt_is_above_the_worst_case_numerical_bound(eps0: float, n: int, delta: float) -> None:
    closed = fmt_epsilon(eps0, n, delta)
    numeric = VariationRatio.worst_case(eps0).epsilon(delta, n)
    assert closed >= numeric
    # the closed form is looser but of the same order (FMT, arXiv:2208.04591, Thm 3.2, vs the clone reduction)
    assert closed <= 6.0 * numeric


def test_fmt_formula_value() -> None:
    eps0, n, delta = 1.0, 10_000, 1e-6
    expected = math.log(1 + 4 * (math.e - 1) * (math.sqrt(2 * math.log(4 / delta) / ((math.e + 1) * n)) + 1 / n))
    assert fmt_epsilon(eps0, n, delta) == pytest.approx(expected, rel=1e-15)
    assert fmt_epsilon(eps0, n, delta) >= expected


def test_fmt_validity_condition_raises() -> None:
    limit = fmt_validity_limit(1000, 1e-6)
    assert limit == pytest.approx(math.log(1000 / (8 * math.log(2e6)) - 1))
    with pytest.raises(ValueError, match="epsilon0"):
        fmt_epsilon(limit + 0.01, 1000, 1e-6)
    with pytest.raises(ValueError, match="epsilon0"):
        fmt_epsilon(0.1, 50, 1e-6)  # n too small for any epsilon0
    with pytest.raises(ValueError, match="delta"):
        fmt_epsilon(1.0, 1000, 0.0)
    with pytest.raises(TypeError, match="n"):
        fmt_epsilon(1.0, 10.5, 1e-6)


# --- Chernoff form of the neutral-aware pair -------------------------------------------------

CHERNOFF_CASES = [
    (math.e, 0.3, math.e, None, None),
    (math.exp(2.0), math.tanh(1.0), math.exp(2.0), None, None),
    (5.0, 0.3, 4.0, 7.0, None),
    (math.e, (math.e - 1) / (math.e + 4), math.e, None, 3 / (math.e + 4)),  # k-RR d=5 share
    (math.inf, 1.0, 2.0, None, None),
]


@pytest.mark.parametrize("p,beta,q0,q1,share", CHERNOFF_CASES)
@pytest.mark.parametrize("n", [1, 9, 30])
def test_chernoff_is_above_the_brute_force_pair(p, beta, q0, q1, share, n) -> None:
    vr = VariationRatio(p, beta, q0, q1=q1, neutral_share=share)
    for eps in (0.0, 0.2, 0.7):
        exact = pair_delta_max(p, beta, q0, q1, vr.neutral_share, n, eps)
        assert chernoff_delta(vr, eps, n) >= exact


@pytest.mark.parametrize("p,beta,q0,q1,share", CHERNOFF_CASES)
def test_chernoff_epsilon_is_certified_and_close_to_the_numerical_bound(p, beta, q0, q1, share) -> None:
    vr = VariationRatio(p, beta, q0, q1=q1, neutral_share=share)
    n, delta = 20_000, 1e-8
    closed = chernoff_epsilon(vr, delta, n)
    numeric = vr.epsilon(delta, n)
    assert chernoff_delta(vr, closed, n) <= delta
    assert numeric <= closed <= 1.2 * numeric  # measured: 6-10 % above


def test_chernoff_is_monotone_in_epsilon_and_rejects_bad_input() -> None:
    vr = VariationRatio.worst_case(1.0)
    values = [chernoff_delta(vr, eps, 5000) for eps in (0.0, 0.05, 0.1, 0.2, 0.5, 1.0)]
    assert values == sorted(values, reverse=True) and values[-1] == 0.0
    with pytest.raises(TypeError, match="variation_ratio"):
        chernoff_delta((math.e, 0.3, math.e), 0.1, 10)
    with pytest.raises(ValueError, match="epsilon"):
        chernoff_delta(vr, -0.1, 10)
    with pytest.raises(ValueError, match="delta"):
        chernoff_epsilon(vr, 1.5, 10)
