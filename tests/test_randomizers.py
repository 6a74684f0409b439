"""Tests for dpacct_shuffle.randomizers: catalog formulas, analyzer, exact and lower bounds.

Brute-force reference: a sparse enumerator of output histograms written here from the definitions
(shuffled output = histogram of messages; exact hockey-stick over all histograms), maximised over
every victim pair and every multiset of the other users' inputs.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict

import numpy as np
import pytest

from dpacct_shuffle import VariationRatio
from dpacct_shuffle import randomizers as rz
from dpacct_shuffle.randomizers.binary_rr_exact import BinaryRRProfile, binary_rr_exact_delta
from dpacct_shuffle.randomizers.lower_bounds import trinomial_projection


# -- brute force -----------------------------------------------------------------------------------
def _histogram_law(matrix: np.ndarray, inputs: tuple[int, ...]) -> dict[tuple[int, ...], float]:
    law: dict[tuple[int, ...], float] = {(0,) * matrix.shape[1]: 1.0}
    for x in inputs:
        new: dict[tuple[int, ...], float] = defaultdict(float)
        for hist, prob in law.items():
            for y, py in enumerate(matrix[x]):
                if py > 0.0:
                    h = list(hist)
                    h[y] += 1
                    new[tuple(h)] += prob * py
        law = new
    return law


def brute_force_worst_delta(matrix: np.ndarray, n: int, eps: float) -> float:
    """max over victim pairs and configurations of the others of the exact shuffled δ(ε)."""
    d = matrix.shape[0]
    big = math.exp(eps)
    worst = 0.0
    for others in itertools.combinations_with_replacement(range(d), n - 1):
        law = _histogram_law(matrix, others)
        for x0, x1 in itertools.combinations(range(d), 2):
            p_law: dict[tuple[int, ...], float] = defaultdict(float)
            q_law: dict[tuple[int, ...], float] = defaultdict(float)
            for hist, prob in law.items():
                for y in range(matrix.shape[1]):
                    h = list(hist)
                    h[y] += 1
                    key = tuple(h)
                    p_law[key] += prob * matrix[x0, y]
                    q_law[key] += prob * matrix[x1, y]
            keys = set(p_law) | set(q_law)
            d01 = math.fsum(max(0.0, p_law[k] - big * q_law[k]) for k in keys)
            d10 = math.fsum(max(0.0, q_law[k] - big * p_law[k]) for k in keys)
            worst = max(worst, d01, d10)
    return worst


def binary_rr_config_delta(eps0: float, n: int, holders_of_one: int, eps: float) -> float:
    """Exact δ for binary RR, victim 0 vs 1, by convolving Bernoulli pmfs one user at a time."""
    a = math.exp(eps0) / (math.exp(eps0) + 1.0)
    law = np.array([1.0])
    for i in range(n - 1):
        one = a if i < holders_of_one else 1.0 - a
        law = np.convolve(law, [1.0 - one, one])
    p_law = np.convolve(law, [a, 1.0 - a])
    q_law = np.convolve(law, [1.0 - a, a])
    big = math.exp(eps)
    return max(np.maximum(p_law - big * q_law, 0.0).sum(), np.maximum(q_law - big * p_law, 0.0).sum())


# -- catalog: published formulas -------------------------------------------------------------------
E1 = math.e


def test_published_parameters_match_the_paper_tables() -> None:
    e, h = math.exp(1.5), math.exp(0.75)
    cases = {
        rz.worst_case_ldp(1.5): (e, (e - 1) / (e + 1), e),
        rz.binary_rr(1.5): (e, (e - 1) / (e + 1), e),
        rz.krr(1.5, 7): (e, (e - 1) / (e + 6), e),
        rz.rappor(1.5, 7): (e, (h - 1) / (h + 1), e),
        rz.oue(1.5, 7): (e, (e - 1) / (2 * (e + 1)), e),
        rz.subset_selection(1.5, 7, 3): (
            e, (e - 1) * (math.comb(6, 2) - math.comb(5, 1)) / (e * math.comb(6, 2) + math.comb(6, 3)), e),
        rz.local_hashing(1.5, 5): (e, (e - 1) / (e + 4), e),
        rz.hadamard_response(1.5, 16): (e, (8 * (e - 1) / 2) / (8 * e + 8), e),
        rz.hadamard_response(1.5, 16, blocks=2): (e, 4 * (e - 1) / (4 * e + 12), e),
        rz.laplace(1.5): (e, 1 - math.exp(-0.75), e),
        rz.piecewise(1.5): (e, (e - 1) / (e + h), e),
        rz.duchi(1.5): (e, (e - 1) / (e + 1), e),
        rz.harmony(1.5, 4): (e, (e - 1) / (e + 1), e),
        rz.sampling_rappor(1.5, 10, 3): (e, 3 * (h - 1) / (10 * (h + 1)), e),
        rz.pckv_grr(1.5, 10, 2): (e, 2 * (e - 1) / (2 * e + 20 - 2), e),
        rz.collision(1.5, 8, 10, 3): (e, 3 * (e - 1) / (3 * e + 7), e),
        rz.collision(1.5, 8, 10, 7): (e, 3 * (e - 1) / (7 * e + 3), e),
        rz.metric_ldp(0.5, 2.0): (math.exp(0.5), (math.exp(0.5) - 1) / (math.exp(0.5) + 1), math.exp(2.0)),
        rz.metric_laplace(0.5, 2.0): (math.exp(0.5), 1 - math.exp(-0.25), math.exp(2.0)),
        rz.balcer_binary_summation(0.3): (math.inf, 1.0, 1 / 0.3),
        rz.cheu_binary_summation(0.2): (0.8**2 / 0.2**2, 0.6, 4.0),
        rz.balls_into_bins(10, 3): (math.inf, 1.0, 10 / 3),
        rz.mix_dump(0.2, 5): (0.8 * 4 / 0.2, (0.8 * 4 - 0.2) / 4, 0.8 * 5),
    }
    for randomizer, (p, beta, q) in cases.items():
        pub = randomizer.published
        assert pub is not None, randomizer
        assert pub[0] == pytest.approx(p, rel=1e-12), randomizer
        assert pub[1] == pytest.approx(beta, rel=1e-12), randomizer
        assert pub[2] == pytest.approx(q, rel=1e-12), randomizer
        vr = randomizer.variation_ratio
        assert isinstance(vr, VariationRatio)
        if randomizer.name == "sampling_rappor":
            # the valid exact ratio t·a/(b·(1 − t)) of the mixture is below the published e^ε0
            t = 0.3 * h / (h + 1) + 0.7 / (h + 1)
            exact = t * h / (1 - t)
            assert vr.p == pytest.approx(exact, rel=1e-12) and vr.p < p
            assert vr.q0 == vr.p and vr.beta == pytest.approx(beta, rel=1e-12)
            continue
        assert vr.p == pytest.approx(p, rel=1e-12)
        assert vr.q0 == pytest.approx(q, rel=1e-12)


def test_krr_neutral_share_and_published_pair_difference() -> None:
    e, d = math.exp(2.0), 100
    vr = rz.krr(2.0, d).variation_ratio
    alpha = 1 / (e + d - 1)
    assert vr.alpha == pytest.approx(alpha, rel=1e-12)
    assert vr.r0 == pytest.approx(alpha, rel=1e-12)
    assert vr.neutral_share == pytest.approx((d - 2) * alpha, rel=1e-12)
    assert vr.rest_share == pytest.approx((e - 1) * alpha, rel=1e-9)  # not the published s = 1 - 2r


def test_local_hashing_collision_factor() -> None:
    e = math.exp(1.0)
    lh = rz.local_hashing(1.0, 4, 3)
    assert lh.variation_ratio.beta == pytest.approx((1 - 1 / 4) * (e - 1) / (e + 3), rel=1e-12)
    assert rz.local_hashing(1.0, 4, collision_probability=0.0).variation_ratio.beta == pytest.approx(
        (e - 1) / (e + 3), rel=1e-12)
    # exact TV of the all-functions family equals the collision-corrected beta, not the published one
    mat = rz.local_hashing(1.0, 3, 3).matrix
    tv = 0.5 * np.abs(mat[0] - mat[1]).sum()
    assert tv == pytest.approx((1 - 1 / 3) * (e - 1) / (e + 2), rel=1e-12)
    assert tv < (e - 1) / (e + 2)


def test_sampled_bits_rappor_published_beta_is_not_valid() -> None:
    published = rz.sampling_rappor(1.0, 5, 2)
    bits = rz.sampling_rappor(1.0, 5, 2, sampled_bits=True)
    mat = bits.matrix
    tv = max(0.5 * np.abs(mat[i] - mat[j]).sum() for i, j in itertools.combinations(range(5), 2))
    assert tv > published.published[1] * 1.5
    assert bits.variation_ratio.beta == pytest.approx(tv, rel=1e-12)
    mix = published.matrix
    tv_mix = max(0.5 * np.abs(mix[i] - mix[j]).sum() for i, j in itertools.combinations(range(5), 2))
    assert tv_mix == pytest.approx(published.published[1], rel=1e-12)


# -- analyzer vs closed forms ------------------------------------------------------------------------
FINITE_ENTRIES = {
    "krr": lambda: rz.krr(1.0, 4),
    "binary_rr": lambda: rz.binary_rr(0.7),
    "rappor": lambda: rz.rappor(1.0, 3),
    "oue": lambda: rz.oue(1.2, 3),
    "subset": lambda: rz.subset_selection(1.0, 4, 2),
    "subset_k1": lambda: rz.subset_selection(0.8, 3, 1),
    "local_hashing": lambda: rz.local_hashing(1.0, 2, 3),
    "hadamard_1": lambda: rz.hadamard_response(1.0, 8, domain_size=4),
    "hadamard_2": lambda: rz.hadamard_response(1.0, 8, blocks=2, domain_size=4),
    "pckv_grr": lambda: rz.pckv_grr(1.0, 4, 2),
    "collision_disjoint": lambda: rz.collision(1.0, 3, 6, 2),
    "collision_overlap": lambda: rz.collision(1.0, 3, 5, 3),
    "collision_wrapping": lambda: rz.collision(1.0, 3, 5, 2),
    "sampling_rappor": lambda: rz.sampling_rappor(1.0, 3, 1),
    "sampling_rappor_bits": lambda: rz.sampling_rappor(1.0, 3, 2, sampled_bits=True),
}


def _weight_ratio(vr: VariationRatio) -> float:
    return vr.neutral_weight / vr.neutral_share if vr.neutral_share > 0 else 0.0


@pytest.mark.parametrize("name", sorted(FINITE_ENTRIES))
def test_analyzer_equals_or_beats_closed_forms(name: str) -> None:
    closed = FINITE_ENTRIES[name]()
    analyzed = rz.from_matrix(closed.matrix)
    for vr in closed.variation_ratios:
        matches = [a for a in analyzed.variation_ratios
                   if a.p == pytest.approx(vr.p, rel=1e-12) and a.beta == pytest.approx(vr.beta, rel=1e-12)]
        assert matches, (name, vr)
        # at least as large rates, share and neutral coefficient λ = weight/share (a candidate of
        # the closed form with two neutral types needs a typed candidate of the analyzer)
        assert any(min(a.r0, a.r1) >= min(vr.r0, vr.r1) * (1 - 1e-8)
                   and a.neutral_share >= vr.neutral_share * (1 - 1e-8)
                   and _weight_ratio(a) >= _weight_ratio(vr) * (1 - 1e-8)
                   for a in matches), (name, vr, analyzed.variation_ratios)
    # and the analyzed bound is never above the closed-form variation-ratio bound, up to the
    # analyzer's deliberate safety margins (rates and shares shrunk by 1e-9 relative, p rounded up
    # by 4 ulps). (binary_rr's reported bound is the certified exact profile, below any clone bound.)
    for eps in (0.2, 0.6):
        if name == "binary_rr":
            reference = min(vr.delta(eps, 6) for vr in closed.variation_ratios)
        else:
            reference = closed.shuffled(6).delta(eps)
        assert analyzed.shuffled(6).delta(eps) <= reference * (1 + 1e-7)


def test_analyzer_parameters_exact_for_krr() -> None:
    e, d = math.exp(1.3), 6
    vrs = rz.from_matrix(rz.krr(1.3, d).matrix).variation_ratios
    assert len(vrs) == 1  # all 15 pairs are one class
    vr = vrs[0]
    g = 1 / (e + d - 1)
    assert vr.beta == pytest.approx((e - 1) * g, rel=1e-12)
    assert vr.r0 == pytest.approx(g, rel=1e-8) and vr.r0 <= g
    assert vr.neutral_share == pytest.approx((d - 2) * g, rel=1e-8) and vr.neutral_share <= (d - 2) * g


# -- soundness against brute force -----------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(FINITE_ENTRIES))
def test_brute_force_lies_between_lower_and_upper(name: str) -> None:
    randomizer = FINITE_ENTRIES[name]()
    n = 4
    for eps in (0.1, 0.5):
        brute = brute_force_worst_delta(randomizer.matrix, n, eps)
        lower, upper = randomizer.shuffled(n).delta_interval(eps)
        assert lower <= brute * (1 + 1e-9) + 1e-15, (eps, lower, brute)
        assert brute <= upper * (1 + 1e-12), (eps, brute, upper)
        analyzed_upper = rz.from_matrix(randomizer.matrix).shuffled(n).delta(eps)
        assert brute <= analyzed_upper * (1 + 1e-12)


def test_random_matrices_sound() -> None:
    rng = np.random.default_rng(12345)
    for _ in range(6):
        mat = rng.dirichlet(np.ones(4) * 2.0, size=3)
        randomizer = rz.from_matrix(mat)
        for eps in (0.05, 0.4):
            brute = brute_force_worst_delta(mat, 4, eps)
            lower, upper = randomizer.shuffled(4).delta_interval(eps)
            assert lower <= brute * (1 + 1e-9) + 1e-15
            assert brute <= upper * (1 + 1e-12)


def test_matrix_with_zero_column_entries_uses_local_bound() -> None:
    mat = np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.25, 0.5, 0.25]])
    randomizer = rz.from_matrix(mat)
    for eps in (0.1, 1.0):
        brute = brute_force_worst_delta(mat, 4, eps)
        assert brute <= randomizer.shuffled(4).delta(eps) * (1 + 1e-12)


# -- exact binary RR ----------------------------------------------------------------------------------
@pytest.mark.parametrize("eps0,n,eps", [(1.0, 50, 0.3), (2.0, 10, 0.1), (0.5, 30, 0.05), (3.0, 25, 1.0)])
def test_binary_rr_exact_worst_case_matches_enumeration(eps0: float, n: int, eps: float) -> None:
    values = [binary_rr_config_delta(eps0, n, m, eps) for m in range(n)]
    exact = binary_rr_exact_delta(eps0, n, eps)
    assert exact == pytest.approx(max(values), rel=1e-7)
    assert exact <= max(values)


def test_homogeneous_configuration_is_not_always_worst() -> None:
    homogeneous = binary_rr_config_delta(1.0, 50, 0, 0.3)
    one_holder = binary_rr_config_delta(1.0, 50, 1, 0.3)
    assert one_holder > homogeneous * 1.04
    profile = BinaryRRProfile(1.0, 50)
    assert profile.is_exact
    assert profile.worst_configuration(0.3) in (1, 48)


def test_binary_rr_exact_epsilon_reference_value() -> None:
    shuffled = rz.binary_rr(1.0).shuffled(1000)
    lower = shuffled.epsilon_lower(1e-6)
    assert lower == pytest.approx(0.126614, abs=2e-6)
    assert shuffled.lower_bound.is_exact
    assert shuffled.delta(lower * 0.999) > 1e-6  # the upper bound is above the exact profile


def test_binary_rr_large_n_exact_and_below_upper() -> None:
    """n = 1e6: the certified configuration search is exact (tests/test_binary_rr_exact.py checks
    it in depth); its ε is a lower bound on the clone bound's, which is ~22% above (FMT-type pair)."""
    profile = BinaryRRProfile(1.0, 10**6)
    eps_low = profile.epsilon(1e-8)
    assert profile.is_exact
    upper = rz.binary_rr(1.0).shuffled(10**6).epsilon(1e-8)
    assert upper * 0.7 < eps_low < upper
    assert profile.delta(eps_low) > 1e-8 >= profile.delta(eps_low * 1.001)


# -- lower bounds ----------------------------------------------------------------------------------------
def test_krr_projection_is_lossless_for_others_at_x0() -> None:
    # docs/theory.md, "Published pair": eps0 = 1, d = 3, n = 20, eps = 0.8, others holding x0: exact 3.31e-5
    e = math.exp(1.0)
    g = 1 / (e + 2)
    pair = trinomial_projection(20, (e * g, g), (g, e * g), (e * g, g))
    assert pair.delta(0.8) == pytest.approx(3.31e-5, rel=2e-3)
    # docs/theory.md, "Published pair": eps0 = 2, d = 5, n = 30, eps = 0.8: worst configuration exact 0.016845
    shuffled = rz.krr(2.0, 5).shuffled(30)
    lower, upper = shuffled.delta_interval(0.8)
    assert lower <= 0.016845 <= upper


def test_lower_bound_below_upper_for_every_entry_with_instance() -> None:
    for name, factory in [("krr", lambda: rz.krr(2.0, 100)), ("rappor", lambda: rz.rappor(2.0, 64)),
                          ("oue", lambda: rz.oue(2.0, 64)), ("subset", lambda: rz.subset_selection(2.0, 50, 5)),
                          ("lh", lambda: rz.local_hashing(2.0, 8)), ("hr", lambda: rz.hadamard_response(2.0, 64, 4)),
                          ("laplace", lambda: rz.laplace(2.0)), ("piecewise", lambda: rz.piecewise(2.0)),
                          ("worst", lambda: rz.worst_case_ldp(2.0)), ("pckv", lambda: rz.pckv_grr(2.0, 20, 2)),
                          ("collision", lambda: rz.collision(2.0, 20, 16, 4)),
                          ("srappor", lambda: rz.sampling_rappor(2.0, 20, 4)),
                          ("metric_laplace", lambda: rz.metric_laplace(1.0, 2.0))]:
        shuffled = factory().shuffled(200)
        lower, upper = shuffled.delta_interval(0.3)
        assert 0.0 < lower <= upper, name
        lower, upper = shuffled.delta_interval(1.0)  # may be 0: the instance's loss can stay below 1
        assert 0.0 <= lower <= upper, name
        if name in ("krr", "worst", "laplace"):
            lo, hi = shuffled.epsilon_interval(1e-4)
            assert 0.0 < lo <= hi, name


def test_entries_without_instance_report_zero_lower() -> None:
    shuffled = rz.cheu_binary_summation(0.2).shuffled(50)
    lower, upper = shuffled.epsilon_interval(1e-6)
    assert lower == 0.0 < upper


# -- validation ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "call,param",
    [
        (lambda: rz.krr(0.0, 5), "epsilon0"),
        (lambda: rz.krr(-1.0, 5), "epsilon0"),
        (lambda: rz.krr(1.0, 1), "domain_size"),
        (lambda: rz.krr(math.nan, 3), "epsilon0"),
        (lambda: rz.subset_selection(1.0, 5, 5), "subset_size"),
        (lambda: rz.subset_selection(1.0, 5, 0), "subset_size"),
        (lambda: rz.local_hashing(1.0, 1), "hash_range"),
        (lambda: rz.local_hashing(1.0, 4, collision_probability=1.5), "collision_probability"),
        (lambda: rz.hadamard_response(1.0, 12), "num_outputs"),
        (lambda: rz.hadamard_response(1.0, 8, blocks=3), "num_outputs"),
        (lambda: rz.hadamard_response(1.0, 8, domain_size=8), "domain_size"),
        (lambda: rz.hadamard_response(1.0, 2), "num_outputs"),
        (lambda: rz.sampling_rappor(1.0, 4, 5), "sample_size"),
        (lambda: rz.cheu_binary_summation(0.5), "flip_probability"),
        (lambda: rz.cheu_binary_summation(0.0), "flip_probability"),
        (lambda: rz.balcer_binary_summation(1.0), "coin_probability"),
        (lambda: rz.balls_into_bins(10, 6), "num_special"),
        (lambda: rz.mix_dump(0.9, 5), "flip_probability"),
        (lambda: rz.metric_ldp(1.0, 0.5), "d0_max"),
        (lambda: rz.metric_laplace(-1.0, 2.0), "d01"),
        (lambda: rz.collision(1.0, 3, 4, 4), "set_size"),
        (lambda: rz.from_matrix([[0.5, 0.6], [0.5, 0.5]]), "matrix"),
        (lambda: rz.from_matrix([[1.5, -0.5], [0.5, 0.5]]), "matrix"),
        (lambda: rz.from_matrix([[1.0, 0.0]]), "matrix"),
        (lambda: rz.from_matrix([[0.5, math.nan], [0.5, 0.5]]), "matrix"),
        (lambda: rz.krr(1.0, 3).shuffled(0), "n"),
        (lambda: rz.krr(1.0, 3).shuffled(10).epsilon(1.5), "delta"),
        (lambda: rz.krr(1.0, 3).shuffled(10).delta(-0.1), "epsilon"),
    ],
)
def test_bad_inputs_raise_value_error_naming_parameter(call, param: str) -> None:
    with pytest.raises(ValueError, match=param):
        call()


def test_bad_types_raise_type_error() -> None:
    with pytest.raises(TypeError, match="domain_size"):
        rz.krr(1.0, 2.5)
    with pytest.raises(TypeError, match="epsilon0"):
        rz.krr("1", 3)


def test_trinomial_projection_matches_oracle_when_lossless() -> None:
    from tests.oracle import exact_shuffled_delta, krr_matrix

    e = math.exp(1.5)
    g = 1 / (e + 3)
    mat = krr_matrix(1.5, 4)
    for n, eps in ((8, 0.2), (25, 0.6), (40, 1.2)):
        pair = trinomial_projection(n, (e * g, g), (g, e * g), (e * g, g))
        exact = exact_shuffled_delta(mat, 0, 1, [0] * (n - 1), eps)
        assert pair.delta(eps) == pytest.approx(exact, rel=1e-8)
        assert pair.delta(eps) <= exact
    # three outputs: the projection onto (S0, S1, rest) is the identity, hence exact
    general = np.array([[0.5, 0.2, 0.3], [0.25, 0.45, 0.3], [0.3, 0.3, 0.4]])
    for n, eps in ((12, 0.1), (30, 0.5)):
        pair = trinomial_projection(n, (0.5, 0.2), (0.25, 0.45), (0.3, 0.3))
        exact = exact_shuffled_delta(general, 0, 1, [2] * (n - 1), eps)
        assert pair.delta(eps) == pytest.approx(exact, rel=1e-8)
        assert pair.delta(eps) <= exact


def test_krr_lower_bound_tight_at_a_million_users() -> None:
    """The gap at a million users: the explicit instance is within 0.1% of the upper bound."""
    shuffled = rz.krr(2.0, 100).shuffled(10**6)
    eps_low = shuffled.epsilon_lower(1e-8)
    upper = shuffled.epsilon(1e-8)
    assert upper * (1 - 1e-3) < eps_low <= upper
    assert shuffled.delta_lower(eps_low) > 1e-8


def test_many_kinds_of_pairs_are_binned_soundly(monkeypatch: pytest.MonkeyPatch) -> None:
    from dpacct_shuffle.randomizers import matrix as matrix_module

    monkeypatch.setattr(matrix_module, "MAX_PAIR_KINDS", 2)
    rng = np.random.default_rng(7)
    for _ in range(3):
        mat = rng.dirichlet(np.ones(3) * 3.0, size=4)
        randomizer = rz.from_matrix(mat)
        assert len(randomizer.cover) <= 3  # two generic bins (+ possibly a local-bound group)
        for eps in (0.05, 0.3):
            brute = brute_force_worst_delta(mat, 4, eps)
            assert brute <= randomizer.shuffled(4).delta(eps) * (1 + 1e-12)


def test_identical_rows_have_no_privacy_loss() -> None:
    randomizer = rz.from_matrix([[0.3, 0.7], [0.3, 0.7]])
    assert randomizer.variation_ratio is None
    assert randomizer.shuffled(10).delta(0.0) == 0.0
    assert randomizer.shuffled(10).epsilon_interval(1e-6) == (0.0, 0.0)


def test_zero_entries_give_infinite_epsilon_and_finite_lower() -> None:
    mat = np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.25, 0.5, 0.25]])
    shuffled = rz.from_matrix(mat).shuffled(20)
    lower, upper = shuffled.epsilon_interval(1e-6)
    assert upper == math.inf  # output 0 under others at input 1 reveals x0 w.p. 1/2
    assert 0.0 < lower <= 700.0
    assert shuffled.delta_lower(50.0) > 0.1


CATALOG_CALLS = {
    "worst_case_ldp": (1.0,), "binary_rr": (1.0,), "krr": (1.0, 20), "rappor": (1.0, 20),
    "optimized_unary_encoding": (1.0, 20), "subset_selection": (1.0, 20, 4),
    "local_hashing": (1.0, 4), "hadamard_response": (1.0, 32, 2), "pckv_grr": (1.0, 10, 2),
    "collision": (1.0, 10, 12, 3), "sampling_rappor": (1.0, 20, 5), "laplace": (1.0,),
    "piecewise": (1.0,), "duchi": (1.0,), "harmony": (1.0, 5), "metric_ldp": (0.5, 2.0, 1.0),
    "metric_laplace": (0.5, 1.5), "balcer_binary_summation": (0.25,),
    "cheu_binary_summation": (0.25,), "balls_into_bins": (10, 2), "mix_dump": (0.3, 10),
}


def test_catalog_exports_every_entry_and_alias() -> None:
    from dpacct_shuffle.randomizers import catalog

    assert catalog.__all__ == [*catalog.CATALOG, *catalog.ALIASES, "CATALOG", "ALIASES"]
    assert all(getattr(rz, name) is getattr(catalog, name) for name in catalog.__all__)


def test_every_catalog_entry_gives_ordered_interval() -> None:
    assert set(CATALOG_CALLS) == set(rz.CATALOG)
    for name, args in CATALOG_CALLS.items():
        randomizer = rz.CATALOG[name](*args)
        assert randomizer.name in (name, "oue")
        shuffled = randomizer.shuffled(500)
        lower, upper = shuffled.epsilon_interval(1e-6)
        assert 0.0 <= lower <= upper < math.inf, name
        assert shuffled.delta(upper) <= 1e-6, name
        if randomizer.lower_bound(500) is not None:
            assert lower > 0.0, name


def test_trinomial_closed_form_threshold_matches_bisection() -> None:
    """The positive part of each row is cut at the root of an affine function (closed form); the
    log-likelihood bisection (kept for θ ∈ {0, 1}) must give the same cut on random instances."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        u = rng.dirichlet([1.0, 1.0, 1.0])
        v = rng.dirichlet([1.0, 1.0, 1.0])
        o = rng.dirichlet([1.0, 1.0, 1.0])
        n = int(rng.integers(5, 400))
        pair = trinomial_projection(n, (u[0], u[1]), (v[0], v[1]), (o[0], o[1]))
        for eps in (0.05, 0.5):
            for num, den, increasing in ((pair.u, pair.v, pair.increasing),
                                         (pair.v, pair.u, not pair.increasing)):
                cut, upper = pair._linear_threshold(num, den, eps)
                if upper != increasing:
                    continue  # the bisection assumes the other orientation: not comparable
                bisected = pair._threshold(num, den, eps, increasing)
                mass = np.exp(pair.log_base)
                differ = (cut != bisected) & (mass > 1e-12)
                assert not np.any(differ), (n, eps, cut[differ], bisected[differ])


def test_krr_lower_bound_tight_at_ten_million_users() -> None:
    """The closed-form cut and the row-wise weight margin keep the instance informative at large n
    (with a margin on the row masses the lower ε at n = 1e8 was 11x below the upper)."""
    shuffled = rz.krr(2.0, 100).shuffled(10**7)
    lower, upper = shuffled.epsilon_interval(1e-8)
    assert upper * (1 - 1e-3) < lower <= upper


def test_near_epsilon0_upper_bounds_stay_above_exact() -> None:
    """Within ~1e-13 of ε0, p − e^ε cancels: a p = exp(ε0) rounded down would under-report δ
    (krr(1, 3), n = 2, ε = 1 − 1e-13: 3.31962e-14 vs exact 3.32014e-14; binary_rr(1): 5.34058e-14 vs
    5.34613e-14, exact values from 60-digit arithmetic). The core takes p 4 ulps up and e^ε rounded
    down."""
    assert rz.krr(1.0, 3).shuffled(2).delta(0.9999999999999) >= 3.32014e-14
    assert rz.krr(2.2, 3).shuffled(3).delta(2.19999999999978) >= 1.20825e-13
    assert rz.binary_rr(1.0).shuffled(2).delta(0.9999999999999) >= 5.34613e-14


def test_matrix_lower_bound_with_tiny_rest_mass_stays_below_exact() -> None:
    """A 1e-13 entry: the victim's rest mass 1 − R(S0) − R(S1) loses ~0.1% by cancellation; without a
    margin the analyzer's instance would exceed the exact δ (n = 2, ε = 29: 0.0464964 vs 0.0463048)
    and report 2.4e-4 at ε = ε0 where the exact value is 3.9e-16. The row margin covers the
    cancellation."""
    from tests.oracle import exact_shuffled_delta

    matrix = np.array([[0.4910068950189542, 0.4910068950189542, 0.00899310498104578, 0.00899310498104578],
                       [0.49546264257779316, 1.0090747148442121e-13, 0.49546264257779316,
                        0.009074714844312833]])
    analyzed = rz.from_matrix(matrix)
    eps0 = math.log(matrix[0, 1] / matrix[1, 1])
    for n, eps in ((2, 29.0), (3, 29.0), (2, eps0)):
        exact = max(exact_shuffled_delta(analyzed.matrix, 0, 1, list(c), eps)
                    for c in itertools.combinations_with_replacement(range(2), n - 1))
        lower, upper = analyzed.shuffled(n).delta_interval(eps)
        assert lower <= exact and exact <= upper, (n, eps, lower, exact, upper)


# -- one shuffled-bound rule -----------------------------------------------------------------------
def test_catalog_matrix_and_variation_ratio_support_the_shuffle_bound_protocol() -> None:
    entry = rz.rappor(1.0, 3)
    analyzed = rz.from_matrix([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6]])
    vr = VariationRatio.worst_case(1.0)
    for bound in (entry, analyzed, vr):
        assert isinstance(bound, rz.SupportsShuffleBound)
    assert not isinstance(entry.shuffled(10), rz.SupportsShuffleBound)  # n is fixed there
    assert not isinstance(entry.cover[0], rz.SupportsShuffleBound)  # no epsilon0: one pair class
    assert entry.epsilon0 == entry.variation_ratio.epsilon0


@pytest.mark.parametrize("make", [lambda: rz.rappor(1.0, 3), lambda: rz.binary_rr(1.0),
                                  lambda: rz.hadamard_response(1.0, 8, blocks=2)])
def test_randomizer_delta_is_the_cover_rule_and_bounds_brute_force(make) -> None:
    """δ = min(max over the cover, min over the fallbacks), the same through shuffled(n), and at
    least the exact worst case over victim pairs and configurations (n = 4)."""
    randomizer, n, eps = make(), 4, 0.3
    cover = max(bound.delta(eps, n) for bound in randomizer.cover)
    expected = min([cover] + [bound.delta(eps, n) for bound in randomizer.fallbacks])
    assert randomizer.delta(eps, n) == expected == randomizer.shuffled(n).delta(eps)
    assert randomizer.epsilon(1e-3, n) == randomizer.shuffled(n).epsilon(1e-3)
    exact = brute_force_worst_delta(np.asarray(randomizer.matrix), n, eps)
    assert exact * (1 - 1e-12) <= randomizer.delta(eps, n) <= 3.0 * exact
    loose = randomizer.delta(eps, n, rtol=0.5)  # a wider bracket: still an upper bound
    assert loose >= exact * (1 - 1e-12)
    with pytest.raises(ValueError, match="rtol"):
        randomizer.delta(eps, n, rtol=0.0)
