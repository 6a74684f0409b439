"""Shuffled binary randomized response at every ε at once: a certified curve δ(ε) built once per
(ε0, n) from the exact configuration laws and the block bounds of
:mod:`~dpacct_shuffle.randomizers.binary_rr_exact` (docs/theory.md, "Binary randomized response at
every ε").

Setting (as in :mod:`~dpacct_shuffle.randomizers.binary_rr_exact`): n users, binary RR keeping
the bit w.p. a = e^ε0/(e^ε0 + 1); the server sees the count of ones; with m of the n − 1 others
holding 1, the count is S_m + V (S_m = Bin(m, a) + Bin(n − 1 − m, 1 − a), V the victim's bit) and
δ(ε) = max_m δ_m(ε), δ_m the larger of the two hockey-stick divergences. Binary RR has one victim
pair, (0, 1), up to relabelling, and δ_m = δ_{n−1−m}, so m ≤ (n − 1)/2 with both directions
covers every neighbouring pair.

Curve. Every component below is an explicit finite pair (P, Q) on counts — one configuration m,
or the mixture over the bands of J of a block of configurations (block bound of
:mod:`~dpacct_shuffle.randomizers.binary_rr_exact`: δ_m ≤ U_block for every m of the block) — with
cell masses known to a relative error η and a truncated mass τ. For one direction and all ε ≥ 0 at
once,

    D_{e^ε}(P‖Q) ≤ Σ_{ℓ_c > ε} P'_c·(1 − e^{ε − ℓ_c}) + τ,   P'_c = (1 + η)P̂_c, Q'_c = (1 − η)Q̂_c,

with ℓ_c ≥ ln(P'_c/Q'_c) (rounded up): each true term (P_c − e^ε·Q_c)⁺ ≤ (P'_c − e^ε·Q'_c)⁺, and
P'(1 − e^{ε − ℓ}) is non-decreasing in ℓ and ≥ 0 where ℓ > ε. Sorting the cells by ℓ and
keeping reverse cumulative sums of P'_c and P'_c·e^{−ℓ_c} gives the sum at every ε by one binary
search (no δ search). Within one count law the loss is monotone in the count (the law of S_m + V
is log-concave), so the cells come sorted up to rounding; a running maximum makes the losses
non-decreasing (raising a loss keeps the bound valid). Float error of the sums: ≤ (cells + 8)·u
relative to S_P + e^ε·S_Q; twice that is added.

The components are evaluated on a grid ε_0 = 0 < ε_1 < … < ε_K = ε0 (``CURVE_POINTS`` points up to
the ε where the configuration m = 0's δ falls below 1e-18, geometric points towards 0, a few more
up to ε0, and δ(ε0) = 0: ε0-LDP). U(ε_j) = max over components is an upper bound on δ(ε_j).
Between grid points the chord in x = e^ε is used: the true δ(x) = max over configurations and directions of
hockey-stick divergences is convex in x, so it lies below the chord of any upper values at the
chord's ends (grid x rounded up, the queried x rounded down: δ is non-increasing).

Which blocks (tightness only, never soundness): exact configurations {0, 1, 2, 4, 8, (n − 1)/2}
and then blocks [0, 0], [1, 1], [2, 3], [4, 7], …; a block is kept when its curve is below the
exact configurations' curve shifted by a relative ``CURVE_EPSILON_TOLERANCE`` in ε (or within
``_DELTA_TOLERANCE`` of it in δ, where δ is flat in ε) at every grid point with δ >
``_CURVE_FLOOR``, else split in halves (its middle evaluated exactly); blocks of at most four
configurations are evaluated one by one. Measured (tests/test_binary_rr_curve.py): ε(δ) within
1e-3 of the exact worst case at δ ≤ 1e-4, and ∫δ dε within 1e-3 of it.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.typing import NDArray

from dpacct_shuffle.core.bound import VariationRatio
from dpacct_shuffle.core.problem import UNIT_ROUNDOFF
from dpacct_shuffle.core.validation import (check_delta, check_epsilon, check_epsilon0,
                                             check_num_users, check_range)
from dpacct_shuffle.randomizers.base import LocalPairBound, PairBound
from dpacct_shuffle.randomizers.binary_rr_exact import (_LEAF_CONFIGURATIONS, _SUBNORMAL,
                                                        BINARY_RR_RTOL, BinaryRRProfile, _Law,
                                                        _victim_laws)

#: points of the curve's ε grid below the tail level (chords between them, in e^ε)
CURVE_POINTS = 512
#: a block of configurations is split unless its curve is within this relative shift in ε of the
#: worst exact configuration's (tightness only)
CURVE_EPSILON_TOLERANCE = 4e-4
#: the curve is built for n up to this many users (its cost grows about linearly in n)
CURVE_MAX_USERS = 1_000_000
_CURVE_BUDGET = 1e-26  # truncated mass per window
_CURVE_FLOOR = 1e-17  # blocks are not split for grid points with δ below this
_TAIL_LEVEL = 1e-18  # the dense grid ends where configuration m = 0's δ is below this
_TAIL_POINTS = 16  # grid points between the tail level and ε0
_NEAR_ZERO_POINTS = 256  # geometric grid points from 1e-6·ε_tail to ε_tail (small ε, large δ)
_DELTA_TOLERANCE = 2e-3  # ... or within this relative excess in δ (where δ is flat in ε)


class _DirectionCurve:
    """Upper bound on D_{e^ε}(P‖Q) at every ε ≥ 0 for a mixture of count pairs (module
    docstring): per part, the cells' losses (rounded up) and masses P'; ``constant`` is added."""

    __slots__ = ("_parts", "constant")

    def __init__(self) -> None:
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.constant = 0.0

    def add(self, loss: np.ndarray, mass: np.ndarray, constant: float) -> None:
        """One part: cells of masses P'_c and losses ℓ_c ≥ ln(P'_c/Q'_c), in the order of the
        counts (the loss is monotone along them up to rounding), and a constant term."""
        if loss.size > 1 and loss[0] > loss[-1]:  # the loss falls along the counts
            loss, mass = loss[::-1], mass[::-1]
        loss = np.maximum.accumulate(loss)  # raising a loss keeps the bound
        p_tail = np.concatenate([np.cumsum(mass[::-1])[::-1], [0.0]])
        q_tail = np.concatenate([np.cumsum((mass * np.exp(-loss))[::-1])[::-1], [0.0]])
        self._parts.append((loss, p_tail, q_tail))
        self.constant += constant * (1.0 + 8.0 * UNIT_ROUNDOFF)

    def deltas(self, epsilons: NDArray[np.float64]) -> NDArray[np.float64]:
        """The bound at every ε ≥ 0 of ``epsilons`` (not capped at 1)."""
        scale = np.exp(epsilons)
        total = np.zeros_like(epsilons)
        for loss, p_tail, q_tail in self._parts:
            first = np.searchsorted(loss, epsilons, side="right")
            s_p = p_tail[first]
            s_q = q_tail[first] * scale
            slack = (2.0 * loss.size + 16.0) * UNIT_ROUNDOFF
            total += np.maximum(s_p - s_q, 0.0) + slack * (s_p + s_q)
        return total * (1.0 + (len(self._parts) + 4) * UNIT_ROUNDOFF) + self.constant


class _PairCurves:
    """Both directions of one component (a configuration or a block): a mixture of count laws
    with weights (rounded up), each with the victim's bit added."""

    __slots__ = ("forward", "backward")

    def __init__(self, keep: float, flip: float, weighted_laws: list[tuple[float, _Law]]) -> None:
        self.forward, self.backward = _DirectionCurve(), _DirectionCurve()
        for weight, law in weighted_laws:
            p0, p1 = _victim_laws(law, keep, flip)
            # η: the law's error and the roundings of a, 1 − a, the weight and the products;
            # ln((1 + η)/(1 − η)) = 2η(1 + η²/3 + …) ≤ 2.0001·η (η < 0.01)
            eta = law.rel_error + 20.0 * UNIT_ROUNDOFF
            margin = 2.0001 * eta
            both = (p0 > 0.0) & (p1 > 0.0)
            log_ratio = np.log(p0[both] / p1[both])  # absolute error ≤ 2u·(1 + |value|)
            up = weight * (1.0 + eta)
            subnormal = 8.0 * p0.size * _SUBNORMAL  # cells in the subnormal range
            for curve, big, sign in ((self.forward, p0, 1.0), (self.backward, p1, -1.0)):
                loss = (sign * log_ratio + margin) * (1.0 + 1e-12) + 8.0 * UNIT_ROUNDOFF
                positive = loss > 0.0
                # cells where only this direction's law has mass: infinite loss (P' at every ε)
                alone = float(np.sum(big[(big > 0.0) & ~both])) * up
                curve.add(loss[positive], up * big[both][positive],
                          alone + weight * (law.dropped + subnormal))

    def deltas(self, epsilons: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.maximum(self.forward.deltas(epsilons), self.backward.deltas(epsilons))


class BinaryRRCurve:
    """Certified upper bound on the shuffled binary RR δ(ε) at every ε ≥ 0, built once for (ε0, n)
    (module docstring; build with :func:`binary_rr_curve`).

    Attributes:
      epsilon0: the local guarantee (δ = 0 from there on).
      n: number of users (≥ 2).
      epsilons: the grid, increasing, from 0 to ε0.
      deltas_on_grid: certified upper bounds on δ at the grid points (0 at ε0).
      configurations: configurations m evaluated exactly; blocks: the blocks of configurations
        kept as (first, last) (diagnostics).
    """

    def __init__(self, epsilon0: float, n: int) -> None:
        self.epsilon0 = check_epsilon0(epsilon0)
        self.n = check_num_users(n)
        if self.n < 2:
            raise ValueError(f"n must be at least 2 for a shuffled curve, got {self.n}")
        profile = BinaryRRProfile(self.epsilon0, self.n)
        keep, flip, half = profile.keep, profile.flip, profile.half
        def configuration(m: int) -> _PairCurves:
            return _PairCurves(keep, flip, [(1.0, profile.configuration_law(m, _CURVE_BUDGET))])

        first_seed = configuration(0)
        self.epsilons = self._grid(first_seed)
        grid = self.epsilons[:-1]
        shifted = grid * (1.0 - CURVE_EPSILON_TOLERANCE)
        # at: max over the exact configurations at the grid, below: at the shifted grid
        at, below = first_seed.deltas(grid), first_seed.deltas(shifted)
        exact = {0}

        def evaluate(m: int) -> None:
            nonlocal at, below
            if m not in exact:
                exact.add(m)
                curves = configuration(m)
                at = np.maximum(at, curves.deltas(grid))
                below = np.maximum(below, curves.deltas(shifted))

        for m in (1, 2, 4, 8, half):
            if m <= half:
                evaluate(m)
        upper = np.zeros_like(grid)
        kept: list[tuple[int, int]] = []
        pending = profile.initial_blocks()[::-1]
        while pending:
            first, last = pending.pop()
            if last - first + 1 <= _LEAF_CONFIGURATIONS:
                for m in range(first, last + 1):
                    evaluate(m)
                continue
            bands, outside = profile.block_bands(first, last, _CURVE_BUDGET)
            values = _PairCurves(keep, flip, bands).deltas(grid) + outside
            # tightness test: within the ε shift of the exact configurations (or a relative
            # _DELTA_TOLERANCE in δ, where δ is flat in ε)
            allowed = np.maximum(below, at * (1.0 + _DELTA_TOLERANCE))
            if np.all((values <= allowed) | (at <= _CURVE_FLOOR)):
                upper = np.maximum(upper, values)
                kept.append((first, last))
                continue
            middle = (first + last) // 2
            evaluate(middle)
            pending.extend([(middle + 1, last), (first, middle)])
        upper = np.minimum(np.maximum(upper, at), 1.0)
        # non-increasing (the true δ is): a running minimum of upper bounds stays an upper bound
        self.deltas_on_grid = np.append(np.minimum.accumulate(upper), 0.0)
        self._xs = np.exp(self.epsilons) * (1.0 + 4.0 * UNIT_ROUNDOFF)  # rounded up
        self.configurations = tuple(sorted(exact))
        self.blocks = tuple(sorted(kept))

    def _grid(self, worst: _PairCurves) -> NDArray[np.float64]:
        """0 … ε_tail (``CURVE_POINTS`` points) … ε0: ε_tail where ``worst`` falls below
        ``_TAIL_LEVEL`` (bisection on its curve), or ε0."""
        low, high = 0.0, self.epsilon0
        if float(worst.deltas(np.array([0.0]))[0]) > _TAIL_LEVEL:
            for _ in range(60):
                middle = 0.5 * (low + high)
                if float(worst.deltas(np.array([middle]))[0]) > _TAIL_LEVEL:
                    low = middle
                else:
                    high = middle
        tail = high
        dense = np.linspace(0.0, tail, CURVE_POINTS)
        near_zero = tail * np.geomspace(1e-6, 1.0, _NEAR_ZERO_POINTS)
        rest = np.linspace(tail, self.epsilon0, _TAIL_POINTS + 1)[1:]
        points = np.unique(np.concatenate([dense, near_zero, rest]))
        points[-1] = self.epsilon0
        return points

    def deltas(self, epsilons: NDArray[np.float64]) -> NDArray[np.float64]:
        """Certified upper bounds on δ(ε) at every ε ≥ 0 of ``epsilons`` (0 at and above ε0): the
        chord in e^ε of the grid values (module docstring)."""
        eps = np.asarray(epsilons, dtype=np.float64)
        x = np.exp(np.minimum(eps, self.epsilon0)) * (1.0 - 4.0 * UNIT_ROUNDOFF)  # rounded down
        values = np.interp(x, self._xs, self.deltas_on_grid)
        left = np.clip(np.searchsorted(self._xs, x, side="right") - 1, 0, len(self._xs) - 1)
        values = values * (1.0 + 8.0 * UNIT_ROUNDOFF) + 8.0 * UNIT_ROUNDOFF * self.deltas_on_grid[left]
        return np.where(eps >= self.epsilon0, 0.0, np.minimum(values, 1.0))

    def delta(self, epsilon: float) -> float:
        """:meth:`deltas` at one ε ≥ 0."""
        return float(self.deltas(np.array([check_epsilon(epsilon)]))[0])

    def epsilon(self, delta: float) -> float:
        """The smallest ε found (to 2⁻⁶⁰ of a grid interval) with :meth:`delta` ``(ε) ≤ delta``: the
        curve's own inverse, so that ``delta(epsilon(δ)) ≤ δ`` holds exactly (0 if δ(0) ≤ δ;
        ε0 at worst, where the curve is 0)."""
        target = check_delta(delta)
        values = self.deltas(self.epsilons)
        below = np.flatnonzero(values <= target)
        first = int(below[0]) if below.size else len(self.epsilons) - 1
        if first == 0:
            return 0.0
        low, high = float(self.epsilons[first - 1]), float(self.epsilons[first])
        if not self.delta(high) <= target:
            return self.epsilon0  # δ(ε0) = 0 (ε0-LDP)
        for _ in range(60):
            middle = 0.5 * (low + high)
            if middle <= low or middle >= high:
                break
            if self.delta(middle) <= target:
                high = middle
            else:
                low = middle
        return high


@functools.lru_cache(maxsize=64)
def binary_rr_curve(epsilon0: float, n: int) -> BinaryRRCurve:
    """The :class:`BinaryRRCurve` of (ε0, n), cached (the 64 most recent; each keeps only its
    grid values)."""
    return BinaryRRCurve(epsilon0, n)


class BinaryRRExactUpper(PairBound):
    """Certified upper ends of the exact shuffled binary RR profile (:class:`BinaryRRProfile`).

    ``BinaryRRProfile(ε0, n).delta_interval(ε)[1]`` bounds max_m δ_m(ε) over every configuration
    m of the others (branch and bound over blocks of configurations, module docstring),
    and ``epsilon_interval(δ)[1]`` is an ε at which that certified bound is ≤ δ: both are upper
    bounds for every victim pair of binary RR (its only pair is (0, 1), up to relabelling), so this
    is a valid fallback of the ``binary_rr`` entry (the reported value is the minimum with the
    clone bound). Its ε(δ) is exact to the profile's rtol (:data:`BINARY_RR_RTOL` = 1e-3).

    Cost control (validity is unaffected: every returned value is a certified upper bound):

    * δ(ε) queries use a profile with ``delta_rtol`` = 0.05 (δ moves much faster than ε: a PLD
      of ``binary_rr(1)`` at n = 10⁶ from a profile grid gives ε(1e-8) = 0.004189 with 0.05,
      0.004182 with 1e-2 at less than half the cost; 0.00511 from the clone bound alone);
    * where the clone bound (``VariationRatio.worst_case(ε0)``) is already ≤ ``NEGLIGIBLE_DELTA``
      (1e-30), that value is returned without the profile: certifying the deep tail is the
      costliest query and cannot matter at that level;
    * n = 1: the shuffled output is the local message: its local hockey-stick divergence
      (:class:`LocalPairBound` of the two rows);
    * n > ``EXACT_MAX_USERS`` (4·10⁶): the trivial bounds δ ≤ clone bound, ε ≤ ∞ (the entry then
      reports the clone bound alone): the cost of one ε(δ) query grows about linearly in n up
      to there and faster beyond;
    * many ε at once (:meth:`deltas_at_rtol`, the privacy profiles of a round's PLD): the curve of
      :func:`binary_rr_curve`, built once per n (2 ≤ n ≤ ``CURVE_MAX_USERS``) for every ε, about
      0.05 % above the exact ε(δ) instead of ``delta_rtol`` in δ.

    Profiles (with their caches) are kept for the ``CACHED_USER_COUNTS`` most recent n.
    """

    NEGLIGIBLE_DELTA = 1e-30
    CACHED_USER_COUNTS = 4
    EXACT_MAX_USERS = 4_000_000

    def __init__(self, epsilon0: float, delta_rtol: float = 0.05) -> None:
        self.epsilon0 = check_epsilon0(epsilon0)
        self.delta_rtol = check_range("delta_rtol", delta_rtol, 0.0, 1.0, low_open=True, high_open=True)
        self._clone = VariationRatio.worst_case(self.epsilon0)
        self._profiles: dict[tuple[int, float], BinaryRRProfile] = {}
        keep = 1.0 / (1.0 + math.exp(-self.epsilon0))
        self._local = LocalPairBound(np.array([[keep, 1.0 - keep]]), np.array([[1.0 - keep, keep]]))

    def _profile(self, n: int, rtol: float) -> BinaryRRProfile:
        key = (n, rtol)
        profile = self._profiles.pop(key, None)
        if profile is None:
            profile = BinaryRRProfile(self.epsilon0, n, rtol=rtol)
        self._profiles[key] = profile  # most recent last
        while len(self._profiles) > 2 * self.CACHED_USER_COUNTS:
            self._profiles.pop(next(iter(self._profiles)))
        return profile

    def delta(self, epsilon: float, n: int) -> float:
        if n < 2:
            return self._local.delta(epsilon, n)
        clone = self._clone.delta(epsilon, n)
        if n <= CURVE_MAX_USERS:
            return min(clone, binary_rr_curve(self.epsilon0, n).delta(epsilon))
        if clone <= self.NEGLIGIBLE_DELTA or n > self.EXACT_MAX_USERS:
            return clone
        return min(clone, self._profile(n, self.delta_rtol).delta_interval(epsilon)[1])

    def epsilon(self, delta: float, n: int) -> float:
        """An ε with :meth:`delta` ``(ε, n) ≤ delta`` (the two queries agree): the curve's inverse
        for n ≤ ``CURVE_MAX_USERS``; above, the profile's certified ε_hi, raised in steps of a
        relative 4·``BINARY_RR_RTOL`` until the (coarser) δ query is within ``delta`` there too."""
        if n < 2:
            return self._local.epsilon(delta, n)
        if n <= CURVE_MAX_USERS:
            return binary_rr_curve(self.epsilon0, n).epsilon(delta)
        if n > self.EXACT_MAX_USERS:
            return math.inf  # trivial: the cover's clone bound is reported
        eps = self._profile(n, BINARY_RR_RTOL).epsilon_interval(delta)[1]
        while eps < self.epsilon0 and self.delta(eps, n) > delta:
            eps = min(self.epsilon0, eps * (1.0 + 4.0 * BINARY_RR_RTOL))
        return eps

    def __repr__(self) -> str:
        return f"BinaryRRExactUpper(epsilon0={self.epsilon0!r})"

    def deltas_at_rtol(self, epsilons: NDArray[np.float64], n: int,
                       rtol: float) -> NDArray[np.float64]:
        """Upper bounds at every ε of ``epsilons``: the curve of :func:`binary_rr_curve` for
        2 ≤ n ≤ ``CURVE_MAX_USERS`` (``rtol`` unused: the curve has no bracket), else
        :meth:`delta` at each ε."""
        if 2 <= n <= CURVE_MAX_USERS:
            return binary_rr_curve(self.epsilon0, n).deltas(np.asarray(epsilons, dtype=np.float64))
        return super().deltas_at_rtol(epsilons, n, rtol)


__all__ = ["BinaryRRCurve", "BinaryRRExactUpper", "CURVE_MAX_USERS", "binary_rr_curve"]
