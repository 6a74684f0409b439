"""Shuffle bound for users with different randomizers (docs/theory.md, "Users with different
randomizers").

Victim pair. The victim's randomizer gives μ0 = R_v(x⁰), μ1 = R_v(x¹) with ratio bound p and total
variation β; with α = β/(p − 1) and w = 1 − (p + 1)α they decompose exactly as
μ0 = pα·Q0 + α·Q1 + w·N, μ1 = α·Q0 + pα·Q1 + w·N ("Decomposition").

Other users. Fix proportions π = (π0, π1, πK) (π0 + π1 + πK = 1) and the *shape*
S = π0·Q0 + π1·Q1 + πK·N. Every other user j, whatever its input, dominates t_j·S pointwise for a
rate t_j ∈ [0, 1] of its own (a user of another group: t_j = min_y min_x R_j(y|x)/S(y)).

Reduction. Label user j "clone" with probability t_j (then Q0, Q1 or N with probabilities π) and
"rest" otherwise (then its residual (R_j(x_j) − t_j·S)/(1 − t_j)); label the victim Q0, Q1, N with
probabilities (pα, α, w) under x⁰ and (α, pα, w) under x¹. The set of rest users and their
reports has the same law under both inputs, and given that m others are clones their labels are
i.i.d. π. The shuffled multiset is a randomized function of (rest reports, clone label counts),
so by the data-processing inequality

    D_{e^ε}(P‖Q) ≤ E[f_ε(M)],   M = Σ_j Bernoulli(t_j) (Poisson-binomial),

where f_ε(m) is the exact divergence of the label counts of the victim and m i.i.d. π-clones: the
homogeneous neutral-aware pair with m + 1 users and rates (π0, π1, πK), i.e. the core's
directional problems with c_A = α(p − e^ε)/π0, c_B = α(1 − p·e^ε)/π1, c_K = w(1 − e^ε)/πK.
f_ε is non-increasing in m ("Monotonicity in n") and f_ε(0) = α(p − e^ε)⁺ (the victim's label
pair alone).

Comparison with one binomial. For any integer variable B and non-increasing f ≥ 0,

    E f(M) = f(L) + Σ_{k≥1} (f(k − 1) − f(k))·P[M ≤ k − 1] ≤ E f(B) + V·f(0),
    V = max_k (P[M ≤ k] − P[B ≤ k])⁺,

because the increments f(k − 1) − f(k) are ≥ 0 and sum to at most f(0). With B ~ Bin(N', τ),
E f_ε(B) is the homogeneous pair of N' + 1 users at rates τ·π — one core evaluation. V = 0
whenever B is stochastically below M (e.g. τ = a rate that N' of the t_j reach); otherwise V is
computed with the cdf of M rounded up and that of B rounded down. The bound is the minimum over
a few candidates B: thresholds (τ = one of the rates, N' the users at or above it) and
binomials matching the mean and variance of M shifted down by a few standard deviations.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from dpacct_shuffle.core.binomial import binomial_cdf, binomial_pmf, binomial_sf
from dpacct_shuffle.core.bound import refined_bracket
from dpacct_shuffle.core.problem import DirectionalProblem
from dpacct_shuffle.core.rounding import ratio_up
from dpacct_shuffle.core.search import epsilon_search

# scipy's binomial cdf is taken with this relative error (docs/theory.md, "Numerics on the safe
# side": max(1e-12, 100·u·√m); 1e-9 covers m up to 10^14)
_CDF_RTOL = 1e-9
# each group's binomial law is kept on a window whose outside mass is at most this (per side)
_WINDOW_TAIL = 1e-25
# the law of M is kept on at most this many points (coarser grids move mass down: sound)
_MAX_LAW_POINTS = 20_000
# shifts (in standard deviations of M) of the moment-matched candidates, tried in this order
_SHIFTS = (0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 8.0)
_SEARCH_RTOL = 1e-3


class PersonalizedPair(NamedTuple):
    """One victim pair and the clone rates of the other users (module docstring).

    ``p`` ratio bound, ``beta`` total variation of the victim pair; ``proportions`` (π0, π1, πK);
    ``others`` pairs (count, t) of other users with rate t (counts > 0, 0 ≤ t ≤ 1).
    """

    p: float
    beta: float
    proportions: tuple[float, float, float]
    others: tuple[tuple[int, float], ...]

    @property
    def alpha(self) -> float:
        return 0.0 if math.isinf(self.p) else self.beta / (self.p - 1.0)

    @property
    def p_alpha(self) -> float:
        return self.beta if math.isinf(self.p) else self.beta * self.p / (self.p - 1.0)

    @property
    def neutral_mass(self) -> float:
        return max(0.0, 1.0 - self.alpha - self.p_alpha)

    @property
    def epsilon0(self) -> float:
        return math.log(self.p)


def local_delta(pair: PersonalizedPair, eps: float) -> float:
    """f_ε(0) = α(p − e^ε)⁺ (p = ∞: β), the victim's label pair alone, rounded up."""
    if pair.beta == 0.0 or eps >= pair.epsilon0:
        return 0.0
    if math.isinf(pair.p):
        return pair.beta
    value = ratio_up(pair.alpha * (pair.p - math.exp(eps)), 8)
    return min(pair.beta, max(0.0, value))


def _problems(pair: PersonalizedPair, eps: float, users: int, tau: float) -> list[DirectionalProblem]:
    """Both directions of the homogeneous pair of ``users`` users at rates τ·π."""
    pi0, pi1, pik = pair.proportions
    e = math.exp(eps)
    r0, r1, s = tau * pi0, tau * pi1, tau * pik
    c_k = 0.0 if s == 0.0 else pair.neutral_mass * (1.0 - e) / s
    problems = []
    for r_a, r_b in ((r0, r1), (r1, r0)):
        c_a = (pair.p_alpha - e * pair.alpha) / r_a
        c_b = (pair.alpha - e * pair.p_alpha) / r_b
        problems.append(DirectionalProblem(users, r_a, r_b, s, c_a, c_b, c_k))
    return problems


@functools.lru_cache(maxsize=4096)
def _binomial_upper(pair: PersonalizedPair, eps: float, trials: int, tau: float, rtol: float) -> float:
    """Certified upper bound on E f_ε(B), B ~ Bin(trials, τ)."""
    local = local_delta(pair, eps)
    if trials == 0 or tau == 0.0 or local == 0.0:
        return local
    bracket = refined_bracket(_problems(pair, eps, trials + 1, tau), pair.beta, rtol)
    return min(local, bracket.upper)


def _group_law(count: int, rate: float) -> tuple[int, np.ndarray, float]:
    """(offset, pmf on a window, upper bound on the mass outside it) of Bin(count, rate)."""
    if rate <= 0.0:
        return 0, np.ones(1), 0.0
    if rate >= 1.0:
        return count, np.ones(1), 0.0
    sd = math.sqrt(count * rate * (1.0 - rate))
    half = int(math.ceil(12.0 * sd + 30.0))
    mean = count * rate
    lo, hi = max(0, int(mean) - half), min(count, int(mean) + half + 1)
    dropped = 0.0
    if lo > 0:
        dropped += float(binomial_cdf(lo - 1, count, rate))
    if hi < count:
        dropped += float(binomial_sf(hi, count, rate))
    dropped = 2.0 * dropped + 1e-300
    if dropped > _WINDOW_TAIL:  # the window is always wide enough; keep the check honest
        raise ArithmeticError(f"binomial window too narrow ({dropped!r} outside)")
    k = np.arange(lo, hi + 1)
    return lo, binomial_pmf(k, count, rate), dropped


def _coarsen(pmf: np.ndarray, width: int) -> np.ndarray:
    """Masses of consecutive blocks of ``width`` points, each put at the block's first point: the
    law of a variable below the original one (coupled pointwise), on a grid of step ``width``."""
    if width == 1:
        return pmf
    blocks = -(-pmf.size // width)
    padded = np.zeros(blocks * width)
    padded[:pmf.size] = pmf
    coarse: np.ndarray = padded.reshape(blocks, width).sum(axis=1)
    return coarse


@functools.lru_cache(maxsize=256)
def others_law(others: tuple[tuple[int, float], ...]) -> tuple[int, int, np.ndarray, float]:
    """(offset, width, law, dropped): a variable M' ≤ M (coupled pointwise) for the clone count
    M = Σ_j Bernoulli(t_j), with P[M' = offset + width·i] = law[i] up to rounding, except for mass
    at most ``dropped`` (outside the windows).

    Each group's binomial law is kept on a window (the mass outside is bounded with scipy's cdf
    and sf, doubled), coarsened onto a grid of step ``width`` so that the law has at most
    ``_MAX_LAW_POINTS`` points (the mass of each block is moved down to the block's first point),
    and the groups are convolved.
    """
    total_width = sum(int(24.0 * math.sqrt(c * t * (1.0 - t))) + 62 for c, t in others)
    width = max(1, -(-total_width // _MAX_LAW_POINTS))
    offset, law, dropped = 0, np.ones(1), 0.0
    for count, rate in others:
        lo, pmf, out = _group_law(count, rate)
        offset += lo
        law = np.convolve(law, _coarsen(pmf, width))
        dropped += out
    return offset, width, law, min(1.0, dropped)


def _violation(others: tuple[tuple[int, float], ...], trials: int, tau: float) -> float:
    """Upper bound on V = max_k (P[M ≤ k] − P[B ≤ k])⁺, B ~ Bin(trials, τ).

    P[M ≤ k] − P[B ≤ k] = P[B > k] − P[M > k]; each point takes the smaller of the two upper
    bounds, from P[M ≤ k] ≤ P[M' ≤ k] (≤ kept mass up to k, rounded up, plus the dropped mass) and
    P[M > k] ≥ P[M' > k] (≥ kept mass above k, rounded down), and scipy's binomial cdf and sf of B
    taken with relative error 1e-9. On each grid block [offset + width·i, offset + width·(i + 1))
    P[M' ≤ k] is constant and P[B ≤ k] is smallest at the block's first point, where both are
    evaluated; below the offset P[M ≤ k] is at most the dropped mass.
    """
    offset, width, law, dropped = others_law(others)
    ks = offset + width * np.arange(law.size)
    below = np.cumsum(law)
    above = np.concatenate([np.cumsum(law[::-1])[::-1][1:], [0.0]])
    m_cdf_up = np.minimum(1.0, below * (1.0 + 1e-10) + dropped)
    m_sf_low = np.maximum(0.0, above * (1.0 - 1e-10) - dropped)
    b_cdf_low = binomial_cdf(ks, trials, tau) * (1.0 - _CDF_RTOL)
    b_sf_up = binomial_sf(ks, trials, tau) * (1.0 + _CDF_RTOL)
    gap = np.minimum(m_cdf_up - b_cdf_low, b_sf_up - m_sf_low)
    worst = max(dropped, float(np.max(gap)))
    return min(1.0, max(0.0, worst) * (1.0 + 1e-9) + 1e-300)


class Candidate(NamedTuple):
    """A binomial B ~ Bin(trials, τ) compared with M, and V of that comparison."""

    trials: int
    tau: float
    violation: float


@functools.lru_cache(maxsize=256)
def candidates(others: tuple[tuple[int, float], ...]) -> tuple[Candidate, ...]:
    """Threshold candidates (V = 0 by coupling: N' users have rate ≥ τ) and moment-matched ones."""
    groups = [(c, t) for c, t in others if c > 0 and t > 0.0]
    if not groups:
        return (Candidate(0, 0.0, 0.0),)
    result = []
    best_trials, best_tau = 0, 0.0
    for index, (_, tau) in enumerate(groups):
        trials = sum(c for c, t in groups if t >= tau)
        if index == 0 or trials * tau > best_trials * best_tau:
            best_trials, best_tau = trials, tau
    result.append(Candidate(best_trials, best_tau, 0.0))
    mean = math.fsum(c * t for c, t in groups)
    var = math.fsum(c * t * (1.0 - t) for c, t in groups)
    total = sum(c for c, _ in groups)
    if len(groups) > 1 and var > 0.0:
        sd = math.sqrt(var)
        for shift in _SHIFTS:
            target = mean - shift * sd
            if target <= 0.0:
                break
            tau = min(1.0, max(1e-300, 1.0 - var / target))
            trials = min(total, int(target / tau))
            if trials < 1:
                break
            tau = min(1.0, target / trials)
            result.append(Candidate(trials, tau, _violation(tuple(groups), trials, tau)))
    return tuple(result)


def pair_delta(pair: PersonalizedPair, eps: float, rtol: float = 1e-3) -> float:
    """Certified upper bound on the shuffled δ(ε) of one victim pair (module docstring).

    The minimum of E f_ε(B) + V·f_ε(0) over two candidates B: the best threshold (V = 0) and the
    moment-matched binomial of smallest shift whose V·f_ε(0) is at most 0.1 % of the threshold
    candidate's value (a larger shift lowers B further, a smaller one costs more in V·f_ε(0)).
    ``rtol`` is the relative tolerance of the core evaluations (only tightness depends on it).
    """
    local = local_delta(pair, eps)
    if local == 0.0:
        return 0.0
    pi0, pi1, _ = pair.proportions
    if pi0 <= 0.0 or pi1 <= 0.0:  # the others never reproduce a victim clone type: no amplification
        return local
    threshold, *matched = candidates(pair.others)
    best = min(local, _binomial_upper(pair, eps, threshold.trials, threshold.tau, rtol))
    for candidate in matched:
        penalty = candidate.violation * local
        if penalty <= 1e-3 * best:
            value = _binomial_upper(pair, eps, candidate.trials, candidate.tau, rtol)
            best = min(best, value + penalty)
            break
    return min(local, ratio_up(best))


def pairs_delta(pairs: Sequence[PersonalizedPair], eps: float, rtol: float = 1e-3) -> float:
    """max over victim pairs of :func:`pair_delta`."""
    return max(pair_delta(pair, eps, rtol) for pair in pairs)


def pairs_epsilon(pairs: Sequence[PersonalizedPair], delta: float, rtol: float = 1e-4) -> float:
    """Smallest ε (relative tolerance ``rtol``) at which :func:`pairs_delta` was evaluated ≤ δ
    (the core's monotone ε search; δ(ε) is non-increasing for every victim pair)."""
    total_variation = max(pair.beta for pair in pairs)
    cap = max(pair.epsilon0 for pair in pairs)
    guess = 0.5 * cap if math.isfinite(cap) else 1.0
    return epsilon_search(lambda eps: pairs_delta(pairs, eps, _SEARCH_RTOL), delta,
                          total_variation, cap, guess, rtol)


__all__ = ["PersonalizedPair", "local_delta", "others_law", "candidates", "pair_delta",
           "pairs_delta", "pairs_epsilon"]
