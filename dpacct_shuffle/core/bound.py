"""The neutral-aware variation-ratio bound (SPEC §2–3).

A local randomizer R and a pair of victim inputs (x⁰, x¹) with μ0 = R(x⁰), μ1 = R(x¹) satisfy

    μ0 ≤ p·μ1,  μ1 ≤ p·μ0,  β = TV(μ0, μ1) ≤ (p − 1)/(p + 1),

and decompose exactly as μ0 = pα·Q0 + α·Q1 + w·N, μ1 = α·Q0 + pα·Q1 + w·N with α = β/(p − 1),
w = 1 − (p + 1)α. Every other user's report dominates r0·Q0 + r1·Q1 + s·N pointwise. From the
q-ratio property (R(x) ≤ q_j·R(x_i)): r_j = pα/q_j, and s = w/max(q0, q1) is always valid because
R(x_i) ≥ max(μ0, μ1)/q = pα(Q0 + Q1)/q + w·N/q pointwise (Q0, Q1 have disjoint supports).

With (A, B, K, rest) ~ Multinomial(n; r0, r1, s, 1 − r0 − r1 − s),

    D_{e^ε}(P‖Q) ≤ (1/n)·E[(c_A·A + c_B·B + c_K·K)⁺],
    c_A = α(p − e^ε)/r0,  c_B = α(1 − p·e^ε)/r1,  c_K = w(1 − e^ε)/s,

the exact hockey-stick divergence of the dominating pair on the statistic (#Q0-clones, #Q1-clones,
#N-clones): the victim is always one of the three clone types, so the number of "rest" users is the
same under x⁰ and x¹ and the reduction is a post-processing. The reverse direction swaps (r0, q0) with
(r1, q1). The published variation-ratio pair (seed 001, Thm 4.1/4.7/4.8) is the special case
s = 1 − r0 − r1, valid only when every other user's residual equals the victim's N (see
:func:`published_pair`).

Monotonicity in β (SPEC §3). With the generic share s = w/q the bound is non-decreasing in β for
fixed p, q: write a user's contribution as Z ∈ {c_A, c_B, c_K, 0} times a common positive factor;
raising β moves per-user probability from {K, rest} to {A, B} in proportions (p+1):(p−1) and 1:1,
the two mixtures have the same mean (1 + 1/p)(1 − e^ε)/2, and since [1 − e^ε, 0] ⊆
[1/p − e^ε, 1 − e^ε/p] for ε ≤ ln p the new per-user law dominates the old in convex order; convex
order survives sums of independent variables and E[(·)⁺] is convex. Hence for any ε0-LDP randomizer
the bound at β = (e^ε0 − 1)/(e^ε0 + 1) (w = 0, :meth:`VariationRatio.worst_case`) is valid; unlike
the Feldman–McMillan–Talwar stronger-clone proof (erratum arXiv 2208.04591) this argument needs no
restriction on the randomizer.

Monotonicity in n: the pair for n + 1 users is the pair for n users plus one independent
multinomial draw, a post-processing, so the bound is non-increasing in n. Above
``MAX_EVALUATED_USERS`` users we therefore evaluate at that many users — still an upper bound.
"""

from __future__ import annotations

import functools
import math

from dpacct_shuffle.core.numerics import Bracket, DirectionalProblem, directional_bracket
from dpacct_shuffle.core.validation import (
    check_delta,
    check_epsilon,
    check_num_users,
    check_range,
)

MAX_EVALUATED_USERS = 10**10
_BETA_SLACK = 1e-12
_NEUTRAL_ROUNDING = 1e-14
_MAX_BANDS = 256
# ε search: a coarser δ bracket suffices (δ changes by orders of magnitude per unit of ε)
_SEARCH_RTOL = 1e-2


class VariationRatio:
    """Variation-ratio parameters (p, β, q0, q1, s) of a local randomizer and their shuffle bound.

    Args:
      p: ratio bound, μ0 ≤ p·μ1 and μ1 ≤ p·μ0 (p = e^ε0 for an ε0-LDP randomizer); p ≥ 1, and
        ``math.inf`` is allowed (multi-message protocols, then β ≤ 1).
      beta: total variation TV(μ0, μ1), 0 ≤ β ≤ (p − 1)/(p + 1). β = 0 means no privacy loss.
      q: ratio of any report distribution to the victim's under x⁰ (R(x) ≤ q·R(x_i)), q ≥ 1.
      q1: the same for x¹ (metric-LDP randomizers); defaults to ``q``.
      neutral_share: s, the mass of the victim's neutral part N that every other user is
        guaranteed to produce. Defaults to the always-valid w/max(q0, q1). A larger value must be
        proven for the randomizer (e.g. k-ary RR: s = (d − 2)α) and must satisfy r0 + r1 + s ≤ 1.
    """

    __slots__ = ("p", "beta", "q0", "q1", "alpha", "p_alpha", "neutral_mass", "r0", "r1",
                 "neutral_share")

    def __init__(
        self,
        p: float,
        beta: float,
        q: float,
        *,
        q1: float | None = None,
        neutral_share: float | None = None,
    ) -> None:
        p_value = check_range("p", p, 1.0, math.inf)
        beta_max = 1.0 if math.isinf(p_value) else (p_value - 1.0) / (p_value + 1.0)
        beta_value = check_range("beta", beta, 0.0, math.inf)
        if beta_value > beta_max * (1.0 + _BETA_SLACK) + 1e-300:
            raise ValueError(
                f"beta must be in [0, (p-1)/(p+1)] = [0, {beta_max!r}] for p={p_value!r}, "
                f"got {beta_value!r}"
            )
        beta_value = min(beta_value, beta_max)
        q0_value = check_range("q", q, 1.0, math.inf, high_open=True)
        q1_value = q0_value if q1 is None else check_range("q1", q1, 1.0, math.inf, high_open=True)

        if beta_value == 0.0:
            alpha, p_alpha = 0.0, 0.0
        elif math.isinf(p_value):
            alpha, p_alpha = 0.0, beta_value
        else:
            alpha = beta_value / (p_value - 1.0)
            p_alpha = beta_value * p_value / (p_value - 1.0)
        neutral_mass = 1.0 - p_alpha - alpha
        if neutral_mass < _NEUTRAL_ROUNDING:  # β at its maximum up to rounding: w = 0 exactly
            neutral_mass = 0.0
        r0, r1 = p_alpha / q0_value, p_alpha / q1_value
        if r0 + r1 > 1.0 + 1e-12:
            raise ValueError(
                f"q and q1 too small for p and beta: clone rates r0 + r1 = {r0 + r1!r} exceed 1"
            )
        if neutral_share is None:
            share = neutral_mass / max(q0_value, q1_value)
        else:
            share = check_range("neutral_share", neutral_share, 0.0, 1.0)
            if r0 + r1 + share > 1.0 + 1e-12:
                raise ValueError(
                    "neutral_share must satisfy r0 + r1 + neutral_share <= 1 "
                    f"(r0 = {r0!r}, r1 = {r1!r}), got {share!r}"
                )
            share = min(share, max(0.0, 1.0 - r0 - r1))
        self.p = p_value
        self.beta = beta_value
        self.q0 = q0_value
        self.q1 = q1_value
        self.alpha = alpha
        self.p_alpha = p_alpha
        self.neutral_mass = neutral_mass
        self.r0 = r0
        self.r1 = r1
        self.neutral_share = share

    # -- construction helpers -------------------------------------------------------------
    @classmethod
    def worst_case(cls, epsilon0: float) -> "VariationRatio":
        """Any ε0-LDP randomizer: p = q = e^ε0, β = (e^ε0 − 1)/(e^ε0 + 1) (w = 0, SPEC §3)."""
        eps0 = check_range("epsilon0", epsilon0, 0.0, math.inf, low_open=True, high_open=True)
        p = math.exp(eps0)
        return cls(p, math.tanh(eps0 / 2.0), p)

    # -- derived quantities ---------------------------------------------------------------
    @property
    def rest_share(self) -> float:
        """ρ = 1 − r0 − r1 − s: mass of the other users' reports not used by the bound."""
        return max(0.0, 1.0 - self.r0 - self.r1 - self.neutral_share)

    @property
    def epsilon0(self) -> float:
        """ln p: the shuffled divergence vanishes for ε ≥ ln p (post-processing of the victim)."""
        return math.log(self.p)

    def _key(self) -> tuple[float, float, float, float, float]:
        return (self.p, self.beta, self.q0, self.q1, self.neutral_share)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, VariationRatio):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        q1 = "" if self.q1 == self.q0 else f", q1={self.q1!r}"
        return (f"VariationRatio(p={self.p!r}, beta={self.beta!r}, q={self.q0!r}{q1}, "
                f"neutral_share={self.neutral_share!r})")

    # -- the bound ------------------------------------------------------------------------
    def delta_interval(self, epsilon: float, n: int, rtol: float = 1e-3) -> Bracket:
        """(lower estimate, upper bound) of max(D_{e^ε}(P‖Q), D_{e^ε}(Q‖P)) for n users.

        The upper bound is certified (truncated mass and rounding margins added, K bands at their
        lowest K); the lower estimate drops truncated mass and uses each band's highest K. Bands are
        refined until (upper − lower) ≤ rtol·upper or the refinement budget is spent; small problems
        sum every cell and are exact up to rounding.
        """
        eps = check_epsilon(epsilon)
        users = check_num_users(n)
        tolerance = check_range("rtol", rtol, 0.0, 1.0, low_open=True)
        return _delta_bracket(self._key(), eps, min(users, MAX_EVALUATED_USERS), tolerance)

    def delta(self, epsilon: float, n: int) -> float:
        """Certified upper bound on the shuffled δ(ε) with n users (both directions)."""
        return self.delta_interval(epsilon, n).upper

    def epsilon(self, delta: float, n: int, rtol: float = 1e-4) -> float:
        """Smallest ε (to relative tolerance ``rtol``, rounded up) with ``delta(ε, n) ≤ delta``.

        Searches the monotone function log δ(ε) with a safeguarded secant (regula falsi) method from a
        closed-form starting point and returns the upper end of the final bracket, at which the
        certified upper bound is ≤ ``delta``.
        """
        target = check_delta(delta)
        users = check_num_users(n)
        tolerance = check_range("rtol", rtol, 0.0, 1.0, low_open=True)
        return _epsilon_search(self, target, users, tolerance)


def _directional_problems(key: tuple[float, float, float, float, float], eps: float, n: int
                          ) -> list[DirectionalProblem]:
    vr = _from_key(key)
    e = math.exp(eps)
    problems = []
    for r_a, r_b in ((vr.r0, vr.r1), (vr.r1, vr.r0)):
        c_a = (vr.p_alpha - e * vr.alpha) / r_a
        c_b = (vr.alpha - e * vr.p_alpha) / r_b
        c_k = 0.0 if vr.neutral_share == 0.0 else vr.neutral_mass * (1.0 - e) / vr.neutral_share
        problems.append(DirectionalProblem(n, r_a, r_b, vr.neutral_share, c_a, c_b, c_k))
        if vr.r0 == vr.r1:  # symmetric pair: both directions coincide
            break
    return problems


@functools.lru_cache(maxsize=512)
def _from_key(key: tuple[float, float, float, float, float]) -> VariationRatio:
    p, beta, q0, q1, s = key
    return VariationRatio(p, beta, q0, q1=q1, neutral_share=s)


@functools.lru_cache(maxsize=4096)
def _delta_bracket(key: tuple[float, float, float, float, float], eps: float, n: int,
                   rtol: float, tail: float = 1e-18, bands: int = 16) -> Bracket:
    """Bracket of the two-sided divergence, refined until its relative width is ≤ rtol.

    Truncated tail mass and band resolution are refined separately: the tail is shrunk when the
    dropped mass is a visible part of the upper bound, the bands are doubled when the remaining gap
    is.
    """
    vr = _from_key(key)
    if vr.beta == 0.0 or eps >= vr.epsilon0:
        return Bracket(0.0, 0.0)
    for _ in range(12):
        results = [directional_bracket(problem, bands, tail)
                   for problem in _directional_problems(key, eps, n)]
        lower = max(r.lower for r in results)
        upper = max(r.upper for r in results)
        dropped = max(r.dropped for r in results)
        if upper - lower <= rtol * upper:
            break
        if dropped > 0.1 * rtol * upper and tail > 1e-300:
            scale = 1e-3 * rtol * lower / dropped if lower > 0.0 else 1e-12
            tail = max(1e-300, tail * min(scale, 1e-2))
        elif bands < _MAX_BANDS:
            bands *= 2
        else:
            break
    return Bracket(lower, upper)


def _initial_guess(vr: VariationRatio, delta: float, n: int) -> float:
    """Starting point from the asymptotic form of seed 001 Thm 4.3 (only a starting point)."""
    r = max(vr.r0 + vr.r1, 1e-300)
    guess = math.log1p(vr.beta * math.sqrt(32.0 * math.log(4.0 / delta) / (r * n)))
    return min(guess, 0.5 * vr.epsilon0) if math.isfinite(vr.epsilon0) else guess


def _epsilon_search(vr: VariationRatio, delta: float, n: int, rtol: float) -> float:
    key = vr._key()
    n_eval = min(n, MAX_EVALUATED_USERS)
    tail = max(1e-300, 1e-6 * delta)

    def upper(eps: float) -> float:
        return _delta_bracket(key, eps, n_eval, _SEARCH_RTOL, tail).upper

    if upper(0.0) <= delta:
        return 0.0
    eps_cap = vr.epsilon0
    lo, d_lo = 0.0, upper(0.0)
    guess = max(_initial_guess(vr, delta, n), 1e-12)
    hi, d_hi = guess, upper(guess)
    # expand the bracket [lo, hi] with d_lo > delta >= d_hi
    while d_hi > delta:
        lo, d_lo = hi, d_hi
        hi = min(2.0 * hi, eps_cap) if math.isfinite(eps_cap) else 2.0 * hi
        if math.isfinite(eps_cap) and hi >= eps_cap:
            hi, d_hi = eps_cap, 0.0
            break
        d_hi = upper(hi)
    while lo == 0.0 and hi > 1e-12:
        trial = hi / 4.0
        d_trial = upper(trial)
        if d_trial > delta:
            lo, d_lo = trial, d_trial
            break
        hi, d_hi = trial, d_trial
    # safeguarded regula falsi (Illinois) on f(ε) = log δ(ε) − log δ_target
    log_target = math.log(delta)
    side = 0
    while hi - lo > rtol * hi:
        f_lo = math.log(d_lo) - log_target
        f_hi = (math.log(d_hi) - log_target) if d_hi > 0.0 else -math.inf
        if math.isfinite(f_hi) and f_lo > f_hi:
            trial = hi - f_hi * (hi - lo) / (f_hi - f_lo)
            width = hi - lo
            trial = min(max(trial, lo + 0.05 * width), hi - 0.05 * width)
            if side == 1:
                trial = 0.5 * (trial + hi)
            elif side == -1:
                trial = 0.5 * (trial + lo)
        else:
            trial = 0.5 * (lo + hi)
        # make sure the bracket can close at the requested tolerance
        if hi - trial < 0.5 * rtol * hi:
            trial = hi - 0.5 * rtol * hi
        d_trial = upper(trial)
        if d_trial > delta:
            lo, d_lo, side = trial, d_trial, 1
        else:
            hi, d_hi, side = trial, d_trial, -1
    return hi


def published_pair(p: float, beta: float, q: float, q1: float | None = None) -> VariationRatio:
    """The published variation-ratio pair (seed 001 Thm 4.1/4.7/4.8) — NOT A VALID BOUND IN GENERAL.

    It is the special case s = 1 − r0 − r1 (every other user's residual is the victim's neutral
    part N). For k-ary randomized response it under-reports: exact shuffled δ exceeds it (SPEC §3:
    ε0 = 2, d = 5, n = 30, ε = 0.8, others holding a third value: exact 0.016845 vs 0.016270).
    Use it only to reproduce the paper's tables, never as a guarantee, unless the randomizer proves
    s = 1 − r0 − r1 is a valid neutral share. At worst-case β (w = 0) it coincides with the valid
    clone bound.
    """
    probe = VariationRatio(p, beta, q, q1=q1)
    share = max(0.0, 1.0 - probe.r0 - probe.r1)
    return VariationRatio(p, beta, q, q1=q1, neutral_share=share)


def check_variation_ratio(value: object, name: str = "variation_ratio") -> VariationRatio:
    """Type check used by higher layers."""
    if not isinstance(value, VariationRatio):
        raise TypeError(f"{name} must be a VariationRatio, got {type(value).__name__}")
    return value


__all__ = ["VariationRatio", "published_pair", "check_variation_ratio", "MAX_EVALUATED_USERS"]
