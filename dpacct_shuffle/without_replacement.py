"""Privacy profiles for sampling without replacement and for the Gaussian mechanism (replace-one).

Federated rounds often sample a fixed number m of the N clients uniformly at random (Flower's
``SamplingMethod.WITHOUT_REPLACEMENT``). Under the **replace-one** relation (one client's data
replaced, all others fixed) a mechanism with profile δ(ε) run on such a sample has the profile
of :func:`without_replacement_profile` (Balle, Barthe & Gaboardi, "Privacy Amplification by
Subsampling: Tight Analyses via Couplings and Divergences", NeurIPS 2018, Theorem 10; proof in
the function's docstring and in ``docs/theory.md``, section "Sampling without replacement").

:func:`gaussian_profile` is the exact profile of the Gaussian mechanism, written in the log domain
so that it can be rounded up safely; under replace-one the sensitivity of a sum of updates clipped
to norm C is 2C, so a noise multiplier σ (noise standard deviation σ·C) has ``sensitivity=2``.

Both return :class:`~dpacct_shuffle.profiles.PrivacyProfile` objects, which
:func:`~dpacct_shuffle.profiles.pld_from_profile` turns into pessimistic PLDs.
"""

from __future__ import annotations

import math

from scipy import special

from dpacct_shuffle.core.rounding import round_loss_down, round_loss_up
from dpacct_shuffle.core.validation import check_num_users, check_range
from dpacct_shuffle.profiles import PrivacyProfile

# Absolute error of scipy's log_ndtr, relative to the size of its arguments and result (it is
# accurate to a few ulps; this is a wide margin that still costs nothing visible).
_LOG_NDTR_ERROR = 1e-12


def gaussian_profile(noise_multiplier: float, sensitivity: float = 2.0) -> PrivacyProfile:
    """Exact hockey-stick profile of the Gaussian mechanism, rounded up.

    For noise N(0, σ²) and sensitivity Δ the worst pair is N(0, σ²) vs N(Δ, σ²) and (both
    directions are equal)

        δ(ε) = Φ(Δ/(2σ) − εσ/Δ) − e^ε · Φ(−Δ/(2σ) − εσ/Δ)

    (Balle & Wang, "Improving the Gaussian Mechanism for Differential Privacy", ICML 2018,
    Theorem 8). It is evaluated as e^A·(−expm1(ε + B − A)) with A, B the ``log_ndtr`` of the two
    arguments; the absolute error of A and B (a few ulps of their size) is covered by adding
    e^A·m with m = 1e-12·(1 + |A| + |B| + ε), and the result is moved up by a few ulps.

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
        shift = delta_sens / (2.0 * sigma)
        scaled = epsilon * sigma / delta_sens
        log_a = float(special.log_ndtr(shift - scaled))
        log_b = float(special.log_ndtr(-shift - scaled))
        exponent = epsilon + log_b - log_a
        value = math.exp(log_a) * (-math.expm1(min(exponent, 0.0)))
        margin = math.exp(log_a) * _LOG_NDTR_ERROR * (1.0 + abs(log_a) + abs(log_b) + epsilon)
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

    return PrivacyProfile(delta_upper, new_cap,
                          f"without_replacement({size}/{population}, {base.description})")


__all__ = ["gaussian_profile", "without_replacement_profile"]
