"""Gaussian local noise in the shuffle model (docs/theory.md, "Gaussian local noise").

A client adds N(0, σ²·I) to a value of bounded sensitivity and sends it through the shuffler:

* :func:`gaussian` — a scalar in [lower, upper]: sensitivity Δ = upper − lower;
* :func:`gaussian_vector` — a vector clipped to ℓ2 norm C, the way Flower's ``LocalDpMod`` clips a
  model update before adding noise: under replace-one two clipped vectors are at most 2C apart,
  so Δ = 2C.

Scalar reports (μ = Δ/σ ≤ :data:`~dpacct_shuffle.core.gaussian_blanket.MAX_MU`) are bounded by
:class:`GaussianBlanketBound`: the privacy blanket of Balle, Bell, Gascón and Nissim ("The Privacy
Blanket of the Shuffle Model", CRYPTO 2019) evaluated at the extreme pair of inputs, which
dominates every pair (docs/theory.md, "Gaussian local noise": the hockey-stick of f_x against the
blanket grows with the distance of x from the middle of the range), with the certified lattice
sums of :mod:`dpacct_shuffle.core.gaussian_blanket`.

Vector reports (no dimension-free blanket, and projecting on the line of the victim's pair is not
a reduction for upper bounds: the orthogonal parts label the other users' reports,
docs/theory.md, "Gaussian local noise", *Vectors*), and scalars with larger μ, use the (ε0, δ0)
route. A report is
(ε0, δ_μ(ε0))-LDP for **every** ε0 > 0, with μ = Δ/σ and δ_μ the exact Gaussian
profile (Balle & Wang, ICML 2018, Theorem 8; :func:`~dpacct_shuffle.core.gaussian.gaussian_delta`).
Each ε0 gives a valid shuffled bound through the class bound
:class:`~dpacct_shuffle.randomizers.approximate.DecomposedLDPBound`; :class:`GaussianShuffleBound`
reports the smallest over the ε0 it tries. The ε0 trades the pure pair (smaller for small ε0)
against the total-variation term, of order n·δ_μ(ε0) (smaller for large ε0); the
tried values are those with n·δ_μ(ε0) = t for t on a geometric grid, refined by golden-section
search in ln t. Any ε0 gives a certified bound, so the search only steers tightness.

Lower bound: the larger of two explicit instances. The sum of the n reports is
Σx_i + N(0, n·σ²·I), a post-processing of the shuffled multiset; for inputs at distance Δ it is
the Gaussian mechanism with μ/√n, whose exact profile (rounded down) is a certified lower bound
(:class:`GaussianSumInstance`). With every other user at the victim's first input the shuffled
likelihood ratio is a mean of n i.i.d. log-normal terms, whose exact δ is evaluated from below by
:class:`~dpacct_shuffle.core.gaussian_endpoint.GaussianEndpointInstance` (about 7 % above the
sum's ε at μ = 0.5).
"""

from __future__ import annotations

import functools
import math
from typing import Callable

import numpy as np
from numpy.typing import NDArray

from dpacct_shuffle.core.gaussian import check_gaussian_mu, gaussian_delta
from dpacct_shuffle.core.gaussian_blanket import (MAX_MU, blanket_delta, blanket_deltas,
                                                  check_sampling, curve_deltas)
from dpacct_shuffle.core.gaussian_endpoint import MAX_ENDPOINT_MU, GaussianEndpointInstance
from dpacct_shuffle.core.rounding import round_loss_up, step_down, step_up
from dpacct_shuffle.core.search import bisect, epsilon_search, expand_bracket
from dpacct_shuffle.core.validation import (MAX_EPSILON0, MIN_EPSILON0, check_delta, check_epsilon,
                                            check_num_users, check_range)
from dpacct_shuffle.randomizers.approximate import DecomposedLDPBound
from dpacct_shuffle.randomizers.base import PairBound, Randomizer
from dpacct_shuffle.randomizers.lower_bounds import InstanceLowerBound, LowerBoundInstance

#: ln t (t = n·δ_μ(ε0)) searched in [LOG_TV_LOW, LOG_TV_HIGH].
LOG_TV_LOW, LOG_TV_HIGH = -22.0 * math.log(10.0), -1.0 * math.log(10.0)
#: Shares of δ given to the TV term of Theorem 3.8 by :meth:`GaussianShuffleBound.epsilon`.
TV_SHARES = (0.5, 0.2, 0.05, 0.01)
#: Golden-section steps of the ε0 search.
EPSILON0_SEARCH_STEPS = 10
#: Relative tolerance of :meth:`GaussianBlanketBound.epsilon`'s search.
BLANKET_EPSILON_RTOL = 1e-4
_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


def epsilon0_for_local_delta(mu: float, target: float) -> float:
    """The ε0 (within [MIN_EPSILON0, MAX_EPSILON0]) at which the certified δ_μ(ε0) ≈ ``target``
    (bisection; the result is only a choice of ε0 — its δ_μ is evaluated again where used)."""
    if gaussian_delta(MIN_EPSILON0, mu) <= target:
        return MIN_EPSILON0
    if gaussian_delta(MAX_EPSILON0, mu) > target:
        return MAX_EPSILON0
    return bisect(lambda eps0: gaussian_delta(eps0, mu) <= target, MAX_EPSILON0, MIN_EPSILON0,
                  rtol=1e-9)


def gaussian_epsilon(mu: float, delta: float) -> float:
    """Smallest ε (to a relative 1e-9, rounded up) with the certified δ_μ(ε) ≤ delta."""
    target = check_delta(delta)

    def holds(eps: float) -> bool:
        return gaussian_delta(eps, mu) <= target

    if holds(0.0):
        return 0.0
    bracket = expand_bracket(lambda eps: not holds(eps), 0.0, 1.0)
    assert bracket is not None  # δ_μ(ε) → 0 as ε → ∞: the bracket closes
    infeasible, feasible = bracket
    return bisect(holds, feasible, infeasible, rtol=1e-9)


class GaussianShuffleBound(PairBound):
    """min(δ_μ(ε), min over tried ε0 of the (ε0, δ0)-class bound
    :class:`~dpacct_shuffle.randomizers.approximate.DecomposedLDPBound` applied to the
    (ε0, δ_μ(ε0))-LDP report).

    δ_μ(ε) itself bounds the round: the shuffled multiset is a post-processing of the victim's
    report together with the others', which do not depend on the victim's input."""

    def __init__(self, mu: float) -> None:
        self.mu = check_gaussian_mu(mu)

    def _class_bound(self, eps0: float) -> DecomposedLDPBound | None:
        """The (ε0, δ_μ(ε0)) class bound, or None where δ_μ(ε0) rounds up to 1 (vacuous: μ so
        large that even ε0 = MAX_EPSILON0 leaves δ0 = 1)."""
        delta0 = gaussian_delta(eps0, self.mu)
        return DecomposedLDPBound(eps0, delta0) if delta0 < 1.0 else None

    @functools.lru_cache(maxsize=256)
    def _bound(self, log_tv: float, n: int) -> DecomposedLDPBound | None:
        return self._class_bound(epsilon0_for_local_delta(self.mu, math.exp(log_tv) / n))

    def _minimise(self, bound_value: Callable[[DecomposedLDPBound], float], n: int) -> float:
        """Golden-section search of ``bound_value`` over ln t; returns the smallest value
        evaluated (1 where the class bound is vacuous)."""
        def value(bound: DecomposedLDPBound | None) -> float:
            return 1.0 if bound is None else bound_value(bound)

        lo, hi = LOG_TV_LOW, LOG_TV_HIGH
        x1, x2 = hi - _GOLDEN * (hi - lo), lo + _GOLDEN * (hi - lo)
        f1, f2 = value(self._bound(x1, n)), value(self._bound(x2, n))
        best = min(f1, f2)
        for _ in range(EPSILON0_SEARCH_STEPS):
            if f1 <= f2:
                hi, x2, f2 = x2, x1, f1
                x1 = hi - _GOLDEN * (hi - lo)
                f1 = value(self._bound(x1, n))
            else:
                lo, x1, f1 = x1, x2, f2
                x2 = lo + _GOLDEN * (hi - lo)
                f2 = value(self._bound(x2, n))
            best = min(best, f1, f2)
        return best

    def delta(self, epsilon: float, n: int) -> float:
        eps = check_epsilon(epsilon)
        users = check_num_users(n)
        local = gaussian_delta(eps, self.mu)
        return min(local, self._minimise(lambda bound: bound.delta(eps, users), users))

    def epsilon(self, delta: float, n: int) -> float:
        """min(the report's own ε, Theorem 3.8 at the ε0 whose TV term takes each share of
        :data:`TV_SHARES` of δ): any certified point is valid, the shares only steer tightness."""
        target = check_delta(delta)
        users = check_num_users(n)
        best = gaussian_epsilon(self.mu, target)
        for share in TV_SHARES:
            # (e^ε + 1)(1 + e^{−ε0}/2) ≤ 4 for ε ≤ 0.6: aim the TV term at the share
            eps0 = epsilon0_for_local_delta(self.mu, share * target / (4.0 * users))
            bound = self._class_bound(eps0)
            if bound is not None:
                best = min(best, bound.epsilon_with_budget(target, users, share))
        return best

    def __hash__(self) -> int:
        return hash(("GaussianShuffleBound", self.mu))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GaussianShuffleBound) and other.mu == self.mu

    def __repr__(self) -> str:
        return f"GaussianShuffleBound(mu={self.mu!r})"


class GaussianBlanketBound(PairBound):
    """min(q·δ_μ(ε), the certified blanket bound of the extreme pair), scalar reports, each user
    taking part with probability q (``sampling``; 1: every user reports).

    The blanket bound (:func:`~dpacct_shuffle.core.gaussian_blanket.blanket_delta`) is the
    expression (1/n)·E[(Z_1 + … + Z_n)⁺] of docs/theory.md ("Multi-level bound") for the pair of
    inputs (lower, upper), which dominates every pair of inputs in [lower, upper] (docs/theory.md,
    "Gaussian local noise": for every λ ≥ 0, ∫(f_x − λm)⁺ is non-decreasing in the distance of x
    from the middle, so every ratio f_x/m is below f_lower/m in convex order, and the theorem of
    "Dominating pair of a continuous randomizer" applies). With q < 1 it is the same for the void
    randomizer q·R + (1 − q)·⊥ ("Client sampling"), whose blanket adds ⊥ with both ratios 1.
    q·δ_μ(ε) is the victim's own (void) report.
    """

    def __init__(self, mu: float, sampling: float = 1.0) -> None:
        self.mu = check_range("mu", mu, 0.0, MAX_MU, low_open=True)
        self.sampling = check_sampling(sampling)

    def void_bound(self, sampling_probability: float) -> "GaussianBlanketBound":
        """The bound of the Poisson-sampled round with probability ``sampling_probability`` (a
        round with probability γ is a post-processing of one with any γ' ≥ γ, so γ may be
        rounded up by the caller)."""
        return GaussianBlanketBound(self.mu, min(1.0, self.sampling * check_sampling(
            sampling_probability, "sampling_probability")))

    def _local(self, eps: float) -> float:
        local = gaussian_delta(eps, self.mu)
        return local if self.sampling == 1.0 else min(1.0, step_up(self.sampling * local))

    def delta(self, epsilon: float, n: int) -> float:
        eps = check_epsilon(epsilon)
        users = check_num_users(n)
        return min(self._local(eps), blanket_delta(eps, self.mu, users, self.sampling))

    def deltas_at_rtol(self, epsilons: NDArray[np.float64], n: int,
                       rtol: float) -> NDArray[np.float64]:
        """:meth:`delta` at every ε, the blanket part by
        :func:`~dpacct_shuffle.core.gaussian_blanket.blanket_deltas` (the point bound at up to
        ``CURVE_KNOTS`` distinct ε, else certified chords of the every-ε curve; ``rtol``
        unused)."""
        return self._deltas(epsilons, n, blanket_deltas)

    def _deltas(self, epsilons: NDArray[np.float64], n: int,
                blanket: Callable[[NDArray[np.float64], float, int, float], NDArray[np.float64]]
                ) -> NDArray[np.float64]:
        """min(q·δ_μ(ε), ``blanket``(ε)) at every ε (0 at ε = ∞)."""
        users = check_num_users(n)
        values = np.asarray(epsilons, dtype=np.float64).ravel()
        for eps in values:
            check_epsilon(float(eps))
        finite = np.isfinite(values)
        result = np.zeros(values.size)
        if np.any(finite):
            local = np.array([self._local(float(eps)) for eps in values[finite]])
            result[finite] = np.minimum(local, blanket(values[finite], self.mu, users,
                                                       self.sampling))
        return result

    def curve_deltas(self, epsilons: NDArray[np.float64], n: int,
                     lowering: float) -> NDArray[np.float64]:
        """Upper bounds on δ at every ε ≥ 0 of ``epsilons`` from the every-ε curve for n users:
        min(q·δ_μ(ε), :func:`~dpacct_shuffle.core.gaussian_blanket.curve_deltas`) (chords
        through knots, docs/theory.md, "Every-ε curve of the Gaussian blanket bound"; even for a
        single ε, so that one round's PLD reads one curve; ``lowering`` unused)."""
        return self._deltas(epsilons, n, curve_deltas)

    def epsilon(self, delta: float, n: int) -> float:
        """Smallest ε (relative :data:`BLANKET_EPSILON_RTOL`, the core's secant search) with the
        certified δ(ε) ≤ ``delta``, at most the report's own ε."""
        target = check_delta(delta)
        users = check_num_users(n)
        share = target if self.sampling == 1.0 else min(1.0, step_down(target / self.sampling))
        local = gaussian_epsilon(self.mu, share)
        if users == 1 or local == 0.0:
            return local
        # start: the sum of the reports' ε (a lower bound) scaled by the typical gap
        guess = min(0.5 * local, 1.3 * gaussian_epsilon(
            self.mu * math.sqrt(self.sampling / users), target))
        found = epsilon_search(lambda eps: self.delta(eps, users), target, self._local(0.0),
                               local, max(guess, 1e-9), BLANKET_EPSILON_RTOL)
        return min(local, round_loss_up(found)) if found > 0.0 else 0.0

    def __hash__(self) -> int:
        return hash(("GaussianBlanketBound", self.mu, self.sampling))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, GaussianBlanketBound) and other.mu == self.mu
                and other.sampling == self.sampling)

    def __repr__(self) -> str:
        return f"GaussianBlanketBound(mu={self.mu!r}, sampling={self.sampling!r})"


class GaussianSumInstance:
    """Exact δ(ε) of the sum of n Gaussian reports (inputs at distance Δ), rounded down."""

    def __init__(self, mu: float, n: int) -> None:
        self.mu_sum = check_gaussian_mu(mu) / math.sqrt(check_num_users(n))

    def delta(self, epsilon: float) -> float:
        return gaussian_delta(epsilon, self.mu_sum, upper=False)

    def max_loss(self) -> float:
        return math.inf


def _gaussian_lower(mu: float, n: int) -> InstanceLowerBound:
    """The larger of the sum of the reports and, for μ ≤ MAX_ENDPOINT_MU, the endpoint instance
    (:mod:`~dpacct_shuffle.core.gaussian_endpoint`: all other users at the victim's first input)."""
    instances: list[LowerBoundInstance] = [GaussianSumInstance(mu, n)]
    description = "sum of the reports: Gaussian mechanism with noise sigma*sqrt(n)"
    if mu <= MAX_ENDPOINT_MU:
        instances.append(GaussianEndpointInstance(mu, n))
        description += "; exact delta of all other users at one endpoint"
    return InstanceLowerBound(instances, description)


def _gaussian_randomizer(name: str, parameters: dict[str, object], sensitivity: float,
                         noise_std: float, *, scalar: bool) -> Randomizer:
    mu = check_gaussian_mu(sensitivity / noise_std, "sensitivity / noise_std")
    if scalar and mu <= MAX_MU:
        bound: PairBound = GaussianBlanketBound(mu)
        notes = f"Gaussian noise, sensitivity/std = {mu!r}; privacy blanket of the extreme pair"
    else:
        bound = GaussianShuffleBound(mu)
        notes = f"Gaussian noise, sensitivity/std = {mu!r}; (eps0, delta0(eps0))-LDP"
    return Randomizer(name, {**parameters, "mu": mu}, [bound], variation_ratio=None,
                      lower_bound=functools.partial(_gaussian_lower, mu), notes=notes)


def _positive(name: str, value: object) -> float:
    return check_range(name, value, 0.0, math.inf, low_open=True, high_open=True)


def gaussian(noise_std: float, lower: float = 0.0, upper: float = 1.0) -> Randomizer:
    """A scalar in [lower, upper] plus N(0, noise_std²): sensitivity upper − lower."""
    sigma = _positive("noise_std", noise_std)
    low = check_range("lower", lower, -math.inf, math.inf, low_open=True, high_open=True)
    high = check_range("upper", upper, -math.inf, math.inf, low_open=True, high_open=True)
    if not high > low:
        raise ValueError(f"upper must be > lower, got lower={low!r}, upper={high!r}")
    result = _gaussian_randomizer("gaussian", {"noise_std": sigma, "lower": low, "upper": high},
                                  high - low, sigma, scalar=True)
    result._record_origin(functools.partial(gaussian, sigma, low, high),
                          ("gaussian", sigma, low, high))
    return result


def gaussian_vector(noise_std: float, clipping_norm: float = 1.0) -> Randomizer:
    """A vector clipped to ℓ2 norm C plus N(0, noise_std²·I): sensitivity 2C (replace-one)."""
    sigma = _positive("noise_std", noise_std)
    clip = _positive("clipping_norm", clipping_norm)
    result = _gaussian_randomizer("gaussian_vector", {"noise_std": sigma, "clipping_norm": clip},
                                  2.0 * clip, sigma, scalar=False)
    result._record_origin(functools.partial(gaussian_vector, sigma, clip),
                          ("gaussian_vector", sigma, clip))
    return result


def local_dp_mod_noise_std(sensitivity: float, epsilon: float, delta: float) -> float:
    """The noise standard deviation Flower's ``LocalDpMod`` adds: sensitivity·√(2 ln(1.25/δ))/ε."""
    sens = _positive("sensitivity", sensitivity)
    eps = _positive("epsilon", epsilon)
    target = check_range("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    return sens * math.sqrt(2.0 * math.log(1.25 / target)) / eps


__all__ = [
    "BLANKET_EPSILON_RTOL",
    "EPSILON0_SEARCH_STEPS",
    "GaussianBlanketBound",
    "TV_SHARES",
    "GaussianShuffleBound",
    "GaussianSumInstance",
    "epsilon0_for_local_delta",
    "gaussian_epsilon",
    "gaussian",
    "gaussian_vector",
    "local_dp_mod_noise_std",
]
