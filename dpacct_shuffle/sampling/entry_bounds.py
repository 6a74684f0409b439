"""δ(ε, n) at every ε of an array for the pieces of a sampled round: one VariationRatio, the void
form of one cover/fallback entry of a catalog Randomizer, the unsampled round, and the void
randomizer analyzed as a matrix (one randomizer, or a round of users with different randomizers).

"The module docstring" below is that of the package, :mod:`dpacct_shuffle.sampling`
(the void view, floating point, robust shuffling).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np

from dpacct_shuffle.core.batched_levels import variation_ratio_curve
from dpacct_shuffle.core.bound import VariationRatio
from dpacct_shuffle.core.rounding import ratio_up
from dpacct_shuffle.profiles import (
    CORE_RTOL,
    RandomizerDescription,
    as_shuffle_bound,
    batched_entry_deltas,
    batched_randomizer,
)
from dpacct_shuffle.randomizers.base import LocalPairBound, PairBound, Randomizer, VariationRatioBound
from dpacct_shuffle.randomizers.binary_reduction import BinaryReductionUpper
from dpacct_shuffle.randomizers.binary_rr_curve import BinaryRRExactUpper
from dpacct_shuffle.randomizers.gaussian import GaussianBlanketBound
from dpacct_shuffle.randomizers.matrix import from_matrix
from dpacct_shuffle.randomizers.personalized import PersonalizedShuffle
from dpacct_shuffle.sampling.parameters import (
    VOID_MATRIX_MAX_CELLS,
    DeltasFunction,
    FloatArray,
    _exact_binary_rr,
    _gamma_up,
    check_sampling_probability,
    void_variation_ratios,
)


def _pointwise(delta: Callable[[float, int], float]) -> DeltasFunction:
    """The array form of a scalar δ(ε, n): one call per ε."""

    def deltas(epsilons: FloatArray, n: int) -> FloatArray:
        return np.array([delta(float(epsilon), n) for epsilon in epsilons], dtype=np.float64)

    return deltas


def _vr_deltas(vr: VariationRatio, lowering: float | None) -> DeltasFunction:
    """δ(ε, n) of one VariationRatio at every ε: its every-ε curve at η = ``lowering`` where it has
    one (:func:`dpacct_shuffle.core.batched_levels.variation_ratio_curve`, built once per (vr, n)
    for all ε; it dominates the core's pair), else the core at ``CORE_RTOL`` point by point."""
    pointwise = _pointwise(lambda epsilon, n: vr.delta_interval(epsilon, n, rtol=CORE_RTOL).upper)
    if lowering is None:
        return pointwise

    def deltas(epsilons: FloatArray, n: int) -> FloatArray:
        curve = variation_ratio_curve(vr, n, lowering)
        return pointwise(epsilons, n) if curve is None else curve.deltas(epsilons)

    return deltas


def _min_over(vrs: Sequence[VariationRatio], lowering: float | None) -> DeltasFunction:
    """The minimum over candidate VariationRatios (each valid, so is their minimum)."""
    parts = [_vr_deltas(vr, lowering) for vr in vrs]

    def deltas(epsilons: FloatArray, n: int) -> FloatArray:
        return np.asarray(np.min([part(epsilons, n) for part in parts], axis=0), dtype=np.float64)

    return deltas


def _void_entry(entry: object, gamma: float, lowering: float | None) -> DeltasFunction | None:
    """Void-view δ(ε, N) of one cover/fallback entry of a catalog Randomizer, None if the entry
    has no void form (e.g. an exact-profile fallback)."""
    if isinstance(entry, VariationRatioBound) and all(
            isinstance(vr, VariationRatio) for vr in entry.candidates):
        return _min_over([v for vr in entry.candidates for v in void_variation_ratios(vr, gamma)],
                         lowering)
    if isinstance(entry, LocalPairBound):
        factor = ratio_up(_gamma_up(gamma))
        return _pointwise(lambda epsilon, n: min(1.0, factor * entry.delta(epsilon, n)))
    if isinstance(entry, BinaryRRExactUpper):
        return _pointwise(_exact_binary_rr(entry.epsilon0, gamma, "replace_one"))
    if isinstance(entry, BinaryReductionUpper):  # sampled binary RR at rate γρ (replace-one)
        return _pointwise(_exact_binary_rr(entry.epsilon0, entry.sampled(_gamma_up(gamma)),
                                           "replace_one"))
    if isinstance(entry, GaussianBlanketBound):  # the blanket of the void Gaussian report
        void = entry.void_bound(_gamma_up(gamma))
        return lambda epsilons, n: void.deltas_at_rtol(epsilons, n, CORE_RTOL)
    return None


def _entry_deltas(entry: PairBound, lowering: float | None) -> DeltasFunction:
    """δ(ε, n) of one cover/fallback entry (the unsampled round): with ``lowering`` its supported
    candidates from their batched curves (:func:`dpacct_shuffle.profiles.batched_entry_deltas`),
    else the entry's bound at ``CORE_RTOL`` point by point."""
    if lowering is None:
        return _pointwise(functools.partial(entry.delta_at_rtol, rtol=CORE_RTOL))
    return lambda epsilons, n: batched_entry_deltas(entry, epsilons, n, lowering)


def _bound_deltas(randomizer: RandomizerDescription, lowering: float | None) -> DeltasFunction:
    """δ(ε, n) of the unsampled round of ``randomizer`` at every ε: its batched form
    (:func:`dpacct_shuffle.profiles.batched_randomizer`) when ``lowering`` is given and it has
    one, else its :func:`~dpacct_shuffle.profiles.as_shuffle_bound` point by point."""
    bound = as_shuffle_bound(randomizer if lowering is None
                             else batched_randomizer(randomizer, lowering))
    return bound.deltas_upper if bound.deltas_upper is not None else _pointwise(bound.delta_upper)


def void_matrix_randomizer(randomizer: RandomizerDescription, sampling_probability: float
                           ) -> Randomizer | None:
    """``from_matrix`` analysis of R' = γ·R + (1 − γ)·⊥ for a randomizer with a ``matrix`` of at
    most ``VOID_MATRIX_MAX_CELLS`` cells including the ⊥ column (None otherwise).

    R' is a finite randomizer in its own right (the matrix with the column (1 − γ) appended and the
    other columns scaled by γ), so the analyzer's bound for N users is a bound for the sampled
    round. It sees R' output by output (every output of R' its own neutral type), which the
    entry-by-entry transform of the catalog's closed forms does not; γ is rounded up (module
    docstring).
    """
    gamma = check_sampling_probability(sampling_probability)
    if not isinstance(randomizer, Randomizer) or randomizer.matrix is None or gamma in (0.0, 1.0):
        return None
    rows = np.asarray(randomizer.matrix, dtype=float)
    if rows.ndim != 2 or rows.shape[0] * (rows.shape[1] + 1) > VOID_MATRIX_MAX_CELLS:
        return None
    g_up = _gamma_up(gamma)
    void = np.hstack([g_up * rows, np.full((rows.shape[0], 1), 1.0 - g_up)])
    return from_matrix(void, name=f"void({randomizer.name}, {gamma!r})")


def void_personalized_round(round_: PersonalizedShuffle, sampling_probability: float, *,
                            round_up: bool = True) -> PersonalizedShuffle:
    """The void view of a Poisson-sampled round of users with different randomizers: every user of
    group g sends R'_g(x) = γ·R_g(x) + (1 − γ)·⊥, all groups on the common outputs plus ⊥, so the
    sampled round is the shuffle round of these groups (module docstring, "The void view", group by
    group) and :class:`~dpacct_shuffle.randomizers.PersonalizedShuffle`'s bounds for the N users of
    the population bound it. γ is rounded up for the upper bound (module docstring, "Floating
    point"); ``round_up=False`` keeps γ as given, the round whose laws a lower bound describes. Each
    R'_g keeps only its matrix and its local bound (the round's bounds read the matrices)."""
    gamma = check_sampling_probability(sampling_probability)
    if gamma == 1.0:
        return round_
    reporting = _gamma_up(gamma) if round_up else gamma
    groups = []
    for randomizer, count in round_.groups:
        rows = np.asarray(randomizer.matrix, dtype=float)
        void = np.hstack([reporting * rows, np.full((rows.shape[0], 1), 1.0 - reporting)])
        first, second = np.triu_indices(rows.shape[0], 1)  # every pair of inputs (≥ 2 rows)
        groups.append((Randomizer(f"void({randomizer.name}, {gamma!r})", dict(randomizer.parameters),
                                  [LocalPairBound(void[first], void[second])],
                                  variation_ratio=None, matrix=void), count))
    return PersonalizedShuffle(groups)
