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
"""

from __future__ import annotations

import numpy as np
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as pld_lib

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
    """Length of the longest prefix whose running sum stays ≤ ``threshold``."""
    above = np.cumsum(probs) > threshold
    return int(np.argmax(above)) if above.any() else len(probs)


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


def tree_compose(plds: list[pld_lib.PrivacyLossDistribution]) -> pld_lib.PrivacyLossDistribution:
    """Compose PLDs pairwise (a balanced tree, each FFT on arrays of similar size) with
    :func:`compose`: the composition of all of them, tails cut by 1e-15 at every step."""
    plds = [dense(pld) for pld in plds]
    while len(plds) > 1:
        paired = [compose(a, b) for a, b in zip(plds[0::2], plds[1::2])]
        plds = paired + ([plds[-1]] if len(plds) % 2 else [])
    return plds[0]


__all__ = ["TAIL_MASS_TRUNCATION", "compose", "dense", "tree_compose", "truncate_tails"]
