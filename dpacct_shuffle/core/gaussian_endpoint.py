"""Certified lower bound on the shuffled δ(ε) of Gaussian reports: the exact δ of the *endpoint
instance*, evaluated from below (docs/theory.md, "Gaussian local noise", lower bound).

Instance (σ = 1 after scaling, μ = Δ/σ). The victim holds 0 or μ, the n − 1 other users all hold
0. Under P (victim at 0) the n reports are i.i.d. N(0, 1); under Q one of them is N(μ, 1). The
density of the shuffled multiset under Q relative to P is (1/n)·Σ_i φ(y_i − μ)/φ(y_i), so

    dQ/dP = T/n,   T = L_1 + … + L_n,   L_i = e^{μY_i − μ²/2},  Y_i i.i.d. N(0, 1),
    δ_{Q‖P}(ε) = E[(T/n − λ)⁺],   δ_{P‖Q}(ε) = E[(1 − λT/n)⁺],   λ = e^ε,

and max of the two is the exact δ(ε) of this pair of neighbouring datasets — a lower bound on the
protocol's δ(ε) (it holds for every vector dimension too: with all others at x⁰ the likelihood
ratio only depends on the projections on x¹ − x⁰). Both are E[ψ(X_1 + … + X_n)] with X = L or
X = −L and ψ convex, non-decreasing and non-negative.

Reductions (each keeps ∫ψ dν ≤ E[ψ(S)] for every such ψ, where ν is the computed measure standing
for the law of a partial sum S; ν may lose mass):

* *merging* a set of atoms into one atom of at most their mass at a position at most their mean:
  by Jensen, mass·ψ(mean) ≤ Σ mass_i·ψ(x_i), and ψ is non-decreasing and non-negative;
* *dropping* mass (ψ ≥ 0);
* *independent sums*: if ν_A, ν_B satisfy the property for A, B, then ν_A * ν_B does for A + B:
  y ↦ ∫ψ(x + y)dν_A(x) and y ↦ E[ψ(A + y)] are convex, non-decreasing and non-negative, so
  ∫∫ψ(x + y)dν_A dν_B ≤ ∫E[ψ(A + y)]dν_B(y) ≤ E[ψ(A + B)].

One user: Y is cut into ``Y_CELLS`` cells of equal width on [−``Y_RANGE``, μ + ``Y_RANGE``] plus the
two tails; a cell [y₁, y₂] has mass m = Φ̄(y₁) − Φ̄(y₂) and first moment of L
M = Φ̄(y₁ − μ) − Φ̄(y₂ − μ) (e^{μy − μ²/2}φ(y) = φ(y − μ)), so its merged atom is L = M/m (X = −L:
−M/m). The n-fold sum is built by binary powering; after each convolution (all pairs of atoms,
the position of a pair the sum of its positions) the atoms are merged into ``CELLS`` cells of
nearly equal width within ``WINDOW`` scales of the partial's median and of geometrically growing
width beyond (:func:`merge_atoms`; any partition is valid, this one keeps the law's shape where
the sum's tail lives, also for the heavy-tailed L of a large μ). The merges keep every mean, so nothing drifts with n: the only loss is the spread inside
each cell.

Numerics (every step on the lower side). Φ̄ carries the relative error ``NDTR_ERROR``·(1 + x²) of
:mod:`~dpacct_shuffle.core.gaussian_blanket`; a one-user atom takes the mass m − err and the
position (M ∓ err)/(m ± err) moved down. A merged cell is a sum of at most k non-negative
products (k the number of pairs falling into it), in any order: its mass is exact to a relative
γ_{k+1} (γ_j = ju/(1 − ju), u = 2⁻⁵³; Higham, "Accuracy and Stability of Numerical Algorithms",
Lemma 3.1) and is taken (1 − 2γ_{k+2}) times the computed value; all positions of one direction
have one sign and each pair's position (a sum of two floats) is exact to u relative, so the
cell's mean is exact to a relative 2γ_{k+3} + 2u and is moved down by 3γ_{k+5} of its size.
Atoms below ``TINY_MASS`` are dropped (products stay normal). λ is rounded up (both integrands are
non-increasing in λ) and each term ψ(x) = (x/n − λ)⁺ or (1 + λx/n)⁺ is lowered by three roundings
of its parts before the positive part.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.typing import NDArray
from scipy import special

from dpacct_shuffle.core.gaussian_blanket import NDTR_ERROR
from dpacct_shuffle.core.rounding import ratio_up, round_loss_down
from dpacct_shuffle.core.validation import check_epsilon, check_num_users, check_range

FloatArray = NDArray[np.float64]

_U = 2.0**-53
#: Cells of equal width in y for one user's report.
Y_CELLS = 4096
#: The equal-width y cells cover [−Y_RANGE, μ + Y_RANGE]; beyond, one cell each side.
Y_RANGE = 9.0
#: Equal-width cells of a partial sum, on its mean ± WINDOW standard deviations.
CELLS = 384
WINDOW = 10.0
#: At most this many cells (more only where L's tail spans many decades: then wider ones).
MAX_CELLS = 2 * CELLS
#: Cells are nearly uniform within this many scales of the median (the asinh's linear part).
LINEAR_SCALES = 8.0
#: Interquartile range of a normal law in standard deviations.
IQR_PER_SD = 1.3489795003921634
#: Atoms of smaller mass are dropped.
TINY_MASS = 1e-40
#: Largest μ evaluated (the positions e^{μy − μ²/2} stay finite far beyond it).
MAX_ENDPOINT_MU = 8.0


def _gamma(count: FloatArray) -> FloatArray:
    """γ_j = j·u/(1 − j·u) (module docstring), elementwise."""
    ju = count * _U
    return ju / (1.0 - ju)


def _interval(lo: FloatArray, hi: FloatArray) -> tuple[FloatArray, FloatArray]:
    """(Φ(hi) − Φ(lo), an upper bound on its absolute error), lo < hi (±inf allowed): through Φ
    where hi ≤ 0 and through Φ̄ elsewhere, so no difference of two numbers near 1 is taken."""
    left = hi <= 0.0
    a = np.where(left, hi, -lo)  # the larger term's argument of ndtr
    b = np.where(left, lo, -hi)
    value_a, value_b = special.ndtr(a), special.ndtr(b)
    with np.errstate(invalid="ignore"):
        err_a = np.where(np.isfinite(a), value_a * NDTR_ERROR * (1.0 + a * a), 0.0)
        err_b = np.where(np.isfinite(b), value_b * NDTR_ERROR * (1.0 + b * b), 0.0)
    value = value_a - value_b
    return value, err_a + err_b + _U * np.abs(value)


def one_user_atoms(mu: float, negative: bool) -> tuple[FloatArray, FloatArray]:
    """(positions, masses) of one user's X = L (``negative``: X = −L) merged on the y cells
    (module docstring), each atom at most its cell's mass at a position at most its mean."""
    inner = np.linspace(-Y_RANGE, mu + Y_RANGE, Y_CELLS + 1)
    edges = np.concatenate([[-math.inf], inner, [math.inf]])
    mass, mass_err = _interval(edges[:-1], edges[1:])
    first, first_err = _interval(edges[:-1] - mu, edges[1:] - mu)
    low_mass = (mass - mass_err) * (1.0 - 2.0 * _U)
    keep = low_mass > TINY_MASS
    with np.errstate(divide="ignore", invalid="ignore"):
        if negative:  # position −M/m, moved down: −(M + err)/(m − err)
            mean = -(first + first_err) / (mass - mass_err) * (1.0 + 4.0 * _U)
        else:
            mean = np.maximum(first - first_err, 0.0) / (mass + mass_err) * (1.0 - 4.0 * _U)
    return mean[keep], low_mass[keep]


def _placement(atoms: tuple[FloatArray, FloatArray]) -> tuple[float, float, float]:
    """(median, variance, robust scale²) of the normalised atoms: they only place the cells."""
    positions, masses = atoms
    order = np.argsort(positions, kind="stable")
    cumulative = np.cumsum(masses[order])
    total = float(cumulative[-1])
    q1, q2, q3 = (float(positions[order][min(int(np.searchsorted(cumulative, share * total)),
                                                 positions.size - 1)])
                  for share in (0.25, 0.5, 0.75))
    mean = float(np.dot(positions, masses)) / total
    variance = max(float(np.dot((positions - mean) ** 2, masses)) / total, 0.0)
    robust = ((q3 - q1) / IQR_PER_SD) ** 2
    return q2, variance, robust if robust > 0.0 else variance


def merge_atoms(positions: FloatArray, masses: FloatArray, terms: int,
                placement: tuple[float, float, float] | None = None
                ) -> tuple[FloatArray, FloatArray]:
    """Atoms merged on the cells of the module docstring: equal widths in
    z = A·asinh((x − c)/(A·w)) (c the median, w a scale: the smaller of the standard deviation and
    the interquartile range over 1.349, A = ``LINEAR_SCALES``), ``CELLS`` of them on
    |z| ≤ WINDOW·w — nearly uniform there, growing geometrically in the tails; at most
    ``MAX_CELLS`` in all (wider cells in z where the atoms span more). ``placement``:
    (centre, variance, robust variance) if known. ``terms``: the roundings of one position
    (a sum of ``terms`` parts, each exact to u relative)."""
    centre, variance, robust = (placement if placement is not None
                                else _placement((positions, masses)))
    scale = math.sqrt(min(variance, robust))
    if not scale > 0.0:
        scale = 1e-12 * max(abs(centre), 1.0)
    spread = LINEAR_SCALES * scale
    z = np.arcsinh((positions - centre) * (1.0 / spread))
    per_unit = LINEAR_SCALES * CELLS / (2.0 * WINDOW)
    z_range = float(z.max() - z.min())
    if z_range * per_unit > MAX_CELLS:  # a heavy tail over many decades: wider cells in z
        per_unit = MAX_CELLS / z_range
    index = np.floor(z * per_unit).astype(np.int64)
    index -= int(index.min())
    cell_mass = np.bincount(index, weights=masses)
    cell_moment = np.bincount(index, weights=masses * positions)
    count = np.bincount(index).astype(np.float64)
    used = cell_mass > 0.0
    cell_mass, cell_moment, count = cell_mass[used], cell_moment[used], count[used]
    mean = cell_moment / cell_mass
    mean = mean - np.abs(mean) * 3.0 * _gamma(count + terms + 4.0)
    low_mass = cell_mass * (1.0 - 2.0 * _gamma(count + 2.0))
    keep = low_mass > TINY_MASS
    return mean[keep], low_mass[keep]


def _add(left: tuple[FloatArray, FloatArray], right: tuple[FloatArray, FloatArray]
         ) -> tuple[FloatArray, FloatArray]:
    """The merged law of the independent sum of two partials (all pairs of atoms); the cells are
    placed from the parts' medians and spreads (any placement is valid)."""
    positions = np.add.outer(left[0], right[0]).ravel()
    masses = np.multiply.outer(left[1], right[1]).ravel()
    (c_l, v_l, r_l), (c_r, v_r, r_r) = _placement(left), _placement(right)
    return merge_atoms(positions, masses, 1, (c_l + c_r, v_l + v_r, r_l + r_r))


@functools.lru_cache(maxsize=32)
def endpoint_sum_law(mu: float, n: int, negative: bool) -> tuple[FloatArray, FloatArray]:
    """(positions, masses) standing for the law of X_1 + … + X_n (module docstring)."""
    power = merge_atoms(*one_user_atoms(mu, negative), 0)
    result: tuple[FloatArray, FloatArray] | None = None
    remaining = n
    while True:
        if remaining & 1:
            result = power if result is None else _add(result, power)
        remaining >>= 1
        if not remaining:
            break
        power = _add(power, power)
    assert result is not None
    return result


def endpoint_delta(epsilon: float, mu: float, n: int) -> float:
    """A certified lower bound on the exact δ(ε) of the endpoint instance (module docstring),
    the larger of the two directions; hence on the shuffled δ(ε) of n Gaussian reports with
    μ = Δ/σ."""
    eps = check_epsilon(epsilon)
    scale = check_range("mu", mu, 0.0, MAX_ENDPOINT_MU, low_open=True)
    users = check_num_users(n)
    if math.isinf(eps):
        return 0.0
    lam = ratio_up(math.exp(eps), 2)
    values = []
    for negative in (False, True):
        positions, masses = endpoint_sum_law(scale, users, negative)
        ratio = positions / users
        if negative:  # (1 + λx/n)⁺, x < 0
            scaled = lam * ratio
            terms = (1.0 + scaled) - 3.0 * _U * (1.0 - scaled)
        else:  # (x/n − λ)⁺
            terms = (ratio - lam) - 3.0 * _U * (ratio + lam)
        products = masses * np.maximum(terms, 0.0)
        values.append(float(np.sum(products)) * (1.0 - float(_gamma(np.float64(products.size + 2)))))
    return round_loss_down(max(0.0, max(values)))


class GaussianEndpointInstance:
    """The endpoint instance of n Gaussian reports (module docstring) as a lower-bound instance:
    :meth:`delta` is at most its exact δ(ε)."""

    def __init__(self, mu: float, n: int) -> None:
        self.mu = check_range("mu", mu, 0.0, MAX_ENDPOINT_MU, low_open=True)
        self.n = check_num_users(n)

    def delta(self, epsilon: float) -> float:
        return endpoint_delta(epsilon, self.mu, self.n)

    def max_loss(self) -> float:
        """No finite cap (the likelihood ratio is unbounded)."""
        return math.inf


__all__ = ["CELLS", "IQR_PER_SD", "LINEAR_SCALES", "MAX_CELLS", "MAX_ENDPOINT_MU", "TINY_MASS", "WINDOW", "Y_CELLS", "Y_RANGE",
           "GaussianEndpointInstance", "endpoint_delta", "endpoint_sum_law", "merge_atoms",
           "one_user_atoms"]
