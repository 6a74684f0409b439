"""Multi-level (blanket) bounds of finite randomizers: the levels of every victim pair.

For a row-stochastic matrix (rows = inputs) the blanket is the column minimum
m(y) = min_x R(x)(y): every user's report dominates it whatever its input, so for every victim pair
(x⁰, x¹) the bound of :mod:`dpacct_shuffle.core.multilevel` holds for every configuration of the
other users, with levels (a, b) = (R(x⁰)(y), R(x¹)(y))/m(y) (outputs with equal ratios grouped,
masses summed exactly with ``math.fsum``). The shuffled δ(ε) is at most the maximum over victim
pairs, so :class:`MultiLevelBound` is valid for every pair at once (a *fallback* of a
:class:`~dpacct_shuffle.randomizers.base.Randomizer`: the entry reports the minimum of it and its
other bounds). Pairs with identical rows carry no privacy loss and are skipped.

The bound needs m(y) > 0 wherever R(x⁰)(y) + R(x¹)(y) > 0; a matrix with an output some input
never produces but another does gets no multi-level bound. It is evaluated only where some pair has
more than three levels (ratios compared to 9 significant digits): with three levels (Q0, Q1, N) the
expression is the clone pair the variation-ratio analysis already evaluates. The levels are derived
on first use (:class:`MatrixMultiLevelBound`).

Without the levels of each pair, a ratio bound and the blanket mass alone give a clone pair valid
for every pair (:func:`blanket_variation_ratio`, used by continuous catalog entries). Set-boost
catalog entries give their levels in closed form on the corners of {1, ρ}² (:func:`corner_levels`).
"""

from __future__ import annotations

import math

import numpy as np

from dpacct_shuffle.core.batched import BatchedDelta
from dpacct_shuffle.core.batched_levels import TwoSidedCurve, enumerated_levels_curve, levels_curve
from dpacct_shuffle.core.bound import (
    CHERNOFF_SEARCH_MAX_DELTA,
    CHERNOFF_SEARCH_USERS,
    VariationRatio,
)
from dpacct_shuffle.core.enumerated_levels import EnumeratedLevelsCurve, count_vectors_curve
from dpacct_shuffle.core.multilevel import PrivacyLossLevels
from dpacct_shuffle.core.validation import check_range
from dpacct_shuffle.randomizers.base import SKIP_MARGIN, PairBound, Randomizer

# the share of the blanket pair is taken this relative amount below w (float rounding of β and w)
_SHARE_MARGIN = 1e-9
# pairs × outputs examined when deriving the levels of a matrix (larger matrices get none)
MAX_PAIR_CELLS = 4_000_000
# distinct level sets evaluated (one per kind of victim pair)
MAX_LEVEL_SETS = 16
# ε searches of the multi-level bound are skipped when it cannot lower an entry's ε by this fraction
SKIP_RTOL = 1e-3
# the coarsest η a level set's curve is retried at when the requested one is too costly
COARSEST_LOWERING = 5e-4


def pair_levels(matrix: np.ndarray, blanket: np.ndarray, i: int, j: int) -> PrivacyLossLevels | None:
    """Levels of the victim pair (rows i, j) against ``blanket`` (None: identical rows, an
    output of the pair outside the blanket's support, or a ratio beyond the float range — a
    subnormal blanket mass)."""
    mu0, mu1 = matrix[i], matrix[j]
    if np.array_equal(mu0, mu1):
        return None
    support = (mu0 + mu1) > 0.0
    if np.any(blanket[support] <= 0.0):
        return None
    m = blanket[support]
    with np.errstate(over="ignore"):
        ratios = np.stack([mu0[support] / m, mu1[support] / m], axis=1)
    if not np.all(np.isfinite(ratios)):
        return None
    unique, inverse = np.unique(ratios, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    masses = [math.fsum(m[inverse == t].tolist()) for t in range(unique.shape[0])]
    return PrivacyLossLevels(unique[:, 0], unique[:, 1], masses)


def matrix_levels(matrix: np.ndarray) -> tuple[PrivacyLossLevels, ...] | None:
    """Distinct level sets over all victim pairs of a validated matrix, or None when the matrix is
    too large, some pair leaves the blanket's support, or there are more than ``MAX_LEVEL_SETS``.

    Pairs are grouped first by a signature: the triples (ratio to the blanket of row i, of row j,
    blanket mass) of every output, sorted (all pairs (i, j > i) of a row at once). Equal
    signatures give equal inputs to :func:`pair_levels` up to order, hence equal levels (exact
    sums), which are derived once per signature. A column whose minimum is 0 but not its maximum
    leaves the blanket's support for some pair: then None.
    """
    d, outputs = matrix.shape
    if d * (d - 1) // 2 * outputs > MAX_PAIR_CELLS:
        return None
    blanket = matrix.min(axis=0)
    if np.any((blanket <= 0.0) & (matrix.max(axis=0) > 0.0)):
        return None
    found: dict[PrivacyLossLevels, None] = {}
    seen: set[bytes] = set()
    ratios = np.divide(matrix, blanket, out=np.zeros_like(matrix), where=blanket > 0.0)
    for i in range(d - 1):
        first = np.broadcast_to(ratios[i], ratios[i + 1:].shape)
        second = ratios[i + 1:]
        order = np.lexsort((second, first), axis=-1)
        first_sorted = np.take_along_axis(first, order, axis=-1)
        second_sorted = np.take_along_axis(second, order, axis=-1)
        mass_sorted = blanket[order]
        for row in range(second.shape[0]):
            j = i + 1 + row
            if np.array_equal(matrix[i], matrix[j]):
                continue
            signature = b"".join((first_sorted[row].tobytes(), second_sorted[row].tobytes(),
                                  mass_sorted[row].tobytes()))
            if signature in seen:
                continue
            seen.add(signature)
            levels = pair_levels(matrix, blanket, i, j)
            if levels is None:
                return None
            found.setdefault(levels, None)
            if len(found) > MAX_LEVEL_SETS:
                return None
    return tuple(found) if found else None


def _significant(values: np.ndarray) -> np.ndarray:
    """``values`` rounded to 9 significant digits (how levels are compared)."""
    return np.array([float(f"{v:.9g}") for v in values.ravel().tolist()]).reshape(values.shape)


def _level_count(levels: PrivacyLossLevels) -> int:
    """Number of levels with ratios compared to 9 significant digits."""
    return len(set(zip(_significant(levels.ratios0).tolist(),
                       _significant(levels.ratios1).tolist())))


def _some_pair_exceeds(matrix: np.ndarray, levels: int) -> bool:
    """Whether some victim pair may have more than ``levels`` levels (ratios to 9 significant
    digits). Never False for a pair that has more; may be True for one that has not (it also counts
    the outputs neither row produces), so it only serves to skip :func:`matrix_levels` cheaply.

    For each first row i, the pairs (i, j > i) are compared at once: the ratio pairs
    (R(x_i)(y), R(x_j)(y))/m(y) of each row pair are sorted along the outputs and the distinct ones
    counted.
    """
    blanket = matrix.min(axis=0)
    with np.errstate(over="ignore"):  # a ratio above the float range is ∞
        ratios = _significant(np.divide(matrix, blanket, out=np.zeros_like(matrix),
                                        where=blanket > 0.0))
    for i in range(matrix.shape[0] - 1):
        first = np.broadcast_to(ratios[i], ratios[i + 1:].shape)
        second = ratios[i + 1:]
        order = np.lexsort((second, first), axis=-1)
        first_sorted = np.take_along_axis(first, order, axis=-1)
        second_sorted = np.take_along_axis(second, order, axis=-1)
        changes = ((np.diff(first_sorted, axis=-1) != 0.0)
                   | (np.diff(second_sorted, axis=-1) != 0.0))
        if np.any(1 + changes.sum(axis=-1) > levels):
            return True
    return False


class MultiLevelBound(PairBound):
    """Maximum over victim-pair level sets of their multi-level bound (valid for every pair)."""

    def __init__(self, level_sets: tuple[PrivacyLossLevels, ...]) -> None:
        if not level_sets:
            raise ValueError("level_sets must contain at least one PrivacyLossLevels")
        self._level_sets: tuple[PrivacyLossLevels, ...] | None = tuple(level_sets)

    @property
    def level_sets(self) -> tuple[PrivacyLossLevels, ...]:
        """The level sets evaluated (empty: no multi-level bound applies)."""
        return self._level_sets or ()

    def delta(self, epsilon: float, n: int) -> float:
        if not self.level_sets:
            return 1.0  # no bound: never the minimum of an entry's bounds
        return max(levels.delta(epsilon, n) for levels in self.level_sets)

    def deltas_at_rtol(self, epsilons: np.ndarray, n: int, rtol: float) -> np.ndarray:
        if not self.level_sets:
            return np.ones(len(epsilons))  # no bound, at every ε
        return super().deltas_at_rtol(epsilons, n, rtol)

    def epsilon(self, delta: float, n: int, guess: float | None = None) -> float:
        if not self.level_sets:
            return math.inf
        return max(levels.epsilon(delta, n, guess=guess) for levels in self.level_sets)

    def curve_deltas(self, epsilons: np.ndarray, n: int, lowering: float) -> np.ndarray | None:
        """The maximum over level sets of their every-ε curves (each at least its level set's
        bound at every ε ≥ 0): for few users the curve of every count vector
        (:func:`~dpacct_shuffle.core.enumerated_levels.count_vectors_curve`), else
        :func:`_level_set_curve`; None when some level set has neither."""
        if not self.level_sets:
            return np.ones(len(epsilons))  # no bound, at every ε
        curves: list[EnumeratedLevelsCurve | BatchedDelta | TwoSidedCurve | None] = []
        for levels in self.level_sets:
            enumerated = count_vectors_curve(levels, n)
            curves.append(enumerated if enumerated is not None
                          else _level_set_curve(levels, n, lowering))
        if any(curve is None for curve in curves):
            return None
        return np.asarray(np.max([curve.deltas(epsilons) for curve in curves if curve is not None],
                                 axis=0), dtype=np.float64)

    def epsilon_below(self, delta: float, n: int, current: float) -> float:
        """:meth:`epsilon`, skipped (``current`` returned) when the bound at
        (1 − ``SKIP_RTOL``)·current already exceeds ``delta``: then it cannot lower ``current`` by
        more than that fraction. One evaluation instead of a search where it does not help, and
        otherwise a search starting from that feasible point; the evaluation is skipped too when a
        level set's :meth:`~dpacct_shuffle.core.multilevel.PrivacyLossLevels.delta_floor` (at most
        its bound) already exceeds ``delta`` by the relative ``SKIP_MARGIN``."""
        if not self.level_sets:
            return math.inf
        if not 0.0 < current < math.inf or (delta <= CHERNOFF_SEARCH_MAX_DELTA
                                             and n >= CHERNOFF_SEARCH_USERS and all(
                                                 math.isfinite(levels.epsilon0)
                                                 for levels in self.level_sets)):
            return self.epsilon(delta, n)  # tiny δ at huge n: the search is one Chernoff bisection
        point = (1.0 - SKIP_RTOL) * current
        # a floor of some level set's bound above δ decides it without refining (the same answer)
        if any(levels.delta_floor(point, n) > delta * (1.0 + SKIP_MARGIN)
               for levels in self.level_sets) or self.delta(point, n) > delta:
            return current
        return self.epsilon(delta, n, guess=point)

    def __repr__(self) -> str:
        return f"MultiLevelBound({len(self.level_sets)} pair kinds)"


def _level_set_curve(levels: PrivacyLossLevels, n: int, lowering: float
                     ) -> BatchedDelta | TwoSidedCurve | None:
    """An every-ε curve of one level set: :func:`~dpacct_shuffle.core.batched_levels.levels_curve`
    at η = ``lowering``, else (its computation too large) at 2η and at 4η up to
    ``COARSEST_LOWERING`` (a coarser η raises the losses by a larger relative amount: at
    4·ROUND_LOWERING = 5e-4 the ε stays within 0.2 % of the point queries,
    tests/test_batched_levels.py), else the enumerated curve
    (:func:`~dpacct_shuffle.core.batched_levels.enumerated_levels_curve`), else None."""
    for factor in (1.0, 2.0, 4.0):
        eta = lowering * factor
        if factor > 1.0 and eta > COARSEST_LOWERING:
            break
        curve = levels_curve(levels, n, eta)
        if curve is not None:
            return curve
    return enumerated_levels_curve(levels, n, lowering)


class MatrixMultiLevelBound(MultiLevelBound):
    """The multi-level bound of a matrix, its levels derived on first use (construction stays
    cheap); none applies when :func:`matrix_levels` gives None or every pair has at most three
    levels (module docstring), and then ``delta`` is 1 and ``epsilon`` infinite."""

    def __init__(self, matrix: np.ndarray) -> None:
        self._matrix = matrix
        self._level_sets = None
        self._derived = False

    @property
    def level_sets(self) -> tuple[PrivacyLossLevels, ...]:
        if not self._derived:
            matrix = np.asarray(self._matrix, dtype=float)
            # cheap first: with at most three levels in every pair there is nothing to gain
            found = matrix_levels(matrix) if _some_pair_exceeds(matrix, 3) else None
            if found is not None and max(_level_count(levels) for levels in found) > 3:
                self._level_sets = found
            self._derived = True
        return self._level_sets or ()


def blanket_variation_ratio(p: float, blanket_mass: float) -> VariationRatio:
    """Clone pair of any randomizer with ratio bound p and blanket mass γ, valid for every pair.

    Setting: R(x)(y) ≤ p·R(x')(y) for all inputs and outputs (ε0-LDP: p = e^ε0), and a blanket
    m(y) = inf_x R(x)(y) of total mass γ ≥ 2/(p + 1) (densities for continuous outputs: the
    theorem of :mod:`dpacct_shuffle.core.multilevel` holds with μ/m as Radon–Nikodym
    derivatives). Returns the VariationRatio (p, β = 1 − γ, q = p, s = w), whose three levels are
    (p, 1; A), (1, p; A), (1, 1; γ − 2A) with A = (1 − γ)/(p − 1) (w = 1 − (p + 1)A = γ − 2A).

    Proof. For any victim pair the ratios a = μ0/m, b = μ1/m lie in the square [1, p]² (m is the
    infimum, and μ ≤ p·R(x') for the input x' attaining it), and ∫a dm = ∫b dm = 1. Split the
    blanket mass of each output over the four corners with the product weights (a − 1)/(p − 1)
    (a-coordinate p) and (b − 1)/(p − 1): the corner drawn given the output has mean (a, b), so
    for every ε and direction the value Z = a − e^ε b (or b − e^ε a) is the conditional mean of
    the corner's value Z' and Z ≤ Z' in convex order (Jensen); the order is closed under
    independent sums, so E[(ΣZ)⁺] ≤ E[(ΣZ')⁺]. The corner masses are M_p1 = M_1p = A − t,
    M_pp = t, M_11 = γ − 2A + t for some t ∈ [0, A] (marginals: M_p1 + M_pp = ∫(a − 1)dm/(p − 1)
    = A). Replacing t·(δ_pp + δ_11) by t·(δ_p1 + δ_1p) keeps the mean (both sums of values are
    (p + 1)(1 − e^ε)) and moves both values to the ends of an interval containing them
    (1 − e^ε p ≤ p(1 − e^ε), 1 − e^ε ≤ p − e^ε), a convex-order increase: t = 0 is the worst case,
    and its levels are the clone pair above (r0 = pα/q = α = A, neutral weight λ·s with λ = 1).
    The share is taken a relative 1e-9 below w (float rounding of β and w can only lower it) with
    neutral weight λ·s, λ = 1 (``neutral_parts``: the rest of w at rate 0);
    β = 1 − γ ≤ (p − 1)/(p + 1) is the condition γ ≥ 2/(p + 1).
    """
    ratio = check_range("p", p, 1.0, math.inf, low_open=True, high_open=True)
    gamma = check_range("blanket_mass", blanket_mass, 2.0 / (ratio + 1.0), 1.0)
    beta = 1.0 - gamma
    neutral = VariationRatio(ratio, beta, ratio).neutral_mass
    share = neutral * (1.0 - _SHARE_MARGIN)
    # neutral level (1, 1): weight λ·s with λ = 1 (the split's remainder is reproduced at rate 0)
    return VariationRatio(ratio, beta, ratio, neutral_parts=((share, share), (neutral - share, 0.0)))


def corner_levels(ratio: float, both: float, first: float, second: float, neither: float
                  ) -> PrivacyLossLevels:
    """Levels of a victim pair whose ratios to the blanket lie on the corners of {1, ρ}²:
    (ρ, ρ; ``both``), (ρ, 1; ``first``), (1, ρ; ``second``), (1, 1; ``neither``), ρ = ``ratio``
    (levels of zero mass left out).

    Set-boost randomizers (an input boosts a set of outputs by the factor ρ over a common base
    law that every input reaches) have these levels against the blanket "base law": an output is
    boosted by both victim inputs, only by x⁰, only by x¹ or by neither; the masses are the base
    law's mass of each kind (proofs at the catalog entries). With ``both`` = t and
    ``first`` = ``second`` = A − t the bound is non-increasing in t: replacing t·(δ_ρρ + δ_11) by
    t·(δ_ρ1 + δ_1ρ) keeps the mean and spreads the values (docs/theory.md, "Multi-level bound",
    its blanket clone pair), so a lower bound on ``both`` (with the marginals kept) gives a valid
    bound.
    """
    rows = [(ratio, ratio, both), (ratio, 1.0, first), (1.0, ratio, second), (1.0, 1.0, neither)]
    a, b, m = zip(*[row for row in rows if row[2] > 0.0])
    return PrivacyLossLevels(a, b, m)


def attach_multilevel(randomizer: Randomizer) -> Randomizer:
    """``randomizer`` with the multi-level fallback of its matrix (if it has one) added to its
    fallbacks (a new Randomizer)."""
    if randomizer.matrix is not None:
        return randomizer.with_fallbacks(MatrixMultiLevelBound(randomizer.matrix))
    return randomizer


__all__ = ["MultiLevelBound", "blanket_variation_ratio", "MatrixMultiLevelBound", "matrix_levels", "pair_levels",
           "attach_multilevel", "corner_levels", "MAX_LEVEL_SETS", "MAX_PAIR_CELLS"]
