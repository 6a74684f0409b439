"""The multi-level bound at every ε at once, for level sets of clone-pair shape with up to two
neutral levels (docs/theory.md, "Batched evaluation of multi-level bounds").

The multi-level bound of :mod:`dpacct_shuffle.core.multilevel` is the hockey-stick divergence of
the pair of count laws P(N) = M(N)·Σ_t a_t N_t/n, Q(N) = M(N)·Σ_t b_t N_t/n, M the multinomial law
of the users' levels (its theorem's proof, with M_n(N)·N_t/(n·m_t) = M_{n−1}(N − e_t)). When the
levels are two *clone* levels (a, b; r) and (b, a; r) with a > b > 0 and equal masses, and
*neutral* levels (λ, λ; s) — the shape of every set-boost catalog entry (RAPPOR, OUE, subset
selection, local hashing, Hadamard response: :func:`~dpacct_shuffle.randomizers.multilevel.corner_levels`)
— then with C = A + B, Δ = A − B, κ = (a + b)/2, h = (a − b)/2 and W = Σ λ_t K_t,

    N = κC + W + hΔ,  D = κC + W − hΔ,

which is the pair of :mod:`dpacct_shuffle.core.batched` with its neutral part λK replaced by W.
:func:`levels_curve` builds the same dominating finite pair (steps 1–3 there) with W lowered
block by block as Lemma 1 allows:

* one neutral level: W = λK exactly as for a VariationRatio;
* two neutral levels (λ_b ≤ λ_r): given the block's largest C = c1, the m = n − c1 users left
  are of type b, r or neither with rates s_b' = s_b/(1 − 2r), s_r' = s_r/(1 − 2r) (dropping the
  c1 − c extra users of a smaller c only lowers W: a coupling). K_b' ~ Bin(m, s_b') is cut into
  bands [q, q + w − 1] of its window; given K_b' = k in a band, K_r' ~ Bin(m − k, s_r'') with
  s_r'' = s_r/(1 − 2r − s_b) is stochastically above K_r'' ~ Bin(m − q − w + 1, s_r''), so W is
  lowered to λ_b·q + λ_r·K_r'' (Lemma 1, piece by piece); each band is then a row of the
  one-type computation with base κc0 + λ_b·q and weight P[K_b' in the band], and the rows of a
  block are added up (in the order of the rows; a row whose counts span many more levels than
  they have values is held as its nonzero (level, mass) entries, the same terms in the same order
  as its dense array, so the same sums). K_b' outside its window is truncated (its P-mass put at the largest loss).
  The band width w keeps λ_b·(w − 1) ≤ η·t_min/2, so W is lowered by at most a relative η/2
  beyond the levels' η.

The curve is an upper bound of the multi-level bound at every ε ≥ 0, in both directions (the
exchange a ↔ b maps the level set to itself).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import special

from dpacct_shuffle.core.batched import (
    _MASS_RTOL,
    DEFAULT_BATCHED_TAIL,
    DEFAULT_LOWERING,
    BatchedDelta,
    _BandEntries,
    _Bands,
    _neutral_count_bands,
    _window_bounds,
    pair_curve,
    _OneNeutralType,
    batched_delta,
    supports_batched_delta,
)
from dpacct_shuffle.core.binomial import binomial_cdf, binomial_pmf, binomial_sf
from dpacct_shuffle.core.binomial_rows import PMF_ABSOLUTE_ERROR, BinomialRows
from dpacct_shuffle.core.bound import MAX_EVALUATED_USERS, VariationRatio
from dpacct_shuffle.core.multilevel import PrivacyLossLevels
from dpacct_shuffle.core.problem import (
    UNIT_ROUNDOFF,
    kept_c_range,
    neutral_rate,
    special_function_rtol,
)
from dpacct_shuffle.core.validation import check_num_users, check_range

# rows (block, band of K_b') evaluated at most: above, no curve (the caller evaluates point by point)
MAX_ROWS = 400_000
# rows × values of K_r'' at most
MAX_ROW_VALUES = 150_000_000
# rows × levels spanned by a row at most (the rows' dense band masses)
MAX_ROW_LEVELS = 250_000_000
# rows of one chunk (their band masses are dense arrays of rows × levels)
_CHUNK_ROWS = 4096


class LevelShape:
    """A level set of clone-pair shape: clone levels (a, b; r), (b, a; r), a > b > 0, and neutral
    levels (λ_t, λ_t; s_t) grouped by λ (masses of equal λ added, rounded down).

    Attributes:
      a, b, r: the clone levels' ratios and (common) mass.
      neutrals: ((λ, s), …) by increasing λ, at most two.
      epsilon0: the level set's ε0 (rounded up).
    """

    __slots__ = ("a", "b", "r", "neutrals", "epsilon0")

    def __init__(self, a: float, b: float, r: float, neutrals: tuple[tuple[float, float], ...],
                 epsilon0: float) -> None:
        self.a, self.b, self.r, self.neutrals, self.epsilon0 = a, b, r, neutrals, epsilon0

    @classmethod
    def of(cls, levels: PrivacyLossLevels) -> LevelShape | None:
        """The shape of ``levels``, or None when they are not of clone-pair shape."""
        clones: list[tuple[float, float, float]] = []
        neutral: dict[float, list[float]] = {}
        for a, b, m in zip(levels.ratios0.tolist(), levels.ratios1.tolist(),
                           levels.masses.tolist()):
            if a == b:
                if a > 0.0:
                    neutral.setdefault(a, []).append(m)
            else:
                clones.append((a, b, m))
        if len(clones) != 2 or len(neutral) > 2:
            return None
        (a0, b0, m0), (a1, b1, m1) = clones
        if not (a0 == b1 and b0 == a1 and m0 == m1):
            return None
        a, b = max(a0, b0), min(a0, b0)
        if not (b > 0.0 and math.isfinite(a) and 2.0 * m0 < 1.0):
            return None
        # a sum of masses rounded down: fewer neutral users only lowers W (Lemma 1)
        neutrals = tuple((lam, math.fsum(masses) * (1.0 - 4.0 * UNIT_ROUNDOFF))
                         for lam, masses in sorted(neutral.items()))
        return cls(a, b, m0, neutrals, levels.epsilon0)


def supports_levels_curve(levels: PrivacyLossLevels) -> bool:
    """Whether :func:`levels_curve` applies (clone-pair shape, :class:`LevelShape`)."""
    return LevelShape.of(levels) is not None


class _TwoNeutralTypes:
    """W = λ_b·K_b + λ_r·K_r, λ_b ≤ λ_r (module docstring): K_b' in bands of width w, each band a
    row of the one-type computation for K_r''."""

    def __init__(self, band: tuple[float, float], row: tuple[float, float], r_c: float,
                 width: int) -> None:
        (self.lam_b, share_b), (self.lam_r, share_r) = band, row
        self.rate_b = neutral_rate(share_b, r_c)
        self.rate_r = neutral_rate(share_r, min(1.0, r_c + share_b))
        self.width = width

    def window(self, trials: int, z: float) -> tuple[float, float]:
        if trials <= 0:
            return 0.0, 0.0
        lo_b, hi_b = _window_bounds(trials, self.rate_b, z)
        lo_r = _window_bounds(max(trials - hi_b, 0), self.rate_r, z)[0] if hi_b < trials else 0
        hi_r = _window_bounds(trials, self.rate_r, z)[1]
        return self.lam_b * lo_b + self.lam_r * lo_r, self.lam_b * hi_b + self.lam_r * hi_r

    def row_count(self, trials: np.ndarray, z: float) -> tuple[int, int]:
        """(rows, values per row) the bands would take for blocks of these trials."""
        mean = trials * self.rate_b
        span_b = int(np.max(2.0 * (z * np.sqrt(mean * (1.0 - self.rate_b) + 1.0) + 2.0))) + 2
        mean_r = trials * self.rate_r
        span_r = int(np.max(2.0 * (z * np.sqrt(mean_r * (1.0 - self.rate_r) + 1.0) + 2.0))) + 2
        return len(trials) * (span_b // self.width + 1), span_r

    def bands(self, trials: np.ndarray, starts: np.ndarray, t_grid: np.ndarray, kappa: float,
              z: float) -> _Bands:
        blocks = len(trials)
        mean = trials * self.rate_b
        half = z * np.sqrt(mean * (1.0 - self.rate_b) + 1.0) + 2.0
        k_lo = np.maximum(np.floor(mean - half), 0).astype(np.int64)
        k_hi = np.minimum(trials, np.ceil(mean + half).astype(np.int64))
        count = int(np.max(k_hi - k_lo)) // self.width + 1
        span_b = count * self.width
        # K_b' outside [k_lo, k_lo + span_b − 1] is truncated (scipy's cdf/sf rounded up)
        k_top = k_lo + span_b - 1
        outside = (np.where(k_lo > 0, binomial_cdf(k_lo - 1, trials, self.rate_b), 0.0)
                   + np.where(k_top < trials, binomial_sf(k_top, trials, self.rate_b), 0.0))
        outside = outside * (1.0 + 2.0 * float(special_function_rtol(np.max(trials))))
        b_pmf = BinomialRows(trials, k_lo, span_b, self.rate_b)
        band_mass = b_pmf.values().reshape(blocks, count, self.width).sum(axis=2)
        lows = k_lo[:, None] + self.width * np.arange(count)[None, :]
        keep = (band_mass > 0.0) & (lows <= trials[:, None])
        # blocks in chunks of about _CHUNK_ROWS rows (each row's band masses are a dense array)
        per_block = np.maximum(np.count_nonzero(keep, axis=1), 1)
        pieces: list[tuple[np.ndarray, np.ndarray]] = []
        below = outside.copy()
        rows_rtol, rows_span, row_values = 0.0, 0, 0
        lo = 0
        while lo < blocks:
            hi = lo + 1
            total = int(per_block[lo])
            while hi < blocks and total + int(per_block[hi]) <= _CHUNK_ROWS:
                total += int(per_block[hi])
                hi += 1
            block_of_row, band_of_row = np.nonzero(keep[lo:hi])
            block_of_row += lo
            if len(block_of_row) == 0:
                pieces.append((np.zeros(hi - lo, dtype=np.int64), np.zeros((hi - lo, 1))))
                lo = hi
                continue
            row_low = lows[block_of_row, band_of_row]
            row_trials = np.maximum(trials[block_of_row] - row_low - (self.width - 1), 0)
            base = kappa * starts[block_of_row] + self.lam_b * row_low
            rows = _neutral_count_bands(row_trials, base, t_grid, self.lam_r, self.rate_r, z)
            row_weight = band_mass[block_of_row, band_of_row]
            rows_rtol = max(rows_rtol, rows.rtol)
            rows_span = max(rows_span, rows.span)
            row_values += len(row_trials) * rows.span
            # each block's rows added up on the block's own window of levels, in the order of the
            # rows (entries: the dense rows' nonzero terms, in the same order: the same sums)
            local = block_of_row - lo
            first = np.full(hi - lo, np.iinfo(np.int64).max)
            np.minimum.at(first, local, rows.first_level)
            first = np.where(first == np.iinfo(np.int64).max, 0, first)
            shift = rows.first_level - first[local]
            if isinstance(rows, _BandEntries):
                width = int(np.max(shift)) + rows.width
                index = (local * width + shift)[rows.row] + rows.column
                terms = rows.mass * row_weight[rows.row]
            else:
                row_width = rows.weights.shape[1]
                width = int(np.max(shift)) + row_width
                index = ((local * width + shift)[:, None] + np.arange(row_width)[None, :]).ravel()
                terms = (rows.weights * row_weight[:, None]).ravel()
            weights = np.bincount(index, terms, minlength=(hi - lo) * width).reshape(hi - lo, width)
            below[lo:hi] += np.bincount(local, rows.below * row_weight, minlength=hi - lo)
            pieces.append((first, weights))
            lo = hi
        width = max(piece[1].shape[1] for piece in pieces)
        first = np.concatenate([piece[0] for piece in pieces])
        weights = np.concatenate([np.pad(piece[1], ((0, 0), (0, width - piece[1].shape[1])))
                                  for piece in pieces])
        # masses: the K_b' pmf (its rtol), band sums (≤ w terms), the rows' bound, the products and
        # the sums over rows (≤ count terms) and scipy's tails
        rtol = (b_pmf.rtol + rows_rtol + float(special_function_rtol(np.max(trials)))
                + 2.0 * (self.width + count + 4) * UNIT_ROUNDOFF)
        bands = _Bands(first, weights, below, rtol, rows_span + count + self.width)
        bands.values = blocks * span_b + row_values
        return bands


def levels_curve(levels: PrivacyLossLevels, n: int, lowering: float = DEFAULT_LOWERING,
                 tail: float = DEFAULT_BATCHED_TAIL) -> BatchedDelta | None:
    """The curve of :class:`~dpacct_shuffle.core.batched.BatchedDelta` for the multi-level bound
    of ``levels`` with n users (both directions), or None when the level set is not of clone-pair
    shape or the two-neutral-level computation would exceed ``MAX_ROWS``/``MAX_ROW_VALUES``/
    ``MAX_ROW_LEVELS``
    (cached per arguments).

    Args:
      levels: the levels of a victim pair (:class:`~dpacct_shuffle.core.multilevel.PrivacyLossLevels`).
      n: number of users ≥ 1 (evaluated at ``MAX_EVALUATED_USERS`` above it: the bound is
        non-increasing in n).
      lowering: η in (0, 0.01] of :func:`~dpacct_shuffle.core.batched.batched_delta`.
      tail: the windows' tail level.
    """
    users = min(check_num_users(n), MAX_EVALUATED_USERS)
    eta = check_range("lowering", lowering, 0.0, 0.01, low_open=True)
    level = check_range("tail", tail, 1e-300, 1e-6)
    return _levels_curve(levels, users, eta, level)


@functools.lru_cache(maxsize=256)
def _levels_curve(levels: PrivacyLossLevels, users: int, eta: float,
                  tail: float) -> BatchedDelta | None:
    shape = LevelShape.of(levels)
    if shape is None:
        return None
    r_c = min(2.0 * shape.r, 1.0)
    kappa, h = (shape.a + shape.b) / 2.0, (shape.a - shape.b) / 2.0
    lams = [lam for lam, _ in shape.neutrals]
    factor = max([shape.a, *lams]) * (1.0 + 1e-12)
    # (below the smallest positive T by more than the cuts' margin 1e-9: a T equal to it stays in
    # the lowest level)
    step_floor = min([kappa, *lams]) * (1.0 - 1e-6)
    neutral: _OneNeutralType | _TwoNeutralTypes | None = None
    if len(shape.neutrals) == 1:
        lam, share = shape.neutrals[0]
        rate = neutral_rate(share, r_c)
        neutral = _OneNeutralType(lam, rate) if rate > 0.0 else None
    elif len(shape.neutrals) == 2:
        band, row = shape.neutrals
        # band width: λ_b·(w − 1) ≤ η·t_low/2, t_low = κ·c_lo + λ_b·(K_b's low end) ≤ every T in use
        z = float(-special.ndtri(tail)) + 1.0
        c_lo, c_hi = _window_bounds(users - 1, r_c, z)
        rate_b = neutral_rate(band[1], r_c)
        k_low = _window_bounds(max(users - c_hi - 1, 0), rate_b, z)[0]
        width = max(1, int(0.5 * eta * (kappa * c_lo + band[0] * k_low) / band[0]) + 1)
        two = _TwoNeutralTypes(band, row, r_c, width)
        if two.rate_b <= 0.0 or two.rate_r <= 0.0:
            return None
        blocks = (c_hi - c_lo + 1) // max(1, math.floor(4.0 * eta * c_lo)) + 1
        rows, values = two.row_count(np.array([users]), z)
        # each row's band masses are a dense array over the levels its values span (grid step
        # about η·T at the typical T)
        t_mean = users * (kappa * r_c + band[0] * band[1] + row[0] * row[1])
        spanned = row[0] * values / (eta * t_mean) + 2.0
        if (rows * blocks > MAX_ROWS or rows * blocks * values > MAX_ROW_VALUES
                or rows * blocks * spanned > MAX_ROW_LEVELS):
            return None
        neutral = two
    return pair_curve(users, eta, tail, kappa=kappa, h=h, p=shape.a / shape.b, r_c=r_c,
                      factor=factor, neutral=neutral, step_floor=step_floor,
                      epsilon0=shape.epsilon0)




# ---------------------------------------------------------------------------------------------
# Any level set with finite ratios, by enumerating the counts of its non-neutral levels
# (docs/theory.md, "Enumerated curve of a level set").

# count vectors of the enumerated levels at most (above, no curve)
ENUMERATED_MAX_COMBOS = 600_000
# cells (count vector × band of the main neutral count) at most
ENUMERATED_MAX_CELLS = 40_000_000
# losses are rounded up onto the grid (1 + _LOSS_GRID)^j, and up to at least _LOSS_FLOOR
_LOSS_GRID = 1e-4
_LOSS_FLOOR = 1e-12
# count vectors of M-mass below this join the truncated mass
_NEGLIGIBLE_COMBO = 1e-25
# bands of the main neutral count within this many standard deviations of its mean lower it by
# ≤ η, those beyond by ≤ _TAIL_BAND_FACTOR·η
_BULK_DEVIATIONS = 2.0
_TAIL_BAND_FACTOR = 16.0
# cells (count vectors × padded bands) evaluated per chunk
_ENUMERATED_CHUNK_CELLS = 1 << 18
# window tail of a VariationRatio's enumerated curve (variation_ratio_curve): its truncated mass,
# put at ε0, then stays below the δ at which a round's profile grid stops (about 1e-22), so the
# profile of a round read from it — e.g. a Poisson-sampled round's void view — falls below that
# level well before ε0 and the round's PLD is not stretched out to ε0 by that mass
VARIATION_RATIO_CURVE_TAIL = 1e-26
# η of a VariationRatio's enumerated curve relative to the requested one (at most 0.01): its three
# levels lose little to wider bands of the neutral count (docs/theory.md, "Enumerated curve of a
# level set")
VARIATION_RATIO_LOWERING_FACTOR = 4.0


class TwoSidedCurve:
    """δ(ε) = max(D_{e^ε}(P‖Q), D_{e^ε}(Q‖P)) of a pair, each direction a
    :class:`~dpacct_shuffle.core.batched.BatchedDelta` (same ``deltas``/``delta`` interface)."""

    __slots__ = ("forward", "reverse", "epsilon0")

    def __init__(self, forward: BatchedDelta, reverse: BatchedDelta, epsilon0: float) -> None:
        self.forward, self.reverse, self.epsilon0 = forward, reverse, epsilon0

    def deltas(self, epsilons: np.ndarray) -> np.ndarray:
        """Upper bounds on δ(ε) at every ε ≥ 0 of ``epsilons``."""
        eps = np.asarray(epsilons, dtype=np.float64)
        values: np.ndarray = np.maximum(self.forward.deltas(eps), self.reverse.deltas(eps))
        return values

    def delta(self, epsilon: float) -> float:
        """Upper bound on δ(ε) at one ε ≥ 0."""
        return max(self.forward.delta(epsilon), self.reverse.delta(epsilon))


def enumerated_levels_curve(levels: PrivacyLossLevels, n: int,
                            lowering: float = DEFAULT_LOWERING,
                            tail: float = DEFAULT_BATCHED_TAIL) -> TwoSidedCurve | None:
    """Every-ε curve of the multi-level bound of any level set with finite ratios (both
    directions), or None when a ratio is 0 against a positive one (infinite ε0) or the
    enumeration would exceed ``ENUMERATED_MAX_COMBOS``/``ENUMERATED_MAX_CELLS`` (cached).

    Construction (docs/theory.md, "Enumerated curve of a level set"): the level of largest mass
    among those with a_t = b_t = λ* > 0 is the *main neutral* level, with count K; every other
    level with a positive ratio is *enumerated*. With counts N_j of the enumerated levels,
    N = Σ a_j N_j + λ*K and D = Σ b_j N_j + λ*K. The count vectors (N_j) run over the product of
    the windows of their marginals Bin(n, m_j) (the rest is truncated, union bound); given them,
    K ~ Bin(n − S, s') (S = Σ N_j, s' = m*/(1 − Σ m_j) rounded down: a smaller K only lowers the
    common level). K is cut into bands [k, k + w − 1] with w − 1 ≤ η·k_lo (k_lo the window's
    low end) within two standard deviations of its mean and w − 1 ≤ 16η·k_lo beyond, the values
    below the window form one band from 0 and those above join the last band; in each band K is lowered to its first value (Lemma 1: N and D lowered by the same
    amount, both stay ≥ 0). Each cell's loss ln(N'/D') is at most the levels' ε0 (a mediant of
    the ratios); it is raised by the rounding of N', D' and onto a geometric grid, and the P-mass
    of every truncated cell (at most max(a, b, λ*) times its M-mass) is put at ε0.

    Args:
      levels: the level set (:class:`~dpacct_shuffle.core.multilevel.PrivacyLossLevels`).
      n: number of users ≥ 1 (evaluated at ``MAX_EVALUATED_USERS`` above it).
      lowering: η in (0, 0.01].
      tail: the windows' tail level.
    """
    users = min(check_num_users(n), MAX_EVALUATED_USERS)
    eta = check_range("lowering", lowering, 0.0, 0.01, low_open=True)
    level = check_range("tail", tail, 1e-300, 1e-6)
    return _enumerated_curve(levels, users, eta, level)


def _conditional_pmf_tables(counts: list[np.ndarray], masses: list[float], users: int
                            ) -> tuple[np.ndarray, float]:
    """M-mass of every count vector (``counts``: one int array per enumerated level, all of the
    same length) under the sequential binomials N_j | N_<j ~ Bin(n − Σ_<j N_i, m_j/(1 − Σ_<j m_i)),
    and the relative error bound of those masses (scipy's pmf and the rounding of the rates)."""
    mass = np.ones(len(counts[0]))
    prefix = np.zeros(len(counts[0]), dtype=np.int64)
    used = 0.0
    rtol = 0.0
    for k, m_j in zip(counts, masses):
        rate = min(1.0, m_j / (1.0 - used)) if used < 1.0 else 1.0
        k_lo, k_hi = int(k.min()), int(k.max())
        p_lo, p_hi = int(prefix.min()), int(prefix.max())
        ks = np.arange(k_lo, k_hi + 1, dtype=np.float64)
        trials = users - np.arange(p_lo, p_hi + 1, dtype=np.float64)
        table = binomial_pmf(ks[:, None], np.maximum(trials, 0.0)[None, :], rate)
        mass *= table[k - k_lo, prefix - p_lo]
        # a rate off by a relative θ ≤ 3u moves ln pmf by at most θ·t/(1 − rate) (t trials)
        rtol += float(special_function_rtol(users)) + (
            8.0 * UNIT_ROUNDOFF * users / max(1.0 - rate, UNIT_ROUNDOFF) if rate < 1.0 else 0.0)
        prefix = prefix + k
        used = math.fsum([used, m_j])
    return mass, rtol


@functools.lru_cache(maxsize=256)
def _enumerated_curve(levels: PrivacyLossLevels, users: int, eta: float,
                      tail: float) -> TwoSidedCurve | None:
    a_all, b_all, m_all = levels.ratios0, levels.ratios1, levels.masses
    if np.any((a_all == 0.0) != (b_all == 0.0)) or not math.isfinite(levels.epsilon0):
        return None
    neutral = (a_all == b_all) & (a_all > 0.0)
    lam, share = 0.0, 0.0
    if np.any(neutral):
        groups: dict[float, list[float]] = {}
        for value, mass in zip(a_all[neutral].tolist(), m_all[neutral].tolist()):
            groups.setdefault(value, []).append(mass)
        lam = max(groups, key=lambda key: math.fsum(groups[key]))
        share = math.fsum(groups[lam]) * (1.0 - 4.0 * UNIT_ROUNDOFF)  # rounded down (Lemma 1)
    main = neutral & (a_all == lam)
    enumerated = ~main & (a_all > 0.0)
    a, b, m = a_all[enumerated], b_all[enumerated], m_all[enumerated]
    if not np.any(a != b):
        return None
    z = float(-special.ndtri(tail)) + 1.0
    # windows of the marginals Bin(n, m_j) (kept_c_range of n + 1 users: Bin(n, ·) itself),
    # their outside M-mass added up (union bound), scipy's cdf/sf rounded up
    windows, truncated_m = [], 0.0
    for rate in m.tolist():
        lo, hi, outside = kept_c_range(users + 1, rate, tail)
        windows.append((lo, min(hi, users)))
        truncated_m += outside * (1.0 + 2.0 * float(special_function_rtol(users)))
    combos = math.prod(hi - lo + 1 for lo, hi in windows)
    if combos > ENUMERATED_MAX_COMBOS:
        return None
    grids = np.meshgrid(*[np.arange(lo, hi + 1, dtype=np.int64) for lo, hi in windows],
                        indexing="ij")
    counts = [grid.ravel() for grid in grids]
    combo_mass, combo_rtol = _conditional_pmf_tables(counts, m.tolist(), users)
    total = np.sum(counts, axis=0)
    keep = (combo_mass > _NEGLIGIBLE_COMBO) & (total <= users)
    # dropped count vectors: their computed mass (rounded up) and the subnormal error of each
    truncated_m += float(np.sum(combo_mass, where=~keep)) * (1.0 + 1e-6) + (
        np.count_nonzero(~keep) * len(counts) * PMF_ABSOLUTE_ERROR)
    counts = [k[keep] for k in counts]
    combo_mass, total = combo_mass[keep], total[keep]
    kf = [k.astype(np.float64) for k in counts]
    n_part = np.sum([a_j * k for a_j, k in zip(a.tolist(), kf)], axis=0)
    d_part = np.sum([b_j * k for b_j, k in zip(b.tolist(), kf)], axis=0)
    # the main neutral count K | S ~ Bin(n − S, s'), banded per distinct S
    rest_rate = math.fsum(m.tolist())
    k_rate = (min(1.0, share / (1.0 - rest_rate)) * (1.0 - 4.0 * UNIT_ROUNDOFF)
              if share > 0.0 and rest_rate < 1.0 else 0.0)
    order = np.argsort(total, kind="stable")
    distinct, group_sizes = np.unique(total[order], return_counts=True)
    # bands of every distinct S: their first values (K lowered to them) and masses; the pmf,
    # cdf and sf of all S in one call each (elementwise, the same values as S by S)
    band_starts: list[np.ndarray] = []
    window_lows: list[int] = []
    windowed: list[tuple[int, int, int]] = []  # (group, trials, k_hi) of the S with a window
    widest = 1
    for group, s_value in enumerate(distinct.tolist()):
        trials = users - int(s_value)
        if k_rate <= 0.0 or trials <= 0:
            band_starts.append(np.zeros(1, dtype=np.int64))
            window_lows.append(0)
            continue
        k_lo, k_hi = _window_bounds(trials, k_rate, z)
        # bands of width w (W lowered by a relative ≤ η) within _BULK_DEVIATIONS standard
        # deviations of the mean, of width w' (≤ _TAIL_BAND_FACTOR·η) beyond
        width = max(1, int(eta * k_lo) + 1)
        tail_width = max(1, int(_TAIL_BAND_FACTOR * eta * k_lo) + 1)
        widest = max(widest, tail_width)
        mean = trials * k_rate
        spread = _BULK_DEVIATIONS * math.sqrt(trials * k_rate * (1.0 - k_rate))
        inner_lo = min(k_hi + 1, max(k_lo, math.ceil(mean - spread)))
        inner_hi = max(inner_lo, min(k_hi + 1, math.floor(mean + spread) + 1))
        band_starts.append(np.concatenate([np.arange(k_lo, inner_lo, tail_width),
                                           np.arange(inner_lo, inner_hi, width),
                                           np.arange(inner_hi, k_hi + 1, tail_width)]))
        window_lows.append(k_lo)
        windowed.append((group, trials, k_hi))
    band_masses: list[np.ndarray] = [np.ones(1) for _ in band_starts]
    if windowed:
        groups_w = np.array([g for g, _, _ in windowed], dtype=np.int64)
        trials_w = np.array([t for _, t, _ in windowed], dtype=np.int64)
        highs_w = np.array([h for _, _, h in windowed], dtype=np.int64)
        lows_w = np.array(window_lows, dtype=np.int64)[groups_w]
        spans = highs_w - lows_w + 1
        offsets = np.concatenate([[0], np.cumsum(spans)])
        ks = (np.arange(int(offsets[-1])) - np.repeat(offsets[:-1] - lows_w, spans)
              ).astype(np.float64)
        pmf = binomial_pmf(ks, np.repeat(trials_w, spans).astype(np.float64), k_rate)
        # each S's band sums end where the next S's window begins
        cuts = np.concatenate([offsets[i] + band_starts[g] - lows_w[i]
                               for i, g in enumerate(groups_w.tolist())])
        sums_all = np.add.reduceat(pmf, cuts)
        above = np.where(highs_w < trials_w, binomial_sf(highs_w, trials_w, k_rate), 0.0)
        below = binomial_cdf(lows_w - 1, trials_w, k_rate)
        position = 0
        for i, g in enumerate(groups_w.tolist()):
            sums = sums_all[position:position + len(band_starts[g])]
            position += len(band_starts[g])
            if highs_w[i] < trials_w[i]:
                sums[-1] += float(above[i])
            if lows_w[i] > 0:  # K below the window, lowered to 0
                sums = np.append(float(below[i]), sums)
                band_starts[g] = np.append(0, band_starts[g])
            band_masses[g] = sums
    # one array of the bands of every S, padded with bands of mass 0 (at its last value)
    band_counts = np.array([len(starts) for starts in band_starts], dtype=np.int64)
    cells = int(np.dot(group_sizes, band_counts))
    if cells > ENUMERATED_MAX_CELLS:
        return None
    band_values = np.empty((len(band_starts), int(np.max(band_counts))))
    band_weights = np.zeros(band_values.shape)
    for group, (starts, sums) in enumerate(zip(band_starts, band_masses)):
        band_values[group, :len(starts)] = starts
        band_values[group, len(starts):] = starts[-1]
        band_weights[group, :len(sums)] = sums
    band_values *= lam
    group_of_row = np.repeat(np.arange(len(distinct)), group_sizes)
    mass_rtol = max(_MASS_RTOL, 1.01 * (
        combo_rtol + float(special_function_rtol(users))
        + 2.0 * (len(counts) + widest + 8) * UNIT_ROUNDOFF + 2.0 * cells * UNIT_ROUNDOFF))
    top_loss = levels.epsilon0
    grid_step = math.log1p(_LOSS_GRID)
    low_index = math.floor(math.log(_LOSS_FLOOR) / grid_step)
    bins = math.ceil(math.log(top_loss) / grid_step) - low_index + 2
    # (bins, P-masses) of the cells, forward (P‖Q) and reverse (Q‖P)
    found: list[tuple[list[np.ndarray], list[np.ndarray]]] = [([], []), ([], [])]
    # absolute error of N', D': sums of ≤ d + 2 nonnegative terms of size ≤ their sum
    slack = 4.0 * (len(counts) + 4) * UNIT_ROUNDOFF
    # per cell: N' = (U + σ) + λ*k·(1 + 2·slack) and D' = (V − σ) + λ*k·(1 − 2·slack) with
    # σ = slack·(U + V): N' and D' moved by slack·(N' + D') in all, the row and the band part
    # each rounded once (a few u more, far inside the margin 4(d + 4)u of sums of ≤ d + 2 terms)
    base_up, base_down = band_values * (1.0 + 2.0 * slack), band_values * (1.0 - 2.0 * slack)
    top_base = band_values[:, -1]  # the largest base of each S (the bases increase)
    row_weights = combo_mass[order] * ((1.0 + mass_rtol) / users)
    u_sorted, v_sorted = n_part[order], d_part[order]
    chunk = max(1, _ENUMERATED_CHUNK_CELLS // band_values.shape[1])
    for lo_i in range(0, len(order), chunk):
        part = slice(lo_i, lo_i + chunk)
        chunk_groups = group_of_row[part]
        u_rows, v_rows, weights = u_sorted[part], v_sorted[part], row_weights[part]
        for (indices, masses), top, bottom in zip(found, (u_rows, v_rows), (v_rows, u_rows)):
            # rows where some band's loss may be positive (the error grows with the base)
            live = top - bottom + 2.0 * slack * (top + bottom + 2.0 * top_base[chunk_groups]) > 0.0
            if not np.any(live):
                continue
            top_live, bottom_live, live_groups = top[live], bottom[live], chunk_groups[live]
            spread = slack * (top_live + bottom_live)
            top_cell = (top_live + spread)[:, None] + base_up[live_groups]
            bottom_cell = (bottom_live - spread)[:, None] + base_down[live_groups]
            p_mass = weights[live][:, None] * band_weights[live_groups]
            p_mass *= top_cell
            # the bases increase along a row, so its first cell has the smallest D'
            lowest = float(np.min(bottom_cell[:, 0]))
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.divide(top_cell, bottom_cell, out=top_cell)
                if lowest <= 0.0:  # a non-positive lowered D': the loss is capped at ε0 below
                    ratio = np.where(bottom_cell > 0.0, ratio, np.inf)
            keep = ratio > 1.0  # cells of non-positive loss (and 0/0) contribute nothing
            loss = np.log(ratio[keep])
            loss *= 1.0 + 1e-12
            np.clip(loss, _LOSS_FLOOR, top_loss, out=loss)
            # the grid value of a bin is ≥ every loss in it (index rounded up with a margin)
            np.log(loss, out=loss)
            loss /= grid_step
            loss += 1e-6
            np.ceil(loss, out=loss)
            index = loss.astype(np.int64)
            index -= low_index
            np.minimum(index, bins - 1, out=index)
            indices.append(index)
            masses.append(p_mass[keep])
    factor = max(float(np.max(a_all)), float(np.max(b_all)), lam) * (1.0 + 1e-12)
    truncated = truncated_m * factor * (1.0 + mass_rtol)
    curves = []
    for indices, masses in found:
        # the bins from the lowest occupied one up (the grid below holds no mass)
        all_indices = np.concatenate(indices) if indices else np.zeros(0, dtype=np.int64)
        lowest_bin = int(np.min(all_indices)) if all_indices.size else 0
        binned = (np.bincount(all_indices - lowest_bin, np.concatenate(masses))
                  if indices else np.zeros(0))
        used = np.flatnonzero(binned > 0.0)
        grid_losses = np.exp((used + (lowest_bin + low_index)) * grid_step) * (1.0 + 1e-12)
        grid_losses = np.minimum(grid_losses, top_loss)  # every loss is ≤ ε0 (rounded up)
        curves.append(BatchedDelta(grid_losses, binned[used], truncated, top_loss,
                                   levels.epsilon0))
    return TwoSidedCurve(curves[0], curves[1], levels.epsilon0)



def variation_ratio_curve(vr: VariationRatio, n: int, lowering: float = DEFAULT_LOWERING
                          ) -> BatchedDelta | TwoSidedCurve | None:
    """An every-ε curve of a VariationRatio's bound with n users: its batched pair curve
    (:func:`~dpacct_shuffle.core.batched.batched_delta`: equal clone rates), else the enumerated
    curve of its three levels (:func:`enumerated_levels_curve`, the module's expression of the
    same pair; windows at ``VARIATION_RATIO_CURVE_TAIL``, η times
    ``VARIATION_RATIO_LOWERING_FACTOR`` up to 0.01), else None (then it is evaluated point
    by point)."""
    if supports_batched_delta(vr):
        return batched_delta(vr, n, lowering)
    if not (math.isfinite(vr.p) and vr.beta > 0.0 and vr.alpha > 0.0):
        return None
    return enumerated_levels_curve(PrivacyLossLevels.of_variation_ratio(vr), n,
                                   min(0.01, VARIATION_RATIO_LOWERING_FACTOR * lowering),
                                   VARIATION_RATIO_CURVE_TAIL)


__all__ = ["ENUMERATED_MAX_CELLS", "ENUMERATED_MAX_COMBOS", "LevelShape", "MAX_ROWS",
           "MAX_ROW_LEVELS", "MAX_ROW_VALUES",
           "TwoSidedCurve", "VARIATION_RATIO_CURVE_TAIL",
           "VARIATION_RATIO_LOWERING_FACTOR", "enumerated_levels_curve", "levels_curve", "supports_levels_curve",
           "variation_ratio_curve"]
