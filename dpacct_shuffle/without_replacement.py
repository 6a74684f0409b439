"""Privacy profiles for sampling without replacement and for the Gaussian mechanism (replace-one).

Federated rounds often sample a fixed number m of the N clients uniformly at random (Flower's
``SamplingMethod.WITHOUT_REPLACEMENT``). Under the **replace-one** relation (one client's data
replaced, all others fixed) a mechanism with profile δ(ε) run on such a sample has the profile
of :func:`without_replacement_profile` (Balle, Barthe & Gaboardi, "Privacy Amplification by
Subsampling: Tight Analyses via Couplings and Divergences", NeurIPS 2018, Theorem 10; proof in
the function's docstring and in ``docs/theory.md``, section "Sampling without replacement").
For a shuffle round on the cohort, :func:`shuffled_cohort_profile` also bounds the cohort by
Poisson-sampled rounds of the whole population (the void view of :mod:`dpacct_shuffle.sampling`)
and keeps the smaller value (``docs/theory.md``, "Cohorts from Poisson rounds").

:func:`gaussian_profile` is the exact profile of the Gaussian mechanism, written in the log domain
so that it can be rounded up safely; under replace-one the sensitivity of a sum of updates clipped
to norm C is 2C, so a noise multiplier σ (noise standard deviation σ·C) has ``sensitivity=2``.

Both return :class:`~dpacct_shuffle.profiles.PrivacyProfile` objects, which
:func:`~dpacct_shuffle.profiles.pld_from_profile` turns into pessimistic PLDs.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from dpacct_shuffle.core.binomial import binomial_sf
from dpacct_shuffle.core.gaussian import gaussian_delta_and_margin
from dpacct_shuffle.core.problem import special_function_rtol
from dpacct_shuffle.core.rounding import round_loss_down, round_loss_up
from dpacct_shuffle.core.validation import check_num_users, check_range
from dpacct_shuffle.profiles import (
    PrivacyProfile,
    RandomizerDescription,
    batched_randomizer,
    shuffle_profile,
)
from dpacct_shuffle.randomizers.binary_rr_sampled import binary_rr_cohort_profile, is_tractable
from dpacct_shuffle.sampling import binary_rr_epsilon0, void_view_profile

FloatArray = NDArray[np.float64]

# Poisson rates tried by shuffled_cohort_profile: γ = η + z·√(η(1 − η)/N) for these z (capped at
# 1), and γ = 1; γ = η was the best of z ∈ [0, 3] on the brute-force cases (tail factor ≈ 1/2)
_COHORT_RATE_SHIFTS = (0.0, 0.5, 1.0)


def gaussian_profile(noise_multiplier: float, sensitivity: float = 2.0) -> PrivacyProfile:
    """Exact hockey-stick profile of the Gaussian mechanism, rounded up.

    For noise N(0, σ²) and sensitivity Δ the worst pair is N(0, σ²) vs N(Δ, σ²) and (both
    directions are equal)

        δ(ε) = Φ(Δ/(2σ) − εσ/Δ) − e^ε · Φ(−Δ/(2σ) − εσ/Δ)

    (Balle & Wang, "Improving the Gaussian Mechanism for Differential Privacy", ICML 2018,
    Theorem 8), evaluated by :func:`~dpacct_shuffle.core.gaussian.gaussian_delta_and_margin` (log
    domain, with a margin covering scipy's ``log_ndtr``); value plus margin is moved up by a few
    ulps.

    Args:
      noise_multiplier: σ > 0, the noise standard deviation in units of the clipping norm.
      sensitivity: Δ > 0 in the same units (2 for a clipped sum under replace-one, 1 under
        add/remove-one).
    """
    sigma = check_range("noise_multiplier", noise_multiplier, 0.0, math.inf, low_open=True,
                        high_open=True)
    delta_sens = check_range("sensitivity", sensitivity, 0.0, math.inf, low_open=True,
                             high_open=True)

    def delta_upper(epsilon: float) -> float:
        if math.isinf(epsilon):  # no mass at infinite loss
            return 0.0
        value, margin = gaussian_delta_and_margin(delta_sens / (2.0 * sigma),
                                                  epsilon * sigma / delta_sens, epsilon)
        return min(1.0, round_loss_up(value + margin, zero_is_exact=False))

    return PrivacyProfile(delta_upper, math.inf,
                          f"gaussian(noise_multiplier={sigma!r}, sensitivity={delta_sens!r})")


def without_replacement_profile(base: PrivacyProfile, sample_size: int,
                                population_size: int) -> PrivacyProfile:
    """Profile of a mechanism run on m of N records sampled uniformly without replacement.

    Replace-one neighbours. With η = m/N and δ the ``base`` profile (valid for replace-one
    neighbours of size-m datasets, both directions):

        δ'(ε') = η · δ(ln(1 + (e^{ε'} − 1)/η)),      ε' ≥ 0,

    i.e. the base pair (ε, δ) becomes (ln(1 + η(e^ε − 1)), η·δ) for every ε ≥ 0 (Balle, Barthe &
    Gaboardi, NeurIPS 2018, Theorem 10).

    Proof. Let v be the replaced record. Split on whether v is sampled (probability η): the outputs
    are P = (1 − η)A + ηB and Q = (1 − η)A + ηB', where A is the law when v is not sampled (equal
    under both datasets), and B, B' the laws when it is, holding v's two values. Advanced joint
    convexity (ibid., Theorem 2) gives, with e^{ε'} = 1 + η(e^ε − 1) and θ = e^{ε'}/e^ε,
    D_{e^{ε'}}(P‖Q) = η·D_{e^ε}(B‖(1 − θ)A + θB') ≤ η·((1 − θ)D_{e^ε}(B‖A) + θ·D_{e^ε}(B‖B')).
    B vs B' is a replace-one pair on the same sample. B vs A: couple a sample containing v with
    the sample in which v is swapped for a uniformly chosen unsampled record j (this maps the
    uniform law on samples containing v onto the uniform law on samples without v); each coupled
    pair of samples differs in one record, so D_{e^ε}(B‖A) ≤ δ(ε) by joint convexity. Hence
    D_{e^{ε'}}(P‖Q) ≤ η·δ(ε); the other direction is symmetric. □

    Rounding: η = m/N is rounded up (δ' and the cap are non-decreasing in η), the base profile is
    queried at an ε rounded down (δ is non-increasing, so this is larger) and the product is
    rounded up; the cap ln(1 + η(e^{cap} − 1)) is rounded up.

    Args:
      base: profile of the mechanism on the sample (replace-one).
      sample_size: m, 1 ≤ m ≤ N.
      population_size: N.
    """
    population = check_num_users(population_size, "population_size")
    size = check_num_users(sample_size, "sample_size")
    if size > population:
        raise ValueError(f"sample_size must be <= population_size ({population}), got {size}")
    if size == population:
        return base
    eta = min(1.0, round_loss_up(size / population))  # the profile is non-decreasing in η
    cap = base.epsilon_cap
    new_cap = cap if math.isinf(cap) else round_loss_up(math.log1p(eta * math.expm1(cap)))

    def delta_upper(epsilon: float) -> float:
        inner = round_loss_down(math.log1p(math.expm1(epsilon) / eta))
        return min(1.0, round_loss_up(eta * base.delta(inner)))

    deltas_upper = None
    if base.deltas_upper is not None:
        def deltas_upper(epsilons: FloatArray) -> FloatArray:
            inner = _each(round_loss_down, np.log1p(np.expm1(epsilons) / eta))
            return np.minimum(1.0, _each(round_loss_up, eta * base.deltas(inner)))

    return PrivacyProfile(delta_upper, new_cap,
                          f"without_replacement({size}/{population}, {base.description})",
                          deltas_upper)


def _each(rounding: Callable[[float], float], values: FloatArray) -> FloatArray:
    """A scalar rounding helper of :mod:`dpacct_shuffle.core.rounding` applied to every value."""
    return np.array([rounding(float(value)) for value in values], dtype=np.float64)


def _reaches_sample_size(population: int, sample_size: int, rate: float) -> float:
    """P[Bin(N, γ) ≥ m] rounded down (scipy's sf with the special-function tolerance)."""
    tail = float(binomial_sf(sample_size - 1, population, rate))
    return max(0.0, round_loss_down(tail * (1.0 - float(special_function_rtol(population)))))


def shuffled_cohort_profile(randomizer: RandomizerDescription, sample_size: int,
                            population_size: int,
                            lowering: float | None = None) -> PrivacyProfile:
    """Profile of a shuffle round on m of N users sampled uniformly without replacement.

    Replace-one neighbours (the victim's input replaced; the cohort drawn by the shuffler or the
    clients, not known to the analyst). δ(ε) is the minimum of

    * the subsampling theorem on the m-user round (:func:`without_replacement_profile`), and
    * for each Poisson rate γ in a small set (γ = η + z·√(η(1 − η)/N), z ∈ {0, 1/2, 1}, capped
      at 1, η = m/N; and γ = 1, the unsampled N-user round),

          δ(ε) ≤ δ_γ(ε) / P[Bin(N, γ) ≥ m],

      with δ_γ the void view of the Poisson-sampled round of the population
      (:func:`dpacct_shuffle.sampling.void_view_profile`), and
    * for the ``binary_rr`` entry with γ(N − 1) ≤ 400 at γ = m/N, the exact cohort profile
      (:class:`dpacct_shuffle.randomizers.binary_rr_sampled.BinaryRRCohortProfile`: row m of
      the Poisson round's count law, certified worst case over every configuration).

    Proof of the second bound. Fix the others' inputs and the victim's pair. In the Poisson round
    the participant count C ~ Bin(N, γ) is independent of the data and visible (the number of
    reports), and given C = c the participants are a uniform c-subset of the N users: the release
    given C = c is the c-cohort round's. So the two output laws are Σ_c P[C = c]·P_c and
    Σ_c P[C = c]·Q_c with (P_c, Q_c) the c-cohort laws on disjoint supports, and
    D_{e^ε}(P‖Q) = Σ_c P[C = c]·D_{e^ε}(P_c‖Q_c). For c ≥ m the m-cohort release is a
    post-processing of the c-cohort release (keep a uniform m-subset of the c reports: a uniform
    c-subset followed by a uniform m-subset of it is a uniform m-subset), so
    D_{e^ε}(P_m‖Q_m) ≤ D_{e^ε}(P_c‖Q_c), and D_{e^ε}(P‖Q) ≥ P[C ≥ m]·D_{e^ε}(P_m‖Q_m). The
    void view bounds the left side for every configuration and both directions. □

    Cost. The tails P[Bin(N, γ) ≥ m] are computed once per rate, and the void views evaluate
    their VariationRatios with batched pair curves (one pass per rate for every ε), so a δ(ε)
    costs about one evaluation of the subsampling theorem: cheap enough for the PLD of a
    ``SampledWithoutReplacementDpEvent`` (:mod:`dpacct_shuffle.accountants`).

    Rounding: the tail P[C ≥ m] is rounded down (special-function tolerance), the quotient up.
    The cap is ε0 = ln p (the victim's local guarantee), the Poisson profiles' cap.

    With ``lowering`` η (what ``ShufflePLDAccountant`` uses: ``profiles.ROUND_LOWERING``) the
    m-user round of the theorem is evaluated by its batched pair curve
    (:func:`~dpacct_shuffle.profiles.batched_randomizer`; an upper bound on the core's, docs/theory.md,
    "Batched evaluation from the dominating pair"), and the profile
    gets an array form (``deltas_upper``) whenever the theorem's base has one: every ε of a PLD
    from one curve per rate, no point search. Without it the m-user round is the core's bound
    point by point. The void views are read at ``DEFAULT_LOWERING`` either way.

    Args:
      randomizer: anything :func:`~dpacct_shuffle.profiles.as_shuffle_bound` accepts.
      sample_size: m, 1 ≤ m ≤ N (the number of reports shuffled).
      population_size: N.
      lowering: None, or η ∈ (0, 0.01] (see above).
    """
    population = check_num_users(population_size, "population_size")
    size = check_num_users(sample_size, "sample_size")
    if size > population:
        raise ValueError(f"sample_size must be <= population_size ({population}), got {size}")
    if lowering is not None:
        lowering = check_range("lowering", lowering, 0.0, 0.01, low_open=True)
    base_randomizer = randomizer if lowering is None else batched_randomizer(randomizer, lowering)
    theorem = without_replacement_profile(shuffle_profile(base_randomizer, size), size, population)
    if size == population:
        return theorem
    eta = size / population
    spread = math.sqrt(eta * (1.0 - eta) / population)
    rates = sorted({min(1.0, eta + z * spread) for z in _COHORT_RATE_SHIFTS} | {1.0})
    routes = []
    for rate in rates:
        reach = _reaches_sample_size(population, size, rate)
        view = void_view_profile(randomizer, population, rate)
        if reach > 0.0 and view is not None:
            routes.append((view, reach))

    epsilon0 = binary_rr_epsilon0(randomizer)
    exact = (binary_rr_cohort_profile(epsilon0, size, population)
             if epsilon0 is not None and is_tractable(population, eta) else None)

    def delta_upper(epsilon: float) -> float:
        value = theorem.delta(epsilon)
        for profile, reach in routes:
            value = min(value, round_loss_up(profile.delta(epsilon) / reach, zero_is_exact=True))
        if exact is not None:
            value = min(value, exact.delta(epsilon))
        return min(1.0, value)

    deltas_upper = None
    if theorem.deltas_upper is not None and all(profile.deltas_upper is not None
                                                for profile, _ in routes):
        def deltas_upper(epsilons: FloatArray) -> FloatArray:
            value = theorem.deltas(epsilons)
            for profile, reach in routes:
                quotient = _each(functools.partial(round_loss_up, zero_is_exact=True),
                                 profile.deltas(epsilons) / reach)
                value = np.minimum(value, quotient)
            if exact is not None:
                value = np.minimum(value, [exact.delta(float(e)) for e in epsilons])
            return np.minimum(1.0, value)

    cap = min([theorem.epsilon_cap] + [profile.epsilon_cap for profile, _ in routes])
    return PrivacyProfile(delta_upper, cap,
                          f"shuffled_cohort({size}/{population}, {theorem.description})",
                          deltas_upper)


__all__ = ["gaussian_profile", "shuffled_cohort_profile", "without_replacement_profile"]
