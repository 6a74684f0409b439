"""The replace-one bound of one Poisson-sampled round at every ε: min(void view, participant-count
bound), entry by entry for a catalog Randomizer, the participant-count bound evaluated lazily.

"The module docstring" below is that of the package, :mod:`dpacct_shuffle.sampling`
(the void view, floating point, robust shuffling).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from dpacct_shuffle.core.bound import VariationRatio
from dpacct_shuffle.profiles import (
    RandomizerDescription,
    ShuffleBound,
    as_shuffle_bound,
    honest_users,
    randomized_response_delta,
    sampled_users_lower_bound,
)
from dpacct_shuffle.profiles.lazy_minimum import LazyMinimum
from dpacct_shuffle.randomizers.base import Randomizer
from dpacct_shuffle.randomizers.cover_rule import cover_fallback_bound
from dpacct_shuffle.randomizers.personalized import PersonalizedShuffle
from dpacct_shuffle.sampling.entry_bounds import (
    _bound_deltas,
    _entry_deltas,
    _min_over,
    _pointwise,
    _void_entry,
    void_matrix_randomizer,
    void_personalized_round,
)
from dpacct_shuffle.sampling.parameters import DeltasFunction, FloatArray, void_variation_ratios

_EntryDeltas = Callable[..., FloatArray]
class _SampledRound:
    """δ(ε) of a Poisson-sampled round, replace-one, at every ε of an array: min(void view,
    participant-count bound), entry by entry for a catalog Randomizer, and the analyzed void
    matrix when the randomizer has a small one (module docstring). ``lowering`` None: every
    VariationRatio by the core at ``CORE_RTOL``; a float η: by its batched pair curve at η where
    it applies (one curve per (VariationRatio, n) for all ε; docs/theory.md, "Batched evaluation
    from the dominating pair") — each curve dominates the core's pair, and a minimum or maximum of
    valid bounds taken entry by entry is the same rule."""

    def __init__(self, randomizer: RandomizerDescription, num_users: int, gamma: float, honest_fraction: float,
                 tail: float, lowering: float | None = None) -> None:
        self.gamma = gamma
        self.lowering = lowering
        self.bound = as_shuffle_bound(randomizer)
        self.population = honest_users(num_users, honest_fraction)
        self.sampled, self.tail_mass = sampled_users_lower_bound(self.population, gamma, tail)
        transformed = self._deltas_function(randomizer)
        analyzed = void_matrix_randomizer(randomizer, gamma)
        if analyzed is None:
            self.deltas: Callable[[FloatArray], FloatArray] = transformed
        else:
            matrix_deltas = _bound_deltas(analyzed, lowering)
            population = self.population

            def deltas_upper(epsilons: FloatArray) -> FloatArray:
                return np.minimum(transformed(epsilons), matrix_deltas(epsilons, population))

            self.deltas = deltas_upper

    def delta(self, epsilon: float) -> float:
        """δ(ε) at one ε ≥ 0."""
        return float(self.deltas(np.array([epsilon], dtype=np.float64))[0])

    def _count_bound(self, delta_n: DeltasFunction) -> Callable[[FloatArray], FloatArray]:
        """The participant-count bound γ·(δ_m(ε) + τ·δ_RR,ε0(ε)) for one pair class."""
        gamma, users, tail_mass, eps0 = self.gamma, self.sampled, self.tail_mass, self.bound.epsilon0

        def deltas_upper(epsilons: FloatArray) -> FloatArray:
            local = np.array([randomized_response_delta(eps0, float(e)) for e in epsilons])
            return np.minimum(1.0, gamma * (delta_n(epsilons, users) + tail_mass * local))

        return deltas_upper

    def _best(self, void: DeltasFunction | None, delta_n: DeltasFunction) -> _EntryDeltas:
        """min(void view, participant-count bound) of one pair class, below an optional ceiling
        (a valid bound already known at each ε: the result is min(ceiling, void, count))."""
        count = LazyMinimum(self._count_bound(delta_n), self.bound.epsilon0,
                            lazy=self.lowering is not None)
        population = self.population

        def deltas_upper(epsilons: FloatArray, ceiling: FloatArray | None = None) -> FloatArray:
            if void is not None:
                values = void(epsilons, population)
                ceiling = values if ceiling is None else np.minimum(ceiling, values)
            return count.below(epsilons, ceiling)

        return deltas_upper

    def _deltas_function(self, randomizer: RandomizerDescription) -> Callable[[FloatArray], FloatArray]:
        gamma, lowering = self.gamma, self.lowering
        if isinstance(randomizer, VariationRatio):
            return self._best(_min_over(void_variation_ratios(randomizer, gamma), lowering),
                              _bound_deltas(randomizer, lowering))
        if isinstance(randomizer, PersonalizedShuffle):
            void_round = void_personalized_round(randomizer, gamma)
            return self._best(_pointwise(void_round.delta), _pointwise(self.bound.delta_upper))
        if isinstance(randomizer, Randomizer):
            covers = [self._best(_void_entry(e, gamma, lowering), _entry_deltas(e, lowering))
                      for e in randomizer.cover]
            fallbacks = [self._best(_void_entry(e, gamma, lowering), _entry_deltas(e, lowering))
                         for e in randomizer.fallbacks]

            def randomizer_deltas(epsilons: FloatArray) -> FloatArray:
                # each fallback is evaluated below the value reached (its lazy count bound)
                return cover_fallback_bound(covers, fallbacks, lambda entry: entry(epsilons),
                                            lambda entry, value: entry(epsilons, value))

            return randomizer_deltas
        if not isinstance(randomizer, ShuffleBound) and hasattr(randomizer, "variation_ratio"):
            return self._deltas_function(randomizer.variation_ratio)
        if isinstance(randomizer, Sequence) and not isinstance(randomizer, str) and randomizer:
            items = [self._deltas_function(item) for item in randomizer]

            def sequence_deltas(epsilons: FloatArray) -> FloatArray:
                # each item covers some victim pairs: the cover rule without fallbacks
                return cover_fallback_bound(items, (), lambda item: item(epsilons))

            return sequence_deltas
        return self._best(None, _bound_deltas(randomizer, lowering))
