"""Certified (1/n)·E[(Z_1 + … + Z_n)⁺] for i.i.d. Z on a lattice, by nonnegative convolutions.

This evaluates the multi-level expression of :mod:`dpacct_shuffle.core.multilevel` when the
per-user law has far too many levels for a sum over count vectors (a continuous privacy-loss
spectrum, docs/theory.md, "Dominating pair of a continuous randomizer").

Lattice measure. :func:`lattice_measure` maps atoms (value v, mass q) to the lattice h·ℤ
(h a power of two) by the *hat split*: q·(1 − θ) at h·⌊v/h⌋ and q·θ one step above,
θ = v/h − ⌊v/h⌋. The split keeps each atom's mean and moves mass to the two ends of an interval
containing v, a convex-order increase (Jensen), and the order is closed under independent sums
(Shaked and Shanthikumar, "Stochastic Orders", Springer 2007, Section 4.A), so
E[(ΣZ)⁺] can only grow. θ is exact in floating point (x − ⌊x⌋ is representable); the two masses
are taken a relative 4u up (u = 2⁻⁵³). The measure need not be a probability: every entry an
upper bound on the exact one, at a value at least the exact one, gives an upper bound, since
(Σ v_i)⁺ is non-negative and non-decreasing in every v_i.

Evaluation (:func:`positive_part_mean`). The law of the sum of n users is built by binary powering,
with three operations, each keeping the invariant "exact ≤ R·computed + E" entrywise, with E a
non-negative measure of mass ≤ d on values ≤ the largest reachable sum:

* convolution (:func:`nonnegative_convolve`, direct summation, no FFT; squares by halves,
  :func:`nonnegative_square`): every entry is a sum of at most m products of non-negative
  floats, in whatever order, so it is exact to a relative (m + 1)u; R multiplies, d becomes
  M_x·d_y + d_x·M_y (M an upper bound on the mass of R·computed + E);
* clamping from below at a level L ≤ 0: the mass of a partial sum below L is moved up to L. This
  replaces a partial sum S by max(S, L) ≥ S and so only raises E[(S + rest)⁺] (soundness never
  depends on L; L is chosen where a Chernoff bound puts the rest's chance to make up the
  difference below ``CLAMP_TAIL``, so tightness hardly suffers);
* dropping the top entries of total mass ≤ ``DROP_TAIL`` and entries below ``TINY_ENTRY`` (no
  product of two kept entries underflows): their mass goes to d;
* coarsening (only with ``max_length``): a partial law longer than ``max_length`` entries is moved
  to the lattice 2^k·h'·ℤ (h' its current step) by the hat split of every entry — the same
  convex-order increase as :func:`lattice_measure`, applied to a partial sum, which only raises
  E[(S + rest)⁺] for every independent rest. Each coarse entry sums at most 2^{k+1} non-negative
  products by dyadic weights: R grows by (2^{k+1} + 6)u; E is moved by the same positive map (same
  mass, its support bound rounded up to the coarse step). Two partials on different steps are
  convolved after coarsening the finer one. A coarsening adds at most (step)²/4 to the variance of
  that partial sum, so with steps ∝ the spread of the partial sums the relative loss does not grow
  with n: this keeps every convolution at most ``max_length``² operations.

* clamping from above (only with ``top_clamp``) at a level T ≥ 0: the mass of a partial sum
  above T is moved down to T and R·Σ mass·(position − T) added to a charge C. The certificate
  becomes ∫(s + w)⁺ d(exact) ≤ ∫(s + w)⁺ d(R·computed + E) + C for every w, by
  (s + w)⁺ ≤ (min(s, T) + w)⁺ + (s − T)⁺; every other operation raises ∫(s + w)⁺ d(·) for every
  w, so it keeps it, and a convolution adds C_x·M_y + M_x·C_y (docs/theory.md, "Every-ε curve of
  the Gaussian blanket bound"). T (:func:`top_levels`) sits ``TOP_CLAMP_SDS`` standard
  deviations of the remaining users above minus their mean: the clamp loses only where they fall
  that far below their mean while a clamped sum is present.

The result is (R·Σ_{k > 0} k·h_final·P(k)·(1 + (K + 2)u) + d·c + C·h)/n, rounded up, c the
largest value the partial laws can carry (n·h·k_max⁺ without coarsening).

With ``top_clamp``, the last product (the binary powering ends with result * power) is only read,
never formed:
Σ_{i,j} x_i·y_j·(p_i + q_j)⁺ = Σ_i x_i·V(1 − p_i) with V(m) = Σ_{q_j ≥ m} (q_j − m + 1)·y_j, the
running sums from the top of y's running sums from the top — non-negative terms only, so a
relative (N_x + 2N_y + 8)u covers the rounding — with R, d, C and c those the
convolution would carry (:func:`_sum_positive_part`). It skips the final clamp, drop and
coarsening, each of which could only raise the result.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from scipy import special

from dpacct_shuffle.core.rounding import round_loss_up
from dpacct_shuffle.core.validation import check_num_users

_U = 2.0**-53
# a partial sum is clamped where the rest of the users make up the difference with E[·⁺] below this
CLAMP_TAIL = 1e-15
# the top entries of a partial law are dropped while their total mass stays below this
DROP_TAIL = 1e-30
# with coarsening, a partial law is clamped only below the point under which it has this mass
CLAMP_MASS = 1e-25
# entries below this are dropped (their mass is accounted): products of kept entries stay normal
TINY_ENTRY = 1e-150
# with top_clamp, partial sums are clamped from above this many standard deviations of the rest
# above minus the rest's mean (:func:`top_levels`)
TOP_CLAMP_SDS = 4.0
# :func:`clamp_bounds` clamps one user's atoms from below only under this mass (over the users)
LOW_CLAMP_MASS = 1e-3
_TILTS = np.geomspace(1e-4, 20.0, 90)
# above this length a convolution runs as a matrix product (blocks of _BLOCK), below numpy.convolve
_BLAS_LENGTH = 4096
# with top_clamp, the clamp levels are computed from the measure grouped to this many entries
LEVELS_CELLS = 512
_BLOCK = 256
# squares of at least this many entries are split in halves (:func:`nonnegative_square`)
_SQUARE_SPLIT = 1024
# running sums from one end are first taken over this many entries (:func:`_leading_count`)
_PREFIX = 128


def nonnegative_convolve(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, int]:
    """The full convolution of two non-negative vectors by direct summation, and the number m of
    terms summed per entry (zeros of the padding included): each entry is exact to a relative
    (m + 1)u, whatever the order of summation, since all terms are non-negative.

    Long vectors: y is cut into blocks of ``_BLOCK``; the Toeplitz matrix of x (a sliding window
    view) times the matrix of reversed blocks gives every block's convolution with x in one matrix
    product, added at its shift (the terms of one entry: one dot product per block).
    """
    if min(x.size, y.size) <= _BLAS_LENGTH:
        return np.convolve(x, y), min(x.size, y.size)
    if x.size < y.size:
        x, y = y, x
    blocks = -(-y.size // _BLOCK)
    padded = np.zeros(blocks * _BLOCK)
    padded[:y.size] = y
    reversed_blocks = np.ascontiguousarray(padded.reshape(blocks, _BLOCK)[:, ::-1].T)
    window = sliding_window_view(np.concatenate([np.zeros(_BLOCK - 1), x, np.zeros(_BLOCK - 1)]),
                                 _BLOCK)
    products = window @ reversed_blocks
    out = np.zeros(x.size + blocks * _BLOCK - 1)
    rows = products.shape[0]
    for j in range(blocks):
        out[j * _BLOCK: j * _BLOCK + rows] += products[:, j]
    return out[: x.size + y.size - 1], blocks * _BLOCK + blocks


def nonnegative_square(x: np.ndarray) -> tuple[np.ndarray, int]:
    """x * x for a non-negative vector x, and the number m = x.size bounding the products summed
    per entry: with x = a + b (a the first half, b the rest), x * x = a * a + 2·(a * b) + b * b,
    the squares recursively while at least ``_SQUARE_SPLIT`` long. Every entry is a sum of at most
    m rounded non-negative products (the doubling is exact), in some order: exact to a relative
    (m + 1)u as for :func:`nonnegative_convolve`, with about half its operations."""
    size = x.size
    if size < _SQUARE_SPLIT:
        return np.convolve(x, x), size
    half = size // 2
    low, high = x[:half], x[half:]
    out = np.empty(2 * size - 1)
    out[:2 * half - 1] = nonnegative_square(low)[0]
    out[2 * half - 1] = 0.0
    out[2 * half:] = nonnegative_square(high)[0]
    out[half:half + size - 1] += 2.0 * np.convolve(low, high)
    return out, size


def lattice_measure(values: np.ndarray, masses: np.ndarray, spacing: float
                    ) -> tuple[np.ndarray, int]:
    """Hat split of atoms (``values``, non-negative ``masses``) onto ``spacing``·ℤ (module doc).

    Returns (measure, offset): entry i carries the mass at (offset + i)·spacing. ``spacing`` must
    be a power of two (v/h and its fractional part are then exact).
    """
    exponent = math.frexp(spacing)
    if spacing <= 0.0 or exponent[0] != 0.5:
        raise ValueError(f"spacing must be a positive power of two, got {spacing!r}")
    values = np.asarray(values, dtype=float)
    masses = np.asarray(masses, dtype=float)
    if values.shape != masses.shape or values.ndim != 1 or values.size == 0:
        raise ValueError("values and masses must be 1-D arrays of the same positive length")
    if not (np.all(np.isfinite(values)) and np.all(np.isfinite(masses)) and np.all(masses >= 0.0)):
        raise ValueError("values must be finite and masses finite and >= 0")
    scaled = values / spacing
    low = np.floor(scaled)
    theta = scaled - low  # exact
    offset = int(low.min())
    index = (low - offset).astype(np.int64)
    measure = np.zeros(int(index.max()) + 2)
    np.add.at(measure, index, masses * (1.0 - theta))
    np.add.at(measure, index + 1, masses * theta)
    # products, 1 − θ and the accumulation of at most a few atoms per entry: a relative 4u, and
    # a sum of many atoms per entry (np.add.at adds them one by one) a relative (count)·u
    counts = np.bincount(index, minlength=measure.size) + np.bincount(index + 1, minlength=measure.size)
    measure *= 1.0 + (4.0 + counts) * _U
    top = np.flatnonzero(measure > 0.0)
    return measure[: int(top[-1]) + 1] if top.size else measure[:1], offset


class _Partial:
    """A computed measure on the lattice (step·h)·ℤ with its certificate: for every w,
    ∫(s + w)⁺ d(exact) ≤ ∫(s + w)⁺ d(R·values + E) + charge·h (before any clamp from above:
    exact ≤ R·values + E entrywise), mass(E) ≤ dropped, every value of E ≤ ceiling·h;
    ``mass_bound`` ≥ the mass of R·values + E, which is ≥ the exact mass (module docstring)."""

    __slots__ = ("values", "offset", "users", "factor", "dropped", "mass_bound", "step",
                 "ceiling", "charge")

    def __init__(self, values: np.ndarray, offset: int, users: int, factor: float,
                 dropped: float, step: int, ceiling: int, charge: float = 0.0) -> None:
        self.values, self.offset, self.users = values, offset, users
        self.factor, self.dropped = factor, dropped
        self.step, self.ceiling = step, ceiling
        self.charge = charge
        computed = float(np.sum(values)) * (1.0 + (values.size + 2) * _U)
        self.mass_bound = (factor * computed + dropped) * (1.0 + 4.0 * _U)


def _coarsen(part: _Partial, ratio: int) -> _Partial:
    """The hat split of ``part`` onto the lattice ``ratio`` times coarser (``ratio`` a power of
    two): entry j at (offset + j)·step goes to ⌊(offset + j)/ratio⌋ and one above with weights
    1 − θ and θ, θ the dyadic remainder (module docstring)."""
    if ratio == 1:
        return part
    offset = part.offset // ratio  # ⌊·⌋, also for negative offsets
    lead = part.offset - offset * ratio
    rows = -(-(lead + part.values.size) // ratio)
    padded = np.zeros(rows * ratio)
    padded[lead:lead + part.values.size] = part.values
    theta = np.arange(ratio, dtype=np.float64) / ratio  # exact: a dyadic fraction
    split = padded.reshape(rows, ratio) @ np.stack([1.0 - theta, theta], axis=1)
    values = np.zeros(rows + 1)
    values[:-1] = split[:, 0]
    values[1:] += split[:, 1]
    factor = part.factor * (1.0 + (2 * ratio + 6) * _U)
    ceiling = -(-part.ceiling // ratio)
    return _Partial(values, offset, part.users, factor, part.dropped, part.step * ratio, ceiling,
                    part.charge)


def _fit(part: _Partial, max_length: int | None) -> _Partial:
    """``part`` coarsened by the smallest power of two that brings it to ``max_length`` entries."""
    if max_length is None or part.values.size <= max_length:
        return part
    ratio = 1
    while -(-part.values.size // ratio) + 1 > max_length:
        ratio *= 2
    return _coarsen(part, ratio)


def _convolve(x: _Partial, y: _Partial) -> _Partial:
    """exact_x * exact_y ≤ R_xR_y·(P_x * P_y) + R_xP_x * E_y + E_x * (R_yP_y + E_y): the last two
    have mass ≤ M_x·d_y + d_x·M_y; the charges add up as c_x·M_y + M_x·c_y (x's certificate
    under each point of y's measure, of mass ≤ M_y, then y's under each point of x's clamped
    measure, of mass ≤ M_x). The finer of two steps is coarsened to the other first."""
    if x.step < y.step:
        x = _coarsen(x, y.step // x.step)
    elif y.step < x.step:
        y = _coarsen(y, x.step // y.step)
    values, terms = (nonnegative_square(x.values) if x.values is y.values
                     else nonnegative_convolve(x.values, y.values))
    factor = x.factor * y.factor * (1.0 + 2.0 * (terms + 1) * _U)
    dropped = (x.mass_bound * y.dropped + x.dropped * y.mass_bound) * (1.0 + 4.0 * _U)
    charge = (x.charge * y.mass_bound + x.mass_bound * y.charge) * (1.0 + 4.0 * _U)
    return _Partial(values, x.offset + y.offset, x.users + y.users, factor, dropped, x.step,
                    x.ceiling + y.ceiling, charge)


def _leading_count(values: np.ndarray, limit: float) -> int:
    """The number of leading entries of ``values`` (non-negative) whose running sum stays at most
    ``limit``: the running sums of a short prefix first (the same floats as those of the whole
    array, added in the same order), of the whole array only where the prefix does not reach it."""
    prefix = np.cumsum(values[:_PREFIX])
    if prefix[-1] > limit or values.size <= _PREFIX:
        return int(np.searchsorted(prefix, limit, side="right"))
    return int(np.searchsorted(np.cumsum(values), limit, side="right"))


def _own_tail_level(part: _Partial) -> int:
    """The lowest index (in h) above which ``part`` keeps all but ``CLAMP_MASS`` of its mass."""
    first = _leading_count(part.values, CLAMP_MASS)
    return (part.offset + first) * part.step


def _clamp_top(part: _Partial, top_level: int) -> _Partial:
    """Mass above the lattice point at or above ``top_level``·h moved down to it, its excess
    (R·Σ mass·(position − top), rounded up) added to the charge (module docstring)."""
    top = -(-top_level // part.step)
    last = part.offset + part.values.size - 1
    if top >= last:
        return part
    if top < part.offset:
        top = part.offset
    cut = top - part.offset
    above = part.values[cut + 1:]
    distance = np.arange(1, above.size + 1, dtype=np.float64)
    excess = float(np.dot(above, distance)) * (1.0 + (above.size + 4) * _U)
    values = part.values[:cut + 1].copy()
    values[cut] = (values[cut] + float(np.sum(above))) * (1.0 + (above.size + 3) * _U)
    charge = (part.charge + part.factor * excess * part.step) * (1.0 + 4.0 * _U)
    return _Partial(values, part.offset, part.users, part.factor, part.dropped, part.step,
                    part.ceiling, charge)


def _clamp_and_drop(part: _Partial, base_level: int, own_tail: bool = False,
                    top_level: int | None = None) -> _Partial:
    """Mass below ``base_level``·h (with ``own_tail``: below the lower of it and
    :func:`_own_tail_level`) moved up to the lattice point at or below it (if that is above
    the offset), with ``top_level`` the mass above it moved down (:func:`_clamp_top`), then
    the top entries of total mass ≤ ``DROP_TAIL`` and entries below ``TINY_ENTRY`` dropped."""
    if top_level is not None:
        part = _clamp_top(part, top_level)
    values, offset = part.values, part.offset
    if own_tail:
        base_level = min(base_level, _own_tail_level(part))
    level = base_level // part.step
    if level > offset:
        cut = level - offset
        if cut >= values.size:
            values = np.array([float(np.sum(values)) * (1.0 + (values.size + 2) * _U)])
        else:
            below = float(np.sum(values[:cut]))
            values = values[cut:].copy()
            values[0] = (values[0] + below) * (1.0 + (cut + 3) * _U)
        offset = level
    # the sums from the top, non-decreasing: the top entries summing to at most DROP_TAIL go
    top_count = _leading_count(values[::-1], DROP_TAIL)
    head = values[:values.size - top_count]
    tiny = head < TINY_ENTRY
    lost = float(np.sum(values[head.size:]))
    if tiny.any():
        lost += float(np.sum(head[tiny]))
        kept = np.flatnonzero(~tiny)
        head = np.where(tiny, 0.0, head)
    else:
        kept = np.array([0, head.size - 1]) if head.size else np.zeros(0, dtype=np.int64)
    lost *= 1.0 + (values.size + 2) * _U
    if kept.size == 0:
        new_values, new_offset = np.zeros(1), offset
    else:
        first, last = int(kept[0]), int(kept[-1])
        new_values = head[first:last + 1]
        new_offset = offset + first
    dropped = (part.dropped + part.factor * lost) * (1.0 + 2.0 * _U)
    return _Partial(new_values, new_offset, part.users, part.factor, dropped, part.step,
                    part.ceiling, part.charge)


def _chernoff_levels(points: np.ndarray, masses: np.ndarray,
                     vectorised: bool = False) -> Callable[[int], float]:
    """x(r): the largest x ≤ 0 with inf_θ e^{θx}·M(θ)^r/(eθ) ≤ ``CLAMP_TAIL``, M the moment
    generating function of the measure (``points``, positive ``masses``): a Chernoff bound on
    E[(x + S_r)⁺], as z⁺ ≤ e^{θz − 1}/θ. Tightness only."""
    log_mass = np.log(masses)
    if vectorised:  # the same values up to summation order: a level is a tightness choice only
        exponents = log_mass[None, :] + _TILTS[:, None] * points[None, :]
        largest = np.max(exponents, axis=1)
        log_mgf = largest + np.log(np.sum(np.exp(exponents - largest[:, None]), axis=1))
    else:
        log_mgf = np.array([special.logsumexp(log_mass + theta * points) for theta in _TILTS])
    base = math.log(CLAMP_TAIL) + 1.0 + np.log(_TILTS)

    def level(remaining: int) -> float:
        if remaining <= 0:
            return 0.0
        return min(0.0, float(np.max((base - remaining * log_mgf) / _TILTS)))

    return level


def top_levels(values: np.ndarray, masses: np.ndarray) -> Callable[[int], float]:
    """T(r) = max(0, −r·m + ``TOP_CLAMP_SDS``·√r·s), m and s the mean and standard deviation of
    the measure (``values``, ``masses``): the level above which a partial sum is clamped when r
    users remain. The clamp charges the excess exactly and loses only where T + S_r < 0, about
    ``TOP_CLAMP_SDS`` standard deviations below the rest's mean, and only with the mass above T
    (module docstring). Tightness only: any level T ≥ 0 is sound."""
    keep = np.asarray(masses, dtype=float) > TINY_ENTRY  # no subnormal products
    values = np.asarray(values, dtype=float)[keep]
    masses = np.asarray(masses, dtype=float)[keep]
    total = float(np.sum(masses))
    mean = float(np.dot(values, masses)) / total
    spread = math.sqrt(max(float(np.dot(values * values, masses)) / total - mean * mean, 0.0))

    def level(remaining: int) -> float:
        return max(0.0, -remaining * mean + TOP_CLAMP_SDS * math.sqrt(remaining) * spread)

    return level


def clamp_bounds(values: np.ndarray, masses: np.ndarray, remaining: int) -> tuple[float, float]:
    """(low, high), low ≤ 0 ≤ high: the range to which one user's atoms (``values``, ``masses``)
    may be clamped before the lattice is chosen, ``remaining`` i.i.d. users being added. high is
    :func:`top_levels`; low is the lower of the mirrored level and the value below which the
    atoms carry mass ≤ ``LOW_CLAMP_MASS``/(remaining + 1) (so that, all users clamped at once,
    a clamped user is rare). Tightness only: the clamps of the module docstring are sound at any
    levels."""
    values = np.asarray(values, dtype=float)
    masses = np.asarray(masses, dtype=float)
    high = top_levels(values, masses)(remaining)
    mirrored = top_levels(-values, masses)(remaining)
    order = np.argsort(values)
    below = np.cumsum(masses[order])
    first = min(int(np.searchsorted(below, LOW_CLAMP_MASS / (remaining + 1))), values.size - 1)
    return min(0.0, -mirrored, float(values[order][first])), high


def positive_part_mean(measure: np.ndarray, offset: int, spacing: float, n: int, *,
                       max_length: int | None = None, top_clamp: bool = False) -> float:
    """Certified upper bound on (1/n)·E[(Z_1 + … + Z_n)⁺], Z_i i.i.d. from ``measure`` (entry i at
    (``offset`` + i)·``spacing``; any non-negative measure, module docstring). With
    ``max_length`` (≥ 16) every partial law longer than that is coarsened; with ``top_clamp``
    every partial law is also clamped from above, its excess charged, and the last product is
    read without being formed (module docstring)."""
    users = check_num_users(n)
    if max_length is not None and not (isinstance(max_length, int) and max_length >= 16):
        raise ValueError(f"max_length must be None or an integer >= 16, got {max_length!r}")
    measure = np.asarray(measure, dtype=float)
    if measure.ndim != 1 or measure.size == 0 or not np.all(np.isfinite(measure)) \
            or np.any(measure < 0.0):
        raise ValueError("measure must be a non-empty 1-D array of finite non-negative masses")
    top_index = offset + measure.size - 1
    if top_index <= 0:
        return 0.0
    coarsening = max_length is not None
    points = (np.arange(measure.size) + offset) * spacing
    weights = measure
    if top_clamp:  # the levels from a copy grouped to at most LEVELS_CELLS entries, each group at
        # its mean (the levels only steer tightness; this keeps their cost small)
        group = -(-measure.size // LEVELS_CELLS)
        padded = np.zeros((2, group * -(-measure.size // group)))
        padded[0, :measure.size] = measure
        padded[1, :measure.size] = measure * points
        weights, moments = padded.reshape(2, -1, group).sum(axis=2)
        points = np.divide(moments, weights, out=np.zeros(weights.size), where=weights > 0.0)
    positive = weights > 0.0
    chernoff = _chernoff_levels(points[positive], weights[positive], coarsening or top_clamp)

    def level(remaining: int) -> int:
        """L(r) of the module docstring, in lattice steps, at most 0."""
        return min(0, math.floor(chernoff(remaining) / spacing))

    tops = top_levels(points, weights) if top_clamp else None

    def clamp(part: _Partial) -> _Partial:
        remaining = users - part.users
        top = (None if tops is None or remaining <= 0
               else math.ceil(tops(remaining) / spacing))
        return _fit(_clamp_and_drop(part, level(remaining), coarsening, top), max_length)

    power = clamp(_Partial(measure, offset, 1, 1.0, 0.0, 1, top_index))
    result: _Partial | None = None
    remaining = users
    while True:
        if remaining & 1:
            if top_clamp and result is not None and remaining == 1:  # only read (docstring)
                return round_loss_up(_sum_positive_part(result, power) * spacing / users)
            result = clamp(power if result is None else _convolve(result, power))
        remaining >>= 1
        if not remaining:
            break
        power = clamp(_convolve(power, power))
    assert result is not None and result.users == users
    index = np.arange(result.values.size) + result.offset
    positive = index > 0
    total = float(np.sum(index[positive] * result.values[positive]))
    total *= result.step * result.factor * (1.0 + (result.values.size + 4) * _U)
    largest = max(result.ceiling, 0) * result.step
    value = ((total + result.dropped * largest) * (1.0 + 4.0 * _U)
             + result.charge * (1.0 + 2.0 * _U)) * spacing / users
    return round_loss_up(value)


def _sum_positive_part(x: _Partial, y: _Partial) -> float:
    """An upper bound, in units of h, on E[(S_x + S_y)⁺] for the independent partial sums of ``x``
    and ``y``, without forming x * y (module docstring, "the last product").

    With x and y on one step and positions p_i, q_j (in steps; entries with p_i + q_max ≤ 0 or
    q_j + p_max ≤ 0 left out: they add nothing; y the shorter), Σ_{i,j} x_i·y_j·(p_i + q_j)⁺ =
    Σ_i x_i·V(1 − p_i), V(m) = Σ_{q_j ≥ m} (q_j − m + 1)·y_j: the running sums from the top of
    the running sums from the top of y (V(m) = Σ_{m' ≥ m} W(m'), W(m') = Σ_{q_j ≥ m'} y_j), and
    below y's support V(q_0 − k) = V(q_0) + k·W(q_0). Only non-negative terms are added: W is
    exact to a relative (N_y − 1)u, V to (2N_y − 2)u (2N_y u below y's support), the products
    with x and their sum add N_x·u; the second-order terms are far below the 8u added. The
    certificate of :func:`_convolve` (factor,
    dropped mass at values up to the summed ceilings, charges) is read as in the final law."""
    if x.step < y.step:
        x = _coarsen(x, y.step // x.step)
    elif y.step < x.step:
        y = _coarsen(y, x.step // y.step)
    # only entries that can make a positive sum: p_i + q_max ≥ 1 and q_j + p_max ≥ 1
    x_first = max(0, 1 - (y.offset + y.values.size - 1) - x.offset)
    y_first = max(0, 1 - (x.offset + x.values.size - 1) - y.offset)
    x_values, y_values = x.values[x_first:], y.values[y_first:]
    x_start, y_start = x.offset + x_first, y.offset + y_first
    if y_values.size > x_values.size:  # the running sums over the shorter law
        x_values, y_values, x_start, y_start = y_values, x_values, y_start, x_start
    total = 0.0
    if x_values.size and y_values.size:
        suffix = np.cumsum(y_values[::-1])[::-1]
        double = np.cumsum(suffix[::-1])[::-1]
        start = 1 - (np.arange(x_values.size) + x_start) - y_start  # 1 − p_i in y's entries
        inside = np.clip(start, 0, y_values.size - 1)
        ramp = np.where(start >= y_values.size, 0.0,
                        np.where(start >= 0, double[inside],
                                 double[0] + np.maximum(-start, 0) * suffix[0]))
        total = float(np.dot(x_values, ramp))
    total *= x.step * x.factor * y.factor * (1.0 + (x_values.size + 2 * y_values.size + 8) * _U)
    dropped = (x.mass_bound * y.dropped + x.dropped * y.mass_bound) * (1.0 + 4.0 * _U)
    charge = (x.charge * y.mass_bound + x.mass_bound * y.charge) * (1.0 + 4.0 * _U)
    largest = max(x.ceiling + y.ceiling, 0) * x.step
    return ((total + dropped * largest) * (1.0 + 4.0 * _U) + charge * (1.0 + 2.0 * _U)) \
        * (1.0 + 4.0 * _U)


__all__ = ["clamp_bounds", "top_levels", "lattice_measure", "nonnegative_convolve",
           "nonnegative_square", "positive_part_mean", "CLAMP_MASS", "CLAMP_TAIL", "DROP_TAIL",
           "TINY_ENTRY"]
