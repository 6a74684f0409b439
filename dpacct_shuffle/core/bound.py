"""The neutral-aware variation-ratio bound (docs/theory.md, "Neutral-aware bound").

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
(r1, q1). The published variation-ratio pair (Wang et al., arXiv:2304.05007, Thm 4.1/4.7/4.8) is the
special case s = 1 − r0 − r1, valid only when every other user's residual equals the victim's N
(see :func:`published_pair`).

Several neutral types (``neutral_parts``). The victim's neutral part may split as
w·N = Σ_t w_t·N_t into parts with disjoint supports that the other users reproduce at different
rates s_t (R(x_i) ≥ r0·Q0 + r1·Q1 + Σ_t s_t·N_t). Labelling each N_t separately, the same
post-processing argument gives the exact pair on (A, B, K_1, …, K_T) with per-type coefficients
c_t = w_t(1 − e^ε)/s_t ≤ 0; replacing every c_t by the largest one, λ(1 − e^ε) with
λ = min_t w_t/s_t, only raises (·)⁺, so

    δ ≤ (1/n)·E[(c_A·A + c_B·B + λ(1 − e^ε)·K)⁺],  K = Σ_t K_t ~ rate s = Σ_t s_t,

the single-type bound with share s and *neutral weight* λ·s ≤ w in place of w in c_K. A part with
s_t = 0 (a limit of valid shares s_t → 0⁺) only drops out of λ. With one part this is the bound
above. It helps when one neutral pattern is rare among the others (unary encodings: the (1, 1)
pattern of the two victim bits) and caps the single share, while another is common.

Monotonicity in β (docs/theory.md, "Monotonicity in β"). With the generic share s = w/q the bound
is non-decreasing in β for fixed p, q: write a user's contribution as Z ∈ {c_A, c_B, c_K, 0} times
a common positive factor; raising β moves per-user probability from {K, rest} to {A, B} in
proportions (p+1):(p−1) and 1:1, the two mixtures have the same mean (1 + 1/p)(1 − e^ε)/2, and
since [1 − e^ε, 0] ⊆ [1/p − e^ε, 1 − e^ε/p] for ε ≤ ln p the new per-user law dominates the old in
convex order; convex order survives sums of independent variables and E[(·)⁺] is convex. Hence for
any ε0-LDP randomizer the bound at β = (e^ε0 − 1)/(e^ε0 + 1) (w = 0,
:meth:`VariationRatio.worst_case`) is valid; unlike the Feldman–McMillan–Talwar stronger-clone
proof (erratum to arXiv:2208.04591) this argument needs no restriction on the randomizer.

Monotonicity in n: the pair for n + 1 users is the pair for n users plus one independent
multinomial draw, a post-processing, so the bound is non-increasing in n. Above
``MAX_EVALUATED_USERS`` users we therefore evaluate at that many users — still an upper bound.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

from dpacct_shuffle.core.cellwise import cellwise_directional_bracket
from dpacct_shuffle.core.numerics import directional_bracket
from dpacct_shuffle.core.problem import Bracket, DirectionalProblem
from dpacct_shuffle.core.rounding import ratio_down, ratio_up, step_down, step_up
from dpacct_shuffle.core.search import bisect, epsilon_search
from dpacct_shuffle.core.tails import chernoff_epsilon, chernoff_log_upper
from dpacct_shuffle.core.validation import (
    check_delta,
    check_epsilon,
    check_epsilon0,
    check_num_users,
    check_range,
)

MAX_EVALUATED_USERS = 10**10
_BETA_SLACK = 1e-12
_NEUTRAL_ROUNDING = 1e-14
_MAX_BANDS = 256
#: Default relative width of the certified δ bracket (``delta_interval``, ``delta``, ``deltas``).
DELTA_RTOL = 1e-3
# ε search: the δ bracket it evaluates is exactly the public delta_interval's (default rtol), so
# the returned ε satisfies VariationRatio.delta(ε, n) ≤ δ literally
_SEARCH_RTOL = DELTA_RTOL
# larger ε are evaluated here (δ is non-increasing in ε; e^300·n stays far from overflow)
_MAX_EVALUATED_EPSILON = 300.0
# clone rates below this are treated as underflow (bound by β instead)
_TINY_RATE = 1e-290
# ε searches at δ at most this with at least this many evaluated users use the Chernoff ε
CHERNOFF_SEARCH_MAX_DELTA = 1e-15
CHERNOFF_SEARCH_USERS = 10**8
# δ bounds this small are reported without relative refinement (see _delta_bracket)
_NEGLIGIBLE_DELTA = 1e-300
# (p, β, q0, q1, neutral share, neutral weight): the identity of a VariationRatio (equality, hash)
BoundKey = tuple[float, float, float, float, float, float]


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
      neutral_parts: instead of ``neutral_share``, pairs (w_t, s_t) for a split of the victim's
        neutral part into disjoint types (victim mass w_t, Σ_t w_t = w, each reproduced by every
        other user at rate s_t; see the module docstring). Gives share s = Σ_t s_t and neutral
        weight λ·s, λ = min over s_t > 0 of w_t/s_t.

    ``neutral_weight`` is the victim's neutral mass entering c_K = neutral_weight·(1 − e^ε)/s: w
    for a single neutral type, λ·s ≤ w for several.
    """

    __slots__ = ("p", "beta", "q0", "q1", "alpha", "p_alpha", "neutral_mass", "r0", "r1",
                 "neutral_share", "neutral_weight")

    def __init__(
        self,
        p: float,
        beta: float,
        q: float,
        *,
        q1: float | None = None,
        neutral_share: float | None = None,
        neutral_parts: Sequence[tuple[float, float]] | None = None,
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
        weight_per_share = None
        if neutral_parts is not None:
            if neutral_share is not None:
                raise ValueError("give neutral_share or neutral_parts, not both")
            neutral_share, weight_per_share = _merge_neutral_parts(neutral_parts, neutral_mass)
        if neutral_share is None:
            share = neutral_mass / max(q0_value, q1_value)
            if r0 + r1 + share > 1.0 + 1e-12:
                # r0 + r1 + w/q = (1 + β)/q for q0 = q1: the q-ratio property (q ≥ p ≥ (1+β)/(1−β))
                # cannot hold with these values
                raise ValueError(
                    "q and q1 are too small for p and beta: the q-ratio property needs "
                    f"r0 + r1 + w/max(q, q1) <= 1 (q >= 1 + beta when q = q1), got q={q0_value!r}, "
                    f"q1={q1_value!r}, beta={beta_value!r}"
                )
            share = min(share, max(0.0, 1.0 - r0 - r1))
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
        self.neutral_weight = neutral_mass if weight_per_share is None else min(
            neutral_mass, weight_per_share * share)

    # -- construction helpers -------------------------------------------------------------
    @classmethod
    def worst_case(cls, epsilon0: float) -> "VariationRatio":
        """Any ε0-LDP randomizer: p = q = e^ε0, β = (e^ε0 − 1)/(e^ε0 + 1) (w = 0, docs/theory.md,
        "Monotonicity in β").

        ε0 must lie in [MIN_EPSILON0, MAX_EPSILON0] = [1e-6, 500] (core.validation).

        p is exp(ε0) taken 4 ulps up: near ε = ε0 the coefficient α(p − e^ε) cancels, and a p
        rounded below the true e^ε0 under-reports δ (binary RR, ε0 = 1, n = 2, ε = 1 − 1e-13)."""
        eps0 = check_epsilon0(epsilon0)
        p = ratio_up(math.exp(eps0))
        return cls(p, (p - 1.0) / (p + 1.0), p)  # β of the rounded p: ≥ tanh(ε0/2), still w = 0

    @classmethod
    def from_fields(cls, p: float, beta: float, q: float, q1: float, neutral_share: float,
                    neutral_weight: float) -> "VariationRatio":
        """The VariationRatio with exactly these attribute values (e.g. read back from its JSON form,
        :mod:`dpacct_shuffle.randomizers.serialization`); it compares equal to the one they were
        read from.

        Validated as the constructor validates (p, β, q, q1, s); ``neutral_weight`` must lie in
        [0, w] — it is the victim's neutral mass the bound credits, a claim of the same kind as
        ``neutral_share`` (w for one neutral type, λ·s from ``neutral_parts``).
        """
        result = cls(p, beta, q, q1=q1, neutral_share=neutral_share)
        weight = check_range("neutral_weight", neutral_weight, 0.0, result.neutral_mass)
        if weight != result.neutral_weight:
            if result.neutral_share == 0.0:
                raise ValueError("neutral_weight must equal the neutral mass w = "
                                 f"{result.neutral_mass!r} when neutral_share is 0, got {weight!r}")
            result.neutral_weight = weight
        return result

    # -- derived quantities ---------------------------------------------------------------
    @property
    def rest_share(self) -> float:
        """ρ = 1 − r0 − r1 − s: mass of the other users' reports not used by the bound."""
        return max(0.0, 1.0 - self.r0 - self.r1 - self.neutral_share)

    @property
    def epsilon0(self) -> float:
        """ln p: the shuffled divergence vanishes for ε ≥ ln p (post-processing of the victim)."""
        return math.log(self.p)

    def _key(self) -> BoundKey:
        return (self.p, self.beta, self.q0, self.q1, self.neutral_share, self.neutral_weight)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, VariationRatio):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        q1 = "" if self.q1 == self.q0 else f", q1={self.q1!r}"
        weight = ("" if self.neutral_weight == self.neutral_mass
                  else f", neutral_weight={self.neutral_weight!r}")
        return (f"VariationRatio(p={self.p!r}, beta={self.beta!r}, q={self.q0!r}{q1}, "
                f"neutral_share={self.neutral_share!r}{weight})")

    # -- the bound ------------------------------------------------------------------------
    def delta_interval(self, epsilon: float, n: int, rtol: float = DELTA_RTOL,
                       direction: int | None = None) -> Bracket:
        """(lower estimate, upper bound) of max(D_{e^ε}(P‖Q), D_{e^ε}(Q‖P)) for n users.

        The upper bound is certified (truncated mass and rounding margins added, K bands at their
        lowest K); the lower estimate drops truncated mass and uses each band's highest K. Bands are
        refined until (upper − lower) ≤ rtol·upper or the refinement budget is spent; small problems
        sum every cell and are exact up to rounding.

        ``direction`` 0 or 1 bounds one direction only: D_{e^ε}(P‖Q) (P: victim at x⁰, whose type
        Q0 has mass pα) or D_{e^ε}(Q‖P); None (default) their maximum.
        """
        eps = check_epsilon(epsilon)
        users = check_num_users(n)
        tolerance = check_range("rtol", rtol, 0.0, 1.0, low_open=True)
        if direction not in (None, 0, 1):
            raise ValueError(f"direction must be None, 0 or 1, got {direction!r}")
        return _delta_bracket(self, eps, min(users, MAX_EVALUATED_USERS), tolerance,
                              direction=direction)

    def delta(self, epsilon: float, n: int, *, rtol: float = DELTA_RTOL) -> float:
        """Certified upper bound on the shuffled δ(ε) with n users (both directions): the upper end
        of :meth:`delta_interval` at relative width ``rtol``."""
        return self.delta_interval(epsilon, n, rtol).upper

    def deltas(self, epsilons: Sequence[float], n: int, rtol: float = DELTA_RTOL) -> list[float]:
        """Certified upper bounds ``[delta(ε, n) for ε in epsilons]`` for a whole curve (e.g. a PLD).

        Same certification as :meth:`delta_interval` (each entry is its ``upper``); the parts that
        do not depend on ε (the C weights and the K-band masses of the fast path) are computed once
        and shared by all points.
        """
        users = check_num_users(n)
        tolerance = check_range("rtol", rtol, 0.0, 1.0, low_open=True)
        values = [check_epsilon(eps, "epsilons[i]") for eps in epsilons]
        n_eval = min(users, MAX_EVALUATED_USERS)
        return [_delta_bracket(self, eps, n_eval, tolerance).upper for eps in values]

    def directional_problems(self, epsilon: float, n: int, direction: int | None = None
                             ) -> list[DirectionalProblem]:
        """The directional problems (1/n)·E[(c_A·A + c_B·B + c_K·K)⁺] whose maximum is the bound at
        ε for n users: both directions (one if r0 = r1, the pair is then symmetric), or
        ``direction`` 0 or 1 only (see :meth:`delta_interval`). Coefficients as in the module
        docstring, c_A = (pα − e^ε·α)/r_A, c_B = (α − e^ε·pα)/r_B, c_K = λ_w(1 − e^ε)/s.
        """
        eps = check_epsilon(epsilon)
        users = check_num_users(n)
        if direction not in (None, 0, 1):
            raise ValueError(f"direction must be None, 0 or 1, got {direction!r}")
        return _directional_problems(self, eps, users, direction)

    def epsilon(self, delta: float, n: int, rtol: float = 1e-4) -> float:
        """Smallest ε (to relative tolerance ``rtol``, rounded up) with ``delta(ε, n) ≤ delta``.

        Secant iterations on ln(−ln δ(ε)) against ln ε (nearly affine for the pair's Gaussian-like
        tails) from the Gaussian-limit starting point, with a bisection safeguard; typically 5–7
        evaluations. Returns the upper end of the final bracket: a point where :meth:`delta` itself
        (same certified bound, same cache) was evaluated and found ≤ ``delta``; rtol below it the
        bound was found > ``delta``.
        """
        target = check_delta(delta)
        users = check_num_users(n)
        tolerance = check_range("rtol", rtol, 0.0, 1.0, low_open=True)
        return _epsilon_search(self, target, users, tolerance)


def _directional_problems(vr: VariationRatio, eps: float, n: int, direction: int | None = None
                          ) -> list[DirectionalProblem]:
    """:meth:`VariationRatio.directional_problems` for validated arguments."""
    e = math.exp(eps)
    weight = _credited_weight(vr)
    problems = []
    orders: tuple[tuple[float, float], ...] = ((vr.r0, vr.r1), (vr.r1, vr.r0))
    if direction is not None and vr.r0 != vr.r1:
        orders = (orders[direction],)
    for r_a, r_b in orders:
        c_a = (vr.p_alpha - e * vr.alpha) / r_a
        c_b = (vr.alpha - e * vr.p_alpha) / r_b
        c_k = 0.0 if vr.neutral_share == 0.0 else weight * (1.0 - e) / vr.neutral_share
        problems.append(DirectionalProblem(n, r_a, r_b, vr.neutral_share, c_a, c_b, c_k))
        if vr.r0 == vr.r1:  # symmetric pair: both directions coincide
            break
    return problems


def _credited_weight(vr: VariationRatio) -> float:
    """The victim's neutral mass credited in c_K = weight·(1 − e^ε)/s.

    For one neutral type it is w. A smaller ``neutral_weight`` (several types, λ·s) enters as the
    two-part split (neutral_weight, s), (w − neutral_weight, 0) of :func:`_merge_neutral_parts`:
    λ = neutral_weight/s rounded down (:func:`~dpacct_shuffle.core.rounding.ratio_down`) times s,
    capped at w — a smaller weight only loosens the bound.
    """
    if vr.neutral_weight == vr.neutral_mass or vr.neutral_share == 0.0:
        return vr.neutral_weight
    return min(vr.neutral_mass, ratio_down(vr.neutral_weight / vr.neutral_share) * vr.neutral_share)


def _merge_neutral_parts(parts: Sequence[tuple[float, float]], neutral_mass: float
                         ) -> tuple[float, float]:
    """(s, λ) = (Σ_t s_t, min over s_t > 0 of w_t/s_t) of a split of the neutral part (module doc).

    Σ_t w_t must equal w (to 1e-9 relative): a split that loses victim mass is a caller error.
    λ is rounded down (a smaller weight only loosens the bound).
    """
    if isinstance(parts, (str, bytes)) or not isinstance(parts, Sequence) or not parts:
        raise TypeError(f"neutral_parts must be a non-empty sequence of (w_t, s_t) pairs, got {parts!r}")
    masses, shares = [], []
    for index, part in enumerate(parts):
        if not isinstance(part, Sequence) or len(part) != 2:
            raise TypeError(f"neutral_parts[{index}] must be a pair (w_t, s_t), got {part!r}")
        masses.append(check_range(f"neutral_parts[{index}][0]", part[0], 0.0, 1.0))
        shares.append(check_range(f"neutral_parts[{index}][1]", part[1], 0.0, 1.0))
    total = math.fsum(masses)
    if abs(total - neutral_mass) > 1e-9 * max(neutral_mass, 1e-300) + 1e-15:
        raise ValueError(
            f"neutral_parts masses must sum to the neutral mass w = {neutral_mass!r}, got {total!r}")
    ratios = [w_t / s_t for w_t, s_t in zip(masses, shares) if s_t > 0.0]
    if not ratios:
        return 0.0, 0.0
    return math.fsum(shares), ratio_down(min(ratios))


@functools.lru_cache(maxsize=4096)
def _delta_bracket(vr: VariationRatio, eps: float, n: int,
                   rtol: float, tail: float = 1e-18, bands: int = 4,
                   reference: bool = False, stop_below: float = _NEGLIGIBLE_DELTA,
                   direction: int | None = None) -> Bracket:
    """Bracket of the two-sided divergence, refined until its relative width is ≤ rtol.

    Truncated tail mass and band resolution are refined separately: the tail is shrunk when the
    dropped mass is a visible part of the upper bound, the bands are doubled (and, on the fast
    path, the C blocks shortened) when the remaining gap is. ``reference=True`` evaluates every
    (C, band) term with special functions (:func:`cellwise_directional_bracket`) instead of the
    fast recurrences — same certification, used to test the fast path.

    Cached on the VariationRatio itself (hashable by its fields: equal pairs share entries).

    Refinement also stops once the certified upper bound is ≤ ``stop_below`` (default
    ``_NEGLIGIBLE_DELTA`` = 1e-300: resolving smaller values relatively
    needs truncation far in the tails).
    """
    if vr.beta == 0.0 or eps >= vr.epsilon0:
        return Bracket(0.0, 0.0)
    if min(vr.r0, vr.r1) < _TINY_RATE:
        # clone rates underflow (β at the bottom of the float range): δ(ε) ≤ δ(0) ≤ TV = β, because
        # the pair is a post-processing of the victim's type, whose total variation is (p − 1)α = β
        return Bracket(0.0, min(1.0, vr.beta))
    # δ is non-increasing in ε, so evaluating at min(ε, 300) is an upper bound (e^ε overflows)
    problems = _directional_problems(vr, min(eps, _MAX_EVALUATED_EPSILON), n, direction)
    if not _finite_coefficients(problems):
        return Bracket(0.0, _victim_delta(vr, eps))
    return refined_bracket(problems, vr.beta, rtol, tail, bands, reference, stop_below)


def _finite_coefficients(problems: Sequence[DirectionalProblem]) -> bool:
    """Whether every c_A, c_B, c_K is a finite float (e^ε·pα/r_B overflows when p·q exceeds the
    float range, e.g. optimized unary encoding at ε0 = 500: r_B = e^{−500}/2)."""
    return all(math.isfinite(c) for problem in problems
               for c in (problem.c_a, problem.c_b, problem.c_k))


def _victim_delta(vr: VariationRatio, eps: float) -> float:
    """α·(p − e^ε)⁺ rounded up (β where p = ∞), capped at 1: the hockey-stick divergence of the
    victim's type, (pα, α, w) against (α, pα, w), of which the shuffled pair is a post-processing
    (the other users' reports do not depend on the victim's input) — an upper bound at any n."""
    if math.isinf(vr.p):
        return min(1.0, vr.beta)
    gap = max(vr.p - step_down(math.exp(eps)), 0.0)  # e^ε rounded down: the gap rounded up
    return min(1.0, vr.beta, step_up(vr.alpha * gap))


def refined_bracket(problems: Sequence[DirectionalProblem], total_variation: float, rtol: float,
                    tail: float = 1e-18, bands: int = 4, reference: bool = False,
                    stop_below: float = _NEGLIGIBLE_DELTA) -> Bracket:
    """Bracket of max over ``problems`` of (1/n)·E[(c_A·A + c_B·B + c_K·K)⁺], refined to ``rtol``.

    The refinement loop of :class:`VariationRatio` (see ``_delta_bracket``), for any list of
    directional problems of one pair: a Chernoff bound settles values below ``stop_below``; then
    tail truncation and band resolution are refined until (upper − lower) ≤ rtol·upper. The upper
    end is capped by ``total_variation``, a bound on the victim's total variation (δ(ε) ≤ δ(0) ≤ TV:
    the pair is a post-processing of the victim's report).
    """
    if not _finite_coefficients(problems):  # overflowed: the cap alone (see above) is certified
        return Bracket(0.0, min(1.0, total_variation))
    # far in the tail a Chernoff bound settles it without truncating deep into the tails
    chernoff = max(chernoff_log_upper(problem) for problem in problems)
    if chernoff < math.log(max(stop_below, 1e-308)):
        return Bracket(0.0, max(math.exp(chernoff), 5e-324))
    chernoff_upper = max(math.exp(chernoff), 5e-324)  # ln bound carries a 1e-9 margin: covers exp
    shift_tol = 0.1 * rtol
    lower = upper = 0.0
    for _ in range(12):
        if reference:
            results = [cellwise_directional_bracket(problem, bands, tail) for problem in problems]
        else:
            results = [directional_bracket(problem, bands, tail, shift_tol) for problem in problems]
        lower = max(r.lower for r in results)
        upper = min(max(r.upper for r in results), total_variation)
        lower = min(lower, upper)
        dropped = max(r.dropped for r in results)
        if upper - lower <= rtol * upper or upper <= stop_below:
            break
        if dropped > 0.1 * rtol * upper and tail > 1e-300:
            scale = 1e-3 * rtol * lower / dropped if lower > 0.0 else 1e-12
            tail = max(1e-300, tail * min(scale, 1e-2))
        elif bands < _MAX_BANDS:
            bands *= 2
            shift_tol *= 0.5
        else:
            break
    # the Chernoff bound is an upper bound as well (the ε search at tiny δ relies on it)
    upper = min(upper, chernoff_upper)
    return Bracket(min(lower, upper), upper)


def _gaussian_epsilon(mu: float, delta: float) -> float:
    """ε of μ-Gaussian DP at δ: Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2) = δ (bisection)."""
    def gdp_delta(eps: float) -> float:
        a = 0.5 * math.erfc((eps / mu - mu / 2.0) / math.sqrt(2.0))
        b = 0.5 * math.erfc((eps / mu + mu / 2.0) / math.sqrt(2.0))
        return a - math.exp(eps) * b

    return bisect(lambda eps: not gdp_delta(eps) > delta, mu * (mu + 40.0), 0.0, steps=80)


def _initial_guess(vr: VariationRatio, delta: float, n: int) -> float:
    """Starting point only (no guarantee): the Gaussian limit of the pair.

    The victim moves the clone counts (A, B) by ±(p − 1)α = ±β in mean; with Poisson-like counts of
    variance n·r0, n·r1 the pair is close to μ-Gaussian DP with μ = β·sqrt((1/r0 + 1/r1)/n).
    Finite-n skew makes the true ε ~20% smaller, hence the factor 0.8.
    """
    r0, r1 = max(vr.r0, 1e-300), max(vr.r1, 1e-300)
    mu = vr.beta * math.sqrt((1.0 / r0 + 1.0 / r1) / n)
    guess = 0.8 * _gaussian_epsilon(mu, delta) if 0.0 < mu < 10.0 else 1.0
    if math.isfinite(vr.epsilon0):
        guess = min(guess, 0.5 * vr.epsilon0)
    return max(guess, 1e-9)


def _chernoff_epsilon(vr: VariationRatio, delta: float, n: int, rtol: float) -> float:
    """The Chernoff ε of the pair (:func:`~dpacct_shuffle.core.tails.chernoff_epsilon` over both
    directions), at most ``vr.epsilon0`` (finite: δ = 0 there). Certified: :func:`refined_bracket` caps its
    upper end by the same Chernoff bound, so ``delta(ε, n) ≤ delta`` holds at the returned ε."""
    return chernoff_epsilon(
        lambda eps: _directional_problems(vr, min(eps, _MAX_EVALUATED_EPSILON), n), delta,
        vr.epsilon0, rtol)


def _epsilon_search(vr: VariationRatio, delta: float, n: int, rtol: float) -> float:
    """Smallest ε (relative tolerance rtol) with the certified δ_upper(ε) ≤ delta (see
    :func:`~dpacct_shuffle.core.search.epsilon_search`; the bound is evaluated at the public ``delta_interval``'s bracket).

    Tiny δ at huge n (``delta ≤ CHERNOFF_SEARCH_MAX_DELTA``, at least ``CHERNOFF_SEARCH_USERS``
    evaluated users): every evaluation of the banded bound truncates far into the tails of millions
    of C values (seconds each), so the answer is the Chernoff ε (:func:`_chernoff_epsilon`), a
    certified upper bound a few percent above the banded one (the Chernoff bound loses only a
    polynomial factor, small against ln(1/δ)).
    """
    n_eval = min(n, MAX_EVALUATED_USERS)
    if (delta < vr.beta and delta <= CHERNOFF_SEARCH_MAX_DELTA and n_eval >= CHERNOFF_SEARCH_USERS
            and math.isfinite(vr.epsilon0)):  # δ = 0 certified at ε0, the Chernoff search's cap
        return _chernoff_epsilon(vr, delta, n_eval, rtol)
    return epsilon_search(lambda eps: _delta_bracket(vr, eps, n_eval, _SEARCH_RTOL).upper,
                          delta, vr.beta, vr.epsilon0, _initial_guess(vr, delta, n), rtol)


def published_pair(p: float, beta: float, q: float, q1: float | None = None) -> VariationRatio:
    """The published variation-ratio pair (Wang et al., arXiv:2304.05007, Thm 4.1/4.7/4.8) — NOT A
    VALID BOUND IN GENERAL.

    It is the special case s = 1 − r0 − r1 (every other user's residual is the victim's neutral
    part N). For k-ary randomized response it under-reports: exact shuffled δ exceeds it
    (docs/theory.md, "Published pair":
    ε0 = 2, d = 5, n = 30, ε = 0.8, others holding a third value: exact 0.016845 vs 0.016270).
    Use it only to reproduce the paper's tables, never as a guarantee, unless the randomizer proves
    s = 1 − r0 − r1 is a valid neutral share. At worst-case β (w = 0) it coincides with the valid
    clone bound.
    """
    probe = VariationRatio(p, beta, q, q1=q1)
    share = max(0.0, 1.0 - probe.r0 - probe.r1)
    return VariationRatio(p, beta, q, q1=q1, neutral_share=share)


__all__ = ["VariationRatio", "published_pair", "DELTA_RTOL", "MAX_EVALUATED_USERS"]
