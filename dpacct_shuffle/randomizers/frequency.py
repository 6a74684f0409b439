"""Samplers and unbiased frequency estimators of catalog randomizers (frequency oracles).

A frequency oracle over the domain {0, …, d − 1} randomizes a value into a report and, from n
reports, estimates the fraction f_v of users holding each value v. Both oracles here are
*pure* (Wang, Blocki, Li & Jha, "Locally Differentially Private Protocols for Frequency
Estimation", USENIX Security 2017, Section 4): each report y *supports* a set of values S(y), with

    P[v ∈ S(Y) | x = v] = p*,      P[v ∈ S(Y) | x ≠ v] = q*,

so for C_v = #{reports supporting v}, E[C_v/n] = f_v·p* + (1 − f_v)·q* and

    f̂_v = (C_v/n − q*)/(p* − q*)

is unbiased (ibid., Theorem 2). Its variance is
q*(1 − q*)/(n(p* − q*)²) + f_v(1 − p* − q*)/(n(p* − q*)).

* :class:`DirectEncodingOracle` — k-ary randomized response (``krr``, ``binary_rr``): the report
  is a value, S(y) = {y}, p* = e^ε0/(e^ε0 + d − 1), q* = 1/(e^ε0 + d − 1).
* :class:`UnaryEncodingOracle` — RAPPOR and OUE: the report is d bits, bit v set w.p. t if
  x = v and f otherwise, S(y) = {v : y_v = 1}, p* = t, q* = f.
* :class:`LocalHashingOracle` — local hashing with a uniformly random function h: [d] → [l]
  (``local_hashing`` with the default collision probability 1/l): the report is (seed, y), h the
  table drawn by ``numpy.random.default_rng(seed)``, y the l-ary randomized response of h(x);
  S(seed, y) = {v : h(v) = y}, p* = e^ε0/(e^ε0 + l − 1), q* = 1/l (for v ≠ x, h(v) is uniform and
  independent of h(x), so P[h(v) = y] = 1/l) (Wang, Blocki, Li & Jha 2017, Section 4.4).
* :class:`SubsetSelectionOracle` — k-subset selection (``subset_selection``; Ye & Barg, "Optimal
  Schemes for Discrete Distribution Estimation under Locally Differential Privacy", IEEE Trans.
  Inf. Theory 2018; Wang, Huang, Wang, Nie, Xu, Yang & Wang, arXiv:1607.08025): the report is a
  k-subset S drawn w.p. e^ε0/Z if x ∈ S and 1/Z otherwise, Z = e^ε0·C(d−1, k−1) + C(d−1, k);
  S(y) = y, p* = e^ε0·C(d−1, k−1)/Z, q* = (e^ε0·C(d−2, k−2) + C(d−2, k−1))/Z.
* :class:`HadamardResponseOracle` — Hadamard response with one block of K outputs (Acharya, Sun &
  Zhang, "Hadamard Response: Estimating Distributions Privately, Efficiently, and with Little
  Communication", AISTATS 2019): value v boosts the s = K/2 positions C_v where row v + 1 of the
  Sylvester Hadamard matrix is +1; S(y) = {v : y ∈ C_v}, p* = s·e^ε0·g, and two rows share K/4
  positions, so q* = (K/4)(e^ε0 + 1)·g, g = 1/(s·e^ε0 + K − s).

Reports are plain Python ``int`` (direct encoding, Hadamard response) or ``list[int]`` (unary
encoding: d bits; local hashing: [seed, y]; subset selection: the k values, increasing), so they travel in any message format; local-hashing reports are
decoded with the same numpy bit generator (PCG64) that produced them. The laws are the
catalog matrices' rows (tests check both the sampler against them and the unbiasedness identity
column by column).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Protocol, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

Report = Union[int, list[int]]


def _check_value(value: object, domain_size: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"value must be an integer in [0, {domain_size - 1}], got {value!r}")
    if not 0 <= int(value) < domain_size:
        raise ValueError(f"value must be in [0, {domain_size - 1}], got {value!r}")
    return int(value)


def _check_rng(rng: object) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


class FrequencyOracle(Protocol):
    """What :meth:`Randomizer.sample` / :meth:`Randomizer.estimate_frequencies` delegate to."""

    domain_size: int

    def sample(self, value: int, rng: np.random.Generator) -> Report:
        """One report of ``value``."""

    def support_counts(self, reports: Sequence[Report]) -> NDArray[np.int64]:
        """C_v for every v: how many reports support v."""

    def estimate_frequencies(self, reports: Sequence[Report]) -> NDArray[np.float64]:
        """The unbiased estimates f̂_v (they sum to 1 only in expectation and may be negative)."""

    def standard_deviations(self, frequencies: ArrayLike,
                            num_reports: int) -> NDArray[np.float64]:
        """Standard deviation of each f̂_v for the true ``frequencies``."""

    def variances(self, frequencies: ArrayLike,
                  num_reports: float) -> NDArray[np.float64]:
        """Variance of f̂_v for the true fraction(s) ``frequencies`` from ``num_reports`` reports."""


class _PureOracle:
    """Shared estimator of the pure oracles: f̂ = (C/n − q*)/(p* − q*)."""

    domain_size: int
    support_true: float
    support_false: float

    def support_counts(self, reports: Sequence[Report]) -> NDArray[np.int64]:
        raise NotImplementedError  # pragma: no cover - defined by the subclasses

    def estimate_frequencies(self, reports: Sequence[Report]) -> NDArray[np.float64]:
        if len(reports) == 0:
            raise ValueError("reports must not be empty: no estimate from zero reports")
        counts = self.support_counts(reports)
        return ((counts / len(reports) - self.support_false)
                / (self.support_true - self.support_false))


    def variances(self, frequencies: ArrayLike,
                  num_reports: float) -> NDArray[np.float64]:
        """Variance of f̂_v from ``num_reports`` reports when the true fraction of users holding v
        is f (each entry of ``frequencies``): C_v is a sum of independent Bernoulli variables,
        n·f of them with mean p* and n(1 − f) with mean q*, so

            Var f̂_v = (f·p*(1 − p*) + (1 − f)·q*(1 − q*)) / (n·(p* − q*)²)
                    = q*(1 − q*)/(n(p* − q*)²) + f(1 − p* − q*)/(n(p* − q*))

        (Wang, Blocki, Li & Jha 2017, Theorem 2)."""
        f = np.asarray(frequencies, dtype=np.float64)
        p, q, n = self.support_true, self.support_false, num_reports
        return np.asarray((f * p * (1 - p) + (1 - f) * q * (1 - q)) / (n * (p - q) ** 2),
                          dtype=np.float64)

    def standard_deviations(self, frequencies: ArrayLike,
                            num_reports: int) -> NDArray[np.float64]:
        """Standard deviation of each f̂_v from ``num_reports`` reports when the true
        fractions are ``frequencies`` (the square root of :meth:`variances`)."""
        return np.sqrt(self.variances(frequencies, num_reports))


class DirectEncodingOracle(_PureOracle):
    """k-ary randomized response: report x w.p. e·g, each other value w.p. g = 1/(e + d − 1).

    Args:
      domain_size: d ≥ 2.
      exp_epsilon0: e = e^ε0 > 1.
    """

    def __init__(self, domain_size: int, exp_epsilon0: float) -> None:
        self.domain_size = domain_size
        g = 1.0 / (exp_epsilon0 + domain_size - 1.0)
        self.support_true = exp_epsilon0 * g
        self.support_false = g

    def sample(self, value: int, rng: np.random.Generator) -> int:
        x = _check_value(value, self.domain_size)
        if _check_rng(rng).random() < self.support_true:
            return x
        other = int(rng.integers(self.domain_size - 1))  # uniform over the d − 1 other values
        return other if other < x else other + 1

    def support_counts(self, reports: Sequence[Report]) -> NDArray[np.int64]:
        values = np.array([_check_value(r, self.domain_size) for r in reports], dtype=np.int64)
        return np.bincount(values, minlength=self.domain_size)


class UnaryEncodingOracle(_PureOracle):
    """Unary encoding: bit x is 1 w.p. t, every other bit w.p. f (RAPPOR: t = 1 − f =
    e^{ε0/2}/(e^{ε0/2} + 1); OUE: t = 1/2, f = 1/(e^ε0 + 1)).

    Args:
      domain_size: d ≥ 2.
      one_prob_true: t.
      one_prob_false: f < t.
    """

    def __init__(self, domain_size: int, one_prob_true: float, one_prob_false: float) -> None:
        self.domain_size = domain_size
        self.support_true = one_prob_true
        self.support_false = one_prob_false

    def sample(self, value: int, rng: np.random.Generator) -> list[int]:
        x = _check_value(value, self.domain_size)
        probabilities = np.full(self.domain_size, self.support_false)
        probabilities[x] = self.support_true
        bits = _check_rng(rng).random(self.domain_size) < probabilities
        return [int(bit) for bit in bits]

    def support_counts(self, reports: Sequence[Report]) -> NDArray[np.int64]:
        rows = []
        for i, report in enumerate(reports):
            if (not isinstance(report, Sequence) or len(report) != self.domain_size
                    or any(bit not in (0, 1) or isinstance(bit, bool) for bit in report)):
                raise ValueError(f"reports[{i}] must be a list of {self.domain_size} bits (0/1), "
                                 f"got {report!r}")
            rows.append(report)
        table = np.asarray(rows, dtype=np.int64).reshape(-1, self.domain_size)
        counts: NDArray[np.int64] = table.sum(axis=0)
        return counts


class LocalHashingOracle(_PureOracle):
    """Local hashing over a uniformly random function h: [d] → [l] chosen per report.

    Args:
      domain_size: d ≥ 2.
      hash_range: l ≥ 2.
      exp_epsilon0: e = e^ε0 > 1.
    """

    def __init__(self, domain_size: int, hash_range: int, exp_epsilon0: float) -> None:
        self.domain_size = domain_size
        self.hash_range = hash_range
        self.support_true = exp_epsilon0 / (exp_epsilon0 + hash_range - 1.0)
        self.support_false = 1.0 / hash_range
        self._keep = DirectEncodingOracle(hash_range, exp_epsilon0)

    def hash_table(self, seed: int) -> NDArray[np.int64]:
        """h(0), …, h(d − 1) of the function with this seed (uniform on [l]^d)."""
        return np.random.default_rng(seed).integers(self.hash_range, size=self.domain_size)

    def sample(self, value: int, rng: np.random.Generator) -> list[int]:
        x = _check_value(value, self.domain_size)
        seed = int(_check_rng(rng).integers(2**63 - 1))
        return [seed, self._keep.sample(int(self.hash_table(seed)[x]), rng)]

    def support_counts(self, reports: Sequence[Report]) -> NDArray[np.int64]:
        counts = np.zeros(self.domain_size, dtype=np.int64)
        for i, report in enumerate(reports):
            if (not isinstance(report, Sequence) or len(report) != 2
                    or any(isinstance(v, bool) or not isinstance(v, numbers.Integral)
                           for v in report)
                    or not 0 <= report[1] < self.hash_range or report[0] < 0):
                raise ValueError(f"reports[{i}] must be [seed >= 0, y in "
                                 f"[0, {self.hash_range - 1}]], got {report!r}")
            counts += self.hash_table(int(report[0])) == int(report[1])
        return counts


class SubsetSelectionOracle(_PureOracle):
    """k-subset selection: a k-subset S w.p. e/Z if x ∈ S, else 1/Z (module docstring).

    Sampling: x ∈ S w.p. p* = e·C(d−1, k−1)/Z; the other members are a uniform (k − 1)-subset (if
    x ∈ S) or k-subset (if not) of the d − 1 other values — every set containing x then has
    probability p*/C(d−1, k−1) = e/Z and every other set (1 − p*)/C(d−1, k) = 1/Z.

    Args:
      domain_size: d ≥ 2.
      subset_size: k ∈ [1, d − 1].
      exp_epsilon0: e = e^ε0 > 1.
    """

    def __init__(self, domain_size: int, subset_size: int, exp_epsilon0: float) -> None:
        d, k, e = domain_size, subset_size, exp_epsilon0
        self.domain_size, self.subset_size = d, k
        # ratios to C(d − 1, k − 1): C(d − 1, k) → (d − k)/k, C(d − 2, k − 2) → (k − 1)/(d − 1),
        # C(d − 2, k − 1) → (d − k)/(d − 1)
        z = e + (d - k) / k
        self.support_true = e / z
        self.support_false = (e * (k - 1) / (d - 1) + (d - k) / (d - 1)) / z

    def sample(self, value: int, rng: np.random.Generator) -> list[int]:
        x = _check_value(value, self.domain_size)
        generator = _check_rng(rng)
        others = np.delete(np.arange(self.domain_size), x)
        if generator.random() < self.support_true:
            chosen = [x, *generator.choice(others, self.subset_size - 1, replace=False).tolist()]
        else:
            chosen = generator.choice(others, self.subset_size, replace=False).tolist()
        return sorted(int(v) for v in chosen)

    def support_counts(self, reports: Sequence[Report]) -> NDArray[np.int64]:
        counts = np.zeros(self.domain_size, dtype=np.int64)
        for i, report in enumerate(reports):
            if (not isinstance(report, Sequence) or len(report) != self.subset_size
                    or len(set(report)) != self.subset_size
                    or any(isinstance(v, bool) or not isinstance(v, numbers.Integral)
                           or not 0 <= v < self.domain_size for v in report)):
                raise ValueError(f"reports[{i}] must be {self.subset_size} distinct values in "
                                 f"[0, {self.domain_size - 1}], got {report!r}")
            counts[list(report)] += 1
        return counts


class HadamardResponseOracle(_PureOracle):
    """Hadamard response, one block of K outputs: value v ↦ row v + 1 of the K×K Sylvester
    Hadamard matrix H; report y ∈ C_v = {j : H[v + 1, j] = 1} (|C_v| = K/2) w.p. e·g, any other
    y w.p. g = 1/((K/2)·e + K/2) (module docstring).

    Args:
      domain_size: d ∈ [2, K − 1].
      num_outputs: K, a power of two ≥ 4.
      exp_epsilon0: e = e^ε0 > 1.
    """

    def __init__(self, domain_size: int, num_outputs: int, exp_epsilon0: float) -> None:
        self.domain_size, self.num_outputs = domain_size, num_outputs
        half = num_outputs // 2
        g = 1.0 / (half * exp_epsilon0 + num_outputs - half)
        self.support_true = half * exp_epsilon0 * g
        self.support_false = 0.5 * half * (exp_epsilon0 + 1.0) * g

    def _boosted(self, value: int, outputs: NDArray[np.int64]) -> NDArray[np.bool_]:
        """y ∈ C_v for each y of ``outputs``: H[v + 1, y] = (−1)^popcount((v + 1) & y) for the
        Sylvester matrix, so membership is an even parity (no K×K matrix is built)."""
        bits = np.bitwise_and(outputs, value + 1)
        parity = np.zeros(bits.shape, dtype=np.int64)
        while np.any(bits):
            parity ^= bits & 1
            bits = bits >> 1
        return np.asarray(parity == 0)

    def sample(self, value: int, rng: np.random.Generator) -> int:
        x = _check_value(value, self.domain_size)
        generator = _check_rng(rng)
        boosted = self._boosted(x, np.arange(self.num_outputs, dtype=np.int64))
        inside = boosted if generator.random() < self.support_true else ~boosted
        return int(generator.choice(np.flatnonzero(inside)))

    def support_counts(self, reports: Sequence[Report]) -> NDArray[np.int64]:
        values: list[int] = []
        for i, report in enumerate(reports):
            if (isinstance(report, bool) or not isinstance(report, numbers.Integral)
                    or not 0 <= report < self.num_outputs):
                raise ValueError(f"reports[{i}] must be an output in [0, {self.num_outputs - 1}], "
                                 f"got {report!r}")
            values.append(int(report))
        reported = np.asarray(values, dtype=np.int64)
        return np.array([np.count_nonzero(self._boosted(v, reported))
                         for v in range(self.domain_size)], dtype=np.int64)


__all__ = ["DirectEncodingOracle", "FrequencyOracle", "HadamardResponseOracle",
           "LocalHashingOracle", "Report", "SubsetSelectionOracle", "UnaryEncodingOracle"]
