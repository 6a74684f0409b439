"""The multi-level bound at every ε at once for few users, from its count vectors
(docs/theory.md, "Every-ε curve of a multi-level bound by enumeration").

The multi-level bound of :mod:`dpacct_shuffle.core.multilevel` is, per direction, the
hockey-stick divergence of the pair of count laws

    P(N) = M(N)·A(N)/n,   Q(N) = M(N)·B(N)/n,   A(N) = Σ_t a_t N_t,  B(N) = Σ_t b_t N_t,

M the multinomial law of the n users' levels (the zero atom taking the rest of the mass): with
Z_i the per-user values, (1/n)·E[(Σ Z_i)⁺] = Σ_N M(N)·(A(N) − e^ε B(N))⁺/n. Every ε comes from one
pass over the count vectors: each is an atom of P-mass M(N)·A(N)/n and privacy loss
ℓ(N) = ln(A(N)/B(N)). :func:`count_vectors_curve`:

* enumerates the count vectors level by level (smallest mass first) as a chain of conditional
  binomials N_s ~ Bin(n − Σ_{r<s} N_r, m_s/L_s), L_s the mass not yet assigned; a partial vector
  whose probability (the product of its conditional probabilities, which bounds every completion
  and equals their total) is below ``PRUNE_PROBABILITY`` is dropped, and so is its P-mass, at
  most max_t a_t times its probability (A(N)/n ≤ max_t a_t): the number of dropped vectors times
  max_t a_t·``PRUNE_PROBABILITY`` is carried as truncated mass at the levels' ε0 (every loss is
  at most ε0);
* adds up the P- and Q-masses of the atoms per bin of width β = min(ε0, ``LOSS_RANGE``)/``LOSS_BINS``
  of their loss (larger losses in the top bin);
  at ε the bins above ε's bin count exactly, the few around it at their lower edge (each of
  their terms is at most P − e^{edge}·Q), so the curve is the bound up to β in ε.

The reverse direction is the same with a and b exchanged. Float errors are all on the safe side:
the log-probabilities carry a global margin, A and B are taken up or down by a relative
4(L + 2)u, computed losses are charged a margin of 1e-12, and the bin and suffix sums carry
their own bound.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.typing import NDArray
from scipy import special

from dpacct_shuffle.core.bound import MAX_EVALUATED_USERS
from dpacct_shuffle.core.multilevel import PrivacyLossLevels
from dpacct_shuffle.core.problem import UNIT_ROUNDOFF
from dpacct_shuffle.core.validation import check_num_users

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: Count vectors (before pruning) examined at most; above, no curve (None).
MAX_CELLS = 12_000_000
#: Users up to which the enumeration is tried (above, the cell count is far beyond MAX_CELLS).
MAX_USERS = 1000
#: Partial count vectors less likely than this are dropped (their P-mass carried as truncated).
PRUNE_PROBABILITY = 1e-24
#: Loss grid: step min(ε0, LOSS_RANGE) / LOSS_BINS (losses above LOSS_RANGE share the top bin).
LOSS_BINS = 1 << 16
LOSS_RANGE = 16.0
# count vectors expanded per chunk (small enough for the arrays of a chunk to stay in cache)
_CHUNK_CELLS = 1 << 15
# smallest unassigned mass of a step (a smaller remainder's float error is not covered)
_MIN_REMAINDER = 1e-9
_LOSS_MARGIN = 1e-12
_U = UNIT_ROUNDOFF


class _Direction:
    """One direction's atoms binned by computed loss: per bin of width β the sums of their P- and
    Q-masses (:meth:`deltas`)."""

    def __init__(self, epsilon0: float, top_ratio: float) -> None:
        self.epsilon0 = epsilon0
        # the grid covers [0, min(ε0, LOSS_RANGE)]; larger losses share the top bin
        self.step = min(epsilon0, LOSS_RANGE) / LOSS_BINS
        self.p_sums = np.zeros(LOSS_BINS + 1)
        self.q_sums = np.zeros(LOSS_BINS + 1)
        self.top_ratio = top_ratio  # max_t a_t: A(N)/n is at most this
        self.terms = 0
        self.truncated = 0.0
        self._p_tail = self._q_tail = np.zeros(0)
        self._rtol = 0.0

    def add(self, weights: FloatArray, first: FloatArray, second: FloatArray, n: int) -> None:
        """Atoms of P-mass weights·first/n and Q-mass weights·second/n (first taken up, second
        down: every term (P − e^ε Q)⁺ only grows)."""
        live = (first > second) & (weights > 0.0)
        first, second, weights = first[live], second[live], weights[live]
        with np.errstate(divide="ignore"):
            # (a second term rounded down to 0 gives an infinite loss: every loss is ≤ ε0)
            losses = np.minimum(np.log(first / second), self.epsilon0)
        index = np.minimum(np.floor(losses / self.step), LOSS_BINS).astype(np.int64)
        if index.size == 0:
            return
        low = int(index.min())
        index -= low
        scaled = weights / n
        p_part = np.bincount(index, scaled * first)
        self.p_sums[low:low + p_part.size] += p_part
        self.q_sums[low:low + p_part.size] += np.bincount(index, scaled * second)
        self.terms += int(index.size)

    def finish(self, truncated_probability: float) -> None:
        """Suffix sums over the bins; the pruned P-mass (at most ``top_ratio`` times the pruned
        probability) is placed at ε0."""
        self._p_tail = np.concatenate([np.cumsum(self.p_sums[::-1])[::-1], [0.0]])
        self._q_tail = np.concatenate([np.cumsum(self.q_sums[::-1])[::-1], [0.0]])
        # bincount sums and suffix sums of nonnegative terms (each a product of three floats)
        self._rtol = 2.0 * (self.terms + LOSS_BINS + 8) * _U
        self.truncated = min(1.0, self.top_ratio * truncated_probability * (1.0 + 8.0 * _U))

    def deltas(self, epsilons: FloatArray) -> FloatArray:
        """Upper bounds at every ε ≥ 0 of ``epsilons`` (docs/theory.md, "Every-ε curve of a
        multi-level bound by enumeration"). With j = ⌊ε/β⌋ − 1 (≤ the exact bin of ε whatever
        the rounding of ε/β) and τ the margin of a computed loss: bins j, j + 1, j + 2 at the
        edge e = min(bin's lower edge, ε) − τ (every loss of the bin is at least e, so each term
        (P − e^ε Q)⁺ is at most P − e^e·Q ≥ 0); the bins above exactly, their Q-mass taken a
        factor 1 − 2τ down (their losses exceed ε − τ); bin j − 1 at τ·P (its losses are below
        ε + τ); the bins below contribute 0; the pruned P-mass at ε0."""
        eps = np.asarray(epsilons, dtype=np.float64)
        j = np.clip(np.floor(np.minimum(eps / self.step, LOSS_BINS + 1.0)).astype(np.int64) - 1,
                    0, LOSS_BINS)
        up, down = 1.0 + self._rtol, 1.0 - self._rtol
        scale = np.exp(eps) * (1.0 + 4.0 * _U)
        top = np.minimum(j + 3, LOSS_BINS + 1)
        value = np.maximum(self._p_tail[top] * up
                           - scale * self._q_tail[top] * down * (1.0 - 2.0 * _LOSS_MARGIN), 0.0)
        for shift in range(3):
            b = np.minimum(j + shift, LOSS_BINS)
            edge = np.minimum(b * self.step * (1.0 - 4.0 * _U), eps) - _LOSS_MARGIN
            own = self.p_sums[b] * up - np.exp(edge) * (1.0 - 4.0 * _U) * self.q_sums[b] * down
            value += np.where(j + shift <= LOSS_BINS, np.maximum(own, 0.0), 0.0)
        value += _LOSS_MARGIN * self.p_sums[np.maximum(j - 1, 0)] * up
        value += self.truncated * np.maximum(-np.expm1(eps - self.epsilon0), 0.0)
        value = value * (1.0 + 8.0 * _U)
        return np.asarray(np.where(eps >= self.epsilon0, 0.0, np.minimum(value, 1.0)),
                          dtype=np.float64)


class EnumeratedLevelsCurve:
    """Upper bounds on the multi-level bound of a level set at every ε ≥ 0 (both directions);
    build with :func:`count_vectors_curve`."""

    __slots__ = ("directions", "total_variation", "epsilon0")

    def __init__(self, directions: tuple[_Direction, ...], total_variation: float,
                 epsilon0: float) -> None:
        self.directions = directions
        self.total_variation = total_variation
        self.epsilon0 = epsilon0

    def deltas(self, epsilons: FloatArray) -> FloatArray:
        """Upper bounds on δ(ε) at every ε ≥ 0 of ``epsilons`` (0 from ε0 on)."""
        eps = np.asarray(epsilons, dtype=np.float64)
        value = np.max([direction.deltas(eps) for direction in self.directions], axis=0)
        return np.asarray(np.minimum(value, self.total_variation), dtype=np.float64)

    def delta(self, epsilon: float) -> float:
        """Upper bound on δ(ε) at one ε ≥ 0."""
        return float(self.deltas(np.array([epsilon], dtype=np.float64))[0])


def count_vectors_curve(levels: PrivacyLossLevels, n: int) -> EnumeratedLevelsCurve | None:
    """The every-ε curve of the multi-level bound of ``levels`` with n users (module docstring),
    or None when it does not apply: more than ``MAX_USERS`` users, some ratio is 0 (an infinite
    loss), the unassigned mass of a step is below 1e-9, or more than ``MAX_CELLS`` count vectors
    would be examined (cached per arguments)."""
    users = min(check_num_users(n), MAX_EVALUATED_USERS)
    if users > MAX_USERS:
        return None
    return _count_vectors_curve(levels, users)


def _log_factorials(n: int) -> FloatArray:
    return np.asarray(special.gammaln(np.arange(n + 1, dtype=np.float64) + 1.0), dtype=np.float64)


@functools.lru_cache(maxsize=64)
def _count_vectors_curve(levels: PrivacyLossLevels, n: int) -> EnumeratedLevelsCurve | None:
    a, b, m = levels.ratios0, levels.ratios1, levels.masses
    if not (np.all(a > 0.0) and np.all(b > 0.0)) or not math.isfinite(levels.epsilon0):
        return None
    order = np.argsort(m, kind="stable")
    zero = max(0.0, 1.0 - math.fsum(m.tolist()))
    # L_s: mass not yet assigned before step s (the zero atom included)
    remaining = [math.fsum(m[order[s:]].tolist()) + zero for s in range(len(order))] + [zero]
    if min(remaining[1:-1] + ([zero] if zero > 0.0 else [1.0])) < _MIN_REMAINDER:
        return None
    log_fact = _log_factorials(n)
    steps = []
    margin_terms = 0.0
    for s, t in enumerate(order.tolist()):
        log_p = math.log(float(m[t])) - math.log(remaining[s])
        last_forced = remaining[s + 1] == 0.0
        log_q = -math.inf if last_forced else math.log(remaining[s + 1]) - math.log(remaining[s])
        steps.append((t, log_p, log_q, last_forced))
        margin_terms += 3.0 * float(log_fact[n]) + n * (abs(log_p) + (0.0 if last_forced
                                                                       else abs(log_q)))
        margin_terms += 8.0 * n / remaining[s] + (0.0 if last_forced else 8.0 * n / remaining[s + 1])
    # relative errors of the log-factorials, the logs of the conditional probabilities (masses
    # and their sums known to a few u relatively) and the summation of the terms
    margin = 64.0 * _U * (margin_terms + n + 1.0)
    threshold = math.log(PRUNE_PROBABILITY)
    top_a, top_b = float(a.max()), float(b.max())
    forward = _Direction(levels.epsilon0, top_a)
    backward = None if levels.symmetric else _Direction(levels.epsilon0, top_b)
    # partial count vectors: users left, A and B so far, log-probability so far
    rest = np.array([n], dtype=np.int64)
    sum_a, sum_b, log_prob = np.zeros(1), np.zeros(1), np.zeros(1)
    pruned = 0
    examined = 0
    rounding = 4.0 * (len(order) + 2) * _U
    for s, (t, log_p, log_q, forced) in enumerate(steps):
        last = s == len(steps) - 1
        sizes = rest + 1
        examined += int(sizes.sum())
        if examined > MAX_CELLS:
            return None
        chunks = _chunks(sizes)
        table = _binomial_log_table(log_fact, log_p, log_q, forced)
        new_parts = []
        flat_table = table.ravel()
        for lo, hi in chunks:
            # each partial vector i expands to its sizes[i] cells k = 0, …, rest[i] (by repeats,
            # not gathers: one pass per array)
            counts = sizes[lo:hi]
            first_cell = np.cumsum(counts) - counts
            k = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(first_cell, counts)
            lp = np.repeat(log_prob[lo:hi], counts)
            lp += flat_table[np.repeat(rest[lo:hi] * (n + 1), counts) + k]
            new_a = np.repeat(sum_a[lo:hi], counts) + float(a[t]) * k
            new_b = np.repeat(sum_b[lo:hi], counts) + float(b[t]) * k
            keep = lp > threshold
            # each pruned (partial) vector has probability below PRUNE_PROBABILITY·e^margin
            pruned += int(keep.size - np.count_nonzero(keep))
            if not last:
                left = np.repeat(rest[lo:hi], counts) - k
                new_parts.append((left[keep], new_a[keep], new_b[keep], lp[keep]))
                continue
            if backward is None:  # one direction: only the atoms that can have a positive loss
                keep &= new_a * (1.0 + rounding) > new_b * (1.0 - rounding)
            new_a, new_b, lp = new_a[keep], new_b[keep], lp[keep]
            weights = np.exp(lp + margin)
            up_a, down_a = new_a * (1.0 + rounding), new_a * (1.0 - rounding)
            up_b, down_b = new_b * (1.0 + rounding), new_b * (1.0 - rounding)
            forward.add(weights, up_a, down_b, n)
            if backward is not None:
                backward.add(weights, up_b, down_a, n)
        if not last:
            rest, sum_a, sum_b, log_prob = (np.concatenate([part[i] for part in new_parts])
                                            for i in range(4))
    dropped = pruned * PRUNE_PROBABILITY * math.exp(margin) * (1.0 + 4.0 * _U)
    directions = tuple(direction for direction in (forward, backward) if direction is not None)
    for direction in directions:
        direction.finish(dropped)
    return EnumeratedLevelsCurve(directions, levels.total_variation, levels.epsilon0)


def _binomial_log_table(log_fact: FloatArray, log_p: float, log_q: float, forced: bool
                        ) -> FloatArray:
    """ln P[Bin(m, p) = k] at [m, k] for 0 ≤ k ≤ m ≤ n (−∞ above the diagonal; ``forced``: q = 0,
    all m at the level)."""
    n = log_fact.size - 1
    m = np.arange(n + 1)[:, None]
    k = np.arange(n + 1)[None, :]
    left = np.maximum(m - k, 0)
    with np.errstate(invalid="ignore"):
        terms = (np.where(left == 0, k * log_p, -np.inf) if forced
                 else k * log_p + left * log_q)
    table = log_fact[m] - log_fact[np.minimum(k, m)] - log_fact[left] + terms
    return np.asarray(np.where(k <= m, table, -np.inf), dtype=np.float64)


def _chunks(sizes: IntArray) -> list[tuple[int, int]]:
    """Consecutive ranges of partial vectors expanding to about ``_CHUNK_CELLS`` cells each."""
    bounds = np.searchsorted(np.cumsum(sizes), np.arange(_CHUNK_CELLS, int(sizes.sum()),
                                                         _CHUNK_CELLS), side="right")
    edges = [0, *sorted(set(int(x) for x in bounds.tolist()) - {0, len(sizes)}), len(sizes)]
    return list(zip(edges[:-1], edges[1:]))


__all__ = ["EnumeratedLevelsCurve", "LOSS_BINS", "LOSS_RANGE", "MAX_CELLS", "MAX_USERS", "PRUNE_PROBABILITY",
           "count_vectors_curve"]
