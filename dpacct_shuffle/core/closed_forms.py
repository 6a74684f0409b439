"""Closed-form amplification bounds, each with its validity conditions (SPEC §4).

Only bounds whose statement we can check against the numerical core are shipped:

* :func:`fmt_epsilon` — Feldman–McMillan–Talwar (seed 000, Thm 5.2 [FMT22, Thm 3.2]) for any
  ε0-LDP randomizer. Valid for every ε0-LDP randomizer because it upper-bounds the worst-case
  variation-ratio pair (β = (e^ε0 − 1)/(e^ε0 + 1), w = 0, the clone reduction), which is valid for
  all ε0-LDP randomizers by the monotonicity-in-β argument of SPEC §3 (see
  :mod:`dpacct_shuffle.core.bound`).

The variation-ratio paper's asymptotic forms (seed 001, Thm 4.2/4.3) are derived from the published
pair; our copy of the seed renders them ambiguously, so they are not offered as guarantees (the
numerical bound is both valid and tighter).
"""

from __future__ import annotations

import math

from dpacct_shuffle.core.validation import check_delta, check_epsilon, check_num_users

_ROUNDING_MARGIN = 1e-12


def fmt_validity_limit(n: int, delta: float) -> float:
    """Largest ε0 for which :func:`fmt_epsilon` holds: ln(n/(8 ln(2/δ)) − 1) (−inf if none)."""
    users = check_num_users(n)
    delta_value = check_delta(delta)
    clones = users / (8.0 * math.log(2.0 / delta_value)) - 1.0
    return math.log(clones) if clones > 0.0 else -math.inf


def fmt_epsilon(epsilon0: float, n: int, delta: float) -> float:
    """FMT closed form (seed 000 Thm 5.2): shuffling n ε0-LDP reports is (ε, δ)-DP with

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
