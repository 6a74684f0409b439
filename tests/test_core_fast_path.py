"""The fast evaluation path of the core against its reference path and published values.

* Recurrences (``advance_chains``): carried binomial tails/point probabilities agree with scipy's
  incomplete beta / pmf within the running error bound the chain reports.
* Inner expectation identity: g = (x·c·π + y)·P[A ≥ t] + x(1 − π)·t·P[A = t] against direct sums.
* Fast vs reference brackets (``_delta_bracket(..., reference=True)`` sums every (C, band) term with
  special functions): on random parameter sets the two brackets overlap and the fast upper bound is
  within the requested rtol of the truth.
* ``epsilon``: the returned ε is certified feasible and ε·(1 − rtol) is not.
* Published-pair reference values (tests/data, provenance in tests/data/README.md): worst case inside the
  published [lower, upper]; grr/oue (valid bounds) at or above lower and within 1% above upper.
"""

from __future__ import annotations

import csv
import math
import pathlib

import numpy as np
import pytest
from scipy import special, stats

from dpacct_shuffle import VariationRatio
from dpacct_shuffle.core import bound, cellwise, chains, inner_expectation, tails
from dpacct_shuffle.core.problem import special_function_rtol

REFERENCE_CSV = pathlib.Path(__file__).resolve().parent / "data" / "published_pair_delta_1e-8.csv"
RTOL = 1e-3


# ---------------------------------------------------------------------------------------------
# recurrences
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("c0,pi,fraction", [
    (50, 0.3, 0.45), (400, 0.5, 0.55), (3_000, 0.27, 0.29), (200_000, 0.5, 0.503),
    (2_000_000, 0.5, 0.4985), (50_000_000, 0.2689, 0.2693), (1_000, 0.8, 0.95), (10_000, 0.05, 0.02),
])
def test_carried_tails_within_reported_error(c0, pi, fraction):
    """Chains along c with t(c) = floor(fraction·c) + 1 (steps of 0 or 1), 256 steps from an anchor."""
    offsets = np.array([-40.0, -5.0, 0.0, 3.0, 17.0])
    c = np.full(offsets.shape, float(c0))
    t = np.clip(np.floor(fraction * c) + 1.0 + offsets, 1.0, c)
    state = chains.anchor_chains(c, t, pi)
    widest = 0.0
    for step in range(1, 257):
        c_next = c0 + step
        t_next = np.minimum(state.t + (np.floor(fraction * c_next) - np.floor(fraction * (c_next - 1))),
                            c_next)
        state = chains.advance_chains(state, np.full(offsets.shape, c_next - 1.0), t_next, pi)
        exact_tail = special.betainc(state.t, c_next - state.t + 1.0, pi)
        exact_pmf = stats.binom.pmf(state.t, c_next, pi)
        own_error = special_function_rtol(c_next)  # of the values compared against
        tail_gap = np.abs(state.tail - exact_tail)
        allowed = state.tail_error + own_error * exact_tail
        assert np.all(tail_gap <= allowed), (step, tail_gap, allowed)
        pmf_gap = np.abs(state.pmf - exact_pmf)
        assert np.all(pmf_gap <= (state.pmf_rtol + own_error) * exact_pmf), (step, pmf_gap)
        widest = max(widest, float(np.max(state.tail_error / exact_tail)))
    if c0 >= 3_000:
        # in the bulk the reported bound stays informative over a whole block (no re-anchoring)
        assert widest <= 1e-9


def test_inner_expectation_identity_against_direct_sum():
    rng = np.random.default_rng(7)
    for _ in range(200):
        c = int(rng.integers(1, 300))
        pi = float(rng.uniform(0.02, 0.98))
        x = float(rng.uniform(0.1, 5.0))
        y = -float(rng.uniform(0.0, x * c))
        t = float(math.floor(-y / x) + 1)
        a = np.arange(c + 1)
        want = float(np.sum(np.maximum(x * a + y, 0.0) * stats.binom.pmf(a, c, pi)))
        state = chains.anchor_chains(np.array([float(c)]), np.array([t]), pi)
        if t > c:
            assert want == 0.0
            continue
        lo, up = chains.chain_inner_expectation(state, np.array([float(c)]), np.array([y]), x, pi)
        ref_lo, ref_up = inner_expectation.inner_expectation(np.array([float(c)]), np.array([0.0]), x, y / c,
                                                    0.0, pi)
        assert lo[0] <= want * (1 + 1e-12) + 1e-300 and up[0] >= want * (1 - 1e-12)
        assert up[0] - lo[0] <= 1e-6 * want + 1e-300  # cancellation-limited, still informative
        assert ref_lo[0] <= up[0] and lo[0] <= ref_up[0]


# ---------------------------------------------------------------------------------------------
# fast path vs reference path
# ---------------------------------------------------------------------------------------------


def _random_case(rng: np.random.Generator) -> tuple[VariationRatio, int]:
    eps0 = float(rng.uniform(0.3, 4.0))
    p = math.exp(eps0)
    beta = float(rng.uniform(0.05, 1.0)) * (p - 1.0) / (p + 1.0)
    q0 = p * float(rng.uniform(1.0, 1.5))
    q1 = q0 if rng.random() < 0.6 else p * float(rng.uniform(1.0, 1.5))
    probe = VariationRatio(p, beta, q0, q1=q1)
    kind = rng.integers(0, 3)
    if kind == 0:
        share = None  # generic w/max(q)
    elif kind == 1:
        share = float(rng.uniform(0.0, 1.0)) * max(0.0, 1.0 - probe.r0 - probe.r1)
    else:
        share = 0.0
    n = int(10 ** rng.uniform(math.log10(50), 5))
    return VariationRatio(p, beta, q0, q1=q1, neutral_share=share), n


def _eps_grid(vr: VariationRatio, n: int) -> list[float]:
    mu = vr.beta * math.sqrt((1 / vr.r0 + 1 / vr.r1) / n)
    return [z * mu for z in (0.5, 2.0, 4.0) if z * mu < vr.epsilon0]


@pytest.mark.parametrize("seed", range(12))
def test_fast_bracket_consistent_with_reference(seed):
    rng = np.random.default_rng(1000 + seed)
    vr, n = _random_case(rng)
    for eps in _eps_grid(vr, n):
        ref = bound._delta_bracket(vr, eps, n, RTOL, reference=True)
        fast = bound._delta_bracket(vr, eps, n, RTOL)
        context = f"{vr!r}, n={n}, eps={eps!r}: reference={ref}, fast={fast}"
        assert fast.upper >= ref.lower * (1 - 1e-12), context
        assert fast.lower <= ref.upper * (1 + 1e-12), context
        # the truth is at most ref.upper and at least fast.lower: the fast bracket is rtol-narrow
        assert fast.upper <= ref.upper / (1 - RTOL), context


@pytest.mark.parametrize("n", [30_000, 100_000])
def test_fast_bracket_krr_and_worst_case_against_reference(n):
    for eps0 in (1.0, 4.0):
        p = math.exp(eps0)
        krr = VariationRatio(p, (p - 1) / (p + 99), p, neutral_share=98 / (p + 99))
        for vr in (krr, VariationRatio.worst_case(eps0)):
            for eps in _eps_grid(vr, n):
                ref = bound._delta_bracket(vr, eps, n, RTOL, reference=True)
                fast = bound._delta_bracket(vr, eps, n, RTOL)
                assert ref.lower * (1 - 1e-12) <= fast.upper <= ref.upper / (1 - RTOL)
                assert fast.lower <= ref.upper * (1 + 1e-12)


def test_chernoff_bound_is_above_the_certified_value():
    rng = np.random.default_rng(99)
    for _ in range(20):
        vr, n = _random_case(rng)
        for eps in _eps_grid(vr, min(n, 3_000)):
            for problem in vr.directional_problems(eps, min(n, 3_000)):
                exact = cellwise.cellwise_directional_bracket(problem, 16, 1e-30)
                assert math.exp(tails.chernoff_log_upper(problem)) >= exact.lower


def test_deltas_equal_pointwise_delta():
    p = math.exp(2.0)
    vr = VariationRatio(p, (p - 1) / (p + 99), p, neutral_share=98 / (p + 99))
    grid = [1e-4, 2e-4, 4e-4, 8e-4]
    curve = vr.deltas(grid, 10**7)
    assert curve == [vr.delta(eps, 10**7) for eps in grid]
    assert all(a >= b for a, b in zip(curve, curve[1:]))
    with pytest.raises(ValueError, match="epsilons"):
        vr.deltas([0.1, -1.0], 100)


# ---------------------------------------------------------------------------------------------
# epsilon search
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps0,n", [(1.0, 10_000), (4.0, 1_000_000), (2.0, 100_000_000)])
def test_epsilon_is_certified_and_tight(eps0, n):
    delta, rtol = 1e-8, 1e-4
    p = math.exp(eps0)
    for vr in (VariationRatio.worst_case(eps0),
               VariationRatio(p, (p - 1) / (p + 99), p, neutral_share=98 / (p + 99))):
        eps = vr.epsilon(delta, n, rtol=rtol)
        tail = 1e-6 * delta
        at = bound._delta_bracket(vr, eps, n, bound._SEARCH_RTOL, tail)
        below = bound._delta_bracket(vr, eps * (1 - rtol), n, bound._SEARCH_RTOL, tail)
        assert at.upper <= delta < below.upper
        # and the public delta (its own rtol) agrees that eps is feasible
        assert vr.delta(eps, n) <= delta * (1 + bound._SEARCH_RTOL)


# ---------------------------------------------------------------------------------------------
# published reference values
# ---------------------------------------------------------------------------------------------


def _reference_rows() -> list[dict[str, str]]:
    with REFERENCE_CSV.open() as handle:
        return list(csv.DictReader(handle))


def test_published_pair_reference_values():
    """All 12 rows (n = 1e4 and 1e6, δ = 1e-8).

    * our evaluation of the *published* pair (s = 1 − r0 − r1) lands in the authors' [lower, upper];
    * worst case: every variant coincides, so the valid bound is in [lower, upper] too;
    * grr with the valid k-RR share s = (d − 2)α, oue with the generic share w/q: never below lower;
      grr within 1% above upper; oue with the generic share is looser where the generic share is far
      from the published one (ε0 = 4, n = 1e4: 3.5% above) -- that gap is the share's, not the
      evaluation's: the reference path confirms that ε·(1 − 2e-3) is infeasible (the catalog's
      OUE adds the two-neutral-type bound, which is within 1%: tests/test_neutral_parts.py).
    """
    rows = _reference_rows()
    assert len(rows) == 12
    for row in rows:
        p, beta, q = float(row["p"]), float(row["beta"]), float(row["q"])
        n, delta = int(row["n"]), float(row["delta"])
        low, high = float(row["published_pair_eps_lower"]), float(row["published_pair_eps_upper"])
        published = bound.published_pair(p, beta, q).epsilon(delta, n)
        context = f"{row['randomizer']} eps0={row['epsilon0']} n={n}: [{low}, {high}]"
        assert low * (1 - 1e-4) <= published <= high, f"published pair {published!r}, {context}"
        if row["randomizer"] == "grr":
            d = int(row["domain"])
            vr = VariationRatio(p, beta, q, neutral_share=(d - 2) * beta / (p - 1))
        else:
            vr = VariationRatio(p, beta, q)
        eps = vr.epsilon(delta, n)
        context = f"eps={eps!r}, {context}"
        if row["randomizer"] == "worst_case_ldp":
            assert low * (1 - 1e-4) <= eps <= high, context
            continue
        assert eps >= low, context
        if row["randomizer"] == "grr" or n == 1_000_000:
            assert eps <= 1.01 * high, context
        if n == 10_000:
            below = bound._delta_bracket(vr, eps * (1 - 2e-3), n, RTOL, 1e-6 * delta,
                                         reference=True)
            assert below.lower > delta, context
