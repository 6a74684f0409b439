"""Randomizer → bound: adapt any randomizer description to the ``δ(ε, n)`` of one shuffled report
(:class:`ShuffleBound`), the batched pair curve of a randomizer (:class:`BatchedRandomizer`), and
the user counts a round is evaluated at (honest users, the geometric users grid)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Optional, Protocol, Union

import attr
import numpy as np
from numpy.typing import NDArray

from dpacct_shuffle.core.batched import DEFAULT_LOWERING, batched_delta, supports_batched_delta
from dpacct_shuffle.core.batched_levels import variation_ratio_curve
from dpacct_shuffle.core.bound import VariationRatio
from dpacct_shuffle.core.enumerated_levels import EnumeratedLevelsCurve, count_vectors_curve
from dpacct_shuffle.core.multilevel import PrivacyLossLevels
from dpacct_shuffle.core.validation import check_num_users, check_range
from dpacct_shuffle.profiles.tuning import CORE_RTOL, ROUND_LOWERING
from dpacct_shuffle.randomizers.base import PairBound, Randomizer, SupportsShuffleBound
from dpacct_shuffle.randomizers.cover_rule import cover_fallback_bound
from dpacct_shuffle.randomizers.personalized import PersonalizedShuffle


@attr.s(frozen=True, slots=True, auto_attribs=True, eq=False)
class ShuffleBound:
    """Adapter: anything that certifies ``δ(ε)`` of one shuffled report for ``n`` users.

    Attributes:
      delta_upper: ``(epsilon, n) -> δ`` upper bound, both directions, non-increasing in ε and n.
      epsilon0: local guarantee of the victim's report; δ = 0 for ε ≥ epsilon0 (``inf`` if none).
      source: the object this was built from (for ``repr`` and descriptions).
      deltas_upper: optional ``(epsilons, n) -> δ`` array form of ``delta_upper`` (one call for
        many ε, e.g. the batched pair curve), used by :func:`profile_grid`.
    """

    delta_upper: Callable[[float, int], float]
    epsilon0: float
    source: object
    deltas_upper: Optional[Callable[[NDArray[np.float64], int], NDArray[np.float64]]] = None


#: What :func:`as_shuffle_bound` adapts (its docstring lists the forms; objects carrying a
#: ``variation_ratio`` and bare ``delta(ε, n)``/``epsilon0`` profiles are accepted too).
RandomizerDescription = Union[SupportsShuffleBound, ShuffleBound, "BatchedRandomizer",
                              Sequence[SupportsShuffleBound]]


def _max_delta(bounds: Sequence[ShuffleBound]) -> Callable[[float, int], float]:
    def delta_upper(epsilon: float, n: int) -> float:
        return max(bound.delta_upper(epsilon, n) for bound in bounds)

    return delta_upper


def _batched_entry_delta(bound: PairBound, epsilon: float, n: int, lowering: float) -> float:
    """One cover/fallback entry of a Randomizer: the minimum over its candidate VariationRatios with
    each supported one evaluated by the batched curve, or the entry's own every-ε curves
    (:meth:`~dpacct_shuffle.randomizers.base.PairBound.curve_deltas`), or its own bound at
    ``CORE_RTOL``."""
    return float(batched_entry_deltas(bound, np.array([epsilon]), n, lowering)[0])


def batched_entry_deltas(bound: PairBound, epsilons: NDArray[np.float64], n: int,
                         lowering: float) -> NDArray[np.float64]:
    """One cover/fallback entry of a Randomizer at every ε of ``epsilons``: the minimum over its
    candidate VariationRatios, each supported one read from its batched curve (built once for all
    ε), or the entry's own every-ε curves
    (:meth:`~dpacct_shuffle.randomizers.base.PairBound.curve_deltas`: the multi-level bound's,
    docs/theory.md, "Batched evaluation of multi-level bounds"), or its own bound at
    ``CORE_RTOL`` point by point."""
    candidates: Sequence[VariationRatio] = getattr(bound, "candidates", None) or ()
    curves = [small_users_curve(vr, n) or variation_ratio_curve(vr, n, lowering)
              for vr in candidates]
    if not any(curve is not None for curve in curves):
        curved = bound.curve_deltas(epsilons, n, lowering)
        if curved is not None:
            return curved
        return bound.deltas_at_rtol(epsilons, n, CORE_RTOL)
    return np.asarray(np.min(
        [curve.deltas(epsilons) if curve is not None
         else np.array([vr.delta(float(eps), n, rtol=CORE_RTOL) for eps in epsilons])
         for vr, curve in zip(candidates, curves)], axis=0), dtype=np.float64)


#: Users up to which a VariationRatio's every-ε curve is its count-vector curve
#: (:func:`small_users_curve`; about n²/2 count vectors, above this no cheaper than the batched
#: pair curve).
SMALL_USERS_CURVE_MAX_USERS = 200


def small_users_curve(vr: VariationRatio, n: int) -> EnumeratedLevelsCurve | None:
    """For few users, the every-count-vector curve of a VariationRatio's three clone levels
    (:func:`~dpacct_shuffle.core.enumerated_levels.count_vectors_curve` of
    :meth:`PrivacyLossLevels.of_variation_ratio`): the multi-level expression of those levels is
    the core's bound of the pair term by term, and the curve is at least that expression at every
    ε ≥ 0 (docs/theory.md, "Every-ε curve of a multi-level bound by enumeration") — no lowering η,
    and at few users far cheaper than the batched pair curve. None when it does not apply (an
    infinite ratio, β = 0, more than ``SMALL_USERS_CURVE_MAX_USERS`` users)."""
    if n > SMALL_USERS_CURVE_MAX_USERS or not (math.isfinite(vr.p) and vr.beta > 0.0
                                               and vr.alpha > 0.0):
        return None
    return count_vectors_curve(PrivacyLossLevels.of_variation_ratio(vr), n)


@attr.s(frozen=True, slots=True, auto_attribs=True)
class BatchedRandomizer:
    """A VariationRatio or catalog Randomizer whose shuffled bound uses the batched pair curve.

    Same rule as the randomizer (max over the cover, min over the fallbacks:
    :func:`~dpacct_shuffle.randomizers.cover_rule.cover_fallback_bound`), with every VariationRatio that
    :func:`~dpacct_shuffle.core.batched.supports_batched_delta` accepts evaluated by the curve of
    :func:`~dpacct_shuffle.core.batched.batched_delta` — built once per number of users for all ε,
    at most about 0.3 % above the core's ε (docs/theory.md, "Batched evaluation from the dominating
    pair"); ``lowering`` is the curve's η (:func:`~dpacct_shuffle.core.batched.batched_delta`).
    ``ShufflePLDAccountant`` builds every round's PLD from it (:func:`round_randomizer`; with
    ``users_grid_ratio`` at ``DEFAULT_LOWERING``): a PLD needs a whole profile.
    """

    randomizer: Union[VariationRatio, Randomizer]
    lowering: float = DEFAULT_LOWERING

    @property
    def epsilon0(self) -> float:
        """The randomizer's ε0 (δ = 0 from there on)."""
        return self.randomizer.epsilon0

    def delta(self, epsilon: float, n: int) -> float:
        """Certified upper bound on the shuffled δ(ε) with n users (see the class docstring)."""
        if isinstance(self.randomizer, VariationRatio):
            return batched_delta(self.randomizer, n, self.lowering).delta(epsilon)
        return float(cover_fallback_bound(
            self.randomizer.cover, self.randomizer.fallbacks,
            lambda bound: np.array([_batched_entry_delta(bound, epsilon, n, self.lowering)]))[0])

    def deltas(self, epsilons: NDArray[np.float64], n: int) -> NDArray[np.float64]:
        """:meth:`delta` at every ε ≥ 0 of ``epsilons`` (each curve read once for all of them)."""
        eps = np.asarray(epsilons, dtype=np.float64)
        if isinstance(self.randomizer, VariationRatio):
            return batched_delta(self.randomizer, n, self.lowering).deltas(eps)
        return cover_fallback_bound(
            self.randomizer.cover, self.randomizer.fallbacks,
            lambda bound: batched_entry_deltas(bound, eps, n, self.lowering))


def batched_randomizer(randomizer: RandomizerDescription,
                       lowering: float = DEFAULT_LOWERING) -> RandomizerDescription:
    """``BatchedRandomizer(randomizer, lowering)`` when the batched curve applies to a
    VariationRatio it is evaluated with (a supported VariationRatio, or a catalog Randomizer with
    one in its cover), else ``randomizer`` unchanged."""
    if isinstance(randomizer, VariationRatio):
        return (BatchedRandomizer(randomizer, lowering) if supports_batched_delta(randomizer)
                else randomizer)
    if isinstance(randomizer, Randomizer) and any(
            supports_batched_delta(vr) for bound in randomizer.cover
            for vr in (getattr(bound, "candidates", None) or ())):
        return BatchedRandomizer(randomizer, lowering)
    return randomizer


def round_randomizer(randomizer: RandomizerDescription) -> RandomizerDescription:
    """The randomizer a shuffle round's PLD is built from by default:
    ``batched_randomizer(randomizer, ROUND_LOWERING)`` — the batched pair curve for every
    VariationRatio it supports, the randomizer's rule kept (max over its cover, min over its
    fallbacks, each fallback evaluated by its own bound) — else ``randomizer`` unchanged.

    At η = ``ROUND_LOWERING`` one round's ε through the PLD accountant is within 0.2 % of the
    core's (tests/test_round_plds.py); the curve is built once per number of users for every ε,
    instead of one evaluation of the core per profile point. A
    :class:`~dpacct_shuffle.randomizers.PersonalizedShuffle` round becomes
    :func:`curve_shuffle_bound` at the same η; a Randomizer each of whose entries has its own
    every-ε curve (:meth:`~dpacct_shuffle.randomizers.base.PairBound.curve_deltas`, e.g. the
    Gaussian blanket bound) a :class:`BatchedRandomizer` reading those curves.
    """
    if isinstance(randomizer, PersonalizedShuffle):
        return curve_shuffle_bound(randomizer, ROUND_LOWERING)
    if isinstance(randomizer, Randomizer) and all(
            type(bound).curve_deltas is not PairBound.curve_deltas
            for bound in (*randomizer.cover, *randomizer.fallbacks)):
        return BatchedRandomizer(randomizer, ROUND_LOWERING)  # every entry has its own curve
    return batched_randomizer(randomizer, ROUND_LOWERING)


class SupportsCurveDeltas(Protocol):
    """A round with a certified ``delta(ε, n)``, its ``epsilon0`` and, where it has them,
    every-ε curves (``curve_deltas``: None where they do not apply)."""

    @property
    def epsilon0(self) -> float: ...

    def delta(self, epsilon: float, n: int) -> float: ...

    def curve_deltas(self, epsilons: NDArray[np.float64], n: int,
                     lowering: float) -> NDArray[np.float64] | None: ...


def curve_shuffle_bound(randomizer: SupportsCurveDeltas, lowering: float) -> ShuffleBound:
    """A :class:`ShuffleBound` reading ``randomizer.curve_deltas(ε, n, lowering)`` at every ε at
    once (each curve an upper bound at every ε ≥ 0), and ``randomizer.delta`` point by point
    where it has no curve (personalized rounds: docs/theory.md, "Users with different
    randomizers", its every-ε form)."""

    def deltas_upper(epsilons: NDArray[np.float64], n: int) -> NDArray[np.float64]:
        eps = np.asarray(epsilons, dtype=np.float64)
        curved = randomizer.curve_deltas(eps, n, lowering)
        if curved is not None:
            return curved
        return np.array([randomizer.delta(float(e), n) for e in eps], dtype=np.float64)

    def delta_upper(epsilon: float, n: int) -> float:
        return float(deltas_upper(np.array([epsilon]), n)[0])

    return ShuffleBound(delta_upper, randomizer.epsilon0, randomizer, deltas_upper)


def as_shuffle_bound(randomizer: RandomizerDescription, name: str = "randomizer") -> ShuffleBound:
    """Adapt a randomizer description to a :class:`ShuffleBound`.

    Accepted, in this order:

    * a :class:`ShuffleBound` (returned as is);
    * a :class:`BatchedRandomizer` (its batched ``delta(ε, n)``);
    * a :class:`~dpacct_shuffle.randomizers.SupportsShuffleBound` — a catalog or ``from_matrix``
      ``Randomizer`` (min(max over its cover of victim-pair classes, min over its fallbacks),
      :meth:`~dpacct_shuffle.randomizers.Randomizer.delta`) or a
      :class:`~dpacct_shuffle.VariationRatio`: its ``delta(ε, n, rtol=1e-2)`` (a certified upper
      end; the bracket width only sets the cost) and its ``epsilon0``;
    * an object with a ``variation_ratio`` attribute holding one VariationRatio or a sequence;
    * a non-empty sequence of the above (pointwise max: each entry covers some victim pairs);
    * any object with ``delta(epsilon, n)`` and ``epsilon0`` (a "delta(ε, n)-style profile",
      called without ``rtol``).

    Raises TypeError for anything else.
    """
    if isinstance(randomizer, ShuffleBound):
        return randomizer
    if isinstance(randomizer, BatchedRandomizer):
        return ShuffleBound(randomizer.delta, randomizer.epsilon0, randomizer, randomizer.deltas)
    if isinstance(randomizer, SupportsShuffleBound):
        return ShuffleBound(functools.partial(randomizer.delta, rtol=CORE_RTOL),
                            randomizer.epsilon0, randomizer)
    if hasattr(randomizer, "variation_ratio"):
        inner = as_shuffle_bound(randomizer.variation_ratio, f"{name}.variation_ratio")
        return ShuffleBound(inner.delta_upper, inner.epsilon0, randomizer, inner.deltas_upper)
    if isinstance(randomizer, Sequence) and not isinstance(randomizer, str):
        if len(randomizer) == 0:
            raise ValueError(f"{name} must not be an empty sequence")
        bounds = tuple(as_shuffle_bound(item, f"{name}[{i}]") for i, item in enumerate(randomizer))
        if len(bounds) == 1:
            return bounds[0]
        return ShuffleBound(_max_delta(bounds), max(b.epsilon0 for b in bounds),
                            tuple(b.source for b in bounds))
    delta = getattr(randomizer, "delta", None)
    epsilon0 = getattr(randomizer, "epsilon0", None)
    if callable(delta) and epsilon0 is not None:
        eps0 = check_range(f"{name}.epsilon0", epsilon0, 0.0, math.inf)
        return ShuffleBound(delta, eps0, randomizer)
    raise TypeError(
        f"{name} must be a VariationRatio, a catalog Randomizer, an object with .variation_ratio, "
        f"a sequence of those, or an object with delta(epsilon, n) and epsilon0; "
        f"got {type(randomizer).__name__}"
    )


def variation_ratios_of(randomizer: RandomizerDescription, name: str = "randomizer") -> tuple[VariationRatio, ...]:
    """VariationRatio parameters valid for *every* victim pair of a randomizer description.

    For a catalog ``Randomizer`` this is its summary ``variation_ratio`` (its cover entries are
    each valid only for a class of pairs). Raises TypeError when there is none (a bare
    delta(ε, n) profile, or a Randomizer whose ``variation_ratio`` is None).
    """
    if isinstance(randomizer, VariationRatio):
        return (randomizer,)
    if hasattr(randomizer, "variation_ratio"):
        return variation_ratios_of(randomizer.variation_ratio, f"{name}.variation_ratio")
    if isinstance(randomizer, Sequence) and not isinstance(randomizer, str) and len(randomizer) > 0:
        return tuple(vr for i, item in enumerate(randomizer)
                     for vr in variation_ratios_of(item, f"{name}[{i}]"))
    raise TypeError(f"{name} must carry VariationRatio parameters (a VariationRatio or a Randomizer "
                    f"with .variation_ratio), got {type(randomizer).__name__}")


def honest_users(num_users: int, honest_fraction: float) -> int:
    """⌊γ·n⌋ honest users (robust shuffling, docs/theory.md, "Other bounds"): at least the victim
    itself.

    The product is computed exactly from the binary value of γ, never rounded up by float error
    (so γ = 0.3, whose binary value is slightly below 3/10, gives ⌊0.3·10⌋ = 2).

    Args:
      num_users: n ≥ 1.
      honest_fraction: γ ∈ (0, 1].
    """
    n = check_num_users(num_users, "num_users")
    gamma = check_range("honest_fraction", honest_fraction, 0.0, 1.0, low_open=True)
    return n if gamma == 1.0 else max(1, math.floor(Fraction(gamma) * n))


def users_grid_floor(num_users: int, ratio: float) -> int:
    """The largest ⌊ratio^j⌋ (j ≥ 0 an integer) that is ≤ ``num_users``: a geometric grid.

    A round with n users may be accounted with any n' ≤ n: the true δ(ε) of a shuffle round is
    non-increasing in the number of (honest) users — the output for n users is a
    post-processing of the output for n' users, the n − n' extra reports being independent of
    the victim and shuffled in — and every bound here holds for the count it is evaluated at.
    With client sampling the same holds for the population (each extra member joins the sample
    independently). Rounding down to this grid lets rounds with different n share one PLD; the
    grid value is ≥ ⌊n/ratio⌋, and in the Gaussian regime (ε ∝ 1/√n) a round's ε grows by at
    most √ratio − 1 (0.5 % at ratio 1.01).

    Args:
      num_users: n ≥ 1.
      ratio: grid ratio in (1, 2].
    """
    n = check_num_users(num_users, "num_users")
    r = check_range("users_grid_ratio", ratio, 1.0, 2.0, low_open=True)
    log_r = math.log(r)
    j = max(0, math.floor(math.log(n) / log_r))
    while math.floor(r ** (j + 1)) <= n:
        j += 1
    while j > 0 and math.floor(r ** j) > n:
        j -= 1
    return max(1, min(n, math.floor(r ** j)))
