"""Binomial pmfs on many windows (dpacct_shuffle.core.binomial_rows) against scipy.stats.binom."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpacct_shuffle.core.binomial_rows import PMF_ABSOLUTE_ERROR, binomial_pmf_rows


def _check(trials: np.ndarray, first: np.ndarray, width: int, rate: float) -> float:
    values, rtol = binomial_pmf_rows(trials, first, width, rate)
    k = first[:, None] + np.arange(width)[None, :]
    exact = stats.binom.pmf(k, trials[:, None], rate)
    assert values.shape == exact.shape
    assert np.all(np.abs(values - exact) <= rtol * exact + PMF_ABSOLUTE_ERROR)
    return rtol


@pytest.mark.parametrize("rate", [0.5, 0.9387, 0.0188, 1e-3])
def test_rows_of_consecutive_and_spaced_trials(rate: float) -> None:
    for trials in (10_000 - np.arange(0, 300), 1_000_000 - 37 * np.arange(72)):
        sd = np.sqrt(trials * rate * (1.0 - rate))
        width = int(20 * sd.max()) + 1
        first = np.maximum(np.floor(trials * rate - 10 * sd), 0).astype(np.int64)
        rtol = _check(trials, first, width, rate)
        assert rtol < 1e-9


def test_windows_off_the_support_tiny_trials_and_degenerate_rates() -> None:
    trials = np.array([0, 1, 2, 5, 3, 0, 40])
    first = np.array([0, 1, 2, 6, 0, 1, 3])
    for rate in (0.5, 0.2, 0.999):
        _check(trials, first, 7, rate)
    for rate in (0.0, 1.0):
        values, _ = binomial_pmf_rows(trials, first, 7, rate)
        k = first[:, None] + np.arange(7)[None, :]
        assert np.array_equal(values, np.where(k == (0 if rate == 0.0 else trials[:, None]), 1.0, 0.0))
    assert binomial_pmf_rows(trials, first, 0, 0.5)[0].shape == (7, 0)


def test_rows_whose_shared_tables_would_overflow_are_split() -> None:
    # trials from 10 to 10⁶ in one call: no single pair of tables covers them in range
    trials = np.array([10, 1_000, 100_000, 1_000_000])
    first = np.array([0, 400, 49_000, 499_000])
    _check(trials, first, 2_000, 0.5)
