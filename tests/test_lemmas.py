"""Tests for dpacct_shuffle.lemmas.

Every lemma is checked against a *direct computation* on explicit distributions/randomizers
(hockey-stick divergences, privacy-loss tails and max-divergences computed from probability tables,
exact shuffled/subsampled output distributions), not only against its re-typed formula. Where a
lemma is tight, the tests also show the bound is attained.
"""

from __future__ import annotations

import itertools
import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats

from dpacct_shuffle import lemmas as L
from dpacct_shuffle.core.closed_forms import fmt_epsilon
from tests.oracle import exact_shuffled_delta, krr_matrix

FAST = settings(deadline=None)  # example count from the loaded hypothesis profile (conftest.py)
# exact shuffled distributions are expensive per example: a fraction of the profile's count
SLOW = settings(max_examples=max(5, settings.default.max_examples // 4), deadline=None)
# The explicit distributions below are built in double precision (each probability carries a
# rounding error ~1e-16), so a divergence computed from them can exceed the true value by that
# much. Comparisons of such direct computations against a lemma allow this absolute slack, which
# is orders of magnitude below any real violation. The rounding *direction* of the closed forms
# themselves is tested exactly, against 50-digit mpmath values.
FLOAT_SLACK = 1e-14
mpmath.mp.dps = 50


# ---------------------------------------------------------------------------------------------
# independent helpers (deliberately not using the module under test)
# ---------------------------------------------------------------------------------------------


def hs(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    """Hockey-stick divergence Σ max(0, p − e^ε q), straight from the definition."""
    return float(np.maximum(np.asarray(p) - math.exp(eps) * np.asarray(q), 0.0).sum())


def hs_subsets(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    """max_S P(S) − e^ε Q(S) by enumerating every subset S."""
    best = 0.0
    for size in range(len(p) + 1):
        for subset in itertools.combinations(range(len(p)), size):
            idx = list(subset)
            best = max(best, float(p[idx].sum() - math.exp(eps) * q[idx].sum()))
    return best


def rr(eps: float) -> np.ndarray:
    """Binary randomized response matrix."""
    a = math.exp(eps) / (1.0 + math.exp(eps))
    return np.array([[a, 1.0 - a], [1.0 - a, a]])


def product(dists: list[np.ndarray]) -> np.ndarray:
    """Joint distribution of independent coordinates, flattened."""
    out = np.array([1.0])
    for d in dists:
        out = np.multiply.outer(out, d).ravel()
    return out


def pure_eps(p: np.ndarray, q: np.ndarray) -> float:
    """max |ln p/q| over the (common, full) support; ln(p/q) = log1p((p − q)/q) avoids the
    cancellation of ln p − ln q when p ≈ q."""
    p, q = np.asarray(p), np.asarray(q)
    return float(max(np.max(np.log1p((p - q) / q)), np.max(np.log1p((q - p) / p))))


def matrix_eps(m: np.ndarray) -> float:
    return max(pure_eps(m[i], m[j]) for i in range(len(m)) for j in range(len(m)) if i != j)


def matrix_delta(m: np.ndarray, eps: float) -> float:
    return max(hs(m[i], m[j], eps) for i in range(len(m)) for j in range(len(m)) if i != j)


weights = st.lists(st.floats(0.02, 1.0), min_size=2, max_size=5)


@st.composite
def dist_pairs(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    w = draw(weights)
    v = draw(st.lists(st.floats(0.02, 1.0), min_size=len(w), max_size=len(w)))
    p, q = np.array(w), np.array(v)
    return p / p.sum(), q / q.sum()


@st.composite
def matrices(draw: st.DrawFn, rows: int, cols: int) -> np.ndarray:
    m = np.array(draw(st.lists(st.floats(0.02, 1.0), min_size=rows * cols, max_size=rows * cols)))
    m = m.reshape(rows, cols)
    return m / m.sum(axis=1, keepdims=True)


# ---------------------------------------------------------------------------------------------
# divergences (Dwork & Roth 2014, Def 3.5, 3.6, Remark 3.2, Lemma 3.18)
# ---------------------------------------------------------------------------------------------


@FAST
@given(dist_pairs(), st.floats(0.0, 3.0))
def test_hockey_stick_equals_max_over_subsets(pair, eps):
    p, q = pair
    assert L.hockey_stick_divergence(p, q, eps) == pytest.approx(hs_subsets(p, q, eps), abs=1e-13)


@FAST
@given(dist_pairs())
def test_max_divergence_equals_max_over_subsets(pair):
    p, q = pair
    brute = max(
        math.log(p[list(s)].sum() / q[list(s)].sum())
        for r in range(1, len(p) + 1)
        for s in itertools.combinations(range(len(p)), r)
    )
    value = L.max_divergence(p, q)
    assert brute * (1 - 1e-13) <= value <= brute + 1e-12  # brute is itself rounded


@FAST
@given(dist_pairs(), st.floats(0.0, 0.99))
def test_approximate_max_divergence_equals_dwork_roth_definition(pair, delta):
    p, q = pair
    # Def 3.6: max over S with P(S) >= δ of ln((P(S) − δ)/Q(S)) (full supports here)
    candidates = []
    for r in range(1, len(p) + 1):
        for s in itertools.combinations(range(len(p)), r):
            ps, qs = p[list(s)].sum(), q[list(s)].sum()
            if ps > delta:
                candidates.append(math.log((ps - delta) / qs))
    brute = max(0.0, max(candidates))  # clipped at 0: a privacy parameter
    value = L.approximate_max_divergence(p, q, delta)
    assert brute - 1e-12 <= value <= brute + 1e-9
    # Remark 3.2: (ε, δ) holds at ε = D^δ_∞ and fails just below it
    assert hs(p, q, value) <= delta + FLOAT_SLACK
    if value > 1e-6:
        assert hs(p, q, value - 1e-6) > delta


def test_approximate_max_divergence_edge_cases():
    p = np.array([0.2, 0.8])
    # D_∞^δ ≤ 0 (δ ≥ TV) is reported as ε = 0, never negative
    assert L.approximate_max_divergence(p, p, 0.1) == 0.0
    assert L.approximate_max_divergence(p, [0.5, 0.5], 1.0) == 0.0
    assert L.approximate_max_divergence(p, [0.5, 0.5], 0.3) == 0.0  # TV = 0.3
    assert L.approximate_max_divergence(p, [0.5, 0.5], 0.29) > 0.0
    # P puts 0.3 where Q has no mass: infinite unless δ ≥ 0.3
    p2, q2 = np.array([0.3, 0.7, 0.0]), np.array([0.0, 0.5, 0.5])
    assert L.approximate_max_divergence(p2, q2, 0.29) == math.inf
    value = L.approximate_max_divergence(p2, q2, 0.3)
    assert value == pytest.approx(math.log(0.7 / 0.5), rel=1e-12)
    assert L.max_divergence(p2, q2) == math.inf
    assert L.kl_divergence(p2, q2) == math.inf
    assert L.max_divergence(q2, [0.2, 0.3, 0.5]) == pytest.approx(math.log(0.5 / 0.3))


@FAST
@given(weights, weights)
def test_kl_bound_from_max_divergence(w, v):
    """Dwork & Roth 2014, Lemma 3.18, on explicit pairs: KL ≤ ε(e^ε − 1) with ε = max of both D_∞.

    The pair is normalised and evaluated in 50-digit arithmetic, so the check is exact."""
    size = min(len(w), len(v))
    p = [mpmath.mpf(x) / mpmath.fsum(w[:size]) for x in w[:size]]
    q = [mpmath.mpf(x) / mpmath.fsum(v[:size]) for x in v[:size]]
    eps = max(abs(mpmath.log(a / b)) for a, b in zip(p, q))
    kl = mpmath.fsum(a * mpmath.log(a / b) for a, b in zip(p, q))
    eps_float = math.nextafter(float(eps), math.inf)
    assert kl <= L.kl_divergence_bound(eps_float)
    pf, qf = np.array([float(a) for a in p]), np.array([float(b) for b in q])
    assert L.kl_divergence(pf, qf) == pytest.approx(float(kl), rel=1e-9, abs=1e-15)


def test_kl_of_randomized_response_is_below_bound():
    for eps in (0.1, 1.0, 3.0):
        m = rr(eps)
        exact = eps * math.tanh(eps / 2.0)  # KL of binary RR
        assert L.kl_divergence(m[0], m[1]) == pytest.approx(exact, rel=1e-12)
        assert exact <= L.kl_divergence_bound(eps)


def test_randomizer_helpers_on_randomized_response():
    m = rr(1.3)
    assert L.randomizer_epsilon(m) == pytest.approx(1.3, rel=1e-12)
    assert L.randomizer_epsilon(m) >= 1.3
    e = math.exp(1.3)
    assert L.randomizer_delta(m, 0.4) == pytest.approx((e - math.exp(0.4)) / (e + 1.0), rel=1e-12)
    assert L.randomizer_epsilon(m, L.randomizer_delta(m, 0.4)) == pytest.approx(0.4, rel=1e-9)


# ---------------------------------------------------------------------------------------------
# Lemma 3.1 / 3.2: pure ↔ approximate
# ---------------------------------------------------------------------------------------------


@FAST
@given(dist_pairs(), st.floats(0.0, 0.5))
def test_pure_to_approx_holds_on_explicit_pairs(pair, delta):
    p, q = pair
    eps_pure = pure_eps(p, q)
    eps_approx = L.pure_to_approx(eps_pure, delta)
    assert eps_approx == pytest.approx(max(eps_pure - delta, 0.0), abs=1e-12)
    assert hs(p, q, eps_approx) <= delta + FLOAT_SLACK
    assert hs(q, p, eps_approx) <= delta + FLOAT_SLACK


def test_pure_to_approx_is_nearly_tight_for_randomized_response():
    # RR with a large ε: D_{e^{ε−δ}} = e^ε(1 − e^{−δ})/(1 + e^ε) → 1 − e^{−δ} ≈ δ
    eps, delta = 12.0, 0.01
    m = rr(eps)
    value = hs(m[0], m[1], L.pure_to_approx(eps, delta))
    assert 0.99 * delta <= value <= delta


@FAST
@given(dist_pairs(), st.floats(0.0, 2.0), st.floats(0.05, 1.0))
def test_approx_to_pure_on_explicit_pairs(pair, eps, eta):
    p, q = pair
    k = len(p)
    delta = max(hs(p, q, eps), hs(q, p, eps))  # the pair is exactly (ε, δ)-DP
    p_mix, q_mix = L.mix_with_uniform(p, eta), L.mix_with_uniform(q, eta)
    assert 0.5 * np.abs(p - p_mix).sum() <= eta + FLOAT_SLACK  # TV(A(x), A'(x)) ≤ η
    bound = L.approx_to_pure(eps, delta, k, eta)
    assert pure_eps(p_mix, q_mix) <= bound + FLOAT_SLACK
    if k == 2:  # "in particular" clause of Lemma 3.2
        assert bound <= eps + 2 * delta / eta + 1e-12


@FAST
@given(matrices(3, 4), st.floats(0.0, 1.5), st.floats(0.05, 1.0))
def test_approx_to_pure_on_randomizer_matrices(m, eps, eta):
    delta = matrix_delta(m, eps)
    mixed = L.mix_with_uniform(m, eta)
    assert np.allclose(mixed.sum(axis=1), 1.0)
    assert matrix_eps(mixed) <= L.approx_to_pure(eps, delta, m.shape[1], eta) + FLOAT_SLACK


def test_approx_to_pure_point_mass_example_is_close_to_bound():
    # P = (δ, 1 − δ), Q = (0, 1) is (0, δ)-DP; after mixing the ratio at y=0 is 1 + 2(1 − η)δ/η
    delta, eta = 0.01, 0.05
    p, q = np.array([delta, 1 - delta]), np.array([0.0, 1.0])
    mixed = pure_eps(L.mix_with_uniform(p, eta), L.mix_with_uniform(q, eta))
    assert mixed == pytest.approx(math.log1p(2 * (1 - eta) * delta / eta), rel=1e-12)
    assert mixed <= L.approx_to_pure(0.0, delta, 2, eta) <= mixed + 0.02


# ---------------------------------------------------------------------------------------------
# Lemma 4.1 / 4.2: replacement ↔ deletion LDP
# ---------------------------------------------------------------------------------------------


def compendium_counterexample(eps: float, delta: float) -> np.ndarray:
    e = math.exp(eps)
    r0 = [e / 3, (1 / 3 - delta) / e, 1 - (e / 3 + (1 / 3 - delta) / e)]
    r1 = [1 / (3 * e), e / 3 + delta, 1 - (1 / (3 * e) + e / 3 + delta)]
    return np.array([r0, r1])


def test_compendium_counterexample_refutes_two_delta_and_attains_lemma_4_2():
    eps, delta = 0.25, 1 / 6
    m = compendium_counterexample(eps, delta)
    uniform = np.full(3, 1 / 3)
    # it is (ε, δ)-deletion LDP w.r.t. the uniform reference (Def 2.3, both inequalities)
    for row in m:
        assert hs(row, uniform, eps) <= delta + FLOAT_SLACK
        assert hs(uniform, row, eps) <= delta + FLOAT_SLACK
    assert L.deletion_delta(m, uniform, eps) <= delta + FLOAT_SLACK
    # replacement δ at 2ε, computed directly
    replacement = max(hs(m[1], m[0], 2 * eps), hs(m[0], m[1], 2 * eps))
    assert replacement > 2 * delta + 0.01  # not (2ε, 2δ)-replacement LDP
    eps_r, delta_r = L.deletion_to_replacement(eps, delta)
    assert eps_r == pytest.approx(2 * eps)
    assert replacement <= delta_r  # Lemma 4.2 holds ...
    assert replacement == pytest.approx(delta_r, rel=1e-12)  # ... and is attained on output 2
    assert m[1, 1] - math.exp(2 * eps) * m[0, 1] == pytest.approx((1 + math.exp(eps)) * delta, rel=1e-12)


@FAST
@given(matrices(3, 4), st.lists(st.floats(0.02, 1.0), min_size=4, max_size=4), st.floats(0.0, 1.5))
def test_deletion_to_replacement_on_random_randomizers(m, ref, eps):
    reference = np.array(ref) / sum(ref)
    delta_del = L.deletion_delta(m, reference, eps)
    direct = max(
        max(hs(row, reference, eps), hs(reference, row, eps)) for row in m
    )
    assert delta_del == pytest.approx(direct, abs=1e-14)
    eps_r, delta_r = L.deletion_to_replacement(eps, delta_del)
    assert matrix_delta(m, eps_r) <= delta_r + FLOAT_SLACK


@FAST
@given(matrices(3, 4), st.lists(st.floats(0.02, 1.0), min_size=4, max_size=4))
def test_deletion_to_replacement_profile_on_random_randomizers(m, ref):
    reference = np.array(ref) / sum(ref)
    profile = L.deletion_to_replacement_profile(lambda e: L.deletion_delta(m, reference, e))
    for eps in (0.0, 0.1, 0.5, 1.0, 2.0):
        assert matrix_delta(m, eps) <= profile(eps) + FLOAT_SLACK
    # Huang & Canonne's counterexample attains it at ε' = 2·(1/4)
    cx = compendium_counterexample(0.25, 1 / 6)
    tight = L.deletion_to_replacement_profile(lambda e: L.deletion_delta(cx, np.full(3, 1 / 3), e))
    assert tight(0.5) == pytest.approx(matrix_delta(cx, 0.5), rel=1e-12)


@FAST
@given(matrices(3, 3), st.floats(0.0, 1.5))
def test_replacement_to_deletion_with_reference_a_row(m, eps):
    delta_rep = matrix_delta(m, eps)
    eps_d, delta_d = L.replacement_to_deletion(eps, delta_rep)
    assert (eps_d, delta_d) == (eps, delta_rep)
    for x0 in range(3):
        assert L.deletion_delta(m, m[x0], eps_d) <= delta_d + FLOAT_SLACK


# ---------------------------------------------------------------------------------------------
# Cor 4.1: chained LDP randomizers
# ---------------------------------------------------------------------------------------------


def _feasible_binary(grid: np.ndarray, eps: float) -> np.ndarray:
    """All 2x2 stochastic matrices [[a, 1−a], [b, 1−b]] with a, b in grid that are ε-LDP."""
    a, b = np.meshgrid(grid, grid, indexing="ij")
    a, b = a.ravel(), b.ravel()
    lim = math.exp(eps) * (1 + 1e-15)  # admits the RR points despite rounding
    ok = (a <= lim * b) & (b <= lim * a) & (1 - a <= lim * (1 - b)) & (1 - b <= lim * (1 - a))
    return np.stack([a[ok], b[ok]], axis=1)


@pytest.mark.parametrize("eps1,eps2", [(0.5, 1.0), (1.0, 1.0), (0.3, 2.0), (2.0, 2.5)])
def test_chained_ldp_grid_search_over_binary_randomizers(eps1, eps2):
    def grid(eps: float) -> np.ndarray:
        a = math.exp(eps) / (1 + math.exp(eps))
        return np.unique(np.concatenate([np.linspace(0.0, 1.0, 41), [a, 1 - a]]))

    r1 = _feasible_binary(np.unique(np.concatenate([grid(eps1), grid(eps2)])), eps1)
    r2 = _feasible_binary(np.unique(np.concatenate([grid(eps1), grid(eps2)])), eps2)
    # P[R2(R1(x)) = 0] for x = 0, 1 and every (R1, R2) combination
    q0 = r1[:, 0, None] * r2[None, :, 0] + (1 - r1[:, 0, None]) * r2[None, :, 1]
    q1 = r1[:, 1, None] * r2[None, :, 0] + (1 - r1[:, 1, None]) * r2[None, :, 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.stack(
            [np.log(q0) - np.log(q1), np.log(1 - q0) - np.log(1 - q1)]
        )
    ratios = np.where(np.isnan(ratios), 0.0, np.abs(ratios))  # 0/0: both events impossible
    worst = float(ratios.max())
    exact = L.chained_ldp(eps1, eps2)
    assert worst <= exact + FLOAT_SLACK  # never exceeded
    assert worst == pytest.approx(exact, rel=1e-9)  # attained (by RR ∘ RR)
    # the closed form itself, from the binary RR∘RR composition
    composed = rr(eps1) @ rr(eps2)
    assert pure_eps(composed[0], composed[1]) == pytest.approx(exact, rel=1e-12)


@FAST
@given(matrices(3, 4), matrices(4, 3))
def test_chained_ldp_on_random_randomizers(m1, m2):
    eps1, eps2 = matrix_eps(m1), matrix_eps(m2)
    composed = m1 @ m2
    assert matrix_eps(composed) <= L.chained_ldp(eps1, eps2) + FLOAT_SLACK


@FAST
@given(st.floats(0.0, 20.0), st.floats(0.0, 20.0))
def test_chained_ldp_closed_form_properties(eps1, eps2):
    value = L.chained_ldp(eps1, eps2)
    a, b = mpmath.mpf(eps1), mpmath.mpf(eps2)
    # (e^{a+b} + 1)/(e^a + e^b) = 1 + (e^a − 1)(e^b − 1)/(e^a + e^b): no cancellation in mpmath either
    exact = mpmath.log1p(mpmath.expm1(a) * mpmath.expm1(b) / (mpmath.exp(a) + mpmath.exp(b)))
    assert value >= exact  # rounded up, never down
    assert value <= max(exact * (1 + 1e-13), 1e-290)  # results below 1e-290 are reported as 1e-290
    assert value <= min(eps1, eps2)
    assert exact <= a * b / 2  # the weaker closed form of Cor 4.1 (exact arithmetic) ...
    assert L.chained_ldp_product_bound(eps1, eps2) >= a * b / 2  # ... and its float is an upper bound
    assert L.chained_ldp(eps1, eps2) == L.chained_ldp(eps2, eps1)


def test_chained_ldp_extremes():
    assert L.chained_ldp(math.inf, 0.7) == 0.7
    assert L.chained_ldp(math.inf, math.inf) == math.inf
    assert L.chained_ldp(0.0, 5.0) == 0.0
    assert L.chained_ldp(800.0, 900.0) == pytest.approx(800.0)
    small = L.chained_ldp(1e-4, 2e-4)
    assert small == pytest.approx(1e-4 * 2e-4 / 2, rel=1e-6)  # no cancellation at small ε


# ---------------------------------------------------------------------------------------------
# Cor 3.1: profile of ε0-LDP randomizers
# ---------------------------------------------------------------------------------------------


@FAST
@given(matrices(3, 4))
def test_pure_ldp_profile_dominates_every_randomizer(m):
    eps0 = matrix_eps(m)
    profile = L.pure_ldp_profile(eps0)
    for eps in np.linspace(0.0, eps0 * 1.1, 12):
        assert matrix_delta(m, float(eps)) <= profile(float(eps)) + FLOAT_SLACK


def test_pure_ldp_profile_attained_by_randomized_response():
    profile = L.pure_ldp_profile(1.5)
    m = rr(1.5)
    for eps in (0.0, 0.3, 1.0, 1.49):
        assert profile(eps) == pytest.approx(hs(m[0], m[1], eps), rel=1e-12)
        assert profile(eps) >= hs(m[0], m[1], eps)
    assert profile(1.5) == 0.0 and profile(4.0) == 0.0


# ---------------------------------------------------------------------------------------------
# Thm 4.1 / 4.2: advanced grouposition
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 5, 20, 100])
@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0])
@pytest.mark.parametrize("delta", [1e-2, 1e-6])
def test_advanced_grouposition_on_k_randomized_responses(k, eps, delta):
    eps_prime = L.advanced_grouposition(eps, k, delta)
    a = math.exp(eps) / (1 + math.exp(eps))
    j = np.arange(k + 1)  # number of coordinates where the output disagrees with X
    log_p = special.gammaln(k + 1) - special.gammaln(j + 1) - special.gammaln(k - j + 1)
    p = np.exp(log_p + (k - j) * math.log(a) + j * math.log1p(-a))
    q = np.exp(log_p + j * math.log(a) + (k - j) * math.log1p(-a))
    loss = (k - 2 * j) * eps
    assert float(p[loss > eps_prime].sum()) <= delta  # the tail statement of Thm 4.1
    assert hs(p, q, eps_prime) <= delta  # hence (ε', δ)


@FAST
@given(st.lists(matrices(2, 3), min_size=3, max_size=3), st.floats(0.01, 0.5))
def test_advanced_grouposition_heterogeneous_randomizers(ms, delta):
    eps = max(matrix_eps(m) for m in ms)
    eps_prime = L.advanced_grouposition(eps, 3, delta)
    p, q = product([m[0] for m in ms]), product([m[1] for m in ms])
    assert hs(p, q, eps_prime) <= delta
    assert hs(q, p, eps_prime) <= delta


def leaky_rr(eps: float, delta: float) -> np.ndarray:
    """Outputs (0, 1, 'I am 0', 'I am 1'): RR with prob 1 − δ, reveal the input with prob δ."""
    base = (1 - delta) * rr(eps)
    return np.hstack([base, delta * np.eye(2)])


def test_approximate_grouposition_corrected_delta_and_compendium_counterexample():
    eps, delta, k, delta_prime = 0.5, 0.01, 4, 1e-4
    m = leaky_rr(eps, delta)
    assert matrix_delta(m, eps) <= delta + FLOAT_SLACK  # (ε, δ)-LDP
    p, q = product([m[0]] * k), product([m[1]] * k)
    eps_prime, delta_total = L.advanced_grouposition_approx(eps, delta, k, delta_prime)
    actual = hs(p, q, eps_prime)
    assert actual >= 1 - (1 - delta) ** k - 1e-15
    assert actual > delta + k * delta_prime  # the compendium's "δ + kδ'" fails
    assert actual <= delta_total  # δ' + kδ holds
    assert delta_total == pytest.approx(delta_prime + k * delta)


@FAST
@given(
    st.lists(matrices(2, 3), min_size=3, max_size=3),
    st.floats(0.0, 1.0),
    st.floats(1e-4, 0.5),
)
def test_approximate_grouposition_on_random_approximate_randomizers(ms, eps, delta_prime):
    delta = max(matrix_delta(m, eps) for m in ms)  # each randomizer is (ε, δ)-LDP
    eps_prime, delta_total = L.advanced_grouposition_approx(eps, delta, 3, delta_prime)
    p, q = product([m[0] for m in ms]), product([m[1] for m in ms])
    assert hs(p, q, eps_prime) <= delta_total + FLOAT_SLACK
    assert hs(q, p, eps_prime) <= delta_total + FLOAT_SLACK


# ---------------------------------------------------------------------------------------------
# Thm 5.1 / 5.2: shuffle ↔ LDP
# ---------------------------------------------------------------------------------------------


def shuffled(m: np.ndarray, inputs: tuple[int, ...]) -> dict[tuple[int, ...], float]:
    """Exact distribution of the shuffled output (= histogram of the n reports)."""
    dist = {tuple([0] * m.shape[1]): 1.0}
    for x in inputs:
        new: dict[tuple[int, ...], float] = {}
        for hist, pr in dist.items():
            for y, ry in enumerate(m[x]):
                h = list(hist)
                h[y] += 1
                new[tuple(h)] = new.get(tuple(h), 0.0) + pr * ry
        dist = new
    return dist


def shuffle_delta(m: np.ndarray, n: int, eps: float) -> float:
    """max over neighbouring datasets (user 0 replaced) of the shuffled hockey-stick divergence."""
    d = m.shape[0]
    best = 0.0
    for others in itertools.combinations_with_replacement(range(d), n - 1):
        for x, x2 in itertools.permutations(range(d), 2):
            a, b = shuffled(m, (x,) + others), shuffled(m, (x2,) + others)
            keys = set(a) | set(b)
            pa = np.array([a.get(key, 0.0) for key in keys])
            pb = np.array([b.get(key, 0.0) for key in keys])
            best = max(best, hs(pa, pb, eps))
    return best


@SLOW
@given(matrices(3, 3), st.integers(1, 4), st.sampled_from([0.0, 0.2, 1.0]))
def test_shuffle_to_ldp_on_explicit_shuffled_protocols(m, n, eps_s):
    delta_s = shuffle_delta(m, n, eps_s)
    eps_l, delta_l = L.shuffle_to_ldp(eps_s, delta_s, n)
    assert delta_l == delta_s
    assert eps_l == pytest.approx(eps_s + math.log(n))
    assert matrix_delta(m, eps_l) <= delta_l + FLOAT_SLACK


@SLOW
@given(matrices(2, 3), st.integers(2, 4))
def test_shuffle_to_ldp_profile_on_explicit_shuffled_protocols(m, n):
    profile = L.shuffle_to_ldp_profile(lambda e: shuffle_delta(m, n, e), n)
    for eps_l in (0.0, 0.5 * math.log(n), math.log(n), math.log(n) + 0.3, math.log(n) + 1.0):
        assert matrix_delta(m, eps_l) <= profile(eps_l) + FLOAT_SLACK
    assert profile(0.5 * math.log(n)) == 1.0


def test_shuffle_to_ldp_with_one_user_is_exact():
    m = np.array([[0.6, 0.3, 0.1], [0.2, 0.2, 0.6]])
    for eps in (0.0, 0.5):
        assert shuffle_delta(m, 1, eps) == pytest.approx(matrix_delta(m, eps), abs=1e-15)
        assert L.shuffle_to_ldp(eps, 0.1, 1) == (eps, 0.1)


def binary_rr_shuffle_delta(eps0: float, n: int, eps: float) -> float:
    """Exact δ(ε) of n shuffled binary-RR reports (count of ones) for several other-user
    configurations, both directions; victim input 0 vs 1."""
    a = math.exp(eps0) / (1 + math.exp(eps0))
    best = 0.0
    for ones in (0, (n - 1) // 2, n - 1):
        others = np.convolve(
            stats.binom.pmf(np.arange(ones + 1), ones, a),
            stats.binom.pmf(np.arange(n - ones), n - 1 - ones, 1 - a),
        )
        p = np.convolve(others, [a, 1 - a])  # victim input 0: reports 1 w.p. 1 − a
        q = np.convolve(others, [1 - a, a])
        best = max(best, hs(p, q, eps), hs(q, p, eps))
    return best


@pytest.mark.parametrize("eps0,n,delta", [(0.5, 1000, 1e-6), (1.0, 2000, 1e-6), (2.0, 1000, 1e-6), (3.0, 20000, 1e-8)])
def test_fmt_bound_holds_for_shuffled_randomized_response(eps0, n, delta):
    eps = L.fmt_shuffle_bound(eps0, n, delta)
    assert 0.0 < eps < eps0
    assert binary_rr_shuffle_delta(eps0, n, eps) <= delta
    # and the bound is not vacuous: the exact ε is of the same order (within a factor 10)
    assert binary_rr_shuffle_delta(eps0, n, eps / 10) > delta


@pytest.mark.parametrize("eps0", [0.5, 1.0, 1.3])
def test_fmt_bound_holds_for_shuffled_3ary_randomized_response(eps0):
    """Exact shuffled histogram of 3-RR (tests/oracle.py), several configurations of the others."""
    n, delta = 300, 1e-3
    eps = L.fmt_shuffle_bound(eps0, n, delta)
    m = krr_matrix(eps0, 3)
    configurations = [(0,) * (n - 1), (2,) * (n - 1), (1,) * (n - 1), tuple(i % 3 for i in range(n - 1))]
    worst = max(exact_shuffled_delta(m, 0, 1, others, eps) for others in configurations)
    assert worst <= delta


def test_fmt_bound_validity_condition():
    n, delta = 1000, 1e-6
    limit = math.log(n / (8 * math.log(2 / delta)) - 1)
    L.fmt_shuffle_bound(limit * 0.999, n, delta)
    with pytest.raises(ValueError, match="eps0"):
        L.fmt_shuffle_bound(limit * 1.001, n, delta)
    with pytest.raises(ValueError, match="eps0"):
        L.fmt_shuffle_bound(0.1, 50, delta)  # n/(8 ln(2/δ)) − 1 < 0: no ε0 is allowed
    assert L.fmt_shuffle_bound(0.0, n, delta) == 0.0
    assert L.fmt_shuffle_bound(1.0, n, delta) == fmt_epsilon(1.0, n, delta)  # delegates to core


def test_robust_fmt_uses_floor_of_honest_users():
    assert L.robust_fmt_shuffle_bound(1.0, 10_000, 1e-6, 0.5) == L.fmt_shuffle_bound(1.0, 5_000, 1e-6)
    assert L.robust_fmt_shuffle_bound(1.0, 10_001, 1e-6, 0.5) == L.fmt_shuffle_bound(1.0, 5_000, 1e-6)
    assert L.robust_fmt_shuffle_bound(1.0, 10_000, 1e-6, 1.0) == L.fmt_shuffle_bound(1.0, 10_000, 1e-6)
    # the floor matters: 0.29 * 100 = 28.999… in floating point → 28 honest users, never 29
    assert L.robust_fmt_shuffle_bound(0.0, 100, 0.5, 0.29) == 0.0
    with pytest.raises(ValueError, match="honest"):
        L.robust_fmt_shuffle_bound(1.0, 10, 1e-6, 0.05)
    with pytest.raises(ValueError, match="eps0"):
        L.robust_fmt_shuffle_bound(2.0, 1000, 1e-6, 0.5)
    # fewer honest users, weaker guarantee
    assert L.robust_fmt_shuffle_bound(1.0, 10_000, 1e-6, 0.5) > L.fmt_shuffle_bound(1.0, 10_000, 1e-6)


# ---------------------------------------------------------------------------------------------
# Thm 6.1: subsampling
# ---------------------------------------------------------------------------------------------


def subsampled_pairs(w: np.ndarray, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Sample m = rows−1 of n bits without replacement, then run M = row (count of ones) of w.

    Returns the output distributions for every pair of neighbouring datasets (s vs s+1 ones)."""
    m = w.shape[0] - 1
    dists = []
    for s in range(n + 1):
        c = np.arange(m + 1)
        weights_c = stats.hypergeom.pmf(c, n, s, m)
        dists.append(weights_c @ w)
    return [(dists[s], dists[s + 1]) for s in range(n)]


def count_mechanism_delta(w: np.ndarray, eps: float) -> float:
    """δ of M on m-record datasets under replacement: adjacent counts."""
    return max(max(hs(w[c], w[c + 1], eps), hs(w[c + 1], w[c], eps)) for c in range(len(w) - 1))


@FAST
@given(matrices(3, 4), st.integers(2, 7), st.floats(0.0, 2.0))
def test_subsampling_on_explicit_mechanism(w, n, eps):
    m = w.shape[0] - 1
    gamma = m / n
    assert 0 < gamma <= 1
    delta = count_mechanism_delta(w, eps)
    eps_s, delta_s = L.subsampling(eps, delta, gamma)
    for a, b in subsampled_pairs(w, n):
        assert hs(a, b, eps_s) <= delta_s + FLOAT_SLACK
        assert hs(b, a, eps_s) <= delta_s + FLOAT_SLACK


@pytest.mark.parametrize("eps", [0.1, 1.0, 4.0])
@pytest.mark.parametrize("n", [2, 10, 100])
def test_subsampling_is_tight_for_randomized_response(eps, n):
    # m = 1: M = RR on the single sampled bit; datasets with 0 vs 1 ones
    a, b = subsampled_pairs(rr(eps), n)[0]
    eps_s, delta_s = L.subsampling(eps, 0.0, 1 / n)
    assert delta_s == 0.0
    assert pure_eps(a, b) <= eps_s + FLOAT_SLACK
    assert pure_eps(a, b) == pytest.approx(eps_s, rel=1e-12)
    assert eps_s >= mpmath.log1p(mpmath.mpf(1 / n) * mpmath.expm1(eps))


@FAST
@given(matrices(3, 4), st.integers(2, 7))
def test_subsampled_profile_on_explicit_mechanism(w, n):
    m = w.shape[0] - 1
    gamma = m / n
    assert 0 < gamma <= 1
    profile = L.subsampled_profile(lambda e: count_mechanism_delta(w, e), gamma)
    for eps_prime in (0.0, 0.05, 0.2, 0.5, 1.0):
        value = profile(eps_prime)
        for a, b in subsampled_pairs(w, n):
            assert max(hs(a, b, eps_prime), hs(b, a, eps_prime)) <= value + FLOAT_SLACK


def test_subsampled_profile_matches_subsampling_and_rounds_safely():
    eps0, gamma = 2.0, 0.1
    base = L.pure_ldp_profile(eps0)
    profile = L.subsampled_profile(base, gamma)
    for eps in (0.0, 0.5, 1.0, 1.9):
        eps_s, delta_s = L.subsampling(eps, base(eps), gamma)
        assert profile(eps_s) >= delta_s * (1 - 1e-12)
        assert profile(eps_s) == pytest.approx(delta_s, rel=1e-9)
    assert profile(L.subsampling(eps0, 0.0, gamma)[0]) == pytest.approx(0.0, abs=1e-12)
    assert L.subsampled_profile(base, 0.0)(0.3) == 0.0
    assert L.subsampling(5.0, 0.2, 0.0) == (0.0, 0.0)


def test_subsampled_profile_validates_profile_values():
    bad = L.subsampled_profile(lambda e: 1.5, 0.5)
    with pytest.raises(ValueError, match="profile"):
        bad(0.1)
    with pytest.raises(TypeError, match="profile"):
        L.subsampled_profile(0.3, 0.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="eps"):
        L.subsampled_profile(lambda e: 0.0, 0.5)(-1.0)
    with pytest.raises(ValueError, match="profile"):
        L.shuffle_to_ldp_profile(lambda e: -0.1, 3)(2.0)
    with pytest.raises(ValueError, match="profile"):
        L.deletion_to_replacement_profile(lambda e: math.nan)(0.2)


def test_subsampling_large_epsilon_is_finite_and_monotone():
    eps_s, _ = L.subsampling(800.0, 0.0, 0.5)
    assert eps_s == pytest.approx(800.0 + math.log(0.5))
    assert L.subsampling(1.0, 0.0, 1.0)[0] == pytest.approx(1.0)
    assert L.subsampling(1.0, 0.0, 1.0)[0] >= 1.0


# ---------------------------------------------------------------------------------------------
# basic composition (Dwork & Roth 2014, Thm 3.14–3.16)
# ---------------------------------------------------------------------------------------------


@FAST
@given(st.lists(st.tuples(dist_pairs(), st.floats(0.0, 1.0)), min_size=2, max_size=3))
def test_basic_composition_on_product_mechanisms(items):
    pairs = [pair for pair, _ in items]
    parts = [(eps, max(hs(p, q, eps), hs(q, p, eps))) for (p, q), eps in items]
    total_eps, total_delta = L.basic_composition(parts)
    p_all = product([p for p, _ in pairs])
    q_all = product([q for _, q in pairs])
    assert hs(p_all, q_all, total_eps) <= total_delta + FLOAT_SLACK
    assert hs(q_all, p_all, total_eps) <= total_delta + FLOAT_SLACK


def test_basic_composition_pure_is_attained_by_randomized_response():
    epsilons = [0.3, 0.5, 1.2]
    total, delta = L.basic_composition([(e, 0.0) for e in epsilons])
    assert delta == 0.0
    p = product([rr(e)[0] for e in epsilons])
    q = product([rr(e)[1] for e in epsilons])
    assert pure_eps(p, q) == pytest.approx(total, rel=1e-12)
    assert pure_eps(p, q) <= total


def test_basic_composition_textbook_example_and_delta_cap():
    assert L.basic_composition([(0.5, 1e-6), (0.3, 0.0), (0.2, 1e-6)]) == (
        pytest.approx(1.0),
        pytest.approx(2e-6),
    )
    assert L.basic_composition(iter([(1.0, 0.7), (1.0, 0.7)]))[1] == 1.0


# ---------------------------------------------------------------------------------------------
# formula spot checks (against independently computed numbers)
# ---------------------------------------------------------------------------------------------


def test_formula_values():
    assert L.approx_to_pure(1.0, 1e-3, 10, 0.1) == pytest.approx(math.log(math.e + 0.1))
    assert L.advanced_grouposition(0.1, 10, 1e-5) == pytest.approx(0.05 + 0.1 * math.sqrt(20 * math.log(1e5)))
    assert L.deletion_to_replacement(1.0, 0.01) == (pytest.approx(2.0), pytest.approx(0.01 * (math.e + 1)))
    assert L.shuffle_to_ldp(0.5, 1e-6, 100) == (pytest.approx(0.5 + math.log(100)), 1e-6)
    assert L.subsampling(1.0, 1e-5, 0.01) == (pytest.approx(math.log(1 + 0.01 * (math.e - 1))), pytest.approx(1e-7))
    assert L.fmt_shuffle_bound(1.0, 10_000, 1e-6) == pytest.approx(
        math.log(1 + 4 * (math.e - 1) * (math.sqrt(2 * math.log(4e6) / ((math.e + 1) * 10_000)) + 1e-4))
    )
    assert L.kl_divergence_bound(1.0) == pytest.approx(math.e - 1)
    assert L.chained_ldp_product_bound(0.4, 0.5) == pytest.approx(0.1)
    assert L.pure_to_approx(0.05, 0.1) == 0.0


def _mp(x: float) -> mpmath.mpf:
    return mpmath.mpf(x)


CLOSED_FORMS = [
    ("pure_to_approx", lambda: L.pure_to_approx(0.7, 0.013), lambda: _mp(0.7) - _mp(0.013)),
    (
        "approx_to_pure",
        lambda: L.approx_to_pure(0.3, 1e-4, 7, 0.03),
        lambda: mpmath.log(mpmath.exp(_mp(0.3)) + 7 * _mp(1e-4) / _mp(0.03)),
    ),
    ("deletion_to_replacement.delta", lambda: L.deletion_to_replacement(0.3, 0.1)[1],
     lambda: (mpmath.exp(_mp(0.3)) + 1) * _mp(0.1)),
    ("chained_ldp", lambda: L.chained_ldp(0.37, 1.9),
     lambda: mpmath.log((mpmath.exp(_mp(0.37) + _mp(1.9)) + 1) / (mpmath.exp(_mp(0.37)) + mpmath.exp(_mp(1.9))))),
    ("chained_ldp_product_bound", lambda: L.chained_ldp_product_bound(0.37, 1.9), lambda: _mp(0.37) * _mp(1.9) / 2),
    ("advanced_grouposition", lambda: L.advanced_grouposition(0.21, 13, 1e-7),
     lambda: 13 * _mp(0.21) ** 2 / 2 + _mp(0.21) * mpmath.sqrt(2 * 13 * mpmath.log(1 / _mp(1e-7)))),
    ("shuffle_to_ldp", lambda: L.shuffle_to_ldp(0.1, 1e-6, 37)[0], lambda: _mp(0.1) + mpmath.log(37)),
    (
        "fmt_shuffle_bound",
        lambda: L.fmt_shuffle_bound(1.3, 12345, 1e-7),
        lambda: mpmath.log(
            1 + 4 * mpmath.expm1(_mp(1.3)) * (
                mpmath.sqrt(2 * mpmath.log(4 / _mp(1e-7)) / ((mpmath.exp(_mp(1.3)) + 1) * 12345)) + _mp(1) / 12345
            )
        ),
    ),
    ("subsampling.eps", lambda: L.subsampling(0.9, 1e-6, 0.013)[0],
     lambda: mpmath.log(1 + _mp(0.013) * mpmath.expm1(_mp(0.9)))),
    ("subsampling.delta", lambda: L.subsampling(0.9, 1e-6, 0.013)[1], lambda: _mp(0.013) * _mp(1e-6)),
    ("kl_divergence_bound", lambda: L.kl_divergence_bound(0.4), lambda: _mp(0.4) * mpmath.expm1(_mp(0.4))),
    ("pure_ldp_profile", lambda: L.pure_ldp_profile(1.7)(0.45),
     lambda: (mpmath.exp(_mp(1.7)) - mpmath.exp(_mp(0.45))) / (mpmath.exp(_mp(1.7)) + 1)),
    ("basic_composition.eps", lambda: L.basic_composition([(0.1, 1e-7), (0.2, 3e-7), (0.3, 0.0)])[0],
     lambda: _mp(0.1) + _mp(0.2) + _mp(0.3)),
    ("basic_composition.delta", lambda: L.basic_composition([(0.1, 1e-7), (0.2, 3e-7), (0.3, 0.0)])[1],
     lambda: _mp(1e-7) + _mp(3e-7)),
]


@pytest.mark.parametrize("name,computed,exact", CLOSED_FORMS, ids=[c[0] for c in CLOSED_FORMS])
def test_closed_forms_are_rounded_up(name, computed, exact):
    value, reference = computed(), exact()
    assert value >= reference
    # lemmas rounds up by a few ulps; core.closed_forms.fmt_epsilon inflates by a relative 1e-12
    assert value <= reference * (1 + (2e-12 if name == "fmt_shuffle_bound" else 1e-14))


# ---------------------------------------------------------------------------------------------
# input validation
# ---------------------------------------------------------------------------------------------

P2 = [0.5, 0.5]
BAD_CALLS = [
    (L.pure_to_approx, (-0.1, 0.1), ValueError, "eps"),
    (L.pure_to_approx, (0.1, 1.5), ValueError, "delta"),
    (L.pure_to_approx, (math.nan, 0.1), ValueError, "eps"),
    (L.pure_to_approx, ("1", 0.1), TypeError, "eps"),
    (L.approx_to_pure, (1.0, 0.1, 0, 0.5), ValueError, "k"),
    (L.approx_to_pure, (1.0, 0.1, 2, 0.0), ValueError, "eta"),
    (L.approx_to_pure, (1.0, 0.1, 2.5, 0.5), TypeError, "k"),
    (L.approx_to_pure, (1.0, -0.1, 2, 0.5), ValueError, "delta"),
    (L.deletion_to_replacement, (-1.0, 0.1), ValueError, "eps"),
    (L.deletion_to_replacement, (1.0, 2.0), ValueError, "delta"),
    (L.replacement_to_deletion, (math.inf, 0.1), ValueError, "eps"),
    (L.chained_ldp, (-0.1, 1.0), ValueError, "eps1"),
    (L.chained_ldp, (1.0, math.nan), ValueError, "eps2"),
    (L.chained_ldp_product_bound, (1.0, -1.0), ValueError, "eps2"),
    (L.advanced_grouposition, (0.5, 0, 1e-6), ValueError, "k"),
    (L.advanced_grouposition, (0.5, 3, 0.0), ValueError, "delta"),
    (L.advanced_grouposition, (-0.5, 3, 0.1), ValueError, "eps"),
    (L.advanced_grouposition_approx, (0.5, 0.1, 3, 0.0), ValueError, "delta_prime"),
    (L.advanced_grouposition_approx, (0.5, 1.1, 3, 0.1), ValueError, "delta"),
    (L.shuffle_to_ldp, (0.5, 1e-6, 0), ValueError, "n"),
    (L.shuffle_to_ldp, (0.5, 1e-6, True), TypeError, "n"),
    (L.fmt_shuffle_bound, (1.0, 1000, 0.0), ValueError, "delta"),
    (L.fmt_shuffle_bound, (1.0, 1000, 1.0), ValueError, "delta"),
    (L.fmt_shuffle_bound, (-1.0, 1000, 1e-6), ValueError, "eps"),
    (L.robust_fmt_shuffle_bound, (1.0, 1000, 1e-6, 0.0), ValueError, "honest_fraction"),
    (L.subsampling, (1.0, 1e-6, 1.5), ValueError, "rate"),
    (L.subsampling, (-1.0, 1e-6, 0.5), ValueError, "eps"),
    (L.subsampled_profile, (lambda e: 0.0, -0.1), ValueError, "rate"),
    (L.shuffle_to_ldp_profile, (lambda e: 0.0, 0), ValueError, "n"),
    (L.shuffle_to_ldp_profile, (None, 3), TypeError, "profile"),
    (L.deletion_to_replacement_profile, ("x",), TypeError, "profile"),
    (L.basic_composition, ([],), ValueError, "pairs"),
    (L.basic_composition, ([(1.0, 0.1), (-1.0, 0.0)],), ValueError, r"pairs\[1\]\.eps"),
    (L.basic_composition, ([(1.0, 0.1), (1.0, 2.0)],), ValueError, r"pairs\[1\]\.delta"),
    (L.basic_composition, ([1.0],), TypeError, r"pairs\[0\]"),
    (L.kl_divergence_bound, (-1.0,), ValueError, "eps"),
    (L.pure_ldp_profile, (-1.0,), ValueError, "eps0"),
    (L.hockey_stick_divergence, (P2, [0.5, 0.6], 0.1), ValueError, "q"),
    (L.hockey_stick_divergence, (P2, [0.5, 0.25, 0.25], 0.1), ValueError, "same length"),
    (L.hockey_stick_divergence, (P2, P2, -0.1), ValueError, "eps"),
    (L.hockey_stick_divergence, ([[0.5, 0.5]], P2, 0.1), ValueError, "p"),
    (L.hockey_stick_divergence, ([1.5, -0.5], P2, 0.1), ValueError, "p"),
    (L.hockey_stick_divergence, (["a", "b"], P2, 0.1), TypeError, "p"),
    (L.max_divergence, ([math.nan, 1.0], P2), ValueError, "p"),
    (L.approximate_max_divergence, (P2, P2, 1.5), ValueError, "delta"),
    (L.randomizer_delta, ([[0.5, 0.4]], 0.1), ValueError, r"matrix\[0\]"),
    (L.randomizer_epsilon, ([0.5, 0.5],), ValueError, "matrix"),
    (L.deletion_delta, ([[0.5, 0.5]], [1.0], 0.1), ValueError, "reference"),
    (L.mix_with_uniform, (P2, 1.5), ValueError, "eta"),
]


@pytest.mark.parametrize("func,args,exc,match", BAD_CALLS, ids=lambda v: getattr(v, "__name__", None))
def test_bad_inputs_raise_naming_the_parameter(func, args, exc, match):
    with pytest.raises(exc, match=match):
        func(*args)


def test_pure_ldp_profile_rejects_negative_eps():
    with pytest.raises(ValueError, match="eps"):
        L.pure_ldp_profile(1.0)(-0.5)
