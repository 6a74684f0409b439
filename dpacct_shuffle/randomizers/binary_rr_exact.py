"""Exact shuffled binary randomized response: certified worst case over all configurations of
the other users, used both as a lower bound and as an upper bound (docs/theory.md, "Lower bounds").

Binary randomized response (:class:`BinaryRRProfile`): **exact to a certified tolerance**. The
output is the count of ones; with m of the others holding 1 it is
S_m + V, S_m = Bin(m, a) + Bin(n − 1 − m, 1 − a), a = e^ε0/(e^ε0 + 1), V the victim's bit, and the
protocol's δ(ε) = max_m δ_m(ε) (δ_m: max of both hockey-stick directions; δ_m = δ_{n−1−m} by
relabelling 0 ↔ 1, so m ≤ (n − 1)/2 suffices). **The homogeneous configuration (all others
holding the same value) is not always the worst one**: e.g. ε0 = 1, n = 50, ε = 0.3 gives
δ = 2.2563e-3 for m = 0 but 2.3562e-3 for m = 1, and ε0 = 2, n = 10, ε = 0.1 gives 0.2604 (m = 0)
vs 0.3064 (m = 5). The worst m is found by a certified branch and bound over blocks of m:

* Block bound. Bern(a) = (2a − 1)·δ_1 + 2(1 − a)·Bern(½) and Bern(1 − a) = (2a − 1)·δ_0 +
  2(1 − a)·Bern(½). For a block m ∈ [m1, m2] order the others so that m1 of them hold 1,
  n − 1 − m2 hold 0 and the b = m2 − m1 "free" ones hold 1 or 0 depending on m. Reveal to the
  adversary, for each free user, whether it drew the deterministic branch and, if so, its output.
  The revealed information has the same law under both victim inputs, and the count given it is
  a known shift (the deterministic outputs) of Bin(m1, a) + Bin(n − 1 − m2, 1 − a) + Bin(J, ½) + V,
  J = number of free users that drew the fair coin, J ~ Bin(b, 2(1 − a)). The shuffled count is a
  post-processing of (revealed, count) and a hockey-stick divergence is shift-invariant, so for
  every m in the block and each direction
  δ_m(ε) ≤ U_block(ε) = Σ_J P[J] · D_{e^ε}(law of that sum with V from victim 0 ‖ with victim 1).
  D_J is non-increasing in J (an added independent fair coin is post-processing), so J is grouped
  in bands charged at their lowest J; J outside its window is charged 1. A block of one
  configuration (b = 0) gives its exact δ_m. Revealing b users removes ≈ b·(1 − a)(a − ½) of the
  count's variance, so U_block is within rtol of the block's δ_m once b is a small fraction of n.
* δ(ε) (:meth:`BinaryRRProfile.delta_interval`): L = largest certified lower δ_m over evaluated
  configurations (the ends, the middle, block midpoints, small blocks one by one), U = largest
  U_block over a partition of [0, (n − 1)/2] (best first: the block with the largest U is split in
  halves) until U ≤ L·(1 + rtol).
* ε(δ) (:meth:`BinaryRRProfile.epsilon_interval`): ε_lo = largest ε with some evaluated lower
  δ_m(ε) > δ (regula falsi over the best configurations), then ε_hi = ε_lo·(1 + rtol) is certified
  by splitting blocks until every U_block(ε_hi) ≤ δ; U_block is non-increasing in ε, so a block
  pruned at one ε_hi stays pruned when a worse configuration found on the way raises ε_lo.

"Exact" (``is_exact``) means: the returned interval is certified and its relative width is at
most rtol (default ``BINARY_RR_RTOL`` = 1e-3); values below 1e-200 count as 0. The lower ends
(:meth:`delta`, :meth:`epsilon`) are certified lower bounds on the protocol's profile, the upper
ends certified upper bounds. Numerics of this search: binomial pmfs by a ratio recurrence from
the mode, normalised by their sum (relative error ≤ 24·steps·u, no special functions), Chernoff
windows whose excluded mass (≤ 1e-5·rtol·δ per window) is added to upper ends, direct
convolutions of nonnegative terms (relative error ≤ length·u), margins η·(P + e^ε·Q) per cell
(:class:`_Law`, :func:`_hockey_stick_bounds`).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from dpacct_shuffle.core.problem import UNIT_ROUNDOFF
from dpacct_shuffle.core.validation import check_delta, check_epsilon, check_num_users, check_range
from dpacct_shuffle.randomizers.lower_bounds import EXP_ARGUMENT_CAP, InstanceLowerBound, epsilon_lower

FULL_SEARCH_MAX_USERS = 3000
BINARY_RR_RTOL = 1e-3
BINARY_RR_MAX_BLOCKS = 20000
_TRUNCATION_SHARE = 1e-5  # truncated mass per window, relative to rtol × (the δ being certified)
_MIN_TRUNCATION = 1e-280
_UNDERFLOW = 1e-290
_SUBNORMAL = 5e-324  # absolute rounding error of a result in the subnormal range
_NEGLIGIBLE_DELTA = 1e-200  # intervals [L, U] with U below this count as exact (δ = 0 to 1e-200)
_LEAF_CONFIGURATIONS = 4  # blocks of at most this many configurations are evaluated one by one
_TOP_CANDIDATES = 8  # configurations used for the ε bisection of the lower end
_RETAINED_CANDIDATES = 32  # exact configuration laws kept between queries (per truncation budget)
_MAX_CANDIDATE_SETS = 6
# cumulative probabilities at which the revealed count J of fair coins starts a new band
# (11 bands: within 1e-4 relative of summing every J at n = 10⁶, blocks of 10³–10⁴ configurations)
_BAND_QUANTILES = (0.0, 1e-12, 1e-8, 1e-5, 1e-3, 0.01, 0.05, 0.15, 0.3, 0.5, 0.7)
_EXACT_BANDS_UP_TO = 12  # at most this many values of J: every J is its own band


def _binomial_kl(x: float, p: float, q: float) -> float:
    """KL(Bern(x) ‖ Bern(p)) with q = 1 − p given separately (accurate for p near 1)."""
    value = 0.0
    if x > 0.0:
        value += x * math.log(x / p)
    if x < 1.0:
        value += (1.0 - x) * math.log((1.0 - x) / q)
    return value


def _chernoff_below(trials: int, p: float, q: float, k: int) -> float:
    """Upper bound on P[Bin(trials, p) < k] (Chernoff: exp(−trials·KL((k−1)/trials ‖ p)))."""
    if k <= 0:
        return 0.0
    x = (k - 1) / trials
    if x >= p:
        return 1.0
    return min(1.0, math.exp(-trials * _binomial_kl(x, p, q) * (1.0 - 1e-6)))


def _chernoff_above(trials: int, p: float, q: float, k: int) -> float:
    """Upper bound on P[Bin(trials, p) > k]."""
    if k >= trials:
        return 0.0
    x = (k + 1) / trials
    if x <= p:
        return 1.0
    return min(1.0, math.exp(-trials * _binomial_kl(x, p, q) * (1.0 - 1e-6)))


@dataclass(frozen=True)
class _Law:
    """A count law on the window offset..offset+len(values)−1, with certified error terms.

    Meaning: there is T ∈ [1 − dropped, 1] such that the true law restricted to the event "every
    summand inside its window" is T·values[k]·(1 + ζ_k) with |ζ_k| ≤ rel_error, and the rest of the
    true law (total mass 1 − T ≤ dropped) lies anywhere.
    """

    values: np.ndarray
    offset: int
    rel_error: float
    dropped: float


def _binomial_law(trials: int, p: float, q: float, budget: float) -> _Law:
    """Bin(trials, p) (q = 1 − p given separately) on a Chernoff window of excluded mass ≤ budget.

    The pmf is built by the ratio recurrence P(k+1)/P(k) = (trials − k)/(k + 1)·p/q from the
    mode and normalised by its computed sum. Each step has ≤ 2 roundings plus the ≤ 10u relative
    error of p/q (p and q are themselves rounded results), so the relative error of each cell is
    ≤ 2·12·(steps + 1)·u + (len + 4)·u (u = 2⁻⁵³), and the normalising constant is the
    kept mass T ∈ [1 − dropped, 1]: no special function enters the values. Cells below
    ``_UNDERFLOW`` (relative to the mode) are zeroed and counted as dropped mass.
    """
    if trials == 0 or p == 0.0:
        return _Law(np.ones(1), 0, 0.0, 0.0)
    if q == 0.0:
        return _Law(np.ones(1), trials, 0.0, 0.0)
    mean, sd = trials * p, math.sqrt(trials * p * q)
    z = math.sqrt(2.0 * math.log(2.0 / budget)) + 0.5
    while True:
        half = z * sd + 2.0 * z
        lo = max(0, int(math.floor(mean - half)))
        hi = min(trials, int(math.ceil(mean + half)))
        dropped = _chernoff_below(trials, p, q, lo) + _chernoff_above(trials, p, q, hi)
        if dropped <= budget:
            break
        z += 1.0
    mode = min(max(int(math.floor((trials + 1) * p)), lo), hi)
    odds = p / q
    ks_up = np.arange(mode, hi, dtype=float)
    up = np.cumprod((trials - ks_up) / (ks_up + 1.0) * odds)
    ks_down = np.arange(mode - 1, lo - 1, -1, dtype=float)
    down = np.cumprod((ks_down + 1.0) / (trials - ks_down) / odds)
    raw = np.concatenate((down[::-1], [1.0], up))
    tiny = raw < _UNDERFLOW
    if np.any(tiny):  # below the mode by > 1e290: true mass < 1e-290 per cell
        raw = np.where(tiny, 0.0, raw)
        dropped += float(np.count_nonzero(tiny)) * 2.0 * _UNDERFLOW
    total = float(np.sum(raw))
    steps = max(hi - mode, mode - lo)
    rel = (24.0 * (steps + 1) + raw.size + 4) * UNIT_ROUNDOFF * (1.0 + 1e-6)
    return _Law(raw / total, lo, rel, dropped)


def _trim(values: np.ndarray, budget: float, rel_error: float) -> tuple[np.ndarray, int, float]:
    """Drop end cells of total (upper-bounded) mass ≤ budget; returns (values, shift, dropped)."""
    scale = (1.0 + rel_error) * (1.0 + (values.size + 2) * UNIT_ROUNDOFF)
    head = np.cumsum(values) * scale
    tail = np.cumsum(values[::-1]) * scale
    cut_lo = int(np.searchsorted(head, 0.5 * budget, side="right"))
    cut_hi = int(np.searchsorted(tail, 0.5 * budget, side="right"))
    if cut_lo + cut_hi >= values.size:
        return values, 0, 0.0
    dropped = (float(head[cut_lo - 1]) if cut_lo else 0.0) + (float(tail[cut_hi - 1]) if cut_hi else 0.0)
    return values[cut_lo: values.size - cut_hi], cut_lo, dropped


def _convolve(first: _Law, second: _Law, budget: float) -> _Law:
    """Law of the independent sum (direct convolution of nonnegative terms: relative error ≤
    (min length + 2)·u per cell on top of the summands'), trimmed to excluded mass ≤ budget.
    Products in the subnormal range have an absolute error ≤ 5e-324 each; their total is
    counted as dropped mass."""
    values = np.convolve(first.values, second.values)
    rel = (first.rel_error + second.rel_error + (min(first.values.size, second.values.size) + 2)
           * UNIT_ROUNDOFF) * (1.0 + 1e-6)
    kept, shift, cut = _trim(values, budget, rel)
    subnormal = float(first.values.size) * float(second.values.size) * _SUBNORMAL
    return _Law(kept, first.offset + second.offset + shift, rel,
                first.dropped + second.dropped + cut + subnormal)


def _victim_laws(law: _Law, keep: float, flip: float) -> tuple[np.ndarray, np.ndarray]:
    """Output count with the victim holding 0 (its bit is 1 w.p. flip = 1 − a) and holding 1."""
    padded = np.concatenate(([0.0], law.values, [0.0]))
    stay, shift = padded[1:], padded[:-1]
    return keep * stay + flip * shift, flip * stay + keep * shift


def _hockey_stick_bounds(big: np.ndarray, small: np.ndarray, rel_error: np.ndarray | float,
                         dropped: np.ndarray | float, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """Certified (lower, upper) on D_{e^ε}(P‖Q) for laws given as in :class:`_Law` (last axis =
    counts; rows may be stacked). With η the cell error (+16u for the rounded a, 1 − a, e^ε and
    for forming P, Q and P − e^ε·Q):

        lower = (1 − dropped)·Σ_{P̂ − e^ε·Q̂ > m} (P̂ − e^ε·Q̂ − m) − e^ε·dropped,
        upper = Σ max(0, P̂ − e^ε·Q̂ + m) + dropped,      m = η·(P̂ + e^ε·Q̂),

    each sum of nonnegative terms rounded in the safe direction by (len + 2)·u; results in the
    subnormal range are covered by adding 8·len·5e-324 to ``dropped``.
    """
    scale = math.exp(min(eps, EXP_ARGUMENT_CAP))  # D is non-increasing in ε: capping keeps U valid
    eta = np.asarray(rel_error, dtype=float)[..., None] + 16.0 * UNIT_ROUNDOFF
    diff = big - scale * small
    margin = eta * (big + scale * small)
    width = big.shape[-1]
    summation = (width + 2) * UNIT_ROUNDOFF
    kept = np.sum(np.where(diff > margin, diff - margin, 0.0), axis=-1)
    drop = np.asarray(dropped, dtype=float) + 8.0 * width * _SUBNORMAL  # subnormal cells
    lower = np.maximum(0.0, (1.0 - drop) * kept * (1.0 - summation) - scale * drop)
    if eps > EXP_ARGUMENT_CAP:
        lower = np.zeros_like(lower)
    upper = np.sum(np.maximum(diff + margin, 0.0), axis=-1) * (1.0 + summation) + drop
    return lower, np.minimum(upper, 1.0)


class _CandidateSet:
    """Exact per-configuration laws, stacked for vectorised hockey-stick bounds at any ε."""

    def __init__(self, keep: float, flip: float) -> None:
        self.keep = keep
        self.flip = flip
        self.laws: dict[int, _Law] = {}
        self._stacked: tuple[tuple[int, ...], np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None

    def add(self, holders: int, law: _Law) -> None:
        if holders not in self.laws:
            self.laws[holders] = law
            self._stacked = None

    def _stack(self, subset: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        laws = [self.laws[m] for m in subset]
        width = max(law.values.size for law in laws) + 1
        big = np.zeros((len(laws), width))  # rows left-aligned: a hockey-stick is shift-invariant
        small = np.zeros_like(big)
        for row, law in enumerate(laws):
            p0, p1 = _victim_laws(law, self.keep, self.flip)
            big[row, : p0.size] = p0
            small[row, : p1.size] = p1
        rel = np.array([law.rel_error for law in laws])
        drop = np.array([law.dropped for law in laws])
        return big, small, rel, drop

    def retain(self, eps: float, count: int) -> None:
        """Keep the ``count`` configurations with the largest lower bound at ε (bounded memory)."""
        if len(self.laws) > count:
            ms, lows, _ = self.bounds(eps)
            chosen = {ms[i] for i in np.argsort(lows)[::-1][:count]}
            self.laws = {m: law for m, law in self.laws.items() if m in chosen}
            self._stacked = None

    def bounds(self, eps: float,
               subset: Sequence[int] | None = None) -> tuple[list[int], np.ndarray, np.ndarray]:
        """(configurations, lower bounds, upper bounds) of δ_m(ε), max over both directions."""
        if subset is None:
            chosen = tuple(sorted(self.laws))
            if self._stacked is None or self._stacked[0] != chosen:
                self._stacked = (chosen, *self._stack(chosen))
            _, big, small, rel, drop = self._stacked
        else:
            chosen = tuple(subset)
            big, small, rel, drop = self._stack(chosen)
        low0, up0 = _hockey_stick_bounds(big, small, rel, drop, eps)
        low1, up1 = _hockey_stick_bounds(small, big, rel, drop, eps)
        return list(chosen), np.maximum(low0, low1), np.maximum(up0, up1)


class BinaryRRProfile(InstanceLowerBound):
    """Shuffled binary randomized response: certified exact worst case over all configurations.

    δ(ε) = max_m δ_m(ε) over m = number of other users holding 1 (module docstring). Every query
    returns a certified interval: :meth:`delta_interval` (L, U) with L the exact δ_m of an
    evaluated configuration (rounded down) and U a proved upper bound on every δ_m (branch and
    bound over blocks of configurations); :meth:`epsilon_interval` (ε_lo, ε_hi) with max_m δ_m(ε_lo)
    > δ ≥ max_m δ_m(ε_hi). The search stops when U ≤ L·(1 + rtol) (resp. ε_hi ≤ ε_lo·(1 + rtol)),
    so the profile is exact to that certified relative tolerance. :meth:`delta` and
    :meth:`epsilon` return the lower ends (certified lower bounds, as for every
    :class:`InstanceLowerBound`).

    ``is_exact`` is True unless a query stopped at the ``max_blocks`` evaluation budget (or at
    rounding level) before its interval reached ``rtol``; the interval is certified either way.
    ``full_search=True`` evaluates every configuration exactly instead of bounding blocks
    (n ≤ ``FULL_SEARCH_MAX_USERS``; a cross-check). ``configurations`` lists the configurations
    evaluated exactly (diagnostics).

    Cost: one :meth:`epsilon_interval` at n = 10⁶ takes some 10² block bounds; a
    :meth:`delta_interval` costs more at the same rtol (rtol applies to δ, which moves ~40× faster
    than ε). Slow corner: ε so far in the tail that δ(ε) < 1e-200 at tiny ε0 (e.g. ε0 = 1e-3,
    ε = ε0/2), where the interval is (0, ≤ 1e-279). ``benchmarks/bench_catalog.py`` prints the
    time per query.
    """

    def __init__(self, epsilon0: float, n: int, *, rtol: float = BINARY_RR_RTOL,
                 full_search: bool | None = None, max_blocks: int = BINARY_RR_MAX_BLOCKS) -> None:
        eps0 = check_range("epsilon0", epsilon0, 0.0, math.inf, low_open=True, high_open=True)
        users = check_num_users(n)
        if users < 2:
            raise ValueError(f"n must be at least 2 for a shuffled profile, got {users}")
        self.rtol = check_range("rtol", rtol, 0.0, 1.0, low_open=True, high_open=True)
        if isinstance(max_blocks, bool) or not isinstance(max_blocks, int) or max_blocks < 1:
            raise ValueError(f"max_blocks must be a positive integer, got {max_blocks!r}")
        full = bool(full_search)
        if full and users > FULL_SEARCH_MAX_USERS:
            raise ValueError(f"n must be at most {FULL_SEARCH_MAX_USERS} with full_search=True, got {users}")
        self.epsilon0 = eps0
        self.n = users
        self.full_search = full
        self.max_blocks = max_blocks
        # a = e^ε0/(e^ε0 + 1) and 1 − a, each to full relative precision (1 − a may underflow)
        self.keep = 1.0 / (1.0 + math.exp(-eps0))
        self.flip = 1.0 / (1.0 + math.exp(eps0)) if eps0 < EXP_ARGUMENT_CAP else 0.0
        self.coin_share = 2.0 * self.flip  # P(a user's message is a fair coin) = 2(1 − a)
        self.fixed_share = math.tanh(eps0 / 2.0)  # 1 − 2(1 − a) = 2a − 1
        self.others = users - 1
        self.half = self.others // 2  # δ_m = δ_{others − m} (relabel 0 ↔ 1): m ≤ half suffices
        search = "every configuration evaluated" if full else "branch and bound over configurations"
        self.description = (f"binary randomized response, eps0={eps0}, n={users}: exact worst case "
                            f"({search}), certified to rtol={self.rtol}")
        self.pairs = ()
        self._candidates: dict[float, _CandidateSet] = {}
        self._delta_cache: dict[float, tuple[float, float, int]] = {}
        self._epsilon_cache: dict[float, tuple[float, float]] = {}
        self._all_certified = True

    # -- public API --------------------------------------------------------------------------
    @property
    def is_exact(self) -> bool:  # type: ignore[override]
        """True while every interval returned so far has relative width ≤ rtol."""
        return self._all_certified

    def delta(self, epsilon: float) -> float:
        """Certified lower bound on the shuffled δ(ε) (exact to rtol: see :meth:`delta_interval`)."""
        return self.delta_interval(epsilon)[0]

    def delta_interval(self, epsilon: float) -> tuple[float, float]:
        """(L, U): L ≤ max_m δ_m(ε) ≤ U, U ≤ L·(1 + rtol) unless ``is_exact`` turned False."""
        eps = check_epsilon(epsilon)
        low, up, _ = self._delta_search(eps)
        return low, up

    def worst_configuration(self, epsilon: float) -> int:
        """Number m of other users holding 1 in an evaluated configuration attaining L at ε
        (m ≤ (n − 1)/2; n − 1 − m is equally bad)."""
        eps = check_epsilon(epsilon)
        return self._delta_search(eps)[2]

    def epsilon(self, delta: float) -> float:
        """Certified lower bound on the shuffled ε(δ) (exact to rtol: see :meth:`epsilon_interval`)."""
        return self.epsilon_interval(delta)[0]

    def epsilon_interval(self, delta: float) -> tuple[float, float]:
        """(ε_lo, ε_hi) with δ(ε_lo) > δ ≥ δ(ε_hi) certified; ε_hi ≤ ε_lo·(1 + rtol) unless
        ``is_exact`` turned False. ε_lo = 0 when δ(0) ≤ δ is already certified."""
        target = check_delta(delta)
        if target not in self._epsilon_cache:
            self._epsilon_cache[target] = self._epsilon_search(target)
        return self._epsilon_cache[target]

    @property
    def configurations(self) -> tuple[int, ...]:
        """Configurations m whose δ_m was evaluated exactly so far."""
        found: set[int] = set()
        for cands in self._candidates.values():
            found.update(cands.laws)
        return tuple(sorted(found))

    # -- laws ----------------------------------------------------------------------------------
    def _budget(self, level: float) -> float:
        """Truncated mass allowed per window: ≤ 1e-5·rtol·level, rounded down to a power of ten
        (so that queries at similar levels share their exact configuration laws)."""
        raw = max(_MIN_TRUNCATION, _TRUNCATION_SHARE * self.rtol * level)
        return 10.0 ** math.floor(math.log10(raw))

    def _base_law(self, first: int, last: int, budget: float) -> _Law:
        """Bin(first, a) + Bin(others − last, 1 − a): users holding 1 and 0 outside the block."""
        ones = _binomial_law(first, self.keep, self.flip, budget)
        zeros = _binomial_law(self.others - last, self.flip, self.keep, budget)
        return _convolve(ones, zeros, budget)

    def _candidate_set(self, budget: float) -> _CandidateSet:
        if budget not in self._candidates:
            if len(self._candidates) >= _MAX_CANDIDATE_SETS:  # bound the memory: drop the oldest
                del self._candidates[next(iter(self._candidates))]
            self._candidates[budget] = _CandidateSet(self.keep, self.flip)
        return self._candidates[budget]

    def _evaluate(self, cands: _CandidateSet, holders: Sequence[int], budget: float) -> None:
        for m in holders:
            if m not in cands.laws:
                cands.add(m, self._base_law(m, m, budget))

    def _block_upper(self, first: int, last: int, eps: float, budget: float) -> float:
        """U_block(ε) ≥ δ_m(ε) for every m in [first, last] (module docstring, block bound).

        J ~ Bin(b, 2(1 − a)) free users drew the fair-coin branch; D_J (per direction) is non-
        increasing in J (adding an independent fair coin is post-processing), so each band of J
        values is charged the D of its lowest J; the mass of J below the window is charged 1.
        """
        if last == first:
            base = self._base_law(first, last, budget)
            p0, p1 = _victim_laws(base, self.keep, self.flip)
            up0 = _hockey_stick_bounds(p0, p1, base.rel_error, base.dropped, eps)[1]
            up1 = _hockey_stick_bounds(p1, p0, base.rel_error, base.dropped, eps)[1]
            return float(max(up0, up1))
        bands, outside = self.block_bands(first, last, budget)
        totals = [0.0, 0.0]
        for band_weight, law in bands:
            p0, p1 = _victim_laws(law, self.keep, self.flip)
            totals[0] += band_weight * float(_hockey_stick_bounds(p0, p1, law.rel_error, law.dropped, eps)[1])
            totals[1] += band_weight * float(_hockey_stick_bounds(p1, p0, law.rel_error, law.dropped, eps)[1])
        summation = (len(bands) + 4) * UNIT_ROUNDOFF
        return min(1.0, max(totals) * (1.0 + summation) + outside)

    def block_bands(self, first: int, last: int, budget: float) -> tuple[list[tuple[float, _Law]], float]:
        """The pairs whose mixture bounds every configuration of the block [first, last]
        (``first < last``; module docstring, block bound): for each band of J, its weight
        P[J in band] (rounded up) and the count law of the others at the band's lowest J, and
        the mass of J outside its window (charged 1). Every window truncates ≤ ``budget``."""
        free = last - first
        base = self._base_law(first, last, budget)
        revealed = _binomial_law(free, self.coin_share, self.fixed_share, budget)
        weights = revealed.values
        if weights.size <= _EXACT_BANDS_UP_TO:
            starts = list(range(weights.size))
        else:
            cumulative = np.cumsum(weights)
            starts = sorted({int(np.searchsorted(cumulative, q * cumulative[-1], side="right"))
                             for q in _BAND_QUANTILES[1:]} | {0})
            starts = [s for s in starts if s < weights.size]
        weight_factor = (1.0 + revealed.rel_error) * (1.0 + (weights.size + 2) * UNIT_ROUNDOFF)
        bands = []
        law = base
        coins = 0
        for index, start in enumerate(starts):
            stop = starts[index + 1] if index + 1 < len(starts) else weights.size
            band_weight = float(np.sum(weights[start:stop])) * weight_factor
            coins_here = revealed.offset + start
            law = _convolve(law, _binomial_law(coins_here - coins, 0.5, 0.5, budget), budget)
            coins = coins_here
            bands.append((band_weight, law))
        return bands, revealed.dropped

    def configuration_law(self, holders: int, budget: float) -> _Law:
        """Count law of the others when ``holders`` of them hold 1 (windows truncating ≤
        ``budget`` each)."""
        return self._base_law(holders, holders, budget)

    def initial_blocks(self) -> list[tuple[int, int]]:
        """[0, 0], [1, 1], [2, 3], [4, 7], …: geometric (the worst m sits near the ends)."""
        if self.full_search:
            return [(m, m) for m in range(self.half + 1)]
        blocks, first = [], 0
        while first <= self.half:
            last = min(self.half, max(first, 2 * first - 1) if first else 0)
            blocks.append((first, last))
            first = last + 1
        return blocks

    # -- δ(ε): best-first branch and bound ---------------------------------------------------
    def _seeds(self) -> list[int]:
        return sorted(m for m in {0, 1, 2, 4, 8, self.half} if m <= self.half)

    def _delta_search(self, eps: float) -> tuple[float, float, int]:
        if eps in self._delta_cache:
            return self._delta_cache[eps]
        if eps >= self.epsilon0:
            result = (0.0, 0.0, 0)  # ε0-LDP: every likelihood ratio is within e^{±ε0}
            self._delta_cache[eps] = result
            return result
        # truncation budget relative to the level of δ: probe it on a few configurations
        budget = 1e-24
        while True:
            probe = self._candidate_set(budget)
            self._evaluate(probe, self._seeds(), budget)
            level = float(np.max(probe.bounds(eps, self._seeds())[1]))
            needed = self._budget(level)
            if needed >= budget or budget <= _MIN_TRUNCATION:
                budget = max(budget, needed)
                break
            budget = needed
        cands = self._candidate_set(budget)
        blocks = self.initial_blocks()
        self._evaluate(cands, [b[0] for b in blocks] if self.full_search else self._seeds(), budget)
        ms, lows, ups = cands.bounds(eps)
        best = int(np.argmax(lows))
        low, worst = float(lows[best]), ms[best]
        if self.full_search:
            result = (low, max(low, float(np.max(ups))), worst)
            self._finish_delta(eps, result)
            return result
        heap: list[tuple[float, int, int]] = []
        exact_upper = dict(zip(ms, ups.tolist()))
        for first, last in blocks:
            upper = exact_upper[first] if first == last and first in exact_upper else (
                self._block_upper(first, last, eps, budget))
            heapq.heappush(heap, (-upper, first, last))
        settled = 0.0  # largest upper bound of the configurations evaluated one by one
        evaluated = 0
        while heap and -heap[0][0] > max(low * (1.0 + self.rtol), _NEGLIGIBLE_DELTA) and (
                evaluated < self.max_blocks):
            _, first, last = heapq.heappop(heap)
            if last - first + 1 <= _LEAF_CONFIGURATIONS:
                members = list(range(first, last + 1))
                self._evaluate(cands, members, budget)
                _, m_low, m_up = cands.bounds(eps, members)
                for m, m_lo, m_hi in zip(members, m_low.tolist(), m_up.tolist()):
                    if m_lo > low:
                        low, worst = m_lo, m
                    settled = max(settled, m_hi)  # (above L·(1 + rtol) only at rounding level)
                continue
            middle = (first + last) // 2
            self._evaluate(cands, [middle], budget)
            _, m_low, _ = cands.bounds(eps, [middle])
            if float(m_low[0]) > low:
                low, worst = float(m_low[0]), middle
            for child in ((first, middle), (middle + 1, last)):
                evaluated += 1
                heapq.heappush(heap, (-self._block_upper(child[0], child[1], eps, budget), *child))
        upper = max(low, settled, -heap[0][0] if heap else 0.0)
        result = (low, upper, worst)
        cands.retain(eps, _RETAINED_CANDIDATES)
        self._finish_delta(eps, result)
        return result

    def _finish_delta(self, eps: float, result: tuple[float, float, int]) -> None:
        low, upper, _ = result
        if upper > max(low * (1.0 + self.rtol), _NEGLIGIBLE_DELTA):
            self._all_certified = False
        self._delta_cache[eps] = result

    # -- ε(δ): lower end from exact configurations, upper end certified by blocks -------------
    def _lower_end(self, cands: _CandidateSet, target: float, rank_at: float) -> float:
        """Largest ε found with max over the top configurations (ranked at ``rank_at``) of the
        certified lower δ_m(ε) above ``target``: a certified lower bound on ε(δ)."""
        ms, lows, _ = cands.bounds(rank_at)
        top = [ms[i] for i in np.argsort(lows)[::-1][:_TOP_CANDIDATES]]
        return epsilon_lower(lambda e: float(np.max(cands.bounds(e, top)[1])), target,
                              self.epsilon0, rtol=1e-7)

    def _epsilon_search(self, target: float) -> tuple[float, float]:
        budget = self._budget(target)
        cands = self._candidate_set(budget)
        blocks = self.initial_blocks()
        self._evaluate(cands, self._seeds(), budget)
        eps_lo = self._lower_end(cands, target, 0.0)
        if self.full_search:
            self._evaluate(cands, [b[0] for b in blocks], budget)
            eps_lo = max(eps_lo, self._lower_end(cands, target, eps_lo))
        eps_hi = self._epsilon_step(eps_lo)
        pending = list(reversed(blocks))  # a stack: blocks near the ends first
        steps = 0
        while pending and eps_hi < self.epsilon0:  # at ε0 every δ_m is 0 (ε0-LDP)
            steps += 1
            if steps > self.max_blocks:
                self._all_certified = False
                return eps_lo, self.epsilon0  # the LDP bound: δ(ε0) = 0
            first, last = pending.pop()
            if last - first + 1 <= _LEAF_CONFIGURATIONS:
                members = list(range(first, last + 1))
                self._evaluate(cands, members, budget)
                _, m_low, m_up = cands.bounds(eps_hi, members)
                if float(np.max(m_low)) > target:  # a worse configuration: raise the lower end
                    eps_lo = max(self._lower_end(cands, target, eps_hi), eps_hi)
                    eps_hi = self._epsilon_step(eps_lo)
                    pending.append((first, last))
                elif float(np.max(m_up)) > target:  # tie at rounding level: step the upper end
                    eps_hi = self._epsilon_step(max(eps_hi, 1e-9 * self.epsilon0))
                    pending.append((first, last))
                continue
            if self._block_upper(first, last, eps_hi, budget) <= target:
                continue  # pruned at eps_hi, hence (U non-increasing in ε) at every larger ε
            middle = (first + last) // 2
            pending.extend([(middle + 1, last), (first, middle)])
        if eps_hi > eps_lo * (1.0 + self.rtol) * (1.0 + 1e-12):
            self._all_certified = False
        if not self.full_search:
            cands.retain(eps_hi, _RETAINED_CANDIDATES)
        return eps_lo, eps_hi

    def _epsilon_step(self, eps: float) -> float:
        return min(self.epsilon0, eps * (1.0 + self.rtol))


def binary_rr_exact_delta(epsilon0: float, n: int, epsilon: float) -> float:
    """Exact shuffled δ(ε) of binary randomized response, worst case over all configurations,
    by evaluating every configuration (the certified lower end of :meth:`BinaryRRProfile.
    delta_interval` with ``full_search=True``: rounding margins only, no truncation of m).

    Raises ValueError for n > ``FULL_SEARCH_MAX_USERS``; for larger n use
    :meth:`BinaryRRProfile.delta_interval` (branch and bound, certified to ``rtol``).
    """
    users = check_num_users(n)
    if users > FULL_SEARCH_MAX_USERS:
        raise ValueError(
            f"n must be at most {FULL_SEARCH_MAX_USERS} for the exhaustive configuration search, "
            f"got {users}")
    return BinaryRRProfile(epsilon0, users, full_search=True).delta(epsilon)


__all__ = [
    "BINARY_RR_RTOL",
    "FULL_SEARCH_MAX_USERS",
    "BinaryRRProfile",
    "binary_rr_exact_delta",
]
