"""The minimum of a valid bound (the *ceiling*) and a costly non-increasing bound, evaluating the
costly one only where it can lower the ceiling.

Used for the participant-count bound of a sampled round (:mod:`dpacct_shuffle.sampling`) and for
the structured bounds of a large parallel round read at fewer users
(:func:`dpacct_shuffle.profiles.parallel_bounds.parallel_composite_bound`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]

# points of the coarse grid on [0, ε0] at which a lazily evaluated bound is evaluated first
_COARSE_POINTS = 16


class LazyMinimum:
    """A non-increasing bound ``count`` (e.g. the participant-count bound of one pair class) at
    every ε, evaluated only where it can lower a ceiling (a valid bound at each ε) when ``lazy``.

    :meth:`below` returns min(ceiling, count). Lazily, the count is first evaluated on a coarse
    grid of [0, ε0]; at an ε between grid points g_i < ε < g_{i+1} it is evaluated only when
    count(g_{i+1}) < ceiling(ε), elsewhere the ceiling is returned. Returning the ceiling is
    always valid (it is a bound by itself); the rule only steers cost: the count is
    non-increasing in ε, so where count(g_{i+1}) ≥ ceiling(ε) it cannot be below the ceiling.
    """

    def __init__(self, count: Callable[[FloatArray], FloatArray], epsilon0: float,
                 lazy: bool) -> None:
        self.count = count
        self.lazy = lazy and math.isfinite(epsilon0) and epsilon0 > 0.0
        self.grid: FloatArray = np.linspace(0.0, epsilon0 if self.lazy else 0.0, _COARSE_POINTS + 1)
        self._coarse = np.full(_COARSE_POINTS + 1, np.nan)

    def _coarse_values(self, points: NDArray[np.int64]) -> FloatArray:
        """The count at the grid points ``points`` (each evaluated once, when first needed)."""
        missing = np.unique(points[np.isnan(self._coarse[points])])
        if missing.size:
            self._coarse[missing] = self.count(self.grid[missing])
        return self._coarse

    def below(self, epsilons: FloatArray, ceiling: FloatArray | None) -> FloatArray:
        """min(ceiling, count) at every ε of ``epsilons`` (count alone when ``ceiling`` is None)."""
        if ceiling is None or not self.lazy:
            values = self.count(epsilons)
            return values if ceiling is None else np.minimum(ceiling, values)
        grid = self.grid
        eps = np.asarray(epsilons, dtype=np.float64)
        result = np.array(ceiling, dtype=np.float64)
        index = np.searchsorted(grid, eps, side="right")  # grid[index − 1] ≤ ε < grid[index]
        on_grid = (index == len(grid)) | (grid[np.maximum(index - 1, 0)] == eps)
        # the grid point of each ε: itself (on the grid, or ε0 beyond) or its upper neighbour
        point = np.asarray(np.where(on_grid, np.minimum(index, len(grid)) - 1,
                                    np.minimum(index, len(grid) - 1)), dtype=np.int64)
        coarse = self._coarse_values(point)
        known = np.flatnonzero(on_grid)
        result[known] = np.minimum(result[known], coarse[point[known]])
        needed = np.flatnonzero(~on_grid & (coarse[point] < result))
        if needed.size:
            result[needed] = np.minimum(result[needed], self.count(eps[needed]))
        return result


__all__ = ["LazyMinimum"]
