"""Closed-form amplification bounds, each with its validity conditions (docs/theory.md, "Other
bounds").

Only bounds whose statement we can check against the numerical core are shipped:

* :func:`fmt_epsilon` — Feldman, McMillan & Talwar (SODA 2023, arXiv:2208.04591, Thm 3.2)
  for any ε0-LDP randomizer. Valid for every ε0-LDP randomizer because it upper-bounds the worst-case
  variation-ratio pair (β = (e^ε0 − 1)/(e^ε0 + 1), w = 0, the clone reduction), which is valid for
  all ε0-LDP randomizers by the monotonicity-in-β argument (docs/theory.md, "Monotonicity in β"; see
  :mod:`dpacct_shuffle.core.bound`).

* :func:`chernoff_delta` / :func:`chernoff_epsilon` — a Chernoff-form bound (the tail-bound route
  of Wang et al., arXiv:2304.05007, Thm 4.2) re-derived for the *neutral-aware* pair, so it is
  valid wherever the numerical bound is: for every λ > 0, z⁺ ≤ e^(λz − 1)/λ, hence

      δ(ε) ≤ (1/n)·E[e^(λZ − 1)]/λ = exp(n·ln M(λ) − 1 − ln(λn)),
      M(λ) = 1 + r_A(e^(λc_A) − 1) + r_B(e^(λc_B) − 1) + s(e^(λc_K) − 1),

  minimised over λ, both directions. It needs no summation, is non-increasing in ε (every c
  decreases with ε) and is looser than the numerical bound.

The variation-ratio paper's own asymptotic forms (Wang et al., arXiv:2304.05007, Thm 4.2/4.3) are
derived from the published pair (s = 1 − r0 − r1), which is not valid in general (docs/theory.md,
"Published pair"); they are therefore not offered as guarantees.
"""

from __future__ import annotations

import math

from dpacct_shuffle.core.bound import MAX_EVALUATED_USERS, VariationRatio, _directional_problems
from dpacct_shuffle.core.numerics import chernoff_log_upper
from dpacct_shuffle.core.search import bisect, expand_bracket
from dpacct_shuffle.core.validation import check_delta, check_epsilon, check_num_users, check_range

_ROUNDING_MARGIN = 1e-12


def fmt_validity_limit(n: int, delta: float) -> float:
    """Largest ε0 for which :func:`fmt_epsilon` holds: ln(n/(8 ln(2/δ)) − 1) (−inf if none)."""
    users = check_num_users(n)
    delta_value = check_delta(delta)
    clones = users / (8.0 * math.log(2.0 / delta_value)) - 1.0
    return math.log(clones) if clones > 0.0 else -math.inf


def fmt_epsilon(epsilon0: float, n: int, delta: float) -> float:
    """FMT closed form (Feldman, McMillan & Talwar, SODA 2023, arXiv:2208.04591, Thm 3.2):
    shuffling n ε0-LDP reports is (ε, δ)-DP with

        ε = ln(1 + 4(e^ε0 − 1)·(sqrt(2 ln(4/δ)/((e^ε0 + 1)·n)) + 1/n)),

    valid when ε0 ≤ ln(n/(8 ln(2/δ)) − 1); outside it a ValueError is raised. The result is inflated
    by a relative 1e-12, far above the rounding error of the few libm calls, so floating-point
    rounding never under-reports.
    """
    eps0 = check_epsilon(epsilon0, "epsilon0")
    users = check_num_users(n)
    delta_value = check_delta(delta)
    limit = fmt_validity_limit(users, delta_value)
    if eps0 > limit:
        raise ValueError(
            "fmt_epsilon needs epsilon0 <= ln(n/(8 ln(2/delta)) - 1) = "
            f"{limit!r} for n={users}, delta={delta_value!r}; got epsilon0={eps0!r}"
        )
    root = math.sqrt(2.0 * math.log(4.0 / delta_value) / ((math.exp(eps0) + 1.0) * users))
    value = math.log1p(4.0 * math.expm1(eps0) * (root + 1.0 / users))
    return value * (1.0 + _ROUNDING_MARGIN)


def chernoff_delta(variation_ratio: VariationRatio, epsilon: float, n: int) -> float:
    """Chernoff-form upper bound on the shuffled δ(ε) of the neutral-aware pair (module docstring).

    Valid for the same randomizers as ``variation_ratio.delta``; never below it.
    """
    if not isinstance(variation_ratio, VariationRatio):
        raise TypeError(f"variation_ratio must be a VariationRatio, got {type(variation_ratio).__name__}")
    eps = check_epsilon(epsilon)
    users = min(check_num_users(n), MAX_EVALUATED_USERS)
    if variation_ratio.beta == 0.0 or eps >= variation_ratio.epsilon0:
        return 0.0
    log_bound = max(chernoff_log_upper(problem)
                    for problem in _directional_problems(variation_ratio._key(), eps, users))
    return min(1.0, math.exp(min(log_bound, 0.0)))


def chernoff_epsilon(variation_ratio: VariationRatio, delta: float, n: int, rtol: float = 1e-4) -> float:
    """Smallest ε (bisection to relative ``rtol``, upper end returned) with chernoff_delta ≤ δ."""
    target = check_delta(delta)
    tolerance = check_range("rtol", rtol, 0.0, 1.0, low_open=True)
    if chernoff_delta(variation_ratio, 0.0, n) <= target:
        return 0.0

    def meets(eps: float) -> bool:
        return not chernoff_delta(variation_ratio, eps, n) > target

    high = variation_ratio.epsilon0
    if math.isinf(high):  # no cap (p = ∞): double from 1 until the bound meets the target
        _, high = expand_bracket(lambda eps: not meets(eps), 0.0, 1.0)
    return bisect(meets, high, 0.0, rtol=tolerance)
