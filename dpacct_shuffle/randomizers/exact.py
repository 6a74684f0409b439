"""Exact shuffled privacy profiles of explicit instances: certified *lower* bounds (SPEC §4).

An upper bound is only useful next to a lower bound that shows the gap. Every value here is the
exact hockey-stick divergence of one explicit instance — a victim pair (x⁰, x¹) and a fixed
configuration of the other n − 1 users' inputs — after a post-processing of the shuffled output.
Post-processing cannot increase a hockey-stick divergence (data-processing inequality), and the
worst case over neighbouring datasets is at least the value of any one of them, so each number is
a certified lower bound on the shuffled protocol's δ(ε) (and, inverted, on its ε(δ)).

Post-processing used (the *trinomial projection*): fix two disjoint output sets S0, S1 (for a
finite randomizer S0 = {μ0 > μ1} and S1 = {μ1 > μ0}, the supports of Q0 and Q1 of SPEC §2) and
report only the counts (H0, H1) of shuffled messages in S0 and S1 — a function of the multiset of
messages. With all others holding the same input, their counts are multinomial and the victim adds
one message, so the pair of laws is explicit:

    P_j(h0, h1) = u_j0·O(h0 − 1, h1) + u_j1·O(h0, h1 − 1) + (1 − u_j0 − u_j1)·O(h0, h1),

with u_j = (R(x^j)(S0), R(x^j)(S1)) and O the Multinomial(n − 1; π0, π1, 1 − π0 − π1) law of the
others. For k-ary randomized response with the others holding x⁰ the projection is lossless (the
likelihood ratio of two histograms depends only on the counts of x⁰ and x¹), so the value is the
exact δ of that configuration. It is evaluated row by row in C = H0 + H1: on each row the
likelihood ratio is monotone in H0, so the positive part is a binomial tail
(:class:`TrinomialInstance`), O(√n) special-function calls per ε — fast at n = 10⁶.

Binary randomized response (:class:`BinaryRRProfile`). The output is the count of ones; with m of
the others holding 1 it is Bin(m, a) + Bin(n − 1 − m, 1 − a) plus the victim's bit,
a = e^ε0/(e^ε0 + 1). **The homogeneous configuration (all others holding the same value) is not
always the worst one**: e.g. ε0 = 1, n = 50, ε = 0.3 gives δ = 2.2563e-3 for m = 0 but
2.3562e-3 for m = 1, and ε0 = 2, n = 10, ε = 0.1 gives 0.2604 (m = 0) vs 0.3064 (m = 5). So the
exact worst case is found by searching every m (vectorised; used up to
``FULL_SEARCH_MAX_USERS`` users). Beyond that, the reported value maximises over the homogeneous
configurations and the ``NEAR_END_CONFIGURATIONS`` values of m nearest to them at both ends and is
labelled a lower bound (``is_exact`` is False).

Numerics (every reported value stays below the exact value of its instance). Binomial log-pmfs use
``scipy.special.gammaln``, whose absolute error is a few ulp of ln((n − 1)!), i.e. a relative error
η of each probability; binomial tails come from
``scipy.special.bdtr``/``bdtrc`` (relative error covered by ``TrinomialInstance.TAIL_REL_ERROR``).
Every summed set S contributes Σ_S(P − e^ε·Q) − η·Σ_S(P + e^ε·Q). The hockey-stick divergence is a
supremum over sets, so a set that is not exactly the positive part (a rounding-level error in a
threshold) still gives a lower bound. Cells beyond ±``WINDOW_SIGMAS`` standard deviations are
dropped: dropping nonnegative terms keeps a lower bound; for the exhaustive binary search the
dropped mass is below 1e-30, so "exact" means exact to that absolute level.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
from scipy.special import bdtr, bdtrc, gammaln, xlog1py, xlogy

from dpacct_shuffle.core.validation import check_delta, check_epsilon, check_num_users, check_range

FULL_SEARCH_MAX_USERS = 3000
NEAR_END_CONFIGURATIONS = 24
WINDOW_SIGMAS = 12.0
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


def binomial_logpmf(k: np.ndarray, n: int | np.ndarray, p: float) -> np.ndarray:
    """ln P[Bin(n, p) = k] (−inf outside 0 ≤ k ≤ n), vectorised (``scipy.special.gammaln``)."""
    k_arr = np.asarray(k, dtype=np.int64)
    n_arr = np.broadcast_to(np.asarray(n, dtype=np.int64), k_arr.shape)
    valid = (k_arr >= 0) & (k_arr <= n_arr)
    kk = np.where(valid, k_arr, 0).astype(float)
    nn = np.where(valid, n_arr, 0).astype(float)
    out = (gammaln(nn + 1.0) - gammaln(kk + 1.0) - gammaln(nn - kk + 1.0)
           + xlogy(kk, p) + xlog1py(nn - kk, -p))
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


def _binomial_tail(t: np.ndarray, n: np.ndarray, p: float, upper: bool) -> np.ndarray:
    """P[Bin(n, p) >= t] (upper) or P[Bin(n, p) <= t] (lower), elementwise, n >= 0."""
    t = np.asarray(t, dtype=np.int64)
    n = np.asarray(n, dtype=np.int64)
    if upper:
        inside = (t >= 1) & (t <= n)
        val = bdtrc(np.where(inside, t - 1, 0), np.where(inside, n, 1), p)
        return np.where(t <= 0, 1.0, np.where(t > n, 0.0, val))
    inside = (t >= 0) & (t < n)
    val = bdtr(np.where(inside, t, 0), np.where(inside, n, 1), p)
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

    t_C is located by a vectorised bisection on the sign of the log-likelihood ratio. Any choice of
    the sets {H0 ≥ t_C} gives a valid lower bound (the hockey-stick divergence is the supremum over
    sets), so an inexact t_C or monotonicity direction only costs tightness, never validity. Each row
    contributes max(0, A0 − e^ε·A1 − η·(A0 + e^ε·A1)) with η = ``TAIL_REL_ERROR`` covering the
    relative error of the special functions plus that of the gammaln-based log-pmf (for w).
    """

    TAIL_REL_ERROR = 1e-10

    def __init__(self, n: int, victim0: tuple[float, float], victim1: tuple[float, float],
                 other: tuple[float, float], description: str = "") -> None:
        users = check_num_users(n)
        for name, pair in (("victim0", victim0), ("victim1", victim1), ("other", other)):
            a = check_range(f"{name}[0]", pair[0], 0.0, 1.0)
            b = check_range(f"{name}[1]", pair[1], 0.0, 1.0)
            if a + b > 1.0 + 1e-12:
                raise ValueError(f"{name} masses must sum to at most 1, got {a + b!r}")
        self.description = description
        self.others = users - 1
        self.u = np.array([victim0[0], victim0[1], max(0.0, 1.0 - victim0[0] - victim0[1])])
        self.v = np.array([victim1[0], victim1[1], max(0.0, 1.0 - victim1[0] - victim1[1])])
        pi_c = min(1.0, float(other[0]) + float(other[1]))
        self.theta = min(1.0, float(other[0]) / pi_c) if pi_c > 0.0 else 0.5
        c_lo, c_hi = _window(self.others, pi_c)
        self.c = np.arange(c_lo, c_hi + 2)
        self.log_w = binomial_logpmf(self.c, self.others, pi_c)
        self.log_w_prev = binomial_logpmf(self.c - 1, self.others, pi_c)
        # does P0/P1 increase with H0? (victim 0 favours S0 relative to victim 1)
        self.increasing = bool(self.u[0] * self.v[1] >= self.u[1] * self.v[0])
        self._rel_error = self.TAIL_REL_ERROR + 2.0 * _log_rel_error(self.others)

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

    def _mass(self, weights: np.ndarray, t: np.ndarray, increasing: bool) -> np.ndarray:
        c, theta = self.c, self.theta
        prev_n = np.maximum(c - 1, 0)
        w_prev = np.exp(self.log_w_prev)
        w_cur = np.exp(self.log_w)
        if increasing:
            t0 = _binomial_tail(t - 1, prev_n, theta, True)
            t1 = _binomial_tail(t, prev_n, theta, True)
            t2 = _binomial_tail(t, c, theta, True)
        else:
            t0 = _binomial_tail(t - 1, prev_n, theta, False)
            t1 = _binomial_tail(t, prev_n, theta, False)
            t2 = _binomial_tail(t, c, theta, False)
        return weights[0] * w_prev * t0 + weights[1] * w_prev * t1 + weights[2] * w_cur * t2

    def _direction(self, num: np.ndarray, den: np.ndarray, eps: float, increasing: bool) -> float:
        t = self._threshold(num, den, eps, increasing)
        a = self._mass(num, t, increasing)
        b = self._mass(den, t, increasing)
        scale = math.exp(eps)
        rows = a - scale * b - self._rel_error * (a + scale * b)
        return float(np.sum(np.maximum(rows, 0.0)) * (1.0 - 1e-12))

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
    victim0: tuple[float, float],
    victim1: tuple[float, float],
    other: tuple[float, float],
    description: str = "",
) -> TrinomialInstance:
    """Laws of (H0, H1), the numbers of shuffled messages in S0 and S1 (module docstring).

    Args:
      n: total number of users (the victim plus n − 1 others).
      victim0, victim1: (R(x^j)(S0), R(x^j)(S1)) for the victim's two inputs.
      other: (π0, π1) = (R(x_i)(S0), R(x_i)(S1)), the same input x_i for all n − 1 others.
    """
    return TrinomialInstance(n, victim0, victim1, other, description)


# -- binary randomized response -----------------------------------------------------------------
def _binary_rr_config_logpmf(others: int, holders_of_one: int, keep: float) -> tuple[np.ndarray, int]:
    """ln pmf of the others' count of ones, Bin(m, a) + Bin(others − m, 1 − a), on a window.

    Returns (log pmf, offset of index 0). Computed by direct convolution of the two windowed
    binomial pmfs, each scaled by its maximum (all terms nonnegative: relative accuracy).
    """
    m = holders_of_one
    lo1, hi1 = _window(m, keep)
    lo0, hi0 = _window(others - m, 1.0 - keep)
    l1 = binomial_logpmf(np.arange(lo1, hi1 + 1), m, keep)
    l0 = binomial_logpmf(np.arange(lo0, hi0 + 1), others - m, 1.0 - keep)
    s1, s0 = float(np.max(l1)), float(np.max(l0))
    conv = np.convolve(np.exp(l1 - s1), np.exp(l0 - s0))
    with np.errstate(divide="ignore"):
        logpmf = np.log(conv) + s1 + s0
    return logpmf, lo1 + lo0


def _binary_rr_pair(others: int, holders_of_one: int, keep: float, rel_error: float) -> CountPair:
    """Victim 0 vs 1 (its bit is 1 w.p. 1 − a resp. a), others' count as above."""
    logpmf, _ = _binary_rr_config_logpmf(others, holders_of_one, keep)
    la, lb = math.log(keep), math.log1p(-keep)
    padded = np.concatenate(([-np.inf], logpmf, [-np.inf]))
    stay, shift = padded[1:], padded[:-1]  # count c: others c (victim 0) / others c − 1 (victim 1)
    log_p = np.logaddexp(la + stay, lb + shift)  # victim holds 0: outputs 1 w.p. 1 − a
    log_q = np.logaddexp(lb + stay, la + shift)  # victim holds 1: outputs 1 w.p. a
    return CountPair(log_p, log_q, rel_error, f"binary RR, {holders_of_one} of {others} others hold 1")


class BinaryRRProfile(InstanceLowerBound):
    """Shuffled binary randomized response: exact worst case over all configurations (small n).

    For n ≤ ``FULL_SEARCH_MAX_USERS`` every m = 0..n−1 (number of other users holding 1) is
    evaluated and ``is_exact`` is True: δ(ε) is the exact shuffled privacy profile (worst case over
    neighbouring datasets; by symmetry of the labels the victim pair (0, 1) is the only one, and the
    shuffled output of binary messages is equivalent to their count). For larger n only the
    homogeneous configurations and the ``NEAR_END_CONFIGURATIONS`` nearest to them are evaluated
    (the worst m is near the ends in every case we examined, but not always at them) and the value
    is a certified lower bound (``is_exact`` False).
    """

    def __init__(self, epsilon0: float, n: int, *, full_search: bool | None = None) -> None:
        eps0 = check_range("epsilon0", epsilon0, 0.0, math.inf, low_open=True, high_open=True)
        users = check_num_users(n)
        if users < 2:
            raise ValueError(f"n must be at least 2 for a shuffled profile, got {users}")
        keep = math.exp(eps0) / (math.exp(eps0) + 1.0)
        others = users - 1
        if full_search is None:
            full_search = users <= FULL_SEARCH_MAX_USERS
        if full_search:
            configs = range(0, others + 1)
        else:
            near = min(NEAR_END_CONFIGURATIONS, others)
            configs = sorted(set(range(0, near + 1)) | set(range(others - near, others + 1)))
        rel = 2.0 * _log_rel_error(others) + 1e-14
        pairs = [_binary_rr_pair(others, m, keep, rel) for m in configs]
        kind = "exact worst case over all configurations" if full_search else (
            "lower bound: homogeneous and near-homogeneous configurations")
        super().__init__(pairs, f"binary randomized response, eps0={eps0}, n={users}: {kind}",
                         is_exact=bool(full_search))
        self.epsilon0 = eps0
        self.n = users
        self.configurations = tuple(configs)
        self._stacked = _stack(self.pairs)

    def delta(self, epsilon: float) -> float:
        eps = check_epsilon(epsilon)
        return self._stacked.delta(eps)

    def worst_configuration(self, epsilon: float) -> int:
        """The number of other users holding 1 that attains :meth:`delta` (among those evaluated)."""
        eps = check_epsilon(epsilon)
        values = [pair.delta(eps) for pair in self.pairs]
        return self.configurations[int(np.argmax(values))]


class _StackedPairs:
    """Many CountPairs padded into one 2-D array: vectorised max over instances.

    Probabilities and losses are precomputed once; each δ(ε) evaluation is a masked sum.
    """

    def __init__(self, log_p: np.ndarray, log_q: np.ndarray, log_rel_error: float) -> None:
        with np.errstate(invalid="ignore"):
            loss = log_p - log_q
        self._loss = np.where(np.isnan(loss), 0.0, loss)
        self._p = np.exp(log_p)
        self._q = np.exp(log_q)
        self._rel = log_rel_error

    def _direction(self, big: np.ndarray, small: np.ndarray, mask: np.ndarray, eps: float) -> float:
        scale = math.exp(eps)
        pa = np.where(mask, big, 0.0)
        pb = np.where(mask, small, 0.0)
        totals = (pa - scale * pb).sum(axis=1)
        # pa - e^eps pb has absolute error <= ulp(pa); np.sum of n terms adds <= n ulp relative;
        # both are far below the margin rel*(pa + e^eps pb) since rel >= 1e-13.
        values = totals - self._rel * (pa.sum(axis=1) + scale * pb.sum(axis=1))
        return max(0.0, float(np.max(values)))

    def delta(self, eps: float) -> float:
        forward = self._direction(self._p, self._q, self._loss > eps, eps)
        backward = self._direction(self._q, self._p, -self._loss > eps, eps)
        return max(forward, backward)


def _stack(pairs: Sequence[CountPair]) -> _StackedPairs:
    width = max(pair.log_p.size for pair in pairs)
    log_p = np.full((len(pairs), width), -np.inf)
    log_q = np.full((len(pairs), width), -np.inf)
    for i, pair in enumerate(pairs):
        log_p[i, : pair.log_p.size] = pair.log_p
        log_q[i, : pair.log_q.size] = pair.log_q
    return _StackedPairs(log_p, log_q, max(pair.log_rel_error for pair in pairs))


def binary_rr_exact_delta(epsilon0: float, n: int, epsilon: float) -> float:
    """Exact shuffled δ(ε) of binary randomized response, worst case over all configurations.

    Raises ValueError for n > ``FULL_SEARCH_MAX_USERS`` (use :class:`BinaryRRProfile`, which then
    reports a certified lower bound).
    """
    users = check_num_users(n)
    if users > FULL_SEARCH_MAX_USERS:
        raise ValueError(
            f"n must be at most {FULL_SEARCH_MAX_USERS} for the exhaustive configuration search, "
            f"got {users}")
    return BinaryRRProfile(epsilon0, users, full_search=True).delta(epsilon)


__all__ = [
    "FULL_SEARCH_MAX_USERS",
    "NEAR_END_CONFIGURATIONS",
    "CountPair",
    "InstanceLowerBound",
    "BinaryRRProfile",
    "binary_rr_exact_delta",
    "binomial_logpmf",
    "TrinomialInstance",
    "trinomial_projection",
]
