"""The blanket clone pair (``randomizers.multilevel.blanket_variation_ratio``) against brute force.

Its claim needs only a ratio bound p and the blanket mass γ = Σ_y min_x R(x)(y): random matrices
test it against the exact shuffled δ of every configuration of the other users; the piecewise
mechanism on finitely many inputs has piecewise-constant densities, so binning its outputs at
every breakpoint is lossless and gives its exact matrix.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpacct_shuffle import VariationRatio
from dpacct_shuffle import randomizers as rz
from dpacct_shuffle.randomizers.multilevel import blanket_variation_ratio
from tests.oracle import exact_shuffled_delta

EPSILONS = (0.0, 0.2, 0.5, 1.0)


def worst_exact(matrix: np.ndarray, n: int, eps: float) -> float:
    """max over victim pairs and every configuration of the n − 1 others of the exact δ."""
    d = matrix.shape[0]
    return max(exact_shuffled_delta(matrix, i, j, list(others), eps)
               for i, j in itertools.permutations(range(d), 2)
               for others in itertools.combinations_with_replacement(range(d), n - 1))


def ratio_bound(matrix: np.ndarray) -> float:
    return float(np.max(matrix[:, None, :] / matrix[None, :, :])) * (1.0 + 1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_blanket_pair_covers_random_matrices(seed: int) -> None:
    rng = np.random.default_rng(400 + seed)
    inputs, outputs = 3, 3 + seed % 3
    raw = rng.uniform(0.2, 1.0, size=(inputs, outputs)) ** (1 + seed % 3)
    matrix = raw / raw.sum(axis=1, keepdims=True)
    p, gamma = ratio_bound(matrix), math.fsum(matrix.min(axis=0).tolist())
    assert gamma >= 2.0 / (p + 1.0)  # always true: 1 − γ is at most the largest TV ≤ (p−1)/(p+1)
    vr = blanket_variation_ratio(p, gamma)
    n = 3
    ratios = []
    for eps in EPSILONS:
        exact = worst_exact(matrix, n, eps)
        bound = vr.delta(eps, n)
        assert bound >= exact
        if exact > 1e-4:
            ratios.append(bound / exact)
    assert ratios and max(ratios) < 6.0


def piecewise_matrix(eps0: float, inputs: tuple[float, ...]) -> np.ndarray:
    """Exact law of the piecewise mechanism on ``inputs`` over the intervals between breakpoints."""
    e, h = math.exp(eps0), math.exp(eps0 / 2.0)
    big_c = (h + 1.0) / (h - 1.0)
    p_hi = (e - h) / (2.0 * h + 2.0)
    left = [(big_c + 1.0) * x / 2.0 - (big_c - 1.0) / 2.0 for x in inputs]
    cuts = sorted({-big_c, big_c, *left, *(l + big_c - 1.0 for l in left)})
    rows = []
    for l in left:
        row = []
        for lo, hi in zip(cuts[:-1], cuts[1:]):
            middle = 0.5 * (lo + hi)
            density = p_hi if l <= middle <= l + big_c - 1.0 else p_hi / e
            row.append(density * (hi - lo))
        rows.append(row)
    matrix = np.array(rows)
    assert np.allclose(matrix.sum(axis=1), 1.0, atol=1e-12)
    return matrix / matrix.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("eps0", [0.7, 2.0])
def test_piecewise_bound_covers_its_exact_matrix(eps0: float) -> None:
    matrix = piecewise_matrix(eps0, (-1.0, -0.3, 0.4, 1.0))
    randomizer = rz.piecewise(eps0)
    n = 3
    for eps in EPSILONS:
        exact = worst_exact(matrix, n, eps)
        assert randomizer.shuffled(n).delta(eps) >= exact
        assert randomizer.variation_ratio.delta(eps, n) >= exact


def test_piecewise_and_laplace_tighten_to_the_blanket_pair() -> None:
    """ε0 = 4, n = 1000, δ = 1e-6: generic share 1.767; blanket pair 1.577. Piecewise: within
    0.3% of its certified lower bound (1.574). Laplace's blanket pair is the same, and its
    reported value is lower (the extreme pair's spectrum, tests/test_laplace_levels.py)."""
    n, delta = 1000, 1e-6
    generic = VariationRatio(math.exp(4.0) * (1 + 1e-15), -math.expm1(-2.0),
                             math.exp(4.0) * (1 + 1e-15))
    assert generic.epsilon(delta, n) == pytest.approx(1.7666, abs=1e-3)
    piecewise = rz.piecewise(4.0).shuffled(n)
    laplace = rz.laplace(4.0).shuffled(n)
    upper = piecewise.epsilon(delta)
    assert upper == pytest.approx(1.5775, abs=1e-3)
    assert rz.laplace(4.0).variation_ratio.epsilon(delta, n) == pytest.approx(upper, rel=1e-9)
    assert laplace.epsilon(delta) < 0.8 * upper
    lower = piecewise.epsilon_lower(delta)
    assert lower <= upper <= lower * 1.003


def test_blanket_pair_validates() -> None:
    with pytest.raises(ValueError, match="blanket_mass"):
        blanket_variation_ratio(math.e, 0.1)  # below 2/(e + 1)
    with pytest.raises(ValueError, match="p"):
        blanket_variation_ratio(1.0, 0.5)
