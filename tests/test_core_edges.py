"""Edge cases of the numerical core: p = ∞ at huge ε, and δ far below the usual truncation levels.

Every value is compared with an independent reference: the brute-force pair oracle
(``tests/oracle.py``) where it resolves the value, otherwise the closed form of the pair's limit
computed in 40-digit decimal arithmetic from the oracle's own masses (``oracle.pair_params``).

p = ∞ limit of the dominating pair: with α = 0 the victim is an A-clone w.p. β; once e^ε is so large that a
single B-clone (or, when w > 0, a neutral clone) among the others outweighs any number of A-clones,
the divergence is exactly the chance that no other user is a B- or neutral clone:
δ = β·(1 − r_B − s)^(n − 1) (the victim's clone type is unique). It is the value δ(ε) tends to as
ε → ∞.

Tolerances as in ``tests/test_core_bruteforce.py``: ``REL_EXACT`` (1e-9) is the agreement demanded
between two double-precision evaluations, ``ORACLE_REL``/``ORACLE_ABS`` the oracle's own rounding
error and the only slack allowed when asserting an upper bound; ``DELTA_RTOL`` is the documented
relative width of ``delta_interval`` (default rtol).
"""

from __future__ import annotations

import decimal
import math

import pytest

from dpacct_shuffle import VariationRatio
from dpacct_shuffle.core import tails
from tests.oracle import pair_delta_bruteforce, pair_delta_max, pair_delta_truncated, pair_params

REL_EXACT, ABS_EXACT = 1e-9, 1e-15
ORACLE_REL, ORACLE_ABS = 1e-12, 1e-17
DELTA_RTOL = 1e-3  # VariationRatio.delta_interval default

INF = math.inf


def _unique_clone_limit(beta: float, q: float, n: int) -> float:
    """β·(1 − r1 − s)^(n − 1) from the oracle's masses, in 40-digit decimal arithmetic."""
    pp = pair_params(INF, beta, q)
    with decimal.localcontext() as context:
        context.prec = 40
        base = 1 - decimal.Decimal(pp.r1) - decimal.Decimal(pp.s)
        return float(decimal.Decimal(beta) * base ** (n - 1))


def _assert_certified(vr: VariationRatio, eps: float, n: int, exact: float, rel: float) -> None:
    lower, upper = vr.delta_interval(eps, n)
    context = f"{vr!r}, n={n}, eps={eps}: exact={exact!r}, interval=({lower!r}, {upper!r})"
    assert upper >= exact * (1 - ORACLE_REL) - ORACLE_ABS, context
    assert lower <= exact * (1 + ORACLE_REL) + ORACLE_ABS, context
    assert upper <= exact * (1 + rel), context
    assert vr.delta(eps, n) == upper, context


# --------------------------------------------------------------------------- p = ∞, huge ε


@pytest.mark.parametrize("beta,q,n", [(1.0, 4.0, 40), (0.6, 3.0, 5), (0.6, 3.0, 30), (1.0, 2.0, 50),
                                      (0.3, 1.5, 12)])
def test_p_infinite_huge_eps_equals_pair_bruteforce(beta, q, n):
    """Core a8c3653 returned 1.0 at ε = 100 for (∞, 1, 4), n = 40, and 9e-9 relative above the exact
    1.34087802155e-5 at ε = 40 (closed-form margins growing like e^ε)."""
    vr = VariationRatio(INF, beta, q)
    for eps in (20.0, 36.0, 40.0, 60.0, 100.0, 150.0, 300.0, 700.0):
        want = pair_delta_max(INF, beta, q, None, None, n, eps)
        _assert_certified(vr, eps, n, want, REL_EXACT)


@pytest.mark.parametrize("beta,q,n", [(1.0, 4.0, 40), (0.6, 3.0, 30)])
def test_p_infinite_oracle_reaches_unique_clone_limit(beta, q, n):
    """The closed form used below agrees with brute force where both are available."""
    want = pair_delta_max(INF, beta, q, None, None, n, 300.0)
    assert want == pytest.approx(_unique_clone_limit(beta, q, n), rel=ORACLE_REL)


@pytest.mark.parametrize("beta,q,n", [(1.0, 100.0, 1000), (0.6, 300.0, 2000)])
def test_p_infinite_huge_eps_against_slow_sum(beta, q, n):
    """n in the thousands (banded and fast paths): rigorous bracket of the slow oracle sum."""
    vr = VariationRatio(INF, beta, q)
    for eps in (12.0, 40.0, 100.0, 700.0):
        low, high = pair_delta_truncated(INF, beta, q, None, None, n, eps, 0)
        assert high - low <= ORACLE_REL * low  # the oracle resolves this value
        lower, upper = vr.delta_interval(eps, n)
        assert upper >= low * (1 - ORACLE_REL)
        assert lower <= high * (1 + ORACLE_REL)
        assert upper <= high * (1 + REL_EXACT)


@pytest.mark.parametrize("beta,q,n", [(1.0, 100.0, 10**4), (1.0, 1000.0, 10**5), (0.6, 3.0, 400),
                                      (0.6, 3000.0, 10**5), (1.0, 10.0, 2000)])
def test_p_infinite_huge_eps_unique_clone_limit(beta, q, n):
    """Values far below the oracle's absolute resolution: the limit's closed form. Before the fix
    these returned 1.0 or β (fast path) or values 1e25 times too large."""
    vr = VariationRatio(INF, beta, q)
    want = _unique_clone_limit(beta, q, n)
    for eps in (30.0, 100.0, 300.0, 700.0):
        _assert_certified(vr, eps, n, want, REL_EXACT)


@pytest.mark.parametrize("beta,q,n", [(1.0, 100.0, 10**4), (1.0, 1000.0, 10**5),
                                      (0.6, 300.0, 10**4)])
def test_p_infinite_monotone_into_the_limit(beta, q, n):
    """Certified monotonicity in ε across the transition to the limit: lower(ε2) ≤ upper(ε1)."""
    vr = VariationRatio(INF, beta, q)
    limit = _unique_clone_limit(beta, q, n)
    grid = [0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, math.log(n), math.log(n) + 0.5, 20.0, 50.0]
    brackets = [vr.delta_interval(eps, n) for eps in grid]
    for (_, upper), (lower, _) in zip(brackets, brackets[1:]):
        assert lower <= upper
    for lower, upper in brackets:
        assert upper >= limit * (1 - ORACLE_REL)
        assert upper - lower <= DELTA_RTOL * upper


# --------------------------------------------------------------------------- tiny δ


def _make(p, beta, q, q1=None, s=None):
    return VariationRatio(p, beta, q, q1=q1, neutral_share=s)


E = math.e

# (p, beta, q0, q1, neutral_share, n, eps) with n <= 60: brute force by full enumeration
SMALL_CASES = [
    (E**2, 0.5, E**2, None, None, 60, 1.5),
    (E**3, 0.8, E**3, None, None, 60, 2.5),
    (E, 0.3, E, None, None, 60, 0.9),
    (E**2, 0.5, E**2, None, 0.2, 50, 1.7),
    (E, 0.3, E, E**1.5, None, 40, 0.4),
]


@pytest.mark.parametrize("case", SMALL_CASES)
def test_tilted_window_path_equals_pair_bruteforce(case):
    """The tiny-δ path (exponential tilting + every cell of a window) forced at small n, where
    the public API sums every cell instead: each direction against full enumeration. Its bracket
    width is √tail·(Chernoff bound/δ) plus rounding margins, far below 1e-6 here."""
    p, beta, q0, q1, s, n, eps = case
    vr = _make(p, beta, q0, q1, s)
    problems = vr.directional_problems(eps, n)
    for direction, problem in enumerate(problems):
        result = tails.tilted_window_bracket(problem, 1e-18, max_delta=1.0)
        assert result is not None
        want = pair_delta_bruteforce(p, beta, q0, q1, s, n, eps, direction)
        context = f"{case}, direction {direction}: oracle={want!r}, got={result!r}"
        assert result.upper >= want * (1 - ORACLE_REL) - ORACLE_ABS, context
        assert result.lower <= want * (1 + ORACLE_REL) + ORACLE_ABS, context
        assert result.upper <= want * (1 + 1e-6), context


# (p, beta, q0, q1, neutral_share, n, eps): δ between 1e-10 and 1e-69 at n in the hundreds
# (beyond the every-cell limit of the public API, so the fast path and its tiny-δ branch run)
TINY_CASES = [
    (E, 0.3, E, None, None, 500, 0.6),
    (E, 0.3, E, None, None, 500, 0.9),
    (E, 0.3, E, E**1.5, None, 400, 0.7),
    (E**2, 0.5, E**2, None, 0.05, 400, 0.8),
]


@pytest.mark.parametrize("case", TINY_CASES)
def test_tiny_delta_against_slow_sum(case):
    """The slow oracle sum with tail 1e-280 is a rigorous bracket [lo, lo + 1e-280] here."""
    p, beta, q0, q1, s, n, eps = case
    vr = _make(p, beta, q0, q1, s)
    problems = vr.directional_problems(eps, n)
    assert all(tails.tilted_window_bracket(problem, 1e-18) is not None for problem in problems)
    brackets = [pair_delta_truncated(p, beta, q0, q1, s, n, eps, direction, tail=1e-280)
                for direction in range(len(problems))]
    low = max(b[0] for b in brackets)
    high = max(b[1] for b in brackets)
    assert high - low <= ORACLE_REL * low
    lower, upper = vr.delta_interval(eps, n)
    context = f"{case}: oracle=({low!r}, {high!r}), interval=({lower!r}, {upper!r})"
    assert upper >= low * (1 - ORACLE_REL), context
    assert lower <= high * (1 + ORACLE_REL), context
    assert upper <= high * (1 + DELTA_RTOL), context


def test_tiny_delta_regime_is_monotone_in_n():
    """δ ≈ 3e-216 at n = 1e5, evaluated to a narrow bracket; the reported bound at n = 1e6 must
    not exceed it (docs/theory.md, "Monotonicity in n")."""
    vr = VariationRatio(E, 0.3, E)
    lower, upper = vr.delta_interval(0.1, 10**5)
    assert 1e-300 < upper
    assert upper - lower <= DELTA_RTOL * upper
    assert vr.delta(0.1, 10**6) <= upper * (1 + DELTA_RTOL)
    # the pair for 1e5 users is a post-processing of the one for 5e4 users
    assert lower <= vr.delta_interval(0.1, 5 * 10**4).upper
