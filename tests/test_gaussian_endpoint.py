"""The certified lower bound of shuffled Gaussian reports from the endpoint instance
(``core.gaussian_endpoint``): below the exact δ of the instance (closed forms at n = 1, an
independent quadrature at n = 2 and 3), below the certified upper bound, above the sum of the
reports where it is claimed to be better, and wired into the randomizers' lower bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

from dpacct_shuffle import randomizers as rz
from dpacct_shuffle.core.gaussian import gaussian_delta
from dpacct_shuffle.core.gaussian_endpoint import (MAX_CELLS, GaussianEndpointInstance,
                                                   endpoint_delta, endpoint_sum_law)
from dpacct_shuffle.randomizers.gaussian import GaussianSumInstance


def _call(mu: float, strike: np.ndarray) -> np.ndarray:
    """E[(L − K)⁺], L = e^{μY − μ²/2}, Y ~ N(0, 1) (Black–Scholes with unit forward), elementwise."""
    positive = np.maximum(strike, 1e-300)
    d2 = (-np.log(positive) - mu * mu / 2.0) / mu
    value = special.ndtr(d2 + mu) - positive * special.ndtr(d2)
    return np.where(strike > 0.0, value, 1.0 - strike)


def exact_endpoint_delta(eps: float, mu: float, n: int) -> float:
    """max(E[(T/n − λ)⁺], E[(1 − λT/n)⁺]) for n ≤ 3: the last report in closed form, the others
    by the trapezoid rule on a fine grid (the integrand is smooth), independent of the package's
    discretisation. E[(K − L)⁺] = E[(L − K)⁺] − 1 + K (put-call parity)."""
    lam = math.exp(eps)
    step = 0.004 if n <= 2 else 0.02
    grid = np.arange(-10.0, 10.0 + mu, step)
    weight = stats.norm.pdf(grid) * step
    terms = np.exp(mu * grid - mu * mu / 2.0)
    ratio, mass = np.zeros(1), np.ones(1)
    for _ in range(n - 1):
        ratio = np.add.outer(ratio, terms).ravel()
        mass = np.multiply.outer(mass, weight).ravel()
    above = _call(mu, n * lam - ratio) / n
    strike = n / lam - ratio
    below = lam / n * (_call(mu, strike) - 1.0 + strike)
    return max(float(np.dot(mass, above)), float(np.dot(mass, below)))


@pytest.mark.parametrize("mu", [0.5, 1.0, 3.0])
def test_one_user_is_the_gaussian_profile_from_below(mu: float) -> None:
    for eps in (0.0, 0.1, 0.5, 2.0):
        exact = gaussian_delta(eps, mu, upper=False)
        value = endpoint_delta(eps, mu, 1)
        assert value <= gaussian_delta(eps, mu)
        assert value >= 0.995 * exact - 1e-12, (eps, value, exact)


@pytest.mark.parametrize(("mu", "n"), [(0.5, 2), (1.5, 2), (3.0, 2), (0.5, 3)])
def test_below_and_close_to_the_exact_instance(mu: float, n: int) -> None:
    for eps in (0.05, 0.3, 1.0):
        exact = exact_endpoint_delta(eps, mu, n)
        value = endpoint_delta(eps, mu, n)
        assert value <= exact + 1e-11, (eps, value, exact)
        assert value >= 0.99 * exact - 1e-9, (eps, value, exact)


def test_merged_laws_keep_mass_and_mean() -> None:
    """Merges keep every mean: the sum law of n users has mean ±n (E[L] = 1) and mass 1, up to
    the certified downward moves (a relative 2γ per merge and cell, below 1e-5 at n = 10⁶)."""
    for n in (7, 1000, 10**6):
        for negative in (False, True):
            positions, masses = endpoint_sum_law(0.5, n, negative)
            assert 1.0 - 1e-5 <= math.fsum(masses) <= 1.0
            mean = float(np.dot(positions, masses))
            assert mean == pytest.approx(-n if negative else n, rel=1e-5)
            assert np.all(np.diff(positions) > 0.0)


@pytest.mark.parametrize("noise_std", [1.0, 2.0, 4.0])
def test_below_the_upper_bound(noise_std: float) -> None:
    randomizer = rz.gaussian(noise_std)
    mu = 1.0 / noise_std
    for n in (10, 1000) if noise_std != 2.0 else (10, 1000, 10**5):
        shuffled = randomizer.shuffled(n)
        for eps in (0.01, 0.1, 0.5):
            assert endpoint_delta(eps, mu, n) <= shuffled.delta(eps)
        lower, upper = shuffled.epsilon_interval(1e-6)
        assert lower <= upper


def test_better_than_the_sum_of_the_reports_where_claimed() -> None:
    """μ = 0.5, δ = 1e-6: the endpoint instance's ε is about 7 % above the sum's (measured
    0.0592 against 0.0551 at n = 10³), and the lower bound reports it."""
    randomizer = rz.gaussian(2.0)
    for n in (10**3, 10**5):
        shuffled = randomizer.shuffled(n)
        lower = shuffled.epsilon_lower(1e-6)
        summed = GaussianSumInstance(0.5, n)
        assert summed.delta(lower) < 1e-6  # the sum alone has a smaller ε
        assert endpoint_delta(lower, 0.5, n) > 1e-6
        assert shuffled.epsilon(1e-6) <= 1.22 * lower
    assert randomizer.shuffled(1000).epsilon_lower(1e-6) >= 0.059


def test_vector_reports_use_it_too() -> None:
    """With all other users at the victim's first vector the likelihood ratio only sees the
    projection on the difference: the scalar instance with μ = 2C/σ."""
    vector = rz.gaussian_vector(4.0, clipping_norm=1.0)
    lower = vector.shuffled(1000).epsilon_lower(1e-6)
    assert lower == rz.gaussian(4.0, 0.0, 2.0).shuffled(1000).epsilon_lower(1e-6)
    assert lower <= vector.shuffled(1000).epsilon(1e-6)


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="mu"):
        GaussianEndpointInstance(0.0, 10)
    with pytest.raises(ValueError, match="mu"):
        endpoint_delta(0.1, 100.0, 10)
    with pytest.raises(ValueError, match="n"):
        endpoint_delta(0.1, 0.5, 0)
    with pytest.raises(ValueError, match="epsilon"):
        endpoint_delta(-1.0, 0.5, 10)
    assert GaussianEndpointInstance(0.5, 3).max_loss() == math.inf


def test_heavy_tail_of_a_large_mu_stays_on_a_bounded_number_of_cells() -> None:
    """μ = 8: L spans about 100 decades; the merges keep at most MAX_CELLS atoms (it once took
    minutes), and the value stays below the report's own δ_μ(ε) and above the sum's."""
    for negative in (False, True):
        positions, _ = endpoint_sum_law(8.0, 1000, negative)
        assert positions.size <= MAX_CELLS
    for eps in (10.0, 40.0, 60.0):
        value = endpoint_delta(eps, 8.0, 1000)
        assert GaussianSumInstance(8.0, 1000).delta(eps) <= value <= gaussian_delta(eps, 8.0)
