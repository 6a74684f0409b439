"""Samplers and unbiased frequency estimators of catalog randomizers (exact identities on the
catalog matrices, sampled laws against the matrix rows)."""

import itertools

import numpy as np
import pytest

from dpacct_shuffle import randomizers

ENTRIES = [
    randomizers.binary_rr(1.0),
    randomizers.krr(1.5, 3),
    randomizers.krr(0.7, 6),
    randomizers.rappor(2.0, 3),
    randomizers.oue(1.0, 4),
    randomizers.local_hashing(1.2, 3, domain_size=3),
]


def _hash_tables(randomizer):
    """The catalog matrix's hash functions, in its column order (all functions [d] -> [l])."""
    d, l = randomizer.parameters["domain_size"], randomizer.parameters["hash_range"]
    return np.array(list(itertools.product(range(l), repeat=d)))


def _column_support(randomizer, column):
    """Which values the report of a matrix column supports."""
    d = randomizer.matrix.shape[0]
    if randomizer.name in ("binary_rr", "krr"):
        return np.eye(d, dtype=int)[column]
    if randomizer.name == "local_hashing":
        l = randomizer.parameters["hash_range"]
        return (_hash_tables(randomizer)[column // l] == column % l).astype(int)
    return np.array([(column >> i) & 1 for i in range(d)])


def _report_column(randomizer, report):
    """The matrix column of a sampled report."""
    if randomizer.name in ("binary_rr", "krr"):
        return report
    if randomizer.name == "local_hashing":
        d, l = randomizer.parameters["domain_size"], randomizer.parameters["hash_range"]
        table = randomizer.frequency_oracle.hash_table(report[0])
        return int(sum(int(h) * l ** (d - 1 - i) for i, h in enumerate(table))) * l + report[1]
    return sum(bit << i for i, bit in enumerate(report))


@pytest.mark.parametrize("randomizer", ENTRIES, ids=lambda r: repr(r))
def test_estimator_is_unbiased_exactly_for_every_input(randomizer):
    matrix = randomizer.matrix
    d = matrix.shape[0]
    oracle = randomizer.frequency_oracle
    support = np.array([_column_support(randomizer, j) for j in range(matrix.shape[1])])
    for x in range(d):
        # E[f̂] for one user holding x: the estimator is affine in the support vector
        estimate = (matrix[x] @ support - oracle.support_false) / (
            oracle.support_true - oracle.support_false)
        np.testing.assert_allclose(estimate, np.eye(d)[x], atol=1e-12)


def test_support_counts_follow_the_report_format():
    for randomizer in ENTRIES:
        rng = np.random.default_rng(11)
        reports = [randomizer.sample(1, rng) for _ in range(30)]
        expected = sum(_column_support(randomizer, _report_column(randomizer, r))
                       for r in reports)
        np.testing.assert_array_equal(randomizer.frequency_oracle.support_counts(reports),
                                      expected)


@pytest.mark.parametrize("randomizer", ENTRIES, ids=lambda r: repr(r))
def test_sampler_follows_the_matrix_row(randomizer):
    matrix = randomizer.matrix
    d, columns = matrix.shape
    rng = np.random.default_rng(12345)
    draws = 20_000
    for x in (0, d - 1):
        counts = np.zeros(columns)
        for _ in range(draws):
            counts[_report_column(randomizer, randomizer.sample(x, rng))] += 1
        expected = draws * matrix[x]
        z = (counts - expected) / np.sqrt(expected * (1 - matrix[x]))
        assert np.max(np.abs(z)) < 5.0, (x, counts, expected)


def test_estimates_from_sampled_reports_are_close_to_the_truth():
    randomizer = randomizers.krr(2.0, 5)
    rng = np.random.default_rng(7)
    truth = np.array([0.4, 0.3, 0.15, 0.1, 0.05])
    values = rng.choice(5, size=20_000, p=truth)
    estimate = randomizer.estimate_frequencies([randomizer.sample(int(v), rng) for v in values])
    n = len(values)
    sd = randomizer.frequency_oracle.standard_deviations(truth, n)
    p, q = randomizer.frequency_oracle.support_true, randomizer.frequency_oracle.support_false
    # closed form of the direct-encoding variance: (f p(1-p) + (1-f) q(1-q)) / (n (p-q)^2)
    np.testing.assert_allclose(
        sd**2, (truth * p * (1 - p) + (1 - truth) * q * (1 - q)) / (n * (p - q) ** 2), rtol=1e-12)
    empirical = np.bincount(values, minlength=5) / n
    assert np.all(np.abs(estimate - empirical) < 5 * sd)


def test_estimate_depends_only_on_the_multiset():
    randomizer = randomizers.oue(1.0, 4)
    rng = np.random.default_rng(3)
    reports = [randomizer.sample(i % 4, rng) for i in range(50)]
    np.testing.assert_array_equal(randomizer.estimate_frequencies(reports),
                                  randomizer.estimate_frequencies(reports[::-1]))


def test_bad_input_is_refused_with_clear_errors():
    krr = randomizers.krr(1.0, 3)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"value must be in \[0, 2\]"):
        krr.sample(3, rng)
    with pytest.raises(TypeError, match="value must be an integer"):
        krr.sample(True, rng)
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        krr.sample(0, 42)
    with pytest.raises(ValueError, match="reports must not be empty"):
        krr.estimate_frequencies([])
    with pytest.raises(ValueError, match="reports\\[1\\] must be a list of 4 bits"):
        randomizers.oue(1.0, 4).estimate_frequencies([[0, 1, 0, 0], [0, 2, 0, 0]])
    with pytest.raises(ValueError, match=r"reports\[0\] must be \[seed >= 0, y in \[0, 2\]\]"):
        randomizers.local_hashing(1.0, 3, domain_size=4).estimate_frequencies([[5, 3]])
    with pytest.raises(TypeError, match="has no sampler and frequency estimator"):
        randomizers.laplace(1.0).sample(0, rng)
    with pytest.raises(TypeError, match="has no sampler and frequency estimator"):
        randomizers.local_hashing(1.0, 3).sample(0, rng)  # no domain size
