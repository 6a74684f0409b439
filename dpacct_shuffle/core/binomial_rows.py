"""Binomial pmfs on many windows at once, from three shared tables of ratios.

For rows b with trials m_b and windows k = f_b, …, f_b + w − 1, the pmf of Bin(m, s) factorises as

    P[Bin(m, s) = k] = C(m)·E1(k)·E2(m − k),
    E1(k) ∝ ρ1^k/k!,  E2(j) ∝ ρ2^j/j!,  C(m) ∝ m!·((1 − s)/ρ2)^m,  ρ1 = ρ2·s/(1 − s),

for every ρ2 > 0 (the powers recombine to s^k (1 − s)^{m−k}, the factorials to the binomial
coefficient). With ρ2 the typical m − k of the rows, E1 and E2 peak near the typical k and m − k,
so the tables stay in a narrow range of magnitudes; each is a running product of the ratios
ρ1/(k + 1), ρ2/(j + 1) and ρ2/((1 − s)(m + 1)) from an anchor, and C is anchored by one pmf value
from scipy (:func:`dpacct_shuffle.core.binomial.binomial_pmf`). A row is then two contiguous slices
of the tables and two multiplications per value — no exponential, no log-factorial of magnitude
m·ln m (whose rounding error grows with m).

*Error.* Every computed ratio carries a relative error ≤ 4u (u = 2⁻⁵³: the rounding of ρ1 or of
ρ2/(1 − s), one division, and the running product's multiplication), and the anchor of C the
relative error of scipy's pmf (``special_function_rtol``). An entry is a product of at most L1 + L2
+ Lm ratios (the three table lengths) and of the anchor, and the anchor divides by two table
entries, so the relative error of every value is at most
rtol = special_function_rtol(m) + 10u·(L1 + L2 + Lm + 1), to first order (the second-order term
is covered by a factor 1.01 while rtol ≤ 0.01). Tables are used only where all entries of E1 and
E2 lie in [1e-140, 1e140] and those of C in [1e-290, 1e290], so no intermediate product over- or
underflows; a value whose result is subnormal is off by at most 2⁻¹⁰⁷⁴ absolute. Rows whose
tables would leave that range are split in halves, and a single such row is evaluated by scipy's
pmf directly.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from dpacct_shuffle.core.binomial import binomial_pmf
from dpacct_shuffle.core.problem import UNIT_ROUNDOFF, special_function_rtol

# absolute error allowed to one computed pmf value (subnormal results), far above 2⁻¹⁰⁷⁴
PMF_ABSOLUTE_ERROR = 1e-300
_TABLE_RANGE = 1e140
_ROW_CONSTANT_RANGE = 1e290


def _power_table(lo: int, hi: int, anchor: int, rho: float) -> np.ndarray:
    """x ↦ ρ^x/x! on x = lo … hi, scaled to 1 at ``anchor`` (lo ≤ anchor ≤ hi), by running
    products of ρ/(x + 1) upwards and (x + 1)/ρ downwards."""
    up = np.cumprod(rho / np.arange(anchor + 1, hi + 1, dtype=np.float64))
    down = np.cumprod(np.arange(anchor, lo, -1, dtype=np.float64) / rho)
    return np.concatenate([down[::-1], [1.0], up])


def _in_range(values: np.ndarray, bound: float) -> bool:
    return bool(np.all((values >= 1.0 / bound) & (values <= bound)))


def _scipy_rows(trials: np.ndarray, first: np.ndarray, width: int,
                rate: float) -> tuple[np.ndarray, float]:
    k = first[:, None] + np.arange(width, dtype=np.int64)[None, :]
    values = binomial_pmf(k, trials[:, None], rate)
    return values, float(special_function_rtol(float(np.max(trials))))


def _table_rows(trials: np.ndarray, first: np.ndarray, width: int,
                rate: float) -> tuple[np.ndarray, float]:
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        tables = _tables(trials, first, width, rate)
    if tables is None:
        if len(trials) == 1:
            return _scipy_rows(trials, first, width, rate)
        middle = len(trials) // 2
        low, low_rtol = _table_rows(trials[:middle], first[:middle], width, rate)
        high, high_rtol = _table_rows(trials[middle:], first[middle:], width, rate)
        return np.concatenate([low, high]), max(low_rtol, high_rtol)
    return tables


def _tables(trials: np.ndarray, first: np.ndarray, width: int,
            rate: float) -> tuple[np.ndarray, float] | None:
    rows = len(trials)
    middle = rows // 2
    m_a = int(trials[middle])
    # anchor of C: a point of the middle row's support, inside its window when it meets it
    k_a = min(max(round(m_a * rate), int(first[middle]), 0), int(first[middle]) + width - 1, m_a)
    k_a = max(k_a, 0)
    j_a = m_a - k_a
    one_minus = 1.0 - rate
    rho2 = max(m_a * one_minus, 0.5)
    rho1 = rho2 * (rate / one_minus)
    k_lo = min(int(np.min(first)), k_a)
    k_hi = max(int(np.max(first)) + width - 1, k_a)
    j_top = max(int(np.max(trials - first)), j_a)  # largest m − k of a window
    j_bottom = int(np.min(trials - first)) - width + 1  # smallest, possibly < 0 (pmf 0 there)
    j_lo = max(0, min(j_bottom, j_a))
    m_lo, m_hi = int(np.min(trials)), int(np.max(trials))
    e1 = _power_table(k_lo, k_hi, min(max(int(rho1), k_lo), k_hi), rho1)
    e2 = _power_table(j_lo, j_top, min(max(int(rho2), j_lo), j_top), rho2)
    # C(m) = C(m_a)·G(m_a)/G(m) with G(m) = σ^m/m!, σ = ρ2/(1 − s)
    g = _power_table(m_lo, m_hi, m_a, rho2 / one_minus)
    anchor = float(binomial_pmf(k_a, m_a, rate))
    row_constant = anchor / (e1[k_a - k_lo] * e2[j_a - j_lo]) / g
    if not (_in_range(e1, _TABLE_RANGE) and _in_range(e2, _TABLE_RANGE)
            and _in_range(row_constant, _ROW_CONSTANT_RANGE)):
        return None
    # E2 on j = j_bottom … j_top, zero below 0, reversed so that a row's j = m − k − i is a slice
    e2_padded = np.concatenate([np.zeros(max(0, j_lo - j_bottom)), e2])
    e2_reversed = np.ascontiguousarray(e2_padded[::-1])
    e1_rows = sliding_window_view(e1, width)[first - k_lo]
    e2_rows = sliding_window_view(e2_reversed, width)[j_top - (trials - first)]
    values = e1_rows * e2_rows
    values *= row_constant[trials - m_lo][:, None]
    rtol = float(special_function_rtol(float(m_a))) + 10.0 * UNIT_ROUNDOFF * (
        len(e1) + len(e2) + len(g) + 1)
    return values, rtol * 1.01


def binomial_pmf_rows(trials: np.ndarray, first: np.ndarray, width: int,
                      rate: float) -> tuple[np.ndarray, float]:
    """P[Bin(trials_b, rate) = first_b + i] for every row b and 0 ≤ i < ``width`` (0 off the
    support), and a relative error bound valid for every value (module docstring).

    Args:
      trials: integer array (rows,) of trials ≥ 0.
      first: integer array (rows,) of first values ≥ 0.
      width: number of values per row, ≥ 0.
      rate: success probability in [0, 1].

    Returns:
      (values, rtol): values of shape (rows, width), each within a relative ``rtol`` of the exact
      pmf, up to an absolute :data:`PMF_ABSOLUTE_ERROR` (subnormal results).
    """
    trials = np.asarray(trials, dtype=np.int64)
    first = np.asarray(first, dtype=np.int64)
    if len(trials) == 0 or width <= 0:
        return np.zeros((len(trials), max(width, 0))), 0.0
    if not 0.0 < rate < 1.0:
        return _scipy_rows(trials, first, width, rate)
    return _table_rows(trials, first, width, rate)


__all__ = ["PMF_ABSOLUTE_ERROR", "binomial_pmf_rows"]
