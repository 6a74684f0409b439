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
  The two splits adding the least second moment are evaluated at the coarsest resolution and the
  smaller one is refined (each is a certified bound; the choice only steers tightness).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
from scipy import special

from dpacct_shuffle.core.bound import (
    MAX_EVALUATED_USERS,
    _gaussian_epsilon,
    refined_bracket,
)
from dpacct_shuffle.core.search import epsilon_search
from dpacct_shuffle.core.numerics import Bracket, DirectionalProblem, directional_bracket
from dpacct_shuffle.core.validation import check_delta, check_epsilon, check_num_users, check_range

_ULP = 2.0**-52
_U = 2.0**-53
EXACT_CELL_LIMIT = 200_000
# convex-order splits of the negative values evaluated per direction (the best by added variance)
_SPLITS = 2
_MERGE_RTOL = 1e-9
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

    def __init__(self, ratios0: Sequence[float], ratios1: Sequence[float],
                 masses: Sequence[float]) -> None:
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

    def epsilon(self, delta: float, n: int, rtol: float = 1e-4) -> float:
        """Smallest ε (relative ``rtol``) where the certified :meth:`delta` is ≤ ``delta``
        (the core's secant search, :func:`dpacct_shuffle.core.search.epsilon_search`)."""
        target = check_delta(delta)
        users = min(check_num_users(n), MAX_EVALUATED_USERS)
        tolerance = check_range("rtol", rtol, 0.0, 1.0, low_open=True)
        return epsilon_search(lambda eps: _levels_bracket(self, eps, users, _SEARCH_RTOL).upper,
                              target, self.total_variation, self.epsilon0,
                              self._initial_guess(target, users), tolerance)

    def _initial_guess(self, delta: float, n: int) -> float:
        """Starting point only: μ-Gaussian DP with μ² = Σ_t m_t (a_t − b_t)²/n (the ε = 0 law)."""
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
    return Bracket(min(lower, upper), upper)


def direction_atoms(a: np.ndarray, b: np.ndarray, masses: np.ndarray, eps: float
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Per-user atoms (values ≥ a_t − e^ε b_t, masses) of one direction, merged and sorted.

    Values carry 8u·(a_t + e^ε b_t) of rounding margin, masses a relative 16u (up on positive
    values, down on negative ones); values within a relative ``_MERGE_RTOL`` are merged at the
    largest one (masses summed).
    """
    e = math.exp(eps)
    values = a - e * b + 8.0 * _U * (a + e * b)
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
    problems = convex_order_problems(values, masses, n, _SPLITS)
    if len(problems) > 1:  # refine only the split that is smallest at the coarsest resolution
        coarse = [directional_bracket(problem, 4, 1e-18).upper for problem in problems]
        problems = [problems[int(np.argmin(coarse))]]
    return refined_bracket(problems, total_variation, rtol)


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


def exact_direction(values: np.ndarray, masses: np.ndarray, n: int) -> float:
    """Certified upper value of (1/n)·E[(Σ_{i ≤ n} Z_i)⁺] by summing every multinomial cell."""
    k = values.size
    counts, rest_count = _compositions(n, k)
    rest = max(0.0, 1.0 - math.fsum(masses.tolist()))
    level = counts @ values
    scale = counts @ np.abs(values)
    level_up = level + 2.0 * (k + 1) * _U * scale
    keep = level_up > 0.0
    if rest == 0.0:
        keep &= rest_count == 0
    if not np.any(keep):
        return 0.0
    c, r, lv = counts[keep], rest_count[keep], level_up[keep]
    log_terms = [np.full(c.shape[0], special.gammaln(n + 1.0)), -special.gammaln(c + 1.0).sum(axis=1),
                 -special.gammaln(r + 1.0), c @ np.log(masses)]
    if rest > 0.0:
        log_terms.append(r * math.log(rest))
    log_pmf = np.sum(log_terms, axis=0)
    margin = 64.0 * _U * (np.sum(np.abs(log_terms), axis=0) + 1.0)
    total = float(np.sum(np.exp(log_pmf + margin) * lv))
    return min(1.0, total * (1.0 + (c.shape[0] + 8.0) * _U) / n)


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
    prefix = np.concatenate([[0.0], np.cumsum(weight)])
    prefix2 = np.concatenate([[0.0], np.cumsum(weight * np.abs(nv))])
    options = []
    for split in range(1, nv.size + 1):
        added = abs(nv[0]) * prefix[split] - prefix2[split]
        if split < nv.size:
            added += abs(nv[split]) * (prefix[-1] - prefix[split]) - (prefix2[-1] - prefix2[split])
        options.append((added, split))
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
           "exact_direction"]
