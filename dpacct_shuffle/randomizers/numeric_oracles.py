"""Samplers and unbiased mean estimators of the numeric catalog randomizers.

Each randomizer reports y with E[y | x] = x (an unbiased report of the input), so the average of
n reports estimates the average input, with variance (1/n²)·Σ_i Var[y | x_i]. The per-report
variance ``report_variance(x)`` of each mechanism, for an input x in its native range:

* ``laplace(ε0)`` — x ∈ [0, 1], y = x + Lap(1/ε0): Var = 2/ε0² (Dwork, McSherry, Nissim & Smith,
  TCC 2006);
* ``piecewise(ε0)`` — x ∈ [−1, 1], h = e^{ε0/2}, C = (h + 1)/(h − 1): w.p. h/(h + 1) y is uniform
  on [ℓ(x), ℓ(x) + C − 1], ℓ(x) = (C + 1)x/2 − (C − 1)/2, otherwise uniform on the rest of
  [−C, C]; Var = x²/(h − 1) + (h + 3)/(3(h − 1)²) (Wang, Xiao, Yang, Zhao, Hui, Shin, Shin & Yu,
  "Collecting and Analyzing Multidimensional Data with Local Differential Privacy", ICDE 2019,
  Lemma 1);
* ``duchi(ε0)`` — x ∈ [−1, 1], y = ±B with P(+B) = 1/2 + x/(2B), B = (e^ε0 + 1)/(e^ε0 − 1):
  Var = B² − x² (Duchi, Jordan & Wainwright, "Local Privacy and Statistical Minimax Rates",
  FOCS 2013);
* ``harmony(ε0, D)`` — x ∈ [−1, 1]^D: a uniform coordinate j, and Duchi's ±B on x_j; the report
  [j, ±1] estimates coordinate k by D·B·(±1)·[j = k], Var = D·B² − x_k² (Nguyen, Xiao, Yang, Hui,
  Shin & Shin, "Collecting and Analyzing Data from Smart Device Users with Local Differential
  Privacy", arXiv:1606.05053);
* ``gaussian(σ, lower, upper)`` — x ∈ [lower, upper], y = x + N(0, σ²): Var = σ².

``worst_report_variance`` is the largest Var over the native range (|x| = 1 for piecewise, x = 0
for Duchi and Harmony). Reports are Python floats (Harmony: ``[j, ±1]``).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Protocol, Union

import numpy as np
from numpy.typing import NDArray

from dpacct_shuffle.randomizers.base import Randomizer

NumericReport = Union[float, list[int]]
NumericValue = Union[float, Sequence[float]]


class MeanOracle(Protocol):
    """Sampler, unbiased mean estimator and per-report variance of a numeric randomizer."""

    lower: float
    upper: float

    def sample(self, value: NumericValue, rng: np.random.Generator) -> NumericReport:
        """One report of ``value`` (a number in [lower, upper]; Harmony: a vector)."""

    def estimate_mean(self, reports: Sequence[NumericReport]) -> float:
        """Unbiased estimate of the average input (Harmony: of coordinate 0)."""

    def report_variance(self, value: float) -> float:
        """Var[y | x = value] of one report (Harmony: of coordinate 0's estimate)."""

    def worst_report_variance(self) -> float:
        """The largest :meth:`report_variance` over [lower, upper]."""


def _check_rng(rng: object) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


def _check_number(name: str, value: object, lower: float, upper: float) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number in [{lower}, {upper}], got {value!r}")
    number = float(value)
    if not lower <= number <= upper:
        raise ValueError(f"{name} must be in [{lower}, {upper}], got {value!r}")
    return number


def _float_reports(reports: Sequence[NumericReport]) -> NDArray[np.float64]:
    if len(reports) == 0:
        raise ValueError("reports must not be empty: no estimate from zero reports")
    values: list[float] = []
    for i, report in enumerate(reports):
        if isinstance(report, bool) or not isinstance(report, numbers.Real):
            raise ValueError(f"reports[{i}] must be a number, got {report!r}")
        values.append(float(report))
    return np.asarray(values)


class _AdditiveNoise:
    """y = x + noise of mean 0: the mean of the reports is unbiased."""

    lower: float
    upper: float

    def _noise(self, rng: np.random.Generator) -> float:
        raise NotImplementedError  # pragma: no cover - defined by the subclasses

    def sample(self, value: NumericValue, rng: np.random.Generator) -> float:
        x = _check_number("value", value, self.lower, self.upper)
        return x + self._noise(_check_rng(rng))

    def estimate_mean(self, reports: Sequence[NumericReport]) -> float:
        return float(np.mean(_float_reports(reports)))

    def worst_report_variance(self) -> float:
        return self.report_variance(self.lower)

    def report_variance(self, value: float) -> float:
        raise NotImplementedError  # pragma: no cover - defined by the subclasses


class LaplaceMeanOracle(_AdditiveNoise):
    """x ∈ [0, 1] plus Lap(1/ε0)."""

    def __init__(self, epsilon0: float) -> None:
        self.lower, self.upper, self.scale = 0.0, 1.0, 1.0 / epsilon0

    def _noise(self, rng: np.random.Generator) -> float:
        return float(rng.laplace(0.0, self.scale))

    def report_variance(self, value: float) -> float:
        _check_number("value", value, self.lower, self.upper)
        return 2.0 * self.scale ** 2


class GaussianMeanOracle(_AdditiveNoise):
    """x ∈ [lower, upper] plus N(0, σ²)."""

    def __init__(self, noise_std: float, lower: float, upper: float) -> None:
        self.lower, self.upper, self.noise_std = lower, upper, noise_std

    def _noise(self, rng: np.random.Generator) -> float:
        return float(rng.normal(0.0, self.noise_std))

    def report_variance(self, value: float) -> float:
        _check_number("value", value, self.lower, self.upper)
        return self.noise_std ** 2


class PiecewiseMeanOracle:
    """The piecewise mechanism on [−1, 1] (module docstring)."""

    lower, upper = -1.0, 1.0

    def __init__(self, epsilon0: float) -> None:
        self.h = math.exp(epsilon0 / 2.0)
        self.big_c = (self.h + 1.0) / (self.h - 1.0)

    def sample(self, value: NumericValue, rng: np.random.Generator) -> float:
        x = _check_number("value", value, self.lower, self.upper)
        generator = _check_rng(rng)
        left = (self.big_c + 1.0) * x / 2.0 - (self.big_c - 1.0) / 2.0
        right = left + self.big_c - 1.0
        if generator.random() < self.h / (self.h + 1.0):
            return float(generator.uniform(left, right))
        # uniform on [−C, left) ∪ (right, C]: total length C + 1
        u = float(generator.uniform(0.0, self.big_c + 1.0))
        below = left + self.big_c
        return -self.big_c + u if u < below else right + (u - below)

    def estimate_mean(self, reports: Sequence[NumericReport]) -> float:
        return float(np.mean(_float_reports(reports)))

    def report_variance(self, value: float) -> float:
        x = _check_number("value", value, self.lower, self.upper)
        h = self.h
        return x * x / (h - 1.0) + (h + 3.0) / (3.0 * (h - 1.0) ** 2)

    def worst_report_variance(self) -> float:
        return self.report_variance(1.0)


class DuchiMeanOracle:
    """Duchi et al.'s ±B on [−1, 1] (module docstring)."""

    lower, upper = -1.0, 1.0

    def __init__(self, epsilon0: float) -> None:
        e = math.exp(epsilon0)
        self.bound = (e + 1.0) / (e - 1.0)

    def sample(self, value: NumericValue, rng: np.random.Generator) -> float:
        x = _check_number("value", value, self.lower, self.upper)
        positive = _check_rng(rng).random() < 0.5 + x / (2.0 * self.bound)
        return self.bound if positive else -self.bound

    def estimate_mean(self, reports: Sequence[NumericReport]) -> float:
        return float(np.mean(_float_reports(reports)))

    def report_variance(self, value: float) -> float:
        x = _check_number("value", value, self.lower, self.upper)
        return self.bound ** 2 - x * x

    def worst_report_variance(self) -> float:
        return self.report_variance(0.0)


class HarmonyMeanOracle:
    """Harmony on [−1, 1]^D: report [j, ±1] for a uniform coordinate j (module docstring); the
    estimate and variance are those of coordinate 0."""

    lower, upper = -1.0, 1.0

    def __init__(self, epsilon0: float, dimension: int) -> None:
        self.dimension = dimension
        self._duchi = DuchiMeanOracle(epsilon0)

    def sample(self, value: NumericValue, rng: np.random.Generator) -> list[int]:
        vector = [value] if not isinstance(value, Sequence) else list(value)
        if len(vector) != self.dimension:
            raise ValueError(f"value must have {self.dimension} coordinates, got {value!r}")
        generator = _check_rng(rng)
        j = int(generator.integers(self.dimension))
        sign = self._duchi.sample(vector[j], generator)
        return [j, 1 if sign > 0 else -1]

    def estimate_mean(self, reports: Sequence[NumericReport]) -> float:
        if len(reports) == 0:
            raise ValueError("reports must not be empty: no estimate from zero reports")
        total = 0
        for i, report in enumerate(reports):
            if (not isinstance(report, Sequence) or len(report) != 2
                    or report[0] not in range(self.dimension) or report[1] not in (-1, 1)):
                raise ValueError(f"reports[{i}] must be [j in [0, {self.dimension - 1}], +-1], "
                                 f"got {report!r}")
            total += int(report[1]) if report[0] == 0 else 0
        return self.dimension * self._duchi.bound * total / len(reports)

    def report_variance(self, value: float) -> float:
        x = _check_number("value", value, self.lower, self.upper)
        return self.dimension * self._duchi.bound ** 2 - x * x

    def worst_report_variance(self) -> float:
        return self.report_variance(0.0)


def mean_oracle(randomizer: Randomizer) -> MeanOracle:
    """The :class:`MeanOracle` of a numeric catalog randomizer (``laplace``, ``piecewise``,
    ``duchi``, ``harmony``, ``gaussian``); TypeError for any other randomizer."""
    if not isinstance(randomizer, Randomizer):
        raise TypeError(f"randomizer must be a dpacct_shuffle Randomizer, got "
                        f"{type(randomizer).__name__}")
    params = randomizer.parameters

    def number(key: str) -> float:
        value = params[key]
        assert isinstance(value, numbers.Real)  # catalog parameters are checked numbers
        return float(value)

    if randomizer.name == "laplace":
        return LaplaceMeanOracle(number("epsilon0"))
    if randomizer.name == "piecewise":
        return PiecewiseMeanOracle(number("epsilon0"))
    if randomizer.name == "duchi":
        return DuchiMeanOracle(number("epsilon0"))
    if randomizer.name == "harmony":
        return HarmonyMeanOracle(number("epsilon0"), int(number("dimension")))
    if randomizer.name == "gaussian":
        return GaussianMeanOracle(number("noise_std"), number("lower"), number("upper"))
    raise TypeError(f"{randomizer!r} has no mean estimator; numeric entries: laplace, piecewise, "
                    "duchi, harmony, gaussian")


__all__ = ["DuchiMeanOracle", "GaussianMeanOracle", "HarmonyMeanOracle", "LaplaceMeanOracle",
           "MeanOracle", "NumericReport", "PiecewiseMeanOracle", "mean_oracle"]
