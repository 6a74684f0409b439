"""Catalog entries for frequency estimation on a finite domain: randomized response (binary, k-ary)
and subset selection here; the unary encodings (RAPPOR, OUE, sampling RAPPOR) in
:mod:`~dpacct_shuffle.randomizers.catalog.unary_encodings` and the set-boost family (local
hashing, Hadamard response, PCKV-GRR, collision) in
:mod:`~dpacct_shuffle.randomizers.catalog.set_boost`, re-exported from this module. Proofs of each
neutral share in the entry's docstring (notation: :mod:`dpacct_shuffle.randomizers.catalog`)."""

from __future__ import annotations

import itertools
import math

import numpy as np

from dpacct_shuffle.core.bound import VariationRatio
from dpacct_shuffle.core.rounding import ratio_up
from dpacct_shuffle.core.validation import check_epsilon0
from dpacct_shuffle.randomizers.base import Randomizer, VariationRatioBound
from dpacct_shuffle.randomizers.binary_rr_curve import BinaryRRExactUpper
from dpacct_shuffle.randomizers.catalog.entry import (MAX_MATRIX_CELLS, binary_rr_lower,
                                                      boost_projection, catalog_entry,
                                                      integer_parameter, projection_lower,
                                                      single_entry)
from dpacct_shuffle.randomizers.catalog.set_boost import (collision, hadamard_response,
                                                          local_hashing, pckv_grr)
from dpacct_shuffle.randomizers.catalog.unary_encodings import (optimized_unary_encoding, oue,
                                                                rappor, sampling_rappor)
from dpacct_shuffle.randomizers.frequency import DirectEncodingOracle, SubsetSelectionOracle
from dpacct_shuffle.randomizers.multilevel import MultiLevelBound, corner_levels


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
