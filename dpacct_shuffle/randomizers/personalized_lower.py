"""Certified lower bounds for a shuffle round of users with different randomizers
(:class:`~dpacct_shuffle.randomizers.PersonalizedShuffle`; docs/theory.md, "Users with different
randomizers", lower bound).

Each value is the exact hockey-stick divergence of one explicit instance after a post-processing
(data-processing inequality), so it is below the worst case over neighbouring datasets. An instance
is a victim of group v with a pair (x⁰, x¹) of its inputs, fixed inputs of the other users, and
the post-processing that keeps only the numbers of shuffled messages in two disjoint output sets S0
and S1 (S0 = {μ0 > μ1}, S1 = {μ1 > μ0}) — or in S0 alone (S1 = ∅).

Laws. The n_j other users at one input (of one group) each land in S0 with probability a_j and in
S1 with b_j. If a_j = b_j for every j (e.g. k-ary randomized response, the others at a value
outside {x⁰, x¹}), the number C of the others' messages in S0 ∪ S1 is a sum of independent
Bin(n_j, 2a_j) and, given C, their count in S0 is Bin(C, ½). With S1 = ∅ the count in S0 is the
sum of Bin(n_j, a_j). Configurations tried: every group at its row with equal, smallest masses on S0
and S1 (both sets); for one set, k users of each group at its row of least mass and the others at
its row of most mass, k ∈ {0, ⌊n_g/2⌋, n_g}. With the victim's
masses u_b = (R_v(x^b)(S0), R_v(x^b)(S1), rest), the two released laws of (C_total, H0) are

    P_b(C, h) = u_b0·W(C−1)·β_{C−1}(h−1) + u_b1·W(C−1)·β_{C−1}(h) + u_b2·W(C)·β_C(h),

W the law of C and β_C the Bin(C, ½) pmf (with S1 = ∅: P_b(k) = u_b0·W(k−1) + (1 − u_b0)·W(k)). On a
row C, P_0 − e^ε·P_1 divided by β_C(h) is affine in h (β_{C−1}(h−1)/β_C(h) = 2h/C,
β_{C−1}(h)/β_C(h) = 2(C − h)/C), so its positive part is a tail in h, whose masses are binomial
tails (as in :class:`~dpacct_shuffle.randomizers.lower_bounds.TrinomialInstance`, whose others all
share one law; here W is the law of a sum over groups).

Numerics, every step on the low side. Each group's law is kept on a window (the mass outside,
bounded above with the binomial tails, is ``dropped``) and the windows are convolved (nonnegative
sums: relative error at most (length + 2)·u per convolution). For any set S of cells,
Σ_S(P − e^ε·Q) ≥ Σ_S(P̃ − e^ε·Q̃) − e^ε·dropped for the laws P̃, Q̃ built from the kept part W̃ ≤ W
of W, because Q − Q̃ is a mixture of shifts of W − W̃. Each row is lowered by η·(A_0 + e^ε·A_1)
with η the relative error of W̃ (log-pmfs, convolutions, and the sensitivity n_g·u/min(π, 1 − π)
of Bin(n_g, π) to the rounding of π) plus that of the binomial tails; values below 1e-280 (where
floats lose relative accuracy) are charged as an absolute slack.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from dpacct_shuffle.core.problem import UNIT_ROUNDOFF, special_function_rtol
from dpacct_shuffle.core.validation import check_epsilon
from dpacct_shuffle.randomizers.lower_bounds import (
    InstanceLowerBound,
    TrinomialInstance,
    _binomial_tail,
    _log_rel_error,
    _window,
    binomial_logpmf,
)

#: Absolute slack for products and sums of floats below the normal range (module docstring).
ABSOLUTE_SLACK = 1e-280
#: At most this many configurations "each group split between its extreme rows" are tried for
#: S1 = ∅ (beyond: all groups at the least, at the split, at the most mass).
MAX_SPLIT_CONFIGURATIONS = 27

Masses = tuple[float, float, float]
Others = tuple[tuple[int, float], ...]  # (count, probability) of each group's binomial


def _sum_law(others: Others) -> tuple[int, np.ndarray, float, float]:
    """(offset, W̃, dropped, η): the kept law of Σ_g Bin(n_g, π_g) on offset + 0, 1, ...,
    an upper bound on its missing mass and a bound on the relative error of its entries."""
    offset, law, dropped, error = 0, np.ones(1), 0.0, 0.0
    unit = 8.0 * UNIT_ROUNDOFF
    for count, prob in others:
        if prob <= 0.0:
            continue
        if prob >= 1.0:
            offset += count
            continue
        lo, hi = _window(count, prob)
        k = np.arange(lo, hi + 1)
        pmf = np.exp(binomial_logpmf(k, count, prob))
        below = float(_binomial_tail(np.array([lo - 1]), np.array([count]), prob, False)[0])
        above = float(_binomial_tail(np.array([hi + 1]), np.array([count]), prob, True)[0])
        dropped += 2.0 * (below + above)
        error += _log_rel_error(count) + count * unit / min(prob, 1.0 - prob) + unit
        if law.size > 1:
            error += (min(law.size, pmf.size) + 2) * UNIT_ROUNDOFF
        law = np.convolve(law, pmf)
        offset += lo
    law = np.where(law < ABSOLUTE_SLACK, 0.0, law)
    return offset, law, dropped + ABSOLUTE_SLACK * (law.size + 1), error


class GroupCountsInstance:
    """Exact hockey-stick divergence of the counts in S0 and S1 (or S0 alone) of one
    configuration of grouped others (module docstring).

    ``victim0``, ``victim1``: the victim's masses (S0, S1, rest) under x⁰ and x¹ (S1 mass 0 when
    ``two_sets`` is False); ``others``: pairs (count, a) of users at one input — each lands in S0
    with probability a and, if ``two_sets``, in S1 with the same probability a.
    """

    def __init__(self, victim0: Masses, victim1: Masses, others: Others, two_sets: bool,
                 description: str = "") -> None:
        self.u = np.array(victim0, dtype=float)
        self.v = np.array(victim1, dtype=float)
        self.two_sets = two_sets
        self.description = description
        law_of = tuple((count, 2.0 * a if two_sets else a) for count, a in others if count > 0)
        self.offset, self.law, self.dropped, self.law_error = _sum_law(law_of)

    def _direction(self, num: np.ndarray, den: np.ndarray, eps: float) -> float:
        scale = math.exp(eps)
        cur = np.concatenate([self.law, [0.0]])  # W̃(C), C = offset + index
        prev = np.concatenate([[0.0], self.law])  # W̃(C − 1)
        if not self.two_sets:
            a = num[0] * prev + (num[1] + num[2]) * cur
            b = den[0] * prev + (den[1] + den[2]) * cur
            error = self.law_error + 4.0 * UNIT_ROUNDOFF
        else:
            c = self.offset + np.arange(cur.size)
            d0, d1, d2 = (num[k] - scale * den[k] for k in range(3))
            # g(h) = slope·h + intercept has the sign of P0 − e^ε·P1 on the cell (C, h)
            slope = prev * 2.0 * (d0 - d1) / np.maximum(c, 1)
            intercept = prev * 2.0 * d1 + cur * d2
            with np.errstate(divide="ignore", invalid="ignore"):
                root = np.where(slope != 0.0, -intercept / slope, 0.0)
            root = np.clip(root, -1.0, c + 1.0)
            upper = d0 - d1 >= 0.0  # the same on every row
            if upper:
                t = np.where(slope > 0.0, np.floor(root) + 1.0, np.where(intercept > 0.0, 0.0, c + 1.0))
            else:
                t = np.where(slope < 0.0, np.ceil(root) - 1.0, np.where(intercept > 0.0, c, -1.0))
            t = t.astype(np.int64)
            prev_n = np.maximum(c - 1, 0)
            t0 = _binomial_tail(t - 1, prev_n, 0.5, upper)
            t1 = _binomial_tail(t, prev_n, 0.5, upper)
            t2 = _binomial_tail(t, c, 0.5, upper)
            a = prev * (num[0] * t0 + num[1] * t1) + cur * num[2] * t2
            b = prev * (den[0] * t0 + den[1] * t1) + cur * den[2] * t2
            trials = float(max(int(c.max()), 1))
            tail_error = max(TrinomialInstance.TAIL_REL_ERROR, float(special_function_rtol(trials)))
            # a_g = b_g holds for the floats summed over S0 and S1; the exact sums may differ by an
            # ulp, which moves each Bin(C, ½) cell by a relative C·8u/½ at most
            error = self.law_error + tail_error + 8.0 * UNIT_ROUNDOFF + trials * 16.0 * UNIT_ROUNDOFF
        # the margin is taken on the computed (not the exact) masses: 1.01·η covers η/(1 − η)
        error *= 1.01
        rows = a - scale * b - error * (a + scale * b) - ABSOLUTE_SLACK * (1.0 + scale)
        total = math.fsum(rows[rows > 0.0].tolist())
        return max(0.0, total * (1.0 - 1e-12) - scale * self.dropped * (1.0 + 1e-12))

    def delta(self, epsilon: float) -> float:
        """max(D_{e^ε}(P0‖P1), D_{e^ε}(P1‖P0)) of the counts, rounded down."""
        eps = check_epsilon(epsilon)
        return max(self._direction(self.u, self.v, eps), self._direction(self.v, self.u, eps))

    def max_loss(self) -> float:
        """An upper bound on |ln P0/P1| (ratio of mixtures ≤ largest component ratio)."""
        parts = (zip(self.u, self.v) if self.two_sets else
                 ((self.u[0], self.v[0]), (self.u[1] + self.u[2], self.v[1] + self.v[2])))
        ratios = [math.inf if min(a, b) == 0 else abs(math.log(a / b))
                  for a, b in parts if a > 0 or b > 0]
        return max(ratios) if ratios else 0.0


def _masses(row: np.ndarray, set0: np.ndarray, set1: np.ndarray) -> Masses:
    rest = ~(set0 | set1)
    return (math.fsum(row[set0].tolist()), math.fsum(row[set1].tolist()),
            math.fsum(row[rest].tolist()))


def _largest_pair(matrix: np.ndarray) -> tuple[int, int]:
    """The victim pair of largest total variation (ties: the first)."""
    best, pair = -1.0, (0, 1)
    for i in range(matrix.shape[0]):
        tv = 0.5 * np.abs(matrix[i] - matrix).sum(axis=1)
        j = int(np.argmax(tv))
        if tv[j] > best:
            best, pair = float(tv[j]), (i, j)
    return pair


def _victim_instances(groups: Sequence[tuple[np.ndarray, int]], v: int) -> list[GroupCountsInstance]:
    matrix_v = groups[v][0]
    i, j = _largest_pair(matrix_v)
    mu0, mu1 = matrix_v[i], matrix_v[j]
    set0, set1 = mu0 > mu1 * (1.0 + 1e-9), mu1 > mu0 * (1.0 + 1e-9)
    others = [(matrix, count - (g == v)) for g, (matrix, count) in enumerate(groups)]
    others = [(matrix, count) for matrix, count in others if count > 0]
    label = f"victim of group {v} with inputs ({i}, {j})"
    instances = []
    # both sets: every group at its row with equal masses on S0 and S1 (least mass), if any
    balanced = []
    for matrix, count in others:
        rows = [_masses(row, set0, set1) for row in matrix]
        equal = [m[0] for m in rows if m[0] == m[1]]
        if equal:
            balanced.append((count, min(equal)))
    if np.any(set1) and len(balanced) == len(others):
        instances.append(GroupCountsInstance(
            _masses(mu0, set0, set1), _masses(mu1, set0, set1), tuple(balanced), True,
            f"{label}: counts in S0 and S1, others at rows with equal masses on both"))
    # one set: in every group, k users at the row of least mass on it and the others at the row of
    # most mass, k ∈ {0, ⌊n/2⌋, n} (binary outputs: the worst configurations split the inputs)
    none = np.zeros_like(set0)
    for chosen in (set0, set1):
        if not np.any(chosen):
            continue
        splits = []
        for matrix, count in others:
            masses = [_masses(row, chosen, none)[0] for row in matrix]
            low, high = min(masses), max(masses)
            splits.append(sorted({((k, low), (count - k, high)) for k in (0, count // 2, count)}))
        if math.prod(len(options) for options in splits) > MAX_SPLIT_CONFIGURATIONS:
            splits = [[options[0], options[len(options) // 2], options[-1]] for options in splits]
            configurations = [tuple(options[index] for options in splits) for index in range(3)]
        else:
            configurations = list(itertools.product(*splits))
        for configuration in configurations:
            counts = tuple((k, a) for group in configuration for k, a in group if k > 0)
            instances.append(GroupCountsInstance(
                _masses(mu0, chosen, none), _masses(mu1, chosen, none), counts, False,
                f"{label}: count in one set, each group split between its extreme rows"))
    return instances


def personalized_lower_bound(groups: Sequence[tuple[np.ndarray, int]]) -> InstanceLowerBound | None:
    """Certified lower bound of a round whose group g has ``count`` users of the finite
    randomizer ``matrix`` (pairs (matrix, count), all matrices on one output space, at least
    two users): the maximum over victim groups of the instances of the module docstring (None if
    no group has two inputs with different output laws: then every δ(ε) is 0)."""
    instances = [instance for v in range(len(groups)) for instance in _victim_instances(groups, v)]
    if not instances:
        return None
    return InstanceLowerBound(instances, "users with different randomizers: counts of S0 and S1 "
                              "for one configuration of the other groups")


__all__ = ["ABSOLUTE_SLACK", "GroupCountsInstance", "MAX_SPLIT_CONFIGURATIONS",
           "personalized_lower_bound"]
