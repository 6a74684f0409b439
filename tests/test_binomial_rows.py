"""Binomial pmfs on many windows (dpacct_shuffle.core.binomial_rows) against scipy.stats.binom."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpacct_shuffle.core.binomial_rows import PMF_ABSOLUTE_ERROR, BinomialRows


def _check(trials: np.ndarray, first: np.ndarray, width: int, rate: float) -> float:
    rows = BinomialRows(trials, first, width, rate)
    values, rtol = rows.values(), rows.rtol
    # filled a few rows at a time into a larger buffer: the same values
    buffer = np.full((len(trials), width + 3), np.nan)
    for lo in range(0, len(trials), 3):
        rows.fill(buffer[lo:lo + 3, 1:width + 1], lo, min(lo + 3, len(trials)))
    assert np.array_equal(buffer[:, 1:width + 1], values)
    k = first[:, None] + np.arange(width)[None, :]
    exact = stats.binom.pmf(k, trials[:, None], rate)
    assert values.shape == exact.shape
    assert np.all(np.abs(values - exact) <= rtol * exact + PMF_ABSOLUTE_ERROR)
    # unscaled rows times their factors: the same values
    unscaled = np.empty((len(trials), width))
    rows.fill(unscaled, 0, len(trials), scaled=False)
    assert np.all(np.abs(unscaled * rows.row_factors[:, None] - exact) <= rtol * exact
                  + PMF_ABSOLUTE_ERROR)
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
        values = BinomialRows(trials, first, 7, rate).values()
        k = first[:, None] + np.arange(7)[None, :]
        support = 0 if rate == 0.0 else trials[:, None]
        assert np.array_equal(values, np.where(k == support, 1.0, 0.0))
    assert BinomialRows(trials, first, 0, 0.5).values().shape == (7, 0)


def test_tables_with_windows_crossing_the_end_of_the_support() -> None:
    trials = np.arange(1_000, 1_100)
    rows = BinomialRows(trials, trials - 50, 100, 0.96)
    assert rows.values().shape == (100, 100) and np.all(rows.values()[:, 51:] == 0.0)
    _check(trials, trials - 50, 100, 0.96)
    _check(trials, np.zeros(100, dtype=np.int64), 100, 0.03)


def test_rows_whose_shared_tables_would_overflow_are_split() -> None:
    # trials from 10 to 10⁶ in one call: no single pair of tables covers them in range
    trials = np.array([10, 1_000, 100_000, 1_000_000])
    first = np.array([0, 400, 49_000, 499_000])
    _check(trials, first, 2_000, 0.5)
