"""Catalog entries for multi-message shuffle protocols, with the parameters published in Wang et
al., arXiv:2304.05007 (upper bounds only: no lower-bound instance)."""

from __future__ import annotations

import math
import sys

from dpacct_shuffle.core.bound import VariationRatio
from dpacct_shuffle.core.rounding import ratio_up
from dpacct_shuffle.core.validation import check_range
from dpacct_shuffle.randomizers.base import Randomizer
from dpacct_shuffle.randomizers.catalog.entry import (catalog_entry, integer_parameter,
                                                      single_entry)


@catalog_entry
def balcer_binary_summation(coin_probability: float) -> Randomizer:
    """Balcer et al. binary summation with coin probability c: p = ∞, β = 1, q = max(1/c, 1/(1−c))."""
    c = check_range("coin_probability", coin_probability, 0.0, 1.0, low_open=True, high_open=True)
    q = max(1.0 / c, 1.0 / (1.0 - c))
    if not math.isfinite(q):
        raise ValueError(f"coin_probability must be in (1/{sys.float_info.max!r}, 1) so that "
                         f"1/coin_probability is a finite float, got {c!r}")
    vr = VariationRatio(math.inf, 1.0, q)
    return single_entry("balcer_binary_summation", {"coin_probability": c}, vr,
                   published=(math.inf, 1.0, q, q), notes="multi-message; no lower-bound instance")


@catalog_entry
def cheu_binary_summation(flip_probability: float) -> Randomizer:
    """Cheu et al. binary summation with flip probability f ∈ (0, 1/2):
    p = (1 − f)²/f², β = 1 − 2f, q = (1 − f)/f."""
    f = check_range("flip_probability", flip_probability, 0.0, 0.5, low_open=True, high_open=True)
    if f < 1e-154:  # below it p overflows, and f**2 underflows to 0 below 1e-162
        raise ValueError(f"flip_probability must be at least 1e-154 so that ((1 - f)/f)**2 is a "
                         f"finite float, got {f!r}")
    p, beta, q = (1.0 - f) ** 2 / f**2, 1.0 - 2.0 * f, (1.0 - f) / f
    vr = VariationRatio(ratio_up(p), beta, ratio_up(q))
    return single_entry("cheu_binary_summation", {"flip_probability": f}, vr, published=(p, beta, q, q),
                   notes="multi-message; no lower-bound instance")


@catalog_entry
def balls_into_bins(num_bins: int, num_special: int) -> Randomizer:
    """Balls-into-bins with d bins, s special: p = ∞, β = 1, q = d/s (needs 2s ≤ d: r0 + r1 ≤ 1)."""
    d = integer_parameter("num_bins", num_bins, 2)
    s = integer_parameter("num_special", num_special, 1, d // 2)
    q = d / s
    vr = VariationRatio(math.inf, 1.0, q)
    return single_entry("balls_into_bins", {"num_bins": d, "num_special": s}, vr,
                   published=(math.inf, 1.0, q, q), notes="multi-message; no lower-bound instance")


@catalog_entry
def mix_dump(flip_probability: float, num_bins: int) -> Randomizer:
    """mixDUMP with flip probability f on d bins: p = (1 − f)(d − 1)/f,
    β = ((1 − f)(d − 1) − f)/(d − 1), q = (1 − f)d; f ∈ (0, (d − 1)/d) so that p > 1."""
    d = integer_parameter("num_bins", num_bins, 2)
    f = check_range("flip_probability", flip_probability, 0.0, (d - 1.0) / d,
                    low_open=True, high_open=True)
    p = (1.0 - f) * (d - 1.0) / f
    beta = ((1.0 - f) * (d - 1.0) - f) / (d - 1.0)
    q = (1.0 - f) * d
    vr = VariationRatio(ratio_up(p), beta, ratio_up(q))
    return single_entry("mix_dump", {"flip_probability": f, "num_bins": d}, vr,
                   published=(p, beta, q, q), notes="multi-message; no lower-bound instance")


__all__ = [
    "balcer_binary_summation",
    "cheu_binary_summation",
    "balls_into_bins",
    "mix_dump",
]
