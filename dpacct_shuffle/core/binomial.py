"""The binomial law Bin(n, p): pmf, cdf and survival function without ``scipy.stats`` overhead.

``scipy.stats.binom.pmf/cdf/sf`` check and broadcast their arguments on every call (about 0.2 ms),
which dominates the core's cell-wise evaluator at small n, where it is called tens of thousands of
times per privacy-loss distribution. These functions evaluate the same Boost kernels that
``scipy.stats.binom`` dispatches to (``scipy.special``'s binomial ufuncs) and apply the same support
rules — pmf 0 off the support {0, …, n}; cdf 0 below 0 and 1 from n on; sf the complement — so every
value is bit-identical to ``scipy.stats.binom``'s for integer n ≥ 0 and 0 ≤ p ≤ 1 (the callers
validate both). ``tests/test_core_structure.py`` compares them on random arguments.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import _ufuncs

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


__all__ = ["binomial_cdf", "binomial_pmf", "binomial_sf"]
