"""Privacy-loss profiles: from a shuffle bound to objects dp-accounting composes (docs/theory.md,
"Privacy-loss profiles").

A *privacy profile* here is a function ``δ(ε)``, ε ≥ 0, that upper-bounds the hockey-stick
divergence ``D_{e^ε}`` of a mechanism **in both directions** for every pair of neighbouring
datasets (replace-one: one user's input changed, everyone else fixed). :class:`PrivacyProfile`
holds such a function together with ``epsilon_cap``, an ε above which δ(ε) = 0 (ε0 = ln p for a
shuffled ε0-LDP report; ``inf`` if there is none).

Two conversions make a profile usable by dp-accounting:

* :func:`pld_from_profile` — a *pessimistic* ``dp_accounting.pld.PrivacyLossDistribution`` built
  with dp-accounting's own Connect-the-Dots discretisation
  (``pld_pmf.create_pmf_pessimistic_connect_dots``, Doroshenko et al. 2022, Algorithm 1).
* :func:`rdp_from_profile` — an upper bound on the Rényi divergence of every neighbouring pair, in
  both directions, at given orders.

Why a profile determines a dominating pair
------------------------------------------
Write x = e^ε and H(x) = D_x(P‖Q) for any pair (P, Q) of the mechanism. H is convex and
non-increasing in x ∈ [0, ∞), with H(0) = 1 (it is a supremum of the affine functions
P(S) − x·Q(S)). For x < 1 the identity ``D_x(P‖Q) = 1 − x + x·D_{1/x}(Q‖P)`` turns the bound on the
reverse direction into ``H(e^{−ε}) ≤ 1 − e^{−ε}(1 − δ(ε))`` ("mirrored" points). So on a grid of
losses ±ε_k the values y_k = δ(ε_k) (resp. the mirrored values) bound H from above at every grid
point, for every pair and both directions. The *lower convex hull* of the points
{(0, 1)} ∪ {(x_k, y_k)} is a convex function that is still ≥ H everywhere (H is convex and below
every point, and the hull is the largest convex minorant of the points). Connect-the-Dots
realises exactly that piecewise-linear-in-x curve as the hockey-stick curve of an explicit
discrete pair supported on the grid losses; because it dominates H on all of [0, ∞) — i.e. for all
real ε — it is a dominating pair in the sense of Zhu, Dong & Wang (AISTATS 2022), and dominating
pairs compose adaptively. That is what makes ``PLD.compose`` sound for these profiles.

Discretisation (stated for the tightness claims)
------------------------------------------------
* Grid losses are integer multiples of ``value_discretization_interval`` d, so δ is evaluated
  *at* the grid points and no loss needs rounding. By default d is chosen from the scale of the
  profile's privacy loss (:func:`loss_scale`, :func:`discretization_for_scale`): the largest
  1e-4·2^{−j} (j ≥ 0, 1e-4 being dp-accounting's default) with at least ``LOSS_RESOLUTION`` = 500
  grid steps per scale unit. A shuffle round with ε ≈ 0.008 thus gets d ≈ 3e-6 instead of a fixed
  1e-4, one step of which would be 1 % of its ε. An explicit d overrides the choice.
* The last positive grid point is ``ceil(ε_cap/d)·d`` with δ = 0 (δ vanishes for every ε ≥ ε_cap
  and is non-increasing), so the PLD has no mass at +∞ and its largest loss is ≤ ε_cap + d
  (an ε0-LDP round is ε0-DP after shuffling: the output is a post-processing of the reports);
  without a cap the last value goes to +∞.
* Points are placed adaptively: starting from ``_INITIAL_POINTS`` equally spaced points on
  [0, ε_cap], an interval [ε_a, ε_b] is bisected (at a multiple of d) while it is wider than
  ``max_step`` (0.25) or, for δ(ε_a) > ``min_delta`` (1e-16), while the estimated error in ε of
  its chord exceeds d + ``epsilon_tolerance``·ε_b (1e-3·ε_b). The estimate compares the chord
  with the log-linear interpolation of the two end values (:func:`_interval_epsilon_gaps`).
  Points beyond the first ε with δ ≤ ``min_delta`` are not evaluated: the chord from there to
  the cap point (δ = 0) is already a valid upper bound. Point placement and d only steer
  tightness — soundness never depends on them (tests/test_profiles.py and tests/test_cohorts.py
  assert one round's ε within 0.2 % of the core's).
* Values are made non-increasing by a running minimum (valid: the true δ is non-increasing, so
  min over ε_j ≤ ε_k of upper bounds at ε_j is an upper bound at ε_k).

Rényi divergence from a profile
-------------------------------
For L = dP/dQ and a > 1, ``L^a = a(a−1)∫_0^∞ g^{a−2}(L − g)⁺ dg`` (Taylor with integral remainder
around 0), so ``E_Q[L^a] = a(a−1)∫_0^∞ g^{a−2} H_g dg`` with ``H_g = E_Q[(L − g)⁺] = D_g(P‖Q)``.
Splitting at g = 1 and using ``H_g = 1 − g + g·D_{1/g}(Q‖P)`` for g < 1
(``a(a−1)∫_0^1 g^{a−2}(1 − g) dg = 1``) and the substitution u = 1/g:

    E_Q[L^a] = 1 + a(a−1)·[ ∫_1^∞ g^{a−2} D_g(P‖Q) dg + ∫_1^∞ u^{−a−1} D_u(Q‖P) du ].

Both divergences are ≤ δ(ln g). δ is evaluated on the PLD grid; between grid points the convex,
non-increasing H is below the chord of the grid values, the chord is sampled on
``_RDP_SUBDIVISIONS`` sub-points per interval, and each sub-interval uses the value at its left
end (upper Riemann sum, exact weight integrals). The result bounds D_a in both directions; it is
finally capped by the Rényi divergence of binary randomized response with ε_cap, which dominates
every ε_cap-DP pair (Kairouz, Oh & Viswanath, ICML 2015; Feldman, McMillan & Talwar, FOCS 2021,
Lemma 3.4: the pair is a post-processing of it).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Optional, Union

import attr
import numpy as np
from dp_accounting.pld import common as pld_common
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from numpy.typing import NDArray
from scipy import special, stats

from dpacct_shuffle.core.batched import DEFAULT_LOWERING, batched_delta, supports_batched_delta
from dpacct_shuffle.core.bound import VariationRatio
from dpacct_shuffle.core.validation import check_num_users, check_range
from dpacct_shuffle.lemmas import chained_ldp
from dpacct_shuffle.progress import ProgressOption, ProgressReporter
from dpacct_shuffle.randomizers.base import PairBound, Randomizer, SupportsShuffleBound
from dpacct_shuffle.randomizers.composite import (
    branch_levels,
    parallel_levels_bound,
    parallel_randomizer,
)

DEFAULT_VALUE_DISCRETIZATION = 1e-4
# grid steps per unit of loss_scale when the discretisation is chosen automatically
LOSS_RESOLUTION = 500
# the automatic interval is DEFAULT_VALUE_DISCRETIZATION·2^-j for 0 <= j <= this
_MAX_HALVINGS = 30
DEFAULT_EPSILON_TOLERANCE = 1e-3
DEFAULT_MAX_STEP = 0.25
DEFAULT_MIN_DELTA = 1e-16
DEFAULT_SAMPLING_TAIL = 1e-14
_INITIAL_POINTS = 32
# relative margin on the values fed to Connect-the-Dots (float cancellation in the masses)
_CONNECT_DOTS_MARGIN = 1e-9
_RDP_SUBDIVISIONS = 32
_UNCAPPED_MAX_EPSILON = 64.0
# random-mode parallel rounds: the bounds keeping each branch's structure are evaluated up to this
# many users (parallel_composite_bound)
PARALLEL_STRUCTURE_MAX_USERS = 1000
# ... and up to this many users in the profile a PLD or RDP is built from (about a hundred points,
# and the multi-level bound costs 0.02 s per point at 50 users, 0.12 s at 100, 2.5 s at 1000)
PARALLEL_STRUCTURE_PROFILE_MAX_USERS = 64
#: Relative bracket width at which the profiles (and the sampled-round profiles of
#: :mod:`dpacct_shuffle.sampling`) evaluate the core's upper bounds point by point: the upper end
#: is certified whatever the width; a looser width only makes each evaluation cheaper.
CORE_RTOL = 1e-2
# η of the batched curve for a single round's PLD (round_randomizer): a quarter of the default,
# so that one round's ε through the PLD stays within 0.2 % of the core's
ROUND_LOWERING = DEFAULT_LOWERING / 4.0
# η of the batched curve for the anchors of a changing cohort (users_grid_ratio): rounds composed by
# the hundred, whose error is dominated by the anchors' slack in n (cohort benchmark: +0.035 % in
# ε against η = 5e-4, with half the curve's cost)
COHORT_LOWERING = 1e-3


# ---------------------------------------------------------------------------------------------
# shuffle bounds: what a ShuffleEvent's randomizer must provide
# ---------------------------------------------------------------------------------------------


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
RandomizerDescription = Union[SupportsShuffleBound, ShuffleBound, Sequence[SupportsShuffleBound]]


def _max_delta(bounds: Sequence[ShuffleBound]) -> Callable[[float, int], float]:
    def delta_upper(epsilon: float, n: int) -> float:
        return max(bound.delta_upper(epsilon, n) for bound in bounds)

    return delta_upper


def _batched_entry_delta(bound: PairBound, epsilon: float, n: int, lowering: float) -> float:
    """One cover/fallback entry of a Randomizer: the minimum over its candidate VariationRatios with
    each supported one evaluated by the batched curve, or the entry's own every-ε curves
    (:meth:`~dpacct_shuffle.randomizers.base.PairBound.curve_deltas`), or its own bound at
    ``CORE_RTOL``."""
    candidates = getattr(bound, "candidates", None)
    if not candidates or not any(supports_batched_delta(vr) for vr in candidates):
        curved = bound.curve_deltas(np.array([epsilon]), n, lowering)
        if curved is not None:
            return float(curved[0])
        return float(bound.deltas_at_rtol(np.array([epsilon]), n, CORE_RTOL)[0])
    return min(batched_delta(vr, n, lowering).delta(epsilon) if supports_batched_delta(vr)
               else vr.delta(epsilon, n, rtol=CORE_RTOL) for vr in candidates)


def batched_entry_deltas(bound: PairBound, epsilons: NDArray[np.float64], n: int,
                         lowering: float) -> NDArray[np.float64]:
    """One cover/fallback entry of a Randomizer at every ε of ``epsilons``: the minimum over its
    candidate VariationRatios, each supported one read from its batched curve (built once for all
    ε), or the entry's own every-ε curves
    (:meth:`~dpacct_shuffle.randomizers.base.PairBound.curve_deltas`: the multi-level bound's,
    docs/theory.md, "Batched evaluation of multi-level bounds"), or its own bound at
    ``CORE_RTOL`` point by point."""
    candidates = getattr(bound, "candidates", None)
    if not candidates or not any(supports_batched_delta(vr) for vr in candidates):
        curved = bound.curve_deltas(epsilons, n, lowering)
        if curved is not None:
            return curved
        return bound.deltas_at_rtol(epsilons, n, CORE_RTOL)
    return np.min([batched_delta(vr, n, lowering).deltas(epsilons) if supports_batched_delta(vr)
                   else np.array([vr.delta(float(eps), n, rtol=CORE_RTOL) for eps in epsilons])
                   for vr in candidates], axis=0)


@attr.s(frozen=True, slots=True, auto_attribs=True)
class BatchedRandomizer:
    """A VariationRatio or catalog Randomizer whose shuffled bound uses the batched pair curve.

    Same rule as the randomizer (:meth:`~dpacct_shuffle.randomizers.Randomizer.combine`: max over
    the cover, min over the fallbacks), with every VariationRatio that
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
        return self.randomizer.combine(
            lambda bound: _batched_entry_delta(bound, epsilon, n, self.lowering))

    def deltas(self, epsilons: NDArray[np.float64], n: int) -> NDArray[np.float64]:
        """:meth:`delta` at every ε ≥ 0 of ``epsilons`` (each curve read once for all of them)."""
        eps = np.asarray(epsilons, dtype=np.float64)
        if isinstance(self.randomizer, VariationRatio):
            return batched_delta(self.randomizer, n, self.lowering).deltas(eps)
        # the rule of Randomizer.combine, elementwise: max over the cover, min over the fallbacks
        value = np.max([batched_entry_deltas(bound, eps, n, self.lowering)
                        for bound in self.randomizer.cover], axis=0)
        for bound in self.randomizer.fallbacks:
            value = np.minimum(value, batched_entry_deltas(bound, eps, n, self.lowering))
        return value


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
    instead of one evaluation of the core per profile point.
    """
    return batched_randomizer(randomizer, ROUND_LOWERING)


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


# ---------------------------------------------------------------------------------------------
# privacy profiles
# ---------------------------------------------------------------------------------------------


@attr.s(frozen=True, slots=True, auto_attribs=True, eq=False)
class PrivacyProfile:
    """δ(ε) upper bound for ε ≥ 0 (both directions), with δ(ε) = 0 for ε ≥ ``epsilon_cap``.

    Attributes:
      delta_upper: ε -> δ, an upper bound on max(D_{e^ε}(P‖Q), D_{e^ε}(Q‖P)) over all
        neighbouring pairs. Only its values matter, not its shape (see the module docstring).
      epsilon_cap: ε at and above which the profile is 0 (``math.inf``: no cap).
      description: human-readable provenance.
      deltas_upper: optional array form of ``delta_upper`` (one call for many ε).
    """

    delta_upper: Callable[[float], float]
    epsilon_cap: float
    description: str = ""
    deltas_upper: Optional[Callable[[NDArray[np.float64]], NDArray[np.float64]]] = None

    def delta(self, epsilon: float) -> float:
        """The profile at ε ≥ 0 (0 at and above the cap)."""
        if epsilon >= self.epsilon_cap:
            return 0.0
        return self.delta_upper(epsilon)

    def deltas(self, epsilons: NDArray[np.float64]) -> NDArray[np.float64]:
        """:meth:`delta` at every ε ≥ 0 of ``epsilons`` (one call of ``deltas_upper`` if given)."""
        eps = np.asarray(epsilons, dtype=np.float64)
        if self.deltas_upper is None:
            return np.array([self.delta(float(value)) for value in eps], dtype=np.float64)
        return np.where(eps >= self.epsilon_cap, 0.0,
                        np.asarray(self.deltas_upper(eps), dtype=np.float64))


def shuffle_profile(randomizer: RandomizerDescription, num_users: int, honest_fraction: float = 1.0) -> PrivacyProfile:
    """Profile of one shuffle round: the victim sends one report, ⌊γ·n⌋ users are honest.

    ``δ(ε) = bound.delta(ε, ⌊γ·n⌋)``; δ = 0 for ε ≥ ε0 (post-processing of the victim's ε0-LDP
    report).
    """
    bound = as_shuffle_bound(randomizer)
    users = honest_users(num_users, honest_fraction)

    def delta_upper(epsilon: float) -> float:
        return bound.delta_upper(epsilon, users)

    array_form = bound.deltas_upper
    deltas_upper = (None if array_form is None
                    else lambda epsilons: array_form(epsilons, users))
    return PrivacyProfile(delta_upper, bound.epsilon0, f"shuffle({bound.source!r}, n={users})",
                          deltas_upper)


def _pointwise_profile(profiles: Sequence[PrivacyProfile], name: str,
                       combine: Callable[..., float],
                       combine_arrays: Callable[..., NDArray[np.float64]]) -> PrivacyProfile:
    """The profile ``combine`` (max or min) of ``profiles`` at every ε, and of their ε caps (with
    an array form when every profile has one)."""
    if len(profiles) == 0:
        raise ValueError("profiles must not be empty")
    items = tuple(profiles)

    def delta_upper(epsilon: float) -> float:
        return combine(profile.delta(epsilon) for profile in items)

    def deltas_upper(epsilons: NDArray[np.float64]) -> NDArray[np.float64]:
        return combine_arrays([profile.deltas(epsilons) for profile in items], axis=0)

    arrays = all(profile.deltas_upper is not None for profile in items)
    return PrivacyProfile(delta_upper, combine(p.epsilon_cap for p in items),
                          f"{name}(" + ", ".join(p.description for p in items) + ")",
                          deltas_upper if arrays else None)


def max_profile(profiles: Sequence[PrivacyProfile]) -> PrivacyProfile:
    """Pointwise maximum: valid whenever the neighbouring pair is covered by one of the profiles
    (with an array form when every profile has one)."""
    return _pointwise_profile(profiles, "max", max, np.max)


def min_profile(profiles: Sequence[PrivacyProfile]) -> PrivacyProfile:
    """Pointwise minimum: valid when every profile bounds every neighbouring pair (with an array
    form when every profile has one)."""
    return _pointwise_profile(profiles, "min", min, np.min)


def randomized_response_delta(epsilon0: float, epsilon: float) -> float:
    """Profile of binary randomized response with parameter ε0: (e^ε0 − e^ε)⁺/(e^ε0 + 1).

    Every ε0-DP pair is a post-processing of it (Feldman, McMillan & Talwar, FOCS 2021,
    arXiv:2012.12803, Lemma 3.4), so this bounds any ε0-DP pair.
    """
    if epsilon >= epsilon0:
        return 0.0
    if math.isinf(epsilon0):
        return 1.0
    return -math.expm1(epsilon - epsilon0) / (1.0 + math.exp(-epsilon0))


def sampled_users_lower_bound(population: int, sampling_probability: float,
                              tail: float = DEFAULT_SAMPLING_TAIL) -> tuple[int, float]:
    """(m, τ): with the victim sampled, P[#sampled users < m] ≤ τ.

    The other ``population − 1`` users are sampled independently with probability γ, so the
    number of sampled users is 1 + Bin(population − 1, γ). m is the largest value whose lower
    tail (scipy's binomial cdf, inflated by a relative 1e-9 for float error) is ≤ ``tail``.
    """
    others = population - 1
    if others == 0 or sampling_probability == 0.0:
        return 1, 0.0
    distribution = stats.binom(others, sampling_probability)
    k = int(distribution.ppf(tail))  # smallest k with cdf(k) >= tail
    # P[X < k] = cdf(k - 1) < tail by definition of ppf; re-check with the safety factor
    while k > 0 and distribution.cdf(k - 1) * (1.0 + 1e-9) > tail:
        k -= 1
    mass = 0.0 if k == 0 else float(distribution.cdf(k - 1)) * (1.0 + 1e-9)
    return 1 + k, min(mass, 1.0)


def poisson_sampled_shuffle_profile(randomizer: RandomizerDescription, num_users: int, sampling_probability: float,
                                    honest_fraction: float = 1.0,
                                    tail: float = DEFAULT_SAMPLING_TAIL) -> PrivacyProfile:
    """Profile of a shuffle round on a Poisson sample (client sampling), replace-one neighbours.

    Every one of the ``num_users`` users (the population; ⌊γ_h·n⌋ of them honest) takes part
    independently with probability γ = ``sampling_probability``, then the participants' reports
    are shuffled. Conditioned on the sample S of the other users, the two output laws are
    ``(1−γ)·A + γ·B`` and ``(1−γ)·A + γ·B'`` (A: victim not sampled, the same under both inputs;
    B, B': shuffle of S ∪ {victim} under x⁰, x¹). Joint convexity of the hockey-stick divergence
    and D_{e^ε}(A‖A) = 0 for ε ≥ 0 give, at the *same* ε,

        δ'(ε) ≤ γ · E_S[δ_{|S|+1}(ε)] ≤ γ · (δ_m(ε) + τ·δ_RR,ε0(ε)),

    where m and τ come from :func:`sampled_users_lower_bound` (the true δ is non-increasing in the
    number of users: an extra user with known input is a post-processing) and δ_RR,ε0 bounds a
    round with few participants by the victim's local guarantee. This is the always-valid
    amplification for replace-one; the stronger ε' = ln(1 + γ(e^ε − 1)) of Steinke,
    arXiv:2210.00597, Thm 28 (Balle, Barthe & Gaboardi, NeurIPS 2018)
    needs add/remove-type comparisons that a replace-one shuffle bound does not provide.
    The accountants use :func:`dpacct_shuffle.sampling.poisson_sampled_profile`, the minimum of this
    bound and the void view, which amplifies ε as well (docs/theory.md, "Client sampling").
    """
    gamma = check_range("sampling_probability", sampling_probability, 0.0, 1.0)
    bound = as_shuffle_bound(randomizer)
    honest = honest_users(num_users, honest_fraction)
    users, tail_mass = sampled_users_lower_bound(honest, gamma, tail)

    def delta_upper(epsilon: float) -> float:
        if gamma == 0.0:
            return 0.0
        value = bound.delta_upper(epsilon, users)
        value += tail_mass * randomized_response_delta(bound.epsilon0, epsilon)
        return min(1.0, gamma * value)

    array_form = bound.deltas_upper

    def deltas_upper(epsilons: NDArray[np.float64]) -> NDArray[np.float64]:
        if gamma == 0.0:
            return np.zeros(len(epsilons))
        local = np.array([randomized_response_delta(bound.epsilon0, float(e)) for e in epsilons])
        return np.minimum(1.0, gamma * (array_form(epsilons, users) + tail_mass * local))

    return PrivacyProfile(delta_upper, bound.epsilon0,
                          f"poisson({gamma!r}, shuffle({bound.source!r}, n>={users}))",
                          None if array_form is None else deltas_upper)


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
    with n; above it the composite VariationRatio alone is reported: skipping a candidate of a
    minimum of valid bounds stays valid).

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

    def used(n: int) -> tuple[ShuffleBound, ...]:
        return items if n <= limit else items[:1]

    def delta_upper(epsilon: float, n: int) -> float:
        return min(bound.delta_upper(epsilon, n) for bound in used(n))

    def deltas_upper(epsilons: NDArray[np.float64], n: int) -> NDArray[np.float64]:
        return np.min([bound.deltas_upper(epsilons, n) if bound.deltas_upper is not None
                       else np.array([bound.delta_upper(float(eps), n) for eps in epsilons])
                       for bound in used(n)], axis=0)

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


def leaky_randomized_response_delta(epsilon0: float, delta0: float, epsilon: float) -> float:
    """Profile of any (ε0, δ0)-DP pair (leaky randomized response, Kairouz, Oh &
    Viswanath, ICML 2015).

    δ(ε) = δ0 + (1 − δ0)·(e^ε0 − e^ε)⁺/(e^ε0 + 1).
    """
    return delta0 + (1.0 - delta0) * randomized_response_delta(epsilon0, epsilon)


def chained_ldp_profile(epsilons: Sequence[float], deltas: Sequence[float]) -> PrivacyProfile:
    """Profile of the chain R_k ∘ … ∘ R_1 of (ε_i, δ_i)-LDP randomizers (one final report).

    * A randomizer applied to a *random* input keeps its guarantee: for input laws ν, ν',
      R(ν)(S) = Σ_y ν(y) R(y)(S) ≤ Σ_y ν(y)(e^ε R(y')(S) + δ) for every y', hence
      ≤ e^ε R(ν')(S) + δ. So the chain is (ε, δ)-LDP for any *contiguous block* of stages that is
      (ε, δ)-LDP: the stages before the block produce its (random) input, those after it
      post-process its output.
    * A block of pure stages is ε-LDP with ε from Erlingsson et al., arXiv:2001.03618, Cor A.2
      applied repeatedly (:func:`dpacct_shuffle.lemmas.chained_ldp`); a single stage with
      δ_i > 0 is its leaky RR.

    The profile is the pointwise minimum over all maximal pure blocks and all approximate stages
    (each is a valid profile, so is their minimum).
    """
    if len(epsilons) != len(deltas) or len(epsilons) == 0:
        raise ValueError("epsilons and deltas must be non-empty and of equal length")
    candidates: list[tuple[float, float]] = []
    block: float | None = None
    for eps_i, delta_i in zip(epsilons, deltas):
        if delta_i == 0.0:
            block = eps_i if block is None else chained_ldp(block, eps_i)
        else:
            if block is not None:
                candidates.append((block, 0.0))
                block = None
            candidates.append((eps_i, delta_i))
    if block is not None:
        candidates.append((block, 0.0))
    pure = [eps for eps, delta in candidates if delta == 0.0]
    cap = min(pure) if pure else math.inf

    def delta_upper(epsilon: float) -> float:
        return min(leaky_randomized_response_delta(e0, d0, epsilon) for e0, d0 in candidates)

    return PrivacyProfile(delta_upper, cap, f"chained_ldp({tuple(epsilons)!r}, {tuple(deltas)!r})")


# ---------------------------------------------------------------------------------------------
# discretisation
# ---------------------------------------------------------------------------------------------


@attr.s(frozen=True, slots=True, auto_attribs=True)
class ProfileGrid:
    """Profile values on a grid of losses ``k·d`` (k ≥ 0 integers, increasing).

    ``deltas`` are non-increasing upper bounds; if ``capped``, the last value is 0.
    """

    discretization: float
    rounded_epsilons: NDArray[np.int64]
    deltas: NDArray[np.float64]
    capped: bool


def _interval_epsilon_gaps(e_a: NDArray[np.float64], e_b: NDArray[np.float64],
                           y_a: NDArray[np.float64], y_b: NDArray[np.float64]) -> NDArray[np.float64]:
    """Estimated ε error of the Connect-the-Dots chord on grid intervals [e_a, e_b] with values
    y_a ≥ y_b (refinement only).

    Between two grid points a profile is close to log-linear in ε; the chord (linear in x = e^ε)
    lies above it. The estimate is the largest horizontal gap, in ε, between the chord and the
    log-linear interpolation at levels inside the interval (intervals ending at δ = 0 use the
    vertical chord to the cap, i.e. their width). Soundness never depends on it.
    """
    gaps = np.where((y_a > y_b) & (y_b <= 0.0), e_b - e_a, 0.0)
    inner = (y_a > y_b) & (y_b > 0.0)
    if np.any(inner):
        levels = np.linspace(0.0, 1.0, 17)[1:-1][None, :]
        e_a, e_b, y_a, y_b = (v[inner][:, None] for v in (e_a, e_b, y_a, y_b))
        e_true = e_a + levels * (e_b - e_a)
        y = y_a * (y_b / y_a) ** levels
        x_a, x_b = np.exp(e_a), np.exp(e_b)
        e_chord = np.log(x_a + (y_a - y) * (x_b - x_a) / (y_a - y_b))
        gaps[inner] = np.max(e_chord - e_true, axis=1)
    return gaps


def loss_scale(profile: PrivacyProfile) -> float:
    """Scale of a profile's privacy loss, √(2π)·δ(0) (steers the discretisation only).

    For a μ-GDP pair (privacy loss ~ N(μ²/2, μ²)) δ(0) = 2Φ(μ/2) − 1 ≈ μ/√(2π), so this is close
    to the standard deviation μ of the loss of the Gaussian-like shuffled pairs; for any pair
    δ(0) is the total variation of its two laws. One evaluation of the profile, at ε = 0 (the
    first grid point anyway). Returns 0 for a profile with δ(0) = 0.
    """
    return math.sqrt(2.0 * math.pi) * float(profile.delta(0.0))


def discretization_for_scale(scale: float) -> float:
    """The largest d = 1e-4·2^{−j} (0 ≤ j ≤ 30) with d ≤ ``scale``/``LOSS_RESOLUTION``.

    Powers of two keep the choice stable: it changes only when the scale moves by a factor of 2,
    so an accountant that re-chooses its interval as events arrive rarely rebuilds. A scale that is 0, infinite or
    NaN gives dp-accounting's default 1e-4.
    """
    if not scale > 0.0 or not math.isfinite(scale):
        return DEFAULT_VALUE_DISCRETIZATION
    ratio = DEFAULT_VALUE_DISCRETIZATION * LOSS_RESOLUTION / scale
    halvings = 0 if ratio <= 1.0 else min(_MAX_HALVINGS, math.ceil(math.log2(ratio)))
    return math.ldexp(DEFAULT_VALUE_DISCRETIZATION, -halvings)


def _discretization(profile: PrivacyProfile, value_discretization_interval: float | None) -> float:
    """``value_discretization_interval`` validated, or chosen from the profile's loss scale."""
    if value_discretization_interval is None:
        return discretization_for_scale(loss_scale(profile))
    return check_range("value_discretization_interval", value_discretization_interval, 0.0, 1.0,
                       low_open=True)


def profile_grid(profile: PrivacyProfile,
                 value_discretization_interval: float | None = None,
                 epsilon_tolerance: float = DEFAULT_EPSILON_TOLERANCE,
                 max_step: float = DEFAULT_MAX_STEP,
                 min_delta: float = DEFAULT_MIN_DELTA,
                 progress: ProgressOption = False) -> ProfileGrid:
    """Adaptive grid of the profile (see the module docstring, "Discretisation").

    ``value_discretization_interval`` None (default): chosen from the profile's loss scale
    (:func:`discretization_for_scale`). ``progress``: ``True`` shows a tqdm count of the profile
    evaluations on stderr (the number needed is not known in advance), a callback
    ``progress(done, done)`` is called after each (after each batch of them for a profile with
    an array form; :mod:`dpacct_shuffle.progress`).
    """
    with ProgressReporter(None, "privacy-loss profile", progress, unit="eval") as reporter:
        return _adaptive_grid(profile, value_discretization_interval, epsilon_tolerance,
                              max_step, min_delta, reporter.tick)


def _adaptive_grid(profile: PrivacyProfile, value_discretization_interval: float | None,
                   epsilon_tolerance: float, max_step: float, min_delta: float,
                   tick: Callable[[int], None]) -> ProfileGrid:
    """:func:`profile_grid`, calling ``tick(count)`` after ``count`` profile evaluations."""
    d = _discretization(profile, value_discretization_interval)
    tolerance = check_range("epsilon_tolerance", epsilon_tolerance, 0.0, 1.0, low_open=True)
    step = check_range("max_step", max_step, 0.0, math.inf, low_open=True)
    floor = check_range("min_delta", min_delta, 0.0, 1.0)
    values: dict[int, float] = {}

    def evaluate_many(ks: Sequence[int]) -> None:
        """Evaluate the profile at the new points k·d (one call when it has an array form)."""
        missing = sorted({int(k) for k in ks} - values.keys())
        if not missing:
            return
        if profile.deltas_upper is None:
            new = [float(profile.delta(k * d)) for k in missing]
        else:
            new = [float(v) for v in profile.deltas(np.array(missing, dtype=np.float64) * d)]
        for k, value in zip(missing, new):
            if not 0.0 <= value <= 1.0:  # also rejects NaN
                raise ValueError(f"profile returned delta={value!r} at epsilon={k * d!r}; "
                                 "a profile must return values in [0, 1]")
            values[k] = value
            tick(1)

    def evaluate(k: int) -> float:
        evaluate_many((k,))
        return values[k]

    capped = math.isfinite(profile.epsilon_cap)
    if capped:
        k_end = max(1, math.ceil(profile.epsilon_cap / d))
    else:
        # grow until δ is negligible, flat (everything beyond goes to +∞ anyway) or ε is huge
        k_end = max(1, math.ceil(1.0 / d))
        while (evaluate(k_end) > floor and k_end * d < _UNCAPPED_MAX_EPSILON
               and evaluate(2 * k_end) < values[k_end]):
            k_end *= 2
    # initial points in increasing ε, up to the first one with δ <= min_delta: beyond it the chord
    # to the cap point (δ = 0) is already a valid upper bound, so no evaluation is needed there
    # (deep tails are also the most expensive evaluations of the core)
    initial = [int(k) for k in np.unique(np.linspace(0, k_end, _INITIAL_POINTS + 1).round())
               if k < k_end]
    if profile.deltas_upper is not None:
        # an array form: all of them in one call, then the same points as the sequential order
        # keeps (nothing beyond the first one with δ <= min_delta)
        evaluate_many(initial)
        negligible = [k for k in sorted(values) if values[k] <= floor]
        for k in [k for k in values if negligible and k > negligible[0]]:
            del values[k]
    else:
        for k in initial:
            if evaluate(k) <= floor:
                break
    if capped:
        values[k_end] = 0.0  # δ(ε) = 0 for ε >= ε_cap, and k_end·d >= ε_cap
    else:
        evaluate(k_end)
    max_width = max(1, math.floor(step / d))
    keys = np.array(sorted(values), dtype=np.int64)
    refine_options = (d, tolerance, floor, max_width)
    if profile.deltas_upper is not None:
        levels = _refine_by_levels(profile, keys, np.array([values[int(k)] for k in keys]),
                                   refine_options, tick)
        if levels is not None:
            return ProfileGrid(d, levels[0], levels[1], capped)
    while True:
        keys = np.array(sorted(values), dtype=np.int64)
        ys = np.minimum.accumulate(np.array([values[int(k)] for k in keys]))
        refine = _refined(keys[:-1], keys[1:], ys[:-1], ys[1:], refine_options)
        if not np.any(refine):
            break
        evaluate_many((keys[:-1][refine] + keys[1:][refine]) // 2)
    keys = np.array(sorted(values), dtype=np.int64)
    deltas = np.minimum.accumulate(np.array([values[int(k)] for k in keys], dtype=np.float64))
    return ProfileGrid(d, keys, deltas, capped)


def _refined(k_a: NDArray[np.int64], k_b: NDArray[np.int64], y_a: NDArray[np.float64],
             y_b: NDArray[np.float64], options: tuple[float, float, float, int]) -> NDArray[np.bool_]:
    """Which grid intervals [k_a·d, k_b·d] (values y_a ≥ y_b) the adaptive grid bisects: wider
    than ``max_width``, or a chord ε error above d + tolerance·ε_b, while δ(ε_a) > ``min_delta``
    (module docstring, "Discretisation"; elementwise, so any subset of intervals gives the same
    answers)."""
    d, tolerance, floor, max_width = options
    gaps = _interval_epsilon_gaps(k_a * d, k_b * d, y_a, y_b)
    widths = k_b - k_a
    allowed = d + tolerance * k_b * d
    return (widths >= 2) & (y_a > floor) & ((widths > max_width) | (gaps > allowed))


# bisection levels decided per profile evaluation in _refine_by_levels
_SPECULATIVE_LEVELS = 5


def _refine_by_levels(profile: PrivacyProfile, keys: NDArray[np.int64],
                      values: NDArray[np.float64], options: tuple[float, float, float, int],
                      tick: Callable[[int], None]
                      ) -> Optional[tuple[NDArray[np.int64], NDArray[np.float64]]]:
    """The refinement of :func:`profile_grid` for a profile with an array form, several levels
    per evaluation; None if the refined values are not non-increasing (then the caller refines
    pass by pass).

    Pass by pass, every interval of the current points is tested with the running minimum of the
    values (:func:`_refined`) and the tested ones are bisected. When the values of the final
    points are non-increasing, so are those of every earlier set of points (a subset), the
    running minimum equals the values, and an interval's test depends on its own end points
    only: the final points are the closure of bisecting every interval its test selects.
    Here each interval to test gets the midpoints of ``_SPECULATIVE_LEVELS`` levels of bisection
    evaluated in one call (the array form is elementwise, so every value is the one a pass would
    get), all of their sub-intervals are tested in one call, and the tests are resolved from the
    top: a sub-interval counts when its parent was bisected.
    """
    d = options[0]
    known_keys, known_values = keys, values
    included_keys, included_values = [keys], [values]
    starts, ends = keys[:-1], keys[1:]
    while len(starts):
        # the speculative bisection tree of every interval to test: level j has 2^j intervals
        level_starts, level_ends = [starts[:, None]], [ends[:, None]]
        for _ in range(_SPECULATIVE_LEVELS):
            a, b = level_starts[-1], level_ends[-1]
            middle = (a + b) // 2
            level_starts.append(np.stack([a, middle], axis=2).reshape(len(starts), -1))
            level_ends.append(np.stack([middle, b], axis=2).reshape(len(starts), -1))
        candidates = np.unique(np.concatenate([level.ravel() for level in level_ends[1:]]))
        missing = candidates[~np.isin(candidates, known_keys)]
        if len(missing):
            new = np.asarray(profile.deltas(missing.astype(np.float64) * d), dtype=np.float64)
            if not np.all((new >= 0.0) & (new <= 1.0)):  # also rejects NaN
                bad = int(np.flatnonzero(~((new >= 0.0) & (new <= 1.0)))[0])
                raise ValueError(f"profile returned delta={float(new[bad])!r} at "
                                 f"epsilon={int(missing[bad]) * d!r}; a profile must return "
                                 "values in [0, 1]")
            tick(len(new))
            merged = np.concatenate([known_keys, missing])
            order = np.argsort(merged, kind="stable")
            known_keys, known_values = merged[order], np.concatenate([known_values, new])[order]
        tested_starts = np.concatenate([level.ravel() for level in level_starts[:-1]])
        tested_ends = np.concatenate([level.ravel() for level in level_ends[:-1]])
        refine = _refined(tested_starts, tested_ends,
                          known_values[np.searchsorted(known_keys, tested_starts)],
                          known_values[np.searchsorted(known_keys, tested_ends)], options)
        # resolve from the top: level j's tests count where its parent (level j − 1) was bisected
        active = np.ones((len(starts), 1), dtype=bool)
        offset = 0
        for level in range(_SPECULATIVE_LEVELS):
            size = active.size
            bisected = active & refine[offset:offset + size].reshape(active.shape)
            offset += size
            middles = (level_starts[level] + level_ends[level]) // 2
            chosen = middles[bisected]
            included_keys.append(chosen)
            included_values.append(known_values[np.searchsorted(known_keys, chosen)])
            active = np.repeat(bisected, 2, axis=1)
        starts = level_starts[-1][active]
        ends = level_ends[-1][active]
    all_keys = np.concatenate(included_keys)
    order = np.argsort(all_keys, kind="stable")
    final_keys, final_values = all_keys[order], np.concatenate(included_values)[order]
    if np.any(np.diff(final_values) > 0.0):
        return None
    return final_keys, final_values


def _lower_convex_hull(xs: NDArray[np.float64], ys: NDArray[np.float64]) -> NDArray[np.int64]:
    """Indices of the lower convex hull of points sorted by x (strict vertices, as Andrew's
    monotone chain keeps them).

    A middle point on or above the segment joining its two neighbours (cross product ≤ 0) is not
    a strict vertex of the lower hull of any set containing those three points, so all such
    points are removed at once, with numpy, until every consecutive triple turns strictly left:
    the remaining points are exactly the strict vertices.
    """
    hull = np.arange(len(xs), dtype=np.int64)
    while len(hull) >= 3:
        o, a, b = hull[:-2], hull[1:-1], hull[2:]
        cross = (xs[a] - xs[o]) * (ys[b] - ys[o]) - (ys[a] - ys[o]) * (xs[b] - xs[o])
        keep = np.concatenate(([True], cross > 0.0, [True]))
        if keep.all():
            break
        hull = hull[keep]
    return hull


def connect_the_dots_points(grid: ProfileGrid) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Mirrored, convexified points (rounded losses, δ) fed to Connect-the-Dots.

    Positive losses carry δ(ε_k); negative losses −ε_k carry 1 − e^{−ε_k}(1 − δ(ε_k)) (the bound on
    D_{e^{−ε}} implied by the reverse direction); then the lower convex hull in (e^ε, δ) together
    with the anchor (0, 1) is kept. The values enter raised by a relative ``_CONNECT_DOTS_MARGIN``
    (1e-9): dp-accounting computes the masses from differences of neighbouring values and the
    hockey-stick divergence from sums of them, and in float arithmetic a PLD read back at a grid
    point fell below the value put in by 2.5e-11 relative (tests/test_round_plds.py).
    """
    k_pos = grid.rounded_epsilons
    d_pos = np.minimum(1.0, grid.deltas * (1.0 + _CONNECT_DOTS_MARGIN))
    eps_pos = k_pos * grid.discretization
    mirrored = np.minimum(1.0, -np.expm1(-eps_pos) + np.exp(-eps_pos) * d_pos)
    nonzero = k_pos > 0
    ks = np.concatenate([-k_pos[nonzero][::-1], k_pos])
    ys = np.concatenate([mirrored[nonzero][::-1], d_pos])
    xs = np.exp(ks * grid.discretization)
    hull = _lower_convex_hull(np.concatenate([[0.0], xs]), np.concatenate([[1.0], ys]))
    hull = hull[hull > 0] - 1
    return ks[hull], ys[hull]


def pld_from_grid(grid: ProfileGrid) -> pld_lib.PrivacyLossDistribution:
    """Pessimistic Connect-the-Dots PLD (symmetric) from a profile grid."""
    ks, ys = connect_the_dots_points(grid)
    pmf = pld_pmf.create_pmf_pessimistic_connect_dots(grid.discretization, ks, ys)
    return pld_lib.PrivacyLossDistribution(pmf)


def pld_from_profile(profile: PrivacyProfile,
                     value_discretization_interval: float | None = None,
                     progress: ProgressOption = False,
                     **grid_options: float) -> pld_lib.PrivacyLossDistribution:
    """Pessimistic ``PrivacyLossDistribution`` dominating every pair the profile covers.

    With an ε cap (an ε0-LDP randomizer) the PLD has no mass at +∞ and its losses are
    ≤ ε_cap + d. ``value_discretization_interval`` None: chosen from the profile's loss scale;
    PLDs that are composed with each other need one common interval (dp-accounting raises
    ValueError otherwise).
    ``grid_options`` are passed to :func:`profile_grid` (``epsilon_tolerance``, ``max_step``,
    ``min_delta``); so is ``progress`` (a tqdm count of the profile evaluations when True).
    """
    return pld_from_grid(profile_grid(profile, value_discretization_interval,
                                      progress=progress, **grid_options))


# ---------------------------------------------------------------------------------------------
# Rényi divergence
# ---------------------------------------------------------------------------------------------


def randomized_response_rdp(epsilon0: float, orders: Sequence[float]) -> NDArray[np.float64]:
    """D_a of binary randomized response with parameter ε0 (both directions are equal), a ≥ 1.

    D_a = ln(π^a (1−π)^{1−a} + (1−π)^a π^{1−a})/(a − 1), π = e^ε0/(1 + e^ε0); at a = 1 the
    KL divergence (2π − 1)·ε0 = ε0·tanh(ε0/2); at a = ∞, ε0.
    """
    a = _check_orders(orders)
    if math.isinf(epsilon0):
        return np.full_like(a, np.inf)
    if epsilon0 == 0.0:
        return np.zeros_like(a)
    log_pi = -np.logaddexp(0.0, -epsilon0)
    log_rest = -np.logaddexp(0.0, epsilon0)
    finite = np.isfinite(a) & (a > 1.0)
    af = a[finite]
    result = np.full_like(a, epsilon0)  # a = ∞
    result[a == 1.0] = epsilon0 * math.tanh(epsilon0 / 2.0)
    result[finite] = np.logaddexp(af * log_pi + (1 - af) * log_rest,
                                  af * log_rest + (1 - af) * log_pi) / (af - 1.0)
    return result


def _check_orders(orders: Sequence[float]) -> NDArray[np.float64]:
    a = np.atleast_1d(np.asarray(orders, dtype=np.float64))
    if a.ndim != 1 or np.any(~(a >= 1.0)):
        raise ValueError(f"orders must all be >= 1 (Rényi orders), got {orders!r}")
    return a


def rdp_from_grid(grid: ProfileGrid, orders: Sequence[float],
                  epsilon_cap: float) -> NDArray[np.float64]:
    """Upper bound on D_a (both directions) at each order a ≥ 1 (see the module docstring).

    Orders a = 1 and a = ∞ use the randomized-response bound only.
    """
    all_orders = _check_orders(orders)
    pure = randomized_response_rdp(epsilon_cap, all_orders)
    integrable = np.isfinite(all_orders) & (all_orders > 1.0)
    if not grid.capped or not np.any(integrable):
        return pure
    a = all_orders[integrable]
    # chord in g = e^ε between grid points, sampled at sub-points: upper bounds on H at each point
    eps = grid.rounded_epsilons * grid.discretization
    g = np.exp(eps)
    t = np.linspace(0.0, 1.0, _RDP_SUBDIVISIONS, endpoint=False)
    g_left = (g[:-1, None] + (g[1:] - g[:-1])[:, None] * t[None, :]).ravel()
    h_left = (grid.deltas[:-1, None]
              + (grid.deltas[1:] - grid.deltas[:-1])[:, None] * t[None, :]).ravel()
    g_right = np.append(g_left[1:], g[-1])
    keep = h_left > 0.0
    log_gl, log_gr, log_h = np.log(g_left[keep]), np.log(g_right[keep]), np.log(h_left[keep])
    width = (log_gr - log_gl)[None, :]
    order = a[:, None]
    # ∫_{gl}^{gr} g^{a-2} dg = gr^{a-1}(1 - (gl/gr)^{a-1})/(a-1)
    log_w_forward = ((order - 1.0) * log_gr[None, :] + np.log(-np.expm1(-(order - 1.0) * width))
                     - np.log(order - 1.0))
    # ∫_{gl}^{gr} u^{-a-1} du = gl^{-a}(1 - (gl/gr)^{a})/a
    log_w_reverse = (-order * log_gl[None, :] + np.log(-np.expm1(-order * width)) - np.log(order))
    log_sum = special.logsumexp(
        np.concatenate([log_w_forward + log_h[None, :], log_w_reverse + log_h[None, :]], axis=1),
        axis=1) + np.log(order[:, 0]) + np.log(order[:, 0] - 1.0)
    profile_bound = np.logaddexp(0.0, log_sum) / (a - 1.0)
    result = pure.copy()
    result[integrable] = np.minimum(profile_bound, pure[integrable])
    return result


def rdp_from_profile(profile: PrivacyProfile, orders: Sequence[float],
                     value_discretization_interval: float | None = None,
                     **grid_options: float) -> NDArray[np.float64]:
    """Upper bound on the Rényi divergence (both directions) at ``orders`` (all ≥ 1)."""
    grid = profile_grid(profile, value_discretization_interval, **grid_options)
    return rdp_from_grid(grid, orders, profile.epsilon_cap)


def ldp_pld(epsilon: float, delta: float = 0.0,
            value_discretization_interval: float = DEFAULT_VALUE_DISCRETIZATION
            ) -> pld_lib.PrivacyLossDistribution:
    """PLD of any (ε, δ)-DP pair: dp-accounting's ``from_privacy_parameters`` (leaky RR).

    Every (ε, δ)-DP pair is a post-processing of the leaky randomized response of Kairouz,
    Oh & Viswanath, ICML 2015 (infinite loss w.p. δ, ±ε otherwise), whose PLD this is (losses
    rounded up).
    """
    return pld_lib.from_privacy_parameters(
        pld_common.DifferentialPrivacyParameters(epsilon, delta), value_discretization_interval)


__all__ = [
    "BatchedRandomizer",
    "CORE_RTOL",
    "DEFAULT_VALUE_DISCRETIZATION",
    "PrivacyProfile",
    "ProfileGrid",
    "COHORT_LOWERING",
    "ROUND_LOWERING",
    "RandomizerDescription",
    "ShuffleBound",
    "as_shuffle_bound",
    "batched_entry_deltas",
    "batched_randomizer",
    "LOSS_RESOLUTION",
    "connect_the_dots_points",
    "discretization_for_scale",
    "honest_users",
    "ldp_pld",
    "loss_scale",
    "max_profile",
    "min_profile",
    "parallel_composite_bound",
    "PARALLEL_STRUCTURE_PROFILE_MAX_USERS",
    "pld_from_grid",
    "pld_from_profile",
    "poisson_sampled_shuffle_profile",
    "profile_grid",
    "randomized_response_delta",
    "randomized_response_rdp",
    "rdp_from_grid",
    "rdp_from_profile",
    "round_randomizer",
    "sampled_users_lower_bound",
    "shuffle_profile",
    "users_grid_floor",
    "variation_ratios_of",
]
