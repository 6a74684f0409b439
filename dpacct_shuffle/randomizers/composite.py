"""The randomizer of a random-mode parallel round: "pick query j w.p. π_j, answer it, report (j, y)".

What the input is. A user holds one datum x; branch j answers its own query f_j(x) with R_j, so the
report (j, y) has probability π_j·R_j(f_j(x))(y). The report law depends on x only through the
answers (f_1(x), …, f_k(x)), and nothing ties the queries together, so the composite is analysed on
the *product* of the branch domains: one row per tuple of branch inputs (x_1, …, x_k), entry
π_j·R_j(x_j)(y) in column (j, y). Every actual data domain realises a subset of these rows, and a
bound valid for every pair of rows and every configuration of the other users' rows holds for any
subset (fewer victim pairs, fewer configurations). Branches answering the *same* query on a shared
domain are such a subset (the diagonal rows).

* :func:`parallel_randomizer` — finite branches: the composite matrix analysed by
  :func:`~dpacct_shuffle.randomizers.from_matrix` (per-pair clone analysis, multi-level blanket
  bound, certified lower bound).
* :class:`ParallelLevelsBound` — any branches with levels (a matrix's blanket levels, or the three
  clone levels of each VariationRatio, :meth:`PrivacyLossLevels.of_variation_ratio`): for a victim
  pair whose answers differ exactly on the branches S, the composite's levels are the union over
  branches of branch j's levels with masses π_j·m_t — pair levels for j ∈ S, levels of the
  unchanged answer (a = b) for j ∉ S (:class:`BranchLevels`). The victim is in branch j w.p. π_j
  and so is every other user, independently of the data, so every other user reproduces branch
  j's blanket components at rate π_j·m_t with the same ratios a_t, b_t; the branches' outputs are
  disjoint, so the components of all branches together are dominated by every other user's law
  and the theorem of :mod:`dpacct_shuffle.core.multilevel` applies to the union. The bound is the
  maximum over non-empty S and over the level sets of each branch (each covering some of its
  pairs or answers). Each branch keeps its own ratio levels p_j, total variation
  and neutral share — instead of p = max_j p_j and the generic share of
  :func:`dpacct_shuffle.profiles.parallel_composite`.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from dpacct_shuffle.core.bound import VariationRatio
from dpacct_shuffle.core.multilevel import PrivacyLossLevels
from dpacct_shuffle.randomizers.base import Randomizer
from dpacct_shuffle.randomizers.matrix import from_matrix
from dpacct_shuffle.randomizers.multilevel import matrix_levels

# the composite matrix is built only up to this many rows and cells
MAX_COMPOSITE_ROWS = 4096
MAX_COMPOSITE_CELLS = 1_000_000
# (subset of branches, level set per branch) combinations evaluated by ParallelLevelsBound (each
# costs one multi-level evaluation per profile point; three branches give 7)
MAX_LEVEL_COMBINATIONS = 8


def parallel_matrix(matrices: Sequence[np.ndarray], probabilities: Sequence[float]) -> np.ndarray:
    """Rows: tuples (x_1, …, x_k) of branch inputs (lexicographic); columns: (j, y), branch by
    branch; entry π_j·R_j(x_j)(y) (module docstring)."""
    blocks = [np.asarray(m, dtype=float) for m in matrices]
    rows = [np.concatenate([pi * block[x] for pi, block, x in zip(probabilities, blocks, index)])
            for index in itertools.product(*(range(block.shape[0]) for block in blocks))]
    return np.array(rows)


def parallel_randomizer(branches: Sequence[object], probabilities: Sequence[float]
                        ) -> Randomizer | None:
    """The composite of finite branches (each with a ``matrix``) as an analysed matrix, or None
    (a branch without a matrix, or more than ``MAX_COMPOSITE_ROWS`` rows / ``MAX_COMPOSITE_CELLS``
    cells)."""
    found = [getattr(branch, "matrix", None) for branch in branches]
    matrices = [m for m in found if isinstance(m, np.ndarray)]
    if len(matrices) < len(found):
        return None
    rows = math.prod(int(m.shape[0]) for m in matrices)
    columns = sum(int(m.shape[1]) for m in matrices)
    if rows > MAX_COMPOSITE_ROWS or rows * columns > MAX_COMPOSITE_CELLS:
        return None
    key = tuple((np.asarray(m, dtype=float).tobytes(), tuple(m.shape)) for m in matrices)
    return _composite_randomizer(key, tuple(float(pi) for pi in probabilities))


@functools.lru_cache(maxsize=64)
def _composite_randomizer(key: tuple[tuple[bytes, tuple[int, ...]], ...],
                          probabilities: tuple[float, ...]) -> Randomizer:
    """The analysed composite matrix of branch matrices given by value (their bytes and shapes;
    cached: one round's profile, its ε cap and its loss scale all need it)."""
    matrices = [np.frombuffer(data, dtype=float).reshape(shape) for data, shape in key]
    return from_matrix(parallel_matrix(matrices, probabilities), name="parallel")


class BranchLevels(NamedTuple):
    """Level sets of one branch: ``differ`` covers every pair of distinct branch inputs, ``same``
    every victim whose two inputs give this branch the same answer (ratios a = b)."""

    differ: tuple[PrivacyLossLevels, ...]
    same: tuple[PrivacyLossLevels, ...]


def _same_answer_levels(matrix: np.ndarray) -> tuple[PrivacyLossLevels, ...] | None:
    """Per row x: levels (R(x)(y)/m(y), the same, m(y)) against the column minimum m (None when
    some row leaves the blanket's support)."""
    blanket = matrix.min(axis=0)
    found: dict[PrivacyLossLevels, None] = {}
    for row in matrix:
        support = row > 0.0
        if np.any(blanket[support] <= 0.0):
            return None
        ratios = row[support] / blanket[support]
        unique, inverse = np.unique(ratios, return_inverse=True)
        inverse = inverse.ravel()
        masses = [math.fsum(blanket[support][inverse == t].tolist()) for t in range(unique.size)]
        found.setdefault(PrivacyLossLevels(unique, unique, masses), None)
    return tuple(found)


def branch_levels(branch: object, variation_ratios: Sequence[VariationRatio]) -> BranchLevels:
    """Level sets of one branch (module docstring).

    With a matrix whose blanket applies: its pair levels (differ) and row levels (same). Otherwise
    the clone levels of each of its ``variation_ratios`` (differ) and, for an answer that does not
    change, the victim's whole report as one neutral level (q, q; 1/q) with q = max(q0, q1): every
    report law is at least 1/q times any other (the q-ratio property), so the other users reproduce
    the victim's branch report at rate 1/q.
    """
    matrix = getattr(branch, "matrix", None)
    if matrix is not None:
        values = np.asarray(matrix, dtype=float)
        differ, same = matrix_levels(values), _same_answer_levels(values)
        if differ is not None and same is not None:
            return BranchLevels(differ, same)
    differ = tuple(PrivacyLossLevels.of_variation_ratio(vr) for vr in variation_ratios
                   if vr.beta > 0.0)
    q = max(max(vr.q0, vr.q1) for vr in variation_ratios)
    return BranchLevels(differ, (PrivacyLossLevels([q], [q], [1.0 / q]),))


class ParallelLevelsBound:
    """Multi-level bound of a random-mode parallel round (module docstring); ``delta(ε, n)`` and
    ``epsilon0`` like any shuffle bound."""

    def __init__(self, combinations: Sequence[PrivacyLossLevels]) -> None:
        if not combinations:
            raise ValueError("combinations must contain at least one PrivacyLossLevels")
        self.combinations = tuple(combinations)
        self.epsilon0 = max(levels.epsilon0 for levels in self.combinations)

    def delta(self, epsilon: float, n: int) -> float:
        return max(levels.delta(epsilon, n) for levels in self.combinations)

    def epsilon(self, delta: float, n: int) -> float:
        return max(levels.epsilon(delta, n) for levels in self.combinations)

    def __repr__(self) -> str:
        return f"ParallelLevelsBound({len(self.combinations)} combinations)"


def parallel_levels_bound(branches: Sequence[BranchLevels],
                          probabilities: Sequence[float]) -> ParallelLevelsBound | None:
    """The bound from each branch's level sets (:func:`branch_levels`), or None when a branch has
    none or there are more than ``MAX_LEVEL_COMBINATIONS`` combinations."""
    active = [j for j, pi in enumerate(probabilities) if pi > 0.0]
    if any(not branches[j].differ for j in active):
        return None
    count = 0
    for size in range(1, len(active) + 1):
        for subset in itertools.combinations(active, size):
            count += math.prod(len(branches[j].differ) if j in subset else len(branches[j].same)
                               for j in active)
    if count > MAX_LEVEL_COMBINATIONS:
        return None
    combinations: dict[PrivacyLossLevels, None] = {}
    for size in range(1, len(active) + 1):
        for subset in itertools.combinations(active, size):
            options = [branches[j].differ if j in subset else branches[j].same for j in active]
            for choice in itertools.product(*options):
                a = np.concatenate([levels.ratios0 for levels in choice])
                b = np.concatenate([levels.ratios1 for levels in choice])
                m = np.concatenate([probabilities[j] * levels.masses
                                    for j, levels in zip(active, choice)])
                combinations.setdefault(PrivacyLossLevels(a, b, m), None)
    return ParallelLevelsBound(tuple(combinations))


__all__ = ["parallel_matrix", "parallel_randomizer", "branch_levels", "BranchLevels", "parallel_levels_bound",
           "ParallelLevelsBound", "MAX_COMPOSITE_ROWS", "MAX_COMPOSITE_CELLS",
           "MAX_LEVEL_COMBINATIONS"]
