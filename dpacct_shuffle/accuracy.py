"""Accuracy of a round: the variance of the unbiased estimates a server computes from the reports.

Frequency oracles (``binary_rr``, ``krr``, ``rappor``, ``optimized_unary_encoding``,
``local_hashing``, ``hadamard_response`` with one block, ``subset_selection``,
``sampling_rappor``): every report supports a set of values, a holder of v supports v w.p. p* and
anyone else w.p. q* (:mod:`dpacct_shuffle.randomizers.frequency` gives (p*, q*) for each), and
f̂_v = (C_v/n − q*)/(p* − q*) from n reports has

    V_n(f) = A(f)/n,   A(f) = (f·p*(1 − p*) + (1 − f)·q*(1 − q*))/(p* − q*)²

for an item held by a fraction f of the n reporting users (Wang, Blocki, Li & Jha, "Locally
Differentially Private Protocols for Frequency Estimation", USENIX Security 2017, Theorem 2).

Numeric randomizers (``laplace``, ``piecewise``, ``duchi``, ``harmony``, ``gaussian``): the mean
of the reports is unbiased for the mean input, with variance v(x)/n when every reporting user
holds x (v the per-report variance of :mod:`dpacct_shuffle.randomizers.numeric_oracles`); with
``value=None`` the largest v over the input range (a worst case over inputs). Inputs in a range
[a, b] other than the mechanism's native one are mapped onto it affinely, which multiplies the
variance by ((b − a)/width)².

Who reports. ``num_users`` = n users, and

* every user reports (default): the formulas above with n;
* a fixed-size cohort of m of the n users (``sample_size``): the estimate targets the frequency
  f in the whole population; given the cohort, its own frequency f_S is hypergeometric with
  variance f(1 − f)(n − m)/(m(n − 1)), so V = A(f)/m + f(1 − f)(n − m)/(m(n − 1));
* Poisson sampling (``sampling_probability`` γ): each user reports independently w.p. γ, the
  number of reports M ~ Binomial(n, γ) is random and the estimate uses the observed M. Given
  M = m ≥ 1 the reporters are a uniform m-subset, so (law of total variance, conditioning on
  M ≥ 1: no estimate without reports)

      V = (A(f) + f(1 − f)·n/(n − 1))·E[1/M | M ≥ 1] − f(1 − f)/(n − 1),

  computed with E[1/M | M ≥ 1] summed over the binomial law (below). For numeric randomizers the
  same holds with A replaced by v(x) and f(1 − f) by 0 (every user holds x: no sampling error).

At f = 0 (the item nobody holds, the quantity :mod:`dpacct_shuffle.planning` ranks by) the
sampling terms vanish: V = A(0)·(1/n, 1/m or E[1/M | M ≥ 1]).
"""

from __future__ import annotations

import math

import numpy as np

from dpacct_shuffle.core.validation import check_num_users, check_range
from dpacct_shuffle.randomizers.base import Randomizer
from dpacct_shuffle.randomizers.numeric_oracles import mean_oracle

#: Standard deviations of the binomial law summed over on each side of its mean for E[1/M].
INVERSE_MEAN_WINDOW = 40.0


def expected_inverse_reports(num_users: int, sampling_probability: float) -> float:
    """E[1/M | M ≥ 1] for M ~ Binomial(``num_users``, γ): Σ_{m ≥ 1} P(M = m)/m / P(M ≥ 1).

    The sum runs over m within ``INVERSE_MEAN_WINDOW`` standard deviations of nγ (all m for small
    n); the binomial mass left out is below 1e-40 (a Poisson(1) law beyond 41).
    """
    from scipy.stats import binom

    n = check_num_users(num_users, "num_users")
    gamma = check_range("sampling_probability", sampling_probability, 0.0, 1.0, low_open=True)
    mean, spread = n * gamma, math.sqrt(n * gamma * (1.0 - gamma))
    low = max(1, int(math.floor(mean - INVERSE_MEAN_WINDOW * spread)))
    high = min(n, int(math.ceil(mean + INVERSE_MEAN_WINDOW * spread)) + 1)
    counts = np.arange(low, high + 1, dtype=np.float64)
    probabilities = binom.pmf(counts, n, gamma)
    at_least_one = -math.expm1(n * math.log1p(-gamma)) if gamma < 1.0 else 1.0
    return float(np.sum(probabilities / counts) / at_least_one)


def _check_reporting(num_users: int, sampling_probability: float | None,
                     sample_size: int | None) -> int:
    n = check_num_users(num_users, "num_users")
    if sampling_probability is not None and sample_size is not None:
        raise ValueError("give sampling_probability (Poisson sampling) or sample_size (a "
                         "fixed-size cohort), not both")
    if sample_size is not None:
        check_num_users(sample_size, "sample_size")
        if sample_size > n:
            raise ValueError(f"sample_size must be in [1, num_users = {n}], got {sample_size!r}")
    return n


def _combine(per_report: float, spread: float, n: int, sampling_probability: float | None,
             sample_size: int | None) -> float:
    """V from the per-report term A (or v) and the population spread f(1 − f) (module
    docstring)."""
    if sample_size is not None:
        m = sample_size
        finite = spread * (n - m) / (m * (n - 1)) if n > 1 else 0.0
        return per_report / m + finite
    if sampling_probability is not None:
        inverse = expected_inverse_reports(n, sampling_probability)
        if n == 1:
            return per_report * inverse
        return max(0.0, (per_report + spread * n / (n - 1)) * inverse - spread / (n - 1))
    return per_report / n


def frequency_variance(randomizer: Randomizer, num_users: int, frequency: float = 0.0, *,
                       sampling_probability: float | None = None,
                       sample_size: int | None = None) -> float:
    """Variance of the estimated frequency f̂_v of an item held by a fraction ``frequency`` of the
    ``num_users`` users, for a catalog frequency oracle (module docstring).

    Args:
      randomizer: a catalog randomizer with a frequency estimator (``randomizer.frequency_oracle``).
      num_users: n, the users of the round (the population when sampled).
      frequency: f ∈ [0, 1].
      sampling_probability: γ ∈ (0, 1]: each user reports w.p. γ (Poisson sampling).
      sample_size: m ∈ [1, n]: a uniformly drawn cohort of m users reports.
    """
    if not isinstance(randomizer, Randomizer) or randomizer.frequency_oracle is None:
        raise TypeError(f"randomizer must be a catalog frequency oracle with an estimator "
                        f"(binary_rr, krr, rappor, optimized_unary_encoding, local_hashing with a "
                        f"domain_size, hadamard_response with blocks=1, subset_selection, "
                        f"sampling_rappor), got {randomizer!r}")
    n = _check_reporting(num_users, sampling_probability, sample_size)
    f = check_range("frequency", frequency, 0.0, 1.0)
    per_report = float(randomizer.frequency_oracle.variances(f, 1))
    return _combine(per_report, f * (1.0 - f), n, sampling_probability, sample_size)


def frequency_std(randomizer: Randomizer, num_users: int, frequency: float = 0.0, *,
                  sampling_probability: float | None = None,
                  sample_size: int | None = None) -> float:
    """Standard deviation of f̂_v: the square root of :func:`frequency_variance`."""
    return math.sqrt(frequency_variance(randomizer, num_users, frequency,
                                        sampling_probability=sampling_probability,
                                        sample_size=sample_size))


def mean_variance(randomizer: Randomizer, num_users: int, value: float | None = None, *,
                  value_range: tuple[float, float] | None = None,
                  sampling_probability: float | None = None,
                  sample_size: int | None = None) -> float:
    """Variance of the estimated mean when every reporting user holds ``value`` (``None``: the
    worst input), for a numeric catalog randomizer (module docstring).

    Args:
      value_range: (a, b), the range the inputs are given in; ``None``: the mechanism's own range
        (``laplace`` [0, 1], ``piecewise``/``duchi``/``harmony`` [−1, 1], ``gaussian`` its
        [lower, upper]). ``value`` lies in this range.
    """
    oracle = mean_oracle(randomizer)
    n = _check_reporting(num_users, sampling_probability, sample_size)
    low, high = (oracle.lower, oracle.upper) if value_range is None else value_range
    check_range("value_range[0]", low, -math.inf, math.inf, low_open=True, high_open=True)
    check_range("value_range[1]", high, low, math.inf, low_open=True, high_open=True)
    scale = (high - low) / (oracle.upper - oracle.lower)
    if value is None:
        per_report = oracle.worst_report_variance()
    else:
        x = check_range("value", value, low, high)
        per_report = oracle.report_variance(oracle.lower + (x - low) / scale)
    return _combine(per_report * scale * scale, 0.0, n, sampling_probability, sample_size)


def mean_std(randomizer: Randomizer, num_users: int, value: float | None = None, *,
             value_range: tuple[float, float] | None = None,
             sampling_probability: float | None = None, sample_size: int | None = None) -> float:
    """Standard deviation of the estimated mean: the square root of :func:`mean_variance`."""
    return math.sqrt(mean_variance(randomizer, num_users, value, value_range=value_range,
                                   sampling_probability=sampling_probability,
                                   sample_size=sample_size))


__all__ = ["INVERSE_MEAN_WINDOW", "expected_inverse_reports", "frequency_std",
           "frequency_variance", "mean_std", "mean_variance"]
