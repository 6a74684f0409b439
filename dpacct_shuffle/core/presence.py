"""Every-ε curves of the add/remove-one pair of a Poisson-sampled shuffle round (docs/theory.md,
"Presence pairs at every ε").

Under add/remove-one the victim of a Poisson-sampled round (rate γ, N users with the victim) sends
γ·R(x) + (1 − γ)·⊥ when present and ⊥ when absent (the server sees only reports). Every other
user sends γ·R(x_i) + (1 − γ)·⊥ ≥ r_A·R(x) + (1 − γ)·⊥ with r_A = γ/q, q ≥ R(x)(y)/R(x')(y) for
all inputs and outputs. Label every user A (a clone of the victim's report law, rate r_A), ⊥
(rate 1 − γ) or rest (the remaining γ(1 − 1/q), whose reports do not depend on the victim); the
victim present is A w.p. γ and ⊥ otherwise, absent it is ⊥. The release is a post-processing of
the label counts (a, j) (A-count, ⊥-count) together with the rest's reports, which have the same
law in both worlds, so with M the multinomial law of (A, J) over N labels

    P(a, j) = M(a, j)·(q·a + j)/N,   Q(a, j) = M(a, j)·j/((1 − γ)·N)

(M_N(a, j)·a/(N·r_A) = M_{N−1}(a − 1, j), and likewise for j) dominate the round in both
directions, and the privacy loss is ℓ(a, j) = ln(1 − γ) + ln(1 + q·a/j) (∞ at j = 0 < a).

:func:`presence_curves` reads both directions at every ε from one pass over the cells:
A ~ Bin(N, r_A) row by row, and J | A = a ~ Bin(N − a, π), π = (1 − γ)/(1 − r_A), in blocks
[e_k, e_{k+1}) of relative width η (the last one open). A block's masses are
P = P[A = a]·(q·a·P[J ∈ B] + (N − a)·π·P[J' ∈ B − 1])/N and Q = P[A = a]·(N − a)·π·P[J' ∈ B −
1]/((1 − γ)·N) with J' ~ Bin(N − a − 1, π) (Σ_{j∈B} j·Bin(m, π)(j) = m·π·P[Bin(m − 1, π) ∈ B −
1]); the block's P-mass is put at its largest present‖absent loss (at j = e_k), its Q-mass at its
largest absent‖present loss (at j = e_{k+1} − 1). Moving P-mass (Q-mass) to a larger loss only
raises every hockey-stick divergence of that direction, so each curve is an upper bound at every
ε ≥ 0. Rows of A outside the window of A' ~ Bin(N − 1, r_A) carry P- and Q-mass at most that of
A' outside it (P(a, ·) = γ·P[A' = a − 1] + (1 − γ)·P[A' = a], Q(a, ·) = P[A' = a]), put at +∞
(present‖absent) and at −ln(1 − γ) (absent‖present, the largest loss of that direction, beyond
which it vanishes: P ≥ (1 − γ)·Q).

*Numerics.* Block probabilities are differences of scipy's cdf (blocks below the mean) or sf
(above), or 1 − cdf − sf for the block holding the mean; each is raised by
``special_function_rtol`` times the terms used plus 4u, so it is an upper bound with an error
relative to the row's mass, not to the block's. P[A = a] is scipy's pmf raised by
``special_function_rtol(N)``; products and sums of nonnegative terms add a few u each. Masses are
raised by a relative ``_MASS_RTOL``, losses by ``_LOSS_RTOL`` of the magnitudes of their two terms
(their difference cancels). Cells of mass ≤ ``_NEGLIGIBLE_MASS`` join the truncated mass.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.typing import NDArray
from scipy import special

from dpacct_shuffle.core.batched import DEFAULT_LOWERING, BatchedDelta, _window
from dpacct_shuffle.core.binomial import binomial_cdf, binomial_pmf, binomial_sf
from dpacct_shuffle.core.bound import MAX_EVALUATED_USERS
from dpacct_shuffle.core.problem import UNIT_ROUNDOFF, special_function_rtol
from dpacct_shuffle.core.validation import check_num_users, check_range

# tail level of each window (A' rows, J blocks): the truncated mass sits at +∞ in the
# present‖absent direction, so it is kept far below the smallest δ an accountant asks for
DEFAULT_PRESENCE_TAIL = 1e-24
_MASS_RTOL = 1e-9
_LOSS_RTOL = 1e-12
_NEGLIGIBLE_MASS = 1e-30

FloatArray = NDArray[np.float64]


def _block_probabilities(edges: NDArray[np.int64], trials: NDArray[np.int64],
                         rate: float) -> FloatArray:
    """Upper bounds on P[Bin(trials_r, rate) ∈ [e_k, e_{k+1})] for every row r and block k of
    ``edges`` (shape (rows, blocks + 1), non-decreasing per row; a last edge beyond ``trials``
    closes the open block). Below the row's mean the block is a cdf difference, above it an sf
    difference, across it 1 − cdf − sf; each is raised by the scipy error of its terms
    (``special_function_rtol``) and 4u, clipped to [0, 1]."""
    t = trials[:, None].astype(np.float64)
    lower = binomial_cdf(edges - 1, t, rate)  # P[X < e]
    upper = binomial_sf(edges - 1, t, rate)  # P[X ≥ e]
    mean = t * rate
    e_lo, e_hi = edges[:, :-1], edges[:, 1:]
    below = e_hi <= mean
    above = e_lo >= mean
    values = np.where(below, lower[:, 1:] - lower[:, :-1],
                      np.where(above, upper[:, :-1] - upper[:, 1:],
                               1.0 - lower[:, :-1] - upper[:, 1:]))
    terms = np.where(below, lower[:, 1:] + lower[:, :-1],
                     np.where(above, upper[:, :-1] + upper[:, 1:],
                              lower[:, :-1] + upper[:, 1:]))
    rtol = special_function_rtol(t)
    values = values + rtol * terms + 4.0 * UNIT_ROUNDOFF * (np.abs(values) + terms)
    return np.clip(np.where(e_hi > e_lo, values, 0.0), 0.0, 1.0)


def _block_edges(j_lo: int, j_hi: int, lowering: float, top: int) -> NDArray[np.int64]:
    """Edges 0 (when j_lo > 0), j_lo = e_1 < e_2 < … ≤ j_hi, then ``top`` (past every support):
    from e, the next edge is e + max(1, ⌊η·e⌋), so a block's j vary by a relative ≤ η."""
    edges = [0] if j_lo > 0 else []
    e = j_lo
    while e <= j_hi:
        edges.append(e)
        e += max(1, math.floor(lowering * e))
    edges.append(max(e, top))
    return np.array(edges, dtype=np.int64)


class PresenceCurves:
    """The two directions of the add/remove pair at every ε (module docstring); build with
    :func:`presence_curves`.

    Attributes:
      present: present‖absent, an upper bound on D_{e^ε}(P‖Q) at every ε ≥ 0.
      absent: absent‖present, an upper bound on D_{e^ε}(Q‖P) (0 at ε ≥ −ln(1 − γ)).
    """

    __slots__ = ("present", "absent")

    def __init__(self, present: BatchedDelta, absent: BatchedDelta) -> None:
        self.present, self.absent = present, absent

    def deltas(self, epsilons: FloatArray) -> FloatArray:
        """max(present‖absent, absent‖present) at every ε ≥ 0 of ``epsilons``."""
        return np.asarray(np.maximum(self.present.deltas(epsilons), self.absent.deltas(epsilons)),
                          dtype=np.float64)

    def delta(self, epsilon: float) -> float:
        """:meth:`deltas` at one ε ≥ 0."""
        return max(self.present.delta(epsilon), self.absent.delta(epsilon))


def presence_curves(q: float, sampling_probability: float, n: int,
                    lowering: float = DEFAULT_LOWERING,
                    tail: float = DEFAULT_PRESENCE_TAIL) -> PresenceCurves:
    """Both directions of the add/remove-one pair of a Poisson-sampled round (cached).

    Args:
      q: ratio bound q ≥ 1 of the randomizer over all inputs (finite), rounded up by the caller.
      sampling_probability: γ ∈ (0, 1), rounded up by the caller (a round at a smaller rate is a
        post-processing of it).
      n: users N ≥ 1 with the victim (evaluated at ``MAX_EVALUATED_USERS`` above it: the bound is
        non-increasing in N).
      lowering: η ∈ (0, 0.01], the relative width of the ⊥-count blocks.
      tail: mass left outside each window, in [1e-300, 1e-12].
    """
    ratio = check_range("q", q, 1.0, math.inf, high_open=True)
    gamma = check_range("sampling_probability", sampling_probability, 0.0, 1.0, low_open=True,
                        high_open=True)
    users = min(check_num_users(n), MAX_EVALUATED_USERS)
    eta = check_range("lowering", lowering, 0.0, 0.01, low_open=True)
    level = check_range("tail", tail, 1e-300, 1e-12)
    return _presence_curves(ratio, gamma, users, eta, level)


@functools.lru_cache(maxsize=256)
def _presence_curves(q: float, gamma: float, users: int, eta: float,
                     tail: float) -> PresenceCurves:
    r_a = float(np.nextafter(gamma / q, 0.0))  # A rate ≤ γ/q: a valid clone rate
    coef = float(np.nextafter(gamma / r_a, math.inf))  # the victim's A coefficient, ≥ q
    void = 1.0 - gamma  # ⊥ rate of every user, the victim's ⊥ probability when present
    pi = void / (1.0 - r_a)
    log_void = math.log(void)
    absent_cap = -log_void * (1.0 + _LOSS_RTOL) + 1e-300
    z = float(-special.ndtri(tail)) + 1.0

    # rows a of A: the window of A' ~ Bin(N − 1, r_A) and one more
    if users == 1:
        a_lo, a_hi, outside = 0, 1, 0.0
    else:
        a_lo, a_hi, outside = _window(users - 1, r_a, z)
        a_hi = min(users, a_hi + 1)
    rows = np.arange(a_lo, a_hi + 1, dtype=np.int64)
    p_rows = binomial_pmf(rows, users, r_a) * (1.0 + float(special_function_rtol(users)))
    rest = users - rows  # trials of J | A = a

    # blocks of J, common to all rows: the union of the rows' windows, open above
    sd = np.sqrt(rest * pi * (1.0 - pi) + 1.0)
    j_lo = int(max(0, np.min(np.floor(rest * pi - z * sd - 2.0))))
    j_hi = int(min(users, np.max(np.ceil(rest * pi + z * sd + 2.0))))
    edges = _block_edges(j_lo, j_hi, eta, users + 1)
    grid = np.broadcast_to(edges, (len(rows), len(edges)))
    f_j = _block_probabilities(grid, rest, pi)
    # J' ~ Bin(N − a − 1, π) over B − 1 (rows with a = N have no ⊥ at all: J' has no mass)
    f_shift = _block_probabilities(np.maximum(grid - 1, 0), np.maximum(rest - 1, 0), pi)
    f_shift[rest == 0] = 0.0

    a = rows[:, None].astype(np.float64)
    weight = p_rows[:, None] / users
    share = rest[:, None] * pi * f_shift
    p_mass = weight * (coef * a * f_j + share)
    q_mass = weight * share / void

    # present‖absent: P-mass at the block's lowest j; absent‖present: Q-mass at its highest j
    low_j = edges[:-1][None, :].astype(np.float64)
    high_j = np.minimum(edges[1:] - 1, rest[:, None]).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        growth_p = np.log1p(coef * a / low_j)  # +inf at j = 0 < a, nan at j = a = 0 (no mass)
        growth_q = np.log1p(coef * a / high_j)
    present_loss = log_void + growth_p
    present_loss += _LOSS_RTOL * (abs(log_void) + growth_p) + 1e-300
    absent_loss = -log_void - growth_q
    absent_loss += _LOSS_RTOL * (abs(log_void) + np.nan_to_num(growth_q, posinf=0.0)) + 1e-300

    mass_rtol = 1.0 + max(_MASS_RTOL, 1.01 * (float(special_function_rtol(users))
                                             + 64.0 * UNIT_ROUNDOFF))
    row_outside = outside * (1.0 + float(special_function_rtol(users)))
    present = _curve(present_loss, p_mass * mass_rtol, row_outside, math.inf, math.inf)
    absent = _curve(absent_loss, q_mass * mass_rtol, row_outside, absent_cap, absent_cap)
    return PresenceCurves(present, absent)


def _curve(losses: FloatArray, masses: FloatArray, truncated: float, top_loss: float,
           epsilon0: float) -> BatchedDelta:
    """The :class:`BatchedDelta` of the cells of positive loss; cells of infinite loss and of
    negligible mass join ``truncated`` (placed at ``top_loss``)."""
    positive = (masses > 0.0) & (losses > 0.0)
    infinite = positive & ~np.isfinite(losses)
    negligible = positive & np.isfinite(losses) & (masses <= _NEGLIGIBLE_MASS)
    extra = masses[infinite | negligible]
    truncated += float(np.sum(extra)) * (1.0 + (len(extra) + 2) * 2.0 * UNIT_ROUNDOFF)
    kept = positive & ~infinite & ~negligible
    return BatchedDelta(losses[kept], masses[kept], truncated * (1.0 + 4.0 * UNIT_ROUNDOFF),
                        top_loss, epsilon0)


__all__ = ["DEFAULT_PRESENCE_TAIL", "PresenceCurves", "presence_curves"]
