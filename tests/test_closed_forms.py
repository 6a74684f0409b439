"""Closed forms against the numerical core: each must upper-bound the certified pair bound."""

import math

import pytest

from dpacct_shuffle import VariationRatio
from dpacct_shuffle.core.closed_forms import fmt_epsilon, fmt_validity_limit


@pytest.mark.parametrize("eps0,n,delta", [(0.5, 10_000, 1e-6), (1.0, 10_000, 1e-8), (2.0, 50_000, 1e-6)])
def test_fmt_is_above_the_worst_case_numerical_bound(eps0: float, n: int, delta: float) -> None:
    closed = fmt_epsilon(eps0, n, delta)
    numeric = VariationRatio.worst_case(eps0).epsilon(delta, n)
    assert closed >= numeric
    # the closed form is looser but of the same order (seed 000 Thm 5.2 vs the clone reduction)
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
