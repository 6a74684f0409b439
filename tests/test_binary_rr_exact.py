"""Certified exact shuffled binary randomized response (binary_rr_exact.BinaryRRProfile, branch and bound).

Reference values come from code written here, independently of binary_rr_exact.py: high-precision
(mpmath, 40 digits) enumeration of the count law of every configuration for small n, and
scipy.stats binomial pmfs for single configurations at n = 10⁶.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import stats

import dpacct_shuffle.randomizers as rz
from dpacct_shuffle.randomizers.binary_rr_exact import BINARY_RR_RTOL, BinaryRRProfile

mpmath.mp.dps = 40


def mp_configuration_deltas(eps0: float, n: int, eps: float) -> list[mpmath.mpf]:
    """δ_m(ε) for m = 0..n−1 (m other users hold 1), max over both directions, in 40 digits.

    The others' count law is built one user at a time (Bernoulli(a) for holders of 1,
    Bernoulli(1 − a) for holders of 0); the victim adds Bernoulli(1 − a) (holds 0) or
    Bernoulli(a) (holds 1).
    """
    e = mpmath.e ** mpmath.mpf(eps0)
    a = e / (e + 1)
    scale = mpmath.e ** mpmath.mpf(eps)
    values = []
    for m in range(n):
        law = [mpmath.mpf(1)]
        for user in range(n - 1):
            one = a if user < m else 1 - a
            new = [mpmath.mpf(0)] * (len(law) + 1)
            for k, v in enumerate(law):
                new[k] += v * (1 - one)
                new[k + 1] += v * one
            law = new
        law = law + [mpmath.mpf(0)]
        p0 = [a * law[c] + (1 - a) * (law[c - 1] if c else 0) for c in range(n + 1)]
        p1 = [(1 - a) * law[c] + a * (law[c - 1] if c else 0) for c in range(n + 1)]
        forward = sum(max(mpmath.mpf(0), x - scale * y) for x, y in zip(p0, p1))
        backward = sum(max(mpmath.mpf(0), y - scale * x) for x, y in zip(p0, p1))
        values.append(max(forward, backward))
    return values


def scipy_configuration_delta(eps0: float, n: int, m: int, eps: float) -> float:
    """δ_m(ε) at large n from scipy.stats binomial pmfs on ±15σ windows (float reference)."""
    a = math.exp(eps0) / (math.exp(eps0) + 1.0)

    def window_pmf(trials: int, p: float) -> tuple[np.ndarray, int]:
        if trials == 0:
            return np.ones(1), 0
        sd = math.sqrt(trials * p * (1 - p))
        lo = max(0, int(trials * p - 15 * sd - 30))
        hi = min(trials, int(trials * p + 15 * sd + 30))
        return stats.binom.pmf(np.arange(lo, hi + 1), trials, p), lo

    ones, _ = window_pmf(m, a)
    zeros, _ = window_pmf(n - 1 - m, 1 - a)
    law = np.concatenate(([0.0], np.convolve(ones, zeros), [0.0]))
    p0 = a * law[1:] + (1 - a) * law[:-1]
    p1 = (1 - a) * law[1:] + a * law[:-1]
    scale = math.exp(eps)
    return max(float(np.maximum(p0 - scale * p1, 0).sum()), float(np.maximum(p1 - scale * p0, 0).sum()))


# -- (a) small n: the certified interval contains the exhaustive high-precision maximum ----------
@pytest.mark.parametrize("eps0,n,eps", [(1.0, 50, 0.3), (2.0, 10, 0.1), (0.5, 30, 0.05), (3.0, 25, 1.0),
                                        (1.0, 60, 0.02), (4.0, 40, 0.5), (0.2, 45, 0.01),
                                        # every block resolved one by one (the search ends empty)
                                        (1.4562727224152174, 26, 0.0012278825696232466),
                                        (0.7779990746926687, 29, 0.004345039062136408)])
def test_delta_interval_contains_exhaustive_maximum(eps0: float, n: int, eps: float) -> None:
    values = mp_configuration_deltas(eps0, n, eps)
    brute = float(max(values))
    profile = BinaryRRProfile(eps0, n)
    low, up = profile.delta_interval(eps)
    assert low <= brute * (1 + 1e-12)
    assert brute <= up * (1 + 1e-12)
    assert up <= low * (1 + BINARY_RR_RTOL)
    assert profile.is_exact
    worst = profile.worst_configuration(eps)
    assert 0 <= worst <= (n - 1) // 2
    assert float(values[worst]) >= low * (1 - 1e-12)  # the reported configuration attains L
    assert profile.delta(eps) == low


@pytest.mark.parametrize("eps0,n,delta", [(0.5, 40, 1e-4), (2.0, 40, 1e-6), (1.0, 60, 1e-3)])
def test_epsilon_interval_brackets_exhaustive_profile(eps0: float, n: int, delta: float) -> None:
    profile = BinaryRRProfile(eps0, n)
    eps_lo, eps_hi = profile.epsilon_interval(delta)
    assert 0 < eps_lo <= eps_hi <= eps_lo * (1 + BINARY_RR_RTOL) * (1 + 1e-12)
    assert float(max(mp_configuration_deltas(eps0, n, eps_lo))) > delta
    assert float(max(mp_configuration_deltas(eps0, n, eps_hi))) <= delta
    assert profile.epsilon(delta) == eps_lo
    assert profile.is_exact


def test_homogeneous_configuration_is_not_the_worst() -> None:
    # documented counterexample: eps0 = 1, n = 50, eps = 0.3: m = 1 beats m = 0
    values = mp_configuration_deltas(1.0, 50, 0.3)
    assert float(values[0]) == pytest.approx(2.2563e-3, abs=1e-7)
    assert float(values[1]) == pytest.approx(2.3562e-3, abs=1e-7)
    assert max(range(50), key=lambda m: values[m]) in (1, 48)
    assert abs(values[1] - values[48]) < 1e-30  # relabelling 0 <-> 1 maps m to n - 1 - m
    profile = BinaryRRProfile(1.0, 50)
    low, up = profile.delta_interval(0.3)
    assert profile.worst_configuration(0.3) == 1
    assert low <= float(values[1]) <= up
    assert low > float(values[0])


def test_epsilon_at_or_above_epsilon0_has_zero_delta() -> None:
    profile = BinaryRRProfile(1.0, 100)
    assert profile.delta_interval(1.0) == (0.0, 0.0)
    assert profile.delta_interval(3.0) == (0.0, 0.0)
    assert float(max(mp_configuration_deltas(1.0, 20, 1.0))) < 1e-35  # 0 up to 40-digit rounding


# -- (b) thousands of users: branch and bound agrees with evaluating every configuration -------
@pytest.mark.parametrize("eps0,n", [(1.0, 2000), (2.0, 2500)])
def test_branch_and_bound_agrees_with_full_search(eps0: float, n: int) -> None:
    bnb = BinaryRRProfile(eps0, n)
    full = BinaryRRProfile(eps0, n, full_search=True)
    for delta in (1e-6, 1e-9):
        lo_b, hi_b = bnb.epsilon_interval(delta)
        lo_f, hi_f = full.epsilon_interval(delta)
        assert max(lo_b, lo_f) <= min(hi_b, hi_f)  # both certified: the intervals intersect
        assert hi_b <= lo_b * (1 + BINARY_RR_RTOL) * (1 + 1e-12)
        assert lo_b == pytest.approx(lo_f, rel=1e-6)  # both find the worst configuration
    eps = bnb.epsilon(1e-6)
    low_b, up_b = bnb.delta_interval(eps)
    low_f, up_f = full.delta_interval(eps)
    assert max(low_b, low_f) <= min(up_b, up_f)
    assert low_b == pytest.approx(low_f, rel=1e-9)
    assert bnb.worst_configuration(eps) == full.worst_configuration(eps)
    assert bnb.is_exact and full.is_exact


def test_block_bound_dominates_every_configuration_of_the_block() -> None:
    eps0, n, eps = 1.0, 40, 0.05
    values = [float(v) for v in mp_configuration_deltas(eps0, n, eps)]
    profile = BinaryRRProfile(eps0, n)
    for first, last in [(0, 3), (0, 19), (5, 12), (10, 19), (3, 3), (0, 39)]:
        upper = profile._block_upper(first, last, eps, 1e-20)
        assert max(values[first: last + 1]) <= upper
    # revealing more (a bigger block) loosens the bound
    assert profile._block_upper(0, 19, eps, 1e-20) > profile._block_upper(0, 3, eps, 1e-20)


# -- (c) one million users: narrow certified interval below the catalog's upper bound ----------
def test_one_million_users_is_certified_and_narrow() -> None:
    n, delta = 10**6, 1e-8
    profile = BinaryRRProfile(1.0, n)
    eps_lo, eps_hi = profile.epsilon_interval(delta)  # ~1 s (docs/lower-bounds.md)
    assert profile.is_exact
    assert eps_lo < eps_hi <= eps_lo * (1 + BINARY_RR_RTOL) * (1 + 1e-12)
    assert 0.0035 < eps_lo < 0.0045
    # the catalog's upper bound for binary RR (its every-ε curve) lies in this certified interval
    # (the clone bound is above)
    assert eps_lo <= rz.binary_rr(1.0).shuffled(n).epsilon(delta) <= eps_hi * (1 + 1e-12)
    assert eps_hi < rz.binary_rr(1.0).variation_ratio.epsilon(delta, n)
    # independent float references: the homogeneous configuration is below δ at eps_hi (the
    # upper end bounds every configuration) and the reported worst configuration is above δ at eps_lo
    assert scipy_configuration_delta(1.0, n, 0, eps_hi) <= delta
    worst = profile.worst_configuration(eps_lo)
    assert scipy_configuration_delta(1.0, n, worst, eps_lo) > delta
    # the catalog's lower end is this profile's certified lower end
    lower, upper = rz.binary_rr(1.0).shuffled(n).epsilon_interval(delta)
    assert lower == pytest.approx(eps_lo, rel=1e-6) and lower < upper


# -- (d) bad input ---------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs,name", [
    ({"epsilon0": 0.0, "n": 10}, "epsilon0"),
    ({"epsilon0": -1.0, "n": 10}, "epsilon0"),
    ({"epsilon0": float("nan"), "n": 10}, "epsilon0"),
    ({"epsilon0": math.inf, "n": 10}, "epsilon0"),
    ({"epsilon0": 1.0, "n": 1}, "n"),
    ({"epsilon0": 1.0, "n": 0}, "n"),
    ({"epsilon0": 1.0, "n": 10, "rtol": 0.0}, "rtol"),
    ({"epsilon0": 1.0, "n": 10, "rtol": 1.5}, "rtol"),
    ({"epsilon0": 1.0, "n": 10, "max_blocks": 0}, "max_blocks"),
    ({"epsilon0": 1.0, "n": 5000, "full_search": True}, "n"),
])
def test_bad_parameters_raise(kwargs: dict, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        BinaryRRProfile(**kwargs)


def test_bad_query_arguments_raise() -> None:
    profile = BinaryRRProfile(1.0, 20)
    with pytest.raises(ValueError, match="epsilon"):
        profile.delta_interval(-0.1)
    with pytest.raises(ValueError, match="epsilon"):
        profile.delta(float("nan"))
    for bad in (0.0, 1.0, -1e-6):
        with pytest.raises(ValueError, match="delta"):
            profile.epsilon_interval(bad)
    with pytest.raises(TypeError, match="n"):
        BinaryRRProfile(1.0, 2.5)
