"""One shuffle round whose users are split into groups with their own randomizer (personalized
local privacy): :class:`PersonalizedShuffle`.

Every group's randomizer is finite (it has a ``matrix``) and all groups report on one output
space (matrices with the same columns: output y means the same message in every group). The
victim may be any user, so the round's δ(ε) is the maximum, over the victim's group and over the
pairs (x⁰, x¹) of that group's inputs, of the bound of :mod:`dpacct_shuffle.core.personalized`
(docs/theory.md, "Users with different randomizers").

Clone rates. For a victim pair with decomposition μ_b = pα·Q_b + α·Q_{1−b} + w·N, proportions
π = (r0, r1, s)/(r0 + r1 + s) come from the victim group's own column minima c_v(y) = min_x R_v(y|x):
r_b = min over Q_b's support of c_v/Q_b, s = min over N's support of (c_v − r0·Q0 − r1·Q1)/N. A user
of group g dominates t_g·S, S = π0·Q0 + π1·Q1 + πK·N, with t_g = min_y c_g(y)/S(y) (R_g(x)(y) ≥ c_g(y)
for every input x). For k-ary randomized response on a common domain of d values this is exact:
c_g = 1/(e^ε_g + d − 1) on every output, S is uniform (π = (1, 1, d − 2)/d) and t_g = d/(e^ε_g + d − 1),
the neutral share of group g being (d − 2)/(e^ε_g + d − 1).

Lower bounds: explicit configurations of the groups (:mod:`dpacct_shuffle.randomizers.personalized_lower`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from dpacct_shuffle.core.personalized import PersonalizedPair, pairs_delta, pairs_epsilon
from dpacct_shuffle.core.personalized_curve import pairs_curve_deltas
from dpacct_shuffle.core.rounding import ULP, ratio_up
from dpacct_shuffle.core.validation import check_delta, check_epsilon, check_num_users
from dpacct_shuffle.randomizers.base import LOWER_BOUND_MAX_USERS, Randomizer, ShuffledRandomizer
from dpacct_shuffle.randomizers.catalog import krr
from dpacct_shuffle.randomizers.exact_small_n import ExactShuffle, grouped_shuffle
from dpacct_shuffle.randomizers.lower_bounds import ExactLowerInstance, InstanceLowerBound
from dpacct_shuffle.randomizers.personalized_lower import personalized_lower_bound

_RATE_ROUNDING = 1e-12


def _check_groups(groups: object) -> tuple[tuple[Randomizer, int], ...]:
    if isinstance(groups, (str, bytes)) or not isinstance(groups, Sequence) or len(groups) == 0:
        raise TypeError(f"groups must be a non-empty sequence of (randomizer, count) pairs, "
                        f"got {groups!r}")
    merged: dict[Randomizer, int] = {}
    columns = None
    for index, group in enumerate(groups):
        if not isinstance(group, Sequence) or isinstance(group, str) or len(group) != 2:
            raise TypeError(f"groups[{index}] must be a pair (randomizer, count), got {group!r}")
        randomizer, count = group
        matrix = getattr(randomizer, "matrix", None)
        if not isinstance(randomizer, Randomizer) or matrix is None:
            raise TypeError(f"groups[{index}][0] must be a finite randomizer (a catalog entry or "
                            f"from_matrix result with a matrix), got {randomizer!r}")
        users = check_num_users(count, f"groups[{index}][1]")
        width = np.asarray(matrix).shape[1]
        if columns is None:
            columns = width
        elif width != columns:
            raise ValueError(f"groups[{index}][0] has {width} outputs, groups[0][0] has {columns}: "
                             "every group must report on the same output space")
        merged[randomizer] = merged.get(randomizer, 0) + users
    return tuple(merged.items())


def _victim_pairs(victim: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    rows = victim.shape[0]
    return [(victim[i], victim[j]) for i in range(rows) for j in range(i + 1, rows)]


def _min_ratio(numerator: np.ndarray, denominator: np.ndarray) -> float:
    support = denominator > 0.0
    if not np.any(support):
        return math.inf
    return float(np.min(numerator[support] / denominator[support]))


def _pair_shape(mu0: np.ndarray, mu1: np.ndarray, floor: np.ndarray
                ) -> tuple[float, float, tuple[float, float, float], np.ndarray] | None:
    """(p, β, π, S rounded up) of one victim pair, or None if the pair has β = 0."""
    pos, neg = np.maximum(mu0 - mu1, 0.0), np.maximum(mu1 - mu0, 0.0)
    beta = max(math.fsum(pos.tolist()), math.fsum(neg.tolist()))
    if beta == 0.0:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.concatenate([np.where(mu1 > 0, mu0 / mu1, np.where(mu0 > 0, np.inf, 1.0)),
                                 np.where(mu0 > 0, mu1 / mu0, np.where(mu1 > 0, np.inf, 1.0))])
    p = ratio_up(float(ratios.max()))
    beta = min(beta, 1.0 if math.isinf(p) else (p - 1.0) / (p + 1.0))
    q0, q1 = pos / math.fsum(pos.tolist()), neg / math.fsum(neg.tolist())
    alpha = 0.0 if math.isinf(p) else beta / (p - 1.0)
    neutral = np.maximum(np.minimum(mu0, mu1) - alpha * (q0 + q1), 0.0)
    neutral_total = math.fsum(neutral.tolist())
    shape_n = neutral / neutral_total if neutral_total > 0.0 else np.zeros_like(neutral)
    # the proportions only steer tightness (the rates below are computed against the full S): here
    # neutral masses left by rounding (min(μ0, μ1) − α·Q_b ≈ 0 on Q_b's support) are ignored
    r0 = _min_ratio(floor, q0)
    r1 = _min_ratio(floor, q1)
    s = 0.0
    clean_n = np.where(neutral > 1e-9 * np.minimum(mu0, mu1), shape_n, 0.0)
    if np.any(clean_n > 0.0):
        s = max(0.0, _min_ratio(np.maximum(floor - r0 * q0 - r1 * q1, 0.0), clean_n))
    total = r0 + r1 + s
    if not total > 0.0 or not math.isfinite(total):
        return p, beta, (0.5, 0.5, 0.0), np.zeros_like(mu0)
    proportions = (r0 / total, r1 / total, s / total)
    shape = proportions[0] * q0 + proportions[1] * q1 + proportions[2] * shape_n
    # rounding of the subtraction min(μ0, μ1) − α(Q0 + Q1) and of the normalisations, covered
    margin = proportions[2] * 8.0 * ULP * (mu0 + mu1 + q0 + q1) / max(neutral_total, 1e-300)
    return p, beta, proportions, shape * (1.0 + 1e-12) + margin


def _rate(floor: np.ndarray, shape: np.ndarray) -> float:
    """Largest t (rounded down) with t·shape ≤ floor pointwise, capped at 1."""
    ratio = _min_ratio(floor, shape)
    return 0.0 if not ratio > 0.0 else min(1.0, ratio * (1.0 - _RATE_ROUNDING))


def _weakest_others(others: list[tuple[int, float]], keep: int) -> tuple[tuple[int, float], ...]:
    """The ``keep`` users of smallest rate (the bound is non-increasing in every rate)."""
    result: dict[float, int] = {}
    for count, rate in sorted(others, key=lambda item: item[1]):
        take = min(count, keep)
        if take > 0:
            result[rate] = result.get(rate, 0) + take
            keep -= take
    return tuple((count, rate) for rate, count in sorted(result.items()) if count > 0)


class PersonalizedShuffle:
    """A shuffle round of several groups of users, group g of ``count`` users applying its own
    finite randomizer (module docstring; docs/theory.md, "Users with different randomizers").

    Satisfies :class:`~dpacct_shuffle.randomizers.base.SupportsShuffleBound`, so it is accepted
    wherever a randomizer is, e.g.
    ``ShuffleEvent(PersonalizedShuffle(groups), num_users)`` with ``num_users`` the total number
    of users: with ``n`` below the total (robust shuffling) the bound keeps the n − 1 other users
    of smallest clone rate. Groups with equal randomizers are merged; a single group is exactly the
    homogeneous round of that randomizer.
    """

    def __init__(self, groups: Sequence[tuple[Randomizer, int]]) -> None:
        self.groups = _check_groups(groups)
        self.num_users = sum(count for _, count in self.groups)
        matrices = [np.asarray(randomizer.matrix, dtype=float) for randomizer, _ in self.groups]
        floors = [matrix.min(axis=0) for matrix in matrices]
        # per victim group: list of (p, β, π, [t_g for every group])
        self._shapes: list[list[tuple[float, float, tuple[float, float, float], tuple[float, ...]]]] = []
        for v, matrix in enumerate(matrices):
            found: dict[tuple[float, float, tuple[float, float, float], tuple[float, ...]], None] = {}
            for mu0, mu1 in _victim_pairs(matrix):
                shape = _pair_shape(mu0, mu1, floors[v])
                if shape is None:
                    continue
                p, beta, proportions, s_up = shape
                rates = tuple(_rate(floor, s_up) for floor in floors)
                found[(p, beta, proportions, rates)] = None
            self._shapes.append(list(found))
        eps0 = [math.log(p) for shapes in self._shapes for p, *_ in shapes]
        self.epsilon0 = max(eps0) if eps0 else 0.0
        self._exact_built = False
        self._exact: ExactShuffle | None = None

    def exact(self, n: int | None = None) -> ExactShuffle | None:
        """The exact worst case over every configuration of every group (docs/theory.md, "Exact
        values at small n"), for the round with all its users and several groups, when it fits
        the work budget; else None."""
        if self._honest(n) != self.num_users or len(self.groups) == 1:
            return None
        if not self._exact_built:
            self._exact = grouped_shuffle([(np.asarray(randomizer.matrix, dtype=float), count)
                                           for randomizer, count in self.groups])
            self._exact_built = True
        return self._exact

    def _honest(self, n: int | None) -> int:
        if n is None:
            return self.num_users
        users = check_num_users(n)
        if users > self.num_users:
            raise ValueError(f"n must be at most the round's {self.num_users} users, got {users}")
        return users

    def victim_pairs(self, n: int | None = None) -> list[list[PersonalizedPair]]:
        """For each group (as victim's group), its victim pairs with the other users' rates, for
        ``n`` honest users (default: all)."""
        users = self._honest(n)
        result = []
        for v, shapes in enumerate(self._shapes):
            pairs = []
            for p, beta, proportions, rates in shapes:
                others = [(count - (g == v), rates[g]) for g, (_, count) in enumerate(self.groups)]
                pairs.append(PersonalizedPair(p, beta, proportions,
                                              _weakest_others(others, users - 1)))
            result.append(pairs)
        return result

    def delta(self, epsilon: float, n: int | None = None, *, rtol: float = 1e-3) -> float:
        """Certified upper bound on the round's δ(ε): the maximum over victim groups and victim
        pairs of the personalized bound (``rtol``: tolerance of the core evaluations)."""
        eps = check_epsilon(epsilon)
        users = self._honest(n)
        if len(self.groups) == 1:
            return self.groups[0][0].shuffled(users).delta(eps)
        pairs = [pair for group in self.victim_pairs(users) for pair in group]
        value = pairs_delta(pairs, eps, rtol) if pairs else 0.0
        exact = self.exact(users)
        if exact is not None:  # min of two valid upper bounds
            value = min(value, float(exact.delta_bounds(np.array([eps]))[1][0]))
        return value

    def curve_deltas(self, epsilons: NDArray[np.float64], n: int | None,
                     lowering: float) -> NDArray[np.float64] | None:
        """Upper bounds on the round's δ at every ε ≥ 0 of ``epsilons`` from one batched curve per
        victim pair and candidate (:func:`~dpacct_shuffle.core.personalized_curve.pairs_curve_deltas`,
        η = ``lowering``), or None where that form does not apply (one group: the randomizer's
        own bound; proportions with π0 ≠ π1)."""
        users = self._honest(n)
        if len(self.groups) == 1:
            return None
        pairs = [pair for group in self.victim_pairs(users) for pair in group]
        eps = np.asarray(epsilons, dtype=np.float64)
        return pairs_curve_deltas(pairs, eps, lowering) if pairs else np.zeros(len(eps))

    def epsilon(self, delta: float, n: int | None = None, *, rtol: float = 1e-3) -> float:
        """Certified upper bound on ε(δ) to relative tolerance ``rtol``: a point where
        :meth:`delta` was evaluated ≤ δ."""
        target = check_delta(delta)
        users = self._honest(n)
        if len(self.groups) == 1:
            return self.groups[0][0].shuffled(users).epsilon(target)
        pairs = [pair for group in self.victim_pairs(users) for pair in group]
        value = pairs_epsilon(pairs, target, rtol) if pairs else 0.0
        exact = self.exact(users)
        if exact is not None:  # min of two valid upper bounds
            value = min(value, exact.epsilon_bounds(target)[1])
        return value

    def shuffled(self, n: int | None = None, *,
                 lower_bound_max_users: int | None = LOWER_BOUND_MAX_USERS) -> ShuffledRandomizer:
        """The round with ``n`` honest users (default: all) as a
        :class:`~dpacct_shuffle.randomizers.base.ShuffledRandomizer`: its upper bounds are
        :meth:`delta` and :meth:`epsilon`, its lower bounds those of :meth:`lower_bound`."""
        return ShuffledRandomizer(self, self._honest(n),  # type: ignore[arg-type]
                                  lower_bound_max_users=lower_bound_max_users)

    def lower_bound(self, n: int | None = None) -> InstanceLowerBound | None:
        """Certified lower bound of the round with all its users: explicit instances (one
        configuration of the others, the counts of two output sets; docs/theory.md, "Users with
        different randomizers", lower bound). None for ``n`` below the round's users (robust
        shuffling: no instance is offered) and for a round of fewer than 2 users."""
        users = self._honest(n)
        if users != self.num_users or users < 2:
            return None
        if len(self.groups) == 1:
            return self.groups[0][0].lower_bound(users)
        instances = personalized_lower_bound([(np.asarray(randomizer.matrix, dtype=float), count)
                                              for randomizer, count in self.groups])
        exact = self.exact(users)
        if exact is None or not any(family.pairs for family in exact.families):
            return instances  # (no pair of distinct rows: nothing to bound, as the instances say)
        if instances is None:
            return InstanceLowerBound([ExactLowerInstance(exact)],
                                      "exact worst case over every configuration", is_exact=True)
        return InstanceLowerBound([*instances.pairs, ExactLowerInstance(exact)],
                                  instances.description, is_exact=True)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PersonalizedShuffle):
            return NotImplemented
        return self.groups == other.groups

    def __hash__(self) -> int:
        return hash(("PersonalizedShuffle", self.groups))

    def __repr__(self) -> str:
        inner = ", ".join(f"({randomizer!r}, {count})" for randomizer, count in self.groups)
        return f"PersonalizedShuffle([{inner}])"


def personalized_krr(domain_size: int, groups: Sequence[tuple[float, int]]) -> PersonalizedShuffle:
    """k-ary randomized response on ``domain_size`` values, group g with its own ε0: ``groups`` is a
    sequence of (ε0, count) pairs (module docstring: the neutral share of group g is
    (d − 2)/(e^ε_g + d − 1))."""
    if isinstance(groups, (str, bytes)) or not isinstance(groups, Sequence) or len(groups) == 0:
        raise TypeError(f"groups must be a non-empty sequence of (epsilon0, count) pairs, got {groups!r}")
    pairs = []
    for index, group in enumerate(groups):
        if not isinstance(group, Sequence) or isinstance(group, str) or len(group) != 2:
            raise TypeError(f"groups[{index}] must be a pair (epsilon0, count), got {group!r}")
        pairs.append((krr(group[0], domain_size), group[1]))
    return PersonalizedShuffle(pairs)


__all__ = ["PersonalizedShuffle", "personalized_krr"]
