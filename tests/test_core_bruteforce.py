"""The numerical core against independent brute force.

Three groups:

1. Oracle self-tests (``tests/oracle.py`` checked against exact rationals, against enumeration of
   output sequences, against closed-form binomial laws, and the two oracles against each other in
   the configurations where the dominating pair *is* the shuffled histogram).
2. ``VariationRatio.delta``/``delta_interval`` against the pair oracle: exact agreement for n <= 40,
   rigorous brackets at n in the hundreds/thousands.
3. Soundness on k-ary randomized response: the neutral-aware bound is >= the exact shuffled delta
   for every configuration of the other users tried; the published pair is not (docs/theory.md,
   "Published pair").

Tolerances: ``REL_EXACT``/``ABS_EXACT`` is the agreement demanded between two double-precision
summations of O(1) probabilities (1e-9 relative, and 1e-15 absolute -- the resolution of a sum of
thousands of probabilities in double precision).  ``ORACLE_REL``/``ORACLE_ABS`` is the oracle's own
rounding error (checked against exact rationals below); it is the only slack allowed when asserting
an upper bound.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from dpacct_shuffle import VariationRatio
from dpacct_shuffle.core.bound import published_pair
from tests.oracle import (
    exact_shuffled_delta,
    exact_shuffled_delta_directions,
    krr_matrix,
    krr_neutral_aware_params,
    krr_published_params,
    pair_delta_bruteforce,
    pair_delta_fraction,
    pair_delta_max,
    pair_delta_truncated,
    pair_params,
    shuffled_delta_by_sequences,
)

REL_EXACT, ABS_EXACT = 1e-9, 1e-15
ORACLE_REL, ORACLE_ABS = 1e-12, 1e-17

E = math.e
INF = math.inf


def _beta_max(p: float) -> float:
    return 1.0 if math.isinf(p) else (p - 1.0) / (p + 1.0)


def _krr_alpha(eps0: float, d: int) -> float:
    return 1.0 / (math.exp(eps0) + d - 1)


# (id, p, beta, q0, q1, neutral_share); q1/neutral_share None = symmetric / generic w/max(q)
PAIR_CASES = [
    ("generic-e1", E, 0.2, E, None, None),
    ("generic-e2", E**2, 0.5, E**2, None, None),
    ("asym-q", E, 0.3, E, E**1.5, None),
    ("asym-q-small", E, 0.3, 1.5, 4.0, None),
    ("krr5-share", E, (E - 1) / (E + 4), E, None, 3 * _krr_alpha(1.0, 5)),
    ("s-zero", E, 0.3, E, None, 0.0),
    ("published-share", E, 0.2, E, None, 1.0 - 2 * (E * 0.2 / (E - 1)) / E),
    ("beta-tiny", E, 1e-6, E, None, None),
    ("beta-near-max", E, _beta_max(E) * (1 - 1e-9), E, None, None),
    ("beta-max", E**0.5, _beta_max(E**0.5), E**0.5, None, None),
    ("p-inf-beta-1", INF, 1.0, 4.0, None, None),
    ("p-inf-beta-0.6", INF, 0.6, 3.0, None, None),
    ("p-huge", E**10, 0.9, E**10, None, None),
    ("p-near-1", 1.05, 0.02, 1.05, None, None),
    ("q-large", E**2, 0.4, 50.0, None, None),
]
PAIR_IDS = [c[0] for c in PAIR_CASES]


def _eps_grid(p: float) -> list[float]:
    if math.isinf(p):
        return [0.0, 0.05, 0.5, 1.0, 3.0, 10.0]
    ln_p = math.log(p)
    return [0.0, 0.02 * ln_p, 0.1 * ln_p, 0.3 * ln_p, 0.6 * ln_p, 0.9 * ln_p, ln_p, 1.5 * ln_p]


def _make(p: float, beta: float, q0: float, q1: float | None, s: float | None) -> VariationRatio:
    return VariationRatio(p, beta, q0, q1=q1, neutral_share=s)


# ---------------------------------------------------------------------------------------------
# 1. Oracle self-tests
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", [c for c in PAIR_CASES if math.isfinite(c[1])], ids=lambda c: c[0])
@pytest.mark.parametrize("n", [1, 2, 9])
def test_oracle_float_matches_exact_rationals(case, n):
    _, p, beta, q0, q1, s = case
    for eps in _eps_grid(p)[:6]:
        for direction in (0, 1):
            exact = pair_delta_fraction(p, beta, q0, q1, s, n, eps, direction)
            approx = pair_delta_bruteforce(p, beta, q0, q1, s, n, eps, direction)
            assert approx == pytest.approx(float(exact), rel=ORACLE_REL, abs=ORACLE_ABS)


def test_oracle_pair_single_user_is_victim_hockey_stick():
    # n = 1: the pair is the victim's type law (p*alpha, alpha, w) vs (alpha, p*alpha, w).
    p, beta = E**1.3, 0.4
    pp = pair_params(p, beta, p)
    for eps in (0.0, 0.3, 1.0):
        big = math.exp(eps)
        want = max(0.0, pp.p_alpha - big * pp.alpha) + max(0.0, pp.alpha - big * pp.p_alpha)
        got = pair_delta_bruteforce(p, beta, p, None, None, 1, eps, 0)
        assert got == pytest.approx(want, rel=1e-14)
    # eps = 0 at any n: total variation of the pair is at most beta, and equals it for n = 1
    assert pair_delta_bruteforce(p, beta, p, None, None, 1, 0.0, 0) == pytest.approx(beta, rel=1e-14)


def test_oracle_pair_p_infinite_closed_forms():
    # p = inf: the victim is Q0 w.p. beta (else N) under x0 and Q1 under x1.
    for eps in (0.0, 1.0, 10.0):
        # n = 1: the pair is (beta on Q0, 1-beta on N) vs (beta on Q1, 1-beta on N)
        assert pair_delta_max(INF, 0.6, 3.0, None, None, 1, eps) == pytest.approx(0.6, rel=1e-15)
        # n = 2, beta = 1, q = 4: the other user is Q0/Q1 w.p. 1/4 each, rest 1/2.  Under x0:
        # (2,0) 1/4, (1,1) 1/4, (1,0) 1/2; under x1: (1,1) 1/4, (0,2) 1/4, (0,1) 1/2.
        want = 0.75 + max(0.0, 0.25 - math.exp(eps) * 0.25)
        assert pair_delta_max(INF, 1.0, 4.0, None, None, 2, eps) == pytest.approx(want, rel=1e-15)


def test_oracle_pair_symmetric_directions_coincide():
    for n in (3, 17):
        d0 = pair_delta_bruteforce(E, 0.25, E, None, None, n, 0.15, 0)
        d1 = pair_delta_bruteforce(E, 0.25, E, None, None, n, 0.15, 1)
        assert d0 == pytest.approx(d1, rel=1e-12)
    # asymmetric q: directions differ
    d0 = pair_delta_bruteforce(E, 0.3, 1.5, 4.0, None, 15, 0.2, 0)
    d1 = pair_delta_bruteforce(E, 0.3, 1.5, 4.0, None, 15, 0.2, 1)
    assert abs(d0 - d1) > 1e-4


def test_oracle_pair_zero_at_and_above_ln_p():
    for n in (1, 10):
        for eps in (1.0, 1.2):
            assert pair_delta_max(E, 0.3, E, None, None, n, eps) == 0.0


@pytest.mark.parametrize("n", [40, 200])
def test_oracle_truncated_matches_bruteforce(n):
    for p, beta, q0, q1, s in [(E, 0.3, E, None, None), (E, 0.3, 1.5, 4.0, None),
                               (INF, 1.0, 4.0, None, None), (E, 0.3, E, None, 0.0)]:
        for eps in (0.01, 0.1, 0.4):
            for direction in (0, 1):
                lower, upper = pair_delta_truncated(p, beta, q0, q1, s, n, eps, direction)
                assert 0.0 <= lower <= upper <= lower + 1e-20
                if n <= 40:
                    brute = pair_delta_bruteforce(p, beta, q0, q1, s, n, eps, direction)
                    assert lower == pytest.approx(brute, rel=1e-11, abs=ORACLE_ABS)


def test_oracle_truncated_pair_nonincreasing_in_n():
    values = [pair_delta_truncated(E, 0.3, E, None, None, n, 0.1, 0) for n in (40, 80, 160, 320)]
    for (lo_small_n, _), (_, up_big_n) in zip(values, values[1:]):
        assert up_big_n <= lo_small_n * (1 + ORACLE_REL)


def test_oracle_shuffle_matches_sequence_enumeration():
    rng = np.random.default_rng(20261129)
    for d, n in [(2, 8), (3, 6), (4, 5), (5, 5)]:
        mat = rng.dirichlet(np.ones(d), size=d)
        others = [int(x) for x in rng.integers(0, d, size=n - 1)]
        for eps in (0.0, 0.2, 0.7):
            conv = exact_shuffled_delta(mat, 0, 1, others, eps)
            seq = shuffled_delta_by_sequences(mat, 0, 1, others, eps)
            assert conv == pytest.approx(seq, rel=1e-12, abs=1e-17)
    mat = krr_matrix(1.5, 3)
    for eps in (0.0, 0.3, 1.0):
        assert exact_shuffled_delta(mat, 0, 1, [2, 0, 1, 2, 2], eps) == pytest.approx(
            shuffled_delta_by_sequences(mat, 0, 1, [2, 0, 1, 2, 2], eps), rel=1e-12, abs=1e-17)


def test_oracle_shuffle_binary_rr_closed_form():
    # binary RR, others all hold 0: #ones ~ Bin(n, a) under x0 and Bin(n-1, a) + Bern(1-a) under x1
    from scipy import stats

    eps0, n = 1.2, 25
    a = 1.0 / (math.exp(eps0) + 1.0)
    ones = np.arange(n + 1)
    law0 = stats.binom.pmf(ones, n, a)
    base = stats.binom.pmf(ones, n - 1, a)
    law1 = (1 - a) * np.concatenate([[0.0], base[:-1]]) + a * base
    for eps in (0.0, 0.1, 0.5, 1.1):
        big = math.exp(eps)
        want = max(np.maximum(law0 - big * law1, 0).sum(), np.maximum(law1 - big * law0, 0).sum())
        got = exact_shuffled_delta(krr_matrix(eps0, 2), 0, 1, [0] * (n - 1), eps)
        assert got == pytest.approx(want, rel=1e-10, abs=1e-17)


@pytest.mark.parametrize("eps0", [0.5, 1.0, 2.5])
@pytest.mark.parametrize("n", [2, 15, 40])
def test_oracles_coincide_where_pair_is_the_histogram(eps0, n):
    # binary RR, others all x0: each other user is a Q0-clone w.p. p*alpha (q0 = 1) and a
    # Q1-clone w.p. alpha (q1 = p), no rest: the histogram is exactly (A, B).
    p = math.exp(eps0)
    beta = _beta_max(p)
    for eps in (0.0, 0.1 * eps0, 0.5 * eps0, 0.9 * eps0):
        d0, d1 = exact_shuffled_delta_directions(krr_matrix(eps0, 2), 0, 1, [0] * (n - 1), eps)
        assert pair_delta_bruteforce(p, beta, 1.0, p, 0.0, n, eps, 0) == pytest.approx(d0, rel=1e-10, abs=1e-16)
        assert pair_delta_bruteforce(p, beta, 1.0, p, 0.0, n, eps, 1) == pytest.approx(d1, rel=1e-10, abs=1e-16)
        # others all x1 mirrors it
        e0, e1 = exact_shuffled_delta_directions(krr_matrix(eps0, 2), 0, 1, [1] * (n - 1), eps)
        assert pair_delta_bruteforce(p, beta, p, 1.0, 0.0, n, eps, 0) == pytest.approx(e0, rel=1e-10, abs=1e-16)
        assert pair_delta_bruteforce(p, beta, p, 1.0, 0.0, n, eps, 1) == pytest.approx(e1, rel=1e-10, abs=1e-16)
    # 3-RR, others all hold the third value: each is Q0/Q1 w.p. alpha, N (= output 2) w.p.
    # p*alpha = 1 - 2 alpha, no rest -- the published pair is exact here.
    kw = krr_published_params(eps0, 3)
    for eps in (0.0, 0.2 * eps0, 0.7 * eps0):
        exact = exact_shuffled_delta(krr_matrix(eps0, 3), 0, 1, [2] * (n - 1), eps)
        pair = pair_delta_max(kw["p"], kw["beta"], kw["q"], None, kw["neutral_share"], n, eps)
        assert pair == pytest.approx(exact, rel=1e-10, abs=1e-16)


def test_oracles_reproduce_the_published_pair_counterexample():
    # eps0 = 2, d = 5, n = 30, eps = 0.8, others all hold a third value
    exact = exact_shuffled_delta(krr_matrix(2.0, 5), 0, 1, [2] * 29, 0.8)
    kw = krr_published_params(2.0, 5)
    published = pair_delta_max(kw["p"], kw["beta"], kw["q"], None, kw["neutral_share"], 30, 0.8)
    assert exact == pytest.approx(0.016845, abs=5e-7)
    assert published == pytest.approx(0.016270, abs=5e-7)
    # eps0 = 1, d = 3, n = 20, eps = 0.8, others all hold x0
    exact = exact_shuffled_delta(krr_matrix(1.0, 3), 0, 1, [0] * 19, 0.8)
    kw = krr_published_params(1.0, 3)
    published = pair_delta_max(kw["p"], kw["beta"], kw["q"], None, kw["neutral_share"], 20, 0.8)
    assert exact == pytest.approx(3.31e-5, abs=5e-8)
    assert published == pytest.approx(8.0e-6, abs=5e-8)


def _krr_configs(d: int, n: int) -> dict[str, list[int]]:
    m = n - 1
    configs = {"all-x0": [0] * m, "all-x1": [1] * m, "mixed-cycle": [i % d for i in range(m)]}
    if d >= 3:
        configs["all-third"] = [2] * m
        configs["x0-and-third"] = [0 if i % 2 else 2 for i in range(m)]
        configs["mostly-x1-some-last"] = [d - 1 if i % 4 == 0 else 1 for i in range(m)]
    return configs


KRR_GRID = [(2, 5), (2, 40), (3, 6), (3, 20), (3, 40), (5, 8), (5, 30)]


@pytest.mark.parametrize("d,n", KRR_GRID)
@pytest.mark.parametrize("eps0", [0.5, 1.0, 2.0, 3.0])
def test_oracle_neutral_aware_pair_dominates_exact_krr(d, n, eps0):
    """Oracle-only: the s = (d-2)alpha pair is >= exact shuffled k-RR."""
    kw = krr_neutral_aware_params(eps0, d)
    mat = krr_matrix(eps0, d)
    for eps in (0.0, 0.1, 0.3, 0.6, 1.0, 1.5):
        if eps >= eps0:
            continue
        bound = pair_delta_max(kw["p"], kw["beta"], kw["q"], None, kw["neutral_share"], n, eps)
        for others in _krr_configs(d, n).values():
            exact = exact_shuffled_delta(mat, 0, 1, others, eps)
            assert bound >= exact * (1 - ORACLE_REL) - ORACLE_ABS


# ---------------------------------------------------------------------------------------------
# 2. The core against the pair oracle
# ---------------------------------------------------------------------------------------------


def _check_against_pair(case: tuple, n: int, eps: float) -> None:
    name, p, beta, q0, q1, s = case
    vr = _make(p, beta, q0, q1, s)
    want = pair_delta_max(p, beta, q0, q1, s, n, eps)
    lower, upper = vr.delta_interval(eps, n)
    got = vr.delta(eps, n)
    context = (f"{name}: VariationRatio({p!r}, {beta!r}, {q0!r}, q1={q1!r}, neutral_share={s!r}), "
               f"n={n}, eps={eps!r}: oracle={want!r}, interval=({lower!r}, {upper!r}), delta={got!r}")
    assert math.isfinite(lower) and math.isfinite(upper), context
    assert lower <= want * (1 + ORACLE_REL) + ORACLE_ABS, context
    assert upper >= want * (1 - ORACLE_REL) - ORACLE_ABS, context
    assert got >= want * (1 - ORACLE_REL) - ORACLE_ABS, context
    assert abs(got - want) <= REL_EXACT * want + ABS_EXACT, context


# e^eps above ~5e3 (eps = 9, 10 in the grids below) is exercised separately
LARGE_EPS = 8.5


@pytest.mark.parametrize("case", PAIR_CASES, ids=PAIR_IDS)
@pytest.mark.parametrize("n", [1, 2, 7, 23, 40])
def test_core_delta_equals_pair_bruteforce(case, n):
    for eps in _eps_grid(case[1]):
        if eps <= LARGE_EPS:
            _check_against_pair(case, n, eps)


def test_core_delta_zero_at_and_above_epsilon0():
    vr = VariationRatio(E**1.5, 0.5, E**1.5)
    assert vr.epsilon0 == pytest.approx(1.5, rel=1e-15)
    for n in (1, 10, 10**6):
        assert vr.delta(1.5, n) == 0.0
        assert vr.delta(2.0, n) == 0.0
    assert math.isinf(VariationRatio(INF, 1.0, 4.0).epsilon0)


# (p, beta, q0, q1, s, n, eps list)
LARGE_N_CASES = [
    ("generic-e1", E, 0.3, E, None, None, 300, [0.02, 0.08, 0.2]),
    ("generic-e1", E, 0.3, E, None, None, 2000, [0.01, 0.08]),
    ("asym-q", E**2, 0.6, E**2, E**2.5, None, 600, [0.05, 0.15, 0.4]),
    ("krr10-share", E, (E - 1) / (E + 9), E, None, 8 * _krr_alpha(1.0, 10), 1000, [0.02, 0.06, 0.12]),
    ("s-zero", E, 0.3, E, None, 0.0, 500, [0.03, 0.1, 0.25]),
    ("p-inf", INF, 1.0, 4.0, None, None, 800, [0.05, 0.2, 0.5]),
    ("beta-max", E**1.5, _beta_max(E**1.5), E**1.5, None, None, 1000, [0.05, 0.15, 0.3]),
    ("beta-tiny", E, 1e-4, E, None, None, 400, [1e-5, 1e-4, 5e-4]),
]


@pytest.mark.parametrize("case", LARGE_N_CASES, ids=lambda c: f"{c[0]}-n{c[6]}")
def test_core_interval_brackets_slow_sum_at_larger_n(case):
    name, p, beta, q0, q1, s, n, eps_list = case
    vr = _make(p, beta, q0, q1, s)
    for eps in eps_list:
        # symmetric pairs (q1 = q0) are mirror images: both directions coincide (checked at small n
        # in test_oracle_pair_symmetric_directions_coincide)
        directions = (0,) if q1 is None else (0, 1)
        brackets = [pair_delta_truncated(p, beta, q0, q1, s, n, eps, d) for d in directions]
        true_lower = max(b[0] for b in brackets)
        true_upper = max(b[1] for b in brackets)
        lower, upper = vr.delta_interval(eps, n)
        context = (f"{name}: n={n}, eps={eps!r}, oracle=[{true_lower!r}, {true_upper!r}], "
                   f"interval=({lower!r}, {upper!r})")
        assert true_lower > 1e-15, context  # the case is informative (not identically 0)
        assert upper >= true_lower * (1 - ORACLE_REL), context
        assert lower <= true_upper * (1 + ORACLE_REL), context
        # the contract's rtol (1e-3): the certified upper bound is that close to the truth
        assert upper <= true_upper * (1 + 1e-3) + ABS_EXACT, context
        assert vr.delta(eps, n) == upper, context


# ---------------------------------------------------------------------------------------------
# 3. Soundness on k-ary randomized response
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("d,n", KRR_GRID)
@pytest.mark.parametrize("eps0", [0.5, 1.0, 2.0, 3.0])
def test_core_neutral_aware_krr_bound_is_sound(d, n, eps0):
    kw = krr_neutral_aware_params(eps0, d)
    vr = VariationRatio(kw["p"], kw["beta"], kw["q"], neutral_share=kw["neutral_share"])
    assert vr.neutral_share == pytest.approx((d - 2) * _krr_alpha(eps0, d), rel=1e-15)
    mat = krr_matrix(eps0, d)
    for eps in (0.0, 0.05, 0.1, 0.3, 0.6, 1.0, 1.5, 2.5):
        if eps >= eps0:
            continue  # exactly 0 (test_core_delta_zero_at_and_above_epsilon0); the oracle shows rounding noise
        bound = vr.delta(eps, n)
        for name, others in _krr_configs(d, n).items():
            exact = exact_shuffled_delta(mat, 0, 1, others, eps)
            assert bound >= exact * (1 - ORACLE_REL) - ORACLE_ABS, (
                f"d={d}, n={n}, eps0={eps0}, eps={eps}, others={name}: bound={bound!r} < exact={exact!r}")


def test_core_worst_case_krr_bound_is_sound():
    # the generic eps0-LDP bound (beta at its maximum) is valid for k-RR as well
    for d, n in [(3, 20), (5, 30)]:
        for eps0 in (1.0, 2.0):
            vr = VariationRatio.worst_case(eps0)
            mat = krr_matrix(eps0, d)
            for eps in (0.1, 0.4, 0.8):
                for others in _krr_configs(d, n).values():
                    exact = exact_shuffled_delta(mat, 0, 1, others, eps)
                    assert vr.delta(eps, n) >= exact * (1 - ORACLE_REL) - ORACLE_ABS


def test_core_published_pair_below_exact_krr():
    """The published pair under-reports k-RR (so it must never be called a guarantee)."""
    eps0, d, n, eps = 2.0, 5, 30, 0.8
    kw = krr_neutral_aware_params(eps0, d)
    exact = exact_shuffled_delta(krr_matrix(eps0, d), 0, 1, [2] * (n - 1), eps)
    published = published_pair(kw["p"], kw["beta"], kw["q"]).delta(eps, n)
    assert published == pytest.approx(0.016270, abs=5e-7)
    assert published < exact
    valid = VariationRatio(kw["p"], kw["beta"], kw["q"], neutral_share=kw["neutral_share"])
    assert exact <= valid.delta(eps, n) <= 1.05 * exact  # "within a few percent"

    eps0, d, n, eps = 1.0, 3, 20, 0.8
    kw = krr_neutral_aware_params(eps0, d)
    exact = exact_shuffled_delta(krr_matrix(eps0, d), 0, 1, [0] * (n - 1), eps)
    published = published_pair(kw["p"], kw["beta"], kw["q"]).delta(eps, n)
    assert published == pytest.approx(8.0e-6, abs=5e-8)
    assert published < exact
    assert VariationRatio(kw["p"], kw["beta"], kw["q"], neutral_share=kw["neutral_share"]).delta(eps, n) >= exact


def _check_against_histogram(eps0: float, n: int) -> None:
    p = math.exp(eps0)
    binary = VariationRatio(p, _beta_max(p), 1.0, q1=p, neutral_share=0.0)
    kw = krr_neutral_aware_params(eps0, 3)
    three = published_pair(kw["p"], kw["beta"], kw["q"])
    for eps in (0.0, 0.1 * eps0, 0.5 * eps0, 0.9 * eps0):
        exact_binary = exact_shuffled_delta(krr_matrix(eps0, 2), 0, 1, [0] * (n - 1), eps)
        got = binary.delta(eps, n)
        assert abs(got - exact_binary) <= REL_EXACT * exact_binary + ABS_EXACT, (
            f"{binary!r}.delta({eps!r}, {n}) = {got!r}, exact binary RR = {exact_binary!r}")
        exact_three = exact_shuffled_delta(krr_matrix(eps0, 3), 0, 1, [2] * (n - 1), eps)
        got = three.delta(eps, n)
        assert abs(got - exact_three) <= REL_EXACT * exact_three + ABS_EXACT, (
            f"{three!r}.delta({eps!r}, {n}) = {got!r}, exact 3-RR = {exact_three!r}")


@pytest.mark.parametrize("eps0", [0.5, 1.0])
@pytest.mark.parametrize("n", [3, 25, 40])
def test_core_equals_exact_shuffle_where_pair_is_the_histogram(eps0, n):
    """End to end, no pair oracle in between: binary RR with others all x0 and 3-RR with others
    all on the third value are exactly their pairs (see the oracle coincidence test)."""
    _check_against_histogram(eps0, n)


# ---------------------------------------------------------------------------------------------
# 4. Accuracy where e^eps * |clone coefficients| is large (eps = 9, 10 in the grids above, and
#    binary RR at eps0 = 2.5): the special-function margins must stay relative to the result
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", PAIR_CASES, ids=PAIR_IDS)
@pytest.mark.parametrize("n", [1, 2, 7, 23, 40])
def test_core_delta_equals_pair_bruteforce_at_large_e_eps(case, n):
    for eps in _eps_grid(case[1]):
        if eps > LARGE_EPS:
            _check_against_pair(case, n, eps)


@pytest.mark.parametrize("n", [3, 25, 40])
def test_core_equals_exact_shuffle_where_pair_is_the_histogram_large_eps0(n):
    _check_against_histogram(2.5, n)


# ---------------------------------------------------------------------------------------------
# 5. Huge e^eps: p = inf (delta tends to a positive limit) and p = e^15 .. e^40 (p e^eps > 1e16)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("p,beta,q,n", [(INF, 1.0, 2.0, 2), (INF, 1.0, 2.0, 50), (INF, 0.6, 3.0, 5)])
def test_core_p_infinite_beyond_e_eps_1e16(p, beta, q, n):
    """p = inf: delta(eps) tends to a positive limit (the victim's clone type is sometimes unique).
    Core 44c1791 returned 0.0 for eps >= ~37.2 (unsound) and a loose value just below."""
    vr = VariationRatio(p, beta, q)
    for eps in (30.0, 36.0, 37.0, 40.0, 100.0, 700.0):
        _check_against_pair(("p-inf-huge-eps", p, beta, q, None, None), n, eps)
        assert vr.delta(eps, n) > 0.0


@pytest.mark.parametrize("eps0,n", [(15.0, 10), (20.0, 10), (30.0, 3), (30.0, 10), (30.0, 40), (40.0, 5)])
def test_core_worst_case_huge_p_against_pair_bruteforce(eps0, n):
    """p = e^eps0 up to e^40 (p * e^eps beyond 1e16).  Core 44c1791 gave
    worst_case(30).delta(29, 10) = 0.631797562288 < exact 0.632120558828 (unsound), and
    worst_case(40).delta(38, 5) = 0.0 against exact 0.864664716763."""
    vr = VariationRatio.worst_case(eps0)
    for fraction in (0.5, 0.8, 0.95, 29.0 / 30.0):
        _check_against_pair(("worst-case-huge-p", vr.p, vr.beta, vr.q0, None, None), n, fraction * eps0)
