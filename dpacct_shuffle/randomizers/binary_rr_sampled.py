"""Exact Poisson-sampled shuffled binary randomized response: certified worst case over all
configurations of the other users, at many ε in one pass (docs/theory.md, "Exact sampled binary
randomized response").

Setting. A population of N users; each takes part independently with probability γ, a participant
holding the bit x reports it with probability a = e^ε0/(e^ε0 + 1) and flips it otherwise, and the
server receives the shuffled reports: it sees the number t of reports and the number k of ones
(the participant count is visible). With m of the N − 1 others holding 1, the others' (t, k) law is

    L_m = Mult(m; γ(1 − a), γa, 1 − γ) ⊛ Mult(N − 1 − m; γa, γ(1 − a), 1 − γ)

(a trinomial per group: reports 0, reports 1, no report), and the two victim worlds are

* replace-one: victim holding 0, P0 = (1 − γ)·L_m + γa·L_m(· − e_t) + γ(1 − a)·L_m(· − e_t − e_k),
  holding 1, P1 the same with a and 1 − a swapped; δ_m(ε) = max(D_{e^ε}(P0‖P1), D_{e^ε}(P1‖P0)),
  and δ_{N−1−m} = δ_m (relabel 0 ↔ 1), so m ≤ (N − 1)/2 suffices;
* add/remove-one: the victim (holding 0; holding 1 is the relabelled configuration N − 1 − m)
  present, P0 above, or absent, L_m: the server sees only reports, so an absent victim is a
  victim that never reports. The others number N − 1; a population of N others (the victim
  added) is a post-processing (one more independent report), so the value bounds both cases.

The protocol's δ(ε) = max_m δ_m(ε).

Laws (:func:`_others_law`). Conditioned on the participant counts t1 of the holders of 1 and t0 of
the holders of 0, the ones are Bin(t1, a) + Bin(t0, 1 − a) (the unsampled law of
:mod:`dpacct_shuffle.randomizers.binary_rr_exact`). All these conditional laws of a window of
(t1, t0) are built by two-tap recurrences (one more participant of either group: a convolution
with a Bernoulli), each weighted by Bin(m, γ)(t1)·Bin(N − 1 − m, γ)(t0) and added into cell
(t1 + t0, k). Every operation adds or multiplies nonnegative numbers, so each cell carries a
relative error bound; the mass cut by the Chernoff windows of the binomials and the mass leaving
the k window of the recurrences are added to a dropped-mass bound D. Meaning: for every cell,
v·(1 − η) ≤ true − rest ≤ v·(1 + η) with rest ≥ 0 of total ≤ D (:class:`_CountLaw`).

Many ε in one pass (:func:`_grid_bounds`). For a pair of laws (P̂, Q̂) with errors (η, D), sort the
cells by κ = ln P̂ − ln Q̂ (computed to within τ) and accumulate P̂ and Q̂ in that order. At
x = e^ε, with S the cells of κ above a threshold:

    upper = (1 + η)·Σ_S P̂ − x·(1 − η)(1 − 2τ)·Σ_S Q̂ + D,   S = {κ > ε − ln((1 + η)/(1 − η)) − τ},
    lower = (1 − η)·Σ_S P̂ − x·(1 + η)·Σ_S Q̂ − x·D,        S = {κ > ε + ln((1 + η)/(1 − η))}.

Upper: every cell with P(1 + η)-side above the x·Q(1 − η)-side is in S, and a cell of S below it
misses by at most a factor e^{−2τ}, i.e. by ≤ 2τ·x·Q̂(1 − η); the rest adds at most D. Lower: any
set S gives Σ_S (P − xQ) ≤ D_x(P‖Q). Prefix sums of nonnegative terms carry a relative error
(k + 2)·u (k terms, u = 2⁻⁵³), applied in the safe direction; the final subtraction is widened
by 8u of the sum of its terms. One sort serves the whole ε grid (:data:`GRID_RATIO` spacing in
ε, geometric from ε0·10⁻⁶ to ε0 plus ε = 0); between grid points the upper end is the chord of
H(x) = D_x in x = e^ε (H is convex in x, so the chord through two upper bounds is an upper
bound), and the lower end is the value at the next grid point (δ is non-increasing).

Configurations (:class:`SampledBinaryRRProfile`). A block m ∈ [m1, m2] of configurations is
bounded in two ways through the b = m2 − m1 "free" users (holding 1 for some m of the block and 0
for others); their messages are independent of the victim and of the other users.

* Revealed: reveal the free users' messages. Every δ_m of the block is at most the δ of the
  configuration with m1 holders of 1 and N − 1 − m2 holders of 0 (N − 1 − b others).
* Common part: a user's message is R_h = f·δ_h + (1 − f)·ν for either input h, with f = γ(2a − 1)
  and ν = "no report w.p. (1 − γ)/(1 − f), else a fair bit" (R_h minus its differing part).
  Reveal, for each free user, whether it drew the differing part (and then its message h); the
  revealed data has the same law under both victim inputs, and given it the release is a known
  shift of the configuration (m1, N − 1 − m2) plus J independent ν-users, J ~ Bin(b, 1 − f)
  whatever m. Adding an independent user is a post-processing, so D(J) is non-increasing in J and
  δ_m ≤ D(J_lo) + P[J < J_lo] for the lower end J_lo of J's Chernoff window.

Blocks [0, 0], [1, 1], [2, 3], [4, 7], … (mirrored from m = N − 1 for add/remove) are split until
every block's upper curve is at most the best certified lower curve at ε/(1 + ``rtol``) or
(1 + ``rtol``) times it at ε, or below ``floor``; or until the budget of laws is spent (the bounds
stay certified; ``is_exact`` turns False). Small populations evaluate every configuration.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dpacct_shuffle.core.problem import UNIT_ROUNDOFF
from dpacct_shuffle.core.validation import check_delta, check_epsilon, check_num_users, check_range
from dpacct_shuffle.randomizers.binary_rr_exact import _SUBNORMAL, _binomial_law, _convolve

# geometric ε grid: consecutive points differ by this factor; it starts at ε0·GRID_START
GRID_RATIO = 1.0 + 1e-3
GRID_START = 1e-6
# every configuration one by one up to this many (m ≤ (N − 1)/2); block bounds above
FULL_SEARCH_CONFIGURATIONS = 64
SAMPLED_BINARY_RR_RTOL = 1e-2  # relative slack in ε at which a block counts as settled
SAMPLED_BINARY_RR_FLOOR = 1e-14  # δ below this need not be matched by a lower bound
SAMPLED_BINARY_RR_MAX_LAWS = 64  # configuration laws evaluated per profile at most
# the accountants' sampled rounds use the exact profile up to this many expected reports γ·(N − 1)
TRACTABLE_EXPECTED_REPORTS = 400.0
# truncated mass per binomial window: ≤ this fraction of floor × rtol
_TRUNCATION_SHARE = 1e-5
_LEAF_CONFIGURATIONS = 4  # blocks of at most this many configurations are evaluated one by one
_PROBED_BLOCK = 64  # an unsettled block of at most this many configurations: its middle is evaluated
# the common-part block bound costs one three-tap step per kept free user on the whole law: it is
# tried for blocks of at most this many times √(γ(N − 1)) (+ this many) free users, where that
# is at most a few times the cost of a configuration's law
_COMMON_PART_SPAN = 20.0
_STEP_ERROR = 6.0 * UNIT_ROUNDOFF  # two products, one sum and the rounded a, 1 − a of one step
# one symmetric user: three products, two sums and the rounded rate, 1 − rate (10u each)
_SYMMETRIC_STEP_ERROR = 16.0 * UNIT_ROUNDOFF
_EXTRA_ETA = 20.0 * UNIT_ROUNDOFF  # forming P, Q from L (rounded γ, a, products, sums) and e^ε


@dataclass(frozen=True)
class _CountLaw:
    """A law on cells (t, k), t = t_offset + row, k = k_offset + column.

    For every cell, values·(1 − rel_error) ≤ true − rest ≤ values·(1 + rel_error), with rest ≥ 0
    of total mass ≤ dropped (mass cut by windows, lost at the edges, or absolute rounding of
    subnormal results)."""

    values: NDArray[np.float64]
    t_offset: int
    k_offset: int
    rel_error: float
    dropped: float


def _others_law(ones: int, zeros: int, gamma: float, keep: float, flip: float,
                budget: float) -> _CountLaw:
    """(t, k) law of ``ones`` users holding 1 and ``zeros`` holding 0 (module docstring, "Laws").

    Reports of the holders of 1: t1 ~ Bin(ones, γ), ones among them Bin(t1, a); of the holders of
    0: t0 ~ Bin(zeros, γ), ones Bin(t0, 1 − a). The conditional ones law for (t1, t0) is kept in
    a matrix S (row = t1, column = k); a step in t1 (first, row by row) or t0 (then, all rows at
    once) is S ← (1 − θ)·S + θ·S(· − 1) with θ = a resp. 1 − a. Mass pushed past the last column is
    counted in ``dropped`` (k never decreases along a recurrence, so it never comes back).
    """
    silent = 1.0 - gamma
    counts1 = _binomial_law(ones, gamma, silent, budget)
    counts0 = _binomial_law(zeros, gamma, silent, budget)
    first1, first0 = counts1.offset, counts0.offset
    rows, steps = counts1.values.size, counts0.values.size
    last1, last0 = first1 + rows - 1, first0 + steps - 1
    start = _convolve(_binomial_law(first1, keep, flip, budget),
                      _binomial_law(first0, flip, keep, budget), budget)
    top1 = _binomial_law(last1, keep, flip, budget)
    top0 = _binomial_law(last0, flip, keep, budget)
    k_first = start.offset
    k_last = max(start.offset + start.values.size - 1,
                 top1.offset + top1.values.size - 1 + top0.offset + top0.values.size - 1)
    width = k_last - k_first + 1
    matrix = np.zeros((rows, width))
    matrix[0, : start.values.size] = start.values
    outflow = np.zeros(rows)  # mass pushed past the last column (upper bounds, per row)
    margin = 1.0 + start.rel_error + _STEP_ERROR * (rows + steps + 2) + 4.0 * UNIT_ROUNDOFF
    for row in range(1, rows):  # one more participating holder of 1: reports 1 w.p. a
        previous = matrix[row - 1]
        matrix[row, 0] = flip * previous[0]
        matrix[row, 1:] = flip * previous[1:] + keep * previous[:-1]
        outflow[row] = outflow[row - 1] + keep * previous[-1] * margin
    law = np.zeros((rows + steps - 1, width))
    weights1 = counts1.values[:, None]
    scratch = np.empty_like(matrix)
    for step in range(steps):  # one more participating holder of 0: reports 1 w.p. 1 − a
        np.multiply(matrix, weights1 * counts0.values[step], out=scratch)
        law[step: step + rows] += scratch
        if step + 1 < steps:
            outflow += flip * matrix[:, -1] * margin
            np.multiply(matrix[:, :-1], flip, out=scratch[:, 1:])
            matrix *= keep
            matrix[:, 1:] += scratch[:, 1:]
    operations = float(law.size) * (steps + 4) + float(matrix.size) * (rows + steps + 4)
    rel = (start.rel_error + counts1.rel_error + counts0.rel_error
           + _STEP_ERROR * (rows + steps + 2) + (steps + 4) * UNIT_ROUNDOFF) * (1.0 + 1e-6)
    windows = start.dropped + counts1.dropped + counts0.dropped  # T-normalised window cuts
    dropped = windows + float(np.max(outflow)) + 8.0 * operations * _SUBNORMAL
    return _CountLaw(law, first1 + first0, k_first, rel + windows, dropped)


def _add_symmetric_users(law: _CountLaw, users: int, rate: float, silent: float,
                         budget: float) -> _CountLaw:
    """``law`` convolved with ``users`` independent users each reporting a fair bit with
    probability ``rate`` and nothing with probability ``silent`` = 1 − rate (both given to a
    relative 10u; three-tap steps on a grown array; the mass pushed past the last row or column
    is added to ``dropped``)."""
    if users == 0:
        return law
    reports = _binomial_law(users, rate, silent, budget)
    grow = reports.offset + reports.values.size  # rows (and columns) the reports can add
    rows, columns = law.values.shape
    values = np.zeros((rows + grow, columns + grow))
    values[:rows, :columns] = law.values
    half = 0.5 * rate
    outflow = 0.0
    margin = 1.0 + law.rel_error + _SYMMETRIC_STEP_ERROR * (users + 2) + 4.0 * UNIT_ROUNDOFF
    scratch = np.empty_like(values)
    for _ in range(users):
        edge = float(np.sum(values[-1])) + float(np.sum(values[:-1, -1]))
        outflow += edge * rate * margin * (1.0 + (values.shape[0] + values.shape[1] + 4) * UNIT_ROUNDOFF)
        np.multiply(values, half, out=scratch)
        values *= silent
        values[1:, :] += scratch[:-1, :]  # reports 0
        values[1:, 1:] += scratch[:-1, :-1]  # reports 1
    rel = (law.rel_error + _SYMMETRIC_STEP_ERROR * (users + 2)) * (1.0 + 1e-6)
    dropped = law.dropped + outflow * (1.0 + 4.0 * UNIT_ROUNDOFF) + (
        8.0 * float(values.size) * (users + 2) * _SUBNORMAL)
    return _CountLaw(values, law.t_offset, law.k_offset, rel, dropped)


def _victim_law(others: _CountLaw, gamma: float, one: float, zero: float) -> NDArray[np.float64]:
    """The output law with a victim reporting 1 w.p. ``one``, 0 w.p. ``zero``, nothing w.p. 1 − γ
    (one more row and column; cell (t, k) gets L(t, k), L(t − 1, k), L(t − 1, k − 1))."""
    values = others.values
    out = np.zeros((values.shape[0] + 1, values.shape[1] + 1))
    out[:-1, :-1] = (1.0 - gamma) * values
    out[1:, :-1] += zero * values
    out[1:, 1:] += one * values
    return out


def _absent_law(others: _CountLaw) -> NDArray[np.float64]:
    """The output law without the victim, on the cells of :func:`_victim_law`."""
    values = others.values
    out = np.zeros((values.shape[0] + 1, values.shape[1] + 1))
    out[:-1, :-1] = values
    return out


def _grid_bounds(big: NDArray[np.float64], small: NDArray[np.float64], rel_error: float, dropped: float,
                 epsilons: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Certified (lower, upper) on D_{e^ε}(P‖Q) at every ε of ``epsilons`` (module docstring,
    "Many ε in one pass"); ``big``, ``small``: P̂, Q̂ on the same cells, errors (η, D)."""
    p_hat, q_hat = big.ravel(), small.ravel()
    keep = (p_hat > 0.0) | (q_hat > 0.0)
    p_hat, q_hat = p_hat[keep], q_hat[keep]
    with np.errstate(divide="ignore"):
        log_p, log_q = np.log(p_hat), np.log(q_hat)
    finite = np.concatenate((np.abs(log_p[np.isfinite(log_p)]), np.abs(log_q[np.isfinite(log_q)]), [1.0]))
    tau = 8.0 * UNIT_ROUNDOFF * (2.0 * float(np.max(finite)) + 1.0) + 1e-300
    loss = log_p - log_q  # ±inf where one side is 0 (never both)
    order = np.argsort(-loss, kind="stable")
    descending = -loss[order]  # ascending in −κ
    cum_p = np.concatenate(([0.0], np.cumsum(p_hat[order])))
    cum_q = np.concatenate(([0.0], np.cumsum(q_hat[order])))
    eta = rel_error + _EXTRA_ETA
    spread = math.log1p(2.0 * eta / (1.0 - eta)) * (1.0 + 1e-6)  # ≥ ln((1 + η)/(1 − η))
    scale = np.exp(epsilons)
    u = UNIT_ROUNDOFF

    count = np.searchsorted(descending, -(epsilons - spread - tau), side="left")
    rho = (count + 2.0) * u * (1.0 + 1e-6)
    plus = (1.0 + eta) * (1.0 + rho) * cum_p[count]
    minus = scale * (1.0 - eta) * (1.0 - rho) * (1.0 - 2.0 * tau) * cum_q[count]
    # plus and minus carry ≤ 3 roundings each, the subtraction one: 8u of their sum covers them
    upper = (plus - minus + 8.0 * u * (plus + minus) + dropped) * (1.0 + 2.0 * u)
    upper = np.clip(upper, 0.0, 1.0)

    count = np.searchsorted(descending, -(epsilons + spread), side="left")
    rho = (count + 2.0) * u * (1.0 + 1e-6)
    plus = (1.0 - eta) * (1.0 - rho) * cum_p[count]
    minus = scale * (1.0 + eta) * (1.0 + rho) * cum_q[count]
    lower = plus - minus - 8.0 * u * (plus + minus) - scale * dropped * (1.0 + 2.0 * u)
    lower = np.clip(lower, 0.0, 1.0)
    return lower, upper


class SampledBinaryRRProfile:
    """Poisson-sampled shuffled binary RR: certified exact worst case over every configuration.

    δ(ε) = max_m δ_m(ε) over m = number of the N − 1 other users holding 1 (module docstring),
    for ``relation`` ``"replace_one"`` (victim holding 0 vs 1) or ``"add_remove"`` (victim present
    or absent). The whole profile is computed once, on a geometric grid of ε, by a branch and
    bound over blocks of configurations; :meth:`delta_interval` and :meth:`epsilon_interval`
    return certified intervals (L, U) at any ε or δ: L is a certified lower bound on the
    protocol's exact value (an evaluated configuration), U a certified upper bound (every
    configuration covered).

    ``is_exact`` is True when every block was settled: wherever its upper curve exceeds
    ``floor``, it is at most the lower curve at ε/(1 + rtol) or (1 + rtol) times the lower curve
    at ε. Every returned value is certified whatever ``is_exact`` says.
    """

    def __init__(self, epsilon0: float, num_users: int, sampling_probability: float,
                 relation: str = "replace_one", *, rtol: float = SAMPLED_BINARY_RR_RTOL,
                 floor: float = SAMPLED_BINARY_RR_FLOOR,
                 max_laws: int = SAMPLED_BINARY_RR_MAX_LAWS) -> None:
        self.epsilon0 = check_range("epsilon0", epsilon0, 0.0, 30.0, low_open=True)
        self.num_users = check_num_users(num_users, "num_users")
        if self.num_users < 2:
            raise ValueError(f"num_users must be at least 2, got {self.num_users}")
        self.gamma = check_range("sampling_probability", sampling_probability, 0.0, 1.0,
                                 low_open=True, high_open=True)
        if relation not in ("replace_one", "add_remove"):
            raise ValueError(f"relation must be 'replace_one' or 'add_remove', got {relation!r}")
        self.relation = relation
        self.rtol = check_range("rtol", rtol, 0.0, 1.0, low_open=True, high_open=True)
        self.floor = check_range("floor", floor, 0.0, 1.0, low_open=True, high_open=True)
        if isinstance(max_laws, bool) or not isinstance(max_laws, int) or max_laws < 1:
            raise ValueError(f"max_laws must be a positive integer, got {max_laws!r}")
        self.max_laws = max_laws
        self.keep = 1.0 / (1.0 + math.exp(-self.epsilon0))
        self.flip = 1.0 / (1.0 + math.exp(self.epsilon0))
        self.others = self.num_users - 1
        # a user's message: its own bit w.p. f = γ(2a − 1), else ν (common to both inputs):
        # a fair bit w.p. 2γ(1 − a)/(1 − f), no report otherwise
        # (rate and silent each to a relative 10u: tanh, the flip and 1 − γ to ~3u, then ≤ 3 roundings)
        self.differing = self.gamma * math.tanh(self.epsilon0 / 2.0)
        self.symmetric_rate = 2.0 * self.gamma * self.flip / (1.0 - self.differing)
        self.symmetric_silent = (1.0 - self.gamma) / (1.0 - self.differing)  # = 1 − rate
        # replace-one: m and N − 1 − m are the same (relabel); add/remove: victim holding 0, all m
        self.last = self.others // 2 if relation == "replace_one" else self.others
        self.budget = self._budget()
        self._grid: tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]] | None = None
        self._exact = True
        self.laws_evaluated = 0

    # -- public API ------------------------------------------------------------------------------
    @property
    def epsilon_cap(self) -> float:
        """ε at and above which δ = 0: ε0 for replace-one (ε0-LDP victim); add/remove has none
        (all N users may report only with the victim present)."""
        return self.epsilon0 if self.relation == "replace_one" else math.inf

    @property
    def is_exact(self) -> bool:
        """True when every block of configurations was settled (class docstring)."""
        self._profile()
        return self._exact

    def delta_interval(self, epsilon: float) -> tuple[float, float]:
        """(L, U) with L ≤ max_m δ_m(ε) ≤ U, both certified."""
        eps = check_epsilon(epsilon)
        if eps >= self.epsilon_cap:
            return 0.0, 0.0
        grid, lower, upper = self._profile()
        if eps >= grid[-1]:  # add/remove beyond the grid: only infinite losses remain
            return float(lower[-1]) if eps == grid[-1] else 0.0, float(upper[-1])
        right = int(np.searchsorted(grid, eps, side="left"))
        if grid[right] == eps:
            return float(lower[right]), float(upper[right])
        left = right - 1
        # chord of H(x) = D_x in x = e^ε through the two grid points (H convex: an upper bound)
        x_left, x_right, x = math.exp(grid[left]), math.exp(grid[right]), math.exp(eps)
        weight = (x - x_left) / (x_right - x_left)
        chord = (1.0 - weight) * upper[left] + weight * upper[right]
        # rounding of the weight and the sum: 8u of the larger end covers it
        chord = min(float(upper[left]), float(chord) * (1.0 + 8.0 * UNIT_ROUNDOFF)
                    + 8.0 * UNIT_ROUNDOFF * float(upper[left]) + 1e-300)
        return float(lower[right]), chord

    def delta(self, epsilon: float) -> float:
        """Certified upper bound on the protocol's δ(ε)."""
        return self.delta_interval(epsilon)[1]

    def epsilon_interval(self, delta: float) -> tuple[float, float]:
        """(ε_lo, ε_hi): the exact ε(δ) lies in [ε_lo, ε_hi] (grid points, both certified)."""
        target = check_delta(delta)
        grid, lower, upper = self._profile()
        below = np.nonzero(lower > target)[0]
        eps_lo = float(grid[below[-1]]) if below.size else 0.0
        settled = np.nonzero(upper <= target)[0]
        eps_hi = float(grid[settled[0]]) if settled.size else self.epsilon_cap
        return eps_lo, eps_hi

    def epsilon(self, delta: float) -> float:
        """Certified upper bound on the protocol's ε(δ)."""
        return self.epsilon_interval(delta)[1]

    # -- the grid --------------------------------------------------------------------------------
    def _budget(self) -> float:
        raw = max(1e-280, _TRUNCATION_SHARE * self.rtol * self.floor)
        return 10.0 ** math.floor(math.log10(raw))

    def _epsilons(self) -> NDArray[np.float64]:
        top = self.epsilon0
        if self.relation == "add_remove":
            top = max(self.epsilon0, -math.log1p(-self.gamma)) + 1.0
        start = top * GRID_START
        points = int(math.ceil(math.log(top / start) / math.log(GRID_RATIO)))
        grid = start * GRID_RATIO ** np.arange(points + 1, dtype=float)
        grid[-1] = top
        return np.concatenate(([0.0], grid))

    def _curves(self, holders: int, others_zero: int, epsilons: NDArray[np.float64], symmetric: int = 0
                ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(lower, upper) of max over both directions of the configuration with ``holders``
        users holding 1, ``others_zero`` holding 0 and ``symmetric`` users whose message is the
        part ν common to both inputs (a fair bit w.p. 2γ(1 − a)/(1 − f), module docstring), on
        the grid."""
        self.laws_evaluated += 1
        law = _others_law(holders, others_zero, self.gamma, self.keep, self.flip, self.budget)
        law = _add_symmetric_users(law, symmetric, self.symmetric_rate, self.symmetric_silent,
                                   self.budget)
        zero = _victim_law(law, self.gamma, self.gamma * self.flip, self.gamma * self.keep)
        if self.relation == "replace_one":
            other = _victim_law(law, self.gamma, self.gamma * self.keep, self.gamma * self.flip)
        else:
            other = _absent_law(law)
        low0, up0 = _grid_bounds(zero, other, law.rel_error, law.dropped, epsilons)
        low1, up1 = _grid_bounds(other, zero, law.rel_error, law.dropped, epsilons)
        lower, upper = np.maximum(low0, low1), np.maximum(up0, up1)
        if self.relation == "replace_one":
            upper[epsilons >= self.epsilon0] = 0.0  # ε0-LDP: every likelihood ratio ≤ e^ε0
            lower[epsilons >= self.epsilon0] = 0.0
        else:  # the law with the victim is ≥ (1 − γ) times the law without it
            cap = -math.log1p(-self.gamma) * (1.0 + 1e-12)
            absent = epsilons >= cap
            upper[absent] = np.maximum(up0[absent], 0.0)
            lower[absent] = np.maximum(low0[absent], 0.0)
        return lower, upper

    def _configuration(self, m: int, epsilons: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        return self._curves(m, self.others - m, epsilons)

    def _profile(self) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        if self._grid is None:
            self._grid = self._search()
        return self._grid

    def _settled(self, upper: NDArray[np.float64], lower: NDArray[np.float64], shift: int) -> bool:
        relaxed = np.concatenate((np.full(shift, lower[0]), lower[: lower.size - shift]))
        allowed = np.maximum(np.maximum(relaxed, lower * (1.0 + self.rtol)), self.floor)
        return bool(np.all(upper <= allowed))

    def _initial_blocks(self) -> list[tuple[int, int]]:
        """A stack of blocks [0, 0], [1, 1], [2, 3], [4, 7], ... (the worst configurations sit
        near the ends; add/remove: mirrored from m = N − 1 for the upper half), ends on top."""
        top = self.last if self.relation == "replace_one" else self.last // 2
        blocks, first = [], 0
        while first <= top:
            last = min(top, max(first, 2 * first - 1) if first else 0)
            blocks.append((first, last))
            first = last + 1
        if self.relation == "add_remove":
            mirrored = [(self.last - last, self.last - first) for first, last in blocks
                        if self.last - last > top]
            if mirrored and mirrored[-1][0] <= top:
                mirrored[-1] = (top + 1, mirrored[-1][1])
            blocks = [block for pair in itertools.zip_longest(blocks, mirrored) for block in pair
                      if block is not None]
        return blocks[::-1]

    def _block_upper(self, first: int, last: int, epsilons: NDArray[np.float64], best_lower: NDArray[np.float64],
                     shift: int) -> NDArray[np.float64]:
        """Upper curve of every δ_m, m ∈ [first, last] (module docstring, "Configurations"):
        the free users' messages revealed; if that does not settle the block, the smaller of it
        and the bound keeping the common part ν of the free users' messages."""
        free = last - first
        _, revealed = self._curves(first, self.others - last, epsilons)
        if (self._settled(revealed, best_lower, shift) or self.laws_evaluated >= self.max_laws
                or free > _COMMON_PART_SPAN * math.sqrt(self.gamma * self.others) + _COMMON_PART_SPAN):
            return revealed
        kept = _binomial_law(free, 1.0 - self.differing, self.differing, self.budget)
        _, common = self._curves(first, self.others - last, epsilons, symmetric=kept.offset)
        common = np.minimum(1.0, common + kept.dropped * (1.0 + 4.0 * UNIT_ROUNDOFF))
        return np.minimum(revealed, common)

    def _search(self) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        epsilons = self._epsilons()
        shift = max(1, int(math.ceil(math.log1p(self.rtol) / math.log(GRID_RATIO))))
        best_lower = np.zeros_like(epsilons)
        best_upper = np.zeros_like(epsilons)
        if self.last + 1 <= FULL_SEARCH_CONFIGURATIONS:
            for m in range(self.last + 1):
                lower, upper = self._configuration(m, epsilons)
                best_lower, best_upper = np.maximum(best_lower, lower), np.maximum(best_upper, upper)
            return epsilons, best_lower, best_upper
        seeds = sorted({0, 1, 2, 4, 8} | ({self.last - j for j in (0, 1, 2, 4, 8)}
                                          if self.relation == "add_remove" else set()))
        for m in seeds:
            lower, upper = self._configuration(m, epsilons)
            best_lower = np.maximum(best_lower, lower)
            best_upper = np.maximum(best_upper, upper)
        evaluated = set(seeds)
        pending = self._initial_blocks()
        while pending:
            first, last = pending.pop()
            if last - first + 1 <= _LEAF_CONFIGURATIONS:
                for m in range(first, last + 1):
                    if m not in evaluated:
                        evaluated.add(m)
                        lower, upper = self._configuration(m, epsilons)
                        best_lower = np.maximum(best_lower, lower)
                        best_upper = np.maximum(best_upper, upper)
                continue
            block_upper = self._block_upper(first, last, epsilons, best_lower, shift)
            if self.laws_evaluated >= self.max_laws or self._settled(block_upper, best_lower, shift):
                if not self._settled(block_upper, best_lower, shift):
                    self._exact = False
                best_upper = np.maximum(best_upper, block_upper)
                continue
            middle = (first + last) // 2
            if last - first + 1 <= _PROBED_BLOCK and middle not in evaluated:
                evaluated.add(middle)
                lower, upper = self._configuration(middle, epsilons)
                best_lower = np.maximum(best_lower, lower)
                best_upper = np.maximum(best_upper, upper)
            pending.extend([(middle + 1, last), (first, middle)])
        return epsilons, best_lower, best_upper

    def __repr__(self) -> str:
        return (f"SampledBinaryRRProfile(epsilon0={self.epsilon0!r}, num_users={self.num_users!r}, "
                f"sampling_probability={self.gamma!r}, relation={self.relation!r})")


def is_tractable(num_users: int, sampling_probability: float) -> bool:
    """Whether the exact profile is cheap enough for the accountants' sampled rounds: 2 ≤ N,
    0 < γ < 1 and γ·(N − 1) ≤ :data:`TRACTABLE_EXPECTED_REPORTS` (one configuration law costs
    about (γN)^{3/2} cell updates)."""
    return (num_users >= 2 and 0.0 < sampling_probability < 1.0
            and sampling_probability * (num_users - 1) <= TRACTABLE_EXPECTED_REPORTS)


class BinaryRRCohortProfile(SampledBinaryRRProfile):
    """Shuffled binary RR on a cohort of exactly m of N users drawn uniformly without
    replacement (replace-one): certified exact worst case over every configuration.

    The release is the number k of ones among the m reports. In the Poisson round of rate
    γ = m/N the participant count C ~ Bin(N, γ) does not depend on the data and, given C = m, the
    participants are a uniform m-subset: the cohort's law is row t = m of the Poisson round's
    (t, k) law divided by B = P[C = m], so δ_m(ε) = D_{e^ε}(row_m P0 ‖ row_m P1)/B.

    Block bound (configurations m1..m2, b = m2 − m1 free users): in the Poisson round reveal the
    free users' messages, with c_f reports among them. Given c_f, the rest (the victim and the
    N − 1 − b other users) is the Poisson round conditioned on its count r = m − c_f, and the
    law of c_f given C = m is Bin(b, γ)(c_f)·Bin(N − b, γ)(m − c_f)/B in both victim worlds. So
    δ_m ≤ Σ_r λ_r·D_{e^ε}(row_r P0' ‖ row_r P1') with λ_r = Bin(b, γ)(m − r)/B (the rest's row
    probability cancels), i.e. the divergence of the rest's (t, k) laws with row r scaled by λ_r.
    A single configuration is b = 0. Rounding: B from its certified binomial window (lower end
    for upper bounds, upper end for lower bounds), the scaled errors and masses likewise.
    """

    def __init__(self, epsilon0: float, sample_size: int, population_size: int, *,
                 rtol: float = SAMPLED_BINARY_RR_RTOL, floor: float = SAMPLED_BINARY_RR_FLOOR,
                 max_laws: int = SAMPLED_BINARY_RR_MAX_LAWS) -> None:
        population = check_num_users(population_size, "population_size")
        size = check_num_users(sample_size, "sample_size")
        if not 1 <= size < population:
            raise ValueError(f"sample_size must be in [1, population_size) = [1, {population}), "
                             f"got {size}")
        self.sample_size = size
        super().__init__(epsilon0, population, size / population, "replace_one", rtol=rtol,
                         floor=floor, max_laws=max_laws)

    def _block_upper(self, first: int, last: int, epsilons: NDArray[np.float64], best_lower: NDArray[np.float64],
                     shift: int) -> NDArray[np.float64]:
        return self._curves(first, self.others - last, epsilons)[1]

    def _curves(self, holders: int, others_zero: int, epsilons: NDArray[np.float64], symmetric: int = 0
                ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        self.laws_evaluated += 1
        gamma, u = self.gamma, UNIT_ROUNDOFF
        free = self.others - holders - others_zero
        law = _others_law(holders, others_zero, gamma, self.keep, self.flip, self.budget)
        zero = _victim_law(law, gamma, gamma * self.flip, gamma * self.keep)
        one = _victim_law(law, gamma, gamma * self.keep, gamma * self.flip)
        count = _binomial_law(self.num_users, gamma, 1.0 - gamma, self.budget)
        index = self.sample_size - count.offset
        if not 0 <= index < count.values.size:  # m outside its own count's window: nothing known
            return np.zeros_like(epsilons), np.where(epsilons < self.epsilon0, 1.0, 0.0)
        b_value = float(count.values[index])
        b_low = b_value * (1.0 - count.rel_error - count.dropped) * (1.0 - 2.0 * u)
        b_high = b_value * (1.0 + count.rel_error) * (1.0 + 2.0 * u)
        revealed = _binomial_law(free, gamma, 1.0 - gamma, self.budget)
        rows = law.t_offset + np.arange(zero.shape[0])  # the rest's report count of each row
        reveal_index = self.sample_size - rows - revealed.offset
        inside = (reveal_index >= 0) & (reveal_index < revealed.values.size)
        weights = np.where(inside, revealed.values[np.clip(reveal_index, 0, revealed.values.size - 1)],
                           0.0)
        eta = (law.rel_error + revealed.rel_error + revealed.dropped + 4.0 * u) * (1.0 + 1e-6)
        # the law's misplaced mass times a weight ≤ 1 + η; rows whose revealed count lies
        # outside its window: total weight ≤ revealed.dropped (each row's divergence ≤ 1)
        dropped = (law.dropped * (1.0 + eta) + revealed.dropped) * (1.0 + 4.0 * u)
        scaled_zero, scaled_one = zero * weights[:, None], one * weights[:, None]
        low0, up0 = _grid_bounds(scaled_zero, scaled_one, eta, dropped, epsilons)
        low1, up1 = _grid_bounds(scaled_one, scaled_zero, eta, dropped, epsilons)
        upper = np.minimum(1.0, np.maximum(up0, up1) / b_low * (1.0 + 2.0 * u))
        lower = np.maximum(low0, low1) / b_high * (1.0 - 2.0 * u)
        upper[epsilons >= self.epsilon0] = 0.0  # ε0-LDP: every likelihood ratio ≤ e^ε0
        lower[epsilons >= self.epsilon0] = 0.0
        return lower, upper

    def __repr__(self) -> str:
        return (f"BinaryRRCohortProfile(epsilon0={self.epsilon0!r}, sample_size={self.sample_size!r}, "
                f"population_size={self.num_users!r})")


@functools.lru_cache(maxsize=8)
def binary_rr_cohort_profile(epsilon0: float, sample_size: int, population_size: int
                             ) -> BinaryRRCohortProfile:
    """A cached :class:`BinaryRRCohortProfile` with the default tolerances."""
    return BinaryRRCohortProfile(epsilon0, sample_size, population_size)


@functools.lru_cache(maxsize=8)
def sampled_binary_rr_profile(epsilon0: float, num_users: int, sampling_probability: float,
                              relation: str = "replace_one") -> SampledBinaryRRProfile:
    """A cached :class:`SampledBinaryRRProfile` with the default tolerances."""
    return SampledBinaryRRProfile(epsilon0, num_users, sampling_probability, relation)


__all__ = [
    "BinaryRRCohortProfile",
    "FULL_SEARCH_CONFIGURATIONS",
    "GRID_RATIO",
    "SampledBinaryRRProfile",
    "TRACTABLE_EXPECTED_REPORTS",
    "binary_rr_cohort_profile",
    "is_tractable",
    "sampled_binary_rr_profile",
]
