"""The safe-side rounding helpers (``core.rounding``) and the monotone searches (``core.search``).

Rounding is checked against exact rational arithmetic (``fractions.Fraction`` of the floats);
searches against thresholds known in closed form, counting how often the predicate is called.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from dpacct_shuffle.core import rounding, search


@pytest.mark.parametrize("value", [1e-300, 0.1, 1.0, 2.5, 1e300, -3.0])
def test_steps_move_by_whole_floats(value: float) -> None:
    up, down = rounding.step_up(value, 3), rounding.step_down(value, 3)
    assert up > value > down
    # three floats away exactly: the third next float of value, and nothing in between
    expected_up = value
    for _ in range(3):
        expected_up = math.nextafter(expected_up, math.inf)
    assert up == expected_up
    assert rounding.step_down(up, 3) == value and rounding.step_up(down, 3) == value
    assert rounding.step_up(math.inf) == math.inf and rounding.step_down(-math.inf) == -math.inf


def test_round_loss_conventions() -> None:
    assert rounding.round_loss_up(0.0) == 0.0
    assert rounding.round_loss_up(0.0, zero_is_exact=False) == rounding.TINY_LOSS
    assert rounding.round_loss_up(1e-300) == rounding.TINY_LOSS
    assert rounding.round_loss_up(math.inf) == math.inf
    assert rounding.round_loss_up(1.0) == 1.0 + 4 * rounding.ULP
    assert rounding.round_loss_down(0.0) == 0.0
    assert rounding.round_loss_down(math.inf) == math.inf
    assert rounding.round_loss_down(1.0) == 1.0 - 2 * rounding.ULP  # below 1 the floats are denser


@pytest.mark.parametrize("epsilon0", [1e-6, 0.3, 1.0, 5.0, 40.0, 500.0])
def test_ratio_up_covers_the_rounded_exponential(epsilon0: float) -> None:
    """exp is within 1 ulp, so exp(ε0)·(1 + 4·2⁻⁵²) exceeds e^ε0; checked with 50-digit Decimals."""
    import decimal

    with decimal.localcontext() as context:
        context.prec = 50
        exact = decimal.Decimal(epsilon0).exp()
        assert decimal.Decimal(rounding.ratio_up(math.exp(epsilon0))) > exact
        assert decimal.Decimal(rounding.ratio_down(math.exp(epsilon0))) < exact


def test_ratio_helpers_scale_by_the_stated_factor() -> None:
    ratio = 3.0
    assert Fraction(rounding.ratio_up(ratio)) == Fraction(ratio) * (1 + Fraction(4, 2**52))
    assert Fraction(rounding.ratio_down(ratio, 2)) == Fraction(ratio) * (1 - Fraction(2, 2**52))


def test_bisect_returns_the_feasible_end_within_rtol() -> None:
    threshold = math.sqrt(2.0)
    calls: list[float] = []

    def holds(x: float) -> bool:
        calls.append(x)
        return x * x >= 2.0

    found = search.bisect(holds, 4.0, 0.0, rtol=1e-6)
    assert found >= threshold and found - threshold <= 1e-6 * found
    assert found in calls and len(calls) <= 23  # ⌈log2(4/1e-6)⌉ midpoints
    # the feasible end below the infeasible one: largest x with x² ≤ 2
    largest = search.bisect(lambda x: x * x <= 2.0, 0.0, 4.0, rtol=1e-9)
    assert largest <= threshold and threshold - largest <= 1e-9 * threshold


def test_bisect_fixed_steps_and_arguments() -> None:
    calls = []
    search.bisect(lambda x: calls.append(x) or x > 0.3, 1.0, 0.0, steps=7)
    assert len(calls) == 7
    found = search.bisect(lambda x: x > 0.3, 1.0, 0.0, steps=60)
    assert 0 < Fraction(found) - Fraction(0.3) <= Fraction(1, 2**53)
    with pytest.raises(TypeError, match="exactly one of rtol or steps"):
        search.bisect(lambda x: True, 1.0, 0.0)
    with pytest.raises(TypeError, match="exactly one of rtol or steps"):
        search.bisect(lambda x: True, 1.0, 0.0, rtol=1e-3, steps=3)


@pytest.mark.parametrize("threshold", [0, 1, 7, 64, 999, 1000])
def test_smallest_true_integer(threshold: int) -> None:
    calls: list[int] = []

    def holds(k: int) -> bool:
        calls.append(k)
        return k >= threshold

    assert search.smallest_true_integer(holds, 0, 1000) == threshold
    assert len(calls) <= 10  # ⌈log2(1001)⌉
    assert all(0 <= k < 1000 for k in calls)


def test_expand_bracket_doubles_until_the_predicate_fails() -> None:
    assert search.expand_bracket(lambda x: x < 10.0, 0.0, 1.0) == (8.0, 16.0)
    assert search.expand_bracket(lambda x: x < 10.0, 0.0, 20.0) == (0.0, 20.0)
    assert search.expand_bracket(lambda k: k < 100, 1, 2, ceiling=70) is None
    assert search.expand_bracket(lambda k: k < 50, 1, 2, ceiling=70) == (32, 64)
    assert search.expand_bracket(lambda k: k < 65, 1, 2, ceiling=70) == (64, 70)


def test_epsilon_search_finds_the_threshold_of_a_gaussian_like_curve() -> None:
    """δ(ε) = exp(−ε²·50) (ln(−ln δ) affine in ln ε): smallest ε with δ ≤ 1e-6 in closed form."""
    target = 1e-6
    exact = math.sqrt(-math.log(target) / 50.0)
    evaluated: dict[float, float] = {}

    def delta_upper(eps: float) -> float:
        evaluated[eps] = math.exp(-50.0 * eps * eps)
        return evaluated[eps]

    found = search.epsilon_search(delta_upper, target, 1.0, math.inf, 0.1, 1e-4)
    assert evaluated[found] <= target  # returned point was evaluated and is feasible
    assert exact <= found <= exact * (1.0 + 1e-4)
    assert len(evaluated) <= 12
    assert search.epsilon_search(delta_upper, 0.5, 0.4, math.inf, 0.1, 1e-4) == 0.0


@pytest.mark.parametrize("root", [3e-4, 0.37, 4.0, 19.5])
@pytest.mark.parametrize("curve", ["power", "exponential", "plateau"])
def test_largest_below_returns_a_feasible_point_with_a_failing_one_within_rtol(
        root: float, curve: str) -> None:
    """Every evaluation is recorded: the result passes, some evaluated point in (x, (1+rtol)·x]
    fails, and a smooth curve takes few evaluations from a far start."""
    shapes = {"power": lambda x: (x / root) ** 1.3,
              "exponential": lambda x: math.exp(0.5 * (x - root)),
              "plateau": lambda x: 0.5 if x < root else 1.0 + (x - root)}
    seen: dict[float, float] = {}

    def value(x: float) -> float:
        seen[x] = shapes[curve](x)
        return seen[x]

    found = search.largest_below(value, 1.0, 0.01, floor=1e-6, ceiling=20.0, rtol=1e-2)
    assert found is not None and found in seen and seen[found] <= 1.0
    assert found <= root * (1 + 1e-12)
    assert any(found < x <= 1.01 * found and y > 1.0 for x, y in seen.items())
    if curve != "plateau":
        assert len(seen) <= 14


def test_largest_below_ends() -> None:
    assert search.largest_below(lambda x: x, 100.0, 1.0, floor=0.5, ceiling=20.0,
                                rtol=1e-2) == 20.0
    assert search.largest_below(lambda x: x, 0.1, 1.0, floor=0.5, ceiling=20.0, rtol=1e-2) is None
    # a tolerance below float resolution ends at adjacent floats instead of probing forever
    found = search.largest_below(lambda x: math.expm1(x), 0.3, 0.01, floor=1e-6, ceiling=20.0,
                                 rtol=1e-17)
    assert found is not None and math.expm1(found) <= 0.3
    assert math.expm1(math.nextafter(found, math.inf) * (1 + 1e-15)) > 0.3
