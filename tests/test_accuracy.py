"""Variance formulas of dpacct_shuffle.accuracy against Monte Carlo runs of the package's own
samplers and estimators.

Tolerance: the sample variance s² of K independent estimates has standard error
sqrt((m4 − s⁴)/K) (m4 the empirical fourth central moment); every formula must lie within
5 of those standard errors of s². The seeds are fixed, so the runs are reproducible.
"""

import math

import numpy as np
import pytest

from dpacct_shuffle import randomizers
from dpacct_shuffle.accuracy import (expected_inverse_reports, frequency_std, frequency_variance,
                                     mean_std, mean_variance)
from dpacct_shuffle.randomizers.numeric_oracles import mean_oracle

SIGMAS = 5.0


def _assert_variance(estimates, expected):
    x = np.asarray(estimates, dtype=float)
    s2 = x.var(ddof=1)
    m4 = np.mean((x - x.mean()) ** 4)
    standard_error = math.sqrt(max(m4 - s2 * s2, 0.0) / len(x))
    assert abs(s2 - expected) <= SIGMAS * standard_error, (s2, expected, standard_error)
    # the check has power: a 25 % error in the formula would be outside the band
    assert SIGMAS * standard_error < 0.25 * expected


FREQUENCY_ORACLES = [
    randomizers.binary_rr(1.0),
    randomizers.krr(1.0, 5),
    randomizers.rappor(1.0, 5),
    randomizers.oue(1.5, 5),
    randomizers.local_hashing(1.0, 3, 5),
    randomizers.hadamard_response(1.0, 8, domain_size=5),
    randomizers.subset_selection(1.0, 5, 2),
    randomizers.sampling_rappor(1.0, 5, 2),
]


def _population(d, holders, size):
    """``holders`` users hold value 0, the others value 1 (value d − 1 is held by nobody)."""
    return np.array([0] * holders + [1] * (size - holders))


@pytest.mark.parametrize("randomizer", FREQUENCY_ORACLES, ids=repr)
def test_frequency_variance_matches_monte_carlo(randomizer):
    rng = np.random.default_rng(2024)
    d = randomizer.frequency_oracle.domain_size
    n, holders, runs = 40, 10, 1500
    values = _population(d, holders, n)
    held, unheld = [], []
    for _ in range(runs):
        estimate = randomizer.estimate_frequencies([randomizer.sample(int(v), rng) for v in values])
        held.append(estimate[0])
        unheld.append(estimate[d - 1])
    _assert_variance(held, frequency_variance(randomizer, n, holders / n))
    _assert_variance(unheld, frequency_variance(randomizer, n, 0.0))


@pytest.mark.parametrize("randomizer", [randomizers.krr(1.0, 4), randomizers.oue(1.0, 4)], ids=repr)
def test_sampled_frequency_variance_matches_monte_carlo(randomizer):
    """Poisson sampling (the estimate divides by the observed number of reports, runs without
    reports dropped) and a fixed-size cohort, against the population frequency."""
    rng = np.random.default_rng(7)
    population, holders, gamma, cohort, runs = 60, 15, 0.3, 20, 2000
    values = _population(4, holders, population)
    poisson, fixed = [], []
    while len(poisson) < runs:
        chosen = values[rng.random(population) < gamma]
        if len(chosen):
            poisson.append(randomizer.estimate_frequencies(
                [randomizer.sample(int(v), rng) for v in chosen])[0])
    for _ in range(runs):
        chosen = rng.choice(values, cohort, replace=False)
        fixed.append(randomizer.estimate_frequencies(
            [randomizer.sample(int(v), rng) for v in chosen])[0])
    f = holders / population
    _assert_variance(poisson, frequency_variance(randomizer, population, f,
                                                 sampling_probability=gamma))
    _assert_variance(fixed, frequency_variance(randomizer, population, f, sample_size=cohort))
    # sampling costs accuracy: more than the variance with every user reporting
    assert frequency_variance(randomizer, population, f, sample_size=cohort) > (
        frequency_variance(randomizer, population, f))


def test_expected_inverse_reports_is_the_binomial_sum():
    from scipy.stats import binom

    for n, gamma in ((1, 0.5), (7, 0.2), (300, 0.01), (10_000, 0.3)):
        m = np.arange(1, n + 1)
        exact = np.sum(binom.pmf(m, n, gamma) / m) / (1.0 - (1.0 - gamma) ** n)
        assert expected_inverse_reports(n, gamma) == pytest.approx(exact, rel=1e-12)
    # large populations: close to 1/(nγ)(1 + (1 − γ)/(nγ))
    n, gamma = 10**8, 0.01
    approx = (1 + (1 - gamma) / (n * gamma)) / (n * gamma)
    assert expected_inverse_reports(n, gamma) == pytest.approx(approx, rel=1e-8)


def test_frequency_closed_forms_at_zero():
    """At f = 0 the variance is q*(1 − q*)/(n(p* − q*)²) with the published (p*, q*)."""
    e, d, n = math.exp(2.0), 100, 10**5
    krr_q, krr_p = 1 / (e + d - 1), e / (e + d - 1)
    assert frequency_variance(randomizers.krr(2.0, d), n) == pytest.approx(
        krr_q * (1 - krr_q) / (n * (krr_p - krr_q) ** 2), rel=1e-12)
    # OUE: Var = 4e/(n(e − 1)²) (Wang et al. 2017, Section 4.3)
    assert frequency_variance(randomizers.oue(2.0, d), n) == pytest.approx(
        4 * e / (n * (e - 1) ** 2), rel=1e-12)
    # OLH with l = e + 1 (real-valued optimum): also 4e/(n(e − 1)²); integer l = 8 here
    l = 8
    q, p = 1 / l, e / (e + l - 1)
    assert frequency_std(randomizers.local_hashing(2.0, l, d), n) == pytest.approx(
        math.sqrt(q * (1 - q) / (n * (p - q) ** 2)), rel=1e-12)
    # RAPPOR: e^{ε/2}/(n(e^{ε/2} − 1)²)
    h = math.exp(1.0)
    assert frequency_variance(randomizers.rappor(2.0, d), n) == pytest.approx(
        h / (n * (h - 1) ** 2), rel=1e-12)


NUMERIC = [
    (randomizers.laplace(1.0), [0.0, 0.7]),
    (randomizers.piecewise(1.5), [-1.0, 0.3]),
    (randomizers.duchi(1.0), [0.0, 0.9]),
    (randomizers.harmony(1.0, 3), [0.0, -0.5]),
    (randomizers.gaussian(0.8, -2.0, 3.0), [1.0]),
]


@pytest.mark.parametrize("randomizer, values", NUMERIC, ids=lambda x: repr(x))
def test_mean_variance_matches_monte_carlo(randomizer, values):
    rng = np.random.default_rng(99)
    oracle = mean_oracle(randomizer)
    n, runs = 30, 2000
    for value in values:
        point = [value] * oracle.dimension if randomizer.name == "harmony" else value
        estimates = [oracle.estimate_mean([oracle.sample(point, rng) for _ in range(n)])
                     for _ in range(runs)]
        assert np.mean(estimates) == pytest.approx(value, abs=6 * np.std(estimates) / math.sqrt(runs))
        _assert_variance(estimates, mean_variance(randomizer, n, value))
    # the worst input is at least as bad as every input tried
    assert all(mean_variance(randomizer, n) >= mean_variance(randomizer, n, v) for v in values)


def test_mean_variance_closed_forms_and_range():
    n = 1000
    assert mean_variance(randomizers.laplace(2.0), n) == pytest.approx(2 / (4 * n))
    # inputs in [0, 10]: Laplace scale 10/ε0
    assert mean_variance(randomizers.laplace(2.0), n, value_range=(0.0, 10.0)) == pytest.approx(
        2 * 25 / n)
    h = math.exp(0.5)
    assert mean_variance(randomizers.piecewise(1.0), n) == pytest.approx(
        (1 / (h - 1) + (h + 3) / (3 * (h - 1) ** 2)) / n)
    b = (math.e + 1) / (math.e - 1)
    assert mean_std(randomizers.duchi(1.0), n, value_range=(0.0, 2.0)) == pytest.approx(
        b / math.sqrt(n))
    assert mean_variance(randomizers.gaussian(3.0, 0.0, 1.0), n, sample_size=10) == pytest.approx(
        0.9)


def test_bad_input_is_refused():
    with pytest.raises(TypeError, match="frequency oracle"):
        frequency_variance(randomizers.laplace(1.0), 10)
    with pytest.raises(TypeError, match="mean estimator"):
        mean_variance(randomizers.krr(1.0, 3), 10)
    with pytest.raises(ValueError, match="frequency"):
        frequency_variance(randomizers.krr(1.0, 3), 10, 1.5)
    with pytest.raises(ValueError, match="not both"):
        frequency_variance(randomizers.krr(1.0, 3), 10, sampling_probability=0.5, sample_size=3)
    with pytest.raises(ValueError, match="sample_size"):
        frequency_variance(randomizers.krr(1.0, 3), 10, sample_size=11)
    with pytest.raises(ValueError, match="sampling_probability"):
        frequency_variance(randomizers.krr(1.0, 3), 10, sampling_probability=0.0)
    with pytest.raises(ValueError, match="value"):
        mean_variance(randomizers.duchi(1.0), 10, 2.0)


@pytest.mark.parametrize("randomizer", [randomizers.hadamard_response(1.3, 8, domain_size=6),
                                        randomizers.subset_selection(0.8, 6, 2),
                                        randomizers.subset_selection(0.8, 5, 3)], ids=repr)
def test_new_estimators_are_unbiased_exactly_on_the_catalog_matrix(randomizer):
    """E[f̂] computed from the catalog matrix (every output's probability) is the indicator of
    the input, for Hadamard response and subset selection."""
    import itertools

    oracle = randomizer.frequency_oracle
    matrix = randomizer.matrix
    d = matrix.shape[0]
    if randomizer.name == "hadamard_response":
        reports = list(range(matrix.shape[1]))
    else:
        reports = [list(s) for s in itertools.combinations(range(d), oracle.subset_size)]
    support = np.array([oracle.support_counts([report]) for report in reports])
    for x in range(d):
        expected = (matrix[x] @ support - oracle.support_false) / (
            oracle.support_true - oracle.support_false)
        np.testing.assert_allclose(expected, np.eye(d)[x], atol=1e-12)
        # and the sampler's reports are outputs the matrix gives positive probability
        report = randomizer.sample(x, np.random.default_rng(x))
        assert matrix[x, reports.index(report)] > 0
