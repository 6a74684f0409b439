"""Catalog entries for numeric inputs: the Laplace mechanism (LDP and metric LDP), the piecewise
mechanism, Duchi et al. and Harmony (notation: :mod:`dpacct_shuffle.randomizers.catalog`)."""

from __future__ import annotations

import math

from dpacct_shuffle.core.bound import VariationRatio
from dpacct_shuffle.core.rounding import ratio_up, step_down
from dpacct_shuffle.core.validation import check_epsilon0
from dpacct_shuffle.randomizers.base import Randomizer
from dpacct_shuffle.randomizers.catalog.entry import (Projection, binary_rr_lower, boost_projection,
                                                      catalog_entry, integer_parameter,
                                                      projection_lower, single_entry)
from dpacct_shuffle.randomizers.laplace_levels import MAX_DISTANCE, LaplaceBlanketBound
from dpacct_shuffle.randomizers.multilevel import blanket_variation_ratio


@catalog_entry
def laplace(epsilon0: float) -> Randomizer:
    """Laplace mechanism on [0, 1]: y = x + Lap(1/ε0). p = q = e, β = 1 − e^{−ε0/2} (published).

    TV of two Laplace laws whose centres are Δ·scale apart is 1 − e^{−Δ/2}; the worst pair is
    (0, 1). The blanket min_x f_x(y) = e^{−ε0/2}·(ε0/2)·e^{−ε0|y − 1/2|} has mass
    γ = e^{−ε0/2} = 1 − β: the clone pair of
    :func:`~dpacct_shuffle.randomizers.multilevel.blanket_variation_ratio` (neutral share w, not
    the generic w/e; at ε0 = 4, n = 1e3, δ = 1e-6 upper ε 1.767 → 1.577), and the extreme pair
    (0, 1) dominates every pair at every ε: its whole privacy-loss spectrum is evaluated by
    :class:`~dpacct_shuffle.randomizers.laplace_levels.LaplaceBlanketBound` (a fallback;
    1.577 → 1.213 there).
    Lower bound: pair (0, 1), others all at 0, projected to
    {y < 1/2} (binary) or to the two tails {y ≤ 1/2 − w}, {y ≥ 1/2 + w} for w ∈ {0.2, 0.3, 0.4}
    (:func:`_laplace_tails_projection`; ε0 = 4, n = 1e4, δ = 1e-8: lower ε 0.29, was 0.17).
    """
    eps0 = check_epsilon0(epsilon0)
    return _laplace("laplace", eps0, eps0, {"epsilon0": eps0})


@catalog_entry
def metric_laplace(d01: float, d_max: float) -> Randomizer:
    """Metric-LDP Laplace on R with d(x, x') = |x − x'|/scale: victim distance d01, the largest
    distance from a victim input to any user's input d_max ≥ d01.

    p = e^{d01}, β = 1 − e^{−d01/2}, q = e^{d_max} (published). Generic neutral share; with
    d_max = d01 the inputs lie in an interval of length d01 and the entry is ``laplace(d01)``'s
    analysis (blanket clone pair and the fallback
    :class:`~dpacct_shuffle.randomizers.laplace_levels.LaplaceBlanketBound`).
    """
    dist = check_epsilon0(d01, "d01")
    dmax = check_epsilon0(d_max, "d_max")
    if dmax < dist:
        raise ValueError(f"d_max must be >= d01 = {dist!r}, got {dmax!r}")
    return _laplace("metric_laplace", dist, dmax, {"d01": dist, "d_max": dmax})


def _laplace(name: str, d01: float, dmax: float, params: dict[str, object]) -> Randomizer:
    p, q = math.exp(d01), math.exp(dmax)
    beta = -math.expm1(-d01 / 2.0)
    if d01 == dmax:
        # inputs in an interval of length d01·scale: the blanket is e^{−d01/2} times the Laplace
        # law centred at the midpoint (min over x of e^{−|y − x|} = e^{−1/2 − |y − 1/2|} in units)
        vr = blanket_variation_ratio(ratio_up(p), math.exp(-d01 / 2.0))
    else:
        vr = VariationRatio(ratio_up(p), beta, ratio_up(q))
    half_tail = 0.5 * math.exp(-d01 / 2.0)
    victim0, victim1 = (1.0 - half_tail, half_tail), (half_tail, 1.0 - half_tail)
    lower = projection_lower(victim0, victim1, [victim0], f"{name}: sign of y - midpoint",
                              extra=[_laplace_tails_projection(d01, w) for w in _LAPLACE_GAPS])
    randomizer = single_entry(name, params, vr, lower=lower, published=(p, beta, q, q))
    if d01 == dmax and d01 <= MAX_DISTANCE:
        randomizer = randomizer.with_fallbacks(LaplaceBlanketBound(d01))
    return randomizer


_LAPLACE_GAPS = (0.2, 0.3, 0.4)


def _laplace_tails_projection(distance: float, gap: float) -> Projection:
    """Laplace laws of unit scale centred at x⁰ = 0 and x¹ = D (``distance``), others all at x⁰:
    S0 = (−∞, t0], S1 = [t1, ∞), t0 = D(1/2 − w), t1 = D(1/2 + w), w = ``gap`` ∈ [0, 1/2]
    (the middle band (t0, t1), where the two laws are nearly equally likely, is dropped).

    For 0 ≤ t0 ≤ t1 ≤ D: P_0(Y ≤ t0) = 1 − e^{−t0}/2, P_0(Y ≥ t1) = e^{−t1}/2,
    P_D(Y ≤ t0) = e^{−(D − t0)}/2, P_D(Y ≥ t1) = 1 − e^{−(D − t1)}/2 (Laplace CDF on each side
    of its centre); the others have the law of x⁰.
    """
    t0, t1 = distance * (0.5 - gap), distance * (0.5 + gap)
    at_zero = (1.0 - 0.5 * math.exp(-t0), 0.5 * math.exp(-t1))
    at_distance = (0.5 * math.exp(-(distance - t0)), 1.0 - 0.5 * math.exp(-(distance - t1)))
    return (at_zero, at_distance, at_zero)


@catalog_entry
def piecewise(epsilon0: float) -> Randomizer:
    """Piecewise mechanism on [−1, 1] (Wang et al. 2019): output in [−C, C], C = (h + 1)/(h − 1),
    h = e^{ε0/2}; density p_hi = (e − h)/(2h + 2) on [l(x), l(x) + C − 1], l(x) = (C + 1)x/2 − (C − 1)/2,
    and p_hi/e elsewhere.

    For x = ±1 the high intervals [−C, −1] and [1, C] are disjoint, so
    β = (p_hi − p_hi/e)(C − 1) = (e − 1)/(e + h) (published), p = q = e. Every density is at least
    p_hi/e on [−C, C]: a blanket of mass γ = 2C·p_hi/e = 1 − β, and the clone pair of
    :func:`~dpacct_shuffle.randomizers.multilevel.blanket_variation_ratio` (neutral share w, not
    the generic w/e; at ε0 = 4, n = 1e3, δ = 1e-6 upper ε 1.767 → 1.577).
    Lower bound: project onto ([−C, −1], [1, C], rest), others at −1; and others all at 0, whose
    high interval is [−(C − 1)/2, (C − 1)/2], with the restricted sets S0 = [−C, −m],
    S1 = [m, C], m = max(1, (C − 1)/2), of length L = C − m each (:func:`boost_projection`):
    S0 lies in −1's high interval and outside those of 1 and 0, so the masses are
    x⁰ = −1: (p_hi·L, p_lo·L), x¹ = 1: (p_lo·L, p_hi·L), others (p_lo·L, p_lo·L), p_lo = p_hi/e
    (ε0 = 4, n = 1e4, δ = 1e-8: lower ε 0.483, was 0.375; upper 0.4831).
    """
    eps0 = check_epsilon0(epsilon0)
    e, h = math.exp(eps0), math.exp(eps0 / 2.0)
    beta = (e - 1.0) / (e + h)
    big_c = (h + 1.0) / (h - 1.0)
    p_hi = (e - h) / (2.0 * h + 2.0)
    # γ = 2C·p_hi/e = e^{−ε0/2} in closed form: the product loses a relative u/(h − 1) to the
    # cancellation in h − 1 (ε0 = 1e-6: below 2/(e + 1), refused), so the larger of the two
    # (the closed form rounded down) is used
    blanket = max(2.0 * big_c * p_hi / e, step_down(math.exp(-eps0 / 2.0)))
    vr = blanket_variation_ratio(ratio_up(e), blanket)
    if h < 4.0:
        hi_mass, lo_mass = p_hi * (big_c - 1.0), p_hi / e * (big_c - 1.0)
    else:  # C − 1 loses a relative u·h to cancellation (a mass above 1 from ε0 ≈ 40): in closed
        # form, p_hi·(C − 1) = (e − h)/(e − 1) = h/(h + 1) and p_hi·(C − 1)/e = 1/(h(h + 1))
        hi_mass, lo_mass = h / (h + 1.0), 1.0 / (h * (h + 1.0))
    victim0, victim1 = (hi_mass, lo_mass), (lo_mass, hi_mass)
    if h < 4.0:
        outside_middle = big_c - max(1.0, (big_c - 1.0) / 2.0)  # length of S0 = S1, others at 0
        middle = boost_projection(p_hi, p_hi / e, outside_middle, outside_middle)
    else:  # (C − 1)/2 = 1/(h − 1) < 1: S0 = [−C, −1], S1 = [1, C], the victims' high intervals
        middle = boost_projection(hi_mass, lo_mass, 1.0, 1.0)
    lower = projection_lower(victim0, victim1, [victim0], "piecewise: high intervals of -1 and 1",
                              extra=[middle])
    return single_entry("piecewise", {"epsilon0": eps0}, vr, lower=lower, published=(e, beta, e, e))


@catalog_entry
def duchi(epsilon0: float) -> Randomizer:
    """Duchi et al. (1-D): output ±B with P(+B | x) = 1/2 + x(e − 1)/(2(e + 1)), x ∈ [−1, 1].

    Worst-case β = (e − 1)/(e + 1), p = q = e. On inputs ±1 it is binary randomized response, so
    the binary RR profile is a lower bound.
    """
    eps0 = check_epsilon0(epsilon0)
    vr = VariationRatio.worst_case(eps0)
    return single_entry("duchi", {"epsilon0": eps0}, vr, lower=binary_rr_lower(eps0),
                   published=(vr.p, vr.beta, vr.q0, vr.q1))


@catalog_entry
def harmony(epsilon0: float, dimension: int) -> Randomizer:
    """Harmony (Nguyen et al. 2016): sample one of the `dimension` coordinates, report Duchi's ±
    on it. Worst-case β, p = q = e (inputs (1, …, 1) vs (−1, …, −1) give binary RR on the sign,
    which is also the lower-bound instance).
    """
    eps0 = check_epsilon0(epsilon0)
    dim = integer_parameter("dimension", dimension, 1)
    vr = VariationRatio.worst_case(eps0)
    return single_entry("harmony", {"epsilon0": eps0, "dimension": dim}, vr,
                   lower=binary_rr_lower(eps0), published=(vr.p, vr.beta, vr.q0, vr.q1))


__all__ = [
    "laplace",
    "metric_laplace",
    "piecewise",
    "duchi",
    "harmony",
]
