"""Exact shuffled privacy profiles of explicit instances: certified *lower* bounds (docs/theory.md,
"Lower bounds").

An upper bound is only useful next to a lower bound that shows the gap. Every value here is the
exact hockey-stick divergence of one explicit instance — a victim pair (x⁰, x¹) and a fixed
configuration of the other n − 1 users' inputs — after a post-processing of the shuffled output.
Post-processing cannot increase a hockey-stick divergence (data-processing inequality), and the
worst case over neighbouring datasets is at least the value of any one of them, so each number is
a certified lower bound on the shuffled protocol's δ(ε) (and, inverted, on its ε(δ)).

Post-processing used (the *trinomial projection*): fix two disjoint output sets S0, S1 (for a
finite randomizer S0 = {μ0 > μ1} and S1 = {μ1 > μ0}, the supports of Q0 and Q1 of docs/theory.md,
"Decomposition") and report only the counts (H0, H1) of shuffled messages in S0 and S1 — a function
of the multiset of messages. With all others holding the same input, their counts are multinomial
and the victim adds one message, so the pair of laws is explicit:

    P_j(h0, h1) = u_j0·O(h0 − 1, h1) + u_j1·O(h0, h1 − 1) + (1 − u_j0 − u_j1)·O(h0, h1),

with u_j = (R(x^j)(S0), R(x^j)(S1)) and O the Multinomial(n − 1; π0, π1, 1 − π0 − π1) law of the
others. For k-ary randomized response with the others holding x⁰ the projection is lossless (the
likelihood ratio of two histograms depends only on the counts of x⁰ and x¹), so the value is the
exact δ of that configuration. It is evaluated row by row in C = H0 + H1: on each row the
likelihood ratio is monotone in H0, so the positive part is a binomial tail
(:class:`TrinomialInstance`), O(√n) special-function calls per ε — fast at n = 10⁶.

Binary randomized response (:class:`BinaryRRProfile`): **exact to a certified tolerance**. The
output is the count of ones; with m of the others holding 1 it is
S_m + V, S_m = Bin(m, a) + Bin(n − 1 − m, 1 − a), a = e^ε0/(e^ε0 + 1), V the victim's bit, and the
protocol's δ(ε) = max_m δ_m(ε) (δ_m: max of both hockey-stick directions; δ_m = δ_{n−1−m} by
relabelling 0 ↔ 1, so m ≤ (n − 1)/2 suffices). **The homogeneous configuration (all others
holding the same value) is not always the worst one**: e.g. ε0 = 1, n = 50, ε = 0.3 gives
δ = 2.2563e-3 for m = 0 but 2.3562e-3 for m = 1, and ε0 = 2, n = 10, ε = 0.1 gives 0.2604 (m = 0)
vs 0.3064 (m = 5). The worst m is found by a certified branch and bound over blocks of m:

* Block bound. Bern(a) = (2a − 1)·δ_1 + 2(1 − a)·Bern(½) and Bern(1 − a) = (2a − 1)·δ_0 +
  2(1 − a)·Bern(½). For a block m ∈ [m1, m2] order the others so that m1 of them hold 1,
  n − 1 − m2 hold 0 and the b = m2 − m1 "free" ones hold 1 or 0 depending on m. Reveal to the
  adversary, for each free user, whether it drew the deterministic branch and, if so, its output.
  The revealed information has the same law under both victim inputs, and the count given it is
  a known shift (the deterministic outputs) of Bin(m1, a) + Bin(n − 1 − m2, 1 − a) + Bin(J, ½) + V,
  J = number of free users that drew the fair coin, J ~ Bin(b, 2(1 − a)). The shuffled count is a
  post-processing of (revealed, count) and a hockey-stick divergence is shift-invariant, so for
  every m in the block and each direction
  δ_m(ε) ≤ U_block(ε) = Σ_J P[J] · D_{e^ε}(law of that sum with V from victim 0 ‖ with victim 1).
  D_J is non-increasing in J (an added independent fair coin is post-processing), so J is grouped
  in bands charged at their lowest J; J outside its window is charged 1. A block of one
  configuration (b = 0) gives its exact δ_m. Revealing b users removes ≈ b·(1 − a)(a − ½) of the
  count's variance, so U_block is within rtol of the block's δ_m once b is a small fraction of n.
* δ(ε) (:meth:`BinaryRRProfile.delta_interval`): L = largest certified lower δ_m over evaluated
  configurations (the ends, the middle, block midpoints, small blocks one by one), U = largest
  U_block over a partition of [0, (n − 1)/2] (best first: the block with the largest U is split in
  halves) until U ≤ L·(1 + rtol).
* ε(δ) (:meth:`BinaryRRProfile.epsilon_interval`): ε_lo = largest ε with some evaluated lower
  δ_m(ε) > δ (regula falsi over the best configurations), then ε_hi = ε_lo·(1 + rtol) is certified
  by splitting blocks until every U_block(ε_hi) ≤ δ; U_block is non-increasing in ε, so a block
  pruned at one ε_hi stays pruned when a worse configuration found on the way raises ε_lo.

"Exact" (``is_exact``) means: the returned interval is certified and its relative width is at
most rtol (default ``BINARY_RR_RTOL`` = 1e-3); values below 1e-200 count as 0. The lower ends
(:meth:`delta`, :meth:`epsilon`) are certified lower bounds on the protocol's profile, the upper
ends certified upper bounds. Numerics of this search: binomial pmfs by a ratio recurrence from
the mode, normalised by their sum (relative error ≤ 24·steps·u, no special functions), Chernoff
windows whose excluded mass (≤ 1e-5·rtol·δ per window) is added to upper ends, direct
convolutions of nonnegative terms (relative error ≤ length·u), margins η·(P + e^ε·Q) per cell
(:class:`_Law`, :func:`_hockey_stick_bounds`).

Numerics of the trinomial instances (every reported value stays below the exact value of its
instance). Binomial log-pmfs use ``scipy.special.gammaln``, whose absolute error is a few ulp of
ln((n − 1)!), i.e. a relative error η of each probability; binomial tails come from
``scipy.special.betainc``/``betaincc`` (relative error covered by ``TrinomialInstance.TAIL_REL_ERROR``
and the core's :func:`~dpacct_shuffle.core.numerics.special_function_rtol` of the row's trials).
Every summed set S contributes Σ_S(P − e^ε·Q) − η·Σ_S(P + e^ε·Q). The hockey-stick divergence is a
supremum over sets, so a set that is not exactly the positive part (a rounding-level error in a
threshold) still gives a lower bound. Cells beyond ±``WINDOW_SIGMAS`` standard deviations are
dropped: dropping nonnegative terms keeps a lower bound.
"""

from __future__ import annotations

import functools
import heapq
import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
from scipy.special import betainc, betaincc, gammaln, xlog1py, xlogy

from dpacct_shuffle.core.numerics import special_function_rtol
from dpacct_shuffle.core.validation import check_delta, check_epsilon, check_num_users, check_range

FULL_SEARCH_MAX_USERS = 3000
WINDOW_SIGMAS = 12.0
_UNIT_ROUNDOFF = 2.0 ** -53
_BISECTION_STEPS = 80
_EPS_SEARCH_CAP = 700.0  # e^700 is still a finite double


def _log_rel_error(n: int) -> float:
    """Bound on the relative error of a binomial probability computed from ``gammaln`` terms.

    Each ln k! (k ≤ n) is accurate to a few ulp of ln n!; a log-pmf adds three of them and two
    ``xlogy`` terms, so 64 ulp of ln n! (plus a floor) bounds its absolute error, i.e. the
    relative error of the probability.
    """
    top = float(gammaln(max(n, 1) + 1.0)) + 1.0
    return 64.0 * math.ulp(top) + 1e-13


def binomial_logpmf(k: np.ndarray, n: int | np.ndarray, p: float,
                    complement: float | None = None) -> np.ndarray:
    """ln P[Bin(n, p) = k] (−inf outside 0 ≤ k ≤ n), vectorised (``scipy.special.gammaln``).

    ``complement`` is 1 − p when it is known more accurately than the float 1 − p (a mass summed
    directly, e.g. 1e-17 where p rounds to 1.0)."""
    k_arr = np.asarray(k, dtype=np.int64)
    n_arr = np.broadcast_to(np.asarray(n, dtype=np.int64), k_arr.shape)
    valid = (k_arr >= 0) & (k_arr <= n_arr)
    kk = np.where(valid, k_arr, 0).astype(float)
    nn = np.where(valid, n_arr, 0).astype(float)
    failures = xlog1py(nn - kk, -p) if complement is None else xlogy(nn - kk, complement)
    out = (gammaln(nn + 1.0) - gammaln(kk + 1.0) - gammaln(nn - kk + 1.0)
           + xlogy(kk, p) + failures)
    return np.where(valid, out, -np.inf)


def _window(n: int, p: float) -> tuple[int, int]:
    """Integer range [lo, hi] holding all but a negligible mass of Bin(n, p)."""
    mean, sd = n * p, math.sqrt(n * p * (1.0 - p))
    half = WINDOW_SIGMAS * sd + 2.0 * WINDOW_SIGMAS + 2.0
    return max(0, int(math.floor(mean - half))), min(n, int(math.ceil(mean + half)))


@dataclass(frozen=True)
class CountPair:
    """Two laws (P, Q) on a common finite grid, stored as log-probabilities; exact hockey-stick.

    ``log_rel_error`` is the bound η on the relative error of each stored probability; values
    returned by :meth:`delta` are lowered by η·Σ_S(P + e^ε·Q), so they never exceed the exact
    hockey-stick divergence of the exact laws.
    """

    log_p: np.ndarray
    log_q: np.ndarray
    log_rel_error: float
    description: str = ""

    def _direction(self, log_a: np.ndarray, log_b: np.ndarray, eps: float) -> float:
        loss = log_a - log_b
        mask = loss > eps
        if not np.any(mask):
            return 0.0
        la, lb = log_a[mask], log_b[mask]
        pa = np.exp(la)
        terms = pa * -np.expm1(eps + lb - la)
        total = math.fsum(terms.tolist())
        margin = self.log_rel_error * (math.fsum(pa.tolist()) + math.exp(eps) * math.fsum(np.exp(lb).tolist()))
        return max(0.0, total - margin)

    def delta(self, epsilon: float) -> float:
        """max(D_{e^ε}(P‖Q), D_{e^ε}(Q‖P)), rounded down."""
        eps = check_epsilon(epsilon)
        return max(self._direction(self.log_p, self.log_q, eps),
                   self._direction(self.log_q, self.log_p, eps))

    def max_loss(self) -> float:
        """Largest |ln P − ln Q| on the grid: δ(ε) = 0 beyond it."""
        both = np.isfinite(self.log_p) | np.isfinite(self.log_q)
        diff = np.abs(self.log_p[both] - self.log_q[both])
        return float(np.max(diff)) if diff.size else 0.0


def _epsilon_lower(delta_fn: Callable[[float], float], delta: float, eps_cap: float, rtol: float = 1e-6) -> float:
    """Largest found ε (bracket lower end) with delta_fn(ε) > delta; 0 if delta_fn(0) <= delta.

    delta_fn is a lower bound of a non-increasing profile, so the exact ε(δ) of the instance —
    and hence the protocol's ε(δ) — is at least the returned value. The bracket [lo, hi] with
    delta_fn(lo) > δ ≥ delta_fn(hi) is narrowed by regula falsi on log δ (Illinois variant,
    safeguarded by bisection) to relative width ``rtol``.
    """
    target = check_delta(delta)
    d_lo = delta_fn(0.0)
    if d_lo <= target:
        return 0.0
    # geometric search for a bracket, starting from a small ε (targets are usually far below ln p)
    cap = eps_cap if math.isfinite(eps_cap) and eps_cap > 0.0 else math.inf
    lo = 0.0
    hi = min(0.01, 0.5 * cap)
    d_hi = delta_fn(hi)
    if d_hi > target:
        while d_hi > target:
            lo, d_lo = hi, d_hi
            if hi >= cap:
                return lo
            if hi >= _EPS_SEARCH_CAP:
                return lo  # the instance keeps δ > target up to ε = 700 (e.g. p = ∞)
            hi = min(4.0 * hi, cap, _EPS_SEARCH_CAP)
            d_hi = delta_fn(hi)
    else:
        while True:
            trial = hi / 4.0
            d_trial = delta_fn(trial)
            if d_trial > target:
                lo, d_lo = trial, d_trial
                break
            hi, d_hi = trial, d_trial
            if hi < 1e-12:
                return 0.0
    log_t = math.log(target)
    f_lo = math.log(d_lo) - log_t
    f_hi = math.log(d_hi) - log_t if d_hi > 0.0 else -math.inf
    last = 0
    for _ in range(_BISECTION_STEPS):
        width = hi - lo
        if width <= rtol * hi:
            break
        if math.isfinite(f_hi):
            trial = hi - f_hi * width / (f_hi - f_lo)
            trial = min(max(trial, lo + 1e-3 * width), hi - 1e-3 * width)
        else:
            trial = lo + 0.5 * width
        d_trial = delta_fn(trial)
        if d_trial > target:
            lo, f_lo = trial, math.log(d_trial) - log_t
            if last == 1 and math.isfinite(f_hi):
                f_hi *= 0.5  # Illinois: the retained end's value is halved
            last = 1
        else:
            hi, f_hi = trial, (math.log(d_trial) - log_t) if d_trial > 0.0 else -math.inf
            if last == -1:
                f_lo *= 0.5
            last = -1
    return lo


class InstanceLowerBound:
    """Certified lower bound: the maximum over explicit instances (each a :class:`CountPair`)."""

    def __init__(self, pairs: Sequence["CountPair | TrinomialInstance"], description: str, *,
                 is_exact: bool = False) -> None:
        if not pairs:
            raise ValueError("pairs must contain at least one instance")
        self.pairs = tuple(pairs)
        self.description = description
        self.is_exact = is_exact

    def delta(self, epsilon: float) -> float:
        """Lower bound on the protocol's δ(ε)."""
        eps = check_epsilon(epsilon)
        return max(pair.delta(eps) for pair in self.pairs)

    def epsilon(self, delta: float) -> float:
        """Lower bound on the protocol's ε(δ)."""
        cap = max(pair.max_loss() for pair in self.pairs)
        return _epsilon_lower(self.delta, delta, cap)


Masses = Sequence[float]


def _masses(name: str, values: Masses) -> tuple[np.ndarray, bool]:
    """(R(S0), R(S1), rest) of one input and whether the rest was given (see TrinomialInstance).

    Two entries: rest = 1 − R(S0) − R(S1), computed by subtraction (its cancellation error is
    charged to the margins). Three entries: the rest measured directly (a sum over the outputs
    outside S0 ∪ S1); the triple is normalised by its sum, so a row that sums to 1 only within
    tolerance (e.g. [1.0, 1e-17]) keeps its small masses instead of losing them to rounding."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or len(values) not in (2, 3):
        raise TypeError(f"{name} must be (mass of S0, mass of S1) or (S0, S1, rest), got {values!r}")
    parts = [check_range(f"{name}[{k}]", value, 0.0, 1.0) for k, value in enumerate(values)]
    if len(parts) == 2:
        if parts[0] + parts[1] > 1.0 + 1e-12:
            raise ValueError(f"{name} masses must sum to at most 1, got {parts[0] + parts[1]!r}")
        return np.array([parts[0], parts[1], max(0.0, 1.0 - parts[0] - parts[1])]), False
    total = math.fsum(parts)
    if abs(total - 1.0) > 1e-9:
        raise ValueError(f"{name} masses (S0, S1, rest) must sum to 1, got {total!r}")
    return np.array(parts) / total, True


def _binomial_tail(t: np.ndarray, n: np.ndarray, p: float, upper: bool) -> np.ndarray:
    """P[Bin(n, p) >= t] (upper) or P[Bin(n, p) <= t] (lower), elementwise, n >= 0.

    Regularized incomplete beta functions: P[Bin(n, p) ≥ t] = I_p(t, n − t + 1) and
    P[Bin(n, p) ≤ t] = 1 − I_p(t + 1, n − t), the latter from ``betaincc`` (no cancellation).
    Relative error: :func:`~dpacct_shuffle.core.numerics.special_function_rtol`. (scipy's
    ``bdtr``/``bdtrc`` are not used: in scipy 1.17 their relative error exceeds 1e-9 from
    n ≈ 10⁶ — P[Bin(10⁸, ½) > 5·10⁷] comes out 0.3896 instead of 0.49996 — and they return NaN
    for n ≥ 2³¹.)"""
    t = np.asarray(t, dtype=np.int64)
    n = np.asarray(n, dtype=np.int64)
    tf, nf = t.astype(float), n.astype(float)
    if upper:
        inside = (t >= 1) & (t <= n)
        val = betainc(np.where(inside, tf, 1.0), np.where(inside, nf - tf + 1.0, 1.0), p)
        return np.where(t <= 0, 1.0, np.where(t > n, 0.0, val))
    inside = (t >= 0) & (t < n)
    val = betaincc(np.where(inside, tf + 1.0, 1.0), np.where(inside, nf - tf, 1.0), p)
    return np.where(t < 0, 0.0, np.where(t >= n, 1.0, val))


class TrinomialInstance:
    """Exact hockey-stick divergence of the trinomial projection (module docstring).

    Coordinates: C = H0 + H1 (total count in S0 ∪ S1) and H0. For a fixed C the likelihood ratio
    P0/P1 is monotone in H0 (each law is a mixture of the three shifted multinomials, and
    O(C−1, h−1)/O(C, h) ∝ h, O(C−1, h)/O(C, h) ∝ C − h, so the ratio is linear-fractional in h;
    when the others never fall outside S0 ∪ S1 it is a monotone function of h(1 − θ)/((C − h + 1)θ)).
    So the positive part of P0 − e^ε·P1 on the row C is a tail {H0 ≥ t_C} (or {H0 ≤ t_C}), whose
    masses are binomial tails: δ = Σ_C [A0(C) − e^ε·A1(C)] with

        A_j(C) = u_j0·w(C−1)·P[Bin(C−1, θ) ≥ t−1] + u_j1·w(C−1)·P[Bin(C−1, θ) ≥ t]
                 + u_j2·w(C)·P[Bin(C, θ) ≥ t],   w(C) = P[Bin(n − 1, π0 + π1) = C],  θ = π0/(π0 + π1).

    Threshold in closed form (0 < θ < 1): dividing by w(C)·P[Bin(C, θ) = h] and using
    w(C−1)/w(C) = ρ_C = C(1 − π)/((n − C)π) (π = π0 + π1, n − 1 others),
    P[Bin(C−1, θ) = h−1]/P[Bin(C, θ) = h] = h/(Cθ) and P[Bin(C−1, θ) = h]/P[Bin(C, θ) = h] =
    (C − h)/(C(1 − θ)), the sign of P0 − e^ε·P1 in the cell (C, h) is that of the affine function
    g(h) = ρ_C·(d0·h/(Cθ) + d1·(C − h)/(C(1 − θ))) + d2, d_k = u_0k − e^ε·u_1k; its slope has the sign
    of d0/θ − d1/(1 − θ) on every row, so the positive part is an upper or a lower tail in H0 cut at
    the root of g. (θ ∈ {0, 1}: a vectorised bisection on the log-likelihood ratio instead.) Any
    choice of the sets {H0 ≥ t_C} gives a valid lower bound (the hockey-stick divergence is the
    supremum over sets), so a rounding error in t_C only costs tightness, never validity.

    Rounding. A row is w(C)·(a − e^ε·b) with a, b the tail combinations relative to w(C) (using ρ_C,
    accurate to a few ulp): it contributes w(C)·(1 − η_w)·max(0, a − e^ε·b − η·(a + e^ε·b)), with η =
    max(``TAIL_REL_ERROR``, the core's ``special_function_rtol`` of the row's trials) for the
    special functions and η_w the relative error of the gammaln-based
    w(C) — a common factor of the row, so it scales the row's (small) positive part instead of its
    (large) masses; this keeps the bound informative at n = 10⁸.
    """

    TAIL_REL_ERROR = 1e-10

    def __init__(self, n: int, victim0: Masses, victim1: Masses, other: Masses,
                 description: str = "") -> None:
        users = check_num_users(n)
        u, u_measured = _masses("victim0", victim0)
        v, v_measured = _masses("victim1", victim1)
        o, o_measured = _masses("other", other)
        self.description = description
        self.others = users - 1
        self.u = u
        self.v = v
        pi_c = min(1.0, float(o[0] + o[1]))
        rest_others = float(o[2]) if o_measured else 1.0 - pi_c
        self.theta = min(1.0, float(other[0]) / pi_c) if pi_c > 0.0 else 0.5
        c_lo, c_hi = _window(self.others, pi_c)
        self.c = np.arange(c_lo, c_hi + 2)
        complement = rest_others if o_measured else None
        self.log_w = binomial_logpmf(self.c, self.others, pi_c, complement)
        self.log_w_prev = binomial_logpmf(self.c - 1, self.others, pi_c, complement)
        # each row's probabilities relative to W(C) = max(w(C), w(C − 1)): factors of w(C − 1) and
        # w(C) from ρ_C = w(C − 1)/w(C) (w(−1) = w(others + 1) = 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(
                (self.c >= 1) & (self.c <= self.others) & (pi_c > 0.0) & (rest_others > 0.0),
                self.c * rest_others / ((self.others - self.c + 1) * pi_c), np.nan)
        ratio = np.where(self.c == 0, 0.0, np.where(self.c > self.others, np.inf, ratio))
        exact_rows = np.isfinite(ratio) | np.isinf(ratio)  # NaN: π ∈ {0, 1}, use the log-pmfs
        with np.errstate(invalid="ignore"):
            from_logs = np.exp(self.log_w_prev - self.log_w)
        # rows where both weights vanish carry no mass: any finite factor
        ratio = np.where(exact_rows, ratio, np.where(np.isnan(from_logs), 1.0, from_logs))
        cur_larger = ratio <= 1.0
        with np.errstate(divide="ignore"):
            self.prev_factor = np.where(cur_larger, ratio, 1.0)
            self.cur_factor = np.where(cur_larger, 1.0, 1.0 / ratio)
        self.log_base = np.where(cur_larger, self.log_w, self.log_w_prev)
        # does P0/P1 increase with H0? (victim 0 favours S0 relative to victim 1)
        self.increasing = bool(self.u[0] * self.v[1] >= self.u[1] * self.v[0])
        # Derived masses that lose relative accuracy by cancellation (module docstring): the
        # victims' rest masses 1 − R(S0) − R(S1), the others' 1 − π and the binomial parameter θ
        # near 0 or 1 (a C-trial law's relative sensitivity to θ is ≤ C/min(θ, 1 − θ)). Their
        # relative errors widen the row margin; w(C) carries (others − C)·(error of ln(1 − π)).
        # Rest masses given explicitly (three entries) were summed directly: relative error a few
        # ulp, no cancellation.
        unit = 8.0 * _UNIT_ROUNDOFF
        cancel = 0.0
        for rest, measured in ((self.u[2], u_measured), (self.v[2], v_measured)):
            if rest > 0.0:
                cancel += unit if measured else unit / rest
        if o_measured:
            others_error = unit
        else:
            others_error = unit / rest_others if rest_others > 0.0 else 0.0
        if 0.0 < self.theta < 1.0:
            cancel += float(self.c.max()) * unit / min(self.theta, 1.0 - self.theta)
        tail_error = max(self.TAIL_REL_ERROR, float(special_function_rtol(float(self.c.max()))))
        self._row_error = tail_error + cancel + others_error
        self._weight_error = 2.0 * _log_rel_error(self.others) + self.others * others_error

    def _log_law(self, weights: np.ndarray, h: np.ndarray) -> np.ndarray:
        c, theta = self.c, self.theta
        parts = []
        if weights[0] > 0:
            parts.append(math.log(weights[0]) + self.log_w_prev
                         + binomial_logpmf(h - 1, np.maximum(c - 1, 0), theta))
        if weights[1] > 0:
            parts.append(math.log(weights[1]) + self.log_w_prev
                         + binomial_logpmf(h, np.maximum(c - 1, 0), theta))
        if weights[2] > 0:
            parts.append(math.log(weights[2]) + self.log_w + binomial_logpmf(h, c, theta))
        return functools.reduce(np.logaddexp, parts)

    def _threshold(self, num: np.ndarray, den: np.ndarray, eps: float, increasing: bool) -> np.ndarray:
        """Per row C: first h with loss > eps (increasing) or last such h (decreasing)."""
        lo = np.full(self.c.shape, -1, dtype=np.int64)
        hi = self.c + 1
        for _ in range(int(math.ceil(math.log2(float(self.c.max()) + 3.0))) + 1):
            mid = (lo + hi) // 2
            with np.errstate(invalid="ignore"):
                loss = self._log_law(num, mid) - self._log_law(den, mid)
            # cells outside both supports (0/0) sit at the extremes of the row: classify them so
            # that the predicate stays monotone (they carry no mass either way)
            above = mid > self.theta * self.c
            loss = np.where(np.isnan(loss), np.where(above == increasing, np.inf, -np.inf), loss)
            positive = loss > eps
            if increasing:  # find smallest positive h in (lo, hi]
                hi = np.where(positive & (mid > lo), mid, hi)
                lo = np.where(~positive & (mid > lo), mid, lo)
            else:  # find largest positive h: invariant loss(lo) > eps or lo = -1, hi not positive
                lo = np.where(positive & (mid > lo), mid, lo)
                hi = np.where(~positive & (mid > lo), mid, hi)
            if np.all(hi - lo <= 1):
                break
        return hi if increasing else lo

    def _linear_threshold(self, num: np.ndarray, den: np.ndarray, eps: float
                          ) -> tuple[np.ndarray, bool]:
        """(t_C, upper): the positive part of row C is {H0 ≥ t_C} (upper) or {H0 ≤ t_C}, from the
        root of the affine g(h) of the class docstring (0 < θ < 1)."""
        theta, scale = self.theta, math.exp(eps)
        d0, d1, d2 = (num[k] - scale * den[k] for k in range(3))
        direction = d0 / theta - d1 / (1.0 - theta)
        c = self.c.astype(float)
        slope = self.prev_factor / np.maximum(c, 1.0) * direction
        intercept = self.prev_factor * d1 / (1.0 - theta) + self.cur_factor * d2
        upper = direction >= 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            root = np.where(slope != 0.0, -intercept / slope, 0.0)
        if upper:  # g > 0 for h > root (slope > 0), or everywhere/nowhere (slope = 0)
            cut = np.where(slope > 0.0, np.floor(np.clip(root, -1.0, c + 1.0)) + 1.0,
                           np.where(intercept > 0.0, 0.0, c + 1.0))
            return np.clip(cut, 0.0, c + 1.0).astype(np.int64), True
        cut = np.where(slope < 0.0, np.ceil(np.clip(root, -1.0, c + 1.0)) - 1.0,
                       np.where(intercept > 0.0, c, -1.0))
        return np.clip(cut, -1.0, c).astype(np.int64), False

    def _relative_masses(self, num: np.ndarray, den: np.ndarray, t: np.ndarray, upper: bool
                         ) -> tuple[np.ndarray, np.ndarray]:
        """Σ_k weights_k·(tail k) relative to W(C) = max(w(C), w(C − 1)), for both weight vectors
        (the three tails are shared)."""
        c, theta = self.c, self.theta
        prev_n = np.maximum(c - 1, 0)
        t0 = _binomial_tail(t - 1, prev_n, theta, upper)
        t1 = _binomial_tail(t, prev_n, theta, upper)
        t2 = _binomial_tail(t, c, theta, upper)
        return tuple(self.prev_factor * (weights[0] * t0 + weights[1] * t1)
                     + self.cur_factor * weights[2] * t2 for weights in (num, den))

    def _direction(self, num: np.ndarray, den: np.ndarray, eps: float, increasing: bool) -> float:
        if 0.0 < self.theta < 1.0:
            t, upper = self._linear_threshold(num, den, eps)
        else:
            t, upper = self._threshold(num, den, eps, increasing), increasing
        a, b = self._relative_masses(num, den, t, upper)
        scale = math.exp(eps)
        rows = np.maximum(a - scale * b - self._row_error * (a + scale * b), 0.0)
        total = math.fsum((np.exp(self.log_base) * rows).tolist())
        return total * max(0.0, 1.0 - self._weight_error) * (1.0 - 1e-12)

    def delta(self, epsilon: float) -> float:
        """max(D_{e^ε}(P0‖P1), D_{e^ε}(P1‖P0)) of the projected counts, rounded down."""
        eps = check_epsilon(epsilon)
        return max(self._direction(self.u, self.v, eps, self.increasing),
                   self._direction(self.v, self.u, eps, not self.increasing))

    def max_loss(self) -> float:
        """An upper bound on |ln P0/P1| (ratio of mixtures ≤ largest component ratio)."""
        ratios = []
        for a, b in zip(self.u, self.v):
            if a > 0 or b > 0:
                ratios.append(math.inf if min(a, b) == 0 else abs(math.log(a / b)))
        return max(ratios) if ratios else 0.0


def trinomial_projection(
    n: int,
    victim0: Masses,
    victim1: Masses,
    other: Masses,
    description: str = "",
) -> TrinomialInstance:
    """Laws of (H0, H1), the numbers of shuffled messages in S0 and S1 (module docstring).

    Args:
      n: total number of users (the victim plus n − 1 others).
      victim0: (R(x^0)(S0), R(x^0)(S1)) for the victim's first input, optionally with a third
        entry, the mass outside S0 ∪ S1 summed directly (then the triple must sum to 1 within
        1e-9 and is normalised; use it when that mass is far below 1 − R(S0) − R(S1)'s rounding
        error).
      victim1: the same for the victim's second input x^1.
      other: (π0, π1) = (R(x_i)(S0), R(x_i)(S1)), the same input x_i for all n − 1 others
        (optionally with its rest mass, as above).
    """
    return TrinomialInstance(n, victim0, victim1, other, description)


# -- binary randomized response ------------------------------------------------------------------
BINARY_RR_RTOL = 1e-3
BINARY_RR_MAX_BLOCKS = 20000
_TRUNCATION_SHARE = 1e-5  # truncated mass per window, relative to rtol × (the δ being certified)
_MIN_TRUNCATION = 1e-280
_UNDERFLOW = 1e-290
_SUBNORMAL = 5e-324  # absolute rounding error of a result in the subnormal range
_NEGLIGIBLE_DELTA = 1e-200  # intervals [L, U] with U below this count as exact (δ = 0 to 1e-200)
_LEAF_CONFIGURATIONS = 4  # blocks of at most this many configurations are evaluated one by one
_TOP_CANDIDATES = 8  # configurations used for the ε bisection of the lower end
_RETAINED_CANDIDATES = 32  # exact configuration laws kept between queries (per truncation budget)
_MAX_CANDIDATE_SETS = 6
# cumulative probabilities at which the revealed count J of fair coins starts a new band
# (11 bands: within 1e-4 relative of summing every J at n = 10⁶, blocks of 10³–10⁴ configurations)
_BAND_QUANTILES = (0.0, 1e-12, 1e-8, 1e-5, 1e-3, 0.01, 0.05, 0.15, 0.3, 0.5, 0.7)
_EXACT_BANDS_UP_TO = 12  # at most this many values of J: every J is its own band


def _binomial_kl(x: float, p: float, q: float) -> float:
    """KL(Bern(x) ‖ Bern(p)) with q = 1 − p given separately (accurate for p near 1)."""
    value = 0.0
    if x > 0.0:
        value += x * math.log(x / p)
    if x < 1.0:
        value += (1.0 - x) * math.log((1.0 - x) / q)
    return value


def _chernoff_below(trials: int, p: float, q: float, k: int) -> float:
    """Upper bound on P[Bin(trials, p) < k] (Chernoff: exp(−trials·KL((k−1)/trials ‖ p)))."""
    if k <= 0:
        return 0.0
    x = (k - 1) / trials
    if x >= p:
        return 1.0
    return min(1.0, math.exp(-trials * _binomial_kl(x, p, q) * (1.0 - 1e-6)))


def _chernoff_above(trials: int, p: float, q: float, k: int) -> float:
    """Upper bound on P[Bin(trials, p) > k]."""
    if k >= trials:
        return 0.0
    x = (k + 1) / trials
    if x <= p:
        return 1.0
    return min(1.0, math.exp(-trials * _binomial_kl(x, p, q) * (1.0 - 1e-6)))


@dataclass(frozen=True)
class _Law:
    """A count law on the window offset..offset+len(values)−1, with certified error terms.

    Meaning: there is T ∈ [1 − dropped, 1] such that the true law restricted to the event "every
    summand inside its window" is T·values[k]·(1 + ζ_k) with |ζ_k| ≤ rel_error, and the rest of the
    true law (total mass 1 − T ≤ dropped) lies anywhere.
    """

    values: np.ndarray
    offset: int
    rel_error: float
    dropped: float


def _binomial_law(trials: int, p: float, q: float, budget: float) -> _Law:
    """Bin(trials, p) (q = 1 − p given separately) on a Chernoff window of excluded mass ≤ budget.

    The pmf is built by the ratio recurrence P(k+1)/P(k) = (trials − k)/(k + 1)·p/q from the
    mode and normalised by its computed sum. Each step has ≤ 2 roundings plus the ≤ 10u relative
    error of p/q (p and q are themselves rounded results), so the relative error of each cell is
    ≤ 2·12·(steps + 1)·u + (len + 4)·u (u = 2⁻⁵³), and the normalising constant is the
    kept mass T ∈ [1 − dropped, 1]: no special function enters the values. Cells below
    ``_UNDERFLOW`` (relative to the mode) are zeroed and counted as dropped mass.
    """
    if trials == 0 or p == 0.0:
        return _Law(np.ones(1), 0, 0.0, 0.0)
    if q == 0.0:
        return _Law(np.ones(1), trials, 0.0, 0.0)
    mean, sd = trials * p, math.sqrt(trials * p * q)
    z = math.sqrt(2.0 * math.log(2.0 / budget)) + 0.5
    while True:
        half = z * sd + 2.0 * z
        lo = max(0, int(math.floor(mean - half)))
        hi = min(trials, int(math.ceil(mean + half)))
        dropped = _chernoff_below(trials, p, q, lo) + _chernoff_above(trials, p, q, hi)
        if dropped <= budget:
            break
        z += 1.0
    mode = min(max(int(math.floor((trials + 1) * p)), lo), hi)
    odds = p / q
    ks_up = np.arange(mode, hi, dtype=float)
    up = np.cumprod((trials - ks_up) / (ks_up + 1.0) * odds)
    ks_down = np.arange(mode - 1, lo - 1, -1, dtype=float)
    down = np.cumprod((ks_down + 1.0) / (trials - ks_down) / odds)
    raw = np.concatenate((down[::-1], [1.0], up))
    tiny = raw < _UNDERFLOW
    if np.any(tiny):  # below the mode by > 1e290: true mass < 1e-290 per cell
        raw = np.where(tiny, 0.0, raw)
        dropped += float(np.count_nonzero(tiny)) * 2.0 * _UNDERFLOW
    total = float(np.sum(raw))
    steps = max(hi - mode, mode - lo)
    rel = (24.0 * (steps + 1) + raw.size + 4) * _UNIT_ROUNDOFF * (1.0 + 1e-6)
    return _Law(raw / total, lo, rel, dropped)


def _trim(values: np.ndarray, budget: float, rel_error: float) -> tuple[np.ndarray, int, float]:
    """Drop end cells of total (upper-bounded) mass ≤ budget; returns (values, shift, dropped)."""
    scale = (1.0 + rel_error) * (1.0 + (values.size + 2) * _UNIT_ROUNDOFF)
    head = np.cumsum(values) * scale
    tail = np.cumsum(values[::-1]) * scale
    cut_lo = int(np.searchsorted(head, 0.5 * budget, side="right"))
    cut_hi = int(np.searchsorted(tail, 0.5 * budget, side="right"))
    if cut_lo + cut_hi >= values.size:
        return values, 0, 0.0
    dropped = (float(head[cut_lo - 1]) if cut_lo else 0.0) + (float(tail[cut_hi - 1]) if cut_hi else 0.0)
    return values[cut_lo: values.size - cut_hi], cut_lo, dropped


def _convolve(first: _Law, second: _Law, budget: float) -> _Law:
    """Law of the independent sum (direct convolution of nonnegative terms: relative error ≤
    (min length + 2)·u per cell on top of the summands'), trimmed to excluded mass ≤ budget.
    Products in the subnormal range have an absolute error ≤ 5e-324 each; their total is
    counted as dropped mass."""
    values = np.convolve(first.values, second.values)
    rel = (first.rel_error + second.rel_error + (min(first.values.size, second.values.size) + 2)
           * _UNIT_ROUNDOFF) * (1.0 + 1e-6)
    kept, shift, cut = _trim(values, budget, rel)
    subnormal = float(first.values.size) * float(second.values.size) * _SUBNORMAL
    return _Law(kept, first.offset + second.offset + shift, rel,
                first.dropped + second.dropped + cut + subnormal)


def _victim_laws(law: _Law, keep: float, flip: float) -> tuple[np.ndarray, np.ndarray]:
    """Output count with the victim holding 0 (its bit is 1 w.p. flip = 1 − a) and holding 1."""
    padded = np.concatenate(([0.0], law.values, [0.0]))
    stay, shift = padded[1:], padded[:-1]
    return keep * stay + flip * shift, flip * stay + keep * shift


def _hockey_stick_bounds(big: np.ndarray, small: np.ndarray, rel_error: np.ndarray | float,
                         dropped: np.ndarray | float, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """Certified (lower, upper) on D_{e^ε}(P‖Q) for laws given as in :class:`_Law` (last axis =
    counts; rows may be stacked). With η the cell error (+16u for the rounded a, 1 − a, e^ε and
    for forming P, Q and P − e^ε·Q):

        lower = (1 − dropped)·Σ_{P̂ − e^ε·Q̂ > m} (P̂ − e^ε·Q̂ − m) − e^ε·dropped,
        upper = Σ max(0, P̂ − e^ε·Q̂ + m) + dropped,      m = η·(P̂ + e^ε·Q̂),

    each sum of nonnegative terms rounded in the safe direction by (len + 2)·u; results in the
    subnormal range are covered by adding 8·len·5e-324 to ``dropped``.
    """
    scale = math.exp(min(eps, _EPS_SEARCH_CAP))  # D is non-increasing in ε: capping keeps U valid
    eta = np.asarray(rel_error, dtype=float)[..., None] + 16.0 * _UNIT_ROUNDOFF
    diff = big - scale * small
    margin = eta * (big + scale * small)
    width = big.shape[-1]
    summation = (width + 2) * _UNIT_ROUNDOFF
    kept = np.sum(np.where(diff > margin, diff - margin, 0.0), axis=-1)
    drop = np.asarray(dropped, dtype=float) + 8.0 * width * _SUBNORMAL  # subnormal cells
    lower = np.maximum(0.0, (1.0 - drop) * kept * (1.0 - summation) - scale * drop)
    if eps > _EPS_SEARCH_CAP:
        lower = np.zeros_like(lower)
    upper = np.sum(np.maximum(diff + margin, 0.0), axis=-1) * (1.0 + summation) + drop
    return lower, np.minimum(upper, 1.0)


class _CandidateSet:
    """Exact per-configuration laws, stacked for vectorised hockey-stick bounds at any ε."""

    def __init__(self, keep: float, flip: float) -> None:
        self.keep = keep
        self.flip = flip
        self.laws: dict[int, _Law] = {}
        self._stacked: tuple[tuple[int, ...], np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None

    def add(self, holders: int, law: _Law) -> None:
        if holders not in self.laws:
            self.laws[holders] = law
            self._stacked = None

    def _stack(self, subset: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        laws = [self.laws[m] for m in subset]
        width = max(law.values.size for law in laws) + 1
        big = np.zeros((len(laws), width))  # rows left-aligned: a hockey-stick is shift-invariant
        small = np.zeros_like(big)
        for row, law in enumerate(laws):
            p0, p1 = _victim_laws(law, self.keep, self.flip)
            big[row, : p0.size] = p0
            small[row, : p1.size] = p1
        rel = np.array([law.rel_error for law in laws])
        drop = np.array([law.dropped for law in laws])
        return big, small, rel, drop

    def retain(self, eps: float, count: int) -> None:
        """Keep the ``count`` configurations with the largest lower bound at ε (bounded memory)."""
        if len(self.laws) > count:
            ms, lows, _ = self.bounds(eps)
            chosen = {ms[i] for i in np.argsort(lows)[::-1][:count]}
            self.laws = {m: law for m, law in self.laws.items() if m in chosen}
            self._stacked = None

    def bounds(self, eps: float,
               subset: Sequence[int] | None = None) -> tuple[list[int], np.ndarray, np.ndarray]:
        """(configurations, lower bounds, upper bounds) of δ_m(ε), max over both directions."""
        if subset is None:
            chosen = tuple(sorted(self.laws))
            if self._stacked is None or self._stacked[0] != chosen:
                self._stacked = (chosen, *self._stack(chosen))
            _, big, small, rel, drop = self._stacked
        else:
            chosen = tuple(subset)
            big, small, rel, drop = self._stack(chosen)
        low0, up0 = _hockey_stick_bounds(big, small, rel, drop, eps)
        low1, up1 = _hockey_stick_bounds(small, big, rel, drop, eps)
        return list(chosen), np.maximum(low0, low1), np.maximum(up0, up1)


class BinaryRRProfile(InstanceLowerBound):
    """Shuffled binary randomized response: certified exact worst case over all configurations.

    δ(ε) = max_m δ_m(ε) over m = number of other users holding 1 (module docstring). Every query
    returns a certified interval: :meth:`delta_interval` (L, U) with L the exact δ_m of an
    evaluated configuration (rounded down) and U a proved upper bound on every δ_m (branch and
    bound over blocks of configurations); :meth:`epsilon_interval` (ε_lo, ε_hi) with max_m δ_m(ε_lo)
    > δ ≥ max_m δ_m(ε_hi). The search stops when U ≤ L·(1 + rtol) (resp. ε_hi ≤ ε_lo·(1 + rtol)),
    so the profile is exact to that certified relative tolerance. :meth:`delta` and
    :meth:`epsilon` return the lower ends (certified lower bounds, as for every
    :class:`InstanceLowerBound`).

    ``is_exact`` is True unless a query stopped at the ``max_blocks`` evaluation budget (or at
    rounding level) before its interval reached ``rtol``; the interval is certified either way.
    ``full_search=True`` evaluates every configuration exactly instead of bounding blocks
    (n ≤ ``FULL_SEARCH_MAX_USERS``; a cross-check). ``blocks_evaluated`` counts block bounds
    computed so far and ``configurations`` lists the configurations evaluated exactly (diagnostics).

    Measured (2-core shared machine under load, n = 10⁶, rtol = 1e-3): one
    :meth:`epsilon_interval` at δ ∈ {1e-6, 1e-9} takes 1.0 s (ε0 = 0.5, 1), 0.6–0.7 s (ε0 = 2),
    0.2 s (ε0 = 4), 76–180 block bounds; one :meth:`delta_interval` at δ(ε) ≈ 1e-6..1e-9 takes
    0.3–4.5 s (tighter: rtol applies to δ, which moves ~40× faster than ε). Slow corner: ε so far
    in the tail that δ(ε) < 1e-200 at tiny ε0 (e.g. ε0 = 1e-3, ε = ε0/2): ~6 s, the interval is
    (0, ≤ 1e-279).
    """

    def __init__(self, epsilon0: float, n: int, *, rtol: float = BINARY_RR_RTOL,
                 full_search: bool | None = None, max_blocks: int = BINARY_RR_MAX_BLOCKS) -> None:
        eps0 = check_range("epsilon0", epsilon0, 0.0, math.inf, low_open=True, high_open=True)
        users = check_num_users(n)
        if users < 2:
            raise ValueError(f"n must be at least 2 for a shuffled profile, got {users}")
        self.rtol = check_range("rtol", rtol, 0.0, 1.0, low_open=True, high_open=True)
        if isinstance(max_blocks, bool) or not isinstance(max_blocks, int) or max_blocks < 1:
            raise ValueError(f"max_blocks must be a positive integer, got {max_blocks!r}")
        full = bool(full_search)
        if full and users > FULL_SEARCH_MAX_USERS:
            raise ValueError(f"n must be at most {FULL_SEARCH_MAX_USERS} with full_search=True, got {users}")
        self.epsilon0 = eps0
        self.n = users
        self.full_search = full
        self.max_blocks = max_blocks
        # a = e^ε0/(e^ε0 + 1) and 1 − a, each to full relative precision (1 − a may underflow)
        self.keep = 1.0 / (1.0 + math.exp(-eps0))
        self.flip = 1.0 / (1.0 + math.exp(eps0)) if eps0 < _EPS_SEARCH_CAP else 0.0
        self.coin_share = 2.0 * self.flip  # P(a user's message is a fair coin) = 2(1 − a)
        self.fixed_share = math.tanh(eps0 / 2.0)  # 1 − 2(1 − a) = 2a − 1
        self.others = users - 1
        self.half = self.others // 2  # δ_m = δ_{others − m} (relabel 0 ↔ 1): m ≤ half suffices
        search = "every configuration evaluated" if full else "branch and bound over configurations"
        self.description = (f"binary randomized response, eps0={eps0}, n={users}: exact worst case "
                            f"({search}), certified to rtol={self.rtol}")
        self.pairs = ()
        self._candidates: dict[float, _CandidateSet] = {}
        self._delta_cache: dict[float, tuple[float, float, int]] = {}
        self._epsilon_cache: dict[float, tuple[float, float]] = {}
        self._all_certified = True
        self.blocks_evaluated = 0

    # -- public API --------------------------------------------------------------------------
    @property
    def is_exact(self) -> bool:  # type: ignore[override]
        """True while every interval returned so far has relative width ≤ rtol."""
        return self._all_certified

    def delta(self, epsilon: float) -> float:
        """Certified lower bound on the shuffled δ(ε) (exact to rtol: see :meth:`delta_interval`)."""
        return self.delta_interval(epsilon)[0]

    def delta_interval(self, epsilon: float) -> tuple[float, float]:
        """(L, U): L ≤ max_m δ_m(ε) ≤ U, U ≤ L·(1 + rtol) unless ``is_exact`` turned False."""
        eps = check_epsilon(epsilon)
        low, up, _ = self._delta_search(eps)
        return low, up

    def worst_configuration(self, epsilon: float) -> int:
        """Number m of other users holding 1 in an evaluated configuration attaining L at ε
        (m ≤ (n − 1)/2; n − 1 − m is equally bad)."""
        eps = check_epsilon(epsilon)
        return self._delta_search(eps)[2]

    def epsilon(self, delta: float) -> float:
        """Certified lower bound on the shuffled ε(δ) (exact to rtol: see :meth:`epsilon_interval`)."""
        return self.epsilon_interval(delta)[0]

    def epsilon_interval(self, delta: float) -> tuple[float, float]:
        """(ε_lo, ε_hi) with δ(ε_lo) > δ ≥ δ(ε_hi) certified; ε_hi ≤ ε_lo·(1 + rtol) unless
        ``is_exact`` turned False. ε_lo = 0 when δ(0) ≤ δ is already certified."""
        target = check_delta(delta)
        if target not in self._epsilon_cache:
            self._epsilon_cache[target] = self._epsilon_search(target)
        return self._epsilon_cache[target]

    @property
    def configurations(self) -> tuple[int, ...]:
        """Configurations m whose δ_m was evaluated exactly so far."""
        found: set[int] = set()
        for cands in self._candidates.values():
            found.update(cands.laws)
        return tuple(sorted(found))

    # -- laws ----------------------------------------------------------------------------------
    def _budget(self, level: float) -> float:
        """Truncated mass allowed per window: ≤ 1e-5·rtol·level, rounded down to a power of ten
        (so that queries at similar levels share their exact configuration laws)."""
        raw = max(_MIN_TRUNCATION, _TRUNCATION_SHARE * self.rtol * level)
        return 10.0 ** math.floor(math.log10(raw))

    def _base_law(self, first: int, last: int, budget: float) -> _Law:
        """Bin(first, a) + Bin(others − last, 1 − a): users holding 1 and 0 outside the block."""
        ones = _binomial_law(first, self.keep, self.flip, budget)
        zeros = _binomial_law(self.others - last, self.flip, self.keep, budget)
        return _convolve(ones, zeros, budget)

    def _candidate_set(self, budget: float) -> _CandidateSet:
        if budget not in self._candidates:
            if len(self._candidates) >= _MAX_CANDIDATE_SETS:  # bound the memory: drop the oldest
                del self._candidates[next(iter(self._candidates))]
            self._candidates[budget] = _CandidateSet(self.keep, self.flip)
        return self._candidates[budget]

    def _evaluate(self, cands: _CandidateSet, holders: Sequence[int], budget: float) -> None:
        for m in holders:
            if m not in cands.laws:
                cands.add(m, self._base_law(m, m, budget))

    def _block_upper(self, first: int, last: int, eps: float, budget: float) -> float:
        """U_block(ε) ≥ δ_m(ε) for every m in [first, last] (module docstring, block bound).

        J ~ Bin(b, 2(1 − a)) free users drew the fair-coin branch; D_J (per direction) is non-
        increasing in J (adding an independent fair coin is post-processing), so each band of J
        values is charged the D of its lowest J; the mass of J below the window is charged 1.
        """
        self.blocks_evaluated += 1
        free = last - first
        base = self._base_law(first, last, budget)
        if free == 0:
            p0, p1 = _victim_laws(base, self.keep, self.flip)
            up0 = _hockey_stick_bounds(p0, p1, base.rel_error, base.dropped, eps)[1]
            up1 = _hockey_stick_bounds(p1, p0, base.rel_error, base.dropped, eps)[1]
            return float(max(up0, up1))
        revealed = _binomial_law(free, self.coin_share, self.fixed_share, budget)
        weights = revealed.values
        if weights.size <= _EXACT_BANDS_UP_TO:
            starts = list(range(weights.size))
        else:
            cumulative = np.cumsum(weights)
            starts = sorted({int(np.searchsorted(cumulative, q * cumulative[-1], side="right"))
                             for q in _BAND_QUANTILES[1:]} | {0})
            starts = [s for s in starts if s < weights.size]
        weight_factor = (1.0 + revealed.rel_error) * (1.0 + (weights.size + 2) * _UNIT_ROUNDOFF)
        totals = [0.0, 0.0]
        law = base
        coins = 0
        for index, start in enumerate(starts):
            stop = starts[index + 1] if index + 1 < len(starts) else weights.size
            band_weight = float(np.sum(weights[start:stop])) * weight_factor
            coins_here = revealed.offset + start
            law = _convolve(law, _binomial_law(coins_here - coins, 0.5, 0.5, budget), budget)
            coins = coins_here
            p0, p1 = _victim_laws(law, self.keep, self.flip)
            totals[0] += band_weight * float(_hockey_stick_bounds(p0, p1, law.rel_error, law.dropped, eps)[1])
            totals[1] += band_weight * float(_hockey_stick_bounds(p1, p0, law.rel_error, law.dropped, eps)[1])
        summation = (len(starts) + 4) * _UNIT_ROUNDOFF
        return min(1.0, max(totals) * (1.0 + summation) + revealed.dropped)

    def _initial_blocks(self) -> list[tuple[int, int]]:
        """[0, 0], [1, 1], [2, 3], [4, 7], …: geometric (the worst m sits near the ends)."""
        if self.full_search:
            return [(m, m) for m in range(self.half + 1)]
        blocks, first = [], 0
        while first <= self.half:
            last = min(self.half, max(first, 2 * first - 1) if first else 0)
            blocks.append((first, last))
            first = last + 1
        return blocks

    # -- δ(ε): best-first branch and bound ---------------------------------------------------
    def _seeds(self) -> list[int]:
        return sorted(m for m in {0, 1, 2, 4, 8, self.half} if m <= self.half)

    def _delta_search(self, eps: float) -> tuple[float, float, int]:
        if eps in self._delta_cache:
            return self._delta_cache[eps]
        if eps >= self.epsilon0:
            result = (0.0, 0.0, 0)  # ε0-LDP: every likelihood ratio is within e^{±ε0}
            self._delta_cache[eps] = result
            return result
        # truncation budget relative to the level of δ: probe it on a few configurations
        budget = 1e-24
        while True:
            probe = self._candidate_set(budget)
            self._evaluate(probe, self._seeds(), budget)
            level = float(np.max(probe.bounds(eps, self._seeds())[1]))
            needed = self._budget(level)
            if needed >= budget or budget <= _MIN_TRUNCATION:
                budget = max(budget, needed)
                break
            budget = needed
        cands = self._candidate_set(budget)
        blocks = self._initial_blocks()
        self._evaluate(cands, [b[0] for b in blocks] if self.full_search else self._seeds(), budget)
        ms, lows, ups = cands.bounds(eps)
        best = int(np.argmax(lows))
        low, worst = float(lows[best]), ms[best]
        if self.full_search:
            result = (low, max(low, float(np.max(ups))), worst)
            self._finish_delta(eps, result)
            return result
        heap: list[tuple[float, int, int]] = []
        exact_upper = dict(zip(ms, ups.tolist()))
        for first, last in blocks:
            upper = exact_upper[first] if first == last and first in exact_upper else (
                self._block_upper(first, last, eps, budget))
            heapq.heappush(heap, (-upper, first, last))
        settled = 0.0  # largest upper bound of the configurations evaluated one by one
        evaluated = 0
        while heap and -heap[0][0] > max(low * (1.0 + self.rtol), _NEGLIGIBLE_DELTA) and (
                evaluated < self.max_blocks):
            _, first, last = heapq.heappop(heap)
            if last - first + 1 <= _LEAF_CONFIGURATIONS:
                members = list(range(first, last + 1))
                self._evaluate(cands, members, budget)
                _, m_low, m_up = cands.bounds(eps, members)
                for m, m_lo, m_hi in zip(members, m_low.tolist(), m_up.tolist()):
                    if m_lo > low:
                        low, worst = m_lo, m
                    settled = max(settled, m_hi)  # (above L·(1 + rtol) only at rounding level)
                continue
            middle = (first + last) // 2
            self._evaluate(cands, [middle], budget)
            _, m_low, _ = cands.bounds(eps, [middle])
            if float(m_low[0]) > low:
                low, worst = float(m_low[0]), middle
            for child in ((first, middle), (middle + 1, last)):
                evaluated += 1
                heapq.heappush(heap, (-self._block_upper(child[0], child[1], eps, budget), *child))
        upper = max(low, settled, -heap[0][0] if heap else 0.0)
        result = (low, upper, worst)
        cands.retain(eps, _RETAINED_CANDIDATES)
        self._finish_delta(eps, result)
        return result

    def _finish_delta(self, eps: float, result: tuple[float, float, int]) -> None:
        low, upper, _ = result
        if upper > max(low * (1.0 + self.rtol), _NEGLIGIBLE_DELTA):
            self._all_certified = False
        self._delta_cache[eps] = result

    # -- ε(δ): lower end from exact configurations, upper end certified by blocks -------------
    def _lower_end(self, cands: _CandidateSet, target: float, rank_at: float) -> float:
        """Largest ε found with max over the top configurations (ranked at ``rank_at``) of the
        certified lower δ_m(ε) above ``target``: a certified lower bound on ε(δ)."""
        ms, lows, _ = cands.bounds(rank_at)
        top = [ms[i] for i in np.argsort(lows)[::-1][:_TOP_CANDIDATES]]
        return _epsilon_lower(lambda e: float(np.max(cands.bounds(e, top)[1])), target,
                              self.epsilon0, rtol=1e-7)

    def _epsilon_search(self, target: float) -> tuple[float, float]:
        budget = self._budget(target)
        cands = self._candidate_set(budget)
        blocks = self._initial_blocks()
        self._evaluate(cands, self._seeds(), budget)
        eps_lo = self._lower_end(cands, target, 0.0)
        if self.full_search:
            self._evaluate(cands, [b[0] for b in blocks], budget)
            eps_lo = max(eps_lo, self._lower_end(cands, target, eps_lo))
        eps_hi = self._epsilon_step(eps_lo)
        pending = list(reversed(blocks))  # a stack: blocks near the ends first
        steps = 0
        while pending and eps_hi < self.epsilon0:  # at ε0 every δ_m is 0 (ε0-LDP)
            steps += 1
            if steps > self.max_blocks:
                self._all_certified = False
                return eps_lo, self.epsilon0  # the LDP bound: δ(ε0) = 0
            first, last = pending.pop()
            if last - first + 1 <= _LEAF_CONFIGURATIONS:
                members = list(range(first, last + 1))
                self._evaluate(cands, members, budget)
                _, m_low, m_up = cands.bounds(eps_hi, members)
                if float(np.max(m_low)) > target:  # a worse configuration: raise the lower end
                    eps_lo = max(self._lower_end(cands, target, eps_hi), eps_hi)
                    eps_hi = self._epsilon_step(eps_lo)
                    pending.append((first, last))
                elif float(np.max(m_up)) > target:  # tie at rounding level: step the upper end
                    eps_hi = self._epsilon_step(max(eps_hi, 1e-9 * self.epsilon0))
                    pending.append((first, last))
                continue
            if self._block_upper(first, last, eps_hi, budget) <= target:
                continue  # pruned at eps_hi, hence (U non-increasing in ε) at every larger ε
            middle = (first + last) // 2
            pending.extend([(middle + 1, last), (first, middle)])
        if eps_hi > eps_lo * (1.0 + self.rtol) * (1.0 + 1e-12):
            self._all_certified = False
        if not self.full_search:
            cands.retain(eps_hi, _RETAINED_CANDIDATES)
        return eps_lo, eps_hi

    def _epsilon_step(self, eps: float) -> float:
        return min(self.epsilon0, eps * (1.0 + self.rtol))


def binary_rr_exact_delta(epsilon0: float, n: int, epsilon: float) -> float:
    """Exact shuffled δ(ε) of binary randomized response, worst case over all configurations,
    by evaluating every configuration (the certified lower end of :meth:`BinaryRRProfile.
    delta_interval` with ``full_search=True``: rounding margins only, no truncation of m).

    Raises ValueError for n > ``FULL_SEARCH_MAX_USERS``; for larger n use
    :meth:`BinaryRRProfile.delta_interval` (branch and bound, certified to ``rtol``).
    """
    users = check_num_users(n)
    if users > FULL_SEARCH_MAX_USERS:
        raise ValueError(
            f"n must be at most {FULL_SEARCH_MAX_USERS} for the exhaustive configuration search, "
            f"got {users}")
    return BinaryRRProfile(epsilon0, users, full_search=True).delta(epsilon)


__all__ = [
    "FULL_SEARCH_MAX_USERS",
    "BINARY_RR_RTOL",
    "CountPair",
    "InstanceLowerBound",
    "BinaryRRProfile",
    "binary_rr_exact_delta",
    "binomial_logpmf",
    "TrinomialInstance",
    "trinomial_projection",
]
