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

*Error.* Every step of a running product carries a relative error ≤ 5u (u = 2⁻⁵³: up to three
roundings of ρ1, or two of ρ2/(1 − s), one division and the product's multiplication), and the
anchor of C the relative error of scipy's pmf (``special_function_rtol``). An entry is C·E1·E2,
where C divides the anchor by E1 and E2 at the anchor and by G(m), so it carries at most
2·5u·L1 + 2·2u·L2 + 4u·Lm steps' errors (L the three table lengths) plus five roundings: every
value is within rtol = special_function_rtol(m) + 10u·(L1 + L2 + Lm + 1) of the pmf, to first
order (the second-order term is covered by a factor 1.01 while rtol ≤ 0.01). Tables are used only
where all entries of E1 and E2 lie in [1e-140, 1e140] and those of C in [1e-290, 1e290], so no
intermediate product over- or underflows; a value whose result is subnormal is off by at most
2⁻¹⁰⁷⁴ absolute. Rows whose tables would leave that range are split in halves, and a single such row is evaluated by scipy's
pmf directly (as are requests of fewer than 2048 values, where building tables costs more).
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from dpacct_shuffle.core.binomial import binomial_pmf
from dpacct_shuffle.core.problem import UNIT_ROUNDOFF, special_function_rtol

# absolute error allowed to one computed pmf value (subnormal results), far above 2⁻¹⁰⁷⁴
PMF_ABSOLUTE_ERROR = 1e-300
_TABLE_RANGE = 1e140
_ROW_CONSTANT_RANGE = 1e290
# below this many values scipy's pmf is cheaper than building tables
_MIN_TABLE_VALUES = 2048
# rows are filled in pieces of about this many values (their temporaries stay small)
_PIECE = 1 << 15


def _power_table(lo: int, hi: int, anchor: int, rho: float) -> np.ndarray:
    """x ↦ ρ^x/x! on x = lo … hi, scaled to 1 at ``anchor`` (lo ≤ anchor ≤ hi), by running
    products of ρ/(x + 1) upwards and (x + 1)/ρ downwards."""
    table = np.empty(hi - lo + 1)
    table[anchor - lo] = 1.0
    np.cumprod(rho / np.arange(anchor + 1, hi + 1, dtype=np.float64), out=table[anchor - lo + 1:])
    np.cumprod(np.arange(anchor, lo, -1, dtype=np.float64) / rho,
               out=table[anchor - lo - 1::-1] if anchor > lo else table[:0])
    return table


def _windows(table: np.ndarray, width: int) -> np.ndarray:
    """Read-only view (len − width + 1, width) of the windows of a 1-D contiguous table."""
    step = table.strides[0]
    return as_strided(table, (len(table) - width + 1, width), (step, step), writeable=False)


class BinomialRows:
    """The pmf values P[Bin(trials_b, rate) = first_b + i], 0 ≤ i < ``width``, of many rows
    (module docstring), filled on demand a few rows at a time.

    Attributes:
      rtol: relative error bound of every value (up to :data:`PMF_ABSOLUTE_ERROR` absolute).
      row_factors: per-row factors C(m_b) (1 for rows evaluated by scipy): a row filled with
        ``scaled=False`` times its factor is the pmf (exact arithmetic; same error bound).
    """

    def __init__(self, trials: np.ndarray, first: np.ndarray, width: int, rate: float) -> None:
        self._trials = np.asarray(trials, dtype=np.int64)
        self._first = np.asarray(first, dtype=np.int64)
        self.width = max(int(width), 0)
        self._rate = rate
        # (first row, end row, tables or None for scipy's pmf) covering the rows in order
        self._segments: list[tuple[int, int, _Tables | None]] = []
        self.rtol = 0.0
        self.row_factors = np.ones(len(self._trials))
        if len(self._trials) and self.width:
            self._plan(0, len(self._trials))

    def _plan(self, lo: int, hi: int) -> None:
        trials, first = self._trials[lo:hi], self._first[lo:hi]
        tables = None
        if 0.0 < self._rate < 1.0 and (hi - lo) * self.width >= _MIN_TABLE_VALUES:
            with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
                tables = _Tables.build(trials, first, self.width, self._rate)
            if tables is None and hi - lo > 1:
                middle = (lo + hi) // 2
                self._plan(lo, middle)
                self._plan(middle, hi)
                return
        if tables is not None:
            self.row_factors[lo:hi] = tables.row_constant[trials - tables.m_lo]
        rtol = tables.rtol if tables is not None else float(
            special_function_rtol(float(np.max(trials))))
        self.rtol = max(self.rtol, rtol)
        self._segments.append((lo, hi, tables))

    def fill(self, out: np.ndarray, lo: int, hi: int, scaled: bool = True) -> None:
        """Write rows lo … hi − 1 into ``out`` (shape (hi − lo, width), may be a view); without
        their ``row_factors`` when not ``scaled`` (each entry then lies in [1e-280, 1e280] or is 0,
        so sums of a row stay finite)."""
        step = max(1, _PIECE // self.width) if self.width else 1
        for start, end, tables in self._segments:
            for a in range(max(lo, start), min(hi, end), step):
                b = min(a + step, hi, end)
                target = out[a - lo:b - lo]
                if tables is None:
                    k = self._first[a:b, None] + np.arange(self.width, dtype=np.int64)[None, :]
                    target[...] = binomial_pmf(k, self._trials[a:b, None], self._rate)
                else:
                    tables.fill(target, self._trials[a:b], self._first[a:b], scaled)

    def values(self) -> np.ndarray:
        """All rows, shape (rows, width)."""
        out = np.empty((len(self._trials), self.width))
        self.fill(out, 0, len(self._trials))
        return out


class _Tables:
    """E1, the reversed E2 and C of one group of rows (module docstring)."""

    __slots__ = ("e1_rows", "e2_rows", "k_lo", "j_top", "m_lo", "row_constant", "rtol")
    e1_rows: np.ndarray
    e2_rows: np.ndarray
    k_lo: int
    j_top: int
    m_lo: int
    row_constant: np.ndarray
    rtol: float

    @staticmethod
    def build(trials: np.ndarray, first: np.ndarray, width: int, rate: float) -> _Tables | None:
        """The tables of these rows, or None where one would leave its range."""
        middle = len(trials) // 2
        m_a, f_a = int(trials[middle]), int(first[middle])
        # anchor of C: a point of the middle row's support, inside its window when it meets it
        k_a = max(min(max(round(m_a * rate), f_a), f_a + width - 1, m_a), 0)
        j_a = m_a - k_a
        one_minus = 1.0 - rate
        rho2 = max(m_a * one_minus, 0.5)
        rho1 = rho2 * (rate / one_minus)
        gaps = trials - first
        k_lo = min(int(first.min()), k_a)
        k_hi = max(int(first.max()) + width - 1, k_a)
        j_top = max(int(gaps.max()), j_a)  # largest m − k of a window
        j_bottom = int(gaps.min()) - width + 1  # smallest, possibly < 0 (pmf 0 there)
        j_lo = max(0, min(j_bottom, j_a))
        m_lo, m_hi = int(trials.min()), int(trials.max())
        e1 = _power_table(k_lo, k_hi, min(max(int(rho1), k_lo), k_hi), rho1)
        # E2 on j = j_bottom … j_top, zero below 0, stored reversed: a row's j = m − k − i is a
        # slice
        e2_reversed = np.zeros(j_top - min(j_lo, j_bottom) + 1)
        e2 = e2_reversed[j_top - j_lo::-1]
        e2[...] = _power_table(j_lo, j_top, min(max(int(rho2), j_lo), j_top), rho2)
        # C(m) = C(m_a)·G(m_a)/G(m) with G(m) = σ^m/m!, σ = ρ2/(1 − s)
        g = _power_table(m_lo, m_hi, m_a, rho2 / one_minus)
        anchor = float(binomial_pmf(k_a, m_a, rate))
        row_constant = anchor / (e1[k_a - k_lo] * e2[j_a - j_lo]) / g
        low, high = 1.0 / _TABLE_RANGE, _TABLE_RANGE
        if not (low <= e1.min() and e1.max() <= high and low <= e2.min() and e2.max() <= high
                and 1.0 / _ROW_CONSTANT_RANGE <= row_constant.min()
                and row_constant.max() <= _ROW_CONSTANT_RANGE):
            return None
        tables = _Tables()
        tables.e1_rows, tables.e2_rows = _windows(e1, width), _windows(e2_reversed, width)
        tables.k_lo, tables.j_top, tables.m_lo = k_lo, j_top, m_lo
        tables.row_constant = row_constant
        tables.rtol = 1.01 * (float(special_function_rtol(float(m_a)))
                              + 10.0 * UNIT_ROUNDOFF * (len(e1) + len(e2) + len(g) + 1))
        return tables

    def fill(self, out: np.ndarray, trials: np.ndarray, first: np.ndarray, scaled: bool) -> None:
        # E1·E2 first (in [1e-280, 1e280]), then C: a result is subnormal only if the pmf is
        np.multiply(self.e1_rows[first - self.k_lo], self.e2_rows[self.j_top - (trials - first)],
                    out=out)
        if scaled:
            out *= self.row_constant[trials - self.m_lo][:, None]


__all__ = ["BinomialRows", "PMF_ABSOLUTE_ERROR"]
