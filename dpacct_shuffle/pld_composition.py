"""Composing this package's privacy loss distributions: our own dense pmfs, FFT composition, tails.

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
  ``from_privacy_parameters``: +∞ w.p. δ, ±ε rounded up otherwise);
* :func:`compose` — two pmfs by FFT convolution (``scipy.signal.fftconvolve``, as dp-accounting),
  then the pessimistic tail truncation :func:`truncate_tails`: the largest prefix (suffix) whose
  running sum is ≤ τ/2 is removed, the prefix's mass is added to the first remaining loss (moving
  mass to a larger loss is pessimistic) and the suffix's mass goes to +∞. Running sums are
  ``np.cumsum``, the same sequential float sums as dp-accounting's loop, so a truncation is
  identical to dp-accounting's;
* :func:`self_compose` / :func:`fft_power` — ``count`` copies of one PLD by one FFT power on the
  whole support; :func:`self_convolve` — by dp-accounting's public ``common.self_convolve`` (tail
  bounds first, then one FFT power), with dp-accounting's mass at +∞;
* :func:`truncated` — one pmf's tails cut by the same rule without composing it;
* :func:`tree_compose` — many PLDs pairwise, as a balanced tree (each FFT on arrays of similar
  size).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Optional

import attr
import numpy as np
from dp_accounting.pld import common as pld_common
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from numpy.typing import ArrayLike, NDArray
from scipy import fft as sp_fft
from scipy import signal

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
                         deltas: ArrayLike) -> LossPmf:
    """Pessimistic Connect-the-Dots pmf of profile values δ_i at losses ε_i = k_i·d (k_i strictly
    increasing, δ_i non-increasing upper bounds), Algorithm 1 of Doroshenko et al. (module
    docstring): mass ``y_{i−1} + z_i`` at ε_i with y_0 = 1 − δ_1,
    y_i = (δ_{i+1} − δ_i)/(e^{ε_i − ε_{i+1}} − 1), z_i = (δ_{i+1} − δ_i)/(e^{ε_{i+1} − ε_i} − 1),
    z_n = 0, and δ_n at +∞; negative masses (float rounding) are set to 0."""
    ks = np.asarray(rounded_epsilons, dtype=int)
    values = np.minimum.accumulate(np.asarray(deltas, dtype=float))
    epsilon_diffs = np.diff(ks) * discretization
    delta_diffs = np.diff(values)
    first = np.append(1 - values[0], delta_diffs / np.expm1(-epsilon_diffs))
    second = np.append(delta_diffs / np.expm1(epsilon_diffs), 0.0)
    probs = np.maximum(0, first + second)
    return _sparse_to_dense(discretization, ks, probs, float(values[-1]))


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
    probs = pmf.probs
    threshold = tail_mass_truncation / 2.0
    left = _prefix_to_truncate(probs, threshold)
    right = max(len(probs) - _prefix_to_truncate(probs[::-1], threshold), left + 1)
    left_mass, right_mass = np.sum(probs[:left]), np.sum(probs[right:])
    kept = probs[left:right].copy()
    kept[0] += left_mass
    return LossPmf(pmf.discretization, pmf.lower + left, kept,
                   float(pmf.infinity_mass + right_mass))


def truncated(pmf: LossPmf, tail_mass_truncation: float = TAIL_MASS_TRUNCATION) -> LossPmf:
    """One pmf's tails cut by dp-accounting's rule (:func:`truncate_tails`), the cut masses summed
    with ``math.fsum`` (the rule applied to a single PLD, without composing it)."""
    probs = pmf.probs
    threshold = tail_mass_truncation / 2.0
    left = _prefix_to_truncate(probs, threshold)
    right = max(len(probs) - _prefix_to_truncate(probs[::-1], threshold), left + 1)
    kept = probs[left:right].copy()
    kept[0] += math.fsum(probs[:left].tolist())
    return LossPmf(pmf.discretization, pmf.lower + left, kept,
                   pmf.infinity_mass + math.fsum(probs[right:].tolist()))


def compose(first: LossPmfs, second: LossPmfs,
            tail_mass_truncation: float = TAIL_MASS_TRUNCATION) -> LossPmfs:
    """The composition of two PLDs: FFT convolution of each direction's pmfs
    (``scipy.signal.fftconvolve``), mass at +∞ 1 − (1 − m₁)(1 − m₂), tails cut by
    :func:`truncate_tails`."""
    return _combine(first, second, lambda a, b: _compose_pmf(a, b, tail_mass_truncation))


def _compose_pmf(first: LossPmf, second: LossPmf, tail_mass_truncation: float) -> LossPmf:
    _check_composable(first, second)
    probs = signal.fftconvolve(first.probs, second.probs)
    infinity_mass = (first.infinity_mass + second.infinity_mass
                     - first.infinity_mass * second.infinity_mass)
    composed = LossPmf(first.discretization, first.lower + second.lower, probs, infinity_mass)
    if tail_mass_truncation == 0:
        return composed
    return truncate_tails(composed, tail_mass_truncation)


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


def self_compose(pld: LossPmfs, count: int,
                 tail_mass_truncation: float = TAIL_MASS_TRUNCATION) -> LossPmfs:
    """``count`` ≥ 1 copies of a PLD composed by :func:`fft_power` (cheapest for a few copies;
    :func:`self_convolve` for many)."""
    count = _checked_count(count)
    if count == 1:
        return pld
    return pld.map(lambda pmf: fft_power(pmf, count, tail_mass_truncation))


def fft_power(pmf: LossPmf, count: int,
              tail_mass_truncation: float = TAIL_MASS_TRUNCATION) -> LossPmf:
    """``count`` copies of a pmf composed at once: one FFT, its ``count``-th power (by repeated
    squaring), one inverse FFT, then :func:`truncate_tails`.

    The FFT of a convolution is the product of the FFTs, so this is the ``count``-fold
    convolution that ``count − 1`` pairwise compositions compute, on an FFT length
    (``scipy.fft.next_fast_len``) covering its whole support — no wrap-around — and cut once
    instead of after every composition (each cut only adds pessimistic mass, so the result
    differs from the pairwise one by float rounding and by less truncated mass; tests/test_cohorts.py
    compares it with dp-accounting's composition). The mass at +∞ is 1 − (1 − m)^count. Cheaper
    than pairwise composition for a few copies (two FFTs of the final length instead of three per
    composition); for many copies :func:`self_convolve`, which bounds the support by tail bounds
    first, is cheaper. FFT rounding can leave entries slightly below 0; they are set to 0, which
    only adds mass (a PLD's δ(ε) is non-decreasing in every probability).
    """
    count = _checked_count(count)
    size = count * (len(pmf.probs) - 1) + 1
    length = sp_fft.next_fast_len(size, real=True)
    spectrum = sp_fft.rfft(pmf.probs, length)
    power, base, exponent = None, spectrum, count
    while exponent:
        if exponent & 1:
            power = base if power is None else power * base
        exponent >>= 1
        if exponent:
            base = base * base
    probs = np.maximum(sp_fft.irfft(power, length)[:size], 0.0)
    infinity_mass = -math.expm1(count * math.log1p(-pmf.infinity_mass))
    composed = LossPmf(pmf.discretization, count * pmf.lower, probs, infinity_mass)
    return truncate_tails(composed, tail_mass_truncation)


def self_convolve(pmf: LossPmf, count: int,
                  tail_mass_truncation: float = TAIL_MASS_TRUNCATION) -> LossPmf:
    """``count`` copies of a pmf composed as dp-accounting's ``DensePLDPmf.self_compose`` does,
    through its public ``common.self_convolve``: the support is first cut to where tail bounds on
    the sum leave at most ``tail_mass_truncation`` outside, that mass goes to +∞ with
    1 − (1 − m)^count."""
    count = _checked_count(count)
    offset, probs = pld_common.self_convolve(pmf.probs, count, tail_mass_truncation)
    infinity_mass = (tail_mass_truncation
                     - math.expm1(count * math.log1p(-pmf.infinity_mass)))
    return LossPmf(pmf.discretization, pmf.lower * count + offset, np.array(probs),
                   infinity_mass)


def tree_compose(plds: Sequence[LossPmfs],
                 tail_mass_truncation: float = TAIL_MASS_TRUNCATION) -> LossPmfs:
    """Compose PLDs pairwise (a balanced tree, each FFT on arrays of similar size) with
    :func:`compose`: the composition of all of them, tails cut at every step."""
    level = list(plds)
    if not level:
        raise ValueError("tree_compose needs at least one PLD")
    while len(level) > 1:
        paired = [compose(a, b, tail_mass_truncation) for a, b in zip(level[0::2], level[1::2])]
        level = paired + ([level[-1]] if len(level) % 2 else [])
    return level[0]


__all__ = ["TAIL_MASS_TRUNCATION", "LossPmf", "LossPmfs", "compose",
           "compose_exactly", "connect_the_dots_pmf", "fft_power", "leaky_rr_pmf", "self_compose", "self_convolve",
           "tree_compose", "truncate_tails", "truncated"]
