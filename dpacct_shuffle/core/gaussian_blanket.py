"""Certified privacy-blanket bound of shuffled Gaussian reports: the extreme pair's one-dimensional
sum (docs/theory.md, "Gaussian local noise").

Setting (σ = 1 after scaling). Reports y = x + N(0, 1) with x ∈ [−μ/2, μ/2], μ = Δ/σ. The blanket
m(y) = min_x φ(y − x) = φ(|y| + μ/2) has mass γ = 2Φ(−μ/2). The theorem of docs/theory.md
("Dominating pair of a continuous randomizer", with "Gaussian local noise" for the hypotheses)
bounds the shuffled δ(ε) of n users, every pair of inputs and both directions, by

    (1/n)·E[(Z_1 + … + Z_n)⁺],   Z_i i.i.d.:  Z = 0 with mass 1 − γ, and, with g = |y| + μ/2 and
    s = e^{μg − μ²/2} (the likelihood ratio of the nearer to the farther endpoint),
    Z = s − λ on the measure φ(g)dg (g ≥ μ/2, outputs on the side of −μ/2),
    Z = 1 − λs on the same measure (outputs on the other side), λ = e^ε.

Discretisation (valid at every ε at once). [μ/2, G] with G = μ + ``TAIL_Z`` (from μ =
``SHORT_TAIL_MU`` on also G = μ + ``SHORT_TAIL_Z``, the smaller bound reported) is cut into ``CELLS``
cells of equal width in g; on a cell [g₁, g₂] the measure has mass m = Φ̄(g₁) − Φ̄(g₂) and first
moment of s, M = Φ̄(g₁ − μ) − Φ̄(g₂ − μ) (since e^{μg − μ²/2}φ(g) = φ(g − μ)). It is replaced by
the two atoms s₁ = s(g₁) with mass (m·s₂ − M)/(s₂ − s₁) and s₂ with mass (M − m·s₁)/(s₂ − s₁):
the same mass and mean, at the ends of an interval holding the cell — a convex-order increase
(Jensen), and Z is affine in s on each side, so it is a convex-order increase of Z. Beyond G:
on the side where Z = 1 − λs ≤ 1 − λs(G) the tail mass Φ̄(G) is put at s(G) (a larger value); on
the side where Z = s − λ, write Z = min(Z, s(G) − λ) + (s − s(G))⁺: with (a + b)⁺ ≤ a⁺ + b for
b ≥ 0 the excess adds at most E[(s − s(G))⁺] ≤ Φ̄(G − μ) to the bound (charged once, not per
user), and the capped part is the atom s(G) with mass Φ̄(G). Every atom's mass is taken as an
upper bound (the measure may exceed a probability: the expression is non-decreasing in every
mass), every value as an upper bound (s rounded up where Z = s − λ and down where Z = 1 − λs,
λ rounded down). At each ε the atoms are hat-split onto a lattice h·ℤ (h a power of two, about
sd(Z)/``STEP_DIVISOR``, at most ``MEASURE_CELLS`` cells) and evaluated by
:func:`~dpacct_shuffle.core.lattice_sum.positive_part_mean` with partial laws coarsened to
``PARTIAL_CELLS`` entries (its module docstring: each step a convex-order increase).

Every-ε curve (docs/theory.md, "Every-ε curve of the Gaussian blanket bound"). A round PLD reads
:func:`blanket_deltas`: chords in λ through knots of :func:`clamped_delta` — the far cut alone,
each user's atoms clamped to [L, T] with the excess above T charged once, and the partial sums
clamped from above the same way (``top_clamp`` of the lattice sum), so the lattice spans the
bulk of the sum instead of the log-normal tail of s.

Numerics. Φ̄ is scipy's ``ndtr(−x)``, allowed a relative error ``NDTR_ERROR``·(1 + x²) (measured
within 4.1·2⁻⁵³·(1 + x²) against 40-digit values on [−12, 37]: the x² term is the rounding of
the argument x/√2 of erfc); every difference of Φ̄ values and every quotient carries the absolute
error of its terms, and each split mass is its computed value plus that error bound.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.typing import NDArray
from scipy import special

from dpacct_shuffle.core.lattice_sum import clamp_bounds, lattice_measure, positive_part_mean
from dpacct_shuffle.core.rounding import ratio_down, ratio_up, round_loss_up
from dpacct_shuffle.core.validation import check_epsilon, check_num_users, check_range

_U = 2.0**-53
#: Relative error allowed for scipy's ``ndtr`` at x, times (1 + x²) (module docstring).
NDTR_ERROR = 32.0 * _U
#: Cells of equal width in g on [μ/2, μ + TAIL_Z].
CELLS = 512
#: Φ̄(TAIL_Z) ≈ 5·10⁻¹⁷: the tail charge Φ̄(G − μ) of the capped side.
TAIL_Z = 8.3
#: From μ = SHORT_TAIL_MU on, also a cut at G = μ + SHORT_TAIL_Z (charge Φ̄(6) ≈ 10⁻⁹, a range of s
#: e^{μ(2.3)} times smaller, so a finer lattice); the smaller of the two bounds is reported.
SHORT_TAIL_Z = 6.0
SHORT_TAIL_MU = 0.75
#: Lattice step ≈ sd(Z)/STEP_DIVISOR (a power of two), unless the range needs a coarser one.
STEP_DIVISOR = 64.0
#: Largest number of lattice cells of the per-user law.
MEASURE_CELLS = 16384
#: Partial laws of the n-fold sum are coarsened to at most this many entries.
PARTIAL_CELLS = 4096
#: :func:`blanket_deltas` evaluates up to this many distinct ε by :func:`blanket_delta`, more on
#: the every-ε curve (:func:`curve_knots`).
CURVE_KNOTS = 8
#: The curve's knots: CURVE_START_KNOTS cells on [0, ε_max], each bisected while δ drops by more
#: than CURVE_DROP across it (or, while δ is above CURVE_HEAD_DELTA, near ε = 0 where δ bends
#: most, by more than CURVE_HEAD_DROP), down to CURVE_FLOOR or a relative width CURVE_MIN_CELL.
CURVE_START_KNOTS = 8
CURVE_DROP = 2.0
CURVE_HEAD_DELTA = 3e-3
CURVE_HEAD_DROP = 1.25
CURVE_FLOOR = 1e-18
CURVE_MIN_CELL = 1e-6
#: ε_max: the first of 0.25·2^j with δ ≤ CURVE_FLOOR or less than CURVE_DROP times δ at 2ε_max,
#: at most this.
CURVE_MAX_EPSILON = 64.0
#: The knots' lattice sums coarsen their partial laws to this many entries.
CURVE_PARTIAL_CELLS = 2048
#: Above this many users (or fewer, where the per-user mass excess η needs it: η·n ≤ 0.01) the
#: bound is evaluated at this many (valid: it is non-increasing in n).
MAX_USERS = 10**7
#: Largest μ = Δ/σ evaluated (γ = 2Φ(−4) ≈ 6·10⁻⁵ there; the arguments of Φ̄ stay below 17).
MAX_MU = 8.0


def check_blanket_mu(value: object, name: str = "mu") -> float:
    """μ = Δ/σ in (0, MAX_MU]."""
    return check_range(name, value, 0.0, MAX_MU, low_open=True)


def _tail(x: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(Φ̄(x), an upper bound on its absolute error)."""
    value = special.ndtr(-x)
    return value, value * NDTR_ERROR * (1.0 + x * x)


class BlanketAtoms:
    """The discretised per-user law of the extreme pair (module docstring), independent of ε.

    Attributes: ``s_up``/``s_down`` — the knots s(g_j) rounded up/down; ``mass`` — upper bounds on
    the mass of each knot on either side (the same on both); ``zero_mass`` — an upper bound on
    1 − γ; ``tail_charge`` — an upper bound on E[(s − s(G))⁺] on the capped side.
    """

    def __init__(self, mu: float, tail_z: float = TAIL_Z) -> None:
        self.mu = check_blanket_mu(mu)
        knots = np.linspace(mu / 2.0, mu + tail_z, CELLS + 1)
        exponent = mu * knots - 0.5 * mu * mu
        s = np.exp(exponent)
        # exp within 1 ulp, the exponent within 4u·(μg + μ²/2) absolutely
        s_error = s * (2.0 * _U + 8.0 * _U * (mu * knots + 0.5 * mu * mu))
        self.s_up = s + s_error
        self.s_down = s - s_error
        tail, tail_err = _tail(knots)
        shifted, shifted_err = _tail(knots - mu)
        m = tail[:-1] - tail[1:]
        m_err = tail_err[:-1] + tail_err[1:] + _U * m
        first = shifted[:-1] - shifted[1:]
        first_err = shifted_err[:-1] + shifted_err[1:] + _U * first
        s1, s2 = s[:-1], s[1:]
        width = (s2 - s1) - (s_error[:-1] + s_error[1:]) - 2.0 * _U * s2  # a lower bound
        if np.any(width <= 0.0) or np.any(m < 0.0):
            raise ValueError(f"mu={mu!r} is too small for the blanket cells")  # pragma: no cover
        upper_num = first - m * s1
        lower_num = m * s2 - first
        # each numerator: the terms' errors, the product's and difference's roundings, s's error
        upper_err = first_err + s1 * m_err + 4.0 * _U * (first + m * s1) + m * s_error[:-1]
        lower_err = first_err + s2 * m_err + 4.0 * _U * (first + m * s2) + m * s_error[1:]
        to_high = np.maximum(upper_num + upper_err, 0.0) / width
        to_low = np.maximum(lower_num + lower_err, 0.0) / width
        mass = np.zeros(CELLS + 1)
        mass[:-1] += to_low
        mass[1:] += to_high
        mass[-1] += tail[-1] + tail_err[-1]
        self.mass = mass * (1.0 + 8.0 * _U)
        charge = float(shifted[-1] + shifted_err[-1])
        self.tail_charge = ratio_up(charge, 8)
        # 1 − γ = erf(μ/(2√2)): a relative 1e-13 covers scipy's erf and the argument's rounding
        self.zero_mass = min(1.0, float(special.erf(mu / (2.0 * math.sqrt(2.0)))) * (1.0 + 1e-13))
        excess = 2.0 * float(np.sum(self.mass)) + self.zero_mass - 1.0
        #: users at which the bound is evaluated at most: the mass excess η (a few ulps per
        #: cell, divided by the cell's width in s, so large for tiny μ) raised to that power
        #: stays below 1.01; more users are bounded by these (non-increasing in n)
        self.max_users = max(1, min(MAX_USERS, int(0.01 / max(excess, 1e-300))))

    def atoms(self, epsilon: float, sampling: float = 1.0
              ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Values (upper bounds) and masses (upper bounds) of Z at ε, the atom 0 included; with
        ``sampling`` q < 1 the law of the void randomizer q·R + (1 − q)·⊥ (module docstring):
        the masses times q and an atom 1 − λ of mass 1 − q."""
        lam = ratio_down(math.exp(epsilon), 8)
        near = self.s_up - lam
        near = near + 4.0 * _U * (self.s_up + lam)
        far = 1.0 - lam * self.s_down
        far = far + 4.0 * _U * (1.0 + lam * self.s_down)
        if sampling == 1.0:
            values = np.concatenate([near, far, [0.0]])
            masses = np.concatenate([self.mass, self.mass, [self.zero_mass]])
            return values, masses
        share = ratio_up(sampling)
        void_value = (1.0 - lam) + 4.0 * _U * lam
        values = np.concatenate([near, far, [0.0, void_value]])
        masses = np.concatenate([self.mass * share, self.mass * share,
                                 [self.zero_mass * share, ratio_up(1.0 - sampling)]])
        return values, masses


@functools.lru_cache(maxsize=16)
def blanket_atoms(mu: float, tail_z: float = TAIL_Z) -> BlanketAtoms:
    """The cached :class:`BlanketAtoms` of μ with the cut at μ + ``tail_z``."""
    return BlanketAtoms(mu, tail_z)


def lattice_spacing(values: NDArray[np.float64], masses: NDArray[np.float64]) -> float:
    """A power of two near sd(Z)/STEP_DIVISOR, coarse enough for MEASURE_CELLS cells (any step
    is sound; it only steers tightness and cost)."""
    total = float(np.sum(masses))
    mean = float(np.dot(values, masses)) / total
    spread = math.sqrt(max(float(np.dot(values * values, masses)) / total - mean * mean, 1e-300))
    span = float(values.max() - values.min())
    step = max(spread / STEP_DIVISOR, span / (MEASURE_CELLS - 2))
    return 2.0 ** math.floor(math.log2(step))


def check_sampling(value: object, name: str = "sampling") -> float:
    """A Poisson sampling probability in (0, 1]."""
    return check_range(name, value, 0.0, 1.0, low_open=True)


def _checked_arguments(epsilon: float, mu: float, n: int,
                       sampling: float) -> tuple[float, int, float, float]:
    """(ε, n, μ, sampling) of a blanket bound, each checked (a ValueError names the one out of
    range)."""
    return (check_epsilon(epsilon), check_num_users(n), check_blanket_mu(mu),
            check_sampling(sampling))


@functools.lru_cache(maxsize=4096)
def blanket_delta(epsilon: float, mu: float, n: int, sampling: float = 1.0) -> float:
    """Certified upper bound on δ(ε) of n shuffled Gaussian reports with μ = Δ/σ (module
    docstring): every pair of inputs, both directions; with ``sampling`` q < 1, of N = n
    Poisson-sampled users (the void randomizer q·R + (1 − q)·⊥, docs/theory.md, "Client
    sampling": its blanket adds ⊥ with both ratios 1)."""
    eps, users, scale, rate = _checked_arguments(epsilon, mu, n, sampling)
    if math.isinf(eps):
        return 0.0
    cuts = (TAIL_Z,) if scale < SHORT_TAIL_MU else (TAIL_Z, SHORT_TAIL_Z)
    return min(_cut_delta(eps, scale, users, rate, cut) for cut in cuts)


def _cut_delta(eps: float, mu: float, users: int, rate: float, tail_z: float) -> float:
    """The bound of :func:`blanket_delta` with the cut at μ + ``tail_z``."""
    atoms = blanket_atoms(mu, tail_z)
    users = min(users, atoms.max_users)  # the bound is non-increasing in n
    values, masses = atoms.atoms(eps, rate)
    spacing = lattice_spacing(values, masses)
    measure, offset = lattice_measure(values, masses, spacing)
    bound = positive_part_mean(measure, offset, spacing, users, max_length=PARTIAL_CELLS)
    if not math.isfinite(bound):  # pragma: no cover - mass bounds overflowed: no information
        return 1.0
    return min(1.0, round_loss_up(bound + atoms.tail_charge))


@functools.lru_cache(maxsize=4096)
def clamped_delta(epsilon: float, mu: float, n: int, sampling: float = 1.0) -> float:
    """The knot value of the every-ε curve: a certified upper bound on δ(ε) (the quantity of
    :func:`blanket_delta`) from the cut at μ + ``TAIL_Z`` alone, with every user's atoms clamped
    to [L, T] (docs/theory.md, "Every-ε curve of the Gaussian blanket bound").

    With Ẑ the discretised per-user law (module docstring, masses of total M ≥ 1) and n users,
    (Σ_i Ẑ_i)⁺ ≤ (Σ_i min(Ẑ_i, T))⁺ + Σ_i (Ẑ_i − T)⁺ pointwise ((a + b)⁺ ≤ a⁺ + b for b ≥ 0);
    integrated against the product measure, each excess term carries the mass of the others,
    M^{n−1}: (1/n)·E[(ΣẐ)⁺] ≤ (1/n)·E[(Σ min(Ẑ_i, T))⁺] + M^{n−1}·∫(z − T)⁺dẐ. Raising every
    value below L to L only raises the expression. The clamped law is evaluated by
    :func:`~dpacct_shuffle.core.lattice_sum.positive_part_mean` with its own clamps from above
    (``top_clamp``) and partial laws of at most ``CURVE_PARTIAL_CELLS`` entries. L and T
    (:func:`~dpacct_shuffle.core.lattice_sum.clamp_bounds`) only steer tightness: the range of
    the lattice no longer spans the heavy tails of s, so the single far cut is as fine as the
    near one of :func:`blanket_delta`."""
    eps, users, scale, rate = _checked_arguments(epsilon, mu, n, sampling)
    if math.isinf(eps):
        return 0.0
    atoms = blanket_atoms(scale)
    users = min(users, atoms.max_users)  # the bound is non-increasing in n
    values, masses = atoms.atoms(eps, rate)
    low, high = clamp_bounds(values, masses, users - 1)
    above = np.maximum(values - high, 0.0)
    # the differences and the dot product of non-negative terms, a relative (size + 6)u up
    excess = float(np.dot(masses, above)) * (1.0 + (values.size + 6) * _U)
    total_mass = float(np.sum(masses)) * (1.0 + (values.size + 2) * _U)
    others = math.exp((users - 1) * math.log(total_mass)) * (1.0 + 1e-12) if total_mass > 1.0 \
        else 1.0
    clamped = np.clip(values, low, high)
    spacing = lattice_spacing(clamped, masses)
    span = float(clamped.max() - clamped.min())
    while span / spacing + 2.0 > CURVE_PARTIAL_CELLS:  # the step the first partial law is
        spacing *= 2.0  # coarsened to anyway: the same hat split, without the finer one first
    measure, offset = lattice_measure(clamped, masses, spacing)
    bound = positive_part_mean(measure, offset, spacing, users, max_length=CURVE_PARTIAL_CELLS,
                               top_clamp=True)
    if not math.isfinite(bound):  # pragma: no cover - mass bounds overflowed: no information
        return 1.0
    return min(1.0, round_loss_up(bound + excess * others + atoms.tail_charge))


@functools.lru_cache(maxsize=64)
def curve_knots(mu: float, n: int, sampling: float = 1.0
                ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Knots x_k = e^{ε_k} (rounded up; x_0 = 1 at ε = 0) and non-increasing certified values
    U_k ≥ δ(ε_k) of :func:`clamped_delta` (each the smallest value at a knot at or before it:
    the true δ is non-increasing). ε_max and the bisection: see ``CURVE_START_KNOTS``; the
    choices only steer tightness and cost."""
    values: dict[float, float] = {}

    def at(eps: float) -> float:
        if eps not in values:
            values[eps] = clamped_delta(eps, mu, n, sampling)
        return values[eps]

    plateau = CURVE_DROP * blanket_atoms(check_blanket_mu(mu)).tail_charge
    top = 0.25
    while top < CURVE_MAX_EPSILON and at(top) > CURVE_FLOOR \
            and (at(2.0 * top) * CURVE_DROP < at(top) or at(2.0 * top) > plateau):
        top *= 2.0
    cells = [(top * j / CURVE_START_KNOTS, top * (j + 1) / CURVE_START_KNOTS)
             for j in reversed(range(CURVE_START_KNOTS))]
    best = math.inf  # the running minimum of the values left of the current cell
    while cells:
        low, high = cells.pop()
        left, right = min(at(low), best), at(high)
        if left > CURVE_FLOOR and high - low > CURVE_MIN_CELL * max(high, 1e-3) and (
                left > CURVE_DROP * right
                or left > CURVE_HEAD_DELTA and left > CURVE_HEAD_DROP * right):
            middle = 0.5 * (low + high)
            cells += [(middle, high), (low, middle)]
        else:
            best = min(left, right)
    epsilons = np.array(sorted(values))
    deltas = np.minimum.accumulate(np.array([values[float(e)] for e in epsilons]))
    knots = np.exp(epsilons) * (1.0 + 4.0 * _U)
    knots[0] = 1.0
    return knots, deltas


def blanket_deltas(epsilons: NDArray[np.float64], mu: float, n: int,
                   sampling: float = 1.0) -> NDArray[np.float64]:
    """:func:`blanket_delta` at every ε of ``epsilons`` (finite, ≥ 0); with more than
    ``CURVE_KNOTS`` distinct values, read from the every-ε curve (:func:`curve_deltas`)."""
    values = np.asarray(epsilons, dtype=np.float64).ravel()
    if np.unique(values).size <= CURVE_KNOTS:
        return np.array([blanket_delta(float(eps), mu, n, sampling) for eps in values],
                        dtype=np.float64)
    return curve_deltas(values, mu, n, sampling)


def curve_deltas(epsilons: NDArray[np.float64], mu: float, n: int,
                 sampling: float = 1.0) -> NDArray[np.float64]:
    """Certified upper bounds on δ at every ε ≥ 0 of ``epsilons`` from the every-ε curve: chords
    through the knots of :func:`curve_knots` (docs/theory.md, "Every-ε curve of the Gaussian
    blanket bound").

    Chords: the true δ(ε) of the round is a maximum of hockey-stick divergences
    ∫(p − λq)⁺, convex and non-increasing in λ = e^ε; between knots λ_k < λ_{k+1} it lies
    below the chord through any U_k ≥ δ(λ_k), U_{k+1} ≥ δ(λ_{k+1}), and below U_k. The chord is
    evaluated at λ rounded down (the knots' λ rounded up), raised by 8u·U_k (its few roundings)
    and capped at U_k; beyond the last knot the last value holds (non-increasing).
    """
    values = np.asarray(epsilons, dtype=np.float64).ravel()
    if not np.all(values >= 0.0) or not np.all(np.isfinite(values)):
        raise ValueError("epsilons must be finite and >= 0")
    knots, upper = curve_knots(check_blanket_mu(mu), check_num_users(n), check_sampling(sampling))
    lam = np.exp(values) * (1.0 - 4.0 * _U)
    right = np.clip(np.searchsorted(knots, lam, side="left"), 1, knots.size - 1)
    left = right - 1
    with np.errstate(over="ignore", invalid="ignore"):
        fraction = (lam - knots[left]) / (knots[right] - knots[left])
        chord = upper[left] + (upper[right] - upper[left]) * np.clip(fraction, 0.0, 1.0)
    chord = np.where(np.isfinite(chord), chord + 8.0 * _U * upper[left], upper[left])
    result = np.minimum(chord, upper[left])
    result[lam >= knots[-1]] = upper[-1]
    result[values <= 0.0] = upper[0]
    return np.asarray(result, dtype=np.float64)


__all__ = ["CELLS", "CURVE_DROP", "CURVE_FLOOR", "CURVE_HEAD_DELTA", "CURVE_HEAD_DROP",
           "CURVE_KNOTS", "CURVE_MAX_EPSILON", "CURVE_MIN_CELL", "CURVE_PARTIAL_CELLS",
           "CURVE_START_KNOTS", "MAX_MU", "MAX_USERS", "MEASURE_CELLS", "NDTR_ERROR",
           "PARTIAL_CELLS", "SHORT_TAIL_MU", "SHORT_TAIL_Z", "STEP_DIVISOR", "TAIL_Z",
           "BlanketAtoms", "blanket_atoms", "blanket_delta", "blanket_deltas", "clamped_delta",
           "check_blanket_mu", "check_sampling", "curve_deltas", "curve_knots", "lattice_spacing"]
