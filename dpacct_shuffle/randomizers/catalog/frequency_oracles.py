"""Catalog entries for frequency estimation on a finite domain: randomized response (binary, k-ary),
unary encodings (RAPPOR, OUE, sampling RAPPOR), subset selection and the set-boost family (local
hashing, Hadamard response, PCKV-GRR, collision). Proofs of each neutral share in the entry's
docstring (notation: :mod:`dpacct_shuffle.randomizers.catalog`)."""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.linalg import hadamard

from dpacct_shuffle.core.bound import VariationRatio
from dpacct_shuffle.core.multilevel import PrivacyLossLevels
from dpacct_shuffle.core.rounding import ratio_up
from dpacct_shuffle.core.validation import check_epsilon0, check_range
from dpacct_shuffle.randomizers.base import Randomizer, VariationRatioBound
from dpacct_shuffle.randomizers.binary_rr_curve import BinaryRRExactUpper
from dpacct_shuffle.randomizers.catalog.entry import (MAX_MATRIX_CELLS, Projection,
                                                      binary_rr_lower, boost_projection,
                                                      boost_sets_projection, catalog_entry,
                                                      integer_parameter, matrix_lower,
                                                      projection_lower, single_entry)
from dpacct_shuffle.randomizers.frequency import (DirectEncodingOracle, HadamardResponseOracle,
                                                  LocalHashingOracle, SubsetSelectionOracle,
                                                  UnaryEncodingOracle)
from dpacct_shuffle.randomizers.multilevel import MultiLevelBound, corner_levels


def _unary_third_bit_projection(one_true: float, one_false: float) -> Projection:
    """Unary encodings, others all holding a third value y (d ≥ 3): S0 = {bits (x⁰, x¹, y) =
    (1, 0, 0)}, S1 = {(0, 1, 0)}. A holder's own bit is 1 w.p. t = ``one_true``, every other bit
    w.p. f = ``one_false``; bits other than x⁰, x¹, y have the same law for every user. Masses:
    victim x⁰: S0 t(1 − f)², S1 (1 − t)f(1 − f) (x¹ symmetric); others: f(1 − f)(1 − t) each.
    Bit y = 0 is rare for the others (they hold y), so the victim's message stands out more than
    in the two-bit projection (RAPPOR ε0 = 4, n = 1e4, δ = 1e-8: lower ε 0.418 vs 0.344).
    """
    t, f = one_true, one_false
    own, foreign = t * (1.0 - f) ** 2, (1.0 - t) * f * (1.0 - f)
    other = f * (1.0 - f) * (1.0 - t)
    return ((own, foreign), (foreign, own), (other, other))


@catalog_entry
def binary_rr(epsilon0: float) -> Randomizer:
    """Binary randomized response: keep the bit w.p. e/(e + 1); p = q = e, β = (e − 1)/(e + 1).

    Worst-case β, so w = 0. Lower bound: the exact shuffled profile (:class:`BinaryRRProfile`,
    certified worst case over all configurations of the others). Upper bound: the minimum of the
    clone bound and that profile's certified upper end (fallback :class:`BinaryRRExactUpper`), so
    ε(δ) is exact to the profile's rtol (ε0 = 1, n = 10⁶, δ = 1e-8: 0.004109 vs 0.00501 from the
    clone bound alone).
    """
    eps0 = check_epsilon0(epsilon0)
    e = math.exp(eps0)
    vr = VariationRatio.worst_case(eps0)
    matrix = np.array([[e, 1.0], [1.0, e]]) / (e + 1.0)
    return Randomizer("binary_rr", {"epsilon0": eps0}, [VariationRatioBound([vr])], variation_ratio=vr,
                      fallbacks=[BinaryRRExactUpper(eps0)], matrix=matrix,
                      lower_bound=binary_rr_lower(eps0), published=(e, vr.beta, e, e),
                      notes="upper bound: min of the clone bound and the certified exact profile",
                      frequency_oracle=DirectEncodingOracle(2, e))


@catalog_entry
def krr(epsilon0: float, domain_size: int) -> Randomizer:
    """k-ary randomized response on d options: report x w.p. e·g, any other value w.p. g.

    g = 1/(e + d − 1); p = q = e, β = (e − 1)·g (published). Neutral share s = (d − 2)·g:

    Proof. μ0 − μ1 = (e − 1)g·(δ_{x⁰} − δ_{x¹}), so Q0 = δ_{x⁰}, Q1 = δ_{x¹}, α = g and
    w·N = g on each of the d − 2 other outputs (w = (d − 2)g, N uniform on them). Every input's
    law puts at least g on every output, so R(x_i) ≥ g·1 = g·Q0 + g·Q1 + (d − 2)g·N pointwise:
    r0 = r1 = g = pα/q and s = (d − 2)g = w. All pairs are equivalent under relabelling. □

    The published pair (s = 1 − 2g) is NOT valid (docs/theory.md, "Published pair"); s = (d − 2)g
    leaves rest mass (e − 1)g. Lower bound: trinomial projection onto (x⁰, x¹), others all holding
    x⁰ (lossless for that configuration) or all holding a third value.
    """
    eps0 = check_epsilon0(epsilon0)
    d = integer_parameter("domain_size", domain_size, 2)
    if d == 2:
        result = binary_rr(eps0)
        return Randomizer("krr", {"epsilon0": eps0, "domain_size": 2}, result.cover,
                          variation_ratio=result.variation_ratio, fallbacks=result.fallbacks,
                          matrix=result.matrix,
                          lower_bound=binary_rr_lower(eps0), published=result.published,
                          frequency_oracle=result.frequency_oracle)
    e = math.exp(eps0)
    g = 1.0 / (e + d - 1.0)
    beta = (e - 1.0) * g
    vr = VariationRatio(ratio_up(e), beta, ratio_up(e), neutral_share=(d - 2) * g)
    matrix = None
    if d * d <= MAX_MATRIX_CELLS:
        matrix = np.full((d, d), g)
        np.fill_diagonal(matrix, e * g)
    others = [(e * g, g), (g, g)]
    lower = projection_lower((e * g, g), (g, e * g), others,
                              f"k-RR d={d}: counts of x0 and x1, others all at x0 or at a third value")
    return single_entry("krr", {"epsilon0": eps0, "domain_size": d}, vr, matrix=matrix, lower=lower,
                   published=(e, beta, e, e), notes="neutral share (d-2)/(e^eps0+d-1), proven",
                   frequency_oracle=DirectEncodingOracle(d, e))


# -- unary encodings ------------------------------------------------------------------------------
def _unary_matrix(d: int, one_prob_true: float, one_prob_false: float,
                  mix_zero: float = 0.0) -> np.ndarray | None:
    """Rows: one-hot inputs; columns: the 2^d bit vectors. Optional mixture with the all-zero input."""
    if d > 16 or d * 2**d > MAX_MATRIX_CELLS:  # d first: 2**d of a huge d never finishes
        return None
    bits = ((np.arange(2**d)[:, None] >> np.arange(d)[None, :]) & 1).astype(bool)
    zero_law = np.prod(np.where(bits, one_prob_false, 1.0 - one_prob_false), axis=1)
    rows = []
    for x in range(d):
        probs = np.full(d, one_prob_false)
        probs[x] = one_prob_true
        law = np.prod(np.where(bits, probs[None, :], 1.0 - probs[None, :]), axis=1)
        rows.append((1.0 - mix_zero) * law + mix_zero * zero_law)
    return np.array(rows)


def _unary_two_types(p: float, beta: float, one_true: float, one_false: float) -> VariationRatio:
    """Unary encoding (own bit 1 w.p. t = ``one_true``, every other bit w.p. f = ``one_false``) with
    the neutral part split into the two patterns of the victim bits (x⁰, x¹) (core
    ``neutral_parts``).

    The victim's neutral part is N_00 = δ_(0,0) ⊗ ρ (mass w_00 = (1 − t)(1 − f)) plus
    N_11 = δ_(1,1) ⊗ ρ (mass w_11 = t·f), ρ the law of the other bits (Bern(f) each). A user holding
    x_i ∉ {x⁰, x¹} differs from ρ only on bit x_i (Bern(t) instead of Bern(f)), so for both values
    v of that bit s_00·P_f(v) ≤ (1 − f)²·P_t(v) and s_11·P_f(v) ≤ f²·P_t(v) (P_t(1) = t,
    P_t(0) = 1 − t): s_00 = (1 − f)(1 − t) = w_00 (at v = 0; t ≥ f) and s_11 = f²(1 − t)/(1 − f)
    (at v = 0); users holding x⁰ or x¹ produce both at least at these rates. Ratios w_t/s_t: 1 and
    t(1 − f)/(f(1 − t)) = p, so the bound has share w_00 + s_11 and λ = 1.
    """
    t, f = one_true, one_false
    common = (1.0 - t) * (1.0 - f)
    return VariationRatio(p, beta, p, neutral_parts=((common, common),
                                                     (t * f, f * f * (1.0 - t) / (1.0 - f))))


def _unary_levels(d: int, t: float, t_zero: float, f: float, f_zero: float) -> MultiLevelBound:
    """Multi-level bound of a unary encoding (own bit 1 w.p. t, every other bit w.p. f < t;
    ``t_zero`` = 1 − t and ``f_zero`` = 1 − f passed separately, without cancellation).

    R(x)(y) = B(y)·g(y_x) with B the law of independent Bern(f) bits, g(1) = t/f,
    g(0) = (1 − t)/(1 − f) < g(1). The blanket min_x R(x)(y) is B(y)·g(0) when y has a zero bit and
    B(y)·g(1) for the all-ones vector. So for the victim bits (x⁰, x¹) the levels (a, b; mass) are
    (1, 0): (ρ, 1; f(1 − t)), (0, 1): (1, ρ; f(1 − t)), (0, 0): (1, 1; (1 − f)(1 − t)),
    (1, 1) with a zero elsewhere: (ρ, ρ; f²(1 − t)(1 − f^(d−2))/(1 − f)), all ones: (1, 1; t·f^(d−1)),
    ρ = g(1)/g(0) = t(1 − f)/(f(1 − t)), the same for every pair (Σ a·m = 1). Shown against the
    exhaustive matrix levels in the tests.
    """
    rho = t * f_zero / (f * t_zero)
    rows = [(rho, 1.0, f * t_zero), (1.0, rho, f * t_zero), (1.0, 1.0, f_zero * t_zero),
            (1.0, 1.0, t * f ** (d - 1))]
    if d >= 3:
        rows.append((rho, rho, f * f * t_zero * -math.expm1((d - 2) * math.log(f)) / f_zero))
    a, b, m = zip(*rows)
    return MultiLevelBound((PrivacyLossLevels(a, b, m),))


@catalog_entry
def rappor(epsilon0: float, domain_size: int) -> Randomizer:
    """RAPPOR / symmetric unary encoding: one-hot bits, each flipped w.p. b = 1/(e^{ε0/2} + 1).

    p = q = e, β = (e^{ε0/2} − 1)/(e^{ε0/2} + 1) (published; exact TV of any pair: only the two
    bits x⁰, x¹ differ, and their joint laws differ by a² − b² = a − b, a = 1 − b).
    Here α = b², w = 2ab and N = ½(δ_(0,0) + δ_(1,1)) ⊗ ρ on the bits (x⁰, x¹), ρ the victim's law of
    the other bits. As a single type the largest valid share is the generic s = w/e = 2b³/a: at
    outputs with bits (x⁰, x¹) = (1, 1) and bit x_i = 0 (x_i ∉ {x⁰, x¹}), N = ρ/2 while
    R(x_i) = b²·(b/a)·ρ, a ratio of 2b³/a.
    Two neutral types (core ``neutral_parts``): N_00 = δ_(0,0) ⊗ ρ and N_11 = δ_(1,1) ⊗ ρ, victim mass
    ab each. A user holding x_i ∉ {x⁰, x¹} has bits (x⁰, x¹, x_i) with law Bern(b)² ⊗ Bern(a), the
    victim Bern(·)² ⊗ Bern(b) on bit x_i, all other bits alike; so R(x_i) ≥ s_00·N_00 needs
    s_00·P_b(v) ≤ a²·P_a(v) for the bit v of x_i (P_a(1) = a, P_a(0) = b): s_00 = ab (at v = 0), and
    s_11·P_b(v) ≤ b²·P_a(v): s_11 = b³/a; users holding x⁰ or x¹ produce both at the victim's
    rate ab. Ratios w_t/s_t are 1 and a²/b² = e, so the bound uses share ab + b³/a with
    λ = 1 — tighter than the single generic share (it is the same pair with the rare (1, 1)
    pattern given the coefficient of the common (0, 0) one). Neither dominates the other: the
    entry reports the minimum of both (``variation_ratio`` is the single-share one).
    """
    eps0 = check_epsilon0(epsilon0)
    d = integer_parameter("domain_size", domain_size, 2)
    h = math.exp(eps0 / 2.0)
    a, b = h / (h + 1.0), 1.0 / (h + 1.0)
    e = math.exp(eps0)
    beta = (h - 1.0) / (h + 1.0)
    vr = VariationRatio(ratio_up(e), beta, ratio_up(e))
    two_types = _unary_two_types(ratio_up(e), beta, a, b)
    matrix = _unary_matrix(d, a, b)
    others = [(a * a, b * b)] + ([(a * b, a * b)] if d >= 3 else [])
    lower = projection_lower((a * a, b * b), (b * b, a * a), others,
                              f"RAPPOR d={d}: bits (x0, x1) = (1, 0) / (0, 1)",
                              extra=[_unary_third_bit_projection(a, b)] if d >= 3 else [])
    return single_entry("rappor", {"epsilon0": eps0, "domain_size": d}, vr, alternatives=[two_types],
                   matrix=matrix, lower=lower, levels=_unary_levels(d, a, b, b, a),
                   published=(e, beta, e, e), frequency_oracle=UnaryEncodingOracle(d, a, b))


@catalog_entry
def optimized_unary_encoding(epsilon0: float, domain_size: int) -> Randomizer:
    """OUE: bit x is 1 w.p. 1/2, every other bit is 1 w.p. c = 1/(e + 1).

    Derivation. Only bits x⁰, x¹ differ. Under x⁰ their joint law is (1,0): (1 − c)/2,
    (0,0): (1 − c)/2, (1,1): c/2, (0,1): c/2, and symmetrically under x¹. So
    β = (1 − c)/2 − c/2 = (e − 1)/(2(e + 1)) and p = ((1 − c)/2)/(c/2) = e; q = e: two inputs
    x, x' differ on bits x and x' only, and R(x)(y)/R(x')(y) = [(1/2)/P_c(y_x)]·[P_c(y_x')/(1/2)]
    with P_c(1) = c, P_c(0) = 1 − c, at most (1 − c)/c = e.
    α = c/2, w = 1/2. As a single neutral type the largest valid share is the generic s = w/e =
    1/(2e): on the pattern (1,1) w·N = c/2·(rest), while x_i ∉ {x⁰, x¹} gives c²·(1/2)/(1 − c)·(rest)
    at the outputs whose bit x_i is 0, a ratio of c/(2(1 − c)) = 1/(2e).
    Two neutral types (core ``neutral_parts``): N_00 = δ_(0,0) ⊗ ρ (victim mass (1 − c)/2) and
    N_11 = δ_(1,1) ⊗ ρ (mass c/2), ρ the victim's law of the other bits (Bern(c) each). A user
    holding x_i ∉ {x⁰, x¹} differs from ρ only on bit x_i (Bern(½) instead of Bern(c)), so
    s_00·P_c(v) ≤ (1 − c)²/2 and s_11·P_c(v) ≤ c²/2 for both values v of that bit (P_c(1) = c,
    P_c(0) = 1 − c): s_00 = (1 − c)/2, s_11 = c²/(2(1 − c)) = c/(2e); users holding x⁰ or x¹
    produce both at the victim's rate. Ratios w_t/s_t: 1 and e, so the bound uses share
    (1 − c)/2 + c/(2e) with λ = 1. Neither this nor the single share dominates the other (ε0 = 1:
    the single share is tighter; ε0 = 4, n = 1e4, δ = 1e-8: ε = 0.3517 with two types vs 0.3606,
    published pair 0.3485): the entry reports the minimum of both (``variation_ratio`` is the
    single-share one). Brute force confirms both (tests).
    """
    eps0 = check_epsilon0(epsilon0)
    d = integer_parameter("domain_size", domain_size, 2)
    e = math.exp(eps0)
    c = 1.0 / (e + 1.0)
    beta = (e - 1.0) / (2.0 * (e + 1.0))
    vr = VariationRatio(ratio_up(e), beta, ratio_up(e))
    two_types = _unary_two_types(ratio_up(e), beta, 0.5, c)
    matrix = _unary_matrix(d, 0.5, c)
    victim0, victim1 = (0.5 * (1.0 - c), 0.5 * c), (0.5 * c, 0.5 * (1.0 - c))
    others = [victim0] + ([(c * (1.0 - c), c * (1.0 - c))] if d >= 3 else [])
    lower = projection_lower(victim0, victim1, others, f"OUE d={d}: bits (x0, x1) = (1,0)/(0,1)",
                              extra=[_unary_third_bit_projection(0.5, c)] if d >= 3 else [])
    return single_entry("oue", {"epsilon0": eps0, "domain_size": d}, vr, alternatives=[two_types],
                   matrix=matrix, lower=lower, levels=_unary_levels(d, 0.5, 0.5, c, e * c),
                   published=(e, beta, e, e), frequency_oracle=UnaryEncodingOracle(d, 0.5, c))


oue = optimized_unary_encoding  # ALIASES["oue"]


# -- subset selection ---------------------------------------------------------------------------
@catalog_entry
def subset_selection(epsilon0: float, domain_size: int, subset_size: int) -> Randomizer:
    """k-subset: output a k-subset S w.p. e/Z if x ∈ S else 1/Z, Z = e·C(d−1, k−1) + C(d−1, k).

    β = (e − 1)(C(d−1,k−1) − C(d−2,k−2))/Z = (e − 1)·C(d−2, k−1)/Z (published), p = q = e: μ0 > μ1
    exactly on the C(d−2, k−1) sets containing x⁰ but not x¹. Neutral share: k = 1 is k-RR
    (s = w). For k ≥ 2 the generic s = w/e is the largest valid one: N charges a set containing both
    x⁰ and x¹ with w·N = e/Z, while an input x_i outside that set gives it only 1/Z.

    Multi-level bound (k ≥ 2, closed form, any d): every input reports every set with
    probability ≥ 1/Z, and each set misses some input (k < d), so the blanket is m(S) = 1/Z. For
    the pair (x⁰, x¹) the ratio to it is e on the sets holding the input and 1 elsewhere:
    :func:`~dpacct_shuffle.randomizers.multilevel.corner_levels` with masses C(d−2, k−2)/Z (both),
    C(d−2, k−1)/Z (only x⁰; only x¹), C(d−2, k)/Z (neither), the same for every pair. Computed
    relative to C(d−1, k−1) (no large binomials): (k − 1)/(d − 1), (d − k)/(d − 1),
    (d − k)(d − k − 1)/(k(d − 1)), over Z/C(d−1, k−1) = e + (d − k)/k. (ε0 = 4, d = 100, k = 10,
    n = 1000, δ = 1e-6: ε 1.674 → 1.462.)

    Lower bound: trinomial projections onto the sets containing x⁰ but not x¹ (and vice versa),
    others all at x⁰ or all at a third value y; and, others at y, the restricted sets
    S0 = {S ∋ x⁰, S ∌ x¹, y}, S1 = {S ∋ x¹, S ∌ x⁰, y} (:func:`boost_projection`): each has
    M = C(d − 3, k − 1) sets, weight e/Z under its own victim input and 1/Z under the other one
    and under y (ε0 = 4, d = 10, k = 3, n = 1e4, δ = 1e-8: lower ε 0.374, was 0.335).
    """
    eps0 = check_epsilon0(epsilon0)
    d = integer_parameter("domain_size", domain_size, 2)
    k = integer_parameter("subset_size", subset_size, 1, d - 1)
    if k == 1:
        base = krr(eps0, d)
        return Randomizer("subset_selection", {"epsilon0": eps0, "domain_size": d, "subset_size": 1},
                          base.cover, variation_ratio=base.variation_ratio, fallbacks=base.fallbacks,
                          matrix=base.matrix,
                          lower_bound=base._lower_bound, published=base.published, notes=base.notes,
                          frequency_oracle=base.frequency_oracle)
    if math.comb(d - 1, k - 1) > 1e300 or math.comb(d - 1, k) > 1e300:
        raise ValueError("domain_size and subset_size must keep C(domain_size - 1, subset_size - 1) "
                         f"and C(domain_size - 1, subset_size) below 1e300, got {d} and {k}")
    e = math.exp(eps0)
    z = e * math.comb(d - 1, k - 1) + math.comb(d - 1, k)
    beta = (e - 1.0) * (math.comb(d - 1, k - 1) - math.comb(d - 2, k - 2)) / z
    vr = VariationRatio(ratio_up(e), beta, ratio_up(e))
    matrix = None
    n_sets = math.comb(d, k)
    if n_sets * d <= MAX_MATRIX_CELLS and n_sets <= 50_000:
        sets = list(itertools.combinations(range(d), k))
        matrix = np.array([[e / z if x in s else 1.0 / z for s in sets] for x in range(d)])
    m01 = math.comb(d - 2, k - 1)
    victim0, victim1 = (e * m01 / z, m01 / z), (m01 / z, e * m01 / z)
    others = [victim0]
    if d >= 3:
        third = (e * math.comb(d - 3, k - 2) + math.comb(d - 3, k - 1)) / z
        others.append((third, third))
    extra = []
    if d >= 3 and math.comb(d - 3, k - 1) > 0:
        extra.append(boost_projection(e / z, 1.0 / z, math.comb(d - 3, k - 1), math.comb(d - 3, k - 1)))
    lower = projection_lower(victim0, victim1, others, f"k-subset d={d}, k={k}", extra=extra)
    scale = (d - 1) * (e + (d - k) / k)  # Z/C(d − 1, k − 1), times d − 1
    one_only = (d - k) / scale
    levels = corner_levels(e, (k - 1) / scale, one_only, one_only,
                           (d - k) * (d - k - 1) / (k * scale))
    return single_entry("subset_selection", {"epsilon0": eps0, "domain_size": d, "subset_size": k}, vr,
                   matrix=matrix, lower=lower, levels=MultiLevelBound((levels,)),
                   published=(e, beta, e, e), frequency_oracle=SubsetSelectionOracle(d, k, e))


# -- set-boost family: local hashing, Hadamard response, PCKV-GRR, collision ---------------------
def _set_boost_vr(e: float, outputs: int, set_size: int, difference: int) -> VariationRatio:
    """Pairs whose boosted sets (size s among l outputs, prob e·g inside, g outside,
    g = 1/(s·e + l − s)) differ in m = |C0 \\ C1| elements: β = m(e − 1)g, p = q = e.

    Neutral share: if the sets are disjoint (m = s), N is uniform on the outputs outside
    C0 ∪ C1 where every input puts at least g = w·N, so s = w is valid. Otherwise N also charges
    C0 ∩ C1 with e·g, where an input whose set misses it puts g: generic s = w/e.
    """
    g = 1.0 / (set_size * e + outputs - set_size)
    beta = difference * (e - 1.0) * g
    if difference == set_size:
        w = (outputs - 2 * set_size) * g
        return VariationRatio(ratio_up(e), beta, ratio_up(e), neutral_share=max(0.0, w))
    return VariationRatio(ratio_up(e), beta, ratio_up(e))


@catalog_entry
def local_hashing(epsilon0: float, hash_range: int, domain_size: int | None = None, *,
                  collision_probability: float | None = None) -> Randomizer:
    """Local hashing: pick a hash h: [d] → [l] at random, report (h, GRR_l(h(x))).

    Published: β = (e − 1)/(e + l − 1), p = q = e. With a hash family whose collision probability
    Pr[h(x⁰) = h(x¹)] is at least c for every pair, colliding hashes give identical reports, so the
    exact TV is (1 − Pr[collision])·(e − 1)/(e + l − 1) ≤ (1 − c)(e − 1)/(e + l − 1) — the β used.
    Default c = 1/l: exact for a uniformly random function or a strongly universal family. A merely
    universal family only guarantees Pr ≤ 1/l, i.e. no useful lower bound on collisions: pass
    ``collision_probability=0`` (gives the published β, valid for every family).
    Neutral share: generic w/e (N charges colliding hashes' boosted outputs with e·g per hash mass,
    where an input hashed elsewhere puts g).
    Matrix (small d, l): the family of all functions [d] → [l], uniform; outputs (h, y).

    Multi-level bound (closed form, any family and d): every input reports (h, y) with
    probability ≥ P(h)·g, so m(h, y) = P(h)·g is a blanket (of mass l·g). For the pair (x⁰, x¹)
    the ratio to it is e at y = h(x⁰) (resp. h(x¹)) and 1 elsewhere, so with
    c' = Pr[h(x⁰) = h(x¹)] the levels are
    :func:`~dpacct_shuffle.randomizers.multilevel.corner_levels` with masses g·c' (both),
    g(1 − c') (only x⁰; only x¹) and g(l − 2 + c') (neither: l − 2 values of y when the hashes
    differ, l − 1 when they collide). The bound is non-increasing in c' at fixed marginals
    (corner_levels), so c' ≥ c gives one level set valid for every pair. (ε0 = 4, l = 8,
    n = 1000, δ = 1e-6: ε 1.669 → 1.496.)

    Lower bound (trinomial projections, pair (x⁰, x¹)): S0 = {(h, h(x⁰)) : h(x⁰) ≠ h(x¹)},
    S1 = {(h, h(x¹)) : h(x⁰) ≠ h(x¹)}, others all at x⁰ or at a third value y; and, for the
    uniform family of all functions with the others at y, the restricted sets
    S0 = {(h, h(x⁰)) : h(x⁰) ≠ h(x¹), h(y) ≠ h(x⁰)}, S1 = {(h, h(x¹)) : h(x⁰) ≠ h(x¹), h(y) ≠ h(x¹)}
    (:func:`boost_projection`). For a uniformly random function h(x⁰), h(x¹), h(y) are independent
    and uniform, so each has hash weight (1 − 1/l)²; on it x⁰ reports its boosted value
    h(x⁰) w.p. e·g, while x¹ and y report it w.p. g (h(x⁰) is neither h(x¹) nor h(y)).
    (ε0 = 4, l = 4, n = 1e4, δ = 1e-8: lower ε 0.364, was 0.325.)
    """
    eps0 = check_epsilon0(epsilon0)
    l = integer_parameter("hash_range", hash_range, 2)
    d = None if domain_size is None else integer_parameter("domain_size", domain_size, 2)
    coll = 1.0 / l if collision_probability is None else check_range(
        "collision_probability", collision_probability, 0.0, 1.0, high_open=True)
    e = math.exp(eps0)
    g = 1.0 / (e + l - 1.0)
    published_beta = (e - 1.0) * g
    beta = (1.0 - coll) * published_beta
    vr = VariationRatio(ratio_up(e), beta, ratio_up(e))
    matrix = None
    uniform_family = collision_probability is None or coll == 1.0 / l
    if d is not None and uniform_family and l**d * l * d <= MAX_MATRIX_CELLS:
        hashes = np.array(list(itertools.product(range(l), repeat=d)))  # (l^d, d)
        matrix = np.empty((d, hashes.shape[0] * l))
        for x in range(d):
            block = np.full((hashes.shape[0], l), g)
            block[np.arange(hashes.shape[0]), hashes[:, x]] = e * g
            matrix[x] = (block / hashes.shape[0]).ravel()
    # projection: S0 = {(h, h(x0)) : h(x0) != h(x1)}, S1 = {(h, h(x1)) : h(x0) != h(x1)}
    victim0, victim1 = ((1 - coll) * e * g, (1 - coll) * g), ((1 - coll) * g, (1 - coll) * e * g)
    others = [victim0]
    extra = []
    if uniform_family and (d is None or d >= 3):
        third = (1 - 1.0 / l) * (e * g / l + (1 - 1.0 / l) * g)  # random function, x_i ∉ {x0, x1}
        others.append((third, third))
        spread = (1.0 - 1.0 / l) ** 2  # P[h(x0) != h(x1), h(y) != h(x0)] (= same with x1)
        extra.append(boost_projection(e * g, g, spread, spread))
    lower = projection_lower(victim0, victim1, others, f"local hashing l={l}", extra=extra)
    params: dict[str, object] = {"epsilon0": eps0, "hash_range": l, "collision_probability": coll}
    if d is not None:
        params["domain_size"] = d
    oracle = LocalHashingOracle(d, l, e) if d is not None and collision_probability is None \
        else None  # the sampler draws uniformly random functions: collision probability 1/l
    levels = corner_levels(e, g * coll, g * (1.0 - coll), g * (1.0 - coll), g * (l - 2.0 + coll))
    return single_entry("local_hashing", params, vr, matrix=matrix, lower=lower,
                   levels=MultiLevelBound((levels,)), published=(e, published_beta, e, e),
                   notes="beta carries the collision factor (1 - collision_probability)",
                   frequency_oracle=oracle)


@catalog_entry
def hadamard_response(epsilon0: float, num_outputs: int, blocks: int = 1,
                      domain_size: int | None = None) -> Randomizer:
    """Hadamard response with K outputs in B blocks of b = K/B (a power of two), s = b/2.

    Input x is assigned to a block and a non-constant row of the b×b Sylvester Hadamard matrix;
    C_x = the s positions of that row equal to +1. Report y w.p. e·g if y ∈ C_x else g,
    g = 1/(s·e + K − s). Two rows of one block share b/4 = s/2 positions, rows of different
    blocks share none, so β = (s/2)(e − 1)g within a block (published for B = 1) and
    β = s(e − 1)g across blocks (published for B > 1, "without the /2"). p = q = e.
    Cover: same-block pairs with the generic s; cross-block pairs with s = w (disjoint sets,
    see ``_set_boost_vr``). ``variation_ratio`` is the larger-β one with the generic s.
    Up to B·(b − 1) inputs; ``domain_size`` defaults to that.

    Lower bound (trinomial projections, :func:`boost_sets_projection`): the pair with the largest
    |C0 \\ C1| onto (C0 \\ C1, C1 \\ C0) with the others at x⁰; and the others all at a third
    input y with S_j = C_j \\ (C_{1−j} ∪ C_y): within a block, x⁰, x¹ on rows 1, 2 and y on
    row 3 = row 1 ⊙ row 2 (Sylvester: H[i, ·]·H[j, ·] = H[i XOR j, ·]), whose +1 positions are where
    rows 1 and 2 agree, so C_y misses C0 Δ C1 entirely (|S0| = |S1| = b/4: every output of
    S0 ∪ S1 is unboosted for the others); across blocks, y in a third block (disjoint,
    |S_j| = s) or else on row 2 of x⁰'s block (|S0| = s/2, |S1| = s). Sizes are counted from the
    explicit sets. (ε0 = 4, K = 64, B = 1, n = 1e4, δ = 1e-8: lower ε 0.35, was 0.254.)

    Multi-level bound (closed form, any K): the blanket min_x R(x)(y) is e·g on the outputs
    boosted by every input and g elsewhere. Outputs of a block without inputs, and with inputs
    in two blocks every output, are missed by some input. With d ≤ b − 1 every input is a row
    r ∈ [1, d] of block 0 and C_r = {j : popcount(r AND j) even}; the outputs in every C_r are the
    j orthogonal (over GF(2)) to the span of [1, d], which is every number below 2^L,
    L = bit length of d: the I = b/2^L multiples of 2^L in block 0 (I = 0 with d > b − 1).
    Against this blanket a victim pair has the levels of
    :func:`~dpacct_shuffle.randomizers.multilevel.corner_levels` (ratio e where the input boosts,
    1 elsewhere) plus I outputs at (1, 1) of blanket mass e·g each: same block (b ≥ 4; rows share
    b/4 = s/2 positions, which hold the I common ones) both g(s/2 − I), only x⁰ and only x¹ g·s/2,
    neither g(K − 3s/2) + e·g·I; different blocks (disjoint sets, I = 0) only x⁰ and only x¹ g·s,
    neither g(K − 2s). Checked against the levels of the exhaustive matrix in the tests.
    (ε0 = 4, K = 64, n = 1000, δ = 1e-6: ε 1.350 → 1.288.)
    """
    eps0 = check_epsilon0(epsilon0)
    k_out = integer_parameter("num_outputs", num_outputs, 2)
    n_blocks = integer_parameter("blocks", blocks, 1, k_out // 2)
    if k_out % n_blocks:
        raise ValueError(f"num_outputs must be divisible by blocks, got {k_out} and {n_blocks}")
    b = k_out // n_blocks
    if b & (b - 1):
        raise ValueError(f"num_outputs/blocks must be a power of two >= 2, got {b}")
    capacity = n_blocks * (b - 1)
    if capacity < 2:
        raise ValueError(f"num_outputs and blocks must leave room for at least 2 inputs "
                         f"(blocks*(num_outputs/blocks - 1) >= 2), got num_outputs={k_out}, "
                         f"blocks={n_blocks}")
    d = capacity if domain_size is None else integer_parameter("domain_size", domain_size, 2, capacity)
    s = b // 2
    e = math.exp(eps0)
    g = 1.0 / (s * e + k_out - s)
    kinds = []
    if b >= 4 and min(d, b - 1) >= 2:
        kinds.append(("same", s // 2))
    if d > b - 1:
        kinds.append(("cross", s))
    cover = [VariationRatioBound([_set_boost_vr(e, k_out, s, m)]) for _, m in kinds]
    m_max = max(m for _, m in kinds)
    beta_max = m_max * (e - 1.0) * g
    summary = VariationRatio(ratio_up(e), beta_max, ratio_up(e))
    published_m = s / 2.0 if n_blocks == 1 else float(s)
    published = (e, published_m * (e - 1.0) * g, e, e)
    h = hadamard(b)
    sets = [(blk, row) for blk in range(n_blocks) for row in range(1, b)][:d]
    matrix = None
    if d * k_out <= MAX_MATRIX_CELLS:
        matrix = np.full((d, k_out), g)
        for x, (blk, row) in enumerate(sets):
            matrix[x, blk * b + np.flatnonzero(h[row] > 0)] = e * g
    victim0, victim1 = (m_max * e * g, m_max * g), (m_max * g, m_max * e * g)
    inputs = set(sets)

    def boosted(code: tuple[int, int]) -> np.ndarray:
        return code[0] * b + np.flatnonzero(h[code[1]] > 0)

    triples = []  # (x0, x1, y) as (block, row)
    if {(0, 1), (0, 2), (0, 3)} <= inputs:  # row 1 ⊙ row 2 = row 3 (Sylvester)
        triples.append(((0, 1), (0, 2), (0, 3)))
    if (1, 1) in inputs:
        third = next((y for y in ((2, 1), (0, 2)) if y in inputs), None)
        if third is not None:
            triples.append(((0, 1), (1, 1), third))
    extra = [boost_sets_projection(e * g, g, boosted(x0), boosted(x1), boosted(y))
             for x0, x1, y in triples]
    lower = projection_lower(victim0, victim1, [victim0],
                              f"Hadamard response K={k_out}, B={n_blocks}: pair with |C0\\C1|={m_max}",
                              extra=extra)
    common = b >> d.bit_length() if d <= b - 1 else 0  # outputs every input boosts
    level_sets = []
    for kind, _ in kinds:
        if kind == "same":
            level_sets.append(corner_levels(e, g * (s // 2 - common), g * (s // 2), g * (s // 2),
                                            g * (k_out - 3 * s // 2) + e * g * common))
        else:
            level_sets.append(corner_levels(e, 0.0, g * s, g * s, g * (k_out - 2 * s)))
    # pairs across blocks alone: their three levels are the cover's clone pair with share w
    fallbacks = [MultiLevelBound(tuple(level_sets))] if any(kind == "same" for kind, _ in kinds) else []
    return Randomizer("hadamard_response",
                      {"epsilon0": eps0, "num_outputs": k_out, "blocks": n_blocks, "domain_size": d,
                       "set_size": s},
                      cover, variation_ratio=summary, fallbacks=fallbacks,
                      matrix=matrix, lower_bound=lower, published=published,
                      frequency_oracle=HadamardResponseOracle(d, k_out, e)
                      if n_blocks == 1 and k_out >= 4 else None)


def _set_response(name: str, eps0: float, outputs: int, set_size: int, differences: set[int],
                  sets: list[np.ndarray] | None, params: dict[str, object],
                  published_difference: int,
                  third_sizes: tuple[int, int] | None = None) -> Randomizer:
    """Set-boost randomizer whose victim pairs have |C0 \\ C1| in ``differences``.

    Cover: pairs with disjoint sets (m = s) use s_neutral = w; partially overlapping pairs use one
    generic-share VariationRatio at their largest m (valid for smaller m by monotonicity in β).
    Lower bound: the pair with the largest m, others at x⁰; and, if ``third_sizes`` = (|S0|, |S1|)
    is given (a third input y with S_j = C_j \\ (C_{1−j} ∪ C_y) of those sizes for that pair),
    the others all at y (:func:`boost_projection`).
    """
    e = math.exp(eps0)
    g = 1.0 / (set_size * e + outputs - set_size)
    positive = sorted(m for m in differences if m > 0)
    kinds = []
    if set_size in positive:
        kinds.append(set_size)
    partial = [m for m in positive if m < set_size]
    if partial:
        kinds.append(max(partial))
    cover = [VariationRatioBound([_set_boost_vr(e, outputs, set_size, m)]) for m in kinds]
    m_max = max(positive)
    summary = VariationRatio(ratio_up(e), m_max * (e - 1.0) * g, ratio_up(e))
    matrix = None
    if sets is not None and len(sets) * outputs <= MAX_MATRIX_CELLS:
        matrix = np.full((len(sets), outputs), g)
        for x, members in enumerate(sets):
            matrix[x, members] = e * g
    victim0, victim1 = (m_max * e * g, m_max * g), (m_max * g, m_max * e * g)
    extra = [] if third_sizes is None else [boost_projection(e * g, g, *third_sizes)]
    lower = projection_lower(victim0, victim1, [victim0], f"{name}: pair with |C0\\C1|={m_max}",
                              extra=extra)
    return Randomizer(name, params, cover, variation_ratio=summary, matrix=matrix,
                      lower_bound=lower,
                      published=(e, published_difference * (e - 1.0) * g, e, e))


@catalog_entry
def pckv_grr(epsilon0: float, domain_size: int, set_size: int) -> Randomizer:
    """PCKV-GRR as parametrised in Wang et al., arXiv:2304.05007: β = s(e − 1)/(s·e + 2d − s),
    p = q = e.

    This is the exact TV of a set-boost randomizer over the 2d key-value outputs in which each
    input boosts (prob. e·g, g = 1/(s·e + 2d − s)) its own set of s outputs and the sets of the
    two victim inputs are disjoint; the catalog implements that structure (inputs = the 2d/s
    disjoint sets when s divides 2d) and, because the sets are disjoint, uses s_neutral = w.

    Reading checked against the PCKV authors' code (Gu et al., USENIX Security 2020): s is the
    padding length ℓ and d the key domain GRR runs over *including the ℓ dummy keys*
    (d = K + ℓ for K real keys); with PCKV's budget split, sampling one of the user's ℓ pairs and
    perturbing it with GRR over the 2d (key, ±1) outputs gives exactly this structure. Pass
    d = K + ℓ, not K. Inputs that share some key-value pairs are less distinguishable than the
    disjoint victim pair covered here (smaller TV).

    Lower bound: the disjoint pair, others at x⁰, and (at least three sets) others at a third
    input whose set is disjoint from both: S_j = C_j, |S_j| = s (:func:`boost_projection`).
    """
    eps0 = check_epsilon0(epsilon0)
    d = integer_parameter("domain_size", domain_size, 1)
    s = integer_parameter("set_size", set_size, 1, d)
    outputs = 2 * d
    sets = [np.arange(i * s, (i + 1) * s) for i in range(outputs // s)] if outputs // s >= 2 else None
    third = (s, s) if outputs // s >= 3 else None  # a third disjoint set: S_j = C_j
    return _set_response("pckv_grr", eps0, outputs, s, {s}, sets,
                         {"epsilon0": eps0, "domain_size": d, "set_size": s}, s, third)


@catalog_entry
def collision(epsilon0: float, domain_size: int, output_length: int, set_size: int) -> Randomizer:
    """(d, s)-collision with output length l: input x boosts the cyclic window
    C_x = {x·s, …, x·s + s − 1} mod l (prob. e·g, g = 1/(s·e + l − s)).

    β = min(s, l − s)(e − 1)/(s·e + l − s) (published): |C0 \\ C1| ≤ min(s, l − s), attained by
    x = 0, 1. p = q = e. Neutral share: pairs with disjoint windows use s = w; when windows wrap
    around the cycle some pairs overlap partially, and those get a generic-share VariationRatio
    (cover of two kinds; ``variation_ratio`` is the generic one at the largest β).

    The original mechanism (arXiv 2304.04410) hashes each of the user's s items into [l] with a
    per-user random seed sent along with the report; these deterministic cyclic windows are a
    representative with the same worst-case (p, β, q), not the seeded protocol itself (for it,
    every output keeps probability ≥ g under every seed, so the disjoint-pair share w holds per
    seed).

    Lower bound: the pair (0, 1), others at 0; and others all at the third input whose window
    covers least of C0 Δ C1 (:func:`_collision_third_sizes`, :func:`boost_projection`).
    """
    eps0 = check_epsilon0(epsilon0)
    d = integer_parameter("domain_size", domain_size, 2)
    l = integer_parameter("output_length", output_length, 2)
    s = integer_parameter("set_size", set_size, 1, l - 1)
    sets = [(x * s + np.arange(s)) % l for x in range(d)] if d * l <= MAX_MATRIX_CELLS else None
    # windows of inputs x < x' start (x' − x)·s apart on the cycle of length l
    differences = set()
    for k in range(1, min(d, l + 1)):
        shift = (k * s) % l
        overlap = max(0, s - shift) + max(0, s - (l - shift))
        differences.add(s - min(s, overlap))
    return _set_response("collision", eps0, l, s, differences, sets,
                         {"epsilon0": eps0, "domain_size": d, "output_length": l, "set_size": s},
                         min(s, l - s), _collision_third_sizes(d, l, s))


_THIRD_WINDOW_CELLS = 1 << 22


def _collision_third_sizes(d: int, l: int, s: int) -> tuple[int, int] | None:
    """Lower-bound pair x⁰ = 0, x¹ = 1 of the cyclic windows: (|S0|, |S1|) with
    S_j = C_j \\ (C_{1−j} ∪ C_y) for the third input y ∈ [2, d) (the first ⌊2²²/s⌋ of them at
    most) maximising |S0| + |S1|, counted from the explicit windows; None if d = 2 or both empty."""
    best: tuple[int, int] | None = None
    window = np.arange(s)
    c0, c1 = window % l, (s + window) % l
    for y in range(2, min(d, 2 + max(1, _THIRD_WINDOW_CELLS // s))):
        cy = (y * s + window) % l
        sizes = (np.setdiff1d(c0, np.union1d(c1, cy)).size, np.setdiff1d(c1, np.union1d(c0, cy)).size)
        if sum(sizes) > 0 and (best is None or sum(sizes) > sum(best)):
            best = sizes
            if sum(sizes) == 2 * min(s, l - s):
                break  # C_y misses C0 Δ C1 entirely
    return best


@catalog_entry
def sampling_rappor(epsilon0: float, domain_size: int, sample_size: int, *,
                    sampled_bits: bool = False) -> Randomizer:
    """Sampling RAPPOR, s of d. Two implementations, with different valid β.

    Default (``sampled_bits=False``, the published parameters): the user's report depends on its
    item only with probability s/d — R(x) = (s/d)·RAPPOR(x) + (1 − s/d)·RAPPOR(∅), RAPPOR at
    ε0/2 per bit and ∅ the all-zero vector (the user samples s of d slots; only its own slot's
    report carries its item). Then TV = (s/d)(h − 1)/(h + 1), h = e^{ε0/2} (published β). The
    published p = q = e^ε0 is valid but not tight: this is a unary encoding whose own bit is 1 w.p.
    t = (s/d)·a + (1 − s/d)·b and every other bit w.p. b, so every ratio of two inputs' laws is at
    most p = q = t·a/(b·(1 − t)) (bits (x⁰, x¹) = (1, 0) vs (0, 1); = e^ε0 only for s = d), which
    is used (e.g. ε0 = 4, d = 10, s = 2, n = 1e4, δ = 1e-8: ε 0.032 instead of 0.200), with the
    generic share and, as for RAPPOR, the two neutral types (:func:`_unary_two_types`). This is the only reading we found that reproduces the
    published β; the protocol the paper's table refers to is unconfirmed. In particular, the
    LDPMiner-style sampling RAPPOR (pad the item set to s, sample one item, RAPPOR it at full ε0)
    has a much larger TV (e.g. 0.245 vs 0.041 at ε0 = 1, d = 6, s = 1): for it use
    :func:`from_matrix` on its matrix instead.

    ``sampled_bits=True``: the user reports s uniformly sampled bits of its RAPPOR vector. Then a
    pair is distinguishable whenever x⁰ or x¹ is sampled, TV = (1 − C(d−2, s)/C(d, s))(h − 1)/(h + 1)
    ≈ 2s/d·…: the published β is NOT a valid TV bound for this implementation and the larger
    value is used; p = q = e for s ≥ 2 (both bits sampled), e^{ε0/2} for s = 1.

    Lower bound (default implementation). R(x) = Bern(t) on bit x ⊗ Bern(b) on every other bit,
    t = (s/d)·a + (1 − s/d)·b (both mixture components flip the bits other than x w.p. b), i.e. a
    unary encoding with one-probabilities (t, b): projections onto bits (x⁰, x¹) = (1, 0)/(0, 1)
    with the others at x⁰ or at a third value y, and the third-bit projection
    (:func:`_unary_third_bit_projection`). ``sampled_bits=True``: the matrix analyzer's instances.
    """
    eps0 = check_epsilon0(epsilon0)
    d = integer_parameter("domain_size", domain_size, 2)
    s = integer_parameter("sample_size", sample_size, 1, d)
    h = math.exp(eps0 / 2.0)
    a, b = h / (h + 1.0), 1.0 / (h + 1.0)
    base_beta = (h - 1.0) / (h + 1.0)
    e = math.exp(eps0)
    published = (e, s * base_beta / d, e, e)
    params: dict[str, object] = {"epsilon0": eps0, "domain_size": d, "sample_size": s,
                                 "sampled_bits": sampled_bits}
    if not sampled_bits:
        lam = s / d
        own_one = lam * a + (1.0 - lam) * b  # P[bit x = 1 | input x]; every other bit: Bern(b)
        # exact ratio of a unary encoding with one-probabilities (t, b): t·a/(b·(1 − t)) ≤ e^ε0
        p_exact = min(ratio_up(e), ratio_up(own_one * a / (b * (1.0 - own_one))))
        vr = VariationRatio(p_exact, lam * base_beta, p_exact)
        two_types = _unary_two_types(p_exact, lam * base_beta, own_one, b)
        matrix = _unary_matrix(d, a, b, mix_zero=1.0 - lam)
        victim0 = (a * own_one, b * (1.0 - own_one))
        victim1 = (victim0[1], victim0[0])
        others = [victim0] + ([(a * b, a * b)] if d >= 3 else [])
        lower = projection_lower(victim0, victim1, others, f"sampling RAPPOR s={s}, d={d}",
                                  extra=[_unary_third_bit_projection(own_one, b)] if d >= 3 else [])
        return single_entry("sampling_rappor", params, vr, alternatives=[two_types], matrix=matrix,
                       lower=lower, published=published,
                       frequency_oracle=UnaryEncodingOracle(d, own_one, b))
    hit = 1.0 - math.comb(d - 2, s) / math.comb(d, s)
    p = e if s >= 2 else h
    vr = VariationRatio(ratio_up(p), hit * base_beta, ratio_up(p))
    matrix = None
    subsets = math.comb(d, s)
    if d * subsets * 2**s <= MAX_MATRIX_CELLS:
        cols = []
        for subset in itertools.combinations(range(d), s):
            bits = ((np.arange(2**s)[:, None] >> np.arange(s)[None, :]) & 1).astype(bool)
            for x_bits in bits:
                cols.append((subset, x_bits))
        matrix = np.array([[math.prod((a if (j == x) == bit else b) for j, bit in zip(sub, xb))
                            / subsets for sub, xb in cols] for x in range(d)])
    return single_entry("sampling_rappor", params, vr, matrix=matrix, lower=matrix_lower(matrix),
                   published=published,
                   notes="sampled bits: published beta invalid; exact TV used")


__all__ = [
    "binary_rr",
    "krr",
    "rappor",
    "optimized_unary_encoding",
    "oue",
    "subset_selection",
    "local_hashing",
    "hadamard_response",
    "pckv_grr",
    "collision",
    "sampling_rappor",
]
