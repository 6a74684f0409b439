"""Edge cases of the numerical core: p = ∞ at huge ε, and δ far below the usual truncation levels.

Every value is compared with an independent reference: the brute-force pair oracle
(``tests/oracle.py``) where it resolves the value, otherwise the closed form of the pair's limit
computed in 40-digit decimal arithmetic from the oracle's own masses (``oracle.pair_params``).

p = ∞ limit (SPEC §3 pair): with α = 0 the victim is an A-clone w.p. β; once e^ε is so large that a
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
from tests.oracle import pair_delta_max, pair_delta_truncated, pair_params

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


@pytest.mark.parametrize("beta,q,n", [(1.0, 100.0, 10**4), (1.0, 1000.0, 10**5), (0.6, 300.0, 10**4)])
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
