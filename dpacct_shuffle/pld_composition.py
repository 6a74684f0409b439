"""Composing many dp-accounting PLDs: dense arrays, a balanced tree, tail truncation in numpy.

:func:`tree_compose` composes PLDs pairwise like ``PrivacyLossDistribution.compose`` (FFT
convolution of the loss pmfs, then the pessimistic tail truncation), with two changes that keep
every value and cost less when hundreds of rounds are composed:

* the pmfs are dense arrays before the first composition (:func:`dense`; dp-accounting converts a
  sparse pmf to a dense one, with a Python loop, at every composition it takes part in);
* the tail truncation is dp-accounting's rule (``pld_pmf._truncate_tails``, pessimistic estimate)
  evaluated with numpy (:func:`truncate_tails`) instead of a Python loop over the array: the
  largest prefix (suffix) whose running sum is ≤ τ/2 is removed, the prefix's mass is added to the
  first remaining loss (moving mass to a larger loss is pessimistic) and the suffix's mass goes to
  +∞. Running sums are ``np.cumsum``, the same sequential float sums as the loop, so the result is
  identical (tests/test_cohorts.py compares it with dp-accounting's own composition).

:func:`self_compose` composes a few copies of one PLD (rounds accounted at one anchor) by one FFT
power instead of pairwise compositions, and :func:`truncated` cuts one PLD's tails by the same rule
without composing it with the identity (a convolution with one point, by FFT in dp-accounting).
"""

from __future__ import annotations

import math

import numpy as np
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from scipy import fft as sp_fft

# dp-accounting's default tail truncation of one composition
TAIL_MASS_TRUNCATION = 1e-15


def dense(pld: pld_lib.PrivacyLossDistribution) -> pld_lib.PrivacyLossDistribution:
    """The same PLD with dense probability arrays (dp-accounting's ``to_dense_pmf``)."""
    remove = _dense_pmf(pld._pmf_remove)
    if pld._symmetric:
        return pld_lib.PrivacyLossDistribution(remove)
    return pld_lib.PrivacyLossDistribution(remove, _dense_pmf(pld._pmf_add))


def _dense_pmf(pmf: pld_pmf.PLDPmf) -> pld_pmf.DensePLDPmf:
    """A sparse pmf's dict {loss index: probability} as a dense array from its smallest index."""
    if isinstance(pmf, pld_pmf.DensePLDPmf):
        return pmf
    losses = np.fromiter(pmf._loss_probs.keys(), dtype=np.int64, count=pmf.size)
    probs = np.fromiter(pmf._loss_probs.values(), dtype=np.float64, count=pmf.size)
    lower = int(losses.min())
    array = np.zeros(int(losses.max()) - lower + 1)
    array[losses - lower] = probs
    return pld_pmf.DensePLDPmf(pmf._discretization, lower, array, pmf._infinity_mass,
                               pmf._pessimistic_estimate)


def _prefix_to_truncate(probs: np.ndarray, threshold: float) -> int:
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
        start, total, chunk = start + len(sums), sums[-1], 2 * chunk
    return len(probs)


# entries of the first chunk of running sums in _prefix_to_truncate (the cut tails are short)
_FIRST_CHUNK = 1024


def truncate_tails(pmf: pld_pmf.DensePLDPmf,
                   tail_mass_truncation: float = TAIL_MASS_TRUNCATION) -> pld_pmf.DensePLDPmf:
    """dp-accounting's pessimistic tail truncation of a dense pmf (module docstring)."""
    probs = pmf._probs
    threshold = tail_mass_truncation / 2.0
    left = _prefix_to_truncate(probs, threshold)
    right = max(len(probs) - _prefix_to_truncate(probs[::-1], threshold), left + 1)
    left_mass, right_mass = np.sum(probs[:left]), np.sum(probs[right:])
    kept = probs[left:right].copy()
    kept[0] += left_mass
    return pld_pmf.DensePLDPmf(pmf._discretization, pmf._lower_loss + left, kept,
                               pmf._infinity_mass + right_mass, pmf._pessimistic_estimate)


def truncated(pld: pld_lib.PrivacyLossDistribution,
              tail_mass_truncation: float = TAIL_MASS_TRUNCATION) -> pld_lib.PrivacyLossDistribution:
    """``identity().compose(pld, tail_mass_truncation)`` for a pessimistic PLD without the
    convolution (with the identity it is the pmf itself): dense pmfs with the tails cut by
    dp-accounting's rule, found on a sparse pmf's own entries (zeros between them change no
    running sum) so that only the kept range is ever made dense; the cut masses are summed with
    ``math.fsum``. Any other PLD is composed by dp-accounting itself."""
    pmfs = [pld._pmf_remove, pld._pmf_add]
    if not all(pmf._pessimistic_estimate for pmf in pmfs):
        return pld_lib.identity(pld._pmf_remove._discretization).compose(
            pld, tail_mass_truncation=tail_mass_truncation)
    remove = _truncated_pmf(pld._pmf_remove, tail_mass_truncation)
    if pld._symmetric:
        return pld_lib.PrivacyLossDistribution(remove)
    return pld_lib.PrivacyLossDistribution(remove, _truncated_pmf(pld._pmf_add, tail_mass_truncation))


def _truncated_pmf(pmf: pld_pmf.PLDPmf, tail_mass_truncation: float) -> pld_pmf.DensePLDPmf:
    if isinstance(pmf, pld_pmf.DensePLDPmf):
        losses = np.arange(pmf._lower_loss, pmf._lower_loss + len(pmf._probs))
        probs = pmf._probs
    else:
        losses = np.fromiter(pmf._loss_probs.keys(), dtype=np.int64, count=pmf.size)
        probs = np.fromiter(pmf._loss_probs.values(), dtype=np.float64, count=pmf.size)
        order = np.argsort(losses)
        losses, probs = losses[order], probs[order]
    threshold = tail_mass_truncation / 2.0
    left = _prefix_to_truncate(probs, threshold)
    right = max(len(probs) - _prefix_to_truncate(probs[::-1], threshold), left + 1)
    kept_losses = losses[left:right]
    array = np.zeros(int(kept_losses[-1] - kept_losses[0]) + 1)
    array[kept_losses - kept_losses[0]] = probs[left:right]
    array[0] += math.fsum(probs[:left].tolist())
    return pld_pmf.DensePLDPmf(pmf._discretization, int(kept_losses[0]), array,
                               pmf._infinity_mass + math.fsum(probs[right:].tolist()),
                               pmf._pessimistic_estimate)


def compose(first: pld_lib.PrivacyLossDistribution, second: pld_lib.PrivacyLossDistribution,
            tail_mass_truncation: float = TAIL_MASS_TRUNCATION) -> pld_lib.PrivacyLossDistribution:
    """``first.compose(second, tail_mass_truncation)`` for dense pessimistic PLDs, the truncation
    done by :func:`truncate_tails`; any other PLD is composed by dp-accounting itself."""
    pmfs = [first._pmf_remove, second._pmf_remove, first._pmf_add, second._pmf_add]
    if not all(isinstance(pmf, pld_pmf.DensePLDPmf) and pmf._pessimistic_estimate
               for pmf in pmfs):
        return first.compose(second, tail_mass_truncation)
    composed = first.compose(second, tail_mass_truncation=0.0)
    remove = truncate_tails(composed._pmf_remove, tail_mass_truncation)
    if composed._symmetric:
        return pld_lib.PrivacyLossDistribution(remove)
    return pld_lib.PrivacyLossDistribution(
        remove, truncate_tails(composed._pmf_add, tail_mass_truncation))


def self_compose(pld: pld_lib.PrivacyLossDistribution, count: int,
                 tail_mass_truncation: float = TAIL_MASS_TRUNCATION
                 ) -> pld_lib.PrivacyLossDistribution:
    """``count`` ≥ 1 copies of a dense pessimistic PLD composed at once: one FFT of each pmf, its
    ``count``-th power (by repeated squaring), one inverse FFT, then :func:`truncate_tails`.

    The FFT of a convolution is the product of the FFTs, so this is the ``count``-fold
    convolution that ``count − 1`` pairwise compositions compute, on an FFT length
    (``scipy.fft.next_fast_len``) covering its whole support — no wrap-around — and cut once
    instead of after every composition (each cut only adds pessimistic mass, so the result
    differs from the pairwise one by float rounding and by less truncated mass; tests/test_cohorts.py
    compares it with dp-accounting's composition). The mass at +∞ is 1 − (1 − m)^count. Cheaper
    than pairwise composition for a few copies (two FFTs of the final length instead of three per
    composition); for many copies dp-accounting's ``self_compose``, which bounds the support by tail
    bounds first, is cheaper. FFT rounding can leave entries slightly below 0; they are set to 0,
    which only adds mass (a PLD's δ(ε) is non-decreasing in every probability).
    """
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
        raise ValueError(f"count must be an integer >= 1, got {count!r}")
    if count == 1:
        return dense(pld)
    remove = _self_compose_pmf(_dense_pmf(pld._pmf_remove), count, tail_mass_truncation)
    if pld._symmetric:
        return pld_lib.PrivacyLossDistribution(remove)
    return pld_lib.PrivacyLossDistribution(
        remove, _self_compose_pmf(_dense_pmf(pld._pmf_add), count, tail_mass_truncation))


def _self_compose_pmf(pmf: pld_pmf.DensePLDPmf, count: int,
                      tail_mass_truncation: float) -> pld_pmf.DensePLDPmf:
    """The pmf of :func:`self_compose`."""
    size = count * (len(pmf._probs) - 1) + 1
    length = sp_fft.next_fast_len(size, real=True)
    spectrum = sp_fft.rfft(pmf._probs, length)
    power, base, exponent = None, spectrum, count
    while exponent:
        if exponent & 1:
            power = base if power is None else power * base
        exponent >>= 1
        if exponent:
            base = base * base
    probs = np.maximum(sp_fft.irfft(power, length)[:size], 0.0)
    infinity_mass = -math.expm1(count * math.log1p(-pmf._infinity_mass))
    composed = pld_pmf.DensePLDPmf(pmf._discretization, count * pmf._lower_loss, probs,
                                   infinity_mass, pmf._pessimistic_estimate)
    return truncate_tails(composed, tail_mass_truncation)


def tree_compose(plds: list[pld_lib.PrivacyLossDistribution]) -> pld_lib.PrivacyLossDistribution:
    """Compose PLDs pairwise (a balanced tree, each FFT on arrays of similar size) with
    :func:`compose`: the composition of all of them, tails cut by 1e-15 at every step."""
    plds = [dense(pld) for pld in plds]
    while len(plds) > 1:
        paired = [compose(a, b) for a, b in zip(plds[0::2], plds[1::2])]
        plds = paired + ([plds[-1]] if len(plds) % 2 else [])
    return plds[0]


__all__ = ["TAIL_MASS_TRUNCATION", "compose", "dense", "self_compose", "tree_compose", "truncate_tails",
           "truncated"]
