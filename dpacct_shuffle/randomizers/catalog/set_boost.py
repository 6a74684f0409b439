"""Catalog entries of the set-boost family: each input boosts a set of outputs (probability e·g
inside, g outside) — local hashing, Hadamard response, PCKV-GRR and collision. Proofs of each
neutral share in the entry's docstring (notation: :mod:`dpacct_shuffle.randomizers.catalog`)."""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.linalg import hadamard

from dpacct_shuffle.core.bound import VariationRatio
from dpacct_shuffle.core.rounding import ratio_up
from dpacct_shuffle.core.validation import check_epsilon0, check_range
from dpacct_shuffle.randomizers.base import LowerBoundFactory, Randomizer, VariationRatioBound
from dpacct_shuffle.randomizers.catalog.entry import (MAX_MATRIX_CELLS, boost_projection,
                                                      boost_sets_projection, catalog_entry,
                                                      integer_parameter, projection_lower,
                                                      single_entry)
from dpacct_shuffle.randomizers.frequency import HadamardResponseOracle, LocalHashingOracle
from dpacct_shuffle.randomizers.hashing_lower import third_input_instance
from dpacct_shuffle.randomizers.lower_bounds import InstanceLowerBound
from dpacct_shuffle.randomizers.multilevel import MultiLevelBound, corner_levels


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


def _with_third_input(projections: LowerBoundFactory, eps0: float, l: int) -> LowerBoundFactory:
    """Adds the exact instance "others at a third input" (:mod:`hashing_lower`) where it fits."""

    def factory(n: int) -> InstanceLowerBound | None:
        base = projections(n)
        exact = third_input_instance(n, eps0, l)
        if exact is None or base is None:
            return base
        return InstanceLowerBound(base.pairs + (exact,), base.description)

    return factory


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
    Where it fits its work budget (n up to a few thousand), also the exact δ of the others at a
    third input z, the full shuffled histogram (:mod:`~dpacct_shuffle.randomizers.hashing_lower`):
    in the tail it exceeds the configuration "others at x⁰" (ε0 = 4, l = 2, n = 1000, δ = 1e-6:
    lower ε 0.6907, was 0.6747).
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
    # d < 22 first: l**d of a huge d never finishes (l ≥ 2, so l**22 · 2 · 22 > MAX_MATRIX_CELLS)
    if d is not None and uniform_family and d < 22 and l**d * l * d <= MAX_MATRIX_CELLS:
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
    if uniform_family and (d is None or d >= 3):
        lower = _with_third_input(lower, eps0, l)
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
    matrix = None
    if d * k_out <= MAX_MATRIX_CELLS:
        h = hadamard(b)
        matrix = np.full((d, k_out), g)
        codes = [(blk, row) for blk in range(n_blocks) for row in range(1, b)][:d]
        for x, (blk, row) in enumerate(codes):
            matrix[x, blk * b + np.flatnonzero(h[row] > 0)] = e * g
    victim0, victim1 = (m_max * e * g, m_max * g), (m_max * g, m_max * e * g)

    def is_input(code: tuple[int, int]) -> bool:  # inputs fill block 0's rows 1 … b − 1 first
        return code[0] < n_blocks and 1 <= code[1] < b and code[0] * (b - 1) + code[1] - 1 < d

    def boosted(code: tuple[int, int]) -> np.ndarray:
        """The +1 positions of Sylvester row r: popcount(r AND j) even (H[r, j] = (−1)^popcount)."""
        columns = np.arange(b, dtype=np.int64)
        parity = np.zeros(b, dtype=np.int64)
        for bit in range(b.bit_length()):
            parity ^= ((columns & code[1]) >> bit) & 1
        return code[0] * b + np.flatnonzero(parity == 0)

    triples = []  # (x0, x1, y) as (block, row)
    if b <= _EXPLICIT_SET_OUTPUTS:
        if all(is_input(code) for code in ((0, 1), (0, 2), (0, 3))):  # row 1 ⊙ row 2 = row 3
            triples.append(((0, 1), (0, 2), (0, 3)))
        if is_input((1, 1)):
            third = next((y for y in ((2, 1), (0, 2)) if is_input(y)), None)
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
    count = outputs // s  # sets listed only for a matrix that is built (2**53 of them never end)
    sets = ([np.arange(i * s, (i + 1) * s) for i in range(count)]
            if 2 <= count and count * outputs <= MAX_MATRIX_CELLS else None)
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
#: Hadamard response: the third-input projections count their sets explicitly up to this block
#: size (larger blocks keep the pair's own projection only: a lower bound needs no more)
_EXPLICIT_SET_OUTPUTS = 1 << 16


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


__all__ = ["collision", "hadamard_response", "local_hashing", "pckv_grr"]
