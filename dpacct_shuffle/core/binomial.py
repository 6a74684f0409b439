"""The binomial law Bin(n, p): pmf, cdf and survival function without ``scipy.stats`` overhead.

``scipy.stats.binom.pmf/cdf/sf`` check and broadcast their arguments on every call (about 0.2 ms),
which dominates the core's cell-wise evaluator at small n, where it is called tens of thousands of
times per privacy-loss distribution. These functions evaluate the same Boost kernels that
``scipy.stats.binom`` dispatches to (``scipy.special``'s binomial ufuncs) and apply the same support
rules — pmf 0 off the support {0, …, n}; cdf 0 below 0 and 1 from n on; sf the complement — so every
value is bit-identical to ``scipy.stats.binom``'s for integer n ≥ 0 and 0 ≤ p ≤ 1 (the callers
validate both). ``tests/test_core_structure.py`` compares them on random arguments.

:func:`binomial_points` evaluates these kernels and P[Bin(m, p) ≥ k] at integer points through a
memo per (kind, p) (one lock: threads share it safely): an ε search evaluates the same anchors (c, t) of the same π at every point and
every band refinement (a RAPPOR(2, 64) search at n = 10⁴: 550,000 anchors, 22,000 distinct). The
memo stores the kernels' own values, so every result is the float the kernel returns for that
point, whatever was evaluated before.
"""

from __future__ import annotations

import threading

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import _ufuncs, betainc

_pmf_kernel = _ufuncs._binom_pmf
_cdf_kernel = _ufuncs._binom_cdf
_sf_kernel = _ufuncs._binom_sf


def binomial_pmf(k: ArrayLike, n: ArrayLike, p: float) -> NDArray[np.float64]:
    """P[Bin(n, p) = k]; 0 where k is not an integer in [0, n]."""
    k_arr, n_arr = np.broadcast_arrays(np.asarray(k, dtype=np.float64),
                                       np.asarray(n, dtype=np.float64))
    inside = (k_arr >= 0.0) & (k_arr <= n_arr) & (k_arr == np.floor(k_arr))
    values = _pmf_kernel(np.where(inside, k_arr, 0.0), n_arr, p)
    return np.where(inside, values, 0.0)


def binomial_cdf(k: ArrayLike, n: ArrayLike, p: float) -> NDArray[np.float64]:
    """P[Bin(n, p) ≤ k] (k rounded down); 0 for k < 0 and 1 for k ≥ n."""
    k_arr, n_arr = np.broadcast_arrays(np.floor(np.asarray(k, dtype=np.float64)),
                                       np.asarray(n, dtype=np.float64))
    inside = (k_arr >= 0.0) & (k_arr < n_arr)
    values = _cdf_kernel(np.where(inside, k_arr, 0.0), n_arr, p)
    return np.where(inside, values, np.where(k_arr >= n_arr, 1.0, 0.0))


def binomial_sf(k: ArrayLike, n: ArrayLike, p: float) -> NDArray[np.float64]:
    """P[Bin(n, p) > k] (k rounded down); 1 for k < 0 and 0 for k ≥ n."""
    k_arr, n_arr = np.broadcast_arrays(np.floor(np.asarray(k, dtype=np.float64)),
                                       np.asarray(n, dtype=np.float64))
    inside = (k_arr >= 0.0) & (k_arr < n_arr)
    values = _sf_kernel(np.where(inside, k_arr, 0.0), n_arr, p)
    return np.where(inside, values, np.where(k_arr < 0.0, 1.0, 0.0))


# the memo of binomial_points: one dense table over a rectangle of points (m, k) per (kind, p), at
# most MEMO_MAX_POINTS points per table (a request whose rectangle is larger is declined) and
# MEMO_TOTAL_POINTS in all tables (oldest tables dropped first): about 40 MB
MEMO_MAX_POINTS = 1 << 20
MEMO_TOTAL_POINTS = 1 << 22
# requests with fewer points than this are declined (the lookup costs more than the kernel)
_MEMO_MIN_POINTS = 64


class _PointTable:
    """Kernel values on the points (m0 + i, k0 + j) of a rectangle, with a mask of those known."""

    __slots__ = ("m0", "k0", "values", "known")

    def __init__(self, m0: int, k0: int, rows: int, columns: int) -> None:
        self.m0, self.k0 = m0, k0
        self.values = np.zeros((rows, columns))
        self.known = np.zeros((rows, columns), dtype=bool)


_TABLES: dict[tuple[str, float], _PointTable] = {}
_TABLES_LOCK = threading.Lock()


def _kernel(kind: str, k: NDArray[np.float64], m: NDArray[np.float64], p: float
            ) -> NDArray[np.float64]:
    """The kernel of :func:`binomial_points` at its points."""
    if kind == "pmf":
        values: NDArray[np.float64] = _pmf_kernel(k, m, p)
    elif kind == "cdf":
        values = _cdf_kernel(k, m, p)
    elif kind == "sf":
        values = _sf_kernel(k, m, p)
    else:
        values = betainc(k, m - k + 1.0, p)
    return values


def binomial_points(kind: str, k: NDArray[np.float64], m: NDArray[np.float64], p: float
                    ) -> NDArray[np.float64] | None:
    """P[Bin(m, p) = k] (``kind`` "pmf", the kernel of :func:`binomial_pmf`), P[Bin(m, p) ≤ k]
    ("cdf", that of :func:`binomial_cdf`), P[Bin(m, p) > k] ("sf", that of :func:`binomial_sf`)
    or P[Bin(m, p) ≥ k] ("tail", the regularized incomplete beta I_p(k, m − k + 1)) at 1-D arrays
    of integer-valued floats with 0 ≤ k ≤ m (k < m for "cdf" and "sf", 1 ≤ k for "tail": the
    points where the kernel is called), through the memo of the module
    docstring: each point not yet in the table of (kind, p) is evaluated once, by the same kernel
    call as without the memo. None (nothing evaluated) for fewer than ``_MEMO_MIN_POINTS`` points
    or points spread over a rectangle of more than ``MEMO_MAX_POINTS``: the caller evaluates
    those directly."""
    if k.size < _MEMO_MIN_POINTS:
        return None
    with _TABLES_LOCK:
        return _memoized_points(kind, k, m, p)


def _memoized_points(kind: str, k: NDArray[np.float64], m: NDArray[np.float64], p: float
                     ) -> NDArray[np.float64] | None:
    """:func:`binomial_points` for at least ``_MEMO_MIN_POINTS`` points, under the memo's lock."""
    m_lo, m_hi = int(m.min()), int(m.max())
    k_lo, k_hi = int(k.min()), int(k.max())
    key = (kind, p)
    table = _TABLES.pop(key, None)
    if table is not None:
        rows, columns = table.values.shape
        low_m, low_k = min(m_lo, table.m0), min(k_lo, table.k0)
        high_m, high_k = max(m_hi, table.m0 + rows - 1), max(k_hi, table.k0 + columns - 1)
        if (high_m - low_m + 1) * (high_k - low_k + 1) > MEMO_MAX_POINTS:
            table = None  # the union is too large: start over from this request
        elif (low_m, low_k, high_m, high_k) != (table.m0, table.k0, table.m0 + rows - 1,
                                                table.k0 + columns - 1):
            grown = _PointTable(low_m, low_k, high_m - low_m + 1, high_k - low_k + 1)
            i, j = table.m0 - low_m, table.k0 - low_k
            grown.values[i:i + rows, j:j + columns] = table.values
            grown.known[i:i + rows, j:j + columns] = table.known
            table = grown
    if table is None:
        if (m_hi - m_lo + 1) * (k_hi - k_lo + 1) > MEMO_MAX_POINTS:
            return None
        table = _PointTable(m_lo, k_lo, m_hi - m_lo + 1, k_hi - k_lo + 1)
    columns = table.values.shape[1]
    index = (m.astype(np.int64) - table.m0) * columns + (k.astype(np.int64) - table.k0)
    known = table.known.ravel()
    values = table.values.ravel()
    missing = index[~known[index]]
    if missing.size:
        if 64 * missing.size >= known.size:  # many: mark them on the table (no sort)
            marked = np.zeros(known.size, dtype=bool)
            marked[missing] = True
            needed = np.flatnonzero(marked)
        else:
            needed = np.unique(missing)
        values[needed] = _kernel(kind, (table.k0 + needed % columns).astype(np.float64),
                                 (table.m0 + needed // columns).astype(np.float64), p)
        known[needed] = True
    # the newest table last; drop the oldest while the tables hold too many points
    _TABLES[key] = table
    while sum(t.values.size for t in _TABLES.values()) > MEMO_TOTAL_POINTS and len(_TABLES) > 1:
        del _TABLES[next(iter(_TABLES))]
    result: NDArray[np.float64] = values[index]
    return result


def binomial_edge_tails(kind: str, k: NDArray[np.float64], n: NDArray[np.float64], p: float
                        ) -> NDArray[np.float64]:
    """:func:`binomial_cdf` (``kind`` "cdf") or :func:`binomial_sf` ("sf") of 1-D arrays k, n
    (the same floats), the points inside the support read through :func:`binomial_points` when n
    is integer-valued (band edges: every refinement of the bands reads the coarser edges again)."""
    k_arr = np.floor(k)
    inside = (k_arr >= 0.0) & (k_arr < n)
    values = (binomial_points(kind, k_arr[inside], n[inside], p)
              if np.array_equal(n, np.floor(n)) else None)
    if values is None:
        return binomial_cdf(k, n, p) if kind == "cdf" else binomial_sf(k, n, p)
    out = np.where(k_arr >= n, 1.0, 0.0) if kind == "cdf" else np.where(k_arr < 0.0, 1.0, 0.0)
    out[inside] = values
    return out


__all__ = ["binomial_cdf", "binomial_edge_tails", "binomial_pmf", "binomial_points", "binomial_sf"]
