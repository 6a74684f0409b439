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

Numerics of the trinomial instances (every reported value stays below the exact value of its
instance). Binomial log-pmfs use ``scipy.special.gammaln``, whose absolute error is a few ulp of
ln((n − 1)!), i.e. a relative error η of each probability; binomial tails come from
``scipy.special.betainc``/``betaincc`` (relative error covered by ``TrinomialInstance.TAIL_REL_ERROR``
and the core's :func:`~dpacct_shuffle.core.problem.special_function_rtol` of the row's trials).
Every summed set S contributes Σ_S(P − e^ε·Q) − η·Σ_S(P + e^ε·Q). The hockey-stick divergence is a
supremum over sets, so a set that is not exactly the positive part (a rounding-level error in a
threshold) still gives a lower bound. Cells beyond ±``WINDOW_SIGMAS`` standard deviations are
dropped: dropping nonnegative terms keeps a lower bound.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Protocol, Sequence

import numpy as np
from scipy.special import betainc, betaincc, gammaln, xlog1py, xlogy

from dpacct_shuffle.core.problem import UNIT_ROUNDOFF, special_function_rtol
from dpacct_shuffle.core.validation import check_delta, check_epsilon, check_num_users, check_range

if TYPE_CHECKING:
    from dpacct_shuffle.randomizers.exact_small_n import ExactShuffle

WINDOW_SIGMAS = 12.0
EXP_ARGUMENT_CAP = 700.0  # e^700 is still a finite double
_BISECTION_STEPS = 80


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


def epsilon_lower(delta_fn: Callable[[float], float], delta: float, eps_cap: float, rtol: float = 1e-6) -> float:
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
            if hi >= EXP_ARGUMENT_CAP:
                return lo  # the instance keeps δ > target up to ε = 700 (e.g. p = ∞)
            hi = min(4.0 * hi, cap, EXP_ARGUMENT_CAP)
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


class LowerBoundInstance(Protocol):
    """An explicit instance whose exact δ(ε), rounded down, is a lower bound on the protocol's."""

    def delta(self, epsilon: float) -> float: ...

    def max_loss(self) -> float: ...


class ExactLowerInstance:
    """The exact worst case over every configuration (an enumeration of
    :mod:`dpacct_shuffle.randomizers.exact_small_n`), certified from below: every configuration is
    an explicit instance, and its δ is rounded down (docs/theory.md, "Exact values at small n")."""

    def __init__(self, shuffle: "ExactShuffle") -> None:
        self.shuffle = shuffle

    def delta(self, epsilon: float) -> float:
        """Lower bound on the protocol's δ(ε)."""
        return float(self.shuffle.delta_bounds(np.array([check_epsilon(epsilon)]))[0][0])

    def epsilon(self, delta: float) -> float:
        """Lower bound on the protocol's ε(δ) (closed form per prefix set, no search)."""
        return self.shuffle.epsilon_bounds(check_delta(delta))[0]

    def max_loss(self) -> float:
        """No cap known in advance: ∞."""
        return math.inf


class InstanceLowerBound:
    """Certified lower bound: the maximum over explicit instances (:class:`CountPair`,
    :class:`TrinomialInstance`, :class:`ExactLowerInstance` or any other
    :class:`LowerBoundInstance`)."""

    def __init__(self, pairs: Sequence[LowerBoundInstance], description: str, *,
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
        """Lower bound on the protocol's ε(δ): the exact worst case's own ε when it is among the
        instances (up to its rounding, at least every other instance's), else a search on the
        maximum of the instances' δ."""
        exact = [pair for pair in self.pairs if isinstance(pair, ExactLowerInstance)]
        if exact:
            return max(pair.epsilon(delta) for pair in exact)
        cap = max(pair.max_loss() for pair in self.pairs)
        return epsilon_lower(self.delta, delta, cap)


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
    Relative error: :func:`~dpacct_shuffle.core.problem.special_function_rtol`. (scipy's
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
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            ratio = np.where(
                (self.c >= 1) & (self.c <= self.others) & (pi_c > 0.0) & (rest_others > 0.0),
                self.c * rest_others / ((self.others - self.c + 1) * pi_c), np.nan)
        ratio = np.where(self.c == 0, 0.0, np.where(self.c > self.others, np.inf, ratio))
        exact_rows = np.isfinite(ratio) | np.isinf(ratio)  # NaN: π ∈ {0, 1}, use the log-pmfs
        with np.errstate(invalid="ignore", over="ignore"):
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
        unit = 8.0 * UNIT_ROUNDOFF
        cancel = 0.0
        for rest, measured in ((self.u[2], u_measured), (self.v[2], v_measured)):
            if rest > 0.0:
                cancel += unit if measured else unit / rest
        if o_measured:
            others_error = unit
        else:
            others_error = unit / rest_others if rest_others > 0.0 else 0.0
        if o[0] > 0.0 and o[1] > 0.0:
            # min(θ, 1 − θ) of the exact masses (a quotient, no cancellation): θ rounded to 1 (or
            # 0) while the others do reach both sets (π1/π below u) makes the law's relative error
            # unbounded, and the margin then zeroes the rows (a lower bound of 0 is valid)
            cancel += float(self.c.max()) * unit / (min(float(o[0]), float(o[1])) / pi_c)
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
        with np.errstate(over="ignore"):  # scale·b above the float range: the row's bound is 0
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


__all__ = [
    "CountPair",
    "ExactLowerInstance",
    "InstanceLowerBound",
    "TrinomialInstance",
    "binomial_logpmf",
    "epsilon_lower",
    "trinomial_projection",
]
