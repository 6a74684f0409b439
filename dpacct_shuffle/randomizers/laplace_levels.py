"""The Laplace mechanism at the optimal decomposition: its extreme pair dominates every pair.

Setting. Laplace noise of unit scale on inputs x ∈ [0, D] (the catalog's ``laplace(ε0)`` on [0, 1]
with scale 1/ε0 is D = ε0): densities f_x(y) = ½e^{−|y − x|}, blanket
m(y) = inf_x f_x(y) = ½e^{−D/2 − |y − D/2|} of mass γ = e^{−D/2}, ω = m/γ. The bound of
:mod:`dpacct_shuffle.core.multilevel` holds with the Radon–Nikodym derivatives A_x = f_x/m
(a victim pair (x, x') enters it only through the law under m of g = A_x − e^ε·A_{x'}).

Theorem (dominating pair). Let A⁰ = A_0 and A¹ = A_D. For every pair (x, x') and every ε ≥ 0 the
blanket expression of (x, x') is at most that of (0, D). Proof (docs/theory.md, "Dominating pair
of a continuous randomizer"):

1. Marginals. Under ω every A_x has mean 1/γ, and A_x ≤_cx A⁰ (convex order). For x ≤ D/2,
   A_x(y) = e^{D−x} for y ≤ x, e^{D+x−2y} on [x, D/2], e^x above, so
   {A_x > v} = {y < (D + x − ln v)/2} ⊇ {A⁰ > v} = {y < (D − ln v)/2} for v ∈ [e^x, e^{D−x}),
   {A_x > v} is everything for v < e^x and empty for v ≥ e^{D−x}: F_{A_x} ≤ F_{A⁰} below
   c = e^{D−x} and F_{A_x} = 1 from c on. Then E(A_x − d)⁺ = 0 for d ≥ c and, for d < c,
   E(A_x − d)⁺ = E A_x − d + ∫_{−∞}^d F_{A_x} ≤ E A⁰ − d + ∫_{−∞}^d F_{A⁰} = E(A⁰ − d)⁺.
   For x ≥ D/2 the mirror y ↦ D − y (which keeps m) maps A_x to A_{D−x}; and A¹ has the law of A⁰.
2. Splitting. For any coupling and d₁ + d₂ = d, (X + Y − d)⁺ ≤ (X − d₁)⁺ + (Y − d₂)⁺. With
   λ = e^ε, X = A_x, Y = −λA_{x'}: E_ω(g − d)⁺ ≤ E(A_x − d₁)⁺ + E(−λA_{x'} − d₂)⁺
   ≤ E(A⁰ − d₁)⁺ + E(−λA¹ − d₂)⁺ by step 1 (convex order survives multiplication by −λ).
3. Equality for the extreme pair. A⁰ and −λA¹ are both non-increasing in y (A⁰ = e^{D−2y} on
   [0, D/2], 1 above, e^D below 0; A¹ its mirror). Their sum h(y) is non-increasing; take
   y* = sup{y: h(y) > d} and d₁ ∈ [A⁰(y*+), A⁰(y*−)] with d − d₁ ∈ [−λA¹(y*+), −λA¹(y*−)]: below
   y* both terms are ≥ their d_i, above both are ≤, so (h − d)⁺ = (A⁰ − d₁)⁺ + (−λA¹ − d₂)⁺
   everywhere but at y* (a null set). Hence E_ω(g − d)⁺ ≤ E_ω(g⁰ − d)⁺ for every d: g ≤_icx g⁰.
4. The per-user value Z is g (on the blanket mass) or 0 (mass 1 − γ) for both pairs, so
   Z ≤_icx Z⁰; the order is closed under independent sums and E[(ΣZ)⁺] is an increasing convex
   function of each Z_i (Shaked and Shanthikumar, "Stochastic Orders", Springer 2007, 4.A).
   The reverse direction (x', x) is the same statement for the pair (x', x).

Discretisation. The pair (0, D) has (A⁰, A¹) on the two segments (s, 1) and (1, s), s ∈ [1, e^D]
(by symmetry one direction is enough): with r = √s the blanket mass of r ∈ [r₁, r₂] on each
segment is C(r₂ − r₁)/(r₁r₂), C = ½e^{−D/2}, its first moment in s is C(r₂ − r₁), plus an atom
½e^{−D} at s = e^D (outputs beyond the inputs). Each cell between knots r₁ < r₂ (``KNOTS`` cells,
equally spaced in y) is split onto its two ends with its mean kept, a convex-order increase of
the two-dimensional law of (A⁰, A¹) valid for every ε at once:
mass C(r₂ − r₁)/(r₁(r₁ + r₂)) at s = r₁² and C(r₂ − r₁)/(r₂(r₁ + r₂)) at s = r₂².
For each ε the atoms g = s − λ̂ and 1 − λ̂s (λ̂ = e^ε rounded down: a smaller λ raises every g)
are hat-split onto a lattice and evaluated by
:func:`dpacct_shuffle.core.lattice_sum.positive_part_mean`.

Numerics on the safe side: C, ½e^{−D} and 1 − γ rounded up, e^{D/2} enclosed in [lo, hi] (the top
cell's masses with hi in the numerator and lo in the denominator, its values with hi² for s − λ̂
and lo² for 1 − λ̂s), values 4u·(|terms|) up, every mass a relative 32u up (products and
quotients of a few floats; the knots are floats, so the cells are exact), and the lattice step
a power of two (:func:`~dpacct_shuffle.core.lattice_sum.lattice_measure`). The bound is
non-increasing in n (:mod:`dpacct_shuffle.core.multilevel`): above ``MAX_LATTICE_USERS`` it is
evaluated at that many users.

Every-ε curve (:meth:`LaplaceBlanketBound.curve_deltas`, docs/theory.md, "Every-ε curve of the
Laplace bound"). The shuffled δ is a maximum of hockey-stick divergences
D_x(P‖Q) = sup_S P(S) − x·Q(S), convex and non-increasing in x = e^ε (the argument of "Grid and
chords" in docs/theory.md). The point bound is evaluated at knots 0 = ε_0 < … < ε_K = D (δ(D) = 0:
the shuffled output is D-DP); each knot's value is replaced by the smallest value at a knot at or
before it (non-increasing), and between knots δ is read on the chord, in x, of those upper values
(x of the knots rounded up, the queried x down, the chord raised by a relative ``_CHORD_MARGIN``);
the knots' lattice sums coarsen their partial laws to ``CURVE_PARTIAL_CELLS`` entries.
The knots are found by bisection in ε until the value drops by at most ``CURVE_DROP`` across a
cell or falls below ``CURVE_FLOOR`` (the last cell, towards δ(D) = 0, down to a width D/64), and
no further once it stops decreasing; soundness never depends on these choices.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from dpacct_shuffle.core.lattice_sum import lattice_measure, positive_part_mean
from dpacct_shuffle.core.rounding import ULP, ratio_down, ratio_up, round_loss_up
from dpacct_shuffle.core.search import epsilon_search
from dpacct_shuffle.core.validation import (MIN_EPSILON0, check_delta, check_epsilon,
                                            check_num_users, check_range)
from dpacct_shuffle.randomizers.base import PairBound

_U = 2.0**-53
# cells of the discretised extreme pair (equally spaced in the output y over [0, D/2])
KNOTS = 1024
# lattice step: the largest power of two ≤ max(min(1, (range of g)/LATTICE_CELLS),
# (range of g)/MAX_LATTICE_CELLS)
LATTICE_CELLS = 32
MAX_LATTICE_CELLS = 4096
# the bound is evaluated at min(n, MAX_LATTICE_USERS) users (valid: non-increasing in n)
MAX_LATTICE_USERS = 10_000
# largest distance D evaluated (e^D ≈ 5·10²¹; beyond, the shuffle gains nothing at any practical n,
# and λ·e^D would overflow near the top of the ε range)
MAX_DISTANCE = 50.0
_SEARCH_RTOL = 2e-4
# an ε search is skipped when the bound cannot lower the entry's ε by this fraction
SKIP_RTOL = 1e-3
# the every-ε curve: initial knots, largest drop of δ across a cell, δ below which cells are not
# split, smallest relative cell width, relative margin on the chord (float error of the reading)
CURVE_START_KNOTS = 8
CURVE_DROP = 2.0
CURVE_FLOOR = 1e-18
_MIN_CELL = 1e-6
_CHORD_MARGIN = 1e-9
# the curve's knots are evaluated with partial laws coarsened to this many lattice entries
CURVE_PARTIAL_CELLS = 3072


@functools.lru_cache(maxsize=64)
def _knot_masses(distance: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Knots s_j (values for s − λ, with hi² on top), (values for 1 − λs, lo² on top) and the
    blanket mass upper bounds at each knot on one segment (module docstring)."""
    half = distance / 2.0
    top = math.exp(half)
    lo, hi = top * (1.0 - 4.0 * ULP), top * (1.0 + 4.0 * ULP)
    r = np.exp(half * np.arange(KNOTS) / KNOTS)
    r[0] = 1.0
    r = r[r < lo]
    r_low = r
    r_high_up = np.append(r[1:], hi)  # numerators: the top cell's upper end enclosed by hi
    r_high_dn = np.append(r[1:], lo)  # denominators: by lo
    scale = ratio_up(0.5 * math.exp(-half), 8)
    width = r_high_up - r_low
    total = r_low + r_high_dn
    to_low = scale * width / (r_low * total)
    to_high = scale * width / (r_high_dn * total)
    masses = np.zeros(r.size + 1)
    masses[:-1] += to_low
    masses[1:] += to_high
    masses[-1] += ratio_up(0.5 * math.exp(-distance), 8)
    masses *= 1.0 + 32.0 * _U
    squares = r * r
    s_up = np.append(squares, hi * hi)
    s_dn = np.append(squares, lo * lo)
    return s_up, s_dn, masses


def reference_atoms(distance: float, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-user atoms (values ≥ g, masses ≥ the exact ones) of the discretised pair (0, D) at ε,
    including the atom 0 of mass 1 − γ (module docstring)."""
    s_up, s_dn, masses = _knot_masses(distance)
    lam = ratio_down(math.exp(epsilon), 8)
    first = s_up - lam + 4.0 * _U * (s_up + lam)
    second = 1.0 - lam * s_dn + 4.0 * _U * (1.0 + lam * s_dn)
    rest = ratio_up(-math.expm1(-distance / 2.0), 8)
    values = np.concatenate([first, second, [0.0]])
    return values, np.concatenate([masses, masses, [rest]])


def _spacing(distance: float, epsilon: float) -> float:
    span = (1.0 + math.exp(epsilon)) * math.expm1(distance)
    step = max(min(1.0, span / LATTICE_CELLS), span / MAX_LATTICE_CELLS)
    return 2.0 ** math.floor(math.log2(step))


@functools.lru_cache(maxsize=4096)
def _laplace_delta(distance: float, epsilon: float, n: int, max_length: int | None = None) -> float:
    """The point bound; with ``max_length`` the lattice sum's partial laws are coarsened to that
    many entries (:func:`~dpacct_shuffle.core.lattice_sum.positive_part_mean`, a convex-order
    increase: still an upper bound)."""
    if epsilon >= distance:
        return 0.0
    values, masses = reference_atoms(distance, epsilon)
    spacing = _spacing(distance, epsilon)
    measure, offset = lattice_measure(values, masses, spacing)
    bound = positive_part_mean(measure, offset, spacing, n, max_length=max_length)
    total_variation = ratio_up(-math.expm1(-distance / 2.0), 8)
    return min(bound, total_variation, 1.0)


@functools.lru_cache(maxsize=64)
def _curve_knots(distance: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Knots x_k = e^{ε_k} (rounded up) and non-increasing upper values of δ at them, the last
    knot at ε = D with δ = 0 (module docstring, "Every-ε curve")."""
    values: dict[float, float] = {}

    def at(eps: float) -> float:
        if eps not in values:
            values[eps] = _laplace_delta(distance, eps, n, CURVE_PARTIAL_CELLS)
        return values[eps]

    # cells left to right (a stack whose top is the leftmost cell); ``best`` is the running
    # minimum of the values at the knots left of the current cell
    cells = [(distance * j / CURVE_START_KNOTS, distance * (j + 1) / CURVE_START_KNOTS)
             for j in reversed(range(CURVE_START_KNOTS))]
    best = math.inf
    while cells:
        low, high = cells.pop()
        left, right = min(at(low), best), at(high)
        if right > 0.0 and right >= left:
            break  # the point bound no longer decreases (its float floor): no further knots
        narrowest = distance / 64.0 if right == 0.0 else _MIN_CELL * max(high, 1e-3)
        if left > CURVE_FLOOR and left > CURVE_DROP * right and high - low > narrowest:
            middle = 0.5 * (low + high)
            cells += [(middle, high), (low, middle)]
        else:
            best = left
    values[distance] = 0.0  # the shuffled output is D-DP
    epsilons = np.array(sorted(values))
    deltas = np.minimum.accumulate(np.array([values[float(e)] for e in epsilons]))
    knots = np.exp(epsilons) * (1.0 + 4.0 * _U)
    knots[0] = 1.0
    return knots, deltas


class LaplaceBlanketBound(PairBound):
    """The blanket expression of the Laplace pair (0, D) on inputs [0, D] (unit scale), valid for
    every pair (module docstring); a fallback of ``laplace`` and of ``metric_laplace`` with
    d_max = d01, for D ≤ ``MAX_DISTANCE``."""

    def __init__(self, distance: float) -> None:
        self.distance = check_range("distance", distance, MIN_EPSILON0, MAX_DISTANCE)

    @property
    def total_variation(self) -> float:
        """1 − e^{−D/2} (rounded up): the largest TV of two reports, δ(0) of every pair."""
        return ratio_up(-math.expm1(-self.distance / 2.0), 8)

    def delta(self, epsilon: float, n: int) -> float:
        """Certified δ(ε) with n users; above ``MAX_LATTICE_USERS`` users the total variation
        (valid, and never the entry's minimum there)."""
        eps, users = check_epsilon(epsilon), check_num_users(n)
        if users > MAX_LATTICE_USERS:
            return min(1.0, self.total_variation)
        return _laplace_delta(self.distance, eps, users)

    def curve_deltas(self, epsilons: np.ndarray, n: int, lowering: float) -> np.ndarray:
        """Upper bounds on δ at every ε of ``epsilons`` from one every-ε curve for n users (chords
        of the point bound at knots, module docstring "Every-ε curve"; ``lowering`` unused);
        above ``MAX_LATTICE_USERS`` users the total variation, as :meth:`delta`."""
        users = check_num_users(n)
        eps = np.asarray(epsilons, dtype=np.float64)
        if users > MAX_LATTICE_USERS:
            return np.full(eps.shape, min(1.0, self.total_variation))
        knots, deltas = _curve_knots(self.distance, users)
        query = np.exp(np.maximum(eps, 0.0)) * (1.0 - 4.0 * _U)
        chord = np.interp(query, knots, deltas, left=float(deltas[0]), right=0.0)
        out: np.ndarray = np.minimum(chord * (1.0 + _CHORD_MARGIN), 1.0)
        out[eps < 0.0] = 1.0
        out[eps >= self.distance] = 0.0
        return out

    def epsilon(self, delta: float, n: int, guess: float | None = None) -> float:
        """Smallest ε (relative 2·10⁻⁴, secant search of the core) with a certified δ(ε) ≤
        ``delta``, evaluated at min(n, ``MAX_LATTICE_USERS``) users; ``guess`` only starts it."""
        target = check_delta(delta)
        users = min(check_num_users(n), MAX_LATTICE_USERS)
        start = self._initial_guess(target, users) if guess is None else guess
        found = epsilon_search(lambda eps: _laplace_delta(self.distance, eps, users), target,
                               self.total_variation, self.distance, start, _SEARCH_RTOL)
        return round_loss_up(found) if found > 0.0 else 0.0

    def epsilon_below(self, delta: float, n: int, current: float) -> float:
        """:meth:`epsilon`, skipped (``current`` returned) above ``MAX_LATTICE_USERS`` users or
        when the bound at (1 − ``SKIP_RTOL``)·current already exceeds ``delta``; the search
        starts at 0.9·current."""
        if n > MAX_LATTICE_USERS:
            return current
        if 0.0 < current < math.inf:
            if self.delta((1.0 - SKIP_RTOL) * current, n) > delta:
                return current
            return self.epsilon(delta, n, guess=0.9 * current)
        return self.epsilon(delta, n)

    def _initial_guess(self, delta: float, n: int) -> float:
        """Starting point only: the scale of the sum of the others' ε0-LDP reports,
        e^{ε0/2}·√(ln(1/δ)/n), capped at ε0/2."""
        guess = math.exp(self.distance / 2.0) * math.sqrt(math.log(1.0 / delta) / n)
        return max(min(guess, 0.5 * self.distance), 1e-9)

    def __repr__(self) -> str:
        return f"LaplaceBlanketBound(distance={self.distance!r})"


__all__ = ["LaplaceBlanketBound", "reference_atoms", "KNOTS", "LATTICE_CELLS", "MAX_DISTANCE",
           "MAX_LATTICE_CELLS", "MAX_LATTICE_USERS"]
