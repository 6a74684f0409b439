"""Composed ε at tiny δ (down to 1e-15): certified tails, continuity, soundness.

* :func:`dpacct_shuffle.pld_composition.certified_convolution` against the exact (direct, all
  terms non-negative) convolution: its right tail dominates the exact one and stays within one
  block of it, where the plain FFT's tail is rounding noise;
* composed shuffle rounds: ε(δ) continuous down to δ = 1e-15 (no jump to the Σ ε0 cap or to
  infinity), above a certified lower bound (one neighbouring pair composed exactly, losses rounded
  down), and δ(ε(δ)) ≤ δ (docs/theory.md, "Tiny δ: certified tails").
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.privacy_accountant import NeighboringRelation as NR
from scipy import fft as sp_fft
from scipy import stats

from dpacct_shuffle import VariationRatio
from dpacct_shuffle import pld_composition
from dpacct_shuffle.accountants import ShufflePLDAccountant
from dpacct_shuffle.events import ShuffleEvent
from dpacct_shuffle.randomizers import binary_rr, binary_rr_exact_delta


def _survival(probs: np.ndarray) -> np.ndarray:
    return np.cumsum(probs[::-1])[::-1]


def test_certified_convolution_tail_dominates_the_exact_one_where_fft_is_noise() -> None:
    first = stats.binom.pmf(np.arange(1501), 1500, 0.3)
    second = stats.binom.pmf(np.arange(901), 900, 0.6)
    exact = np.convolve(first, second)  # direct: every term non-negative, relative accuracy
    ours = pld_composition.certified_convolution(first, second)
    size = len(exact)
    plain = sp_fft.irfft(sp_fft.rfft(first, 4096) * sp_fft.rfft(second, 4096), 4096)[:size]
    assert np.all(ours >= 0.0)
    exact_tail, ours_tail, plain_tail = _survival(exact), _survival(ours), _survival(plain)
    start = int(np.flatnonzero(plain > pld_composition.TRUSTED_FRACTION * plain.max())[-1]) + 1
    for k in range(start, size):
        if exact_tail[k] < 1e-250:
            break
        assert ours_tail[k] >= exact_tail[k] * (1 - 1e-12), k
        # within one block, plus one chunk of the exact sums' rounding up
        width = max(pld_composition.MIN_BLOCK,
                    int((k - start) * pld_composition.BLOCK_FRACTION))
        chunk = -(-max(len(first), len(second)) // pld_composition.MAX_SURVIVAL_CHUNKS)
        shift = width + chunk
        assert ours_tail[k] <= exact_tail[max(k - shift, 0)] * (1 + 1e-9), k
    # where the exact tail is 1e-40 the plain FFT's is rounding noise, ours is the tail
    k = int(np.flatnonzero(exact_tail > 1e-40)[-1])
    assert abs(plain_tail[k]) > 1e3 * exact_tail[k]
    assert exact_tail[k] <= ours_tail[k] <= 1e-6 * abs(plain_tail[k])
    # the mass below the trusted range is exact, and the total is kept
    assert math.isclose(float(np.sum(ours)), float(np.sum(exact)), rel_tol=1e-12)


def _binary_rr_pair(eps0: float, n: int, ones: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact laws of the shuffled count of ones, victim holding 1 vs 0, ``ones`` of the n − 1
    others holding 1."""
    a = math.exp(eps0) / (math.exp(eps0) + 1.0)
    others = np.convolve(stats.binom.pmf(np.arange(ones + 1), ones, a),
                         stats.binom.pmf(np.arange(n - ones), n - 1 - ones, 1.0 - a))
    base, shifted = np.append(others, 0.0), np.insert(others, 0, 0.0)
    return a * shifted + (1 - a) * base, (1 - a) * shifted + a * base


def lower_epsilon(eps0: float, n: int, rounds: int, delta: float, grid: float = 1e-3) -> float:
    """Certified lower bound on ε(δ) of ``rounds`` shuffled binary RR rounds: the largest over a
    few configurations of the others of the exact composition of that neighbouring pair, losses
    rounded down to ``grid`` (δ(ε) is non-decreasing in every loss), composed by direct
    convolution of non-negative arrays."""
    best = 0.0
    for ones in (0, 1, 2, (n - 1) // 2):
        p, q = _binary_rr_pair(eps0, n, ones)
        keep = (p > 0) & (q > 0)
        ks = np.floor((np.log(p[keep]) - np.log(q[keep])) / grid).astype(int)
        single = np.zeros(ks.max() - ks.min() + 1)
        np.add.at(single, ks - ks.min(), p[keep])
        total = np.ones(1)
        for _ in range(rounds):
            total = np.convolve(total, single)
        losses = (np.arange(len(total)) + rounds * ks.min()) * grid

        def excess(eps: float) -> float:
            upper = losses > eps
            return float(np.dot(total[upper], -np.expm1(eps - losses[upper]))) - delta

        low, high = 0.0, rounds * eps0
        for _ in range(60):
            middle = 0.5 * (low + high)
            low, high = (middle, high) if excess(middle) > 0 else (low, middle)
        best = max(best, low)
    return best


DELTAS = (1e-6, 1e-9, 1e-12, 1e-13, 1e-14, 1e-15)


def test_binary_rr_rounds_continuous_down_to_1e_15_and_above_a_certified_lower_bound() -> None:
    accountant = ShufflePLDAccountant(progress=False).compose(ShuffleEvent(binary_rr(1.0), 100), 20)
    epsilons = [accountant.get_epsilon(delta) for delta in DELTAS]
    assert all(a < b for a, b in zip(epsilons, epsilons[1:])), epsilons
    # no cliff: the last step (1e-14 → 1e-15) is like the one before, far below the cap 20
    e13, e14, e15 = epsilons[-3:]
    assert e15 - e14 <= 1.5 * (e14 - e13), epsilons
    assert e15 < 5.0
    for delta, epsilon in zip(DELTAS, epsilons):
        lower = lower_epsilon(1.0, 100, 20, delta)
        assert lower <= epsilon <= 1.2 * lower, (delta, lower, epsilon)
        # the two queries agree: δ(ε(δ)) ≤ δ
        assert accountant.get_delta(epsilon) <= delta
    # the truncated tails carried to +∞ are far below the smallest δ asked for
    assert accountant.composed_pld().get_delta_for_epsilon(math.inf) < 1e-17


def test_single_round_pld_above_the_exact_binary_rr_profile() -> None:
    accountant = ShufflePLDAccountant(progress=False).compose(ShuffleEvent(binary_rr(1.0), 30))
    pld = accountant.composed_pld()
    for epsilon in (0.2, 0.5, 0.8):
        assert pld.get_delta_for_epsilon(epsilon) >= binary_rr_exact_delta(1.0, 30, epsilon)


@pytest.mark.parametrize("gamma,users", [(0.2, 50), (0.01, 1000)])
def test_add_remove_poisson_rounds_finite_and_continuous_at_1e_15(gamma: float,
                                                                  users: int) -> None:
    one = dp_event.PoissonSampledDpEvent(gamma, ShuffleEvent(VariationRatio.worst_case(1.0),
                                                             users))
    single = ShufflePLDAccountant(NR.ADD_OR_REMOVE_ONE, progress=False).compose(one)
    twice = ShufflePLDAccountant(NR.ADD_OR_REMOVE_ONE, progress=False).compose(one, 2)
    epsilons = [twice.get_epsilon(delta) for delta in DELTAS]
    assert all(math.isfinite(e) for e in epsilons), epsilons
    assert all(a < b for a, b in zip(epsilons, epsilons[1:])), epsilons
    e13, e14, e15 = epsilons[-3:]
    assert e15 - e14 <= 1.5 * (e14 - e13), epsilons
    for delta, epsilon in zip(DELTAS, epsilons):
        # two rounds cost at least one, at most twice one (basic composition of (ε, δ/2) pairs
        # would give 2·ε(δ/2) ≥ ε(δ) of the composition)
        assert single.get_epsilon(delta) <= epsilon <= 2 * single.get_epsilon(delta / 2)
        assert twice.get_delta(epsilon) <= delta
    assert twice.composed_pld().get_delta_for_epsilon(math.inf) < 1e-17
