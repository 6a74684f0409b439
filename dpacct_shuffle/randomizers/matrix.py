"""Parameter analyzer for any finite local randomizer given as a row-stochastic matrix.

For every unordered victim pair (x⁰, x¹) (the core bound is the maximum of both directions, so the
ordered pair (x¹, x⁰) gives the same value) with μ0 = R(x⁰), μ1 = R(x¹) this computes the exact
decomposition of docs/theory.md, "Decomposition":

* p = max_y max(μ0(y)/μ1(y), μ1(y)/μ0(y)) (both directions: the core's p bounds both ratios);
* β = TV(μ0, μ1), Q0 = (μ0 − μ1)⁺/β, Q1 = (μ1 − μ0)⁺/β;
* α = β/(p − 1), w = 1 − (p + 1)α, w·N = μ0 − pα·Q0 − α·Q1 (= μ1 − α·Q0 − pα·Q1).

Valid rates for the other users. Every other user may hold any input, so the pointwise
requirement R(x_i) ≥ r0·Q0 + r1·Q1 + s·N for all x_i is exactly

    r0·Q0(y) + r1·Q1(y) + s·N(y) ≤ m(y) := min_x R(x)(y)   for every output y,

a polytope in (r0, r1, s). Q0 and Q1 have disjoint supports S0, S1, so for a fixed s the largest
rates are r_j(s) = min_{y ∈ S_j} (m(y) − s·N(y))/Q_j(y) (concave, non-increasing in s), and s is
also capped by the outputs outside S0 ∪ S1. The trade-off is one-dimensional; which point gives
the tightest bound depends on (ε, n), so the analyzer keeps up to four points of the frontier —
the *knee* (largest s at the largest rates), two intermediate points and the largest feasible s,
minus points dominated componentwise by another one — and
the bound takes the minimum over them at evaluation time.

Several neutral types (core ``neutral_parts``). At the knee rates, every output y with w·N(y) > 0
can be its own neutral type (point mass δ_y, the same law for every user), reproduced by every
other user at rate m'(y) = m(y) − r0·Q0(y) − r1·Q1(y), a ratio ρ_y = w·N(y)/m'(y). For a
coefficient λ the shares s_y = min(m'(y), w·N(y)/λ) have every ratio ≥ λ, so the bound with share
S(λ) = Σ_y s_y and neutral weight λ·S(λ) is valid (core module docstring). λ = max_y ρ_y is the
single share above; the analyzer adds λ = min_y ρ_y and their geometric mean as candidates (they
win where one neutral pattern is rare among the others and caps the single share, e.g. unary
encodings). r_j is also capped at pα (the core takes
q_j = pα/r_j ≥ 1). Rates and shares are shrunk by a relative 1e-9 and the pointwise inequality is
re-verified with the core's own (α, pα, r0, r1, s) before use.

The shuffled bound of the matrix is the maximum over pairs of each pair's bound (pairs with equal
parameters are merged: merged candidates use the smallest r0, r1, s of their members, valid for all
of them). If more than ``MAX_PAIR_KINDS`` kinds of pairs remain, evaluation cost is capped instead:
the pairs are binned by β and each bin gets one VariationRatio with the generic neutral share
(max p, max β, and the largest pair-specific q_k = max_y max(μ0, μ1)(y)/min_x R(x)(y); see
``_generic_bins`` for the validity argument). Pairs whose rates vanish (a zero in a column of the Q0/Q1 support, p = ∞) are bounded by
their local hockey-stick divergence instead (the shuffled output is a post-processing of the
victim's message). Two fallbacks valid for every pair lower the result further: the summary
VariationRatio (max p, max β, q = max p, generic s: the decomposition stays valid for a larger p
and the bound is non-decreasing in β with the generic s, docs/theory.md, "Monotonicity in β") and
the largest local hockey-stick divergence; a third, the multi-level (blanket) bound of every pair's
whole privacy-loss spectrum (:mod:`dpacct_shuffle.randomizers.multilevel`), is attached where it
applies, and for two inputs the exact sampled binary-RR round that dominates the matrix
(:mod:`dpacct_shuffle.randomizers.binary_reduction`).
"""

from __future__ import annotations

import functools
import hashlib
import math
from typing import NamedTuple, Sequence

import numpy as np

from dpacct_shuffle.core.bound import VariationRatio
from dpacct_shuffle.core.validation import check_stochastic_matrix
from dpacct_shuffle.randomizers.base import LocalPairBound, PairBound, Randomizer, VariationRatioBound
from dpacct_shuffle.randomizers.binary_reduction import attach_binary_reduction
from dpacct_shuffle.randomizers.lower_bounds import InstanceLowerBound, trinomial_projection
from dpacct_shuffle.randomizers.multilevel import attach_multilevel

_SHRINK = 1.0 - 1e-9
_CHUNK_CELLS = 4_000_000
_KEY_DIGITS = 9
MAX_PAIR_KINDS = 12


def validate_matrix(matrix: object, name: str = "matrix") -> np.ndarray:
    """Return ``matrix`` as a float array with rows renormalised, after checking it is stochastic
    (at least two inputs; rows sum to 1 within ``PROBABILITY_SUM_TOLERANCE``)."""
    arr = check_stochastic_matrix(name, matrix, min_rows=2)
    sums = np.array([math.fsum(row) for row in arr.tolist()])
    normalised: np.ndarray = arr / sums[:, None]
    return normalised


def _sorted_sum(values: np.ndarray) -> np.ndarray:
    """Row sums of nonnegative values in sorted order: identical multisets give identical floats."""
    sums: np.ndarray = np.sort(values, axis=1).sum(axis=1)
    return sums


def _pair_decomposition(mu0: np.ndarray, mu1: np.ndarray) -> dict[str, np.ndarray]:
    """Vectorised variation-ratio decomposition for a batch of pairs (rows)."""
    diff = mu0 - mu1
    pos, neg = np.maximum(diff, 0.0), np.maximum(-diff, 0.0)
    beta = np.maximum(_sorted_sum(pos), _sorted_sum(neg))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        r01 = np.where(mu1 > 0, mu0 / mu1, np.where(mu0 > 0, np.inf, 1.0))
        r10 = np.where(mu0 > 0, mu1 / mu0, np.where(mu1 > 0, np.inf, 1.0))
    # a few ulps up: the decomposition stays valid for any p >= the exact ratio
    p = np.maximum(r01.max(axis=1), r10.max(axis=1)) * (1.0 + 4.0 * np.finfo(float).eps)
    return {"pos": pos, "neg": neg, "beta": beta, "p": p}


def _frontier(
    q0: np.ndarray, q1: np.ndarray, neutral: np.ndarray, col_min: np.ndarray, p_alpha: float
) -> list[tuple[float, float, float]]:
    """Up to three (r0, r1, s) points of the feasible frontier for one pair (module docstring)."""
    in0, in1 = q0 > 0, q1 > 0
    if not (np.any(in0) and np.any(in1)):  # one side lost to rounding (β near 1e-57): no clones
        return []
    has_n = neutral > 0
    outside = ~(in0 | in1) & has_n
    s_cap = float(np.min(col_min[outside] / neutral[outside])) if np.any(outside) else math.inf

    def rates(share: float) -> tuple[float, float]:
        r0 = float(np.min((col_min[in0] - share * neutral[in0]) / q0[in0]))
        r1 = float(np.min((col_min[in1] - share * neutral[in1]) / q1[in1]))
        return min(r0, p_alpha), min(r1, p_alpha)

    r0_max, r1_max = rates(0.0)
    if r0_max <= 0.0 or r1_max <= 0.0:
        return []
    knee = s_cap
    for mask, q, r in ((in0 & has_n, q0, r0_max), (in1 & has_n, q1, r1_max)):
        if np.any(mask):
            knee = min(knee, float(np.min((col_min[mask] - r * q[mask]) / neutral[mask])))
    top = s_cap
    both = (in0 | in1) & has_n
    if np.any(both):
        top = min(top, float(np.min(col_min[both] / neutral[both])))
    if not math.isfinite(knee):  # no neutral mass at all
        knee = top = 0.0
    knee = max(knee, 0.0)
    shares = [knee]
    if math.isfinite(top) and top > knee * (1.0 + 1e-6) + 1e-15:
        shares += [knee + (top - knee) / 3.0, knee + 2.0 * (top - knee) / 3.0, top]
    points = []
    for share in shares:
        r0, r1 = rates(share) if share > knee else (r0_max, r1_max)
        if r0 > 0.0 and r1 > 0.0:
            share = max(0.0, min(share, 1.0 - r0 - r1))
            points.append((r0 * _SHRINK, r1 * _SHRINK, share * _SHRINK))
    # drop points dominated by another one (up to 1e-9 relative): dropping a candidate of a
    # minimum of valid bounds never affects validity, only (negligibly) tightness
    kept = []
    for i, pt in enumerate(points):
        dominated = any(
            j != i and all(o >= v * (1.0 - 1e-9) for o, v in zip(other, pt))
            and (j < i or any(o > v for o, v in zip(other, pt)))
            for j, other in enumerate(points))
        if not dominated:
            kept.append(pt)
    return kept


def _typed_points(q0: np.ndarray, q1: np.ndarray, neutral: np.ndarray, col_min: np.ndarray,
                  w: float, knee: tuple[float, float, float]) -> list[tuple[float, float, float, float]]:
    """(r0, r1, S(λ), λ) at the knee rates for λ = min ρ_y and √(min ρ_y · max ρ_y) (module doc).

    Only returned when they differ from the single share (max ρ_y); shares shrunk by 1e-9.
    """
    r0, r1, _ = knee
    mass = w * neutral
    has_n = mass > 0
    if not np.any(has_n):
        return []
    spare = np.maximum(col_min[has_n] - r0 * q0[has_n] - r1 * q1[has_n], 0.0)
    usable = spare > 0
    if not np.any(usable):
        return []
    ratios = mass[has_n][usable] / spare[usable]
    low, high = float(np.min(ratios)), float(np.max(ratios))
    if not low < high * (1.0 - 1e-6):
        return []
    points = []
    for lam in (low, math.sqrt(low * high)):
        share = float(np.minimum(spare, mass[has_n] / lam).sum())
        share = max(0.0, min(share, 1.0 - r0 - r1))
        points.append((r0, r1, share * _SHRINK, lam * (1.0 - 1e-9)))
    return points


def _q_for_rate(p_alpha: float, rate: float) -> float:
    """Smallest float q ≥ 1 with p_alpha / q ≤ rate (the core computes r = pα/q)."""
    q = max(1.0, p_alpha / rate)
    while p_alpha / q > rate:
        q = math.nextafter(q, math.inf)
    return q


def _build_vr(p: float, beta: float, r0: float, r1: float, share: float,
              weight_ratio: float | None = None) -> VariationRatio:
    """Core VariationRatio with rates ≤ (r0, r1), share ≤ ``share`` and, if given, neutral weight
    λ·share (λ = ``weight_ratio``, as the two-part split (λ·S, S), (w − λ·S, 0))."""
    probe = VariationRatio(p, beta, p)  # for the core's own pα
    p_alpha = probe.p_alpha
    q0, q1 = _q_for_rate(p_alpha, r0), _q_for_rate(p_alpha, r1)
    share = min(share, max(0.0, 1.0 - p_alpha / q0 - p_alpha / q1))
    if weight_ratio is None:
        return VariationRatio(p, beta, q0, q1=q1, neutral_share=share)
    weight = min(weight_ratio * share, probe.neutral_mass)
    return VariationRatio(p, beta, q0, q1=q1,
                          neutral_parts=((weight, share), (probe.neutral_mass - weight, 0.0)))


def _verify(vr: VariationRatio, mu0: np.ndarray, mu1: np.ndarray, col_min: np.ndarray) -> None:
    """Re-check the decomposition pointwise with the core's own numbers: R(x_i) ≥ r0 Q0 + r1 Q1 +
    s·N (one neutral type), or R(x_i) ≥ r0 Q0 + r1 Q1 + Σ_y s_y δ_y with s_y = min(spare(y),
    w·N(y)/λ), λ = neutral_weight/neutral_share, and Σ_y s_y ≥ neutral_share (several types)."""
    diff = mu0 - mu1
    q0, q1 = np.maximum(diff, 0.0) / vr.beta, np.maximum(-diff, 0.0) / vr.beta
    wn = np.maximum(np.maximum(mu0 - vr.p_alpha * q0 - vr.alpha * q1,
                               mu1 - vr.alpha * q0 - vr.p_alpha * q1), 0.0)
    spare = col_min * (1.0 + 1e-12) + 1e-300 - vr.r0 * q0 - vr.r1 * q1
    if np.any(spare < 0.0):
        raise RuntimeError("internal error: analyzer clone rates violate the pointwise inequality")
    if vr.neutral_share == 0.0:
        return
    if vr.neutral_weight == vr.neutral_mass:  # one type: s·N(y) ≤ spare(y) at every output
        if np.any(vr.neutral_share * wn / vr.neutral_mass > spare):
            raise RuntimeError("internal error: analyzer neutral share violates the pointwise inequality")
        return
    lam = vr.neutral_weight / vr.neutral_share
    available = math.fsum(np.minimum(spare, wn / lam).tolist())
    if vr.neutral_share > available * (1.0 + 1e-12):
        raise RuntimeError("internal error: analyzer neutral share violates the pointwise inequality")


class _PairGroup(NamedTuple):
    """Victim pairs with the same frontier (to the key's digits): the points (r0, r1, share, λ),
    lowered to their minimum over the members, and the members (i, j)."""

    points: list[list[float]]
    members: list[tuple[int, int]]


def _key(value: float) -> float:
    return float(f"{value:.{_KEY_DIGITS}g}")


def analyze_pairs(matrix: np.ndarray) -> tuple[list[PairBound], dict[str, float], np.ndarray]:
    """Cover of all victim pairs of a validated matrix; also (p_max, beta_max) and all pair indices."""
    d = matrix.shape[0]
    col_min = matrix.min(axis=0)
    rows, cols = np.triu_indices(d, k=1)
    groups: dict[tuple[float, float, tuple[tuple[float, ...], ...]], _PairGroup] = {}
    generic: list[tuple[int, int, float, float, float]] = []  # (i, j, p, beta, q_pair)
    local_pairs: list[tuple[int, int]] = []
    p_max, beta_max = 1.0, 0.0
    chunk = max(1, _CHUNK_CELLS // matrix.shape[1])
    for start in range(0, rows.size, chunk):
        i_idx, j_idx = rows[start:start + chunk], cols[start:start + chunk]
        mu0, mu1 = matrix[i_idx], matrix[j_idx]
        dec = _pair_decomposition(mu0, mu1)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            top = np.maximum(mu0, mu1)
            ratio = np.where(top > 0, top / col_min[None, :], 1.0)
        q_pair = ratio.max(axis=1) * (1.0 + 4.0 * np.finfo(float).eps)
        for k in range(i_idx.size):
            beta, p = float(dec["beta"][k]), float(dec["p"][k])
            if beta == 0.0:
                continue  # identical laws: the neighbouring datasets are indistinguishable
            p_max, beta_max = max(p_max, p), max(beta_max, beta)
            if not math.isfinite(p):
                local_pairs.append((int(i_idx[k]), int(j_idx[k])))
                continue
            probe = VariationRatio(p, beta, p)
            q0, q1 = dec["pos"][k] / probe.beta, dec["neg"][k] / probe.beta
            wn = np.maximum(np.maximum(mu0[k] - probe.p_alpha * q0 - probe.alpha * q1,
                                       mu1[k] - probe.alpha * q0 - probe.p_alpha * q1), 0.0)
            w = probe.neutral_mass
            # w·N at rounding level (e.g. where μ0 = p·μ1 exactly) is treated as 0 for the search
            # where the 1e-9 shrink of rates and column minima covers it: s·N(y) = s·wN(y)/w ≤
            # 1e-10·m(y) for every share s ≤ 1. Elsewhere (an output the others rarely produce,
            # m(y) far below μ(y)) the raw value constrains the share. _verify re-checks the raw N.
            negligible = np.minimum(1e-12 * np.maximum(mu0[k], mu1[k]), 1e-10 * w * col_min)
            wn = np.where(wn <= negligible, 0.0, wn)
            neutral = wn / w if w > 0 else np.zeros_like(wn)
            frontier = _frontier(q0, q1, neutral, col_min * _SHRINK, probe.p_alpha)
            if not frontier:
                local_pairs.append((int(i_idx[k]), int(j_idx[k])))
                continue
            # λ = inf marks one neutral type
            points = [(r0, r1, share, math.inf) for r0, r1, share in frontier]
            points += _typed_points(q0, q1, neutral, col_min * _SHRINK, w, frontier[0])
            generic.append((int(i_idx[k]), int(j_idx[k]), p, probe.beta, float(q_pair[k])))
            key = (p, probe.beta, tuple(tuple(_key(v) for v in pt) for pt in points))
            group = groups.setdefault(key, _PairGroup([list(pt) for pt in points], []))
            for stored, pt in zip(group.points, points):
                for t in range(4):  # smaller rates, shares and λ stay valid for every member
                    stored[t] = min(stored[t], pt[t])
            group.members.append((int(i_idx[k]), int(j_idx[k])))
    cover: list[PairBound] = []
    if len(groups) <= MAX_PAIR_KINDS:
        for (p, beta, _), group in groups.items():
            candidates = []
            for r0, r1, share, lam in group.points:
                vr = _build_vr(p, beta, r0, r1, share, None if math.isinf(lam) else lam)
                for i, j in group.members:
                    _verify(vr, matrix[i], matrix[j], col_min)
                candidates.append(vr)
            cover.append(VariationRatioBound(list(dict.fromkeys(candidates))))
    else:
        cover_bins, more_local = _generic_bins(generic)
        cover.extend(cover_bins)
        local_pairs.extend(more_local)
    if local_pairs:
        idx = np.array(local_pairs)
        cover.append(LocalPairBound(matrix[idx[:, 0]], matrix[idx[:, 1]]))
    return cover, {"p_max": p_max, "beta_max": beta_max}, np.stack([rows, cols], axis=1)


def _generic_bins(
    pairs: list[tuple[int, int, float, float, float]],
) -> tuple[list[PairBound], list[tuple[int, int]]]:
    """Too many kinds of pairs: MAX_PAIR_KINDS bins of consecutive β, each one generic VR.

    For a pair with its own (p_k, β_k) and q_k = max_y max(μ0, μ1)(y)/min_x R(x)(y), the generic
    share is valid: R(x_i) ≥ max(μ0, μ1)/q_k = pα(Q0 + Q1)/q_k + w·N/q_k (docs/theory.md,
    "Decomposition"). The decomposition stays valid for any p ≥ p_k and q ≥ q_k, and with the
    generic share the bound is non-decreasing in β (docs/theory.md, "Monotonicity in β"), so (max
    p, max β, max q) over a bin covers every pair in it.
    """
    cover: list[PairBound] = []
    local: list[tuple[int, int]] = []
    ordered = sorted(pairs, key=lambda item: item[3])
    for chunk in np.array_split(np.arange(len(ordered)), MAX_PAIR_KINDS):
        if chunk.size == 0:
            continue
        members = [ordered[int(c)] for c in chunk]
        p = max(m[2] for m in members)
        beta = max(m[3] for m in members)
        q = max(m[4] for m in members)
        try:
            if not math.isfinite(q):
                raise ValueError("q_pair is infinite")
            cover.append(VariationRatioBound([VariationRatio(p, beta, q)]))
        except ValueError:
            local.extend((m[0], m[1]) for m in members)
    return cover, local


def _restricted_set_levels(mu0: np.ndarray, mu1: np.ndarray, others: np.ndarray,
                           s0: np.ndarray, s1: np.ndarray, max_levels: int) -> list[float]:
    """Thresholds t for the restricted sets S_j(t) = {o ∈ S_j : π(o) ≤ t·μ_j(o)} (π = ``others``).

    The distinct levels of π/μ_j on S0 ∪ S1 (9 significant digits), without the largest (t at
    the largest level gives the full sets). At most ``max_levels``: the two smallest (the outputs
    the others produce least often relative to the victim) and the median level.
    """
    ratios = np.concatenate([others[s0] / mu0[s0], others[s1] / mu1[s1]])
    levels = sorted({float(f"{r:.9g}") for r in ratios.tolist()})[:-1]
    if len(levels) > max_levels:
        picks = [levels[0], levels[1], levels[len(levels) // 2]] if len(levels) > 2 else levels
        levels = list(dict.fromkeys(picks))[:max_levels]
    return levels


def matrix_lower_bound(matrix: np.ndarray, n: int, max_configurations: int = 4,
                       max_levels: int = 3) -> InstanceLowerBound | None:
    """Certified lower bound: trinomial projections of the pair (x⁰, x¹) with the largest β (exact.py).

    Configurations: all others holding the same input c, for every input if the matrix has at most
    ``max_configurations`` rows, else for x⁰, x¹ and the inputs putting the least mass on S0 ∪ S1
    and on S0 (S0 = {μ0 > μ1}, S1 = {μ1 > μ0}, ignoring relative differences below 1e-9).

    Sets: for each configuration, the full (S0, S1) and up to ``max_levels`` restricted pairs
    S_j(t) = {o ∈ S_j : π_c(o) ≤ t·μ_j(o)} (π_c = R(c); thresholds from
    :func:`_restricted_set_levels`). Any two disjoint output sets give a valid projection (a
    post-processing: the counts of shuffled messages in S0(t) and S1(t)), with masses
    (R(x)(S0(t)), R(x)(S1(t))) read off the matrix; the reported bound is the maximum over all
    instances, each a certified lower bound. Dropping outputs the others produce often (relative
    to the victim) removes noise the victim's message hides in: for unary encodings, others at a
    third value y, it selects bit y = 0 (RAPPOR ε0 = 4, d = 5, n = 1e4, δ = 1e-8: lower ε from
    0.344 to 0.418, as the closed-form third-bit projection of the catalog).

    None when no projection separates the pair (its rows differ only below the 1e-9 relative
    threshold, e.g. by a subnormal entry): the reported lower bound is then 0.
    """
    d = matrix.shape[0]
    best, best_pair = -1.0, (0, 1)
    for i in range(d):
        tv = 0.5 * np.abs(matrix[i] - matrix).sum(axis=1)
        j = int(np.argmax(tv))
        if tv[j] > best:
            best, best_pair = float(tv[j]), (i, j)
    i, j = best_pair
    mu0, mu1 = matrix[i], matrix[j]
    # outputs whose two masses differ only by rounding (e.g. products of the same factors in
    # another order) are left out: they carry no information about the victim
    s0, s1 = mu0 > mu1 * (1.0 + 1e-9), mu1 > mu0 * (1.0 + 1e-9)
    mass0, mass1 = matrix[:, s0].sum(axis=1), matrix[:, s1].sum(axis=1)
    if d <= max_configurations:
        configs = list(range(d))
    else:
        configs = [i, j, int(np.argmin(mass0 + mass1)), int(np.argmin(mass0))]
    configs = list(dict.fromkeys(configs))
    instances: dict[tuple[float, ...], tuple[tuple[float, float, float], tuple[float, float, float],
                                             tuple[float, float, float], str]] = {}
    for c in configs:
        others = matrix[c]
        set_pairs = [(s0, s1, "")]
        for t in _restricted_set_levels(mu0, mu1, others, s0, s1, max_levels):
            limit = t * (1.0 + 1e-8)  # levels are rounded to 9 significant digits
            set_pairs.append((s0 & (others <= limit * mu0), s1 & (others <= limit * mu1),
                              f", outputs with pi/mu <= {t:.6g}"))
        for set0, set1, label in set_pairs:
            # the rest outside S0 ∪ S1 summed directly, not 1 − R(S0) − R(S1): a near-deterministic
            # row loses its small rest mass to rounding there ([1e-17, 1.0]: rest 0 would make the
            # instance's likelihood ratio infinite and its "lower bound" exceed the exact value)
            outside = ~(set0 | set1)
            masses = [(math.fsum(row[set0].tolist()), math.fsum(row[set1].tolist()),
                       math.fsum(row[outside].tolist())) for row in (mu0, mu1, others)]
            if masses[0] == masses[1]:
                continue  # the projection does not separate the pair
            (u0, u1, _), (v0, v1, _), (o0, o1, _) = masses
            # relabelling S0 <-> S1 or the two victim inputs gives the same divergence (δ is the
            # max of both directions): one instance per equivalence class
            key = min(tuple(float(f"{x:.12g}") for x in variant) for variant in (
                (u0, u1, v0, v1, o0, o1), (u1, u0, v1, v0, o1, o0),
                (v0, v1, u0, u1, o0, o1), (v1, v0, u1, u0, o1, o0)))
            instances.setdefault(key, (masses[0], masses[1], masses[2],
                                       f"pair ({i}, {j}), others all holding input {c}{label}"))
    pairs = [trinomial_projection(n, v0, v1, other, description)
             for v0, v1, other, description in instances.values()]
    if not pairs:
        return None
    return InstanceLowerBound(pairs, "finite matrix: trinomial projections of explicit configurations")


def from_matrix(matrix: Sequence[Sequence[float]] | np.ndarray, name: str = "matrix") -> Randomizer:
    """Analyze a finite local randomizer (rows = inputs, columns = outputs, rows sum to 1).

    Returns a :class:`Randomizer` whose shuffled bound is the maximum over victim pairs of each
    pair's own variation-ratio bound (module docstring), with a certified lower bound from the
    trinomial projection of the pair with the largest total variation. It compares equal to (and
    pickles as) any analysis of the same validated matrix under the same ``name``.
    """
    return _analyze(validate_matrix(matrix), name)


def _analyze(mat: np.ndarray, name: str) -> Randomizer:
    """:func:`from_matrix` of a validated (row-renormalised) matrix; also the unpickling path,
    which must not renormalise again (that could move entries by an ulp)."""
    cover, extremes, pairs = analyze_pairs(mat)
    p_max, beta_max = extremes["p_max"], extremes["beta_max"]
    fallbacks: list[PairBound] = []
    summary = None
    if beta_max == 0.0:
        summary = None
    elif math.isfinite(p_max):
        summary = VariationRatio(p_max, beta_max, p_max)
        fallbacks.append(VariationRatioBound([summary]))
    if pairs.size and pairs.shape[0] * mat.shape[1] <= 4 * _CHUNK_CELLS:
        fallbacks.append(LocalPairBound(mat[pairs[:, 0]], mat[pairs[:, 1]]))
    if not cover:  # every pair identical: nothing to protect
        cover = [LocalPairBound(mat[:1], mat[:1])]
    randomizer = Randomizer(
        name,
        {"inputs": mat.shape[0], "outputs": mat.shape[1], "p_max": p_max, "beta_max": beta_max},
        cover,
        variation_ratio=summary,
        fallbacks=fallbacks,
        matrix=mat,
        lower_bound=functools.partial(matrix_lower_bound, mat) if beta_max > 0 else None,
        notes="analyzed matrix: per-pair exact decomposition, rates from column minima",
    )
    randomizer = attach_binary_reduction(attach_multilevel(randomizer))
    analyzed = randomizer.matrix  # the read-only copy the Randomizer keeps
    assert analyzed is not None  # (given above)
    identity = ("matrix", name, analyzed.shape, hashlib.sha256(analyzed.tobytes()).hexdigest())
    randomizer._record_origin(functools.partial(_reanalyze, analyzed, name), identity)
    return randomizer


def _reanalyze(matrix: np.ndarray, name: str) -> Randomizer:
    """Unpickling of a :func:`from_matrix` randomizer: the stored matrix is checked (stochastic,
    within tolerance) and analyzed as it is."""
    return _analyze(check_stochastic_matrix("matrix", matrix, min_rows=2), name)


__all__ = ["from_matrix", "validate_matrix", "analyze_pairs", "matrix_lower_bound"]
