"""Composing this package's privacy loss distributions: our own dense pmfs, certified tails.

The PLDs of this package's events are built, composed and truncated here as :class:`LossPmf`
arrays (losses on the grid k·d, their probabilities, the mass at +∞; every pmf pessimistic) and
handed to dp-accounting only at the end, through its public constructors
(:meth:`LossPmfs.to_dp_accounting`: ``pld_pmf.DensePLDPmf`` and ``PrivacyLossDistribution``).
No private attribute of dp-accounting is read or written.

* :func:`connect_the_dots_pmf` — the pessimistic Connect-the-Dots pmf of a profile grid
  (Doroshenko, Ghazi, Kamath, Kumar & Manurangsi, "Connect the Dots: Tighter Discrete
  Approximations of Privacy Loss Distributions", PETS 2022, Algorithm 1), with the same float
  operations as dp-accounting's ``create_pmf_pessimistic_connect_dots``;
  :func:`leaky_rr_pmf` — the pmf of an (ε, δ)-DP pair (dp-accounting's
  ``from_privacy_parameters``: +∞ w.p. δ, ±ε rounded up otherwise); :func:`compose_exactly` —
  two pmfs with few atoms composed without FFT;
* :func:`truncate_tails` / :func:`truncated` — dp-accounting's pessimistic tail truncation: the
  largest prefix (suffix) whose running sum is ≤ τ/2 is removed, the prefix's mass is added to the
  first remaining loss (moving mass to a larger loss is pessimistic) and the suffix's mass goes to
  +∞. Running sums are ``np.cumsum``, the same sequential float sums as dp-accounting's loop, so a
  truncation is identical to dp-accounting's;
* :func:`certified_convolution` — an FFT convolution whose tails below the FFT's floating-point
  floor are replaced by exactly computed masses placed pessimistically (docs/theory.md, "Tiny δ:
  certified tails"); :func:`certified_compose`, :func:`certified_power` (repeated squaring) and
  :func:`certified_tree_compose` (a balanced tree, each FFT on arrays of similar size) compose
  PLDs with it, cutting the tails after every composition.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Optional

import attr
import numpy as np
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from numpy.typing import ArrayLike, NDArray
from scipy import fft as sp_fft

# dp-accounting's default tail truncation of one composition
TAIL_MASS_TRUNCATION = 1e-15


@attr.s(frozen=True, slots=True, auto_attribs=True, eq=False)
class LossPmf:
    """Pessimistic pmf of a privacy loss: ``probs[i]`` at loss ``(lower + i)·discretization``,
    ``infinity_mass`` at +∞ (δ(ε) computed from it is an upper bound whenever the pmf dominates
    the mechanism's privacy loss)."""

    discretization: float
    lower: int
    probs: NDArray[np.float64]
    infinity_mass: float

    def to_dp_accounting(self) -> pld_pmf.DensePLDPmf:
        """The same pmf as dp-accounting's (public) dense pmf type."""
        return pld_pmf.DensePLDPmf(self.discretization, self.lower, self.probs,
                                   self.infinity_mass, True)


@attr.s(frozen=True, slots=True, auto_attribs=True, eq=False)
class LossPmfs:
    """The pmfs of a PLD: ``remove`` and ``add`` (dp-accounting's two directions); ``add`` None
    when both are the same (symmetric)."""

    remove: LossPmf
    add: Optional[LossPmf] = None

    def map(self, function: Callable[[LossPmf], LossPmf]) -> "LossPmfs":
        """``function`` applied to each pmf (once if symmetric)."""
        return LossPmfs(function(self.remove), None if self.add is None else function(self.add))

    def to_dp_accounting(self) -> pld_lib.PrivacyLossDistribution:
        """dp-accounting's ``PrivacyLossDistribution`` of these pmfs (public constructors)."""
        if self.add is None:
            return pld_lib.PrivacyLossDistribution(self.remove.to_dp_accounting())
        return pld_lib.PrivacyLossDistribution(self.remove.to_dp_accounting(),
                                               self.add.to_dp_accounting())


def _combine(first: LossPmfs, second: LossPmfs,
             function: Callable[[LossPmf, LossPmf], LossPmf]) -> LossPmfs:
    remove = function(first.remove, second.remove)
    if first.add is None and second.add is None:
        return LossPmfs(remove)
    return LossPmfs(remove, function(first.add or first.remove, second.add or second.remove))


def _sparse_to_dense(discretization: float, losses: NDArray[np.int64],
                     probs: NDArray[np.float64], infinity_mass: float) -> LossPmf:
    """A pmf given on increasing loss indices, as a dense array from the smallest one."""
    array = np.zeros(int(losses[-1] - losses[0]) + 1)
    array[losses - losses[0]] = probs
    return LossPmf(discretization, int(losses[0]), array, infinity_mass)


def connect_the_dots_pmf(discretization: float, rounded_epsilons: ArrayLike,
                         deltas: ArrayLike, tail_mass_truncation: Optional[float] = None,
                         left_tail_mass: Optional[float] = None) -> LossPmf:
    """Pessimistic Connect-the-Dots pmf of profile values δ_i at losses ε_i = k_i·d (k_i strictly
    increasing, δ_i non-increasing upper bounds), Algorithm 1 of Doroshenko et al. (module
    docstring): mass ``y_{i−1} + z_i`` at ε_i with y_0 = 1 − δ_1,
    y_i = (δ_{i+1} − δ_i)/(e^{ε_i − ε_{i+1}} − 1), z_i = (δ_{i+1} − δ_i)/(e^{ε_{i+1} − ε_i} − 1),
    z_n = 0, and δ_n at +∞; negative masses (float rounding) are set to 0.

    With ``tail_mass_truncation``, the result is :func:`truncated` (same arguments), cut on the
    grid's few atoms before the dense array is built (the same pmf, without the long array of
    zeros a far atom — e.g. at ε_cap — would need)."""
    ks = np.asarray(rounded_epsilons, dtype=int)
    values = np.minimum.accumulate(np.asarray(deltas, dtype=float))
    epsilon_diffs = np.diff(ks) * discretization
    delta_diffs = np.diff(values)
    first = np.append(1 - values[0], delta_diffs / np.expm1(-epsilon_diffs))
    second = np.append(delta_diffs / np.expm1(epsilon_diffs), 0.0)
    probs = np.maximum(0, first + second)
    infinity_mass = float(values[-1])
    if tail_mass_truncation is not None:
        left, right = _tail_cut(probs, tail_mass_truncation, left_tail_mass)
        kept = probs[left:right].copy()
        kept[0] += _exact_sum(probs[:left])
        infinity_mass = float(infinity_mass + _exact_sum(probs[right:]))
        ks, probs = ks[left:right], kept
    return _sparse_to_dense(discretization, ks, probs, infinity_mass)


def leaky_rr_pmf(epsilon: float, delta: float, discretization: float) -> LossPmf:
    """Pmf of an (ε, δ)-DP pair, dp-accounting's ``from_privacy_parameters``: +∞ w.p. δ,
    ⌈ε/d⌉·d w.p. (1 − δ)/(1 + e^{−ε}), ⌈−ε/d⌉·d w.p. (1 − δ)/(1 + e^{ε}) (Kairouz, Oh &
    Viswanath, ICML 2015: every (ε, δ)-DP pair is a post-processing of this leaky randomized
    response)."""
    upper, lower = math.ceil(epsilon / discretization), math.ceil(-epsilon / discretization)
    probs = np.zeros(upper - lower + 1)
    probs[-1] = (1 - delta) / (1 + math.exp(-epsilon))
    probs[0] += (1 - delta) / (1 + math.exp(epsilon))
    return LossPmf(discretization, lower, probs, delta)


def _prefix_to_truncate(probs: NDArray[np.float64], threshold: float) -> int:
    """Length of the longest prefix whose running sum stays ≤ ``threshold``.

    The running sums are ``np.cumsum`` of growing chunks, each continuing from the previous
    chunk's last sum: the same sequential float additions as one cumsum of the whole array (and as
    dp-accounting's loop), but only over the short prefix the truncation looks at.
    """
    start, total, chunk = 0, 0.0, _FIRST_CHUNK
    while start < len(probs):
        sums = np.cumsum(np.concatenate(([total], probs[start:start + chunk])))[1:]
        above = sums > threshold
        if above.any():
            return start + int(np.argmax(above))
        start, total, chunk = start + len(sums), float(sums[-1]), 2 * chunk
    return len(probs)


# entries of the first chunk of running sums in _prefix_to_truncate (the cut tails are short)
_FIRST_CHUNK = 1024


def truncate_tails(pmf: LossPmf, tail_mass_truncation: float = TAIL_MASS_TRUNCATION) -> LossPmf:
    """dp-accounting's pessimistic tail truncation of a pmf (module docstring); the cut masses
    are summed with ``np.sum`` as in dp-accounting."""
    return _cut_tails(pmf, tail_mass_truncation, lambda part: float(np.sum(part)))


def truncated(pmf: LossPmf, tail_mass_truncation: float = TAIL_MASS_TRUNCATION,
              left_tail_mass: Optional[float] = None) -> LossPmf:
    """One pmf's tails cut by dp-accounting's rule (:func:`truncate_tails`), the cut masses summed
    with ``math.fsum`` (the rule applied to a single PLD, without composing it). ``left_tail_mass``
    (default ``tail_mass_truncation``) is the total the left cut may move up to the first kept
    loss (docs/theory.md, "Tiny δ: certified tails")."""
    return _cut_tails(pmf, tail_mass_truncation, _exact_sum, left_tail_mass)


def _exact_sum(part: NDArray[np.float64]) -> float:
    """Σ part, correctly rounded (``math.fsum``)."""
    return math.fsum(part.tolist())


def _tail_cut(probs: NDArray[np.float64], tail_mass_truncation: float,
              left_tail_mass: Optional[float] = None) -> tuple[int, int]:
    """(left, right): the entries kept by the pessimistic truncation, ``probs[left:right]`` — the
    left tail of mass at most ``left_tail_mass``/2 (default ``tail_mass_truncation``/2) and the
    right tail of mass at most ``tail_mass_truncation``/2 are cut, at least the largest entry's
    loss kept (moving mass up to it is pessimistic). ``probs`` is not empty."""
    threshold = tail_mass_truncation / 2.0
    left_threshold = threshold if left_tail_mass is None else left_tail_mass / 2.0
    left = min(_prefix_to_truncate(probs, left_threshold), probs.size - 1)
    right = max(len(probs) - _prefix_to_truncate(probs[::-1], threshold), left + 1)
    return left, right


def _cut_tails(pmf: LossPmf, tail_mass_truncation: float,
               total: Callable[[NDArray[np.float64]], float],
               left_tail_mass: Optional[float] = None) -> LossPmf:
    """The pessimistic truncation (:func:`_tail_cut`): the left tail moved up to the first kept
    loss, the right tail to +∞; a pmf without finite losses (all its mass at +∞) is returned as
    it is."""
    probs = pmf.probs
    if probs.size == 0:
        return pmf
    left, right = _tail_cut(probs, tail_mass_truncation, left_tail_mass)
    kept = probs[left:right].copy()
    kept[0] += total(probs[:left])
    return LossPmf(pmf.discretization, pmf.lower + left, kept,
                   float(pmf.infinity_mass + total(probs[right:])))


# -- composition with certified tails ----------------------------------------------------------
#: FFT entries above this fraction of the largest one are kept (an FFT convolution's rounding
#: error is about 1e-16 of its largest entry); below it the tails are recomputed exactly.
TRUSTED_FRACTION = 1e-13
#: exact tail blocks: at least this many grid steps wide, and at most this fraction of their
#: distance from the start of the tail (so a few hundred blocks cover any tail)
MIN_BLOCK = 8
BLOCK_FRACTION = 1.0 / 64.0
#: the largest number of groups of ``first``'s consecutive entries (each group's losses rounded up
#: to its last one) in the exact tail sums: arrays up to this long are summed entry by entry,
#: longer ones in groups of ⌈len/MAX_SURVIVAL_CHUNKS⌉ entries (a loss shift of at most 1/1024 of
#: the array's span, whatever the discretisation)
MAX_SURVIVAL_CHUNKS = 1024
_UNIT_ROUNDOFF = 2.0 ** -53
# entries of the lookup matrix of one matrix-vector product in _exact_survival, and its rows at
# most (few rows: the chunks that meet S₂ = 0 at every row's K are left out of each product)
_SURVIVAL_PIECE = 1 << 18
_SURVIVAL_ROWS = 16


def _survival(probs: NDArray[np.float64]) -> NDArray[np.float64]:
    """S[j] = Σ_{j' ≥ j} probs[j'] for 0 ≤ j ≤ len (sequential sums, from the right)."""
    return np.concatenate((np.cumsum(probs[::-1])[::-1], [0.0]))


def _exact_survival(first: NDArray[np.float64], second: NDArray[np.float64],
                    indices: NDArray[np.int64]) -> NDArray[np.float64]:
    """Upper bounds on T(K) = Σ_{k ≥ K} (first ⊛ second)[k] at every K of ``indices``, without
    FFT. T(K) = Σ_i first[i]·S₂(K − i) with S₂ the survival function of ``second``
    (S₂(j) = Σ second for j ≤ 0, 0 for j ≥ len) is non-increasing in K − i, so over a chunk
    c = [c₀, c₁] of consecutive i (one entry for arrays of at most ``MAX_SURVIVAL_CHUNKS``,
    ⌈len/``MAX_SURVIVAL_CHUNKS``⌉ for longer ones) it is at most (Σ_{i∈c} first[i])·S₂(K − c₁):
    T(K) ≤ Σ_c F_c·S₂(K − c₁) (the exact T of ``first`` with each loss rounded up to its chunk's
    end). Sums of products of non-negative numbers, each rounded to nearest, raised by their
    relative rounding bound 2(n + 2)·u."""
    if len(first) < len(second):
        first, second = second, first
    survival_second = _survival(second)  # S₂(0 … len₂), the last entry 0
    width = max(1, -(-len(first) // MAX_SURVIVAL_CHUNKS))
    starts = np.arange(0, len(first), width)
    chunk_mass = np.add.reduceat(first, starts)
    chunk_end = np.minimum(starts + width - 1, len(first) - 1)
    values = np.empty(len(indices))
    rows = max(1, min(_SURVIVAL_ROWS, _SURVIVAL_PIECE // len(chunk_end)))
    for start in range(0, len(indices), rows):
        piece = indices[start:start + rows]
        # chunks ending at or below K − len₂ meet S₂ = 0 for every K ≥ min(piece)
        first_chunk = int(np.searchsorted(chunk_end, int(piece.min()) - len(second),
                                          side="right"))
        lookup = piece[:, None] - chunk_end[None, first_chunk:]
        np.clip(lookup, 0, len(second), out=lookup)
        values[start:start + rows] = survival_second[lookup] @ chunk_mass[first_chunk:]
    terms = len(starts) + width + len(second)
    return values * (1.0 + 2.0 * (terms + 2) * _UNIT_ROUNDOFF)


def _exact_prefix_mass(first: NDArray[np.float64], second: NDArray[np.float64],
                       end: int) -> float:
    """Σ_{k < end} (first ⊛ second)[k], without FFT (sums of non-negative products)."""
    if end <= 0:
        return 0.0
    if len(first) < len(second):
        first, second = second, first
    cumulative_second = np.cumsum(second)
    high = min(end, len(first))
    # first[i] (i < end) meets second[j] for j ≤ end − 1 − i
    reach = np.minimum(end - 1 - np.arange(high), len(second) - 1)
    return float(np.dot(first[:high], cumulative_second[reach]))


def _block_offsets(length: int) -> NDArray[np.int64]:
    """Offsets O₀ = 0 < O₁ < … of the tail blocks from their start, O_{j+1} = O_j +
    max(``MIN_BLOCK``, ⌊O_j·``BLOCK_FRACTION``⌋), up to the first one ≥ ``length`` (a prefix of
    one sequence, grown and kept as needed)."""
    global _OFFSETS
    while _OFFSETS[-1] < length:
        grown = [int(_OFFSETS[-1])]
        while grown[-1] < 2 * length:
            grown.append(grown[-1] + max(MIN_BLOCK, int(grown[-1] * BLOCK_FRACTION)))
        _OFFSETS = np.concatenate((_OFFSETS, np.array(grown[1:], dtype=np.int64)))
    return _OFFSETS[:int(np.searchsorted(_OFFSETS, length)) + 1]


_OFFSETS = np.zeros(1, dtype=np.int64)


def _tail_boundaries(start: int, size: int) -> NDArray[np.int64]:
    """Block boundaries start = B₀ < B₁ < … < B_m = size of the exact right tail: blocks of
    ``MIN_BLOCK`` steps, growing to ``BLOCK_FRACTION`` of their distance from ``start``."""
    bounds = start + _block_offsets(size - start)
    bounds[-1] = size
    return bounds


def certified_convolution(first: NDArray[np.float64],
                          second: NDArray[np.float64]) -> NDArray[np.float64]:
    """The convolution of two non-negative arrays, with its tails below the FFT's floating-point
    floor replaced by exactly computed masses (docs/theory.md, "Tiny δ: certified tails").

    The FFT result is kept where it exceeds ``TRUSTED_FRACTION`` of its largest entry (indices
    lo … hi). Below lo, the exact mass Σ_{k<lo} c_k is added to entry lo (mass moved to a larger
    loss). Above hi, the tail is cut into blocks [B_j, B_{j+1}) and the block's mass
    T(B_j) − T(B_{j+1}), from exact upper bounds T on the survival function (made
    non-increasing), is put at the block's last index: at every index K ≥ lo + 1 the mass kept at
    indices ≥ K is then at least the exact one at every block boundary and in between, so the
    result dominates the exact convolution in its right tail (moving mass to larger losses only
    raises δ(ε)); entries below 0 are set to 0.
    """
    size = len(first) + len(second) - 1
    length = sp_fft.next_fast_len(size, real=True)
    transform = sp_fft.rfft(first, length)
    other = transform if second is first else sp_fft.rfft(second, length)
    plain = sp_fft.irfft(transform * other, length)[:size]
    trusted = np.flatnonzero(plain > TRUSTED_FRACTION * float(np.max(plain)))
    if len(trusted) == 0:
        return np.maximum(np.asarray(plain, dtype=np.float64), 0.0)
    lo, hi = int(trusted[0]), int(trusted[-1])
    result = np.zeros(size)
    result[lo:hi + 1] = np.maximum(plain[lo:hi + 1], 0.0)
    result[lo] += _exact_prefix_mass(first, second, lo)
    if hi + 1 < size:
        bounds = _tail_boundaries(hi + 1, size)
        tails = np.append(_exact_survival(first, second, bounds[:-1]), 0.0)
        tails = np.maximum.accumulate(tails[::-1])[::-1]
        np.add.at(result, bounds[1:] - 1, tails[:-1] - tails[1:])
    return result


def certified_compose(first: LossPmfs, second: LossPmfs,
                      tail_mass_truncation: float = TAIL_MASS_TRUNCATION) -> LossPmfs:
    """:func:`compose` with the tails of every convolution certified
    (:func:`certified_convolution`), then cut by :func:`truncate_tails`."""
    return _combine(first, second,
                    lambda a, b: _certified_pmf(a, b, tail_mass_truncation))


def _certified_pmf(first: LossPmf, second: LossPmf, tail_mass_truncation: float) -> LossPmf:
    _check_composable(first, second)
    probs = certified_convolution(first.probs, second.probs)
    infinity_mass = (first.infinity_mass + second.infinity_mass
                     - first.infinity_mass * second.infinity_mass)
    composed = LossPmf(first.discretization, first.lower + second.lower, probs, infinity_mass)
    return truncate_tails(composed, tail_mass_truncation)


def certified_power(pld: LossPmfs, count: int,
                    tail_mass_truncation: float = TAIL_MASS_TRUNCATION) -> LossPmfs:
    """``count`` ≥ 1 copies of a PLD composed by repeated squaring with :func:`certified_compose`
    (tails certified and cut after every composition, so the arrays stay as long as the kept
    support)."""
    count = _checked_count(count)

    def power(pmf: LossPmf) -> LossPmf:
        result: Optional[LossPmf] = None
        base, exponent = pmf, count
        while exponent:
            if exponent & 1:
                result = (base if result is None
                          else _certified_pmf(result, base, tail_mass_truncation))
            exponent >>= 1
            if exponent:
                base = _certified_pmf(base, base, tail_mass_truncation)
        assert result is not None
        return result

    return pld.map(power)


def certified_tree_compose(plds: Sequence[LossPmfs],
                           tail_mass_truncation: float = TAIL_MASS_TRUNCATION) -> LossPmfs:
    """:func:`tree_compose` with :func:`certified_compose`."""
    level = list(plds)
    if not level:
        raise ValueError("certified_tree_compose needs at least one PLD")
    while len(level) > 1:
        paired = [certified_compose(a, b, tail_mass_truncation)
                  for a, b in zip(level[0::2], level[1::2])]
        level = paired + ([level[-1]] if len(level) % 2 else [])
    return level[0]


def compose_exactly(first: LossPmf, second: LossPmf) -> LossPmf:
    """The composition of two pmfs without FFT and without truncation: the sum over the nonzero
    entries of the sparser one of shifted, scaled copies of the other (sums of products of
    non-negative numbers, each rounded to nearest; for pmfs with few atoms, such as local
    reports)."""
    _check_composable(first, second)
    if np.count_nonzero(first.probs) < np.count_nonzero(second.probs):
        first, second = second, first
    probs = np.zeros(len(first.probs) + len(second.probs) - 1)
    for index in np.flatnonzero(second.probs):
        probs[index:index + len(first.probs)] += second.probs[index] * first.probs
    infinity_mass = (first.infinity_mass + second.infinity_mass
                     - first.infinity_mass * second.infinity_mass)
    return LossPmf(first.discretization, first.lower + second.lower, probs, infinity_mass)


def _check_composable(first: LossPmf, second: LossPmf) -> None:
    if first.discretization != second.discretization:
        raise ValueError("PLDs composed with each other need one value_discretization_interval, "
                         f"got {first.discretization} and {second.discretization}")


def _checked_count(count: int) -> int:
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
        raise ValueError(f"count must be an integer >= 1, got {count!r}")
    return int(count)


__all__ = ["BLOCK_FRACTION", "MAX_SURVIVAL_CHUNKS", "MIN_BLOCK", "TAIL_MASS_TRUNCATION", "TRUSTED_FRACTION", "LossPmf",
           "LossPmfs", "certified_compose", "certified_convolution", "certified_power",
           "certified_tree_compose", "compose_exactly", "connect_the_dots_pmf", "leaky_rr_pmf",
           "truncate_tails", "truncated"]
