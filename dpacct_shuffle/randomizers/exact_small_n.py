"""Exact shuffled δ(ε) of finite randomizers at small n, certified, within a work budget
(docs/theory.md, "Exact values at small n").

Setting. Each user applies a finite randomizer R (rows = inputs, columns = outputs); the shuffler
releases the histogram H of the n reports. For a victim pair (x, x′) and fixed inputs of the other
n − 1 users, let O be the law of the others' histogram. The two released laws are

    P_x(h) = Σ_o R[x, o]·O(h − e_o),      P_x′(h) = Σ_o R[x′, o]·O(h − e_o),

and the protocol's δ(ε) is the maximum over (x, x′), both orders, and the others' inputs of the
hockey-stick divergence D_{e^ε}(P_x ‖ P_x′) = Σ_h (P_x(h) − e^ε·P_x′(h))⁺. O depends on the others'
inputs only through how many hold each input (a *configuration*: a composition of n − 1 into
d parts; for groups with their own randomizers, one composition per group), so enumerating the
configurations gives the exact worst case. Random inputs of the others need not be considered: a
mixture of configurations gives a mixture of law pairs, and the hockey-stick divergence is jointly
convex.

Reductions (each exact):

* *identical columns*: outputs o, o′ with R[·, o] = R[·, o′] (every randomizer of the round) are
  merged; given the merged histogram the split of the merged count is Binomial(count, ½) whatever
  the inputs, so the merged histogram is a sufficient statistic (same divergence);
* *input symmetry*: if for every transposition σ of input 0 with input a the permuted matrix
  R[σ(·), ·] has the same multiset of columns as R (checked with exact float equality), relabelling
  inputs is relabelling outputs, a bijection of histograms; the transpositions generate every
  permutation, so the pair (0, 1) and configurations with the counts of inputs 2, …, d − 1
  non-increasing cover every (pair, configuration).

Numerics (every value on the safe side). Histograms live in a box of (n + 1)^(k − 1) cells (the
last output's count is implied). Each law is built by adding one user at a time:
L′(h) = Σ_o R[x, o]·L(h − e_o), nonnegative terms, at most k + 2 roundings per added user
(merged entries carry one more), so after t users every cell has relative error
≤ γ_{t(k+2)}, γ_j = j·u/(1 − j·u), u = 2⁻⁵³, plus an absolute error of total mass
≤ t·cells·(k + 2)·2⁻¹⁰⁷⁴ from subnormal results. With η = γ_{n(k+2)} the exact laws satisfy
P ≤ P̂ := P̃·(1 + 2η + 2u) and P ≥ P̌ := P̃·(1 − 2η − 2u). Then

* upper: Σ_h (P − e^ε·Q)⁺ ≤ sup_S Σ_S (P̂ − e^ε·Q̌) + slack. Cells sorted by ℓ = ln P̂ − ln Q̌; the
  set T = {ℓ > ε − τ} (τ = 1e-11 exceeds the float error of ℓ) contains every positive cell, and
  its cells with ℓ ≤ ε are charged (e^τ − 1)·e^ε·Q̌(T). Prefix sums of nonnegative terms err by
  ≤ γ_m relatively (m cells), so with A = Σ_T P̂, B = Σ_T Q̌:
  δ_upper = A(1 + γ_m + 4u) − e^ε·B·((1 − γ_m)(1 − 2u) − (e^τ − 1)(1 + 2u)(1 + γ_m) − 4u) + abs.
* lower: any set S gives Σ_S (P − e^ε·Q) ≥ Σ_S (P̌ − e^ε·Q̂); the prefix sets in the order of
  ℓ′ = ln P̌ − ln Q̂ with prefix sums rounded down give a certified lower bound, maximised over
  the prefixes.

On the prefix t (the t cells of largest ℓ) both are a_t − e^ε·b_t, so one pass over the
configurations serves any number of ε (prefix by binary search) and the inverse ε(δ) in closed form:
ε_upper(δ) = max over curves and prefixes t of min(ln((a_t − δ)/b_t), end of the ε-range where
T has t cells) (the sup of {ε : δ_upper(ε) > δ}, rounded up), and ε_lower(δ) = max over curves and
prefixes of ln((a_t − δ)/b_t) (rounded down).

Work budget. The cost is about configurations × box cells × (victim pairs + 1 + (n − 1)/(64·d));
families above
:data:`WORK_BUDGET` are not evaluated (the callers keep their other bounds).
"""

from __future__ import annotations

import itertools
import math
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Callable, Iterator, Sequence

import numpy as np
from numpy.typing import NDArray

from dpacct_shuffle.core.problem import UNIT_ROUNDOFF

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: Largest configurations × box cells × (victim pairs + 1) evaluated (about a second of CPU).
WORK_BUDGET = 15_000_000
#: Margin on the computed log-likelihood ratio (far above its float error, |ℓ| ≤ 1500).
LOG_MARGIN = 1e-11
#: Lower bounds on ε are reported at most this (e^700 is still a finite double).
EPSILON_CAP = 700.0
_SUBNORMAL = 2.0**-1074
_CACHE_SIZE = 32
# Curves of one ExactShuffle kept between queries up to this many bytes (cut to ε ≥ 0)
_CURVE_CACHE_BYTES = 64 * 2**20
_BATCH_CELLS = 60_000


def _gamma(count: float) -> float:
    """γ_j = j·u/(1 − j·u): relative error of j roundings (Higham, Accuracy and Stability of
    Numerical Algorithms, Lemma 3.1)."""
    ju = count * UNIT_ROUNDOFF
    if ju >= 0.5:
        raise ValueError("too many roundings for a certified float bound")
    return ju / (1.0 - ju)


def merge_identical_columns(matrices: Sequence[FloatArray]) -> tuple[list[FloatArray], int]:
    """The matrices with outputs merged where the columns agree in every matrix (module docstring),
    and the largest number of columns merged into one."""
    stacked = np.concatenate([np.asarray(m, dtype=np.float64) for m in matrices], axis=0)
    _, first, inverse, counts = np.unique(stacked, axis=1, return_index=True, return_inverse=True,
                                          return_counts=True)
    del inverse
    merged = [np.asarray(m, dtype=np.float64)[:, first] * counts.astype(np.float64)
              for m in matrices]
    return merged, int(counts.max())


def is_input_symmetric(matrix: FloatArray) -> bool:
    """Whether every transposition of input 0 with another input only relabels the outputs (the
    same multiset of columns, exact float equality): then every permutation of the inputs does."""
    reference = np.unique(matrix, axis=1, return_counts=True)
    for other in range(1, matrix.shape[0]):
        order = list(range(matrix.shape[0]))
        order[0], order[other] = other, 0
        columns, counts = np.unique(matrix[order], axis=1, return_counts=True)
        if not (np.array_equal(columns, reference[0]) and np.array_equal(counts, reference[1])):
            return False
    return True


def _partitions_at_most(total: int, parts: int) -> list[int]:
    """p[r] = number of partitions of r ≤ ``total`` into at most ``parts`` parts."""
    counts = [1] + [0] * total
    for size in range(1, parts + 1):  # partitions into parts ≤ size = at most size parts
        for r in range(size, total + 1):
            counts[r] += counts[r - size]
    return counts


@dataclass(frozen=True)
class ShuffleFamily:
    """All instances of one victim randomizer among groups of other users.

    ``victim`` is the victim's matrix, ``groups`` the other users' (matrix, count) — all with the
    same (merged) columns — and ``pairs`` the victim pairs (x, x′) to evaluate (both orders each);
    ``symmetric``: a single group equal to the victim's matrix, input-symmetric (module docstring),
    with ``pairs`` = ((0, 1),): configurations with the counts of inputs ≥ 2 non-increasing.
    ``merged`` is the largest number of original columns merged into one (rounding count).
    """

    victim: FloatArray
    groups: tuple[tuple[FloatArray, int], ...]
    pairs: tuple[tuple[int, int], ...]
    symmetric: bool = False
    merged: int = 1

    @property
    def users(self) -> int:
        return 1 + sum(count for _, count in self.groups)

    @property
    def outputs(self) -> int:
        return int(self.victim.shape[1])

    def box_cells(self) -> int:
        return int((self.users + 1) ** (self.outputs - 1))

    def configurations(self) -> int:
        """Number of configurations enumerated."""
        if self.symmetric:  # (c0, c1, a partition of the rest into at most d − 2 parts)
            others = self.groups[0][1]
            partitions = _partitions_at_most(others, self.victim.shape[0] - 2)
            return sum((others - r + 1) * partitions[r] for r in range(others + 1))
        total = 1
        for matrix, count in self.groups:
            inputs = matrix.shape[0]
            total *= math.comb(count + inputs - 1, inputs - 1)
        return total

    def work(self) -> int:
        """configurations × box cells × (victim pairs + 1 + c/64), c = (n − 1)/d the mean number
        of users added one by one for the last input of a configuration (an addition costs about
        1/64 of a pair's sort per cell) (module docstring, "Work budget")."""
        inputs = sum(matrix.shape[0] for matrix, _ in self.groups) or 1
        chain = (self.users - 1) // inputs // 64
        return self.configurations() * self.box_cells() * (len(self.pairs) + 1 + chain)


class MatrixExact:
    """The exact shuffled δ of one finite randomizer at every n whose family fits the budget
    (columns merged once; the symmetry check only when it decides whether n fits)."""

    def __init__(self, matrix: FloatArray, budget: int = WORK_BUDGET) -> None:
        self.matrix = np.asarray(matrix, dtype=np.float64)
        self.budget = budget
        self._merged: tuple[FloatArray, int] | None = None
        self._input_symmetric: bool | None = None
        self._shuffles: OrderedDict[int, ExactShuffle | None] = OrderedDict()

    def family(self, n: int) -> ShuffleFamily | None:
        """n users (the victim and n − 1 others), with the reductions of the module docstring;
        None if over the budget."""
        side_limit = self.budget + 1
        if self.matrix.shape[1] > 1 and n + 1 >= side_limit:
            return None
        if self._merged is None:
            (merged,), largest = merge_identical_columns([self.matrix])
            self._merged = merged, largest
        merged, largest = self._merged
        if (n + 1) ** (merged.shape[1] - 1) > self.budget:
            return None
        distinct = tuple((i, j) for i in range(merged.shape[0]) for j in range(i + 1, merged.shape[0])
                         if not np.array_equal(merged[i], merged[j]))
        if distinct and merged.shape[0] >= 3:
            if self._input_symmetric is None:
                self._input_symmetric = is_input_symmetric(merged)
            if self._input_symmetric:
                reduced = ShuffleFamily(merged, ((merged, n - 1),), ((0, 1),), True, largest)
                return reduced if reduced.work() <= self.budget else None
        full = ShuffleFamily(merged, ((merged, n - 1),), distinct, False, largest)
        return full if full.work() <= self.budget else None

    def shuffle(self, n: int) -> ExactShuffle | None:
        """The :class:`ExactShuffle` of n users, or None if over the budget (cached)."""
        if n not in self._shuffles:
            family = self.family(n)
            self._shuffles[n] = None if family is None else ExactShuffle([family], self.budget)
            if len(self._shuffles) > _CACHE_SIZE:
                self._shuffles.popitem(last=False)
        return self._shuffles[n]


def homogeneous_family(matrix: FloatArray, n: int, budget: int = WORK_BUDGET) -> ShuffleFamily | None:
    """n users of one randomizer (:meth:`MatrixExact.family`)."""
    return MatrixExact(matrix, budget).family(n)


def _strides(family: ShuffleFamily) -> list[int]:
    """Flat-index offset of one more report of output o (o < k − 1; the last output is implied)."""
    side, k = family.users + 1, family.outputs
    return [side ** (k - 2 - o) for o in range(k - 1)]


def _add_user(law: FloatArray, row: FloatArray, strides: Sequence[int]) -> FloatArray:
    """L′(h) = Σ_o row[o]·L(h − e_o) on the flattened box (last axis). A shift by a stride never
    wraps a nonzero cell: laws of at most n − 1 users have every count ≤ n − 1 < n + 1."""
    new: FloatArray = np.multiply(row[-1], law)
    for output, stride in enumerate(strides):
        if row[output] != 0.0:
            new[..., stride:] += row[output] * law[..., :-stride]
    return new


def _others_laws(family: ShuffleFamily) -> Iterator[FloatArray]:
    """The others' histogram law of every configuration (depth-first, one user added per step)."""
    slots = [(g, i) for g, (matrix, _) in enumerate(family.groups) for i in range(matrix.shape[0])]
    strides = _strides(family)
    start = np.zeros(family.box_cells())
    start[0] = 1.0

    def visit(slot: int, law: FloatArray, remaining: tuple[int, ...], previous: int
              ) -> Iterator[FloatArray]:
        if slot == len(slots):
            yield law
            return
        group, row = slots[slot]
        matrix = family.groups[group][0]
        left = remaining[group]
        last = row == matrix.shape[0] - 1
        ordered = family.symmetric and row >= 3  # counts of inputs 2, 3, … non-increasing
        cap = min(left, previous) if ordered else left
        if last and left > cap:
            return
        current = law
        for count in range(cap + 1):
            if not last or count == left:
                rest = remaining[:group] + (left - count,) + remaining[group + 1:]
                yield from visit(slot + 1, current, rest, count)
            if count < cap:
                current = _add_user(current, matrix[row], strides)

    yield from visit(0, start, tuple(count for _, count in family.groups), family.users)


def _batches(family: ShuffleFamily) -> Iterator[FloatArray]:
    """The others' laws stacked in batches of about ``_BATCH_CELLS`` cells."""
    size = max(1, _BATCH_CELLS // family.box_cells())
    batch: list[FloatArray] = []
    for law in _others_laws(family):
        batch.append(law)
        if len(batch) == size:
            yield np.stack(batch)
            batch = []
    if batch:
        yield np.stack(batch)


@dataclass(frozen=True)
class Curves:
    """A batch of (configuration, victim pair, direction) rows of computed laws (P̃, Q̃): cells
    sorted by decreasing ℓ̃ = ln P̃ − ln Q̃, prefix sums ``cum_p``/``cum_q`` (column t = the first t
    cells) and the constants that turn them into the certified a_t − e^ε·b_t of the module
    docstring. P̂/Q̌ and P̌/Q̂ are constant multiples of P̃/Q̃, so one order serves both bounds:
    ln(P̂/Q̌) = ℓ̃ + ``shift`` and ln(P̌/Q̂) = ℓ̃ − ``shift``."""

    log_ratio: FloatArray  # (rows, m), each row non-increasing
    cum_p: FloatArray  # (rows, m + 1), column 0 = 0
    cum_q: FloatArray
    up: float  # 1 + 2η + 2u
    down: float  # 1 − 2η − 2u
    sum_error: float  # γ_{m+2} of the prefix sums
    abs_mass: float  # absolute (subnormal) error mass
    shift: float  # ln(up/down)

    def coefficients(self, upper: bool) -> tuple[FloatArray, FloatArray]:
        """(a, b) of every row and prefix; upper: with the (e^{2τ} − 1)·e^ε·B charge."""
        g, unit = self.sum_error, UNIT_ROUNDOFF
        if upper:
            a = self.cum_p * (self.up * (1.0 + g + 4.0 * unit)) + self.abs_mass
            factor = ((1.0 - g) * (1.0 - 2.0 * unit) - math.expm1(2.0 * LOG_MARGIN)
                      * (1.0 + 2.0 * unit) * (1.0 + g) - 4.0 * unit)
            return a, self.cum_q * (self.down * factor) - self.abs_mass
        a = self.cum_p * (self.down * (1.0 - g - 4.0 * unit)) - self.abs_mass
        b = self.cum_q * (self.up * (1.0 + g) * (1.0 + 2.0 * unit) * (1.0 + 4.0 * unit)) + self.abs_mass
        return a, b


def _curves(family: ShuffleFamily) -> Iterator[Curves]:
    """The curves of every configuration, victim pair and direction, in batches."""
    k = family.outputs
    eta = _gamma(family.users * (k + 2 + family.merged))
    unit = UNIT_ROUNDOFF
    up, down = 1.0 + 2.0 * eta + 2.0 * unit, 1.0 - 2.0 * eta - 2.0 * unit
    abs_mass = family.users * family.box_cells() * (k + 2) * _SUBNORMAL * 4.0
    shift = math.log1p(4.0 * eta + 4.0 * unit) + 2.0 * unit  # ≥ ln(up/down), error ≪ τ
    strides = _strides(family)
    inputs = sorted({x for pair in family.pairs for x in pair})
    for others in _batches(family):
        laws = {x: _add_user(others, family.victim[x], strides) for x in inputs}
        p = np.concatenate([laws[x] for x, y in family.pairs] + [laws[y] for x, y in family.pairs])
        q = np.concatenate([laws[y] for x, y in family.pairs] + [laws[x] for x, y in family.pairs])
        with np.errstate(divide="ignore", invalid="ignore"):
            log_ratio = np.where(p > 0.0, np.log(p) - np.log(q), -np.inf)
        # only the cells some ε ≥ 0 reaches (ℓ̃ > −(shift + τ)) are ordered: every query at ε ≥ 0
        # (upper prefix {ℓ̃ + shift > ε − τ}, lower prefix {ℓ̃ − shift > ε}, the ε-search masks
        # with floor ≥ 0) reads only those prefixes. Kept: the first t_max cells of every row
        # (t_max its largest count of reachable cells), reachable ones by decreasing ℓ̃, then
        # unreachable ones with ℓ̃ set to −∞ (``sum_error`` keeps the full length)
        reachable = log_ratio > -(shift + LOG_MARGIN)
        reach = int(np.max(np.count_nonzero(reachable, axis=1), initial=0))
        key = np.where(reachable, -log_ratio, np.inf)
        if 0 < reach < key.shape[1]:
            chosen = np.argpartition(key, reach - 1, axis=1)[:, :reach]
            order = np.take_along_axis(
                chosen, np.argsort(np.take_along_axis(key, chosen, axis=1), axis=1), axis=1)
        else:
            order = np.argsort(key, axis=1)[:, :reach]
        ordered = np.where(np.take_along_axis(reachable, order, axis=1),
                           np.take_along_axis(log_ratio, order, axis=1), -np.inf)
        zero = np.zeros((p.shape[0], 1))
        cum_p = np.cumsum(np.take_along_axis(p, order, axis=1), axis=1)
        cum_q = np.cumsum(np.take_along_axis(q, order, axis=1), axis=1)
        yield Curves(ordered, np.concatenate([zero, cum_p], axis=1),
                     np.concatenate([zero, cum_q], axis=1),
                     up, down, _gamma(p.shape[1] + 2), abs_mass, shift)


def _prefix_lengths(log_ratio: FloatArray, cut: FloatArray) -> IntArray:
    """t[row, i] = ``np.searchsorted(−ℓ̃_row, cut_i, side="left")`` for every row (each row of
    ``log_ratio`` is non-increasing): the prefix of the cells with −ℓ̃ < cut_i."""
    negated = -log_ratio
    lengths = np.empty((negated.shape[0], len(cut)), dtype=np.int64)
    for row, values in enumerate(negated):
        lengths[row] = values.searchsorted(cut, side="left")
    return lengths


def _prefix_values(curves: Curves, cut: FloatArray, upper: bool) -> tuple[FloatArray, FloatArray]:
    """(a_t, b_t) of :meth:`Curves.coefficients` at the prefix t of every row and cut, shape
    (rows, cuts): the coefficients are affine in the prefix sums elementwise, so taking them at
    the chosen prefixes only gives the same values."""
    t = _prefix_lengths(curves.log_ratio, cut)
    row = np.arange(t.shape[0])[:, None]
    chosen = replace(curves, cum_p=curves.cum_p[row, t], cum_q=curves.cum_q[row, t])
    return chosen.coefficients(upper)


def _upper_deltas(curves: Curves, epsilons: FloatArray) -> FloatArray:
    """δ_upper at each ε, maximised over the rows: prefix T = {ℓ̃ + shift > ε − τ},
    a_t − e^ε·b_t (e^ε rounded down)."""
    if curves.log_ratio.shape[0] == 0:
        return np.zeros(epsilons.shape)
    a, b = _prefix_values(curves, LOG_MARGIN + curves.shift - epsilons, upper=True)
    with np.errstate(invalid="ignore", over="ignore"):
        scale = np.exp(epsilons) * (1.0 - 2.0 * UNIT_ROUNDOFF)
        values = np.where(b == 0.0, a, a - scale[None, :] * b)
    best: FloatArray = np.maximum(np.max(values, axis=0), 0.0)
    return best


def _lower_deltas(curves: Curves, epsilons: FloatArray) -> FloatArray:
    """δ_lower at each ε, maximised over the rows: the prefix {ℓ̃ − shift > ε} (any set is
    valid), e^ε rounded up."""
    if curves.log_ratio.shape[0] == 0:
        return np.zeros(epsilons.shape)
    a, b = _prefix_values(curves, -curves.shift - epsilons, upper=False)
    with np.errstate(invalid="ignore", over="ignore"):
        scale = np.exp(epsilons) * (1.0 + 2.0 * UNIT_ROUNDOFF)
        values = a - scale[None, :] * b
    best: FloatArray = np.maximum(np.max(np.where(np.isnan(values), 0.0, values), axis=0), 0.0)
    return best


def _roots(a: FloatArray, b: FloatArray, delta: float) -> FloatArray:
    """ln((a_t − δ)/b_t) elementwise (−inf where a_t ≤ δ, +inf where b_t ≤ 0 < a_t − δ)."""
    excess = a - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        roots = np.log(excess) - np.log(b)
    return np.where(excess <= 0.0, -np.inf, np.where(b <= 0.0, np.inf, roots))


def _upper_epsilon(curves: Curves, delta: float, floor: float) -> float:
    """max(floor, sup{ε ≥ 0 : δ_upper(ε) > δ}) over the rows. Prefix t holds on [e_t, e_{t−1})
    with e_t = ℓ̃_t + shift + τ (cells numbered from 0), so a prefix whose range ends at or below
    ``floor`` cannot raise the result and is skipped."""
    rows = curves.log_ratio.shape[0]
    edge = curves.log_ratio + (curves.shift + LOG_MARGIN)
    ends = np.concatenate([np.full((rows, 1), np.inf), edge], axis=1)
    starts = np.concatenate([edge, np.full((rows, 1), -np.inf)], axis=1)
    mask = ends > floor
    a, b = curves.coefficients(upper=True)
    # e^ε in δ_upper is rounded down by 2u (ln 1/(1 − 3u) ≤ 4u) and the two logarithms err by
    # ≤ 2 ulp of |ln| ≤ 1500 each: LOG_MARGIN covers both
    roots = _roots(a[mask], b[mask], delta) + LOG_MARGIN
    live = roots > np.maximum(starts[mask], 0.0)
    if not np.any(live):
        return floor
    return max(floor, float(np.max(np.minimum(roots[live], ends[mask][live]))))


def _lower_epsilon(curves: Curves, delta: float, floor: float) -> float:
    """max(floor, ln((a_t − δ)/b_t) − margin) over rows and prefixes t whose last cell has
    ℓ̃ − shift > floor (any prefix gives a valid lower bound; these are the ones that can beat
    ``floor``: the best set at ε is {ℓ > ε})."""
    a, b = curves.coefficients(upper=False)
    mask = np.concatenate([np.zeros((a.shape[0], 1), dtype=bool),
                           curves.log_ratio - curves.shift > floor], axis=1)
    if not np.any(mask):
        return floor
    best = float(np.max(_roots(a[mask], b[mask], delta))) - LOG_MARGIN  # as in _upper_epsilon
    return max(floor, best) if best > -np.inf else floor


class ExactShuffle:
    """Certified exact δ(ε) over one or several families (the maximum: e.g. one family per victim
    group of a personalized round), evaluated only within the work budget.

    ``delta_bounds``/``epsilon_bounds`` return (certified lower, certified upper); results are
    cached (a few recent queries).
    """

    def __init__(self, families: Sequence[ShuffleFamily], budget: int = WORK_BUDGET) -> None:
        self.families = tuple(families)
        self.budget = budget
        self._cache: OrderedDict[tuple[object, ...], object] = OrderedDict()
        self._curve_cache: list[Curves] | None = None

    def work(self) -> int:
        return sum(family.work() for family in self.families)

    def fits(self) -> bool:
        return self.work() <= self.budget

    def _all_curves(self) -> Iterator[Curves]:
        """Every batch of curves, kept after the first pass (cut to the cells that any ε ≥ 0 can
        reach, :func:`_curves`) when they fit in ``_CURVE_CACHE_BYTES``."""
        if self._curve_cache is not None:
            yield from self._curve_cache
            return
        kept: list[Curves] | None = []
        size = 0
        for family in self.families:
            if family.pairs:  # no pair of distinct rows: nothing to distinguish, δ = 0
                for curves in _curves(family):
                    if kept is not None:
                        size += 3 * curves.log_ratio.nbytes
                        kept = kept + [curves] if size <= _CURVE_CACHE_BYTES else None
                    yield curves
        self._curve_cache = kept

    def _cached(self, key: tuple[object, ...], compute: Callable[[], object]) -> object:
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        value = compute()
        self._cache[key] = value
        if len(self._cache) > _CACHE_SIZE:
            self._cache.popitem(last=False)
        return value

    def delta_bounds(self, epsilons: FloatArray) -> tuple[FloatArray, FloatArray]:
        """(lower, upper) bounds on the exact worst-case δ at every ε ≥ 0 of ``epsilons``."""
        eps = np.asarray(epsilons, dtype=np.float64)

        def compute() -> tuple[FloatArray, FloatArray]:
            lower, upper = np.zeros(eps.shape), np.zeros(eps.shape)
            if not np.all(eps >= 0.0):  # the kept curves serve ε ≥ 0 only
                raise ValueError(f"epsilons must be >= 0, got {epsilons!r}")
            for curves in self._all_curves():
                upper = np.maximum(upper, _upper_deltas(curves, eps))
                lower = np.maximum(lower, _lower_deltas(curves, eps))
            return np.clip(lower, 0.0, 1.0), np.clip(upper, 0.0, 1.0)

        return self._cached(("delta", eps.tobytes()), compute)  # type: ignore[return-value]

    def upper_deltas(self, epsilons: FloatArray) -> FloatArray:
        """The upper bounds of :meth:`delta_bounds` alone (the same values; the lower bounds'
        pass is skipped)."""
        eps = np.asarray(epsilons, dtype=np.float64)

        def compute() -> FloatArray:
            upper = np.zeros(eps.shape)
            if not np.all(eps >= 0.0):  # the kept curves serve ε ≥ 0 only
                raise ValueError(f"epsilons must be >= 0, got {epsilons!r}")
            for curves in self._all_curves():
                upper = np.maximum(upper, _upper_deltas(curves, eps))
            clipped: FloatArray = np.clip(upper, 0.0, 1.0)
            return clipped

        return self._cached(("upper", eps.tobytes()), compute)  # type: ignore[return-value]

    def epsilon_bounds(self, delta: float) -> tuple[float, float]:
        """(lower, upper) bounds on the smallest ε with exact worst-case δ(ε) ≤ ``delta``."""

        def compute() -> tuple[float, float]:
            lower, upper = 0.0, 0.0
            for curves in self._all_curves():
                lower = _lower_epsilon(curves, delta, lower)
                upper = _upper_epsilon(curves, delta, max(upper, lower))
            if math.isfinite(upper) and upper > 0.0:
                upper = upper * (1.0 + 1e-12) + 1e-300
            # a smaller lower bound stays valid: capped where e^ε is still a finite double
            return min(lower, upper, EPSILON_CAP), upper

        return self._cached(("epsilon", float(delta)), compute)  # type: ignore[return-value]


__all__ = [
    "WORK_BUDGET",
    "ShuffleFamily",
    "ExactShuffle",
    "homogeneous_family",
    "grouped_shuffle",
    "MatrixExact",
    "merge_identical_columns",
    "is_input_symmetric",
]


def grouped_shuffle(groups: Sequence[tuple[FloatArray, int]], budget: int = WORK_BUDGET
                    ) -> ExactShuffle | None:
    """Users in groups with their own matrices (same outputs), all of them in the round: one
    family per victim group (its distinct row pairs; the other users' counts per group), columns
    merged jointly. None if the total work is over the budget."""
    merged, largest = merge_identical_columns([matrix for matrix, _ in groups])
    counts = [count for _, count in groups]
    users = sum(counts)
    if merged[0].shape[1] > 1 and (users + 1) ** (merged[0].shape[1] - 1) > budget:
        return None
    families = []
    for victim, matrix in enumerate(merged):
        pairs = tuple((i, j) for i in range(matrix.shape[0]) for j in range(i + 1, matrix.shape[0])
                      if not np.array_equal(matrix[i], matrix[j]))
        others = tuple((merged[g], counts[g] - (g == victim)) for g in range(len(merged))
                       if counts[g] - (g == victim) > 0)
        families.append(ShuffleFamily(matrix, others, pairs, False, largest))
    shuffle = ExactShuffle(families, budget)
    return shuffle if shuffle.fits() else None
