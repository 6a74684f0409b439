"""The closed form of the huge-e^ε regime: only cells without B- (and K-) clones can be positive."""

from __future__ import annotations

import math

from dpacct_shuffle.core.problem import UNIT_ROUNDOFF, DirectionalProblem, DirectionalResult


def isolated_clone_bracket(problem: DirectionalProblem) -> DirectionalResult | None:
    """Closed form when only cells without B- (and K-) clones can be positive, else ``None``.

    If c_A·n + c_B ≤ 0, every cell with B ≥ 1 has c_A·A + c_B·B + c_K·K ≤ c_A·(n − 1) + c_B < 0;
    likewise every cell with K ≥ 1 when c_K < 0 and c_A·n + c_K ≤ 0. The remaining cells have value
    c_A·A ≥ 0, so with s* = s if c_K < 0 (else 0)

        (1/n)·E[(c_A·A + c_B·B + c_K·K)⁺] = (1/n)·c_A·E[A·1{B = 0, K·1{c_K < 0} = 0}]
                                           = c_A·r_A·(1 − r_B − s*)^(n − 1)

    (E[A·1{…}] = Σ_i P[user i is an A-clone, no other user is a B- or counted K-clone]). This is the
    regime of huge e^ε (p = ∞: δ(ε) tends to β·(1 − r_B − s)^(n−1), the chance that the victim's
    clone type is unique), where the closed forms of the other paths cancel catastrophically
    (their rounding margins grow like |c_B| ∝ e^ε). The conditions are checked with c_A·n rounded
    up by 4u; the value carries the rounding margin of its logarithm,
    8u·(|L| + |ln(c_A·r_A)| + 1) + 2u·(n − 1)·rate/(1 − rate) with L = (n − 1)·ln(1 − rate),
    rate = r_B + s*.
    """
    n, c_a = problem.n, problem.c_a
    reach = c_a * n * (1.0 + 4.0 * UNIT_ROUNDOFF)
    if not c_a > 0.0 or not reach + problem.c_b <= 0.0:
        return None
    if problem.c_k < 0.0 and not reach + problem.c_k <= 0.0:
        return None
    rate = problem.r_b + (problem.s if problem.c_k < 0.0 else 0.0)
    if not 0.0 <= rate < 1.0:
        return None
    log_mass = (n - 1) * math.log1p(-rate)
    log_scale = math.log(c_a * problem.r_a)
    log_error = (8.0 * UNIT_ROUNDOFF * (abs(log_mass) + abs(log_scale) + 1.0)
                 + 2.0 * UNIT_ROUNDOFF * (n - 1) * rate / (1.0 - rate))
    log_value = log_mass + log_scale
    upper = min(1.0, math.exp(log_value + log_error) * (1.0 + 4.0 * UNIT_ROUNDOFF))
    lower = min(upper, math.exp(log_value - log_error) * (1.0 - 4.0 * UNIT_ROUNDOFF))
    return DirectionalResult(lower, upper, 0.0)
