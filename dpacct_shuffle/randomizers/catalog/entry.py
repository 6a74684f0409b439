"""What every catalog entry shares: the decorator recording its origin, the parameter checks, the
ratio rounding, the single-cover constructor and the trinomial-projection lower-bound factories
(:mod:`dpacct_shuffle.randomizers.lower_bounds`)."""

from __future__ import annotations

import functools
import math
from typing import Callable, ParamSpec, Sequence

import numpy as np

from dpacct_shuffle.core.bound import VariationRatio
from dpacct_shuffle.randomizers.base import LowerBoundFactory, Randomizer, VariationRatioBound
from dpacct_shuffle.randomizers.binary_reduction import attach_binary_reduction
from dpacct_shuffle.randomizers.binary_rr_exact import BinaryRRProfile
from dpacct_shuffle.randomizers.frequency import FrequencyOracle
from dpacct_shuffle.randomizers.lower_bounds import InstanceLowerBound, trinomial_projection
from dpacct_shuffle.randomizers.matrix import matrix_lower_bound
from dpacct_shuffle.randomizers.multilevel import MultiLevelBound, attach_multilevel


MAX_MATRIX_CELLS = 4_000_000

_Args = ParamSpec("_Args")


def catalog_entry(constructor: Callable[_Args, Randomizer]) -> Callable[_Args, Randomizer]:
    """Decorator of the catalog functions: every Randomizer returned records its origin
    (:class:`~dpacct_shuffle.randomizers.base.Randomizer`, "Equality and pickling"): it is rebuilt
    by calling the entry again with the same arguments (pickle, ``copy.deepcopy``) and compares by
    (``name``, ``parameters``) — the parameters determine the entry, so equal keys mean equal
    bounds. Entries with a matrix and no closed-form multi-level bound get the matrix's
    (:func:`~dpacct_shuffle.randomizers.multilevel.attach_multilevel`), and two-input entries the
    binary reduction (:func:`~dpacct_shuffle.randomizers.binary_reduction.attach_binary_reduction`)."""

    @functools.wraps(constructor)
    def entry(*args: _Args.args, **kwargs: _Args.kwargs) -> Randomizer:
        randomizer = constructor(*args, **kwargs)
        if not any(isinstance(bound, MultiLevelBound) for bound in randomizer.fallbacks):
            randomizer = attach_multilevel(randomizer)
        randomizer = attach_binary_reduction(randomizer)
        identity = ("catalog", randomizer.name, tuple(sorted(randomizer.parameters.items())))
        randomizer._record_origin(functools.partial(entry, *args, **kwargs), identity)
        return randomizer

    return entry


def integer_parameter(name: str, value: object, low: int, high: float = math.inf) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        if not (isinstance(value, float) and value.is_integer()):
            raise TypeError(f"{name} must be an integer, got {value!r}")
    result = int(value)
    if result < low or result > high:
        upper = "inf" if high == math.inf else str(int(high))
        raise ValueError(f"{name} must be an integer in [{low}, {upper}], got {result}")
    return result


def single_entry(
    name: str,
    parameters: dict[str, object],
    vr: VariationRatio,
    *,
    alternatives: Sequence[VariationRatio] = (),
    matrix: np.ndarray | None = None,
    lower: LowerBoundFactory | None = None,
    levels: MultiLevelBound | None = None,
    published: tuple[float, float, float, float] | None = None,
    notes: str = "",
    frequency_oracle: FrequencyOracle | None = None,
) -> Randomizer:
    """A catalog entry: ``vr`` (its summary) and ``alternatives`` are each valid for every pair;
    the reported bound is their minimum (which one is tightest depends on ε and n), and the
    closed-form multi-level bound ``levels`` (valid for every pair) lowers it further."""
    return Randomizer(name, parameters, [VariationRatioBound([vr, *alternatives])], variation_ratio=vr,
                      fallbacks=[] if levels is None else [levels],
                      matrix=matrix, lower_bound=lower, published=published, notes=notes,
                      frequency_oracle=frequency_oracle)


Projection = tuple[tuple[float, float], tuple[float, float], tuple[float, float]]


def projection_lower(victim0: tuple[float, float], victim1: tuple[float, float],
                      others: Sequence[tuple[float, float]], description: str, *,
                      extra: Sequence[Projection] = ()) -> LowerBoundFactory:
    """Factory n -> lower bound from the trinomial projection (exact.py), max over configurations.

    ``others`` are the (S0, S1) masses of the other users' common input for the sets (S0, S1)
    whose victim masses are ``victim0``/``victim1``; ``extra`` adds instances with their own sets,
    as (victim0, victim1, other) triples.
    """
    instances = [(victim0, victim1, other) for other in others] + list(extra)

    def factory(n: int) -> InstanceLowerBound:
        return InstanceLowerBound(
            [trinomial_projection(n, v0, v1, other, description) for v0, v1, other in instances],
            description)

    return factory


def boost_projection(own: float, foreign: float, size0: float, size1: float) -> Projection:
    """Set-boost randomizers, others all holding a third value y: S0 ⊆ C0 \\ (C1 ∪ C_y) and
    S1 ⊆ C1 \\ (C0 ∪ C_y), of sizes (or probability weights) ``size0``, ``size1``.

    Every output of S0 is boosted (probability ``own`` = e·g) by x⁰ only and gets ``foreign`` = g
    under x¹ and under y (both leave it unboosted); S1 symmetrically. Masses: victim x⁰
    (size0·own, size1·foreign), x¹ (size0·foreign, size1·own), others (size0·foreign,
    size1·foreign). The others put only the base rate g on S0 ∪ S1 (no boosted mass to hide
    the victim's message in), unlike the configuration "others at x⁰".
    """
    return ((size0 * own, size1 * foreign), (size0 * foreign, size1 * own),
            (size0 * foreign, size1 * foreign))


def boost_sets_projection(own: float, foreign: float, set0: np.ndarray, set1: np.ndarray,
                           set_y: np.ndarray) -> Projection:
    """:func:`boost_projection` with S0 = C0 \\ (C1 ∪ C_y), S1 = C1 \\ (C0 ∪ C_y) counted from
    the explicit boosted sets (index arrays) of x⁰, x¹ and y."""
    size0 = np.setdiff1d(set0, np.union1d(set1, set_y)).size
    size1 = np.setdiff1d(set1, np.union1d(set0, set_y)).size
    return boost_projection(own, foreign, size0, size1)


def binary_rr_lower(eps0: float) -> LowerBoundFactory:
    return lambda n: BinaryRRProfile(eps0, n)


def matrix_lower(matrix: np.ndarray | None) -> LowerBoundFactory | None:
    if matrix is None:
        return None
    return lambda n: matrix_lower_bound(matrix, n)


__all__ = [
    "MAX_MATRIX_CELLS",
    "Projection",
    "binary_rr_lower",
    "boost_projection",
    "boost_sets_projection",
    "catalog_entry",
    "integer_parameter",
    "matrix_lower",
    "projection_lower",
    "single_entry",
]
