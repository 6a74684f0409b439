"""Catalog entries at deployment sizes: large domains, large ε0, many users.

Each case is a value that failed before (underflow, cancellation or overflow in the entry's
parameters) with the reason it must hold: a certified upper bound is never below a certified
lower bound, and the unary encodings' levels stay valid when their products underflow.
"""

from __future__ import annotations

import math
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


_SIZED_ENTRIES = {
    "krr": lambda eps0, d: randomizers.krr(eps0, d),
    "rappor": lambda eps0, d: randomizers.rappor(eps0, d),
    "oue": lambda eps0, d: randomizers.optimized_unary_encoding(eps0, d),
    "subset_selection": lambda eps0, d: randomizers.subset_selection(eps0, d, 2 if d > 2 else 1),
    "local_hashing": lambda eps0, d: randomizers.local_hashing(eps0, min(d, 64), d),
    "hadamard_response": lambda eps0, d: randomizers.hadamard_response(eps0, 1 << d.bit_length()),
    "pckv_grr": lambda eps0, d: randomizers.pckv_grr(eps0, d, 1),
    "collision": lambda eps0, d: randomizers.collision(eps0, d, max(2, d // 2), 1),
    "sampling_rappor": lambda eps0, d: randomizers.sampling_rappor(eps0, d, max(1, d // 10)),
    "harmony": lambda eps0, d: randomizers.harmony(eps0, d),
}


@settings(max_examples=max(5, settings.default.max_examples // 10), deadline=None)
@given(st.sampled_from(sorted(_SIZED_ENTRIES)),
       st.sampled_from([2, 3, 128, 1024, 4096, 10**4, 10**6]),
       st.sampled_from([0.1, 1.0, 7.5, 50.0]),
       st.sampled_from([2, 1000, 10**6, 10**12]))
def test_every_entry_at_deployment_sizes(name: str, domain_size: int, epsilon0: float, n: int) -> None:
    """(entry, d, ε0, n) over the catalog's finite-domain entries: a value or a clear ValueError;
    finite upper ≥ lower; the upper bound non-increasing in n (n users vs 2n)."""
    try:
        entry = _SIZED_ENTRIES[name](epsilon0, domain_size)
    except ValueError as exc:  # e.g. a Bloom filter too small for the subset size
        assert any(word in str(exc) for word in ("domain_size", "num_outputs", "set_size",
                                                  "subset_size", "sample_size", "dimension"))
        return
    shuffled = entry.shuffled(n, lower_bound_max_users=1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", randomizers.LowerBoundSkippedWarning)
        lower, upper = shuffled.epsilon_interval(1e-8)
    assert math.isfinite(upper) and 0.0 <= lower <= upper <= epsilon0 * (1.0 + 1e-12)  # ln p rounded up
    if n < 10**12:
        assert entry.shuffled(2 * n).epsilon(1e-8) <= upper
