"""The core's public structure: ``VariationRatio.directional_problems`` (the problems its bound
maximises, checked against the coefficients of docs/theory.md, "Neutral-aware bound"), the δ cache
keyed by the hashable VariationRatio, and the dispatcher of ``core.numerics`` routing each regime to
its evaluator (each route checked against an independent evaluation)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpacct_shuffle import VariationRatio
from dpacct_shuffle.core import bound, cellwise, numerics
from dpacct_shuffle.core.isolated_clone import isolated_clone_bracket
from tests.oracle import pair_delta_max


def test_directional_problems_have_the_documented_coefficients() -> None:
    vr = VariationRatio(math.exp(1.0), 0.3, 3.5, q1=4.0)
    eps, n = 0.4, 25
    forward, backward = vr.directional_problems(eps, n)
    e = math.exp(eps)
    alpha, p_alpha = vr.alpha, vr.p_alpha
    assert forward.r_a == vr.r0 == p_alpha / 3.5 and backward.r_a == vr.r1 == p_alpha / 4.0
    assert forward.c_a == pytest.approx((p_alpha - e * alpha) / vr.r0, rel=1e-15)
    assert forward.c_b == pytest.approx((alpha - e * p_alpha) / vr.r1, rel=1e-15)
    assert forward.c_k == pytest.approx(vr.neutral_weight * (1.0 - e) / vr.neutral_share, rel=1e-15)
    assert vr.directional_problems(eps, n, direction=1) == [backward]
    # a symmetric pair has one direction
    assert len(VariationRatio(math.e, 0.3, math.e).directional_problems(eps, n)) == 1


@pytest.mark.parametrize("kwargs, error, match", [
    ({"epsilon": -0.1, "n": 5}, ValueError, "epsilon"),
    ({"epsilon": 0.1, "n": 0}, ValueError, "n must be"),
    ({"epsilon": 0.1, "n": 5, "direction": 2}, ValueError, "direction"),
])
def test_directional_problems_rejects_bad_input(kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        VariationRatio(math.e, 0.3, math.e).directional_problems(**kwargs)


def test_equal_variation_ratios_share_cached_brackets() -> None:
    first = VariationRatio(math.exp(0.7), 0.2, math.exp(0.7), neutral_share=0.3)
    second = VariationRatio(math.exp(0.7), 0.2, math.exp(0.7), neutral_share=0.3)
    assert first is not second and first == second and hash(first) == hash(second)
    assert {first: 1}[second] == 1
    value = first.delta(0.123456, 40)
    hits = bound._delta_bracket.cache_info().hits
    assert second.delta(0.123456, 40) == value
    assert bound._delta_bracket.cache_info().hits == hits + 1


def test_dispatcher_routes_small_problems_to_the_exact_cell_sum() -> None:
    """Below EXACT_CELL_LIMIT cells the dispatcher returns the cell-wise sum, which matches the
    brute-force pair (tests/oracle.py) to rounding."""
    vr = VariationRatio(math.exp(1.0), 0.3, math.exp(1.0), neutral_share=0.2)
    eps, n = 0.3, 12
    results = [numerics.directional_bracket(problem, 4, 1e-18)
               for problem in vr.directional_problems(eps, n)]
    assert results == [cellwise.cellwise_directional_bracket(problem, 4, 1e-18)
                       for problem in vr.directional_problems(eps, n)]
    exact = pair_delta_max(vr.p, vr.beta, vr.q0, None, vr.neutral_share, n, eps)
    upper = max(result.upper for result in results)
    assert exact <= upper <= exact * (1.0 + 1e-9) + 1e-15


def test_dispatcher_uses_the_isolated_clone_closed_form_at_huge_e_eps() -> None:
    vr = VariationRatio(math.inf, 0.4, 3.0)
    (problem,) = vr.directional_problems(200.0, 50_000)
    isolated = isolated_clone_bracket(problem)
    assert isolated is not None and numerics.directional_bracket(problem, 4, 1e-18) == isolated
    # δ → β·(1 − r_B − s)^(n − 1) (tests/test_core_edges.py)
    limit = vr.beta * (1.0 - vr.r1 - vr.neutral_share) ** (problem.n - 1)
    assert isolated.lower <= limit * (1.0 + 1e-9) and limit <= isolated.upper * (1.0 + 1e-9)


def test_binomial_kernels_are_scipy_stats_bit_for_bit() -> None:
    """core.binomial skips scipy.stats' argument handling but must return the very same floats."""
    from scipy import stats

    from dpacct_shuffle.core.binomial import binomial_cdf, binomial_pmf, binomial_sf

    rng = np.random.default_rng(7)
    for p in (0.0, 1e-9, 0.3, 0.5, 1.0 - 1e-9, 1.0):
        n = rng.integers(0, 3000, size=400).astype(float)
        k = rng.integers(-3, 3100, size=400) + rng.choice([0.0, 0.0, 0.5], size=400)
        for ours, theirs in ((binomial_pmf, stats.binom.pmf), (binomial_cdf, stats.binom.cdf),
                             (binomial_sf, stats.binom.sf)):
            assert np.array_equal(ours(k, n, p), theirs(k, n, p)), (ours.__name__, p)


def test_binomial_memo_returns_the_kernels_own_values() -> None:
    """binomial_points (the memo of repeated searches) gives bit for bit what the kernels give
    without it — the scipy.stats values for pmf/cdf/sf, betainc for the upper tail — on first use,
    on repeats and after its table grew; it declines requests too small or too spread out, and
    the memo paths of upper_tail and binomial_edge_tails agree with the direct evaluations."""
    from scipy import special, stats

    from dpacct_shuffle.core import binomial
    from dpacct_shuffle.core.binomial import binomial_edge_tails, binomial_points
    from dpacct_shuffle.core.inner_expectation import upper_tail

    rng = np.random.default_rng(11)
    direct = {"pmf": stats.binom.pmf, "cdf": stats.binom.cdf, "sf": stats.binom.sf,
              "tail": lambda k, m, p: special.betainc(k, m - k + 1.0, p)}
    for p in (0.013, 0.5, 0.87):
        for low, high in ((100, 300), (250, 700), (50, 120), (100, 300)):  # grows, then repeats
            m = rng.integers(low, high, size=500).astype(float)
            k = np.floor(m * rng.uniform(0.0, 1.0, size=500))
            for kind, evaluate in direct.items():
                inside = (k >= 1.0) if kind == "tail" else (k < m) if kind in ("cdf", "sf") else k >= 0
                found = binomial_points(kind, k[inside], m[inside], p)
                assert found is not None
                assert np.array_equal(found, evaluate(k[inside], m[inside], p)), (kind, p)
    assert binomial_points("pmf", np.arange(3.0), np.full(3, 10.0), 0.5) is None  # too few
    spread = np.array([0.0, 5e6] * 40)
    assert binomial_points("pmf", spread, spread, 0.5) is None  # rectangle beyond the cap
    assert sum(table.values.size for table in binomial._TABLES.values()) <= binomial.MEMO_TOTAL_POINTS
    m = rng.integers(0, 400, size=2000).astype(float)
    t = rng.integers(-2, 420, size=2000).astype(float)
    expected = np.where(t <= 0, 1.0, np.where(t > m, 0.0, special.betainc(
        np.clip(t, 1.0, None), np.maximum(m - t + 1.0, 1.0), 0.3)))
    assert np.array_equal(upper_tail(t, m, 0.3), expected)
    k = rng.integers(-3, 420, size=2000) + rng.choice([0.0, 0.5], size=2000)
    assert np.array_equal(binomial_edge_tails("cdf", k, m, 0.3), stats.binom.cdf(k, m, 0.3))
    assert np.array_equal(binomial_edge_tails("sf", k, m, 0.3), stats.binom.sf(k, m, 0.3))
