"""The multi-level bound: a victim pair's whole privacy-loss spectrum against the privacy blanket.

Setting. A local randomizer R, a victim pair (x⁰, x¹) with μ0 = R(x⁰), μ1 = R(x¹) on a finite output
set, and a sub-probability m ("blanket") that every user's report dominates: R(x)(y) ≥ m(y) for every
input x and output y (for a matrix the column minimum, the privacy blanket of Balle, Bell, Gascón and
Nissim, "The Privacy Blanket of the Shuffle Model", CRYPTO 2019), with m(y) > 0 wherever
μ0(y) + μ1(y) > 0. The outputs are grouped into *levels* t of equal ratios
(a_t, b_t) = (μ0(y)/m(y), μ1(y)/m(y)), each carrying the blanket mass m_t = Σ_{y ∈ t} m(y).

Theorem. With n users (the victim and n − 1 others holding any inputs),

    D_{e^ε}(P‖Q) ≤ (1/n)·E[(Z_1 + … + Z_n)⁺],   Z_i i.i.d.,  P[Z = a_t − e^ε·b_t] = m_t,
                                                 P[Z = 0] = 1 − Σ_t m_t,

and D_{e^ε}(Q‖P) is bounded by the same expression with a and b exchanged.

Proof. Each other user i draws its report from m + (R(x_i) − m): with probability γ = Σ_y m(y) it is
a *blanket* user reporting y ~ ω = m/γ, otherwise it reports from the normalised remainder. Release,
besides the shuffled reports, which users are not blanket users and their reports: the shuffled
output is a post-processing of this view, so the view's divergence bounds the true one. Given the
number M − 1 of blanket users (a law that does not depend on the victim), the non-blanket reports
are independent of the victim and the rest of the view is the shuffled multiset of M reports, the
victim's y ~ μ and M − 1 draws from ω. An ordered arrangement (y_1, …, y_M) of it, uniformly
permuted, has probability Π_j ω(y_j) · (1/M)·Σ_j μ(y_j)/ω(y_j), so

    D_{e^ε}(P‖Q) = E_M[(1/M)·E_{y ~ ω^M}[(Σ_j (μ0(y_j) − e^ε μ1(y_j))/ω(y_j))⁺]].

With μ/ω = γ·(a, b) and P[M = k]·γ/k = P[Bin(n, γ) = k]/n (M − 1 ~ Bin(n − 1, γ)), this is
(1/n)·E[(Σ_{i ≤ n} Z_i)⁺]: the Bin(n, γ) non-zero terms are γ-scaled draws of a − e^ε b under ω.
Su, Cheng and Wang ("Decomposition-Based Optimal Bounds for Privacy Amplification via Shuffling",
arXiv 2504.07414, the general clone paradigm) show that this decomposition is the optimal one; the
clone pair of :mod:`dpacct_shuffle.core.bound` is the special case of three levels (Q0, Q1, N):
(a, b) = (pα, α)/r0, (α, pα)/r1, (w, w)/s with masses r0, r1, s.

The bound is non-increasing in n (an extra user is an independent draw the adversary can simulate),
so above ``MAX_EVALUATED_USERS`` users it is evaluated at that many. It vanishes for
ε ≥ ln max_t max(a_t/b_t, b_t/a_t) (every Z ≤ 0) and never exceeds the victim's total variation.

Evaluation, per direction at a given ε, all on the safe side:

* values: v_t = a_t − e^ε·b_t plus 8u·(a_t + e^ε b_t) (u = 2⁻⁵³); a pointwise larger Z only raises
  E[(ΣZ)⁺]. Masses (products or quotients of a few floats) are taken a relative 16u up on positive values
  and down on negative ones (mass moved from or to the zero atom). Values within a relative 1e-9
  of each other are merged at the largest one.
* exact sum (at most ``EXACT_CELL_LIMIT`` count vectors of the multinomial): every cell's
  probability exp(ln pmf) is taken with a log margin of 64u times the sum of the absolute log terms,
  its value with 2(K + 1)u times Σ|v_t|·N_t; the total with a relative (cells + 8)·u.
* windowed sum (at most ``WINDOW_CELL_LIMIT`` count vectors of the atoms but one in a window that
  leaves out a certified mass): :func:`windowed_direction`, the bound itself without merging;
* otherwise a *convex-order reduction* to the three-type problem the core certifies
  (:func:`dpacct_shuffle.core.numerics.directional_bracket`): a law on [lo, 0] (or [0, hi]) is
  dominated in convex order by the two-point law on {lo, 0} ({0, hi}) with the same mean
  (Jensen: f(v) ≤ (v/lo)·f(lo) + (1 − v/lo)·f(0) for convex f). Replacing, inside the per-user law,
  the positive values by {0, c_A = max v} and a split of the negative values into two groups by
  {c_B = min v, 0} and {c_K = min of the second group, 0} (masses Σ m v / c) gives a per-user law
  Z' ≥ Z in increasing convex order. Replacing the users' Z_i by Z'_i one at a time, conditioned on
  the others (f(· + s) is increasing convex for f = (·)⁺), never lowers E[f(ΣZ)], so
  E[(ΣZ)⁺] ≤ E[(ΣZ')⁺] (the closure of the order under independent sums, Shaked and
  Shanthikumar, "Stochastic Orders", Springer 2007, Section 4.A). The clone mass is rounded up, the negative masses down (moving mass
  from c_A down to 0, or from 0 up from a negative value, would be unsafe; the reverse is not).
  The split adding the least second moment is refined; the next one is refined too when its
  coarsest evaluation is already below that (each is a certified bound; the order only steers
  tightness and time).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
from scipy import special

from dpacct_shuffle.core.bound import (
    CHERNOFF_SEARCH_MAX_DELTA,
    CHERNOFF_SEARCH_USERS,
    MAX_EVALUATED_USERS,
    _NEGLIGIBLE_DELTA,
    _gaussian_epsilon,
    refined_bracket,
)
from dpacct_shuffle.core.inner_expectation import inner_expectation
from dpacct_shuffle.core.numerics import directional_bracket
from dpacct_shuffle.core.problem import Bracket, DirectionalProblem
from dpacct_shuffle.core.tails import _binomial_window, chernoff_epsilon, chernoff_log_upper
from dpacct_shuffle.core.search import epsilon_search
from dpacct_shuffle.core.validation import check_delta, check_epsilon, check_num_users, check_range

_ULP = 2.0**-52
_U = 2.0**-53
EXACT_CELL_LIMIT = 200_000
# windowed sum: at most this many count vectors of the atoms other than the closed-form one
WINDOW_CELL_LIMIT = 3_500_000
_CHUNK_CELLS = 1 << 19
# windowed sums: kept rows are evaluated in groups of about this many candidate cells (small
# temporaries)
_BLOCK_CELLS = 1 << 15
_FIRST_WINDOW_TAIL = 1e-12
_WINDOW_PASSES = 4
_MERGE_RTOL = 1e-9
# windowed sums: a group's runs are gathered cell by cell below this share of its rows' cells
_RUN_SHARE = 0.5
_MASS_RTOL = 16.0 * _U
_SEARCH_RTOL = 1e-3
_MAX_EVALUATED_EPSILON = 300.0


class PrivacyLossLevels:
    """Levels (a_t, b_t, m_t) of one victim pair against a blanket, and their shuffle bound.

    Args:
      ratios0: a_t = μ0(y)/m(y) on level t (≥ 0, finite).
      ratios1: b_t = μ1(y)/m(y) (≥ 0, finite).
      masses: m_t, the blanket mass of level t (> 0, Σ m_t ≤ 1).

    The caller proves the domination R(x)(y) ≥ m(y) for every input (module docstring); the bound is
    then valid for every configuration of the other users.
    """

    __slots__ = ("ratios0", "ratios1", "masses", "epsilon0", "total_variation", "symmetric", "_key")

    def __init__(self, ratios0: Sequence[float] | np.ndarray, ratios1: Sequence[float] | np.ndarray,
                 masses: Sequence[float] | np.ndarray) -> None:
        a = np.asarray(ratios0, dtype=float).ravel()
        b = np.asarray(ratios1, dtype=float).ravel()
        m = np.asarray(masses, dtype=float).ravel()
        if not a.shape == b.shape == m.shape or a.size == 0:
            raise ValueError("ratios0, ratios1 and masses must be non-empty and of equal length, "
                             f"got lengths {a.size}, {b.size}, {m.size}")
        for name, values in (("ratios0", a), ("ratios1", b)):
            if not np.all(np.isfinite(values) & (values >= 0.0)):
                raise ValueError(f"{name} must be finite and >= 0")
        if not np.all(np.isfinite(m) & (m > 0.0)):
            raise ValueError("masses must be finite and > 0")
        if math.fsum(m.tolist()) > 1.0 + 1e-9:
            raise ValueError(f"masses must sum to at most 1, got {math.fsum(m.tolist())!r}")
        for name, values in (("ratios0", a), ("ratios1", b)):
            victim = math.fsum((values * m).tolist())
            if victim > 1.0 + 1e-9:
                raise ValueError(f"{name} * masses is the victim's law on the levels and must sum "
                                 f"to at most 1, got {victim!r}")
        self.ratios0, self.ratios1, self.masses = a, b, m
        for arr in (a, b, m):
            arr.setflags(write=False)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(b > 0.0, a / b, np.where(a > 0.0, np.inf, 1.0))
            inverse = np.where(a > 0.0, b / a, np.where(b > 0.0, np.inf, 1.0))
        top = float(max(ratio.max(), inverse.max()))
        self.epsilon0 = math.inf if math.isinf(top) else math.log(top * (1.0 + 4.0 * _ULP)) * (
            1.0 + 4.0 * _ULP) + 1e-300
        tv = max(math.fsum((m * np.maximum(a - b, 0.0)).tolist()),
                 math.fsum((m * np.maximum(b - a, 0.0)).tolist()))
        self.total_variation = min(1.0, tv * (1.0 + 8.0 * _ULP))
        # exchanging a and b gives the same levels: both directions are the same expression
        forward = sorted(zip(a.tolist(), b.tolist(), m.tolist()))
        self.symmetric = forward == sorted(zip(b.tolist(), a.tolist(), m.tolist()))
        self._key = (a.tobytes(), b.tobytes(), m.tobytes())

    @classmethod
    def of_variation_ratio(cls, vr: object) -> "PrivacyLossLevels":
        """The three levels (Q0, Q1, N) of a :class:`~dpacct_shuffle.VariationRatio`'s clone pair.

        (a, b, m) = (pα/r0, α/r0, r0), (α/r1, pα/r1, r1), (λ, λ, s) with λ = neutral_weight/s: the
        module's expression is then the core's (1/n)·E[(c_A·A + c_B·B + c_K·K)⁺] term by term.
        """
        rows = []
        if vr.r0 > 0.0:  # type: ignore[attr-defined]
            rows.append((vr.p_alpha / vr.r0, vr.alpha / vr.r0, vr.r0))  # type: ignore[attr-defined]
        if vr.r1 > 0.0:  # type: ignore[attr-defined]
            rows.append((vr.alpha / vr.r1, vr.p_alpha / vr.r1, vr.r1))  # type: ignore[attr-defined]
        share = vr.neutral_share  # type: ignore[attr-defined]
        if share > 0.0 and vr.neutral_weight > 0.0:  # type: ignore[attr-defined]
            lam = vr.neutral_weight / share  # type: ignore[attr-defined]
            rows.append((lam, lam, share))
        if not rows:
            raise ValueError(f"{vr!r} has no clone or neutral mass (beta = 0)")
        a, b, m = zip(*rows)
        return cls(a, b, m)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PrivacyLossLevels):
            return NotImplemented
        return self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __repr__(self) -> str:
        return f"PrivacyLossLevels({self.masses.size} levels, epsilon0={self.epsilon0:.6g})"

    def __reduce__(self) -> tuple[type, tuple[list[float], list[float], list[float]]]:
        return PrivacyLossLevels, (self.ratios0.tolist(), self.ratios1.tolist(),
                                   self.masses.tolist())

    # -- the bound ------------------------------------------------------------------------
    def delta_interval(self, epsilon: float, n: int, rtol: float = 1e-3) -> Bracket:
        """(lower estimate, certified upper bound) of the module's bound, both directions."""
        eps = check_epsilon(epsilon)
        users = check_num_users(n)
        tolerance = check_range("rtol", rtol, 0.0, 1.0, low_open=True)
        return _levels_bracket(self, eps, min(users, MAX_EVALUATED_USERS), tolerance)

    def delta(self, epsilon: float, n: int) -> float:
        """Certified upper bound on the shuffled δ(ε) of the pair with n users."""
        return self.delta_interval(epsilon, n).upper

    def delta_floor(self, epsilon: float, n: int) -> float:
        """A value at most :meth:`delta` (at every rtol of :meth:`delta_interval`), from one
        coarse evaluation of each convex-order problem: lets a caller that only needs to know
        whether the certified δ exceeds a target skip the refinement (:func:`_upper_floor`);
        0.0 where no such cheap value exists."""
        eps = check_epsilon(epsilon)
        return _upper_floor(self, eps, min(check_num_users(n), MAX_EVALUATED_USERS))

    def epsilon(self, delta: float, n: int, rtol: float = 1e-4, guess: float | None = None
                ) -> float:
        """Smallest ε (relative ``rtol``) where the certified :meth:`delta` is ≤ ``delta``
        (the core's secant search, :func:`dpacct_shuffle.core.search.epsilon_search`, from
        ``guess`` when given — a starting point only)."""
        target = check_delta(delta)
        users = min(check_num_users(n), MAX_EVALUATED_USERS)
        tolerance = check_range("rtol", rtol, 0.0, 1.0, low_open=True)
        start = self._initial_guess(target, users) if guess is None else check_range(
            "guess", guess, 0.0, math.inf, low_open=True, high_open=True)
        if (target < self.total_variation and target <= CHERNOFF_SEARCH_MAX_DELTA
                and users >= CHERNOFF_SEARCH_USERS and math.isfinite(self.epsilon0)):
            # tiny δ at huge n: the Chernoff ε of the convex-order problems, certified by the
            # cap of :func:`_levels_bracket` (as for VariationRatio.epsilon)
            return chernoff_epsilon(lambda eps: _chernoff_problems(self, eps, users), target,
                                    self.epsilon0, tolerance)
        return epsilon_search(lambda eps: _levels_bracket(self, eps, users, _SEARCH_RTOL).upper,
                              target, self.total_variation, self.epsilon0, start, tolerance)

    def _initial_guess(self, delta: float, n: int) -> float:
        """Starting point only: μ-Gaussian DP with μ² = Σ_t m_t (a_t − b_t)²/n (the ε = 0 law)."""
        with np.errstate(over="ignore"):  # ratios beyond 1e154: spread ∞, the default guess
            spread = math.fsum((self.masses * (self.ratios0 - self.ratios1) ** 2).tolist())
        mu = math.sqrt(spread / n)
        guess = 0.8 * _gaussian_epsilon(mu, delta) if 0.0 < mu < 10.0 else 1.0
        if math.isfinite(self.epsilon0):
            guess = min(guess, 0.5 * self.epsilon0)
        return max(guess, 1e-9)


@functools.lru_cache(maxsize=2048)
def _levels_bracket(levels: PrivacyLossLevels, eps: float, n: int, rtol: float) -> Bracket:
    if eps >= levels.epsilon0:
        return Bracket(0.0, 0.0)
    eps = min(eps, _MAX_EVALUATED_EPSILON)
    lower = upper = 0.0
    directions = ((levels.ratios0, levels.ratios1), (levels.ratios1, levels.ratios0))
    for a, b in directions[:1] if levels.symmetric else directions:
        values, masses = direction_atoms(a, b, levels.masses, eps)
        bracket = _direction_bracket(values, masses, n, levels.total_variation, rtol)
        lower, upper = max(lower, bracket.lower), max(upper, bracket.upper)
    upper = min(upper, levels.total_variation)
    chernoff_problems = _chernoff_problems(levels, eps, n) if n >= CHERNOFF_SEARCH_USERS else None
    if chernoff_problems is not None:  # the Chernoff bound of the convex-order problems caps it
        chernoff = max((chernoff_log_upper(problem) for problem in chernoff_problems),
                       default=-math.inf)
        upper = min(upper, max(math.exp(chernoff), 5e-324))
    return Bracket(min(lower, upper), upper)


def _upper_floor(levels: PrivacyLossLevels, eps: float, n: int) -> float:
    """A lower bound on the upper end of ``_levels_bracket(levels, eps, n, rtol)`` for every rtol.

    Where a direction is evaluated by the convex-order reduction alone (more than
    ``EXACT_CELL_LIMIT`` count vectors, no window within ``WINDOW_CELL_LIMIT``), its upper end is
    the minimum, over the problems :func:`_direction_bracket` refines, of certified upper bounds
    on each problem's exact value E_i, capped by the total variation (and by a Chernoff bound of
    the first problem, also ≥ E_1). The lower end L_i of any evaluation of problem i is at most
    E_i, so min(L_1, L_2, TV) is at most that upper end, and the maximum of it over the
    directions is at most the two-sided upper end. Here L_i is the coarsest evaluation (4 bands).
    Returns 0.0 (a trivial floor) where another path evaluates some direction, or where a
    coefficient is not finite or a problem's Chernoff bound is below 1e-300 (refined_bracket then
    answers without evaluating the problem).
    """
    if eps >= levels.epsilon0:
        return 0.0
    eps = min(eps, _MAX_EVALUATED_EPSILON)
    floor = 0.0
    directions = ((levels.ratios0, levels.ratios1), (levels.ratios1, levels.ratios0))
    for a, b in directions[:1] if levels.symmetric else directions:
        values, masses = direction_atoms(a, b, levels.masses, eps)
        if (not np.any(values > 0.0) or not np.any(values < 0.0)
                or math.comb(n + values.size, values.size) <= EXACT_CELL_LIMIT
                or _first_window_fits(values, masses, n)):
            return 0.0
        problems = convex_order_problems(values, masses, n, 2)
        if not all(math.isfinite(c) for problem in problems
                   for c in (problem.c_a, problem.c_b, problem.c_k)) or any(
                chernoff_log_upper(problem) < math.log(_NEGLIGIBLE_DELTA) for problem in problems):
            return 0.0  # refined_bracket answers from the coefficients or the Chernoff bound alone
        lowest = min(directional_bracket(problem, 4, 1e-18).lower for problem in problems)
        floor = max(floor, min(lowest, levels.total_variation))
    return floor


def _chernoff_problems(levels: PrivacyLossLevels, eps: float, n: int
                       ) -> list[DirectionalProblem] | None:
    """The first convex-order problem of each direction with atoms of both signs (a direction
    without positive atoms has δ = 0); None if a direction has only positive atoms (δ = E[Z], not
    bounded by Chernoff here)."""
    eps = min(eps, _MAX_EVALUATED_EPSILON)
    directions = ((levels.ratios0, levels.ratios1), (levels.ratios1, levels.ratios0))
    problems = []
    for a, b in directions[:1] if levels.symmetric else directions:
        values, masses = direction_atoms(a, b, levels.masses, eps)
        if np.any(values > 0.0) and not np.any(values < 0.0):
            return None
        if np.any(values > 0.0):
            problems.append(convex_order_problems(values, masses, n, 2)[0])
    return problems


def direction_atoms(a: np.ndarray, b: np.ndarray, masses: np.ndarray, eps: float
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Per-user atoms (values ≥ a_t − e^ε b_t, masses) of one direction, merged and sorted.

    Values carry 8u·(a_t + e^ε b_t) of rounding margin, masses a relative 16u (up on positive
    values, down on negative ones); values within a relative ``_MERGE_RTOL`` are merged at the
    largest one (masses summed).
    """
    e = math.exp(eps)
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = e * b
        values = a - scaled + 8.0 * _U * (a + scaled)
    # e^ε·b_t beyond the float range: the exact value is below −1.7e308 (a_t is finite), and the
    # largest negative float is above it (a pointwise larger Z keeps the bound)
    values = np.where(np.isfinite(scaled), values, -np.finfo(float).max)
    # masses known to a relative 16u (products, quotients of a few floats): more mass on a positive value, less on
    # a negative one, each only raises the bound (mass moves from or to the zero atom)
    m = masses * np.where(values > 0.0, 1.0 + _MASS_RTOL, 1.0 - _MASS_RTOL)
    order = np.argsort(values, kind="stable")
    values, m = values[order], m[order]
    merged_values: list[float] = []
    merged_masses: list[list[float]] = []
    for v, w in zip(values.tolist(), m.tolist()):
        if merged_values and v - merged_values[-1] <= _MERGE_RTOL * abs(v) + 1e-300:
            merged_values[-1] = v  # sorted: v is the largest of its group
            merged_masses[-1].append(w)
        else:
            merged_values.append(v)
            merged_masses.append([w])
    return (np.array(merged_values), np.array([math.fsum(group) for group in merged_masses]))


def _direction_bracket(values: np.ndarray, masses: np.ndarray, n: int, total_variation: float,
                       rtol: float) -> Bracket:
    if not np.any(values > 0.0):
        return Bracket(0.0, 0.0)
    if not np.any(values < 0.0):  # (ΣZ)⁺ = ΣZ: the bound is E[Z] = Σ_t m_t v_t
        mean = min(1.0, math.fsum((masses * values).tolist()) * (1.0 + 4.0 * _U))
        return Bracket(mean, mean)
    k = values.size
    if math.comb(n + k, k) <= EXACT_CELL_LIMIT:
        value = exact_direction(values, masses, n)
        return Bracket(value, value)
    windowed = windowed_direction(values, masses, n, rtol)
    if windowed is not None and windowed.upper - windowed.lower <= rtol * windowed.upper:
        return windowed
    problems = convex_order_problems(values, masses, n, 2)
    reduced = refined_bracket(problems[:1], total_variation, rtol)
    for problem in problems[1:]:  # the next split, refined only if already tighter when coarse
        if directional_bracket(problem, 4, 1e-18).upper < reduced.upper:
            other = refined_bracket([problem], total_variation, rtol)
            if other.upper < reduced.upper:
                reduced = Bracket(min(reduced.lower, other.upper), other.upper)
    if windowed is None:
        return reduced
    # the reduction's lower end bounds the reduced problem, not this one: keep the window's
    return Bracket(min(windowed.lower, reduced.upper), min(windowed.upper, reduced.upper))


def _compositions(n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """All count vectors (N_1, …, N_k) with Σ N_t ≤ n, and the remaining n − Σ N_t."""
    rows = np.zeros((1, 0), dtype=np.int64)
    remaining = np.array([n], dtype=np.int64)
    for _ in range(k):
        reps = remaining + 1
        index = np.repeat(np.arange(rows.shape[0]), reps)
        starts = np.repeat(np.cumsum(reps) - reps, reps)
        new = np.arange(index.size, dtype=np.int64) - starts
        rows = np.column_stack([rows[index], new])
        remaining = remaining[index] - new
    return rows, remaining


@functools.lru_cache(maxsize=4)
def _composition_table(n: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The count vectors of :func:`_compositions` with the parts of their multinomial log terms
    that do not depend on the masses: (counts, rest counts, lnΓ(n + 1) − Σ_t lnΓ(N_t + 1) −
    lnΓ(rest + 1), and the sum of the absolute values of these three terms), read-only (cached:
    every ε of a profile needs the same cells)."""
    counts, rest_count = _compositions(n, k)
    terms = [np.full(counts.shape[0], special.gammaln(n + 1.0)),
             -special.gammaln(counts + 1.0).sum(axis=1), -special.gammaln(rest_count + 1.0)]
    log_coefficient = np.sum(terms, axis=0)
    log_scale = np.sum(np.abs(terms), axis=0)
    for array in (counts, rest_count, log_coefficient, log_scale):
        array.setflags(write=False)
    return counts, rest_count, log_coefficient, log_scale


_LEVEL_SCALE = 2.0 ** -64
_SMALLEST_SUBNORMAL = 2.0 ** -1074


def exact_direction(values: np.ndarray, masses: np.ndarray, n: int) -> float:
    """Certified upper value of (1/n)·E[(Σ_{i ≤ n} Z_i)⁺] by summing every multinomial cell."""
    k = values.size
    counts, rest_count, log_coefficient, log_scale = _composition_table(n, k)
    rest = max(0.0, 1.0 - math.fsum(masses.tolist()))
    # the cell levels are summed scaled by 2^−64 (exact for normal floats; a subnormal product is
    # off by at most 2^−1075, covered by the absolute term n·2^−1074), so that no partial sum
    # overflows whatever the values (−1.7e308 stands for a level below the float range); an
    # upper level beyond the float range is then +∞ (δ = 1, pessimistic)
    level = counts @ (values * _LEVEL_SCALE)
    scale = counts @ (np.abs(values) * _LEVEL_SCALE)
    level_up_scaled = level + 2.0 * (k + 1) * _U * scale + n * _SMALLEST_SUBNORMAL
    with np.errstate(over="ignore"):
        level_up = level_up_scaled / _LEVEL_SCALE
    keep = level_up_scaled > 0.0
    if rest == 0.0:
        keep &= rest_count == 0
    if not np.any(keep):
        return 0.0
    c, r, lv = counts[keep], rest_count[keep], level_up[keep]
    # the log terms of the cell probability: the coefficient's (summed in the same order as
    # the masses' ones after it) and c·ln m, r·ln(rest)
    log_pmf = log_coefficient[keep] + c @ np.log(masses)
    absolute = log_scale[keep] + np.abs(c @ np.log(masses))
    if rest > 0.0:
        log_pmf = log_pmf + r * math.log(rest)
        absolute = absolute + np.abs(r * math.log(rest))
    margin = 64.0 * _U * (absolute + 1.0)
    total = float(np.sum(np.exp(log_pmf + margin) * lv))
    cells: int = c.shape[0]
    return min(1.0, total * (1.0 + (cells + 8.0) * _U) / n)


def _log_pmf_with_margin(terms: list[np.ndarray], n: int) -> tuple[np.ndarray, np.ndarray]:
    """ln of multinomial cell probabilities from their log terms, and a certified margin on it.

    Each term (lnΓ of a count, count × ln mass) is accurate to a few units of rounding of its
    magnitude and a mass computed as one minus a sum is off by at most ~u absolutely (its log by
    ~u per count): 64u × (Σ|terms| + n + 1) covers both and the summation of the terms.
    """
    # summed term by term, in order (what np.sum over the stacked terms' first axis does, without
    # stacking them)
    log_pmf = terms[0].copy()
    absolute = np.abs(terms[0])
    for term in terms[1:]:
        log_pmf += term
        absolute += np.abs(term)
    margin = 64.0 * _U * (absolute + n + 1.0)
    return log_pmf, margin


def _threshold_slack(trials: np.ndarray, y: np.ndarray, c_a: float) -> np.ndarray:
    """Rounding allowance r = 8u·(c_A·M + |y|) where the closed form's threshold t (the smallest
    integer with c_A·t + y > 0) may be off by one — the level at t or t − 1 is within r of 0 — and
    0 elsewhere: an off-by-one t adds or drops one term of size ≤ r times a probability."""
    rounding = 8.0 * _U * (c_a * trials + np.abs(y))
    t = np.floor(-y / c_a) + 1.0
    near = np.zeros(y.shape, dtype=bool)
    for shift in (-2.0, -1.0, 0.0, 1.0):
        near |= np.abs(c_a * (t + shift) + y) <= rounding
    return np.where(near, rounding, 0.0)


def _window_cell_sums(axes: list[np.ndarray], values: np.ndarray, masses: np.ndarray, n: int,
                      c_a: float, pi: float, closed_mass: float) -> tuple[float, float, int]:
    """(upper, lower, cells) of Σ over the product window ``axes`` of P[cell]·E[(c_A·Bin(M, π) + y)⁺]
    (:func:`windowed_direction`, before its summation factors), in chunks of at most
    ``_CHUNK_CELLS`` cells.

    The log terms of a cell's probability are sums of per-axis terms (lnΓ(N_j + 1), N_j·ln m_j)
    and of terms of M = n − Σ N_j alone (lnΓ(M + 1), M·ln(m_A + m_0)), tabulated once.
    """
    k = len(axes)
    rows = np.arange(axes[0].size)
    inner_cells = math.prod(axis.size for axis in axes[1:])
    step = max(1, _CHUNK_CELLS // max(inner_cells, 1))
    shape = [axis.size for axis in axes]
    floats = [axis.astype(float) for axis in axes]
    lowest = int(sum(int(axis[0]) for axis in axes))
    highest = int(sum(int(axis[-1]) for axis in axes))
    total = np.arange(lowest, highest + 1, dtype=float)
    remaining_all = n - total
    valid_all = remaining_all >= 0.0
    rest_all = np.where(valid_all, remaining_all, 0.0)
    log_gamma_rest = special.gammaln(rest_all + 1.0)
    log_mass_rest = rest_all * math.log(closed_mass)
    log_n = float(special.gammaln(n + 1.0))
    per_axis = [(-special.gammaln(f + 1.0), f * math.log(float(m)), f * float(v), f * abs(float(v)))
                for f, m, v in zip(floats, masses, values)]
    upper = lower = 0.0
    cells = 0
    for first in range(0, rows.size, step):
        pieces = []
        for j in range(k):
            view = [1] * k
            view[j] = shape[j]
            sl = slice(first, first + step) if j == 0 else slice(None)
            pieces.append([term.reshape(view)[sl] if j == 0 else term.reshape(view)
                           for term in (*per_axis[j], axes[j])])
        out_shape = (min(step, rows.size - first), *shape[1:])

        rows_shape = (*out_shape[:-1], 1)
        length = out_shape[-1]

        def row_sums(index: int, start: float | int) -> np.ndarray:
            """Per row (every axis but the last), ``start`` plus the per-axis terms of every axis
            but the last, added in axis order, as a column."""
            acc = start + pieces[0][index] if k > 1 else np.full(rows_shape, start)
            for piece in pieces[1:-1]:
                acc = acc + piece[index]
            return np.broadcast_to(acc, rows_shape).reshape(-1, 1)

        def last_terms(index: int) -> np.ndarray:
            return pieces[-1][index].reshape(1, length)

        # a cell's sums are its row's partial sum plus its last-axis term; along the last axis
        # they are affine in its count, so the largest "best" of a row (below) is at an end.
        # Rows whose ends are below 0 by far more than rounding have no live cell: skipped
        level_rows, scale_rows = row_sums(2, 0.0), row_sums(3, 0.0)
        count_rows = row_sums(4, 0)
        level_last, scale_last, count_last = last_terms(2), last_terms(3), last_terms(4)
        ends = [0, length - 1]
        end_level = level_rows + level_last[:, ends]
        end_scale = scale_rows + scale_last[:, ends]
        end_best = end_level + 2.0 * (k + 1) * _U * end_scale
        end_size = end_scale
        if c_a > 0.0:
            end_remaining = n - (count_rows + count_last[:, ends]).astype(float)
            end_best = end_best + c_a * end_remaining
            end_size = end_size + c_a * np.abs(end_remaining)
        slack = 1e-9 * end_size.max(axis=1)
        kept_rows = np.flatnonzero(end_best.max(axis=1) + slack > 0.0)
        if not kept_rows.size:
            continue
        # within a kept row the positive "best" is a run at one end (affine along the row): only
        # the run, widened by the same rounding margin plus two cells, is evaluated. The kept rows
        # go in groups of about ``_BLOCK_CELLS`` run cells (small temporaries); a group's runs
        # are gathered cell by cell, or its whole rows evaluated when the runs cover most of them.
        # Every cell is evaluated elementwise as in one pass over the chunk, and the groups'
        # terms, concatenated in row order, are summed once per chunk: the same sums
        start, stop = _row_runs(end_best[kept_rows], slack[kept_rows], length)
        sizes = stop - start
        cumulative = np.cumsum(sizes)
        cuts = np.flatnonzero(np.diff(cumulative // _BLOCK_CELLS)) + 1
        upper_parts: list[np.ndarray] = []
        lower_parts: list[np.ndarray] = []
        gamma_rows, mass_rows = row_sums(0, 0.0), row_sums(1, 0.0)
        gamma_last, mass_last = last_terms(0), last_terms(1)
        for group in np.split(np.arange(kept_rows.size), cuts):
            rows_in, run_start, run_size = kept_rows[group], start[group], sizes[group]
            if int(run_size.sum()) < _RUN_SHARE * rows_in.size * length:
                row_of = np.repeat(rows_in, run_size)
                column = np.arange(row_of.size, dtype=np.int64) - np.repeat(
                    np.cumsum(run_size) - run_size - run_start, run_size)
                level_kept = level_rows[row_of, 0] + level_last[0, column]
                scale_kept = scale_rows[row_of, 0] + scale_last[0, column]
                position_kept = count_rows[row_of, 0] + count_last[0, column] - lowest
            else:
                row_of = np.repeat(rows_in, length)
                column = np.tile(np.arange(length, dtype=np.int64), rows_in.size)
                level_kept = (level_rows[rows_in] + level_last).ravel()
                scale_kept = (scale_rows[rows_in] + scale_last).ravel()
                position_kept = (count_rows[rows_in] + count_last).ravel() - lowest
            best = level_kept + 2.0 * (k + 1) * _U * scale_kept  # closed-form users at 0
            if c_a > 0.0:
                best += c_a * remaining_all[position_kept]  # every closed-form user at c_A
            # cells beyond n users, and cells where no closed-form outcome makes the sum
            # positive; everything else is evaluated on the live cells only
            live = np.flatnonzero(valid_all[position_kept] & (best > 0.0))
            if live.size:
                terms = _live_cell_terms(
                    position_kept[live], level_kept[live], scale_kept[live],
                    gamma_rows[row_of[live], 0] + gamma_last[0, column[live]],
                    mass_rows[row_of[live], 0] + mass_last[0, column[live]],
                    remaining_all, log_gamma_rest, log_mass_rest, log_n, n, k, c_a, pi)
                upper_parts.append(terms[0])
                lower_parts.append(terms[1])
        if not upper_parts:
            continue
        upper_terms, lower_terms = np.concatenate(upper_parts), np.concatenate(lower_parts)
        cells += upper_terms.size
        upper += float(np.sum(upper_terms))
        lower += float(np.sum(lower_terms))
    return upper, lower, cells


def _live_cell_terms(position: np.ndarray, level: np.ndarray, scale: np.ndarray,
                     gamma_terms: np.ndarray, mass_terms: np.ndarray, remaining_all: np.ndarray,
                     log_gamma_rest: np.ndarray, log_mass_rest: np.ndarray, log_n: float, n: int,
                     k: int, c_a: float, pi: float) -> tuple[np.ndarray, np.ndarray]:
    """Upper and lower terms P[cell]·E[(c_A·Bin(M, π) + y)⁺] of live cells of
    :func:`_window_cell_sums` (``position`` indexes the tables of the remaining count M,
    ``gamma_terms`` and ``mass_terms`` are the cells' sums of per-axis lnΓ and N·ln m terms)."""
    remaining = remaining_all[position]
    if c_a > 0.0:
        level_up = level + 2.0 * (k + 1) * _U * scale
    else:
        # all M closed-form users at c_A < 0, plus c_A·(M − X'), X' ~ Bin(M, π) the users at 0
        level_up = level + c_a * remaining
        level_up += 2.0 * (k + 2) * _U * (scale - c_a * remaining)
    log_terms = [np.full(remaining.size, log_n), gamma_terms, -log_gamma_rest[position],
                 mass_terms, log_mass_rest[position]]
    log_pmf, margin = _log_pmf_with_margin(log_terms, n)
    # the sum is x·Bin(M, π) + y with slope x = |c_A| and offset y = level_up
    # y ≥ 0: every term is positive and the value is the mean x·M·π + y; y < 0: closed form
    slope = abs(c_a)
    mean_value = slope * remaining * pi + level_up
    g_lower, g_upper = mean_value * (1.0 - 4.0 * _U), mean_value * (1.0 + 4.0 * _U)
    negative = level_up < 0.0
    if np.any(negative):
        lo_neg, up_neg = inner_expectation(remaining[negative], level_up[negative], slope, 0.0,
                                           1.0, pi, slope)
        g_lower[negative], g_upper[negative] = lo_neg, up_neg
        g_upper[negative] += _threshold_slack(remaining[negative], level_up[negative], slope)
    return np.exp(log_pmf + margin) * g_upper, np.exp(log_pmf - margin) * g_lower


def _row_runs(end_best: np.ndarray, slack: np.ndarray, length: int
              ) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the columns [start, stop) of its candidate run: ``end_best`` holds a row's affine
    "best" at its two ends (columns 0 and ``length`` − 1), ``slack`` a margin on it; the run is
    every column where the affine interpolation exceeds −slack, widened by two cells (a superset
    of the cells whose computed best is positive: their rounding, and that of the interpolation,
    is far below the margin)."""
    rows = end_best.shape[0]
    if length == 1:
        return np.zeros(rows, dtype=np.int64), np.ones(rows, dtype=np.int64)
    slope = (end_best[:, 1] - end_best[:, 0]) / (length - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        crossing = (-slack - end_best[:, 0]) / slope  # the column where it reaches −slack
    finite = np.isfinite(crossing)
    low = np.floor(np.where((slope > 0.0) & finite, crossing, 0.0)) - 2.0
    high = np.ceil(np.where((slope < 0.0) & finite, crossing, length - 1.0)) + 3.0
    start = np.clip(low, 0.0, float(length)).astype(np.int64)
    stop = np.maximum(np.clip(high, 0.0, float(length)).astype(np.int64), start)
    return start, stop


def _windows(other_masses: np.ndarray, n: int, tail: float) -> list[tuple[int, int, float]]:
    """The count window [lo, hi] and the mass outside it of each atom summed over a window
    (:func:`windowed_direction`)."""
    return [_binomial_window(n - 1, float(rate), tail) for rate in other_masses]


def _window_cells(windows: list[tuple[int, int, float]]) -> int:
    """Cells of the product window (each axis [lo, hi + 1])."""
    return math.prod(hi + 2 - lo for lo, hi, _ in windows)


def _closed_form_atom(masses: np.ndarray) -> int:
    """The atom :func:`windowed_direction` sums in closed form: the largest count variance."""
    return int(np.argmax(masses * (1.0 - masses)))


def _first_window_fits(values: np.ndarray, masses: np.ndarray, n: int) -> bool:
    """Whether :func:`windowed_direction` sums a first window (else it returns None)."""
    others = np.delete(np.arange(values.size), _closed_form_atom(masses))
    return _window_cells(_windows(masses[others], n, _FIRST_WINDOW_TAIL)) <= WINDOW_CELL_LIMIT


def windowed_direction(values: np.ndarray, masses: np.ndarray, n: int, rtol: float
                       ) -> Bracket | None:
    """Bracket of (1/n)·E[(Σ_{i ≤ n} Z_i)⁺] summing the count vectors of a window, or None when
    the window needs more than ``WINDOW_CELL_LIMIT`` cells.

    The first window leaves out a tail 1e-12 per side and atom; while the dropped part exceeds a
    tenth of ``rtol`` times the value, the tail is scaled down by the factor that would bring it
    to half of that (at most ``_WINDOW_PASSES`` passes). When the next window would exceed the
    limit, the last pass is returned: its upper end includes its dropped part, so it is valid,
    only looser (the caller takes the minimum with the convex-order reduction).

    One atom A (value c_A ≠ 0, mass m_A; the one with the largest count variance, whose window
    would be the widest) is summed in closed form: given the counts N_j of the other non-zero
    atoms, the M = n − Σ N_j remaining users are A with probability m_A/(m_A + m_0) (m_0 the zero
    atom), else 0. For c_A > 0 the sum is c_A·Bin(M, π) + y with π = m_A/(m_A + m_0) and
    y = Σ v_j N_j; for c_A < 0 it is |c_A|·Bin(M, π) + (y + c_A·M) with π = m_0/(m_A + m_0)
    (Bin(M, π) counting the users at 0). E[(x·Bin(M, π) + y')⁺] is
    :func:`~dpacct_shuffle.core.numerics.inner_expectation` (certified against special-function
    error; y' taken 2(K + 2)u·(Σ|v_j|N_j + |c_A|·M) up, π 4u up: the value is non-decreasing in
    both), or x·M·π + y' where y' ≥ 0 (no positive part is cut). Each N_j is summed over
    [lo_j, hi_j + 1] where P[Bin(n − 1, m_j) ∉ [lo_j, hi_j]] ≤ tail (certified by scipy's cdf/sf
    with their error margin).

    Truncation: (ΣZ)⁺ ≤ Σ_i Z_i⁺ and exchangeability give
    (1/n)·E[(ΣZ)⁺; N ∉ W] ≤ E[Z_1⁺; N ∉ W] = Σ_{v_t > 0} v_t m_t·P[N ∉ W | Z_1 = t]. Given Z_1,
    the other n − 1 users are i.i.d. from the per-user law, so N_j is N'_j or N'_j + 1 with
    N'_j ~ Bin(n − 1, m_j), and N ∉ W forces some N'_j ∉ [lo_j, hi_j]: the dropped part is at most
    E[Z⁺]·Σ_j P[N'_j ∉ [lo_j, hi_j]]. Cells are weighted by their multinomial probability with the
    log margin of :func:`_log_pmf_with_margin`; the threshold of the closed form may be off by one
    where the level x·t + y' is within rounding of 0 (:func:`_threshold_slack`, added). The lower end drops the truncated part and every margin.
    """
    positive = np.flatnonzero(values > 0.0)
    a_index = _closed_form_atom(masses)  # the widest window is not summed
    c_a, m_a = float(values[a_index]), float(masses[a_index])
    others = np.delete(np.arange(values.size), a_index)
    other_values, other_masses = values[others], masses[others]
    zero_mass = max(0.0, 1.0 - math.fsum(masses.tolist()))
    # P[a closed-form user takes the atom's value] for c_A > 0, P[it takes 0] for c_A < 0
    pi = min(1.0, (m_a if c_a > 0.0 else zero_mass) / (m_a + zero_mass) * (1.0 + 4.0 * _U))
    positive_mean = math.fsum((masses[positive] * values[positive]).tolist()) * (1.0 + 4.0 * _U)
    k = other_values.size
    lower = upper = 0.0
    tail = _FIRST_WINDOW_TAIL
    for _ in range(_WINDOW_PASSES):
        windows = _windows(other_masses, n, tail)
        if _window_cells(windows) > WINDOW_CELL_LIMIT:
            # the previous pass (if any) is a valid, looser bracket: its upper end holds the
            # dropped part
            return Bracket(max(0.0, min(lower, upper)), upper) if upper > 0.0 else None
        outside = math.fsum(out for _, _, out in windows) * (1.0 + 4.0 * (k + 1) * _U)
        axes = [np.arange(lo, hi + 2, dtype=np.int64) for lo, hi, _ in windows]
        upper_cells, lower_cells, cells = _window_cell_sums(axes, other_values, other_masses, n,
                                                            c_a, pi, m_a + zero_mass)
        upper_cells *= 1.0 + (cells + 8.0) * _U
        lower = lower_cells * (1.0 - (cells + 8.0) * _U) / n
        dropped = positive_mean * outside
        upper = min(1.0, (upper_cells / n) * (1.0 + 2.0 * _U) + dropped * (1.0 + 2.0 * _U))
        if dropped <= 0.1 * rtol * upper or tail <= 1e-300:
            break
        # the dropped part scales like the tail: aim at half the allowed part (relative to the
        # lower end, which the truncation does not inflate)
        scale = 0.05 * rtol * lower / dropped if lower > 0.0 else 1e-6
        tail = max(1e-300, tail * min(0.1, max(scale, 1e-12)))
    return Bracket(max(0.0, min(lower, upper)), upper)


def convex_order_problems(values: np.ndarray, masses: np.ndarray, n: int, splits: int
                          ) -> list[DirectionalProblem]:
    """Three-type problems dominating the per-user law in increasing convex order (module doc).

    One problem per split of the negative values (B group: the most negative ones), at most
    ``splits`` of them, smallest added second moment first. Needs a positive and a negative value.
    """
    pos, neg = values > 0.0, values < 0.0
    c_a = float(values[pos].max())
    first_moment = math.fsum((masses[pos] * values[pos]).tolist()) * (1.0 + 4.0 * _U)
    pos_mass = math.fsum(masses[pos].tolist())
    r_a = min(first_moment / c_a * (1.0 + 4.0 * _U), pos_mass * (1.0 + 4.0 * _U))
    nv, nm = values[neg], masses[neg]  # ascending: most negative first
    weight = nm * np.abs(nv)
    options = []
    # every split gives a dominating problem; the added second moment only ranks them (one that
    # leaves the float range, ∞ or ∞ − ∞, ranks last)
    with np.errstate(over="ignore", invalid="ignore"):
        prefix = np.concatenate([[0.0], np.cumsum(weight)])
        prefix2 = np.concatenate([[0.0], np.cumsum(weight * np.abs(nv))])
        for split in range(1, nv.size + 1):
            added = abs(nv[0]) * prefix[split] - prefix2[split]
            if split < nv.size:
                added += (abs(nv[split]) * (prefix[-1] - prefix[split])
                          - (prefix2[-1] - prefix2[split]))
            options.append((math.inf if math.isnan(added) else float(added), split))
    problems = []
    for _, split in sorted(options)[:splits]:
        down = 1.0 - 4.0 * (nv.size + 2) * _U
        c_b = float(nv[0])
        r_b = math.fsum(weight[:split].tolist()) / abs(c_b) * down
        if split < nv.size:
            c_k = float(nv[split])
            s = math.fsum(weight[split:].tolist()) / abs(c_k) * down
        else:
            c_k, s = 0.0, 0.0
        # keep the per-user law a probability (lowering negative masses only raises the bound)
        excess = r_a + r_b + s - 1.0
        if excess > 0.0:
            cut = min(s, excess)
            s -= cut
            r_b = max(0.0, r_b - (excess - cut))
        problems.append(DirectionalProblem(n, r_a, r_b, s, c_a, c_b, c_k))
    return problems


__all__ = ["PrivacyLossLevels", "EXACT_CELL_LIMIT", "convex_order_problems", "direction_atoms",
           "exact_direction", "windowed_direction", "WINDOW_CELL_LIMIT"]
