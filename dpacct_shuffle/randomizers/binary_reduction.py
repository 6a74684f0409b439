"""Two-input randomizers bounded by sampled binary randomized response, exactly when they are one
in disguise (docs/theory.md, "Binary reduction of two-input randomizers").

Setting. A randomizer R on the inputs {0, 1} with total variation β = TV(R(0), R(1)) > 0 and
ratio bound p = max_y max(R(0)(y)/R(1)(y), R(1)(y)/R(0)(y)) < ∞, ε0 = ln p. Since
β ≤ tanh(ε0/2) for every ε0-LDP pair, ρ = β/tanh(ε0/2) lies in (0, 1]. Write M for the
randomizer "with probability ρ report binary RR(ε0) of the input, otherwise ⊥".

Theorem. There is a channel K with R(x) = K(M(x)) for x = 0, 1. Hence for every number n of users
and every configuration of the others' inputs, the shuffled round of n users of R is a
post-processing of the Poisson-sampled shuffled binary-RR round (ε0, population n, sampling
probability ρ, the number of reports visible), and its δ(ε) is at most that round's. It is equal
when R has the class structure below (RAPPOR and optimized unary encoding on two values).

Proof. For a pair (P, Q) write H(x) = Σ_y (P(y) − x·Q(y))⁺. For R (either order of the rows),
H_R is convex and non-increasing in x, H_R(1) = β and H_R(x) = 0 for x ≥ p. For M,
H_M(x) = ρ·(a − x(1 − a))⁺ with a = p/(p + 1) (the ⊥ parts cancel): linear on [1, p] with
H_M(1) = ρ·tanh(ε0/2) = β and H_M(p) = 0. A convex function below a linear one at both ends of an
interval stays below it inside, so H_R ≤ H_M on x ≥ 1 in both orders; for x < 1,
H(x) = 1 − x + x·H_reverse(1/x) carries this over. By Blackwell's theorem for two-point
experiments (domination of all hockey-stick divergences in both orders), (R(0), R(1)) is a
garbling of (M(0), M(1)): R(x) = K(M(x)). Every user holds 0 or 1, so applying K to each message
of the shuffled M-round gives the shuffled R-round; the M-round is the sampled binary-RR round
(⊥ = no report). □

Equality (class structure). If the outputs split into Y₊ (R(0)(y) = p·R(1)(y)), Y₋
(R(1)(y) = p·R(0)(y)) and Y₀ (R(0)(y) = R(1)(y)) with R(0)(Y₊) = R(1)(Y₋), then
ρ = R(x)(Y₊ ∪ Y₋) and the converse holds too: map each output to its class (+, − or ⊥); a
user holding 0 draws +, −, ⊥ with probabilities ρp/(p + 1), ρ/(p + 1), 1 − ρ (holding 1: + and
− swapped), i.e. an M-message, and given the class the output's law R(x)(· | class) does not
depend on x. So the two rounds are post-processings of each other and have equal profiles.
RAPPOR on two values: bits (1, 0), (0, 1) are Y₊, Y₋ and (0, 0), (1, 1) are Y₀, p = e^ε0,
ρ = a² + b² (a = 1 − b, b = 1/(e^{ε0/2} + 1)); OUE on two values: p = e^ε0, ρ = 1/2.

Client sampling (the void view of :mod:`dpacct_shuffle.sampling`): every user sends
γ·R(x) + (1 − γ)·⊥, whose total variation is γβ with the same p (the ⊥ column has ratio 1), so
ρ becomes γρ: the Poisson-sampled round of R is bounded by the sampled binary-RR round at rate
γρ. Replace-one neighbours only (under add/remove-one the victim is absent in one world).

Floating point. The binary-RR round's δ is non-decreasing in ρ (the round at ρ1 < ρ2 is the round
at ρ2 with every report independently replaced by ⊥ with probability 1 − ρ1/ρ2) and in ε0 (binary
RR(ε) is a garbling of binary RR(ε') for ε ≤ ε'), and ρ = β/tanh(ε/2) for any ε ≥ ε0 is valid by
the same proof. So p and β are rounded up, ε0 = ln p up, tanh(ε0/2) down and ρ up (by
``ROUNDING_ULPS`` ulps at each step, more than the operations used). The values are the certified
upper ends of :class:`~dpacct_shuffle.randomizers.binary_rr_sampled.SampledBinaryRRProfile`
(ρ < 1) or of :class:`~dpacct_shuffle.randomizers.binary_rr_curve.BinaryRRExactUpper` (ρ = 1),
where the sampled profile is tractable
(:func:`~dpacct_shuffle.randomizers.binary_rr_sampled.is_tractable`); elsewhere δ ≤ 1, a
fallback entering minima only.
"""

from __future__ import annotations

import math

import numpy as np

from dpacct_shuffle.core.rounding import ratio_down, ratio_up
from dpacct_shuffle.core.validation import check_epsilon0, check_range
from dpacct_shuffle.randomizers.base import PairBound, Randomizer
from dpacct_shuffle.randomizers.binary_rr_curve import BinaryRRExactUpper
from dpacct_shuffle.randomizers.binary_rr_sampled import is_tractable, sampled_binary_rr_profile

# each rounded quantity is moved this many ulps in the safe direction
ROUNDING_ULPS = 8
# the exact binary-RR profiles accept ε0 up to this
_MAX_EPSILON0 = 30.0


class BinaryReductionUpper(PairBound):
    """The shuffled round of a two-input randomizer bounded by the sampled binary-RR round of
    ``epsilon0`` at rate ``reporting`` = ρ (module docstring), for n users: a fallback of every
    randomizer with a two-row matrix (:func:`attach_binary_reduction`)."""

    def __init__(self, epsilon0: float, reporting: float) -> None:
        self.epsilon0 = check_epsilon0(epsilon0)
        self.reporting = check_range("reporting", reporting, 0.0, 1.0, low_open=True)
        self._unsampled = BinaryRRExactUpper(self.epsilon0) if self.reporting == 1.0 else None

    def sampled(self, sampling_probability: float) -> float:
        """ρ' = γ·ρ of the Poisson-sampled round (module docstring), rounded up."""
        return min(1.0, ratio_up(sampling_probability * self.reporting, ROUNDING_ULPS))

    def delta(self, epsilon: float, n: int) -> float:
        if self._unsampled is not None:
            return self._unsampled.delta(epsilon, n)
        if not is_tractable(n, self.reporting):
            return 1.0
        return sampled_binary_rr_profile(self.epsilon0, n, self.reporting).delta(epsilon)

    def epsilon(self, delta: float, n: int) -> float:
        if self._unsampled is not None:
            return self._unsampled.epsilon(delta, n)
        if not is_tractable(n, self.reporting):
            return math.inf
        return sampled_binary_rr_profile(self.epsilon0, n, self.reporting).epsilon(delta)

    def __repr__(self) -> str:
        return f"BinaryReductionUpper(epsilon0={self.epsilon0!r}, reporting={self.reporting!r})"


def _up(value: float) -> float:
    return ratio_up(value, ROUNDING_ULPS)


def binary_reduction(matrix: np.ndarray) -> BinaryReductionUpper | None:
    """The bound of the module docstring for a validated two-row matrix, None when it does not
    apply (not two rows, identical rows, a zero against a nonzero entry, or ε0 > 30)."""
    rows = np.asarray(matrix, dtype=float)
    if rows.ndim != 2 or rows.shape[0] != 2:
        return None
    first, second = rows
    if np.any((first > 0.0) != (second > 0.0)):
        return None  # p = ∞
    support = first > 0.0
    with np.errstate(over="ignore"):  # a ratio above the float range is ∞ (p = ∞ below)
        ratio = float(np.max(np.maximum(first[support] / second[support],
                                        second[support] / first[support])))
    # both one-sided variations: float rows need not sum to exactly 1, and then
    # Σ(R(0) − R(1))⁺ ≠ Σ(R(1) − R(0))⁺; the proof needs H_R(1) ≤ β in both orders
    beta = max(math.fsum(np.maximum(first - second, 0.0).tolist()),
               math.fsum(np.maximum(second - first, 0.0).tolist()))
    if not ratio > 1.0 or not beta > 0.0:
        return None
    epsilon0 = _up(math.log(_up(ratio)))
    if epsilon0 > _MAX_EPSILON0:
        return None
    tanh_down = ratio_down(math.tanh(epsilon0 / 2.0), ROUNDING_ULPS)
    return BinaryReductionUpper(epsilon0, min(1.0, _up(_up(beta) / tanh_down)))


def attach_binary_reduction(randomizer: Randomizer) -> Randomizer:
    """``randomizer`` with :func:`binary_reduction` of its matrix added to its fallbacks (a new
    Randomizer), unless it has no matrix or already holds an exact binary-RR bound."""
    if randomizer.matrix is None or any(isinstance(bound, (BinaryRRExactUpper, BinaryReductionUpper))
                                        for bound in randomizer.fallbacks):
        return randomizer
    bound = binary_reduction(randomizer.matrix)
    if bound is not None:
        return randomizer.with_fallbacks(bound)
    return randomizer


__all__ = ["BinaryReductionUpper", "ROUNDING_ULPS", "attach_binary_reduction", "binary_reduction"]
