"""Randomizer → bound for a random-mode parallel round ("pick query j w.p. π_j, answer it with R_j"):
the composite variation ratio and the minimum of every valid structured bound."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from dpacct_shuffle.core.bound import VariationRatio
from dpacct_shuffle.core.validation import check_num_users, check_range
from dpacct_shuffle.profiles.lazy_minimum import LazyMinimum
from dpacct_shuffle.profiles.shuffle_bounds import (
    RandomizerDescription,
    ShuffleBound,
    as_shuffle_bound,
    batched_randomizer,
    variation_ratios_of,
)
from dpacct_shuffle.profiles.tuning import PARALLEL_STRUCTURE_MAX_USERS
from dpacct_shuffle.randomizers.composite import (
    branch_levels,
    parallel_levels_bound,
    parallel_randomizer,
)


def parallel_composite(branches: Sequence[RandomizerDescription],
                       probabilities: Sequence[float]) -> VariationRatio:
    """Variation ratio of the randomizer "pick query j w.p. π_j, answer it with R_j, report (j, y)".

    Wang et al., arXiv:2304.05007, Sec. 6 ("advanced parallel composition"). The composite
    randomizer is R(x) = Σ_j π_j·δ_j ⊗ R_j(x): it outputs (j, y) with probability π_j·R_j(x)(y),
    the choice of j being independent of the data. For a victim pair (x⁰, x¹):

    * ratio: R(x⁰)(j, y)/R(x¹)(j, y) = R_j(x⁰)(y)/R_j(x¹)(y) ≤ p_j, so p = max_j p_j;
    * total variation: the branches have disjoint output sets, so
      TV(R(x⁰), R(x¹)) = Σ_j π_j·TV(R_j(x⁰), R_j(x¹)) ≤ Σ_j π_j·β_j =: β — the *average*, not one
      branch's value (the paper's public code overwrites β across branches, 16-43x too small);
      β ≤ Σ_j π_j (p_j − 1)/(p_j + 1) ≤ (p − 1)/(p + 1) as required;
    * q-ratio: R(x)(j, y) = π_j R_j(x)(y) ≤ π_j q_j R_j(x')(y) ≤ q·R(x')(j, y), q = max_j q_j
      (q_j = max(q0_j, q1_j) over the branch's parameters).

    Neutral share: the returned VariationRatio uses the generic s = w/q of the composite, which is
    valid for *any* randomizer with these (p, β, q): R(x_i) ≥ max(μ0, μ1)/q pointwise, and
    max(μ0, μ1) = pα(Q0 + Q1) + w·N (Q0, Q1 disjoint), so every other user dominates
    (pα/q)·Q0 + (pα/q)·Q1 + (w/q)·N. The *actual* pair may have a smaller TV β' ≤ β and a smaller
    ratio; the decomposition exists for any valid ratio bound p (μ0 ≤ p·μ1 is all it needs) and
    the bound with the generic share is non-decreasing in β for fixed p, q (docs/theory.md,
    "Monotonicity in β"; proof in
    :mod:`dpacct_shuffle.core.bound`), so evaluating at (p, β, q) upper-bounds the actual pair.
    A branch-specific larger share (e.g. k-ary RR's (d − 2)α) is deliberately not carried over:
    the composite's N mixes the branches' neutral parts in proportions that differ from the other
    users' mixtures, and no proof that Σ π_j s_j-type shares survive is given here.

    Args:
      branches: randomizer descriptions carrying VariationRatio parameters (one or several each).
      probabilities: π_j ≥ 0 with Σ π_j = 1 (checked to 1e-9).
    """
    if len(branches) == 0:
        raise ValueError("branches must not be empty")
    pis = check_probabilities(probabilities, len(branches))
    p, q, weighted = 1.0, 1.0, []
    for j, branch in enumerate(branches):
        vrs = variation_ratios_of(branch, f"branches[{j}]")
        p = max(p, max(vr.p for vr in vrs))
        weighted.append(pis[j] * max(vr.beta for vr in vrs))
        q = max(q, max(max(vr.q0, vr.q1) for vr in vrs))
    # the average, normalised by Σπ (checked to 1e-9) and nudged up against rounding
    beta = math.fsum(weighted) / math.fsum(pis) * (1.0 + 1e-12)
    beta_max = 1.0 if math.isinf(p) else (p - 1.0) / (p + 1.0)
    return VariationRatio(p, min(beta, beta_max), q)


def parallel_composite_bound(branches: Sequence[RandomizerDescription],
                             probabilities: Sequence[float], *,
                             lowering: float | None = None,
                             structure_max_users: int = PARALLEL_STRUCTURE_MAX_USERS) -> ShuffleBound:
    """Certified bound of one random-mode parallel round: the minimum of every valid bound.

    * one branch: the branch itself (π = 1: the round *is* a shuffle round of that randomizer);
    * the composite variation ratio of :func:`parallel_composite` (p = max_j p_j, average β);
    * finite branches: the composite matrix on the product of the branch domains, analysed by
      :func:`~dpacct_shuffle.randomizers.from_matrix`
      (:func:`dpacct_shuffle.randomizers.composite.parallel_randomizer`);
    * otherwise the multi-level bound with each branch's own levels — its blanket levels, or the
      clone levels (p_j, β_j, neutral share) of its VariationRatio
      (:class:`dpacct_shuffle.randomizers.composite.ParallelLevelsBound`; with every branch finite
      the composite matrix carries the multi-level bound of the same blanket).

    Each is an upper bound for every victim pair and configuration, so is their minimum; δ = 0
    from the composite VariationRatio's ε0 = ln max_j p_j on (the largest branch ratio, which no
    structured bound lowers). The structured bounds are evaluated for at most
    ``structure_max_users`` users (default ``PARALLEL_STRUCTURE_MAX_USERS``; their cost grows
    with n). Above it, with ``lowering`` (the PLD's form), they are read at ``structure_max_users``
    users — valid, since the bound is non-increasing in n (docs/theory.md, "Monotonicity in n") —
    so a round never reports more than the same round at that limit; without ``lowering`` the
    composite VariationRatio alone is reported there (skipping a candidate of a minimum of valid
    bounds stays valid). They are read at the limit lazily
    (:class:`~dpacct_shuffle.profiles.lazy_minimum.LazyMinimum`): first on 16 steps of [0, ε0],
    in between only where the value at the next step is below the composite bound at n.

    ``lowering`` None: every bound by its own evaluation. A float η: the composite VariationRatio
    and the composite matrix read their VariationRatios from batched pair curves at η
    (:func:`batched_randomizer`, one curve per number of users for all ε, each dominating the
    core's pair), and the bound has an array form (``deltas_upper``) — the form a round's PLD is
    built from, with ``structure_max_users`` = ``PARALLEL_STRUCTURE_PROFILE_MAX_USERS``.
    """
    if len(branches) == 0:
        raise ValueError("branches must not be empty")
    pis = check_probabilities(probabilities, len(branches))
    limit = check_num_users(structure_max_users, "structure_max_users")
    if lowering is not None:
        check_range("lowering", lowering, 0.0, 0.01, low_open=True)

    def adapted(randomizer: RandomizerDescription, name: str) -> ShuffleBound:
        if lowering is None:
            return as_shuffle_bound(randomizer, name)
        return as_shuffle_bound(batched_randomizer(randomizer, lowering), name)

    if len(branches) == 1:
        return adapted(branches[0], "branches[0]")
    candidates = [adapted(parallel_composite(branches, pis), "composite")]
    finite = parallel_randomizer(branches, pis)
    if finite is not None:
        candidates.append(adapted(finite, "composite matrix"))
    else:  # the composite matrix already carries the multi-level bound of the same blanket
        levels = parallel_levels_bound(
            [branch_levels(branch, variation_ratios_of(branch, f"branches[{j}]"))
             for j, branch in enumerate(branches)], pis)
        if levels is not None:
            candidates.append(ShuffleBound(levels.delta, levels.epsilon0, levels))
    items = tuple(candidates)

    def structured_deltas(epsilons: NDArray[np.float64], n: int) -> NDArray[np.float64]:
        least: NDArray[np.float64] = np.min(
            [bound.deltas_upper(epsilons, n) if bound.deltas_upper is not None
             else np.array([bound.delta_upper(float(eps), n) for eps in epsilons])
             for bound in items[1:]], axis=0)
        return least

    # above `limit` users the structured bounds are read at `limit` users (valid: the bound is
    # non-increasing in n), lazily: only where they can lower the composite bound at n
    at_limit = (LazyMinimum(lambda epsilons: structured_deltas(epsilons, limit),
                            items[0].epsilon0, lazy=True)
                if len(items) > 1 and lowering is not None else None)

    def delta_upper(epsilon: float, n: int) -> float:
        if at_limit is None:
            used = items if n <= limit else items[:1]
            return min(bound.delta_upper(epsilon, n) for bound in used)
        return float(deltas_upper(np.array([epsilon], dtype=np.float64), n)[0])

    def deltas_upper(epsilons: NDArray[np.float64], n: int) -> NDArray[np.float64]:
        eps = np.asarray(epsilons, dtype=np.float64)
        composite = items[0]
        value: NDArray[np.float64] = (
            composite.deltas_upper(eps, n) if composite.deltas_upper is not None
            else np.array([composite.delta_upper(float(e), n) for e in eps]))
        if len(items) == 1 or (at_limit is None and n > limit):
            return value
        if n <= limit:
            return np.minimum(value, structured_deltas(eps, n))
        return at_limit.below(eps, value) if at_limit is not None else value

    return ShuffleBound(delta_upper, items[0].epsilon0, tuple(bound.source for bound in items),
                        None if lowering is None else deltas_upper)


def check_probabilities(probabilities: Sequence[float] | None, count: int) -> tuple[float, ...]:
    """Validate a probability vector of length ``count`` (None: uniform)."""
    if probabilities is None:
        return (1.0 / count,) * count
    values = tuple(check_range(f"probabilities[{i}]", v, 0.0, 1.0)
                   for i, v in enumerate(probabilities))
    if len(values) != count:
        raise ValueError(f"probabilities must have one entry per branch ({count}), got {len(values)}")
    if abs(math.fsum(values) - 1.0) > 1e-9:
        raise ValueError(f"probabilities must sum to 1, got sum {math.fsum(values)!r}")
    return values
