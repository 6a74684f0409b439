"""Catalog entries of the unary encodings: RAPPOR (symmetric unary encoding), OUE and sampling
RAPPOR, with their shared levels, neutral types and lower-bound projections. Every mass below is a
product of the one-probabilities and their complements, passed separately so that nothing is a
difference of nearly equal floats (domains up to 10⁶ items, ε0 up to the catalog maximum).
Proofs of each neutral share in the entry's docstring (notation:
:mod:`dpacct_shuffle.randomizers.catalog`)."""

from __future__ import annotations

import itertools
import math

import numpy as np

from dpacct_shuffle.core.bound import VariationRatio
from dpacct_shuffle.core.multilevel import PrivacyLossLevels
from dpacct_shuffle.core.rounding import ratio_up
from dpacct_shuffle.core.validation import check_epsilon0
from dpacct_shuffle.randomizers.base import LowerBoundFactory, Randomizer
from dpacct_shuffle.randomizers.catalog.entry import (MAX_MATRIX_CELLS, Projection, catalog_entry,
                                                      integer_parameter, matrix_lower,
                                                      projection_lower, single_entry)
from dpacct_shuffle.randomizers.frequency import UnaryEncodingOracle
from dpacct_shuffle.randomizers.multilevel import MultiLevelBound


def _unary_third_bit_projection(t: float, t_zero: float, f: float, f_zero: float) -> Projection:
    """Unary encodings, others all holding a third value y (d ≥ 3): S0 = {bits (x⁰, x¹, y) =
    (1, 0, 0)}, S1 = {(0, 1, 0)}; bits other than x⁰, x¹, y have the same law for every user. A
    holder's own bit is 1 w.p. t, every other bit w.p. f (``t_zero`` = 1 − t, ``f_zero`` = 1 − f
    passed separately, without cancellation). Victim x⁰: S0 t(1 − f)², S1 (1 − t)f(1 − f), rest
    t(f² + 2f(1 − f)) + (1 − t)((1 − f)² + f(1 − f) + f²) (1 − (1 − f)² and 1 − f(1 − f) expanded
    with (f + (1 − f))² = 1; x¹ symmetric); others: f(1 − f)(1 − t) each, rest
    t + (1 − t)(f² + (1 − f)²). Every rest mass is summed directly (a difference of nearly equal
    floats loses it at large ε0). Bit y = 0 is rare for the others (they hold y), so the victim's
    message stands out more than in the two-bit projection (RAPPOR ε0 = 4, n = 1e4, δ = 1e-8:
    lower ε 0.418 vs 0.344).
    """
    own, foreign = t * f_zero * f_zero, t_zero * f * f_zero
    rest = t * (f * f + 2.0 * f * f_zero) + t_zero * (f_zero * f_zero + f * f_zero + f * f)
    other = f * f_zero * t_zero
    return ((own, foreign, rest), (foreign, own, rest),
            (other, other, t + t_zero * (f * f + f_zero * f_zero)))


def _unary_lower(t: float, t_zero: float, f: float, f_zero: float, d: int,
                 description: str) -> LowerBoundFactory:
    """Trinomial-projection lower bounds of a unary encoding (own bit 1 w.p. t, every other bit
    w.p. f; complements passed separately): bits (x⁰, x¹) = (1, 0) / (0, 1), victim x⁰ with
    masses (t(1 − f), (1 − t)f, rest t·f + (1 − t)(1 − f)) (x¹ symmetric), the others all at x⁰
    (the victim's x⁰ law) or all at a third value y (f(1 − f) each, rest f² + (1 − f)²); and
    (d ≥ 3) :func:`_unary_third_bit_projection`.
    """
    victim0 = (t * f_zero, t_zero * f, t * f + t_zero * f_zero)
    victim1 = (victim0[1], victim0[0], victim0[2])
    others = [victim0]
    extra: list[Projection] = []
    if d >= 3:
        others.append((f * f_zero, f * f_zero, f * f + f_zero * f_zero))
        extra.append(_unary_third_bit_projection(t, t_zero, f, f_zero))
    return projection_lower(victim0, victim1, others, description, extra=extra)


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


def _unary_two_types(p: float, beta: float, t: float, t_zero: float, f: float,
                     f_zero: float) -> VariationRatio:
    """Unary encoding (own bit 1 w.p. t, every other bit w.p. f; ``t_zero`` = 1 − t and
    ``f_zero`` = 1 − f passed separately, without cancellation) with
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
    common = t_zero * f_zero
    return VariationRatio(p, beta, p, neutral_parts=((common, common),
                                                     (t * f, f * f * t_zero / f_zero)))


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
    # the all-ones level has the ratios (1, 1) of the (0, 0) level: one level (levels group equal
    # ratios). Its mass t·f^(d−1) underflows for large d and ε0; a mass dropped from a level with
    # a = b turns values a − e^ε·b ≤ 0 into 0 (the zero atom), a pointwise larger Z: still a bound.
    all_ones = math.exp(math.log(t) + (d - 1) * math.log(f))
    rows = [(rho, 1.0, f * t_zero), (1.0, rho, f * t_zero), (1.0, 1.0, f_zero * t_zero + all_ones)]
    if d >= 3:
        rows.append((rho, rho, f * f * t_zero * -math.expm1((d - 2) * math.log(f)) / f_zero))
    a, b, m = zip(*((ra, rb, mass) for ra, rb, mass in rows if mass > 0.0 or ra != rb))
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
    two_types = _unary_two_types(ratio_up(e), beta, a, b, b, a)
    matrix = _unary_matrix(d, a, b)
    lower = _unary_lower(a, b, b, a, d, f"RAPPOR d={d}: bits (x0, x1) = (1, 0) / (0, 1)")
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
    two_types = _unary_two_types(ratio_up(e), beta, 0.5, 0.5, c, e * c)
    matrix = _unary_matrix(d, 0.5, c)
    lower = _unary_lower(0.5, 0.5, c, e * c, d, f"OUE d={d}: bits (x0, x1) = (1,0)/(0,1)")
    return single_entry("oue", {"epsilon0": eps0, "domain_size": d}, vr, alternatives=[two_types],
                   matrix=matrix, lower=lower, levels=_unary_levels(d, 0.5, 0.5, c, e * c),
                   published=(e, beta, e, e), frequency_oracle=UnaryEncodingOracle(d, 0.5, c))


oue = optimized_unary_encoding  # ALIASES["oue"]


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
    (:func:`_unary_lower`). ``sampled_bits=True``: the matrix analyzer's instances.
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
        # 1 − own_one: by subtraction (relative error ≤ u) unless own_one > ½, where the direct
        # sum avoids the cancellation
        own_zero = 1.0 - own_one if own_one <= 0.5 else lam * b + (1.0 - lam) * a
        # exact ratio of a unary encoding with one-probabilities (t, b): t·a/(b·(1 − t)) ≤ e^ε0
        p_exact = min(ratio_up(e), ratio_up(own_one * a / (b * own_zero)))
        vr = VariationRatio(p_exact, lam * base_beta, p_exact)
        two_types = _unary_two_types(p_exact, lam * base_beta, own_one, own_zero, b, a)
        matrix = _unary_matrix(d, a, b, mix_zero=1.0 - lam)
        lower = _unary_lower(own_one, own_zero, b, a, d, f"sampling RAPPOR s={s}, d={d}")
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


__all__ = ["optimized_unary_encoding", "oue", "rappor", "sampling_rappor"]
