"""The neutral-aware bound at every ε at once, from the loss law of a dominating pair
(docs/theory.md, "Batched evaluation from the dominating pair").

The neutral-aware bound (:mod:`dpacct_shuffle.core.bound`) is the hockey-stick divergence of an
explicit pair of count laws. For a VariationRatio with equal clone rates r0 = r1 = r (q0 = q1) and
n users, write m_a = pα, m_b = α (the victim's masses on its two clone types), λ = neutral weight
/ s, and M for the law of (A, B, K, rest) ~ Multinomial(n; r, r, s, ρ). The pair is

    P(a, b, k) = M(a, b, k)·N/n,  Q(a, b, k) = M(a, b, k)·D/n,
    N = m_a·a/r + m_b·b/r + λk,   D = m_b·a/r + m_a·b/r + λk,

plus a common atom of mass w − λs (M_n(a, b, k)·a/(n·r) = M_{n−1}(a − 1, b, k): the victim is an
A-clone w.p. m_a, …), and D_{e^ε}(P‖Q) = E_M[(N − e^ε·D)⁺]/n is the core's
(1/n)·E[(c_A·A + c_B·B + c_K·K)⁺]. With Δ = a − b, c = a + b, κ = (m_a + m_b)/(2r),
h = (m_a − m_b)/(2r) and T = κc + λk:

    N = T + hΔ,  D = T − hΔ,  privacy loss ℓ(Δ, T) = ln((T + hΔ)/(T − hΔ)).

:func:`batched_delta` builds, once per (VariationRatio, n), a finite pair that dominates this one
at every e^ε ≥ 0 (three operations, each proven in docs/theory.md), and returns its hockey-stick
curve, evaluated at any ε by a binary search and two cumulative sums:

1. *Lowering the common level.* Writing N = N' + γ, D = D' + γ with γ ≥ 0, N', D' ≥ 0 in a cell
   and moving γ·M/n of both laws to a shared atom never lowers a hockey-stick divergence
   ((x + y)⁺ ≤ x⁺ + y⁺ and (1 − e^ε)⁺ = 0). Within a block of C values [c0, c1], T = κc + λk is
   lowered to a level t_j ≤ κc0 + λk' of a global geometric grid of ratio 1 + η, with K' ~ Bin(n − c1, s')
   coupled below K | c ~ Bin(n − c, s') (c ≤ c1).
2. *Convex order of Δ.* Given the block and the level, the divergence is E[((1 − x)t_j +
   (1 + x)hΔ)⁺] times the block's weight, convex in Δ. Δ | C = c is a symmetric ±1 walk of c steps
   (π = 1/2 since r0 = r1), and the c1-step walk is a mean-preserving spread of it, so the block's
   mixture of walks is replaced by the c1-step walk (E[Δ] = 0 keeps the total mass). Blocks are at
   most 4η·c0 wide (Var Δ grows by at most 4η relative), single C values when that is below 2, and
   end below c0·(p + 1)/((p − 1)(1 + g)), g the levels' growth: a block's levels are at least
   κc0/(1 + g), so t_j − hΔ > 0 stays true for |Δ| ≤ c1 (levels where it fails are truncated).
3. *Moving P-mass to larger losses.* Mass truncated from the windows of C, K' and Δ is put at the
   largest loss any of its cells can have (ε0 = ln p for cells of the pair itself; slightly more
   for cells of a spread block), which can only raise E_P[(1 − e^{ε − L})⁺]; negative losses do not
   contribute at ε ≥ 0 and are dropped, and so are cells of P-mass below 1e-25 (their mass joins
   the truncated mass). Cell masses are rounded up by a relative ``mass_rtol`` and losses by
   ``_LOSS_RTOL`` (the value is non-decreasing in both).

*Numerics.* The pmfs of C, of the walks and of K' come from
:class:`~dpacct_shuffle.core.binomial_rows.BinomialRows` (shared tables of ratios, a relative
error bound ``rtol`` for every value, subnormal results off by at most ``PMF_ABSOLUTE_ERROR``). A
block's K' band masses are plain sums of its nonnegative pmf values (``np.add.reduceat``, relative
error ≤ (terms)·u), never differences of a cumulative sum; the block masses and the matrix product
over blocks are sums of nonnegative terms too. So every cell mass is within a relative
c_rtol + walk_rtol + k_rtol + sf_rtol + 2·(C values + span + blocks + 16)·u of the exact one
(sf_rtol for scipy's sf of the mass above a K' window, added to a band), and ``mass_rtol`` =
max(``_MASS_RTOL``, 1.01 × that); the values lost to subnormals (at most ``PMF_ABSOLUTE_ERROR`` per
pmf value, times max(m_a/r, λ)) join the truncated mass. The band of a k is decided by cuts
⌈t_j(1 + 1e-9)/λ − κc0/λ⌉: the margin 1e-9·t_j/λ exceeds the rounding error of the difference and
of its terms (≤ 6u·t_j/λ wherever it is ≥ 0), so every k of band j has κc0 + λk ≥ t_j. (Where a
window's counts span more than twice as many levels as they have values, the cuts of every level
are not formed: each k's band, the last level whose cut is ≤ k, is found by a binary search
corrected on the same computed cuts, and the pmf is summed over runs of counts of one band: the
same bands and sums.) The cell c = k = 0 (T = 0, no P-mass) leaves the truncated mass as
P[K' = 0] rounded down, from scipy's cdf rounded up.

The relative loss error of steps 1–2 is about η (``lowering``); the curve is an upper bound at
every ε ≥ 0 and about η·dlnδ/dlnε above the exact pair in relative terms.
"""

from __future__ import annotations

import functools
import math
from typing import Protocol

import numpy as np
from scipy import special

from dpacct_shuffle.core.binomial import binomial_cdf, binomial_sf
from dpacct_shuffle.core.binomial_rows import PMF_ABSOLUTE_ERROR, BinomialRows
from dpacct_shuffle.core.bound import MAX_EVALUATED_USERS, VariationRatio
from dpacct_shuffle.core.problem import UNIT_ROUNDOFF, neutral_rate, special_function_rtol
from dpacct_shuffle.core.validation import check_epsilon, check_num_users, check_range

DEFAULT_LOWERING = 5e-4
DEFAULT_BATCHED_TAIL = 1e-18
# window tail of the equal-clone-rate pair curve (batched_delta): its truncated mass, placed at the
# largest loss, is then about 1e-22 — below the 5e-21 per side an accountant cuts from a round's
# PLD (accountants.TAIL_TRUNCATION), so a round's pmf is not stretched out to ε0 by that mass
PAIR_CURVE_TAIL = 1e-22
# relative error allowed to the masses at least (the computed bound of the pmfs, sums and matrix
# product, about 1e-10, is used when larger)
_MASS_RTOL = 1e-6
_LOSS_RTOL = 1e-12
# cells of the T grid at most (bounds the work for small n, where T spans a wide range)
_MAX_LEVELS = 20_000
# cells with P-mass below this join the truncated mass (placed at the largest loss): together well
# below the truncated windows' mass (about 1e-21)
_NEGLIGIBLE_MASS = 1e-25
# blocks (and cells) are processed in pieces of about this many values: large temporaries cost
# page faults on every call
_PIECE = 1 << 15
# blocks per matrix product (each restricted to the levels its blocks use)
_PRODUCT_BLOCKS = 64


def supports_batched_delta(vr: object) -> bool:
    """Whether :func:`batched_delta` applies: a VariationRatio with finite p, β > 0 and equal clone
    rates r0 = r1 > 0 (q0 = q1: the pair is symmetric)."""
    return (isinstance(vr, VariationRatio) and math.isfinite(vr.p) and vr.beta > 0.0
            and vr.alpha > 0.0 and vr.r0 == vr.r1 and vr.r0 > 0.0)


def _window_bounds(trials: int, rate: float, z: float) -> tuple[int, int]:
    """[lo, hi] = mean ∓ (z standard deviations + 2) of Bin(trials, rate), within [0, trials]."""
    mean = trials * rate
    half = z * math.sqrt(trials * rate * (1.0 - rate) + 1.0) + 2.0
    return max(0, math.floor(mean - half)), min(trials, math.ceil(mean + half))


def _window(trials: int, rate: float, z: float) -> tuple[int, int, float]:
    """:func:`_window_bounds` and the certified mass of Bin(trials, rate) outside them (scipy's
    cdf/sf, rounded up by special_function_rtol)."""
    lo, hi = _window_bounds(trials, rate, z)
    outside = float(binomial_cdf(lo - 1, trials, rate)) if lo > 0 else 0.0
    outside += float(binomial_sf(hi, trials, rate)) if hi < trials else 0.0
    return lo, hi, outside * (1.0 + float(special_function_rtol(trials)))


def _blocks(c_lo: int, c_hi: int, lowering: float, p: float,
            growth: float) -> tuple[np.ndarray, np.ndarray]:
    """Block starts c0 and ends c1 covering [c_lo, c_hi] (step 2 of the module docstring): from
    c0, the block ends at max(c0, min(c_hi, c0 + ⌊4η·c0⌋ − 1, ⌊c0·(p + 1)/((p − 1)(1 + g))⌋)) and
    the next one starts after it. (A block's levels are at least κc0/(1 + g), g the levels'
    growth, so below that end they stay above h·c1 = κc1·(p − 1)/(p + 1).)"""
    spread_limit = (p + 1.0) / ((p - 1.0) * (1.0 + growth)) * (1.0 - 1e-12)
    c = np.arange(c_lo, c_hi + 1, dtype=np.int64)
    width = np.maximum(1, np.floor(4.0 * lowering * c)).astype(np.int64)
    end_of = np.maximum(c, np.minimum(np.minimum(c_hi, c + width - 1),
                                      np.floor(c * spread_limit).astype(np.int64))).tolist()
    starts, ends = [], []
    c0 = c_lo
    while c0 <= c_hi:
        starts.append(c0)
        c0 = end_of[c0 - c_lo]
        ends.append(c0)
        c0 += 1
    return np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64)


def _cuts(t_over_lam: np.ndarray, offsets: np.ndarray, trials: np.ndarray) -> np.ndarray:
    """First k of each band of each block, ⌈t/λ·(1 + 1e-9) − κc0/λ⌉ clipped to [0, trials + 1],
    for the levels t of a row of ``t_over_lam`` (t/λ; +inf for "no further level") and
    ``offsets`` = κc0/λ. The margin 1e-9·t/λ exceeds the rounding error of the difference and of
    its terms (≤ 6u·t/λ wherever it is ≥ 0), so every k put in band j has κc0 + λk ≥ t_j."""
    cuts = np.ceil(t_over_lam * (1.0 + 1e-9) - offsets[:, None])
    clipped: np.ndarray = np.clip(cuts, 0, trials[:, None] + 1).astype(np.int64)
    return clipped


def _level_windows(t_over_lam: np.ndarray, offsets: np.ndarray, k_first: np.ndarray,
                   top_k: np.ndarray, trials: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each block, the first level j_b and the cuts of levels j_b … j_b + W (W common) such
    that every k of [k_first, top_k] lies in one of the bands j_b … j_b + W − 1: checked on the
    exact cuts (cut of j_b ≤ k_first, cut of j_b + W > top_k or no level j_b + W), starting from a
    guess by the levels' values and widened until the check holds (all levels always pass)."""
    levels = len(t_over_lam)
    t_ext = np.append(t_over_lam, np.inf)
    first_level, width = _level_guess(t_over_lam, offsets, k_first, top_k)
    while True:
        index = np.minimum(first_level[:, None] + np.arange(width + 1), levels)
        cuts = _cuts(t_ext[index], offsets, trials)
        low_ok = cuts[:, 0] <= k_first
        high_ok = (cuts[:, -1] > top_k) | (first_level + width >= levels)
        if np.all(low_ok) and np.all(high_ok):
            return first_level, cuts
        first_level = np.where(low_ok, first_level, 0)
        if not np.all(high_ok):
            width = min(levels, 2 * width)


def _level_guess(t_over_lam: np.ndarray, offsets: np.ndarray, k_first: np.ndarray,
                 top_k: np.ndarray) -> tuple[np.ndarray, int]:
    """A guess, by the levels' values, of each block's first level and of the number of levels
    (common) that [k_first, top_k] spans (:func:`_level_windows` widens it until it holds)."""
    first_level = np.searchsorted(t_over_lam, (offsets + k_first) * (1.0 - 1e-7), side="right")
    first_level = np.maximum(first_level - 1, 0)
    last_level = np.searchsorted(t_over_lam, (offsets + top_k + 1) * (1.0 + 1e-7), side="right")
    return first_level, min(len(t_over_lam), int(np.max(last_level - first_level)) + 2)


def _levels_of_counts(t_over_lam: np.ndarray, offsets: np.ndarray,
                      counts: np.ndarray) -> np.ndarray:
    """Level of each count k of each row b (``counts[b]``, each k ≤ trials_b): the last j with
    cut_j ≤ k, cut_j = ⌈t_j/λ·(1 + 1e-9) − κc0/λ⌉ computed as in :func:`_cuts` (−1: none).

    For an integer k, ⌈x⌉ ≤ k ⟺ x ≤ k, and the computed x_j = fl(fl(t_j/λ·(1 + 1e-9)) − offset)
    is non-decreasing in j (rounding is monotone), so the levels with cut_j ≤ k are a prefix:
    a binary search of k + offset among the t_j/λ·(1 + 1e-9) gives its length up to rounding,
    corrected step by step on the computed x_j until the prefix condition holds exactly. (Clipping
    a cut to [0, trials + 1] changes no comparison with a k in [0, trials].)"""
    scaled = t_over_lam * (1.0 + 1e-9)
    last = len(scaled) - 1
    shift = offsets[:, None]
    count: np.ndarray = np.searchsorted(scaled, (counts + shift).ravel(),
                                        side="right").reshape(counts.shape)
    while True:
        up = (count <= last) & (scaled[np.minimum(count, last)] - shift <= counts)
        down = (count > 0) & (scaled[np.maximum(count - 1, 0)] - shift > counts)
        if not (np.any(up) or np.any(down)):
            return count - 1
        count += up.astype(np.int64) - down.astype(np.int64)


def _sparse_band_entries(rows: BinomialRows, t_over_lam: np.ndarray, offsets: np.ndarray,
                         k_first: np.ndarray, trials: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The band masses of :func:`_band_sums` on the cuts of :func:`_level_windows`, when the
    window's counts span many more levels than they have values (each count is then mostly alone
    in its band), as entries: the level of every count (:func:`_levels_of_counts`), the pmf summed
    over each run of counts of one level (the same terms, in the same order, as a band of
    :func:`_band_sums`), times the rows' factors.

    Returns (first level of each row: the level of its k_first; the entries' rows (ascending),
    columns (levels from the row's first one; one entry per row and column) and masses; the column
    of the level of top_k = k_first + span: where the mass above the window goes); counts above
    trials have pmf 0 and join the band of ``trials``."""
    blocks, span = len(k_first), rows.width
    step = max(1, _PIECE // (span + 1))
    first_level = np.empty(blocks, dtype=np.int64)
    top_band = np.empty(blocks, dtype=np.int64)
    pieces: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    buffer = np.empty((min(step, blocks), span))
    for lo in range(0, blocks, step):
        hi = min(lo + step, blocks)
        counts = np.minimum(k_first[lo:hi, None] + np.arange(span + 1, dtype=np.int64)[None, :],
                            trials[lo:hi, None])
        # a row whose counts all exceed trials (pmf 0) may have none with a level: level 0
        level = np.maximum(_levels_of_counts(t_over_lam, offsets[lo:hi], counts), 0)
        first_level[lo:hi] = level[:, 0]
        local = level - level[:, :1]
        top_band[lo:hi] = local[:, span]
        starts = np.ones((hi - lo, span), dtype=bool)
        starts[:, 1:] = local[:, 1:span] != local[:, :span - 1]
        flat = np.flatnonzero(starts)
        rows.fill(buffer[:hi - lo], lo, hi, scaled=False)
        sums = np.add.reduceat(buffer[:hi - lo].ravel(), flat)
        row, column = np.divmod(flat, span)
        pieces.append((row + lo, local[row, column], sums * rows.row_factors[row + lo]))
    return (first_level, np.concatenate([piece[0] for piece in pieces]),
            np.concatenate([piece[1] for piece in pieces]),
            np.concatenate([piece[2] for piece in pieces]), top_band)


def _band_sums(rows: BinomialRows, edges: np.ndarray) -> np.ndarray:
    """S[b, j] = Σ_{e_j ≤ i < e_{j+1}} pmf[b, i] for the pmf rows of ``rows`` and edges
    e = ``edges[b]`` clipped to the row: a few rows at a time are laid end to end (each followed
    by a 0) and summed per band by one ``np.add.reduceat``, so each band is a plain sum of its
    nonnegative terms (relative error ≤ (terms)·u)."""
    blocks, width = len(edges), rows.width
    stride = width + 1
    local = np.clip(edges, 0, width)
    step = max(1, _PIECE // stride)
    offsets = local + stride * (np.arange(blocks, dtype=np.int64) % step)[:, None]
    sums = np.empty(edges.shape)
    buffer = np.zeros((min(step, blocks), stride))
    for lo in range(0, blocks, step):
        hi = min(lo + step, blocks)
        rows.fill(buffer[:hi - lo, :width], lo, hi, scaled=False)
        # (the entry of a row's last edge sums into the next row: it is not used)
        sums[lo:hi] = np.add.reduceat(buffer[:hi - lo].ravel(),
                                      offsets[lo:hi].ravel()).reshape(hi - lo, -1)
    # (reduceat returns the first term for an empty band); then the rows' factors
    return np.where(local[:, 1:] > local[:, :-1], sums[:, :-1], 0.0) * rows.row_factors[:, None]


class BatchedDelta:
    """Hockey-stick curve δ(ε), ε ≥ 0, of a finite pair dominating the neutral-aware pair of one
    VariationRatio and n users (see the module docstring); build with :func:`batched_delta`.

    Attributes:
      losses: privacy losses of the positive-loss cells, increasing (rounded up).
      truncated_mass: P-mass placed at ``top_loss`` (the truncated windows).
      top_loss: largest loss of any truncated cell.
    """

    __slots__ = ("losses", "_p_tail", "_q_tail", "_sum_rtol", "truncated_mass", "top_loss",
                 "epsilon0")

    def __init__(self, losses: np.ndarray, masses: np.ndarray, truncated_mass: float,
                 top_loss: float, epsilon0: float) -> None:
        order = np.argsort(losses, kind="stable")
        self.losses = losses[order]
        masses = masses[order]
        # Σ_{j ≥ i} P_j and Σ_{j ≥ i} P_j·e^{−ℓ_j} (reverse cumulative sums, one trailing zero)
        self._p_tail = np.zeros(len(masses) + 1)
        self._q_tail = np.zeros(len(masses) + 1)
        if len(masses):
            np.cumsum(masses[::-1], out=self._p_tail[-2::-1])
            q_masses = np.exp(-self.losses)
            q_masses *= masses
            np.cumsum(q_masses[::-1], out=self._q_tail[-2::-1])
        # relative error of a reverse cumulative sum of N nonnegative terms (≤ (N − 1)·u), of the
        # terms themselves (P·e^{−ℓ}, e^ε: a few u) and of the final sum, with room to spare
        self._sum_rtol = max(1e-12, 2.0 * (len(masses) + 4) * UNIT_ROUNDOFF)
        self.truncated_mass = truncated_mass
        self.top_loss = top_loss
        self.epsilon0 = epsilon0

    def deltas(self, epsilons: np.ndarray) -> np.ndarray:
        """Upper bounds on δ(ε) at every ε ≥ 0 of ``epsilons`` (0 at and above ε0).

        δ(ε) = Σ_{ℓ_j > ε} P_j(1 − e^{ε − ℓ_j}) = S_P − e^ε·S_Q over the cells above ε, plus the
        truncated mass's term R; the cumulative sums and the terms carry a relative error
        ≤ (cells + 3)·u, covered by adding max(1e-12, 2·(cells + 4)·u)·(S_P + e^ε·S_Q + R).
        """
        eps = np.asarray(epsilons, dtype=np.float64)
        first = np.searchsorted(self.losses, eps, side="right")
        s_p = self._p_tail[first]
        s_q = self._q_tail[first] * np.exp(eps)
        rest = self.truncated_mass * np.maximum(-np.expm1(eps - self.top_loss), 0.0)
        value = s_p - s_q + rest + self._sum_rtol * (s_p + s_q + rest)
        value = np.clip(value, 0.0, 1.0)
        return np.where(eps >= self.epsilon0, 0.0, value)

    def delta(self, epsilon: float) -> float:
        """Upper bound on δ(ε) at one ε ≥ 0 (:meth:`deltas`, scalar arithmetic)."""
        eps = check_epsilon(epsilon)
        if eps >= self.epsilon0:
            return 0.0
        first = int(np.searchsorted(self.losses, eps, side="right"))
        s_p = float(self._p_tail[first])
        s_q = float(self._q_tail[first]) * math.exp(eps)
        rest = self.truncated_mass * max(-math.expm1(eps - self.top_loss), 0.0)
        value = s_p - s_q + rest + self._sum_rtol * (s_p + s_q + rest)
        return min(1.0, max(0.0, value))


def batched_delta(vr: VariationRatio, n: int, lowering: float = DEFAULT_LOWERING,
                  tail: float = PAIR_CURVE_TAIL) -> BatchedDelta:
    """The curve of :class:`BatchedDelta` for ``vr`` and n users (cached per arguments).

    Args:
      vr: a VariationRatio with :func:`supports_batched_delta`.
      n: number of users ≥ 1 (evaluated at ``MAX_EVALUATED_USERS`` above it: the bound is
        non-increasing in n).
      lowering: η in (0, 0.01], the relative loss error allowed to steps 1–2.
      tail: mass left out of each window (C, K', Δ) in units of standard deviations' tail level.
    """
    if not supports_batched_delta(vr):
        raise ValueError("vr must be a VariationRatio with finite p, beta > 0 and equal clone rates "
                         f"r0 = r1 (q0 = q1), got {vr!r}")
    users = min(check_num_users(n), MAX_EVALUATED_USERS)
    eta = check_range("lowering", lowering, 0.0, 0.01, low_open=True)
    level = check_range("tail", tail, 1e-300, 1e-6)
    return _batched_delta(vr, users, eta, level)


@functools.lru_cache(maxsize=1024)
def _batched_delta(vr: VariationRatio, users: int, eta: float, tail: float) -> BatchedDelta:
    r, m_a, m_b = vr.r0, vr.p_alpha, vr.alpha
    share = vr.neutral_share
    lam = vr.neutral_weight / share if share > 0.0 else 0.0
    r_c = min(2.0 * r, 1.0)
    k_rate = neutral_rate(share, r_c) if lam > 0.0 else 0.0
    neutral = _OneNeutralType(lam, k_rate) if k_rate > 0.0 else None
    # N/n ≤ max(m_a/r, λ)·(a + b + k)/n ≤ max(m_a/r, λ) for every cell, spread cells included
    factor = max(m_a / r, lam) * (1.0 + 1e-12)
    kappa = (m_a + m_b) / (2.0 * r)
    return pair_curve(users, eta, tail, kappa=kappa, h=(m_a - m_b) / (2.0 * r),
                      p=vr.p, r_c=r_c, factor=factor, neutral=neutral,
                      step_floor=min(kappa, lam) if lam > 0.0 else kappa, epsilon0=vr.epsilon0)


class NeutralCounts(Protocol):
    """The neutral part W of T = κc + W given the block (its law under the users left after the
    block's largest C, lowered as Lemma 1 allows): window ends and band masses."""

    def window(self, trials: int, z: float) -> tuple[float, float]:
        """(lowest, highest) W of the window of ``trials`` users."""

    def bands(self, trials: np.ndarray, starts: np.ndarray, t_grid: np.ndarray, kappa: float,
              z: float) -> "_Bands":
        """Band masses P[κc0 + W' ∈ [t_j, t_{j+1})] of every block (see :class:`_Bands`)."""


class _OneNeutralType:
    """W = λK, K' ~ Bin(trials, s') (the VariationRatio's neutral clones)."""

    def __init__(self, lam: float, k_rate: float) -> None:
        self.lam, self.k_rate = lam, k_rate

    def window(self, trials: int, z: float) -> tuple[float, float]:
        lo, hi = _window_bounds(trials, self.k_rate, z) if trials > 0 else (0, 0)
        return self.lam * lo, self.lam * hi

    def bands(self, trials: np.ndarray, starts: np.ndarray, t_grid: np.ndarray, kappa: float,
              z: float) -> "_Bands":
        return _Bands.of_neutral_counts(trials, kappa * starts, t_grid, self.lam, self.k_rate, z)


def pair_curve(users: int, eta: float, tail: float, *, kappa: float, h: float, p: float,
               r_c: float, factor: float, neutral: NeutralCounts | None, step_floor: float,
               epsilon0: float) -> BatchedDelta:
    """The curve of the module docstring for the pair P = M·N/n, Q = M·D/n with N = T + hΔ,
    D = T − hΔ, T = κc + W, C = A + B ~ Bin(n, r_c) with Δ | C a symmetric walk, and W the neutral
    part (``neutral``; None: W = 0). ``factor`` ≥ N/(a + b + k) on every cell (P-mass per M-mass
    per user); p = (κ + h)/(κ − h) the pair's largest likelihood ratio; ``epsilon0`` its ε0;
    ``step_floor`` > 0 the lowest level when the windows reach T = 0 (at most the smallest
    positive T: κ or a neutral weight)."""
    z = float(-special.ndtri(tail)) + 1.0

    # C window: P-mass outside [c_lo, c_hi] ≤ mass of C' ~ Bin(n − 1, r_c) outside [c_lo, c_hi − 1]
    # (C = C' + V, V ∈ {0, 1} the victim's own type)
    if users == 1:
        c_lo, c_hi, truncated = 0, 1, 0.0
    else:
        c_lo, c_hi, outside = _window(users - 1, r_c, z)
        c_hi = min(users, c_hi + 1)
        truncated = outside * factor
    # levels t_j = t_min·(1 + g)^j, g = η (at most _MAX_LEVELS levels), from the smallest positive T
    # in use (T = 0 only for c = k = 0, a cell with N = D = 0)
    if neutral is not None:
        w_lo = neutral.window(users - c_hi, z)[0] if users > c_hi else 0.0
        w_hi = neutral.window(users - c_lo, z)[1]
    else:
        w_lo = w_hi = 0.0
    t_min = kappa * c_lo + w_lo
    if not t_min > 0.0:
        t_min = step_floor
    # (slightly below the lowest level in use, so that the float margin of the cuts keeps it)
    t_min *= 1.0 - 1e-9
    t_max = max(kappa * c_hi + w_hi, t_min)
    growth = max(eta, math.expm1(math.log(t_max / t_min) / _MAX_LEVELS))
    levels = int(math.floor(math.log(t_max / t_min) / math.log1p(growth))) + 1
    t_grid = t_min * np.exp(math.log1p(growth) * np.arange(levels, dtype=np.float64))

    starts, ends = _blocks(c_lo, c_hi, eta, p, growth)
    c_pmf = BinomialRows(np.array([users]), np.array([c_lo]), c_hi - c_lo + 1, r_c)
    block_mass = np.add.reduceat(c_pmf.values()[0], starts - c_lo)
    walks = _Walks(ends, block_mass, int(max(1, min(c_hi, math.ceil(z * math.sqrt(c_hi) + 2.0)))))
    truncated += walks.truncated * factor

    if neutral is not None:
        bands = neutral.bands(users - ends, starts, t_grid, kappa, z)
    else:  # W = 0: one level per block
        level_of_block = np.floor(np.log(np.maximum(kappa * starts, t_min) / t_min)
                                  / math.log1p(growth) * (1.0 - 1e-12) - 1e-9)
        bands = _Bands(np.clip(level_of_block, 0, levels - 1).astype(np.int64),
                       np.ones((len(starts), 1)), np.zeros(len(starts)), 0.0, 0)
    # levels with t_j ≤ h·c1 (the lowered D could vanish in the block) join the truncated mass
    bands.drop_levels_below(np.where(ends > 0, np.searchsorted(t_grid, h * ends * (1.0 + 1e-9),
                                                               side="right"), 0))
    truncated += float(np.sum(block_mass * bands.below)) * factor
    # relative error of the cell masses: the pmfs, their sums (C blocks, K' bands, the product
    # over blocks, Δ-wise weights) and products; values lost to subnormals join the truncated mass
    # (and scipy's sf for the mass above each K' window, added to a band)
    mass_rtol = max(_MASS_RTOL, 1.01 * (
        c_pmf.rtol + walks.rtol + bands.rtol + float(special_function_rtol(users))
        + (2.0 * (c_hi - c_lo + bands.span + len(starts)) + 32.0) * UNIT_ROUNDOFF))
    pmf_values = c_hi - c_lo + 1 + walks.values + bands.values
    truncated += pmf_values * PMF_ABSOLUTE_ERROR * factor

    # cells (t_j, Δ): lowered P-mass and loss; the negligible ones join the truncated mass
    losses, masses = [], []
    scale = (1.0 + mass_rtol) / users
    t_scaled = t_grid * scale
    for deltas, grid in _cell_grids(walks, bands, block_mass, levels):
        h_delta = h * deltas.astype(np.float64)
        h_scaled = h_delta * scale
        step = max(1, _PIECE // len(deltas))
        for lo in range(0, levels, step):
            p_mass = grid[lo:lo + step]
            p_mass *= t_scaled[lo:lo + step, None] + h_scaled[None, :]
            keep = p_mass > _NEGLIGIBLE_MASS
            dropped = p_mass.size - int(np.count_nonzero(keep))
            if dropped:
                truncated += float(np.sum(p_mass, where=~keep)) * (1.0 + (dropped + 2) * 2.0**-52)
            level, column = np.nonzero(keep)
            h_kept = h_delta[column]
            loss = t_grid[lo:lo + step][level]
            loss -= h_kept
            np.divide(h_kept, loss, out=loss)
            loss *= 2.0
            np.log1p(loss, out=loss)
            loss *= 1.0 + _LOSS_RTOL
            loss += 1e-300
            losses.append(loss)
            masses.append(p_mass[keep])

    # largest loss of a truncated cell: ε0 for the pair's own cells; a spread block's cells reach
    # ln((t + h·c1)/(t − h·c1)) at its lowest level in use
    top_loss = math.log(p)
    spread_blocks = (bands.lowest < levels) & (ends > 0)
    if np.any(spread_blocks):
        low_t = t_grid[bands.lowest[spread_blocks]]
        spread = np.log1p(2.0 * h * ends[spread_blocks] / (low_t - h * ends[spread_blocks]))
        top_loss = max(top_loss, float(np.max(spread)))
    top_loss *= 1.0 + _LOSS_RTOL
    return BatchedDelta(np.concatenate(losses or [np.zeros(0)]),
                        np.concatenate(masses or [np.zeros(0)]),
                        truncated * (1.0 + mass_rtol), top_loss, epsilon0)


class _Walks:
    """The Δ > 0 axis (negative losses do not contribute at ε ≥ 0): each block's c1-step walk,
    truncated above Δmax. Δ = 2A − c1 with A ~ Bin(c1, 1/2) has the parity of c1, so the blocks
    are split by parity: odd c1 carries Δ = 1, 3, … (A from (c1 + 1)/2 in steps of one), even c1
    Δ = 2, 4, … (A from (c1 + 2)/2).

    Attributes:
      parities: (blocks in this order, their Δ values, pmf rows P[Δ] (blocks, Δ values)) for odd,
        then even c1.
      truncated: M-mass above Δmax, Σ_b P[C ∈ block b]·P[Δ > Δmax].
      rtol, values: relative error bound and number of the pmf values.
    """

    def __init__(self, ends: np.ndarray, block_mass: np.ndarray, delta_max: int) -> None:
        odd = ends % 2 == 1
        order = np.concatenate([np.flatnonzero(odd), np.flatnonzero(~odd)])
        odd_blocks = int(np.count_nonzero(odd))
        ordered = ends[order]
        pmf = BinomialRows(ordered, (ordered + np.where(ordered % 2 == 1, 1, 2)) // 2,
                           (delta_max + 1) // 2, 0.5)
        walk = pmf.values()
        self.parities = []
        for rows, first in ((slice(0, odd_blocks), 1), (slice(odd_blocks, len(ends)), 2)):
            width = (delta_max - first) // 2 + 1
            deltas = first + 2 * np.arange(width, dtype=np.int64)
            self.parities.append((order[rows], deltas, walk[rows, :width]))
        above = binomial_sf(np.floor((ends + delta_max) / 2.0), ends, 0.5)
        self.truncated = float(np.sum(block_mass * above))
        self.rtol, self.values = pmf.rtol, walk.size


class _Bands:
    """V[b, j] = P[K' in band j of block b], band j = {k: t_j ≤ κc0 + λk < t_{j+1}} (the last one
    open), held for the levels first_level[b] … first_level[b] + W − 1 that the block's window
    meets.

    Attributes:
      first_level: (blocks,) first level held; weights: (blocks, W) the masses V.
      below: (blocks,) K'-mass of no band (below the window, too low levels): truncated.
      rtol, span: relative error bound of the masses and the K' window's width.
      lowest, highest: (blocks,) first level of positive mass and one past the last
        (``levels``, 0 for a block without any), set by :meth:`drop_levels_below`.
    """

    def __init__(self, first_level: np.ndarray, weights: np.ndarray, below: np.ndarray,
                 rtol: float, span: int) -> None:
        self.first_level, self.weights, self.below = first_level, weights, below
        self.rtol, self.span = rtol, span
        self.values = len(first_level) * span
        self.lowest = self.highest = first_level

    @classmethod
    def of_neutral_counts(cls, trials: np.ndarray, base: np.ndarray, t_grid: np.ndarray,
                          lam: float, k_rate: float, z: float) -> _Bands:
        """T = base_b + λK' with K' ~ Bin(trials_b, s') over the window mean ± (z·sd + 2) of each
        row b (base_b = κc0 for a block), by the pmf summed per band; the mass above the window
        joins the band of its first k (lowered to that band's level), the mass below it is
        truncated; rows with base 0 leave P[K' = 0] (T = 0, no P-mass) out of it."""
        bands = _neutral_count_bands(trials, base, t_grid, lam, k_rate, z)
        return bands if isinstance(bands, _Bands) else bands.dense()

    def drop_levels_below(self, too_low: np.ndarray) -> None:
        """Move the mass of levels j < too_low[b] of each block to ``below``; set the levels in
        use."""
        width = self.weights.shape[1]
        low = np.arange(width)[None, :] < (too_low - self.first_level)[:, None]
        self.below = self.below + np.sum(self.weights, axis=1, where=low)
        self.weights[low] = 0.0
        used = self.weights > 0.0
        in_use = used.any(axis=1)
        no_level = np.iinfo(np.int64).max
        self.lowest = np.where(in_use, self.first_level + np.argmax(used, axis=1), no_level)
        self.highest = np.where(in_use, self.first_level + width
                                - np.argmax(used[:, ::-1], axis=1), 0)


class _BandEntries:
    """The masses V[b, j] of :class:`_Bands` as entries (row b, column j − first_level[b], mass),
    rows ascending, one entry per row and column (mass 0 included where the dense array has 0).

    Attributes:
      first_level, below, rtol, span, values: as in :class:`_Bands`.
      row, column, mass: the entries; width: the dense array's number of columns.
    """

    def __init__(self, first_level: np.ndarray, row: np.ndarray, column: np.ndarray,
                 mass: np.ndarray, below: np.ndarray, rtol: float, span: int) -> None:
        self.first_level, self.row, self.column, self.mass = first_level, row, column, mass
        self.below, self.rtol, self.span = below, rtol, span
        self.values = len(first_level) * span
        self.width = int(np.max(column)) + 1

    def dense(self) -> _Bands:
        """The same masses as a :class:`_Bands` (rows × width array)."""
        weights = np.zeros((len(self.first_level), self.width))
        weights[self.row, self.column] = self.mass
        return _Bands(self.first_level, weights, self.below, self.rtol, self.span)


def _neutral_count_bands(trials: np.ndarray, base: np.ndarray, t_grid: np.ndarray, lam: float,
                         k_rate: float, z: float) -> _Bands | _BandEntries:
    """:meth:`_Bands.of_neutral_counts`, as entries where the window's counts span more than twice
    as many levels as they have values (:func:`_sparse_band_entries`), else dense."""
    mean = trials * k_rate
    half = z * np.sqrt(mean * (1.0 - k_rate) + 1.0) + 2.0
    t_over_lam, offsets = t_grid / lam, base / lam
    k_first = np.maximum(_cuts(t_over_lam[None, :1], offsets, trials)[:, 0],
                         np.floor(mean - half).astype(np.int64))
    k_last = np.maximum(k_first, np.minimum(trials, np.ceil(mean + half).astype(np.int64)))
    span = int(np.max(k_last - k_first)) + 1
    top_k = k_first + span
    k_pmf = BinomialRows(trials, k_first, span, k_rate)
    beyond = np.where(top_k <= trials, binomial_sf(top_k - 1, trials, k_rate), 0.0)
    below = np.where(k_first > 0, binomial_cdf(k_first - 1, trials, k_rate), 0.0)
    # the cell c = k = 0 (T = 0) has no P-mass: P[K' = 0] = (1 − s')^trials leaves the
    # c0 = 0 block's lower tail (scipy's cdf rounded up, the power rounded down)
    nothing = (1.0 - k_rate) ** trials * (1.0 - 4.0 * (trials + 2) * UNIT_ROUNDOFF)
    cdf_up = below * (1.0 + 2.0 * float(special_function_rtol(np.max(trials))))
    below = np.where(base == 0.0, np.maximum(cdf_up - nothing, 0.0), below)
    if _level_guess(t_over_lam, offsets, k_first, top_k)[1] <= 2 * span:
        # at most twice as many levels as counts (above, both ways cost about the same)
        first_level, cuts = _level_windows(t_over_lam, offsets, k_first, top_k, trials)
        weights = _band_sums(k_pmf, cuts - k_first[:, None])
        top_band = np.maximum(np.sum(cuts[:, :-1] <= top_k[:, None], axis=1) - 1, 0)
        weights[np.arange(len(trials)), top_band] += beyond
        return _Bands(first_level, weights, below, k_pmf.rtol, span)
    # each count's level found directly; the mass above the window is added to the entry of
    # top_k's level (the last of its row: levels are non-decreasing in k) or is a new entry
    first_level, row, column, mass, top_band = _sparse_band_entries(k_pmf, t_over_lam, offsets,
                                                                    k_first, trials)
    last = np.flatnonzero(np.append(row[1:] != row[:-1], True))
    present = column[last] == top_band
    mass[last[present]] += beyond[present]
    missing = np.flatnonzero(~present)
    row = np.concatenate([row, missing])
    order = np.argsort(row, kind="stable")
    return _BandEntries(first_level, row[order],
                        np.concatenate([column, top_band[missing]])[order],
                        np.concatenate([mass, beyond[missing]])[order], below, k_pmf.rtol, span)


def _cell_grids(walks: _Walks, bands: _Bands, block_mass: np.ndarray,
                levels: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(Δ values, M-mass grid (levels, Δ values)) of each parity: Σ_b P[C ∈ b]·V[b, j]·U[b, Δ],
    by matrix products over pieces of blocks restricted to the levels the piece uses."""
    weights = bands.weights * block_mass[:, None]
    width = weights.shape[1]
    grids = []
    for blocks, deltas, walk in walks.parities:
        if walk.size == 0:
            continue
        grid = np.zeros((levels, len(deltas)))
        for lo in range(0, len(blocks), _PRODUCT_BLOCKS):
            chosen = blocks[lo:lo + _PRODUCT_BLOCKS]
            j_lo, j_hi = int(np.min(bands.lowest[chosen])), int(np.max(bands.highest[chosen]))
            if j_lo >= j_hi:
                continue
            columns = (bands.first_level[chosen] - j_lo)[:, None] + np.arange(width)[None, :]
            inside = (columns >= 0) & (columns < j_hi - j_lo)
            dense = np.zeros((len(chosen), j_hi - j_lo))
            dense[np.nonzero(inside)[0], columns[inside]] = weights[chosen][inside]
            grid[j_lo:j_hi] += dense.T @ walk[lo:lo + _PRODUCT_BLOCKS]
        grids.append((deltas, grid))
    return grids


__all__ = ["BatchedDelta", "DEFAULT_LOWERING", "batched_delta", "supports_batched_delta"]
