"""Pair parameters of a Poisson-sampled round: the void randomizer's VariationRatios
(replace-one), the presence pair's (add/remove-one) and the exact sampled binary RR where it
applies.

"The module docstring" below is that of the package, :mod:`dpacct_shuffle.sampling`
(the void view, floating point, robust shuffling).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from dp_accounting import privacy_accountant

from dpacct_shuffle.core.bound import VariationRatio
from dpacct_shuffle.core.presence import presence_curves
from dpacct_shuffle.core.rounding import ratio_up
from dpacct_shuffle.core.validation import check_num_users, check_range
from dpacct_shuffle.profiles import (
    CORE_RTOL,
    RandomizerDescription,
    variation_ratios_of,
)
from dpacct_shuffle.randomizers.base import Randomizer
from dpacct_shuffle.randomizers.binary_rr_curve import BinaryRRExactUpper
from dpacct_shuffle.randomizers.binary_rr_sampled import (SampledBinaryRRProfile, is_tractable,
                                                          sampled_binary_rr_profile)

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
    :func:`_presence_deltas` replaces them by the merged pair, which needs no split. With
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
    if silent <= 0.0:
        raise ValueError("add/remove-one with sampling_probability rounded up to 1 has no "
                         "VariationRatio: the number of reports reveals presence (delta = 1)")
    candidates: dict[VariationRatio, None] = {}
    for t in _PRESENCE_SPLITS:
        r1 = min(g_up, t * silent)
        q1 = ratio_up(g_up / r1)
        share = (silent - r1) * _SHARE_SHRINK
        candidates.setdefault(VariationRatio(math.inf, g_up, q, q1=q1, neutral_share=share), None)
    return tuple(candidates)


def _presence_deltas(randomizer: RandomizerDescription, gamma: float, users: int,
                     lowering: float) -> tuple[Callable[[float], float], Callable[[FloatArray], FloatArray]]:
    """δ(ε) = max(present‖absent, absent‖present) of the add/remove pair, scalar and array forms.

    For 0 < γ_up < 1 both directions are read from the every-ε curves of the merged presence pair
    (:func:`dpacct_shuffle.core.presence.presence_curves` at η = ``lowering``, one build per
    (q, γ_up, N) for every ε; docs/theory.md, "Presence pairs at every ε"), which is never looser
    than the split pairs of :func:`add_remove_variation_ratios` (forgetting which ⊥ labels they
    call Q1 maps their count law onto the merged one) and gives absent‖present = 0 for
    ε ≥ −ln(1 − γ) by itself. γ = 0 (nobody reports) is the core's bound of
    :func:`add_remove_variation_ratios`; γ_up = 1 gives δ = 1 (the number of reports reveals
    presence: with the victim, N reports; without, N − 1). For the catalog ``binary_rr`` entry the
    exact sampled profile, where tractable, is also evaluated and the smaller value kept.
    """
    g_up = _gamma_up(gamma)
    if g_up >= 1.0:
        # every user always reports: the number of reports reveals presence, δ = 1 at every ε
        return (lambda epsilon: 1.0), (lambda epsilons: np.ones(len(epsilons)))
    vrs = add_remove_variation_ratios(randomizer, gamma)
    if 0.0 < g_up < 1.0:
        curves = presence_curves(vrs[0].q0, g_up, users, lowering)
        curve_delta: Callable[[float], float] = curves.delta
        curve_deltas: Callable[[FloatArray], FloatArray] = curves.deltas
    else:
        def curve_delta(epsilon: float) -> float:
            return max(vr.delta_interval(epsilon, users, rtol=CORE_RTOL, direction=direction).upper
                       for vr in vrs for direction in (0, 1))

        def curve_deltas(epsilons: FloatArray) -> FloatArray:
            return np.array([curve_delta(float(e)) for e in epsilons], dtype=np.float64)

    exact = _exact_binary_rr_fallback(randomizer, gamma, "add_remove")
    if exact is None:
        return curve_delta, curve_deltas
    exact_of = exact

    def best_delta(epsilon: float) -> float:
        return min(curve_delta(epsilon), exact_of(epsilon, users))

    def best_deltas(epsilons: FloatArray) -> FloatArray:
        exact_values = np.array([exact_of(float(e), users) for e in epsilons], dtype=np.float64)
        return np.minimum(curve_deltas(epsilons), exact_values)

    return best_delta, best_deltas


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


def _exact_binary_rr(epsilon0: float, gamma: float, relation: str) -> DeltaFunction:
    """δ(ε, N) of the exact sampled binary-RR round (:mod:`dpacct_shuffle.randomizers.binary_rr_sampled`)
    where it is tractable, 1 (no information) elsewhere: it enters only minima."""

    def exact_delta(epsilon: float, n: int) -> float:
        if not is_tractable(n, gamma):
            return 1.0
        return sampled_binary_rr_profile(epsilon0, n, gamma, relation).delta(epsilon)

    return exact_delta
