"""Poisson client sampling in shuffle rounds (docs/theory.md, "Client sampling").

Two relations, each a privacy profile (:class:`~dpacct_shuffle.profiles.PrivacyProfile`)
bounding both directions of every neighbouring pair:

* :func:`poisson_sampled_profile`, replace-one — each of the ``num_users`` users of a known
  population takes part independently with probability γ and the participants' reports are
  shuffled. Bound: the *void view* (below), and, entry by entry, the participant-count bound of
  :func:`dpacct_shuffle.profiles.poisson_sampled_shuffle_profile`; the smaller is kept.
* :func:`poisson_sampled_profile`, add/remove-one — the same round, the victim present in one
  dataset and absent from the other (:func:`add_remove_variation_ratios`).

Fixed-size cohorts (exactly m of the N users) are accounted by
:func:`dpacct_shuffle.without_replacement.without_replacement_profile` on the m-user round, or
more tightly by :func:`dpacct_shuffle.without_replacement.shuffled_cohort_profile` (Poisson rounds
of the population, divided by the probability of at least m participants).

The void view
-------------
Let ⊥ be a symbol no randomizer outputs. "Take part with probability γ, then shuffle the
participants' reports" releases the multiset of participants' reports; with N known, that is a
bijective function of the multiset of N messages in which every non-participant sends ⊥ (the
number of ⊥ is N minus the number of reports). So the sampled round *is* a shuffle round of N
users applying the void randomizer

    R'(x) = γ·R(x) + (1 − γ)·δ_⊥,

and every shuffle bound for R' is a bound for the sampled round, with the participant count
visible. Its variation-ratio parameters, for a victim pair (x⁰, x¹) of R with parameters
(p, β, q0, q1) and neutral split μ_b = pα·Q_b + α·Q_{1−b} + w·N, others R(x_i) ≥ r0·Q0 + r1·Q1 + s·N:

* R'(x⁰) − R'(x¹) = γ·(μ0 − μ1): total variation γβ, the same Q0, Q1, α' = γα;
* the ratio on R's outputs is that of R, on ⊥ it is 1: the same p; for the same reason the same
  q0, q1, and the clone rates pα'/q_j = γ·r_j are exactly the others' γ·r_j·Q_j;
* the victim's neutral part w'·N' = γw·N + (1 − γ)·δ_⊥ (w' = 1 − (p + 1)α' = γw + 1 − γ); every
  other user reproduces γ·s·N (γ times R's guarantee) and (1 − γ)·δ_⊥ (exactly its own ⊥ mass).

The core's several-types bound (:mod:`dpacct_shuffle.core.bound`, ``neutral_parts``) takes parts
(w_t, s_t) with disjoint supports. R's relaxed neutral data is a share s with weight ν = λ·s ≤ w
(λ = min_t w_t/s_t over R's own parts); any valid split of R reduces to the two parts (ν, s),
(w − ν, 0) for the core (put λ·s_t of each part w_t into the first, the rest into the second).
So R' has the parts (γν, γs), (γ(w − ν), 0) and (1 − γ, σ) for any σ ≤ 1 − γ, a share
γs + σ and ratio λ' = min(λ, (1 − γ)/σ). :func:`void_variation_ratios` returns the candidates
σ = 1 − γ (λ' = min(λ, 1)), σ = (1 − γ)/λ when λ > 1 (λ' = λ) and, when λ < 1, R's part dropped
(share 1 − γ, λ' = 1); the bound is the minimum over them.

Pair classes and local bounds. A catalog ``Randomizer`` covers its victim pairs by entries
(``cover``, min'ed with ``fallbacks``); the void view applies entry by entry: a candidate
VariationRatio of an entry maps to its void candidates, and a :class:`LocalPairBound` (the victim's
own local divergence) to γ times it (D_{e^ε}(γμ0 + (1−γ)δ_⊥ ‖ γμ1 + (1−γ)δ_⊥) = γ·D_{e^ε}(μ0‖μ1)
for ε ≥ 0). For every entry the participant-count bound (same pair class, m sampled users) is also
evaluated and the smaller value kept. ``from_matrix`` randomizers are covered by the same rule (their
cover consists of VariationRatio candidates and local bounds). A randomizer with a small ``matrix``
(at most ``VOID_MATRIX_MAX_CELLS`` cells with the ⊥ column) is also analyzed as the finite
randomizer R' itself (:func:`void_matrix_randomizer`), and the smaller value kept.

Floating point: the void parameters are computed for a sampling probability γ_up ≥ γ (γ rounded up
by 4 ulps): a round with probability γ is a post-processing of the round with γ_up ≥ γ (drop each
released report independently with probability 1 − γ/γ_up), so its divergences are at most those
of γ_up; the shares are shrunk by a relative 1e-12 (a smaller share only loosens the bound).

Robust shuffling (``honest_fraction`` h): only ⌊h·N⌋ users of the population follow the protocol
(sampling and randomizer); the others' messages (including whether they send one) may be anything,
known to the adversary. The released multiset is a post-processing of the honest users' void
messages, so every bound is evaluated for ⌊h·N⌋ users, like an unsampled round.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from dp_accounting import privacy_accountant

from dpacct_shuffle.core.batched import DEFAULT_LOWERING, batched_delta, supports_batched_delta
from dpacct_shuffle.core.bound import VariationRatio
from dpacct_shuffle.core.rounding import ratio_up
from dpacct_shuffle.core.validation import check_num_users, check_range
from dpacct_shuffle.profiles import (
    CORE_RTOL,
    PrivacyProfile,
    batched_entry_deltas,
    batched_randomizer,
    RandomizerDescription,
    ShuffleBound,
    as_shuffle_bound,
    honest_users,
    randomized_response_delta,
    sampled_users_lower_bound,
    variation_ratios_of,
    DEFAULT_SAMPLING_TAIL,
)
from dpacct_shuffle.randomizers.base import LocalPairBound, PairBound, Randomizer, VariationRatioBound
from dpacct_shuffle.randomizers.binary_reduction import BinaryReductionUpper
from dpacct_shuffle.randomizers.binary_rr_curve import BinaryRRExactUpper
from dpacct_shuffle.randomizers.binary_rr_sampled import (SampledBinaryRRProfile, is_tractable,
                                                          sampled_binary_rr_profile)
from dpacct_shuffle.randomizers.matrix import from_matrix
from dpacct_shuffle.randomizers.personalized import PersonalizedShuffle

NeighborRel = privacy_accountant.NeighboringRelation
_SHARE_SHRINK = 1.0 - 1e-12

# splits r1 = t·(1 − γ) of the others' ⊥ mass in the add/remove pair (add_remove_variation_ratios;
# measured best for both directions, given that absent‖present vanishes for ε ≥ −ln(1 − γ))
_PRESENCE_SPLITS = (0.5, 0.75)
# a randomizer's matrix up to this many cells (with the ⊥ column) is also analyzed as R'
VOID_MATRIX_MAX_CELLS = 64
# λ this close to 1 counts as 1 (void_variation_ratios: no extra candidate)
_RATIO_TOLERANCE = 1e-9

DeltaFunction = Callable[[float, int], float]
FloatArray = NDArray[np.float64]
# δ(ε, n) at every ε of an array
DeltasFunction = Callable[[FloatArray, int], FloatArray]


def _gamma_up(sampling_probability: float) -> float:
    """γ rounded up by 4 ulps, at most 1 (module docstring, "Floating point")."""
    return min(1.0, ratio_up(sampling_probability))


def check_sampling_probability(value: object, name: str = "sampling_probability") -> float:
    """γ ∈ [0, 1]."""
    return check_range(name, value, 0.0, 1.0)


# ---------------------------------------------------------------------------------------------
# replace-one: the void randomizer's parameters
# ---------------------------------------------------------------------------------------------


def void_variation_ratios(variation_ratio: VariationRatio,
                          sampling_probability: float) -> tuple[VariationRatio, ...]:
    """Candidate VariationRatios of R'(x) = γ·R(x) + (1 − γ)·⊥ for the victim pair of ``variation_ratio``.

    Proof in the module docstring: same p, q0, q1; β' = γβ; neutral parts (γν, γs), (γ(w − ν), 0),
    (1 − γ, σ) with ν = ``neutral_weight``, s = ``neutral_share``, w = ``neutral_mass`` of R and
    σ ∈ {1 − γ, (1 − γ)/λ if λ = ν/s > 1}; if λ < 1 also R's part dropped (share 1 − γ, λ' = 1).
    Every candidate is an upper bound for the sampled round with N users evaluated at N; the
    minimum over them is. γ = 1 returns ``(variation_ratio,)``.
    """
    if not isinstance(variation_ratio, VariationRatio):
        raise TypeError(f"variation_ratio must be a VariationRatio, got {type(variation_ratio).__name__}")
    gamma = check_sampling_probability(sampling_probability)
    if gamma == 1.0:
        return (variation_ratio,)
    vr = variation_ratio
    g_up = _gamma_up(gamma)
    beta = vr.beta * g_up  # the core clamps a rounding excess over (p − 1)/(p + 1)
    q1 = vr.q1 if vr.q1 != vr.q0 else None
    probe = VariationRatio(vr.p, beta, vr.q0, q1=q1)
    if probe.beta == 0.0:
        return (probe,)
    w_void = probe.neutral_mass
    void_mass = w_void - g_up * vr.neutral_mass  # ≈ 1 − γ_up: the victim's ⊥ mass
    void_share = max(0.0, 1.0 - g_up) * _SHARE_SHRINK
    if void_mass <= 0.0 or void_share <= 0.0:
        return (probe,)
    share = vr.neutral_share * gamma * _SHARE_SHRINK
    weight = vr.neutral_weight * g_up
    parts: list[list[tuple[float, float]]] = []
    if share > 0.0:
        ratio = vr.neutral_weight / vr.neutral_share
        rest = w_void - weight - void_mass
        own = [(weight, share), (max(0.0, rest), 0.0)]
        parts.append(own + [(void_mass, void_share)])
        if ratio > 1.0 + _RATIO_TOLERANCE:
            parts.append(own + [(void_mass, void_share / ratio)])
        elif ratio < 1.0 - _RATIO_TOLERANCE:
            parts.append([(w_void - void_mass, 0.0), (void_mass, void_share)])
    else:
        parts.append([(w_void - void_mass, 0.0), (void_mass, void_share)])
    candidates: dict[VariationRatio, None] = {}
    for split in parts:
        candidates.setdefault(VariationRatio(vr.p, beta, vr.q0, q1=q1, neutral_parts=split), None)
    return tuple(candidates)


def add_remove_variation_ratios(randomizer: RandomizerDescription,
                                sampling_probability: float) -> tuple[VariationRatio, ...]:
    """Candidate VariationRatios of a Poisson-sampled round under add/remove-one neighbours.

    With the victim present it sends μ0 = γ·R(x) + (1 − γ)·⊥; absent, it sends nothing, which is
    the same release as sending ⊥ always (μ1 = δ_⊥: the server sees only reports). So the pair is
    p = ∞ (R's outputs have no mass under μ1), β = TV(μ0, μ1) = γ, α = 0 and, in the core's form
    μ0 = pα·Q0 + w·N, μ1 = pα·Q1 + w·N with pα = γ, w = 1 − γ: Q0 = R(x), Q1 = N = δ_⊥ (the
    labelled-type argument of the core needs no disjoint supports: the release is a
    post-processing of the type counts). Every other user sends γ·R(x_i) + (1 − γ)·δ_⊥ ≥
    (γ/q)·R(x) + r1·δ_⊥ + s·δ_⊥ for any r1 + s ≤ 1 − γ, where q bounds R(x)/R(x_i) over all
    inputs — max(q0, q1) of parameters valid for every victim pair (every input is the x⁰ or x¹
    of some pair). So VariationRatio(∞, γ, q, q1 = γ/r1, s) is valid, r1 ≤ γ (q1 ≥ 1). The
    candidates use r1 = min(γ, t·(1 − γ)) for t ∈ ``_PRESENCE_SPLITS``. Splitting ⊥ into two labelled types lets the adversary see an absent
    victim's Q1 label when no other user carries one (probability about γ(1 − γ/q − s)^(N−1)): the
    bound of absent‖present then stays above that floor at every ε, which is why
    :func:`_presence_delta` also uses that this direction vanishes for ε ≥ −ln(1 − γ). With
    num_users = N the bound holds
    for the victim added to or removed from a population of N (the others number N − 1 or N; the
    bound is non-increasing in the number of users).

    Floating point: γ is rounded up (see the module docstring), q up by 4 ulps, q1 is chosen so
    that the core's r1 = γ/q1 is at most the target, and s is shrunk by 1e-12.
    """
    gamma = check_sampling_probability(sampling_probability)
    vrs = variation_ratios_of(randomizer)
    q = ratio_up(max(max(vr.q0, vr.q1) for vr in vrs))
    if not math.isfinite(q):
        raise ValueError("add/remove-one needs a finite q (R(x) <= q·R(x') for all inputs); "
                         f"the randomizer's parameters give q = {q!r}")
    if gamma == 0.0:
        return (VariationRatio(math.inf, 0.0, q),)
    g_up = _gamma_up(gamma)
    silent = 1.0 - g_up
    if silent <= 0.0:  # everyone always sends: presence is visible
        return (VariationRatio(math.inf, 1.0, q, q1=1.0, neutral_share=0.0),)
    candidates: dict[VariationRatio, None] = {}
    for t in _PRESENCE_SPLITS:
        r1 = min(g_up, t * silent)
        q1 = ratio_up(g_up / r1)
        share = (silent - r1) * _SHARE_SHRINK
        candidates.setdefault(VariationRatio(math.inf, g_up, q, q1=q1, neutral_share=share), None)
    return tuple(candidates)


def _presence_delta(randomizer: RandomizerDescription, gamma: float, users: int) -> Callable[[float], float]:
    """δ(ε) = max(present‖absent, absent‖present) of the add/remove pair, each direction the
    minimum over :func:`add_remove_variation_ratios`; absent‖present is also 0 for
    ε ≥ −ln(1 − γ), because the law with the victim is ≥ (1 − γ) times the law without it (the
    victim does not report with probability 1 − γ)."""
    vrs = add_remove_variation_ratios(randomizer, gamma)
    g_up = _gamma_up(gamma)
    absent_cap = ratio_up(-math.log1p(-g_up)) if g_up < 1.0 else math.inf

    def direction_delta(epsilon: float, direction: int) -> float:
        return min(vr.delta_interval(epsilon, users, rtol=CORE_RTOL, direction=direction).upper
                   for vr in vrs)

    def delta_upper(epsilon: float) -> float:
        present = direction_delta(epsilon, 0)
        absent = 0.0 if epsilon >= absent_cap else direction_delta(epsilon, 1)
        return max(present, absent)

    exact = _exact_binary_rr_fallback(randomizer, gamma, "add_remove")
    if exact is None:
        return delta_upper

    def best_delta(epsilon: float) -> float:
        return min(delta_upper(epsilon), exact(epsilon, users))

    return best_delta


def _exact_binary_rr_fallback(randomizer: RandomizerDescription, gamma: float, relation: str
                              ) -> DeltaFunction | None:
    """The exact sampled binary-RR δ(ε, N) when ``randomizer`` is a catalog entry whose
    fallbacks include the exact binary-RR profile (every victim pair is then binary RR's)."""
    epsilon0 = binary_rr_epsilon0(randomizer)
    return None if epsilon0 is None else _exact_binary_rr(epsilon0, gamma, relation)


def binary_rr_epsilon0(randomizer: RandomizerDescription) -> float | None:
    """ε0 of a catalog ``binary_rr`` entry (recognised by its exact-profile fallback
    :class:`~dpacct_shuffle.randomizers.binary_rr_curve.BinaryRRExactUpper`), None for any other
    randomizer."""
    if isinstance(randomizer, Randomizer):
        for entry in randomizer.fallbacks:
            if isinstance(entry, BinaryRRExactUpper):
                return entry.epsilon0
    return None


def exact_sampled_profile(randomizer: RandomizerDescription, num_users: int,
                          sampling_probability: float, relation: str = "replace_one"
                          ) -> SampledBinaryRRProfile | None:
    """The exact profile of the Poisson-sampled round
    (:class:`~dpacct_shuffle.randomizers.binary_rr_sampled.SampledBinaryRRProfile`) when
    ``randomizer`` is binary RR and the round is tractable
    (:func:`~dpacct_shuffle.randomizers.binary_rr_sampled.is_tractable`), None otherwise. Its
    lower ends are certified lower bounds on the round's ε(δ) and δ(ε)."""
    gamma = check_sampling_probability(sampling_probability)
    users = check_num_users(num_users, "num_users")
    epsilon0 = binary_rr_epsilon0(randomizer)
    if epsilon0 is None or not is_tractable(users, gamma):
        return None
    return sampled_binary_rr_profile(epsilon0, users, gamma, relation)


# ---------------------------------------------------------------------------------------------
# bounds of one sampled round
# ---------------------------------------------------------------------------------------------


def _pointwise(delta: Callable[[float, int], float]) -> DeltasFunction:
    """The array form of a scalar δ(ε, n): one call per ε."""

    def deltas(epsilons: FloatArray, n: int) -> FloatArray:
        return np.array([delta(float(epsilon), n) for epsilon in epsilons], dtype=np.float64)

    return deltas


def _vr_deltas(vr: VariationRatio, lowering: float | None) -> DeltasFunction:
    """δ(ε, n) of one VariationRatio at every ε: the batched pair curve at η = ``lowering`` where
    it applies (:func:`dpacct_shuffle.core.batched.batched_delta`, built once per (vr, n) for all
    ε; it dominates the core's pair), else the core at ``CORE_RTOL`` point by point."""
    if lowering is not None and supports_batched_delta(vr):
        return lambda epsilons, n: batched_delta(vr, n, lowering).deltas(epsilons)
    return _pointwise(lambda epsilon, n: vr.delta_interval(epsilon, n, rtol=CORE_RTOL).upper)


def _min_over(vrs: Sequence[VariationRatio], lowering: float | None) -> DeltasFunction:
    """The minimum over candidate VariationRatios (each valid, so is their minimum)."""
    parts = [_vr_deltas(vr, lowering) for vr in vrs]

    def deltas(epsilons: FloatArray, n: int) -> FloatArray:
        return np.min([part(epsilons, n) for part in parts], axis=0)

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
    return None


def _exact_binary_rr(epsilon0: float, gamma: float, relation: str) -> DeltaFunction:
    """δ(ε, N) of the exact sampled binary-RR round (:mod:`dpacct_shuffle.randomizers.binary_rr_sampled`)
    where it is tractable, 1 (no information) elsewhere: it enters only minima."""

    def exact_delta(epsilon: float, n: int) -> float:
        if not is_tractable(n, gamma):
            return 1.0
        return sampled_binary_rr_profile(epsilon0, n, gamma, relation).delta(epsilon)

    return exact_delta


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


_EntryDeltas = Callable[..., FloatArray]
# points of the coarse grid on [0, ε0] at which a lazily evaluated participant-count bound is
# evaluated first (_CountBound)
_COARSE_POINTS = 16


class _CountBound:
    """The participant-count bound of one pair class at every ε, evaluated only where it can lower
    a ceiling (a valid bound at each ε) when ``lazy``.

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
        self.grid = np.linspace(0.0, epsilon0, _COARSE_POINTS + 1) if self.lazy else None
        self._coarse = np.full(_COARSE_POINTS + 1, np.nan)

    def _coarse_values(self, points: NDArray[np.int64]) -> FloatArray:
        """The count at the grid points ``points`` (each evaluated once, when first needed)."""
        missing = np.unique(points[np.isnan(self._coarse[points])])
        if missing.size:
            self._coarse[missing] = self.count(self.grid[missing])
        return self._coarse

    def below(self, epsilons: FloatArray, ceiling: FloatArray | None) -> FloatArray:
        if ceiling is None or not self.lazy:
            values = self.count(epsilons)
            return values if ceiling is None else np.minimum(ceiling, values)
        grid = self.grid
        eps = np.asarray(epsilons, dtype=np.float64)
        result = np.array(ceiling, dtype=np.float64)
        index = np.searchsorted(grid, eps, side="right")  # grid[index − 1] ≤ ε < grid[index]
        on_grid = (index == len(grid)) | (grid[np.maximum(index - 1, 0)] == eps)
        # the grid point of each ε: itself (on the grid, or ε0 beyond) or its upper neighbour
        point = np.where(on_grid, np.minimum(index, len(grid)) - 1, np.minimum(index, len(grid) - 1))
        coarse = self._coarse_values(point)
        known = np.flatnonzero(on_grid)
        result[known] = np.minimum(result[known], coarse[point[known]])
        needed = np.flatnonzero(~on_grid & (coarse[point] < result))
        if needed.size:
            result[needed] = np.minimum(result[needed], self.count(eps[needed]))
        return result


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
        count = _CountBound(self._count_bound(delta_n), self.bound.epsilon0,
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
                value = np.max([entry(epsilons) for entry in covers], axis=0)
                for entry in fallbacks:
                    value = entry(epsilons, value)  # min(value, the fallback's bound)
                return value

            return randomizer_deltas
        if not isinstance(randomizer, ShuffleBound) and hasattr(randomizer, "variation_ratio"):
            return self._deltas_function(randomizer.variation_ratio)
        if isinstance(randomizer, Sequence) and not isinstance(randomizer, str) and randomizer:
            items = [self._deltas_function(item) for item in randomizer]

            def sequence_deltas(epsilons: FloatArray) -> FloatArray:
                return np.max([item(epsilons) for item in items], axis=0)

            return sequence_deltas
        return self._best(None, _bound_deltas(randomizer, lowering))


def _void_view(randomizer: RandomizerDescription, gamma: float, lowering: float
               ) -> DeltasFunction | None:
    """δ(ε, N) of the void view alone with batched curves (:func:`void_view_profile`), None
    when the randomizer has no void form."""
    if isinstance(randomizer, VariationRatio):
        return _min_over(void_variation_ratios(randomizer, gamma), lowering)
    if isinstance(randomizer, Randomizer):
        covers = [_void_entry(e, gamma, lowering) for e in randomizer.cover]
        if any(entry is None for entry in covers):
            return None
        fallbacks = [f for f in (_void_entry(e, gamma, lowering) for e in randomizer.fallbacks)
                     if f is not None]

        def randomizer_deltas(epsilons: FloatArray, n: int) -> FloatArray:
            value = np.max([entry(epsilons, n) for entry in covers], axis=0)  # type: ignore[misc]
            for entry in fallbacks:
                value = np.minimum(value, entry(epsilons, n))
            return value

        return randomizer_deltas
    if not isinstance(randomizer, ShuffleBound) and hasattr(randomizer, "variation_ratio"):
        return _void_view(randomizer.variation_ratio, gamma, lowering)
    if isinstance(randomizer, Sequence) and not isinstance(randomizer, str) and randomizer:
        items = [_void_view(item, gamma, lowering) for item in randomizer]
        if any(item is None for item in items):
            return None

        def sequence_deltas(epsilons: FloatArray, n: int) -> FloatArray:
            return np.max([item(epsilons, n) for item in items], axis=0)  # type: ignore[misc]

        return sequence_deltas
    return None


def void_view_profile(randomizer: RandomizerDescription, num_users: int,
                      sampling_probability: float) -> PrivacyProfile | None:
    """The void view of a Poisson-sampled round (replace-one) alone, cheap at every ε.

    The same bound as the void part of :func:`poisson_sampled_profile` — N users of
    R'(x) = γ·R(x) + (1 − γ)·⊥ (:func:`void_variation_ratios`), entry by entry for a catalog
    Randomizer (max over the cover, min over the fallbacks that have a void form), and the analyzed
    void matrix (:func:`void_matrix_randomizer`) for a small matrix — with every VariationRatio
    that :func:`~dpacct_shuffle.core.batched.supports_batched_delta` accepts evaluated by its
    batched pair curve (one pass per VariationRatio for every ε; docs/theory.md, "Batched
    evaluation from the dominating pair"), the others by the core. No participant-count bound.
    None when a cover entry has no void form (e.g. an exact profile only). Used by
    :func:`dpacct_shuffle.without_replacement.shuffled_cohort_profile`, which evaluates it for
    several γ at every ε of a PLD.

    Args:
      randomizer: anything :func:`~dpacct_shuffle.profiles.as_shuffle_bound` accepts.
      num_users: the population N ≥ 1 (every user follows the protocol).
      sampling_probability: γ ∈ [0, 1].
    """
    gamma = check_sampling_probability(sampling_probability)
    population = check_num_users(num_users, "num_users")
    bound = as_shuffle_bound(randomizer)
    if gamma == 0.0:
        return PrivacyProfile(lambda epsilon: 0.0, 0.0, "poisson(0.0): nobody reports")
    view = _void_view(randomizer, gamma, DEFAULT_LOWERING)
    if view is None:
        return None
    analyzed = void_matrix_randomizer(randomizer, gamma)
    matrix = None if analyzed is None else _bound_deltas(analyzed, DEFAULT_LOWERING)

    def deltas_upper(epsilons: FloatArray) -> FloatArray:
        value = view(epsilons, population)  # type: ignore[misc]
        if matrix is not None:
            value = np.minimum(value, matrix(epsilons, population))
        return np.minimum(1.0, value)

    def delta_upper(epsilon: float) -> float:
        return float(deltas_upper(np.array([epsilon], dtype=np.float64))[0])

    return PrivacyProfile(delta_upper, bound.epsilon0,
                          f"void_view({gamma!r}, {bound.source!r}, N={population})", deltas_upper)


def poisson_sampled_profile(randomizer: RandomizerDescription, num_users: int, sampling_probability: float,
                            honest_fraction: float = 1.0,
                            neighboring_relation: NeighborRel = NeighborRel.REPLACE_ONE,
                            tail: float = DEFAULT_SAMPLING_TAIL,
                            lowering: float | None = None) -> PrivacyProfile:
    """Profile of a shuffle round on a Poisson sample of a population of ``num_users`` users.

    Every user takes part independently with probability γ = ``sampling_probability`` and the
    participants' reports are shuffled (the server sees the reports, hence their number).

    * ``REPLACE_ONE``: the victim's input is replaced. δ(ε) = min of the void view (N = ⌊h·N⌋
      users of R'(x) = γ·R(x) + (1 − γ)·⊥, :func:`void_variation_ratios`) and the
      participant-count bound (:func:`dpacct_shuffle.profiles.poisson_sampled_shuffle_profile`),
      taken entry by entry for a catalog Randomizer; cap ε0 = ln p (the victim's local guarantee).
    * ``ADD_OR_REMOVE_ONE``: the victim is in the population or not (:func:`add_remove_variation_ratios`);
      no cap (with the victim present all N users may report, which is impossible without it).

    Args:
      randomizer: anything :func:`~dpacct_shuffle.profiles.as_shuffle_bound` accepts; add/remove
        needs VariationRatio parameters (:func:`~dpacct_shuffle.profiles.variation_ratios_of`).
      num_users: the population N (with the victim, for add/remove), ≥ 1.
      sampling_probability: γ ∈ [0, 1].
      honest_fraction: h ∈ (0, 1]: ⌊h·N⌋ users follow the protocol (module docstring).
      neighboring_relation: ``REPLACE_ONE`` or ``ADD_OR_REMOVE_ONE``.
      tail: lower-tail mass of the participant count in the participant-count bound.
      lowering: None (default): every VariationRatio is evaluated by the core point by point.
        A float η ∈ (0, 0.01]: by its batched pair curve at η wherever
        :func:`~dpacct_shuffle.core.batched.supports_batched_delta` accepts it (void candidates,
        the participant-count bound's entries, the analyzed void matrix), one curve per
        (VariationRatio, number of users) for all ε, and the profile gets an array form
        (``deltas_upper``): what the accountants use for a sampled round's PLD
        (:data:`~dpacct_shuffle.profiles.ROUND_LOWERING`). Each curve dominates the core's pair
        (docs/theory.md, "Batched evaluation from the dominating pair"), so the profile stays an
        upper bound; it is at most a few tenths of a percent looser in ε. Under
        ``ADD_OR_REMOVE_ONE`` every presence pair has p = ∞, which the curve does not support:
        the core evaluates them whatever ``lowering`` is.
    """
    gamma = check_sampling_probability(sampling_probability)
    population = check_num_users(num_users, "num_users")
    if lowering is not None:
        lowering = check_range("lowering", lowering, 0.0, 0.01, low_open=True)
    if isinstance(randomizer, PersonalizedShuffle) and len(randomizer.groups) == 1:
        randomizer = randomizer.groups[0][0]  # one group is the homogeneous round of its randomizer
    if neighboring_relation is NeighborRel.ADD_OR_REMOVE_ONE:
        if isinstance(randomizer, PersonalizedShuffle):
            raise TypeError("a PersonalizedShuffle (users with different randomizers) is accounted "
                            "for replace-one neighbours only; ADD_OR_REMOVE_ONE is not supported")
        users = honest_users(population, honest_fraction)
        return PrivacyProfile(_presence_delta(randomizer, gamma, users), math.inf,
                              f"poisson_add_remove({gamma!r}, {randomizer!r}, N={users})")
    if neighboring_relation is not NeighborRel.REPLACE_ONE:
        raise ValueError("neighboring_relation must be REPLACE_ONE or ADD_OR_REMOVE_ONE, "
                         f"got {neighboring_relation!r}")
    round_ = _SampledRound(randomizer, population, gamma, honest_fraction, tail, lowering)
    if gamma == 0.0:
        return PrivacyProfile(lambda epsilon: 0.0, 0.0, "poisson(0.0): nobody reports")
    return PrivacyProfile(round_.delta, round_.bound.epsilon0,
                          f"poisson({gamma!r}, void shuffle({round_.bound.source!r}, "
                          f"N={round_.population}))",
                          None if lowering is None else round_.deltas)


__all__ = [
    "add_remove_variation_ratios",
    "binary_rr_epsilon0",
    "check_sampling_probability",
    "exact_sampled_profile",
    "poisson_sampled_profile",
    "void_matrix_randomizer",
    "void_personalized_round",
    "void_variation_ratios",
    "void_view_profile",
]
