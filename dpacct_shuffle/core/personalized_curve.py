"""The personalized shuffle bound at every ε at once (docs/theory.md, "Users with different
randomizers", its every-ε form).

For one victim pair, :func:`dpacct_shuffle.core.personalized.pair_delta` bounds δ(ε) by
min(f_ε(0), E f_ε(B) + V·f_ε(0)) over candidate binomials B ~ Bin(N', τ), where E f_ε(B) is the
homogeneous neutral-aware pair of N' + 1 users at rates τ·π and V does not depend on ε. When the
proportions have π0 = π1 that pair is a VariationRatio with equal clone rates, whose batched
curve (:func:`~dpacct_shuffle.core.batched.batched_delta`) is at least its divergence at every
ε ≥ 0. So

    δ(ε) ≤ min(f_ε(0), min_B [curve_B(ε) + V_B·f_ε(0)])

at every ε (every candidate's term is a valid bound by the claim of that section, and a minimum
of valid bounds is valid), read for all ε from one curve per candidate. The VariationRatio takes
the clone rate τπ0 and the share τπK rounded down (the bound is non-increasing in the rates: a
lower rate is a weaker domination R_j ≥ t_j·S, still true) and the victim's own neutral mass w as
the neutral weight, so its pair is the homogeneous pair with those rates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dpacct_shuffle.core.batched import batched_delta, supports_batched_delta
from dpacct_shuffle.core.bound import VariationRatio
from dpacct_shuffle.core.personalized import PersonalizedPair, candidates
from dpacct_shuffle.core.problem import UNIT_ROUNDOFF

_DOWN = 1.0 - 4.0 * UNIT_ROUNDOFF
# moment-matched candidates read: at most this many, of V at most _MAX_VIOLATION
_MATCHED = 2
_MAX_VIOLATION = 1e-3


def homogeneous_variation_ratio(pair: PersonalizedPair, tau: float) -> VariationRatio | None:
    """The homogeneous pair at rates τ·π (rates rounded down) as a VariationRatio the batched
    curve supports, or None (π0 ≠ π1, p = ∞, no clones, or a clone rate above pα)."""
    pi0, pi1, pik = pair.proportions
    if pi0 != pi1 or not 0.0 < pi0 or not 0.0 < tau or math.isinf(pair.p) or pair.beta <= 0.0:
        return None
    rate = tau * pi0 * _DOWN
    q = pair.p_alpha / rate * (1.0 + 4.0 * UNIT_ROUNDOFF)  # r = pα/q ≤ τπ0
    if not 1.0 <= q < math.inf:
        return None
    share = tau * pik * _DOWN
    parts = ((pair.neutral_mass, share),) if share > 0.0 and pair.neutral_mass > 0.0 else None
    vr = (VariationRatio(pair.p, pair.beta, q, neutral_parts=parts) if parts is not None
          else VariationRatio(pair.p, pair.beta, q, neutral_share=0.0))
    return vr if supports_batched_delta(vr) else None


def local_deltas(pair: PersonalizedPair, epsilons: np.ndarray) -> np.ndarray:
    """f_ε(0) = α(p − e^ε)⁺ at every ε (at most β, 0 from ε0 on), rounded up."""
    if pair.beta == 0.0:
        return np.zeros(len(epsilons))
    if math.isinf(pair.p):
        return np.full(len(epsilons), pair.beta)
    value = np.maximum(pair.alpha * (pair.p - np.exp(epsilons)), 0.0) * (1.0 + 16.0 * UNIT_ROUNDOFF)
    return np.where(epsilons >= pair.epsilon0, 0.0, np.minimum(pair.beta, value))


def pair_curve_deltas(pair: PersonalizedPair, epsilons: np.ndarray,
                      lowering: float) -> np.ndarray | None:
    """min(f_ε(0), min_B [curve_B(ε) + V_B·f_ε(0)]) at every ε ≥ 0 of ``epsilons`` (module
    docstring), or None when some candidate's pair has no curve."""
    local = local_deltas(pair, epsilons)
    pi0, pi1, _ = pair.proportions
    if pair.beta == 0.0 or pi0 <= 0.0 or pi1 <= 0.0:
        return local
    best = local.copy()
    threshold, *matched = candidates(pair.others)
    # the threshold and the first few moment-matched binomials of small V (the point rule uses
    # one of them at each ε; any subset is valid, this one steers cost and tightness only)
    chosen = [threshold, *[c for c in matched if c.violation <= _MAX_VIOLATION][:_MATCHED]]
    for candidate in chosen:
        if candidate.trials == 0 or candidate.tau == 0.0:
            continue  # E f(B) = f(0): the local term already
        vr = homogeneous_variation_ratio(pair, candidate.tau)
        if vr is None:
            return None
        curve = batched_delta(vr, candidate.trials + 1, lowering).deltas(epsilons)
        best = np.minimum(best, curve + candidate.violation * local)
    result: np.ndarray = np.minimum(local, best * (1.0 + 4.0 * UNIT_ROUNDOFF))
    return result


def pairs_curve_deltas(pairs: Sequence[PersonalizedPair], epsilons: np.ndarray,
                       lowering: float) -> np.ndarray | None:
    """Maximum over victim pairs of :func:`pair_curve_deltas` (None: some pair has no curve)."""
    eps = np.asarray(epsilons, dtype=np.float64)
    value = np.zeros(len(eps))
    for pair in pairs:
        curve = pair_curve_deltas(pair, eps, lowering)
        if curve is None:
            return None
        value = np.maximum(value, curve)
    return value


__all__ = ["homogeneous_variation_ratio", "local_deltas", "pair_curve_deltas",
           "pairs_curve_deltas"]
