"""Two-input randomizers that are sampled binary randomized response in disguise: their shuffled
rounds are exact (docs/theory.md, "Binary reduction of two-input randomizers").

Setting. A randomizer R on the inputs {0, 1} whose outputs split into three classes:

* Y₊, where R(0)(y) = p·R(1)(y); Y₋, where R(1)(y) = p·R(0)(y); Y₀, where R(0)(y) = R(1)(y);
* symmetric: R(0)(Y₊) = R(1)(Y₋) (then R(0)(Y₋) = R(1)(Y₊) and R(0)(Y₀) = R(1)(Y₀) = 1 − ρ).

RAPPOR on a domain of two values is one (bits (1, 0) and (0, 1) are Y₊ and Y₋, (0, 0) and (1, 1)
are Y₀; p = e^ε0, ρ = a² + b² with a = 1 − b, b = 1/(e^{ε0/2} + 1)), and so is optimized unary
encoding on two values (p = e^ε0, ρ = 1/2).

Theorem. For every number n of users and every configuration of the others' inputs, the shuffled
output of n users of R has the same privacy profile (both directions, every ε) as the
Poisson-sampled shuffled round of binary randomized response with ε0 = ln p, population n and
sampling probability ρ (the number of reports visible).

Proof. Let c(y) ∈ {+, −, ⊥} be the class of an output (⊥ for Y₀). A user holding x draws class +
with probability R(x)(Y₊), − with R(x)(Y₋) and ⊥ with 1 − ρ; for x = 0 that is ρ·p/(p + 1),
ρ/(p + 1) and 1 − ρ (R(0)(Y₋) = R(1)(Y₊) = R(0)(Y₊)/p), for x = 1 the same with + and −
swapped: "take part with probability ρ, then binary RR(ln p) of x" with + standing for 0. Given
its class, a user's output has the law R(x)(· | class), which does not depend on x (the ratio
R(0)(y)/R(1)(y) is constant on each class). So the release of n users is obtained from the
shuffled multiset of their classes by drawing, for each member of the multiset, an output from
the (input-free) law of its class — a post-processing — and the multiset of classes is a function
of the release. Both directions of post-processing preserve every hockey-stick divergence, so the
two rounds have equal profiles. □

Client sampling (the void view of :mod:`dpacct_shuffle.sampling`): every user sends
γ·R(x) + (1 − γ)·⊥; ⊥ joins Y₀ and the randomizer keeps the structure with ρ' = γ·ρ, so a
Poisson-sampled round of R is the sampled binary-RR round with rate γρ. This holds for
replace-one neighbours only: under add/remove-one the victim's Y₀ outputs and its absence differ.

Floating point. The round's δ is non-decreasing in ρ (a round at ρ1 < ρ2 is the round at ρ2 with
every report independently replaced by ⊥ with probability 1 − ρ1/ρ2, a post-processing), so ρ is
rounded up (:func:`~dpacct_shuffle.core.rounding.ratio_up`, by ``REPORTING_ULPS`` ulps: the catalog
computes it with fewer roundings), and so is γρ; ε0 is the entry's own parameter (the
binary part's ratio is e^ε0 by construction). The values are the certified upper ends of
:class:`~dpacct_shuffle.randomizers.binary_rr_sampled.SampledBinaryRRProfile`, where that profile
is tractable (:func:`~dpacct_shuffle.randomizers.binary_rr_sampled.is_tractable`); elsewhere the
bound is the trivial δ ≤ 1 (it enters minima only).
"""

from __future__ import annotations

import math

from dpacct_shuffle.core.rounding import ratio_up
from dpacct_shuffle.core.validation import check_epsilon0, check_range
from dpacct_shuffle.randomizers.base import PairBound
from dpacct_shuffle.randomizers.binary_rr_sampled import is_tractable, sampled_binary_rr_profile

# relative rounding of ρ: up to this many ulps (exp, sums, quotients and squares of the catalog)
REPORTING_ULPS = 16


class BinaryReductionUpper(PairBound):
    """Exact shuffled round of a two-input randomizer with the binary structure of the module
    docstring: the sampled binary-RR round of ``epsilon0`` at rate ``reporting`` = ρ (rounded
    up), for n users; a fallback of the catalog entries it describes (δ ≤ 1 where the exact
    profile is not tractable)."""

    def __init__(self, epsilon0: float, reporting: float) -> None:
        self.epsilon0 = check_epsilon0(epsilon0)
        self.reporting = min(1.0, ratio_up(check_range("reporting", reporting, 0.0, 1.0,
                                                       low_open=True), REPORTING_ULPS))

    def sampled(self, sampling_probability: float) -> float:
        """ρ' = γ·ρ of the Poisson-sampled round (module docstring), rounded up."""
        return min(1.0, ratio_up(sampling_probability * self.reporting))

    def delta(self, epsilon: float, n: int) -> float:
        if self.reporting >= 1.0 or not is_tractable(n, self.reporting):
            return 1.0
        return sampled_binary_rr_profile(self.epsilon0, n, self.reporting).delta(epsilon)

    def epsilon(self, delta: float, n: int) -> float:
        if self.reporting >= 1.0 or not is_tractable(n, self.reporting):
            return math.inf
        return sampled_binary_rr_profile(self.epsilon0, n, self.reporting).epsilon(delta)

    def __repr__(self) -> str:
        return f"BinaryReductionUpper(epsilon0={self.epsilon0!r}, reporting={self.reporting!r})"


__all__ = ["BinaryReductionUpper", "REPORTING_ULPS"]
