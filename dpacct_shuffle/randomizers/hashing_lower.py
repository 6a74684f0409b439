"""Exact δ(ε) of local hashing with every other user at a third input: a certified lower bound
(docs/theory.md, "Lower bounds", local hashing).

Local hashing with range l and local ε0 (e = e^ε0, g = 1/(e + l − 1)): a user with input x draws a
uniformly random function h: [d] → [l] and reports (h, y), y = h(x) w.p. e·g and each other value
w.p. g. Instance: victim pair (x⁰, x¹), the n − 1 others all at a third input z. For one message
m = (h, y) write a = [y = h(x⁰)], b = [y = h(x¹)], c = [y = h(z)]; the ratios to the others' law are
R_{x⁰}(m)/R_z(m) = e^{a − c} and R_{x¹}(m)/R_z(m) = e^{b − c}.

Exact law. With O the multinomial law of the others' histogram, P_j(H) = Σ_m R_{x^j}(m)·O(H − e_m)
and O(H − e_m) = O′(H)·N_m/(n·R_z(m)), O′ the law of n messages drawn from R_z. Hence
P_j(H) = O′(H)·S_j(H)/n with S_0 = Σ_m N_m·e^{a_m − c_m}, S_1 = Σ_m N_m·e^{b_m − c_m}, and

    D_{e^ε}(P_0 ‖ P_1) = E_{H ~ O′}[(S_0 − e^ε·S_1)⁺] / n

(the other order is the same by the symmetry x⁰ ↔ x¹). Under R_z a message is *rare* (c = 0) w.p.
ρ = (l − 1)·g; for a uniformly random function h(x⁰), h(x¹) are uniform and independent of each
other, of h(z) and of y, so given c the marks a and b are independent Bernoulli(1/l). With R ~
Bin(n, ρ) rare messages, A_r, B_r ~ Bin(R, 1/l) and A_c, B_c ~ Bin(n − R, 1/l), all independent
given R:

    S_0 = R + (e − 1)·A_r + (n − R)/e + (1 − 1/e)·A_c,    S_1 the same with (B_r, B_c),

so given R, S_0 and S_1 are independent copies. Per R the atoms of S_0 are sorted once; for each
atom s of S_1, the set {S_0 > e^ε·s} is a suffix, and E[(S_0 − e^ε·s)⁺] is a difference of two
suffix sums. Cost: Σ_R (window of A_r)·(window of A_c) atoms (about 5·10⁵ at n = 10³, l = 2),
capped by :data:`MAX_ATOMS` (:func:`third_input_instance` returns None beyond it).

Numerics (every value at most the exact δ of the instance). A value is Σ over a set of cells of
P(S_0 − e^ε·S_1); the hockey-stick divergence is the supremum over sets, so cells picked with float
comparisons give a lower bound once the computed sum is lowered by its error: (i) the S-values
carry a relative error ≤ ``VALUE_REL_ERROR`` (a few roundings; the float e is within one ulp of
e^ε0), charged as VALUE_REL_ERROR·(suffix of S_0 + e^ε·s·suffix mass); (ii) suffix sums of m
nonnegative terms err by ≤ γ_m = m·u/(1 − m·u) relatively, charged the same way, and the sum of a
row's nonnegative cell terms by γ_m more (a factor on the total); (iii) e^ε is
rounded up (a larger multiplier lowers the divergence); (iv) probabilities come from
:func:`~dpacct_shuffle.randomizers.lower_bounds.binomial_logpmf` (relative error η of each, three
per cell) and their parameters ρ, 1/l carry a few ulp, whose effect on a k-trial law is at most
k·(error)/min(p, 1 − p) relatively; the total is a factor (1 − η_total) on the final sum. Cells
outside ±``WINDOW_SIGMAS`` standard deviations are dropped (nonnegative terms).
"""

from __future__ import annotations

import math

import numpy as np

from dpacct_shuffle.core.problem import UNIT_ROUNDOFF
from dpacct_shuffle.core.validation import check_epsilon, check_epsilon0, check_num_users
from dpacct_shuffle.randomizers.lower_bounds import _log_rel_error, _window, binomial_logpmf

#: largest number of (R, A_r, A_c) atoms an instance may hold (memory and time stay ~0.1 s)
MAX_ATOMS = 4_000_000
VALUE_REL_ERROR = 1e-12


def _binomial_window(trials: int, p: float) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = _window(trials, p)
    k = np.arange(lo, hi + 1)
    return k, binomial_logpmf(k, trials, p)


class HashingThirdInputInstance:
    """Exact hockey-stick divergence of local hashing with the others at a third input (module
    docstring), rounded down."""

    def __init__(self, n: int, epsilon0: float, hash_range: int) -> None:
        self.n = check_num_users(n)
        self.epsilon0 = check_epsilon0(epsilon0)
        if isinstance(hash_range, bool) or not isinstance(hash_range, int) or hash_range < 2:
            raise ValueError(f"hash_range must be an integer >= 2, got {hash_range!r}")
        self.hash_range = hash_range
        e = math.exp(self.epsilon0)
        l = hash_range
        rare = (l - 1.0) / (e + l - 1.0)
        mark = 1.0 / l
        unit = 8.0 * UNIT_ROUNDOFF
        rows_r, rows_w = _binomial_window(self.n, rare)
        self._rows: list[tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        for r, log_w in zip(rows_r.tolist(), rows_w.tolist()):
            a_r, log_pr = _binomial_window(r, mark)
            a_c, log_pc = _binomial_window(self.n - r, mark)
            values = ((r + (e - 1.0) * a_r)[:, None]
                      + ((self.n - r) / e + (1.0 - 1.0 / e) * a_c)[None, :]).ravel()
            probs = np.exp(log_pr[:, None] + log_pc[None, :]).ravel()  # given R
            order = np.argsort(values, kind="stable")
            values, probs = values[order], probs[order]
            # suffix sums (no cancellation: each is a sum of nonnegative terms)
            suffix_p = np.append(np.cumsum(probs[::-1])[::-1], 0.0)
            suffix_pv = np.append(np.cumsum((probs * values)[::-1])[::-1], 0.0)
            self._rows.append((math.exp(log_w), values, probs, suffix_p, suffix_pv))
        atoms = max((row[1].size for row in self._rows), default=1)
        self._sum_error = (atoms + 2) * UNIT_ROUNDOFF / (1.0 - (atoms + 2) * UNIT_ROUNDOFF)
        parameter_error = (self.n * unit / min(rare, 1.0 - rare)
                           + 2.0 * self.n * unit / min(mark, 1.0 - mark))
        self._prob_error = 5.0 * _log_rel_error(self.n) + parameter_error + 1e-12

    def delta(self, epsilon: float) -> float:
        """D_{e^ε}(P_0 ‖ P_1) of the instance (both orders agree), rounded down."""
        eps = check_epsilon(epsilon)
        if eps >= self.epsilon0:
            return 0.0  # S_0/S_1 ≤ e^ε0 (max_loss)
        scale = math.exp(eps) * (1.0 + 4.0 * UNIT_ROUNDOFF)
        margin = VALUE_REL_ERROR + self._sum_error
        total = 0.0
        for weight, values, probs, suffix_p, suffix_pv in self._rows:
            idx = np.searchsorted(values, scale * values, side="right")
            above_pv, above_p = suffix_pv[idx], suffix_p[idx]
            threshold = scale * values * above_p
            rows = np.maximum(above_pv - threshold - margin * (above_pv + threshold), 0.0)
            total += weight * float(np.sum(probs * rows))
        return max(0.0, total / self.n * (1.0 - self._prob_error - self._sum_error) * (1.0 - 1e-12))

    def max_loss(self) -> float:
        """|ln S_0/S_1| ≤ ε0: each message's ratio pair is e^{a − b} apart."""
        return self.epsilon0 * (1.0 + 1e-12)


def atom_count(n: int, epsilon0: float, hash_range: int) -> int:
    """Number of atoms :class:`HashingThirdInputInstance` would hold (its cost), counted up to
    just above :data:`MAX_ATOMS`."""
    if isinstance(hash_range, bool) or not isinstance(hash_range, int) or hash_range < 2:
        raise ValueError(f"hash_range must be an integer >= 2, got {hash_range!r}")
    e = math.exp(epsilon0)
    rare = (hash_range - 1.0) / (e + hash_range - 1.0)
    lo, hi = _window(n, rare)
    total = 0
    for r in range(lo, hi + 1):
        a_lo, a_hi = _window(r, 1.0 / hash_range)
        c_lo, c_hi = _window(n - r, 1.0 / hash_range)
        total += (a_hi - a_lo + 1) * (c_hi - c_lo + 1)
        if total > MAX_ATOMS:
            break
    return total


def third_input_instance(n: int, epsilon0: float, hash_range: int) -> HashingThirdInputInstance | None:
    """The instance "others at a third input" for local hashing (uniformly random functions,
    domain of at least 3 values), or None when it exceeds :data:`MAX_ATOMS`."""
    if atom_count(n, epsilon0, hash_range) > MAX_ATOMS:
        return None
    return HashingThirdInputInstance(n, epsilon0, hash_range)


__all__ = ["HashingThirdInputInstance", "MAX_ATOMS", "atom_count", "third_input_instance"]
