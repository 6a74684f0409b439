"""(ε0, δ0)-LDP local randomizers in the shuffle model (docs/theory.md, "Approximate local
randomizers").

Two bounds, for two kinds of randomizers:

* :func:`approximate` — a pure ε0-LDP randomizer R that, with probability δ0 independent of the
  input, may instead release anything (its input, in the worst case):
  R_δ0(x) = (1 − δ0)·R(x) + δ0·E(x) for arbitrary laws E(x). Such a randomizer is (ε0, δ0)-LDP.
  Its shuffled profile is bounded by (:class:`LeakyMixtureBound`)

      δ(ε) ≤ δ0 + (1 − δ0)·E_M[δ_R(ε; M + 1)],      M ~ Bin(n − 1, 1 − δ0),

  with δ_R the certified shuffled bound of R: the leak costs δ0 **once** (not n·δ0), plus the
  blanket of the few users who leaked.
* :func:`approximate_ldp` — the class of *all* (ε0, δ0)-LDP randomizers, bounded by the theorem of
  Feldman, McMillan and Talwar ("Hiding Among the Clones", FOCS 2021, arXiv:2012.12803,
  Theorem 3.8) with the clone pair of their reduction evaluated exactly (:class:`CloneTVBound`):

      δ(ε) ≤ max(δ_clone(ε), 2·e^{−n·e^{−ε0}/16}) + (e^ε + 1)(1 + e^{−ε0}/2)·n·δ0.

:func:`fmt_theorem_3_8` is the theorem's closed form itself, for comparison.
"""

from __future__ import annotations

import functools
import math
from typing import Callable

import numpy as np
from dpacct_shuffle.core.problem import stats  # scipy.stats, imported on first use

from dpacct_shuffle.core.bound import VariationRatio
from dpacct_shuffle.core.rounding import step_down as _down
from dpacct_shuffle.core.rounding import step_up as _up
from dpacct_shuffle.core.search import epsilon_search
from dpacct_shuffle.core.validation import (check_delta, check_epsilon, check_epsilon0,
                                            check_num_users, check_range)
from dpacct_shuffle.randomizers.base import PairBound, Randomizer
from dpacct_shuffle.randomizers.catalog import binary_rr
from dpacct_shuffle.randomizers.lower_bounds import InstanceLowerBound, LowerBoundInstance

#: When fewer values of the leak count M lie above its tail quantile, each is summed on its own.
EXACT_LEAK_CELLS = 8
#: Lower tail of M charged at the victim's local bound (its mass is added, rounded up).
LEAK_TAIL = 1e-15
#: Number of bands of M between the tail quantile and n − 1 (each charged at its lowest M).
LEAK_BANDS = 2
#: TV shares tried by :meth:`CloneTVBound.epsilon`: these multiples of the TV term at ε = 0
#: (the TV term grows with e^ε, so the share must leave it room), at most TV_SHARE_MAX of δ.
TV_SHARE_FACTORS = (1.5, 3.0)
TV_SHARE_MAX = 0.9
_EPSILON_RTOL = 1e-4
_MASS_SLACK = 1e-9  # relative error allowed for scipy's binomial pmf/cdf


def check_delta0(value: object, name: str = "delta0") -> float:
    """δ0 ∈ [0, 1): the local δ of an (ε0, δ0)-LDP randomizer (δ0 = 1 guarantees nothing)."""
    return check_range(name, value, 0.0, 1.0, high_open=True)


def _search_epsilon(delta_upper: Callable[[float], float], target: float, cap: float,
                    guess: float) -> float:
    """Smallest ε ≤ cap (relative tolerance) with delta_upper(ε) ≤ target; inf if even the cap
    fails (the profile has a floor above the target). delta_upper is non-increasing."""
    if delta_upper(cap) > target:
        return math.inf
    start = delta_upper(0.0)
    if start <= target:
        return 0.0
    return epsilon_search(delta_upper, target, start, cap, min(max(guess, 1e-9), 0.5 * cap),
                          _EPSILON_RTOL)


# -- randomizers that leak with probability δ0 ----------------------------------------------------
class LeakyMixtureBound(PairBound):
    """Shuffled bound of R_δ0(x) = (1 − δ0)·R(x) + δ0·E(x), R pure ε0-LDP, E arbitrary.

    δ(ε) ≤ δ0 + (1 − δ0)·Σ_m P[M = m]·δ_R(ε; m + 1), M ~ Bin(n − 1, 1 − δ0).

    Proof. Draw every user's report in two steps: a leak coin (probability δ0, the same for every
    input), then R(x) if it did not leak and E(x) if it did. The coins have the same law under
    both neighbouring datasets, so by joint convexity of the hockey-stick divergence δ(ε) is at
    most the average over the coins of the divergence given them. Given that the victim leaked
    (probability δ0) the divergence is at most 1. Given that it did not and that m of the others
    did not either, the shuffled multiset is a function of the shuffled reports of those m + 1
    users — m + 1 users of R, the victim among them — and of the leaked users' reports, whose
    law does not depend on the victim's input: by the data-processing inequality the divergence
    is at most δ_R(ε; m + 1), the certified bound of R for m + 1 users, valid whatever the
    others' inputs. □

    Evaluation: m below the :data:`LEAK_TAIL` quantile is charged δ_R(ε; 1) (the victim alone);
    above it every m is summed on its own when fewer than :data:`EXACT_LEAK_CELLS` values remain,
    else they are grouped in :data:`LEAK_BANDS` bands, each charged at its lowest m (δ_R is non-increasing in the number of users,
    docs/theory.md, "Monotonicity in n"). Masses are scipy's binomial pmf/cdf, raised by a
    relative 1e-9; the total is rounded up.
    """

    def __init__(self, inner: Randomizer, delta0: float) -> None:
        self.inner = inner
        self.delta0 = check_delta0(delta0)
        summary = inner.variation_ratio
        self.inner_epsilon0 = summary.epsilon0 if isinstance(summary, VariationRatio) else math.inf

    def _inner_delta(self, epsilon: float, users: int) -> float:
        return self.inner.shuffled(users, lower_bound_max_users=1).delta(epsilon)

    def _bands(self, others: int) -> list[tuple[int, float]]:
        """(lowest m of the band, P[M in band] rounded up); m = 0 carries the lower tail."""
        law = stats.binom(others, 1.0 - self.delta0)
        low = max(int(law.ppf(LEAK_TAIL)), 0)
        while low > 0 and float(law.cdf(low - 1)) * (1.0 + _MASS_SLACK) > LEAK_TAIL:
            low -= 1
        if others - low < EXACT_LEAK_CELLS:
            edges = list(range(low, others + 1))
        else:
            edges = sorted({low + (others - low) * k // LEAK_BANDS for k in range(LEAK_BANDS)})
        bands = [(0, float(law.cdf(low - 1)) * (1.0 + _MASS_SLACK))] if low > 0 else []
        for start, stop in zip(edges, edges[1:] + [others + 1]):
            mass = float(law.sf(start - 1)) - float(law.sf(stop - 1))
            # sf is accurate to a few ulps of 1: an absolute 1e-15 covers the difference's error
            bands.append((start, min(1.0, max(mass, 0.0) * (1.0 + _MASS_SLACK) + 1e-15)))
        return bands

    def delta(self, epsilon: float, n: int) -> float:
        eps = check_epsilon(epsilon)
        users = check_num_users(n)
        if self.delta0 == 0.0:
            return self._inner_delta(eps, users)
        if eps >= self.inner_epsilon0:  # δ_R(ε) = 0: the (ε0, δ0) guarantee itself, unrounded
            return self.delta0
        total = math.fsum(mass * self._inner_delta(eps, m + 1) for m, mass in self._bands(users - 1))
        return min(1.0, _up(self.delta0 + (1.0 - self.delta0) * total * (1.0 + 1e-12)))

    def epsilon(self, delta: float, n: int) -> float:
        target = check_delta(delta)
        users = check_num_users(n)
        if self.delta0 == 0.0:
            return self.inner.shuffled(users, lower_bound_max_users=1).epsilon(target)
        if target < self.delta0:
            return math.inf  # every ε has δ ≥ δ0 (the victim's leak)
        cap = self.inner_epsilon0
        if target == self.delta0:  # δ(cap) = δ0 exactly (see delta): the cap is certified
            return cap
        guess = self.inner.shuffled(users, lower_bound_max_users=1).epsilon(
            (target - self.delta0) / (1.0 - self.delta0))
        return _search_epsilon(lambda e: self.delta(e, users), target, cap, guess)

    def __repr__(self) -> str:
        return f"LeakyMixtureBound({self.inner!r}, delta0={self.delta0!r})"


class _RevealedInput:
    """The instance "others all holding x¹": a message "x⁰ revealed" appears with probability δ0
    under x⁰ and never under x¹, so δ(ε) ≥ δ0 at every ε."""

    def __init__(self, delta0: float) -> None:
        self.delta0 = delta0

    def delta(self, epsilon: float) -> float:
        check_epsilon(epsilon)
        return self.delta0

    def max_loss(self) -> float:
        return math.inf


class _NoLeak:
    """An instance of the inner randomizer seen when no user leaked (probability ``no_leak`` in
    both worlds): δ(ε) ≥ no_leak·δ_instance(ε), rounded down."""

    def __init__(self, instance: LowerBoundInstance, no_leak: float) -> None:
        self.instance = instance
        self.no_leak = no_leak

    def delta(self, epsilon: float) -> float:
        return _down(self.no_leak * self.instance.delta(epsilon))

    def max_loss(self) -> float:
        return self.instance.max_loss()


class LeakyInstanceLowerBound(InstanceLowerBound):
    """Certified lower bound for R_δ0 with E(x) = "reveal x" (a message tagged with the input).

    Two explicit instances (docs/theory.md, "Approximate local randomizers"):

    * others all holding x¹: a message "x⁰ revealed" appears with probability δ0 under x⁰ and never
      under x¹, so δ(ε) ≥ δ0 for every ε;
    * the inner randomizer's instance: mapping every outcome with a revealed message to one
      symbol (post-processing; no user leaked with probability (1 − δ0)^n in both worlds) gives
      δ(ε) ≥ (1 − δ0)^n·δ_inner(ε).

    ``pairs`` lists them one by one (the inner instances scaled by (1 − δ0)^n), so the bound
    combines with further instances like any :class:`InstanceLowerBound`.
    """

    def __init__(self, inner: InstanceLowerBound | None, delta0: float, n: int) -> None:
        leak = check_delta0(delta0)
        no_leak = _down(math.exp(check_num_users(n) * math.log1p(-leak)))
        inner_pairs = () if inner is None else tuple(_NoLeak(pair, no_leak) for pair in inner.pairs)
        super().__init__([_RevealedInput(leak), *inner_pairs],
                         f"leak of the input with probability {leak!r}"
                         + ("" if inner is None else f"; {inner.description}"))
        self.inner = inner
        self.delta0 = leak
        self.no_leak = no_leak

    def epsilon(self, delta: float) -> float:
        """ε(δ) of the two instances in closed form: ∞ below δ0, else the inner bound's ε at
        δ/(1 − δ0)^n (rounded up)."""
        target = check_delta(delta)
        if target < self.delta0:
            return math.inf
        if self.inner is None or self.no_leak == 0.0 or target >= self.no_leak:
            return 0.0
        return self.inner.epsilon(min(1.0, _up(target / self.no_leak)))


def _leaky_lower(inner: Randomizer, delta0: float, n: int) -> LeakyInstanceLowerBound:
    return LeakyInstanceLowerBound(inner.lower_bound(n), delta0, n)


def approximate(randomizer: Randomizer, delta0: float) -> Randomizer:
    """``randomizer`` (pure ε0-LDP), except that with probability δ0 its report may be anything.

    R_δ0(x) = (1 − δ0)·R(x) + δ0·E(x) with E(x) arbitrary (worst case: the input itself); R_δ0 is
    (ε0, δ0)-LDP. Upper bound: :class:`LeakyMixtureBound` (valid for every E). Lower bound: E = the
    input, :class:`LeakyInstanceLowerBound`. δ0 = 0 gives the bounds of ``randomizer``.
    """
    if not isinstance(randomizer, Randomizer):
        raise TypeError(f"randomizer must be a Randomizer (a catalog entry or from_matrix), "
                        f"got {type(randomizer).__name__}")
    leak = check_delta0(delta0)
    bound = LeakyMixtureBound(randomizer, leak)
    if not math.isfinite(bound.inner_epsilon0):
        raise ValueError(f"randomizer must be pure eps0-LDP (a finite epsilon0), got {randomizer!r}")
    result = Randomizer("approximate", {"randomizer": randomizer, "delta0": leak}, [bound],
                        variation_ratio=None,
                        lower_bound=functools.partial(_leaky_lower, randomizer, leak),
                        notes=f"leaks with probability {leak!r}; (eps0, delta0)-LDP")
    result._record_origin(functools.partial(approximate, randomizer, leak),
                          ("approximate", randomizer, leak))
    return result


# -- every (ε0, δ0)-LDP randomizer: Feldman, McMillan and Talwar, Theorem 3.8 ------------------------
def fmt_clone_pair(epsilon0: float) -> VariationRatio:
    """The clone pair of Feldman, McMillan and Talwar (arXiv:2012.12803, Theorem 3.2) as a
    VariationRatio: p = e^ε0, β = (p − 1)/(p + 1) and clone rate e^{−ε0} split evenly between
    Q0 and Q1, i.e. r0 = r1 = 1/(2p) = pα/q with q = 2p²/(p + 1) (rounded up: fewer clones, a
    larger bound). Its neutral-aware value is the exact divergence of their pair
    (A + Δ, C − A + 1 − Δ) vs (A + 1 − Δ, C − A + Δ), C ~ Bin(n − 1, e^{−ε0}), A ~ Bin(C, ½),
    Δ ~ Bern(e^ε0/(e^ε0 + 1)).
    """
    worst = VariationRatio.worst_case(check_epsilon0(epsilon0))
    p = worst.p
    return VariationRatio(p, worst.beta, _up(2.0 * p / (1.0 + 1.0 / p)))  # 2p² overflows at ε0 = 500


def fmt_tv_term(epsilon: float, epsilon0: float, delta0: float, n: int) -> float:
    """(e^ε + 1)(1 + e^{−ε0}/2)·n·δ0 (Theorem 3.8), rounded up."""
    value = (math.exp(min(epsilon, 700.0)) + 1.0) * (1.0 + 0.5 * math.exp(-epsilon0)) * n * delta0
    return _up(value)


def fmt_condition_delta(epsilon0: float, n: int) -> float:
    """Smallest δ with ε0 ≤ ln(n/(16·ln(2/δ))), the condition of Theorem 3.8: 2·e^{−n·e^{−ε0}/16}
    (rounded up)."""
    return min(1.0, _up(2.0 * math.exp(-n * math.exp(-epsilon0) / 16.0)))


def fmt_theorem_3_8(epsilon0: float, delta0: float, n: int, delta: float) -> tuple[float, float]:
    """(ε, δ_total) of Feldman, McMillan and Talwar, arXiv:2012.12803, Theorem 3.8, as stated.

    For n (ε0, δ0)-DP local randomizers and δ ∈ (0, 1] with ε0 ≤ ln(n/(16·ln(2/δ))), the shuffled
    output is (ε, δ + (e^ε + 1)(1 + e^{−ε0}/2)·n·δ0)-DP with
    ε = ln(1 + (e^ε0 − 1)/(e^ε0 + 1)·(8·√(e^ε0·ln(4/δ))/√n + 8·e^ε0/n)) (their Theorem 3.1).
    Both values rounded up; ``ValueError`` outside the condition.
    """
    eps0 = check_epsilon0(epsilon0)
    leak = check_delta0(delta0)
    users = check_num_users(n)
    target = check_range("delta", delta, 0.0, 1.0, low_open=True)
    if target < fmt_condition_delta(eps0, users):
        raise ValueError(f"Theorem 3.8 needs epsilon0 <= ln(n/(16 ln(2/delta))), i.e. delta >= "
                         f"{fmt_condition_delta(eps0, users)!r} for epsilon0={eps0!r}, n={users}; "
                         f"got delta={target!r}")
    e = math.exp(eps0)
    spread = 8.0 * math.sqrt(e * math.log(4.0 / target)) / math.sqrt(users) + 8.0 * e / users
    epsilon = _up(math.log1p(math.tanh(eps0 / 2.0) * spread))
    return epsilon, min(1.0, _up(target + fmt_tv_term(epsilon, eps0, leak, users)))


class CloneTVBound(PairBound):
    """Shuffled bound for every (ε0, δ0)-LDP randomizer (Theorem 3.8 with the exact clone pair).

    δ(ε) ≤ min( max(δ_clone(ε; n), δ_cond) + (e^ε + 1)(1 + e^{−ε0}/2)·n·δ0,
                δ0 + (1 − δ0)·(e^ε0 − e^ε)⁺/(e^ε0 + 1) ),

    δ_clone the certified divergence of :func:`fmt_clone_pair`, δ_cond = :func:`fmt_condition_delta`.
    The first term is Theorem 3.8 of Feldman, McMillan and Talwar with their Theorem 3.1 — an
    analytic upper bound on the divergence of the clone pair, to which the proof reduces — replaced
    by that divergence itself; the condition of the theorem is kept as the floor δ_cond. The second
    is the victim's own report: every (ε0, δ0)-DP pair is a post-processing of leaky randomized
    response (Kairouz, Oh and Viswanath, ICML 2015), and the others' reports are independent of it.
    """

    def __init__(self, epsilon0: float, delta0: float) -> None:
        self.epsilon0 = check_epsilon0(epsilon0)
        self.delta0 = check_delta0(delta0)
        self.pair = fmt_clone_pair(self.epsilon0)

    def _local(self, eps: float) -> float:
        if eps >= self.epsilon0:  # the (ε0, δ0) guarantee itself: no arithmetic to round
            return self.delta0
        rr = -math.expm1(eps - self.epsilon0) / (1.0 + math.exp(-self.epsilon0))
        return min(1.0, _up(self.delta0 + (1.0 - self.delta0) * rr))

    def delta(self, epsilon: float, n: int) -> float:
        eps = check_epsilon(epsilon)
        users = check_num_users(n)
        local = self._local(eps)
        tv = fmt_tv_term(eps, self.epsilon0, self.delta0, users)
        if tv >= local:
            return local
        clone = max(self.pair.delta(eps, users), fmt_condition_delta(self.epsilon0, users))
        return min(local, 1.0, _up(clone + tv))

    def local_epsilon(self, delta: float) -> float:
        """Smallest ε with the victim's own guarantee δ0 + (1 − δ0)(e^ε0 − e^ε)⁺/(e^ε0 + 1) ≤ δ
        (inf below δ0), rounded up and checked."""
        target = check_delta(delta)
        if target < self._local(self.epsilon0):
            return math.inf
        share = (target - self.delta0) / (1.0 - self.delta0)
        level = math.exp(self.epsilon0) - (math.exp(self.epsilon0) + 1.0) * share
        epsilon = 0.0 if level <= 1.0 else min(self.epsilon0, _up(math.log(level), 16))
        return epsilon if self._local(epsilon) <= target else self.epsilon0

    def epsilon_with_budget(self, delta: float, n: int, tv_share: float) -> float:
        """A certified ε(δ) that leaves the share ``tv_share`` of δ to the total-variation term.

        ε1 = the clone pair's certified ε at (1 − tv_share)·δ; if the floor δ_cond is at most
        (1 − tv_share)·δ and the TV term at ε1 is at most tv_share·δ, then
        δ(ε1) ≤ (1 − tv_share)·δ + tv_share·δ = δ and ε1 is returned; otherwise inf."""
        target = check_delta(delta)
        users = check_num_users(n)
        share = check_range("tv_share", tv_share, 0.0, 1.0, low_open=True, high_open=True)
        rest = target * (1.0 - share)
        if fmt_condition_delta(self.epsilon0, users) > rest:
            return math.inf
        epsilon = self.pair.epsilon(rest, users)
        if fmt_tv_term(epsilon, self.epsilon0, self.delta0, users) > target * share:
            return math.inf
        return epsilon

    def epsilon(self, delta: float, n: int) -> float:
        target = check_delta(delta)
        users = check_num_users(n)
        best = self.local_epsilon(target)
        tv = fmt_tv_term(0.0, self.epsilon0, self.delta0, users)  # the TV term at ε = 0
        if tv < target:
            for factor in TV_SHARE_FACTORS:  # leave the TV term a little more than it needs
                share = min(TV_SHARE_MAX, factor * tv / target)
                best = min(best, self.epsilon_with_budget(target, users, share))
        return best

    def __repr__(self) -> str:
        return f"CloneTVBound(epsilon0={self.epsilon0!r}, delta0={self.delta0!r})"


#: Largest number k of other users :class:`DecomposedLDPBound` lets go without clones.
MAX_UNCLONED = 8


def decomposition_tv_term(epsilon: float, epsilon0: float, delta0: float, n: int) -> float:
    """(e^ε + 1)·(n − 1)·2e^{−ε0}·δ0 (:class:`DecomposedLDPBound`), rounded up."""
    value = (math.exp(min(epsilon, 700.0)) + 1.0) * (n - 1) * 2.0 * math.exp(-epsilon0) * delta0
    return _up(value, 8)


def uncloned_users(epsilon0: float, delta0: float, n: int) -> tuple[int, float]:
    """(k, τ): at most k of the n − 1 other users lack the clones of :class:`DecomposedLDPBound`
    except with probability τ ≥ P[Bin(n − 1, ρ) > k] with ρ = (1 + 2e^{−ε0})·δ0 ≥ 1 − κ, from
    the union bound P[Bin(N, ρ) ≥ j] ≤ (Nρ)^j/j!; k is the smallest with τ ≤
    :data:`UNCLONED_TAIL`, at most :data:`MAX_UNCLONED` (and n − 1)."""
    mean = _up((n - 1) * (1.0 + 2.0 * math.exp(-epsilon0)) * delta0, 8)
    k, tail = 0, min(1.0, mean)
    while tail > UNCLONED_TAIL and k < min(MAX_UNCLONED, n - 1):
        k += 1
        tail = min(1.0, _up(tail * mean / (k + 1), 8))
    return k, tail


#: Probability at which :func:`uncloned_users` stops raising k.
UNCLONED_TAIL = 1e-16


class DecomposedLDPBound(PairBound):
    """Shuffled bound for every (ε0, δ0)-LDP randomizer, with no condition on n:

        δ(ε) ≤ min( δ0 + δ_pure(ε; n − k) + τ + (e^ε + 1)·(n − 1)·2e^{−ε0}·δ0,
                    δ0 + (1 − δ0)·(e^ε0 − e^ε)⁺/(e^ε0 + 1) ),

    δ_pure the certified bound of the pure ε0 worst case (:meth:`VariationRatio.worst_case`) and
    (k, τ) from :func:`uncloned_users`.

    Proof (docs/theory.md, "Approximate local randomizers"). (1) The victim's pair is a
    post-processing T of leaky randomized response (Kairouz, Oh and Viswanath, ICML 2015):
    R(x^b) = δ0·T(L_b) + (1 − δ0)·ν_b with ν_0, ν_1 ε0-indistinguishable pointwise. (2) For another
    user i and b ∈ {0, 1}, e_{i,b} = (R(x^b) − e^{ε0}R(x_i))⁺ has mass ≤ δ0 (the hockey-stick
    divergence at e^{ε0}), and R(x_i) ≥ e^{−ε0}(R(x^b) − e_{i,b}) pointwise. With
    D_i = e^{−ε0}(e_{i,0} + e_{i,1}) (mass d_i ≤ 2e^{−ε0}δ0), R̃_i = (R(x_i) + D_i)/(1 + d_i) is
    within total variation d_i of R(x_i) and R̃_i ≥ κ·e^{−ε0}·max(ν_0, ν_1). (3) Replacing every
    other user's law by R̃_i (the same in both worlds) changes each shuffled law by at most
    Σ d_i in total variation, so D_{e^ε}(P‖Q) ≤ D_{e^ε}(P̃‖Q̃) + (1 + e^ε)·Σ d_i. (4) In the new
    world the victim leaks with probability δ0 in both worlds (joint convexity: δ0·1), and
    otherwise reports ν_b while every other user is, with probability κ independently of the
    input, a user that contains the clone and neutral parts of the pure ε0 worst case
    (e^{−ε0}max(ν_0, ν_1) ≥ them, "Monotonicity in β"), and otherwise arbitrary (revealed). With
    M ~ Bin(n − 1, κ) such users the divergence is ≤ E[δ_pure(ε; M + 1)] ≤ δ_pure(ε; n − k) +
    P[M < n − 1 − k] ("Monotonicity in n"; the others are revealed), and n − 1 − M is
    Bin(n − 1, 1 − κ) with 1 − κ ≤ (1 + 2e^{−ε0})δ0. The second term is the victim's own report
    (:class:`CloneTVBound`). □
    """

    def __init__(self, epsilon0: float, delta0: float) -> None:
        self.epsilon0 = check_epsilon0(epsilon0)
        self.delta0 = check_delta0(delta0)
        self.pair = VariationRatio.worst_case(self.epsilon0)
        self._victim = CloneTVBound(self.epsilon0, self.delta0)

    def _fixed(self, eps: float, users: int) -> float:
        """δ0 + τ + the TV term at ε (everything but the pure pair), rounded up."""
        _, tail = uncloned_users(self.epsilon0, self.delta0, users)
        tv = decomposition_tv_term(eps, self.epsilon0, self.delta0, users)
        return _up(self.delta0 + tail + tv, 8)

    def delta(self, epsilon: float, n: int) -> float:
        eps = check_epsilon(epsilon)
        users = check_num_users(n)
        local = self._victim._local(eps)
        fixed = self._fixed(eps, users)
        if fixed >= local:
            return local
        clones = users - uncloned_users(self.epsilon0, self.delta0, users)[0]
        return min(local, 1.0, _up(fixed + self.pair.delta(eps, clones), 8))

    def epsilon_with_budget(self, delta: float, n: int, tv_share: float) -> float:
        """A certified ε(δ) leaving the share ``tv_share`` of δ to the δ0 and total-variation
        terms: ε1 = the pure pair's ε at (1 − tv_share)·δ, returned if δ0 plus the TV term at
        ε1 is at most tv_share·δ (then δ(ε1) ≤ δ), else inf."""
        target = check_delta(delta)
        users = check_num_users(n)
        share = check_range("tv_share", tv_share, 0.0, 1.0, low_open=True, high_open=True)
        clones = users - uncloned_users(self.epsilon0, self.delta0, users)[0]
        epsilon = self.pair.epsilon(_down(target * (1.0 - share)), clones)
        return epsilon if self._fixed(epsilon, users) <= _down(target * share) else math.inf

    def epsilon(self, delta: float, n: int) -> float:
        target = check_delta(delta)
        users = check_num_users(n)
        best = self._victim.local_epsilon(target)
        fixed = self._fixed(0.0, users)
        if fixed < target:
            for factor in TV_SHARE_FACTORS:
                share = min(TV_SHARE_MAX, max(factor * fixed / target, 1e-6))
                best = min(best, self.epsilon_with_budget(target, users, share))
        return best

    def __repr__(self) -> str:
        return f"DecomposedLDPBound(epsilon0={self.epsilon0!r}, delta0={self.delta0!r})"


def _class_lower(epsilon0: float, delta0: float, n: int) -> LeakyInstanceLowerBound:
    return _leaky_lower(binary_rr(epsilon0), delta0, n)


def approximate_ldp(epsilon0: float, delta0: float) -> Randomizer:
    """Any (ε0, δ0)-LDP randomizer: the smaller of :class:`DecomposedLDPBound` (no condition on n)
    and :class:`CloneTVBound` (Feldman, McMillan and Talwar, Theorem 3.8, with the exact clone
    pair).

    Lower bound: binary randomized response that leaks its input with probability δ0 is
    (ε0, δ0)-LDP, so its instances (:class:`LeakyInstanceLowerBound`) bound the class from below.
    """
    eps0 = check_epsilon0(epsilon0)
    leak = check_delta0(delta0)
    result = Randomizer("approximate_ldp", {"epsilon0": eps0, "delta0": leak},
                        [DecomposedLDPBound(eps0, leak)], variation_ratio=None,
                        fallbacks=[CloneTVBound(eps0, leak)],
                        lower_bound=functools.partial(_class_lower, eps0, leak),
                        notes="class of all (eps0, delta0)-LDP randomizers")
    result._record_origin(functools.partial(approximate_ldp, eps0, leak),
                          ("approximate_ldp", eps0, leak))
    return result


__all__ = [
    "EXACT_LEAK_CELLS",
    "LEAK_BANDS",
    "LEAK_TAIL",
    "MAX_UNCLONED",
    "UNCLONED_TAIL",
    "CloneTVBound",
    "DecomposedLDPBound",
    "LeakyInstanceLowerBound",
    "LeakyMixtureBound",
    "approximate",
    "approximate_ldp",
    "check_delta0",
    "decomposition_tv_term",
    "uncloned_users",
    "fmt_clone_pair",
    "fmt_condition_delta",
    "fmt_theorem_3_8",
    "fmt_tv_term",
]
