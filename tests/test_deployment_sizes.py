"""Catalog entries at deployment sizes: large domains, large ε0, many users.

Each case is a value that failed before (underflow, cancellation or overflow in the entry's
parameters) with the reason it must hold: a certified upper bound is never below a certified
lower bound, and the unary encodings' levels stay valid when their products underflow.
"""

from __future__ import annotations

import math
import pytest

from dpacct_shuffle import randomizers
from dpacct_shuffle.core.multilevel import PrivacyLossLevels
from dpacct_shuffle.randomizers.multilevel import MultiLevelBound


@pytest.mark.parametrize("entry", [randomizers.rappor, randomizers.optimized_unary_encoding])
@pytest.mark.parametrize("domain_size", [1000, 10**6])
def test_unary_encodings_at_large_domains(entry, domain_size: int) -> None:
    # t·f^(d−1) underflows: the all-ones level merges into the (0, 0) level (same ratios)
    shuffled = entry(1.0, domain_size).shuffled(1000)
    lower, upper = shuffled.epsilon_interval(1e-8)
    assert 0.0 < lower <= upper < 1.0
    # the bound does not depend on d beyond the levels (only bits x⁰, x¹ differ)
    assert upper == entry(1.0, 100).shuffled(1000).epsilon(1e-8)


def test_unary_levels_keep_every_level_of_unequal_ratios() -> None:
    levels = [bound for bound in randomizers.rappor(1.0, 10**6).fallbacks
              if isinstance(bound, MultiLevelBound)][0].level_sets[0]
    assert isinstance(levels, PrivacyLossLevels)
    ratio = math.exp(1.0)  # ρ = a²/b² = e^ε0 for RAPPOR
    found = sorted(zip(levels.ratios0.tolist(), levels.ratios1.tolist()))
    expected = sorted([(ratio, 1.0), (1.0, ratio), (1.0, 1.0), (ratio, ratio)])
    assert [x for pair in found for x in pair] == pytest.approx([x for pair in expected for x in pair])
    assert math.fsum((levels.ratios0 * levels.masses).tolist()) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("entry, epsilon0", [
    (entry, eps0) for entry in (randomizers.rappor, randomizers.optimized_unary_encoding)
    for eps0 in (20.0, 50.0, 100.0, 300.0, 400.0)] + [(randomizers.rappor, 500.0)])
def test_large_epsilon0_lower_below_upper(entry, epsilon0: float) -> None:
    lower, upper = entry(epsilon0, 100).shuffled(1000).epsilon_interval(1e-8)
    assert 0.0 < lower <= upper <= epsilon0


def test_oue_at_epsilon0_50_matches_its_identifying_event() -> None:
    # OUE, ε0 = 50, n = 1000: the victim's own bit is seen in the count of x¹ w.p. ½, the others
    # set it w.p. c ≈ e^-50 each, so ε(1e-8) ≈ ln(1/(n·c)) ≈ 50 − ln 1000 = 43.1 — far below
    # ε0 (a lower bound of ≈ 50 came from θ = π0/(π0 + π1) rounded to 1)
    lower, upper = randomizers.optimized_unary_encoding(50.0, 100).shuffled(1000).epsilon_interval(1e-8)
    assert 43.0 < lower <= upper < 44.5


def test_rappor_multilevel_bound_at_the_catalog_maximum() -> None:
    # e^ε·ρ overflows in the levels' atoms: the atom is clamped at −max float, not NaN
    bound = [b for b in randomizers.rappor(500.0, 100).fallbacks if isinstance(b, MultiLevelBound)][0]
    assert bound.epsilon(1e-8, 1000) == pytest.approx(500.0, rel=1e-9)
