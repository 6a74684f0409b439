"""The one rule of a randomizer's shuffled bound: the maximum over its cover, lowered by its
fallbacks.

A :class:`~dpacct_shuffle.randomizers.Randomizer` carries a *cover* — entries such that every
victim pair is bounded by at least one of them — and *fallbacks*, entries valid for every pair at
once. Each entry's value is a certified upper bound for its pairs, so the shuffled bound is

    δ_upper(ε) = min( max_{k ∈ cover} δ_k(ε), min_{f ∈ fallbacks} δ_f(ε) ),

and, since every entry's divergences are non-increasing in ε, the same rule inverts entry by entry:
ε_upper(δ) = min( max_k ε_k(δ), min_f ε_f(δ) ), each ε_k(δ) a point at which that entry's certified
δ is ≤ δ.

:func:`cover_fallback_bound` is that rule, elementwise on arrays (one value per ε, or per δ). Every
evaluation of a randomizer's bound goes through it: the point queries
(:meth:`~dpacct_shuffle.randomizers.Randomizer.delta` and
:meth:`~dpacct_shuffle.randomizers.Randomizer.epsilon`), the batched profile grid
(:class:`~dpacct_shuffle.profiles.BatchedRandomizer`) and the sampled rounds
(:mod:`dpacct_shuffle.sampling`), each with its own evaluation of the entries.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

Entry = TypeVar("Entry")
FloatArray = NDArray[np.float64]


def cover_fallback_bound(cover: Sequence[Entry], fallbacks: Sequence[Entry],
                         evaluate: Callable[[Entry], FloatArray],
                         below: Callable[[Entry, FloatArray], FloatArray] | None = None
                         ) -> FloatArray:
    """min(max over ``cover`` of ``evaluate(k)``, ``evaluate(f)`` for every f of ``fallbacks``),
    elementwise (module docstring).

    Args:
      cover: the entries covering every victim pair (at least one).
      fallbacks: entries valid for every pair (may be empty).
      evaluate: an entry's certified values at the points (an array of one shape for all).
      below: ``below(f, current)`` evaluates fallback ``f`` given the value reached so far; it may
        skip work where ``f`` cannot improve on ``current`` (any value ≥ ``current`` there, e.g.
        ``current`` itself). Default: ``evaluate(f)``.

    Returns:
      The combined values, one per point (each entry's values taken as they are: maxima and
      minima are exact in floating point).
    """
    if not cover:
        raise ValueError("cover must contain at least one entry")
    value = np.asarray(evaluate(cover[0]), dtype=np.float64)
    for entry in cover[1:]:
        value = np.maximum(value, evaluate(entry))
    for entry in fallbacks:
        value = np.minimum(value, evaluate(entry) if below is None else below(entry, value))
    return value


__all__ = ["cover_fallback_bound"]
