"""Catalog entries for whole classes of randomizers: every ε0-LDP randomizer and every randomizer
with a given metric-LDP guarantee (notation: :mod:`dpacct_shuffle.randomizers.catalog`)."""

from __future__ import annotations

import math

from dpacct_shuffle.core.bound import VariationRatio
from dpacct_shuffle.core.validation import check_epsilon0
from dpacct_shuffle.randomizers.base import Randomizer
from dpacct_shuffle.randomizers.catalog.entry import (binary_rr_lower, catalog_entry, ratio_up,
                                                      single_entry)


@catalog_entry
def worst_case_ldp(epsilon0: float) -> Randomizer:
    """Any ε0-LDP randomizer: p = q = e^ε0, β = (e^ε0 − 1)/(e^ε0 + 1) (w = 0, s irrelevant).

    Valid for every ε0-LDP randomizer: its TV is at most (e − 1)/(e + 1) and the bound is
    non-decreasing in β (docs/theory.md, "Monotonicity in β"). Lower bound: binary randomized
    response is ε0-LDP, so its exact shuffled profile (:class:`BinaryRRProfile`) is a lower bound
    for the class.
    """
    eps0 = check_epsilon0(epsilon0)
    vr = VariationRatio.worst_case(eps0)
    return single_entry("worst_case_ldp", {"epsilon0": eps0}, vr, lower=binary_rr_lower(eps0),
                   published=(vr.p, vr.beta, vr.q0, vr.q1),
                   notes="class of all eps0-LDP randomizers; lower bound from binary RR")


@catalog_entry
def metric_ldp(d01: float, d0_max: float, d1_max: float | None = None) -> Randomizer:
    """General metric-LDP randomizer: R(a) ≤ e^{d(a,b)} R(b).

    p = e^{d01}, β = (e^{d01} − 1)/(e^{d01} + 1), q0 = e^{d0_max}, q1 = e^{d1_max} where
    dj_max = max over users' inputs c of d(x^j, c) (≥ d01, since x^{1−j} is a possible input).
    Worst-case β for p, so w = 0. No finite instance: lower bound 0.
    """
    dist = check_epsilon0(d01, "d01")
    d0 = check_epsilon0(d0_max, "d0_max")
    d1 = d0 if d1_max is None else check_epsilon0(d1_max, "d1_max")
    for name, value in (("d0_max", d0), ("d1_max", d1)):
        if value < dist:
            raise ValueError(f"{name} must be >= d01 = {dist!r}, got {value!r}")
    p = math.exp(dist)
    beta = math.tanh(dist / 2.0)
    vr = VariationRatio(ratio_up(p), beta, ratio_up(math.exp(d0)), q1=ratio_up(math.exp(d1)))
    return single_entry("metric_ldp", {"d01": dist, "d0_max": d0, "d1_max": d1}, vr,
                   published=(p, beta, math.exp(d0), math.exp(d1)))


__all__ = [
    "worst_case_ldp",
    "metric_ldp",
]
