"""The shuffle model ([HC] §5): shuffled DP ⇒ LDP, the closed-form amplification bound of [FMT22] and
its robust form.

[CSUZZ19] Cheu, Smith, Ullman, Zeber, Zhilyaev, "Distributed Differential Privacy via Shuffling",
EUROCRYPT 2019; [FMT22] Feldman, McMillan, Talwar, "Stronger Privacy Amplification by Shuffling
for Rényi and Approximate Differential Privacy", SODA 2023, arXiv:2208.04591; [HC] Y. Huang and
C. L. Canonne, "Lemmas of Differential Privacy".
"""

from __future__ import annotations

import math

from dpacct_shuffle.core.closed_forms import fmt_epsilon, fmt_validity_limit
from dpacct_shuffle.core.rounding import round_loss_down, round_loss_up
from dpacct_shuffle.core.validation import check_epsilon, check_num_users, check_range
from dpacct_shuffle.lemmas.checks import Profile, check_delta_closed, check_profile


def shuffle_to_ldp(eps: float, delta: float, n: int) -> tuple[float, float]:
    """[CSUZZ19, Thm 6.2] ([HC] Thm 5.1): one-message shuffle (ε_S, δ_S)-DP ⇒ LDP.

    If the shuffled one-message protocol with n users is (ε_S, δ_S)-DP, the local randomizer is
    (ε_S + ln n, δ_S)-LDP. Returns ``(ε_S + ln n, δ_S)`` (ε rounded up).
    """
    epsilon = check_epsilon(eps, "eps")
    delta_value = check_delta_closed(delta)
    users = check_num_users(n, "n")
    if users == 1:
        return epsilon, delta_value
    return round_loss_up(epsilon + math.log(users)), delta_value


def shuffle_to_ldp_profile(profile: Profile, n: int) -> Profile:
    """[HC] Thm 5.1 applied at every ε: shuffled profile δ_S(ε) → local profile δ_L.

    ``δ_L(ε) = δ_S(ε − ln n)`` for ε ≥ ln n; below ln n the theorem says nothing and the trivial
    bound 1 is returned. ε − ln n is rounded down (δ_S is non-increasing). ``profile`` must return
    values in [0, 1] (ValueError otherwise).
    """
    check_profile(profile)
    users = check_num_users(n, "n")
    log_n = math.log(users)

    def delta_of_eps(eps: float) -> float:
        epsilon = check_epsilon(eps, "eps")
        if users == 1:
            return check_delta_closed(profile(epsilon), "profile(eps)")
        shifted = round_loss_down(epsilon - round_loss_up(log_n))
        if shifted < 0.0:
            return 1.0
        return check_delta_closed(profile(shifted), "profile(eps)")

    return delta_of_eps


def fmt_shuffle_bound(eps0: float, n: int, delta: float) -> float:
    """[FMT22, Thm 3.2] ([HC] Thm 5.2): shuffling n reports of an ε0-LDP randomizer is (ε, δ)-DP,

        ε = ln(1 + 4(e^{ε0} − 1)(sqrt(2 ln(4/δ)/((e^{ε0} + 1) n)) + 1/n)),

    valid only when ε0 ≤ ln(n/(8 ln(2/δ)) − 1) (raises ValueError naming ``eps0`` otherwise) and
    δ ∈ (0, 1). Delegates to :func:`dpacct_shuffle.core.closed_forms.fmt_epsilon` (which rounds up
    and explains why the bound holds for *every* ε0-LDP randomizer despite the FMT22 erratum).
    """
    epsilon0 = check_epsilon(eps0, "eps0")
    users = check_num_users(n, "n")
    delta_value = check_range("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    limit = fmt_validity_limit(users, delta_value)
    if epsilon0 > limit:
        allowed = f"eps0 <= {limit!r}" if math.isfinite(limit) else "no eps0 (n too small for this delta)"
        raise ValueError(
            f"fmt_shuffle_bound is valid only when eps0 <= ln(n/(8 ln(2/delta)) - 1); for n={users}, "
            f"delta={delta_value!r} this allows {allowed}, got eps0={epsilon0!r}"
        )
    return fmt_epsilon(epsilon0, users, delta_value)


def robust_fmt_shuffle_bound(eps0: float, n: int, delta: float, honest_fraction: float) -> float:
    """Robust shuffle DP ([HC] Def 2.6 and the remark after Thm 5.2).

    If only a fraction γ of the n users follow the protocol, apply :func:`fmt_shuffle_bound` to the
    ⌊γ·n⌋ honest users (the floor keeps it sound: fewer users means a larger ε). Raises ValueError
    when γ ∉ (0, 1], ⌊γ·n⌋ < 1, or the validity condition fails for ⌊γ·n⌋.
    """
    epsilon0 = check_epsilon(eps0, "eps0")
    users = check_num_users(n, "n")
    fraction = check_range("honest_fraction", honest_fraction, 0.0, 1.0, low_open=True)
    honest = math.floor(fraction * users)
    if honest < 1:
        raise ValueError(
            f"honest_fraction * n must leave at least one honest user, got floor({fraction!r} * {users}) = {honest}"
        )
    return fmt_shuffle_bound(epsilon0, honest, delta)


__all__ = [
    "fmt_shuffle_bound",
    "robust_fmt_shuffle_bound",
    "shuffle_to_ldp",
    "shuffle_to_ldp_profile",
]
