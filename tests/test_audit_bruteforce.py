"""Soundness audit: the package's bounds against an independent brute-force reference.

The reference below imports nothing from :mod:`dpacct_shuffle` and shares no code with
``tests/oracle.py``. It works from the definitions only:

* a finite local randomizer is a row-stochastic matrix R (inputs × outputs);
* the shuffler releases the histogram of the n reports; for replace-one neighbours the victim
  holds x or x′ and the n − 1 others hold fixed inputs, of which only the counts per input
  matter (a *configuration*); random inputs of the others need not be considered (joint
  convexity of the hockey-stick divergence);
* δ(ε) = max over ordered pairs (x, x′), configurations, of Σ_h (P_x(h) − e^ε·P_x′(h))⁺.

Histograms are enumerated explicitly (every composition of t users into m outputs, for every
t ≤ n), and a law is built one user at a time, L_t(h) = Σ_o R[x, o]·L_{t−1}(h − e_o).
The difference P_x − e^ε·P_x′ is formed by linearity as Σ_o (R[x, o] − e^ε·R[x′, o])·O(h − e_o)
with O the others' law. Float values locate the worst (pair, configuration); that candidate is
then recomputed in exact rational arithmetic (``fractions.Fraction``) with e^ε replaced by a
rational *above* it, which gives a rigorous lower bound on the exact worst case; a rigorous upper
bound is the largest float value plus a bound on its rounding error (the float error of a cell
is at most (n + 2)(m + 2)·u times the sum of the absolute terms, which sum to ≤ 1 + e^ε).

Client sampling is the same computation on the *void* matrix: a user absent (probability 1 − γ)
sends a symbol ⊥ no randomizer outputs; with N known, the multiset of reports and the histogram
of N messages including ⊥ determine each other. For add/remove-one the victim absent always
sends ⊥ (an extra input row), the victim present sends γR(x) + (1 − γ)⊥, and the others number
N − 1 or N.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dpacct_shuffle import randomizers as rz

UNIT = 2.0**-53
REL = 1e-12  # relative slack for float noise in the package's own certified values


# ---------------------------------------------------------------------------------------------
# the independent reference
# ---------------------------------------------------------------------------------------------


def _compositions(total: int, parts: int) -> list[tuple[int, ...]]:
    """Every tuple of ``parts`` nonnegative integers summing to ``total``."""
    if parts == 1:
        return [(total,)]
    out = []
    for first in range(total + 1):
        for rest in _compositions(total - first, parts - 1):
            out.append((first, *rest))
    return out


class HistogramSpace:
    """Histograms of t = 0..n reports over m outputs, with the index of h − e_o at level t − 1."""

    def __init__(self, m: int, n: int) -> None:
        self.m, self.n = m, n
        self.levels = [_compositions(t, m) for t in range(n + 1)]
        index = [{h: i for i, h in enumerate(level)} for level in self.levels]
        self.parent: list[np.ndarray] = [np.zeros((1, m), dtype=np.int64)]
        for t in range(1, n + 1):
            previous = index[t - 1]
            missing = len(self.levels[t - 1])  # points at an appended zero
            rows = []
            for h in self.levels[t]:
                row = []
                for o in range(m):
                    if h[o] == 0:
                        row.append(missing)
                    else:
                        g = list(h)
                        g[o] -= 1
                        row.append(previous[tuple(g)])
                rows.append(row)
            self.parent.append(np.array(rows, dtype=np.int64))

    def add(self, law: np.ndarray, t: int, row: np.ndarray) -> np.ndarray:
        """Law at level t from the law at level t − 1 and one more user with (signed) row."""
        padded = np.append(law, 0.0)
        return padded[self.parent[t]] @ row


@dataclass(frozen=True)
class Worst:
    """Worst case over pairs and configurations: rigorous [lower, upper] and its arguments."""

    lower: float
    upper: float
    float_value: float
    x0: int
    x1: int
    others: tuple[int, ...]


def _law_of(space: HistogramSpace, matrix: np.ndarray, inputs: Sequence[int]) -> np.ndarray:
    law = np.ones(1)
    for t, x in enumerate(inputs, start=1):
        law = space.add(law, t, matrix[x])
    return law


def _fraction_delta(matrix: np.ndarray, x0: int, x1: int, others: Sequence[int],
                    scale: Fraction) -> Fraction:
    """Σ_h (P_x0(h) − scale·P_x1(h))⁺ in exact rational arithmetic (dict-based convolution)."""
    mat = [[Fraction(float(v)) for v in row] for row in matrix]
    m = len(mat[0])
    law: dict[tuple[int, ...], Fraction] = {(0,) * m: Fraction(1)}
    for x in others:
        new: dict[tuple[int, ...], Fraction] = {}
        for h, mass in law.items():
            for o in range(m):
                if mat[x][o]:
                    g = list(h)
                    g[o] += 1
                    key = tuple(g)
                    new[key] = new.get(key, Fraction(0)) + mass * mat[x][o]
        law = new
    signed = [mat[x0][o] - scale * mat[x1][o] for o in range(m)]
    diff: dict[tuple[int, ...], Fraction] = {}
    for h, mass in law.items():
        for o in range(m):
            if signed[o]:
                g = list(h)
                g[o] += 1
                key = tuple(g)
                diff[key] = diff.get(key, Fraction(0)) + mass * signed[o]
    return sum((v for v in diff.values() if v > 0), Fraction(0))


def _exp_above(eps: float) -> Fraction:
    """A rational ≥ e^ε (math.exp errs by < 1 ulp; split beyond 700 where e^ε overflows)."""
    value = Fraction(1)
    while eps > 700.0:
        value *= Fraction(math.exp(700.0)) * (1 + Fraction(1, 2**50))
        eps -= 700.0
    return value * Fraction(math.exp(eps)) * (1 + Fraction(1, 2**50))


def worst_case_delta(matrix: np.ndarray, n: int, eps: float, *,
                     pairs: Sequence[tuple[int, int]] | None = None,
                     other_inputs: Sequence[int] | None = None,
                     others_counts: Sequence[int] | None = None,
                     exact: bool = True) -> Worst:
    """Worst-case shuffled δ(ε) over ordered pairs and configurations of the others.

    ``pairs``: ordered victim pairs (default: every x ≠ x′, both orders); ``other_inputs``: the
    inputs the others may hold (default: every row); ``others_counts``: numbers of others
    (default: n − 1). ``exact``: recompute the worst float candidate in rationals.
    """
    mat = np.asarray(matrix, dtype=float)
    k, m = mat.shape
    pairs = [(a, b) for a in range(k) for b in range(k) if a != b] if pairs is None else pairs
    other_inputs = list(range(k)) if other_inputs is None else list(other_inputs)
    others_counts = [n - 1] if others_counts is None else list(others_counts)
    # beyond e^700 the float pass uses e^700 (a larger δ: it only locates the worst candidate);
    # the rational recheck uses the true e^ε
    big = math.exp(min(eps, 700.0))
    space = HistogramSpace(m, max(others_counts) + 1)
    best = (-1.0, 0, 0, ())
    for count in others_counts:
        for config in _compositions(count, len(other_inputs)):
            others = tuple(x for x, c in zip(other_inputs, config) for _ in range(c))
            law = _law_of(space, mat, others)
            for x0, x1 in pairs:
                diff = space.add(law, count + 1, mat[x0] - big * mat[x1])
                value = float(np.sum(diff[diff > 0]))
                if value > best[0]:
                    best = (value, x0, x1, others)
    value, x0, x1, others = best
    error = 2.0 * (max(others_counts) + 3) * (m + 3) * UNIT * (1.0 + big) + 1e-300
    if eps > 700.0:  # the float pass is an upper estimate only; nothing certified from above
        error = math.inf
    upper = min(1.0, value + error)
    if exact:
        lower = float(_fraction_delta(mat, x0, x1, others, _exp_above(eps)))
    else:
        lower = max(0.0, value - error)
    return Worst(lower, upper, value, x0, x1, others)


def worst_case_epsilon_check(matrix: np.ndarray, n: int, eps: float, **kw: object) -> Worst:
    return worst_case_delta(matrix, n, eps, **kw)  # type: ignore[arg-type]


def void_matrix(matrix: np.ndarray, gamma: float, *, absent_row: bool = False) -> np.ndarray:
    """[γR | 1 − γ] (a ⊥ column), with an extra row δ_⊥ (the absent victim) if asked."""
    mat = np.asarray(matrix, dtype=float)
    void = np.hstack([gamma * mat, np.full((mat.shape[0], 1), 1.0 - gamma)])
    if absent_row:
        void = np.vstack([void, np.eye(1, mat.shape[1] + 1, mat.shape[1])])
    return void


# ---------------------------------------------------------------------------------------------
# independent matrices of catalog entries (from their definitions)
# ---------------------------------------------------------------------------------------------


def krr_matrix(eps0: float, d: int) -> np.ndarray:
    e = math.exp(eps0)
    mat = np.full((d, d), 1.0 / (e + d - 1))
    np.fill_diagonal(mat, e / (e + d - 1))
    return mat


def unary_matrix(d: int, p_one_true: float, p_one_false: float) -> np.ndarray:
    """Bit j of the report is 1 w.p. p_one_true if j is the input, else p_one_false."""
    rows = []
    for x in range(d):
        row = []
        for bits in itertools.product((0, 1), repeat=d):
            prob = 1.0
            for j, bit in enumerate(bits):
                one = p_one_true if j == x else p_one_false
                prob *= one if bit else 1.0 - one
            row.append(prob)
        rows.append(row)
    return np.array(rows)


def rappor_matrix(eps0: float, d: int) -> np.ndarray:
    """Symmetric unary encoding: each bit flipped w.p. 1/(e^(ε0/2) + 1)."""
    keep = math.exp(eps0 / 2) / (math.exp(eps0 / 2) + 1)
    return unary_matrix(d, keep, 1 - keep)


def oue_matrix(eps0: float, d: int) -> np.ndarray:
    """Optimized unary encoding: true bit 1 w.p. 1/2, other bits 1 w.p. 1/(e^ε0 + 1)."""
    return unary_matrix(d, 0.5, 1.0 / (math.exp(eps0) + 1))


def subset_matrix(eps0: float, d: int, k: int) -> np.ndarray:
    """k-subset selection: subsets containing x have weight e^ε0, the others 1."""
    subsets = list(itertools.combinations(range(d), k))
    e = math.exp(eps0)
    mat = np.array([[e if x in s else 1.0 for s in subsets] for x in range(d)])
    return mat / mat.sum(axis=1, keepdims=True)


def same_columns(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal up to a permutation of the columns (sorted lexicographically), to 1e-12."""
    if a.shape != b.shape:
        return False
    ka = a[:, np.lexsort(np.round(a, 12)[::-1])]
    kb = b[:, np.lexsort(np.round(b, 12)[::-1])]
    return bool(np.allclose(ka, kb, rtol=0, atol=1e-12))


def merge_identical_columns(matrix: np.ndarray) -> np.ndarray:
    """Sum columns that are equal (the merged histogram is a sufficient statistic: given it, the
    split of a merged count is multinomial whatever the inputs)."""
    mat = np.asarray(matrix, dtype=float)
    groups: dict[bytes, list[int]] = {}
    for j in range(mat.shape[1]):
        groups.setdefault(mat[:, j].tobytes(), []).append(j)
    return np.stack([mat[:, cols].sum(axis=1) for cols in groups.values()], axis=1)


# ---------------------------------------------------------------------------------------------
# the reference checks itself
# ---------------------------------------------------------------------------------------------


def _delta_by_sequences(matrix: np.ndarray, x0: int, x1: int, others: Sequence[int],
                        eps: float) -> float:
    """One pair and configuration by enumerating every output sequence (tiny n)."""
    mat = np.asarray(matrix, dtype=float)
    m = mat.shape[1]
    laws = []
    for victim in (x0, x1):
        law: dict[tuple[int, ...], float] = {}
        inputs = (victim, *others)
        for seq in itertools.product(range(m), repeat=len(inputs)):
            prob = math.prod(mat[x, o] for x, o in zip(inputs, seq))
            key = tuple(seq.count(o) for o in range(m))
            law[key] = law.get(key, 0.0) + prob
        laws.append(law)
    big = math.exp(eps)
    return math.fsum(max(0.0, laws[0][h] - big * laws[1].get(h, 0.0)) for h in laws[0])


def test_reference_matches_sequence_enumeration() -> None:
    rng = np.random.default_rng(7)
    for _ in range(5):
        mat = rng.dirichlet(np.ones(3), size=3)
        for n in (2, 3, 4):
            worst = worst_case_delta(mat, n, 0.3)
            direct = _delta_by_sequences(mat, worst.x0, worst.x1, worst.others, 0.3)
            assert worst.lower <= direct * (1 + 1e-12) and direct <= worst.upper
            assert worst.upper - worst.lower <= 1e-12
    # a hand-computable case: binary RR, n = 1 is the local divergence e^ε0/(e^ε0+1) − ...
    e0 = 1.0
    mat = krr_matrix(e0, 2)
    local = (math.exp(e0) - math.exp(0.4)) / (math.exp(e0) + 1)
    worst = worst_case_delta(mat, 1, 0.4)
    assert abs(worst.lower - local) <= 1e-15


def test_reference_sampling_matrix() -> None:
    void = void_matrix(krr_matrix(1.0, 2), 0.25, absent_row=True)
    np.testing.assert_allclose(void.sum(axis=1), 1.0)
    assert void.shape == (3, 3) and void[2, 2] == 1.0


# ---------------------------------------------------------------------------------------------
# comparisons with the package
# ---------------------------------------------------------------------------------------------

# Small n: the package includes the exact enumeration, certified with its float-error margins
# (relative O(n·m·u) on each law, so O(n·m·u·(1 + e^ε)) absolute on δ): closeness is asserted as
# a gap of at most TIGHT_REL relative plus TIGHT_ABS·(1 + e^ε) absolute.
TIGHT_REL = 1e-6
TIGHT_ABS = 1e-12


def check_delta_against(randomizer: rz.Randomizer, matrix: np.ndarray, n: int, eps: float, *,
                        tight: bool = True) -> Worst:
    """Upper ≥ exact ≥ lower for the shuffled object, every cover/fallback entry ≥ exact."""
    worst = worst_case_delta(matrix, n, eps)
    shuffled = randomizer.shuffled(n)
    upper, lower = shuffled.delta(eps), shuffled.delta_lower(eps)
    where = f"{randomizer!r} n={n} eps={eps}: exact in [{worst.lower!r}, {worst.upper!r}]"
    assert upper >= worst.lower * (1 - REL), f"{where}, upper {upper!r}"
    assert lower <= worst.upper * (1 + REL), f"{where}, lower {lower!r}"
    assert shuffled.delta_interval(eps) == (lower, upper)
    cover = max(bound.delta(eps, n) for bound in randomizer.cover)
    assert cover >= worst.lower * (1 - REL), f"{where}, cover max {cover!r}"
    for bound in randomizer.fallbacks:
        value = bound.delta(eps, n)
        assert value >= worst.lower * (1 - REL), f"{where}, fallback {bound!r}: {value!r}"
    if tight:
        slack = TIGHT_ABS * (1.0 + math.exp(eps))
        assert upper <= worst.upper * (1 + TIGHT_REL) + slack, f"{where}, upper {upper!r}"
        assert lower >= worst.lower * (1 - TIGHT_REL) - slack, f"{where}, lower {lower!r}"
    return worst


def check_epsilon_against(randomizer: rz.Randomizer, matrix: np.ndarray, n: int,
                          delta: float) -> None:
    """ε_upper(δ): the exact δ there is ≤ δ; ε_lower(δ): the exact δ there is ≥ δ (continuity);
    every cover/fallback entry's ε is a valid ε too."""
    shuffled = randomizer.shuffled(n)
    eps_lower, eps_upper = shuffled.epsilon_interval(delta)
    where = f"{randomizer!r} n={n} delta={delta}"
    assert 0.0 <= eps_lower <= eps_upper, f"{where}: [{eps_lower}, {eps_upper}]"
    if math.isfinite(eps_upper):
        at_upper = worst_case_delta(matrix, n, eps_upper)
        assert at_upper.lower <= delta * (1 + REL), (
            f"{where}: eps_upper {eps_upper!r} but exact delta there {at_upper.lower!r}")
    if eps_lower > 0.0:
        at_lower = worst_case_delta(matrix, n, eps_lower, exact=False)
        assert at_lower.upper >= delta * (1 - REL), (
            f"{where}: eps_lower {eps_lower!r} but exact delta there {at_lower.upper!r}")
    entries = [max(bound.epsilon(delta, n) for bound in randomizer.cover)]
    entries += [bound.epsilon(delta, n) for bound in randomizer.fallbacks]
    for value in entries:
        if math.isfinite(value) and value < eps_upper * (1 - 1e-9) - 1e-12:
            raise AssertionError(f"{where}: an entry's eps {value} below the reported {eps_upper}")
        if math.isfinite(value) and value != eps_upper:
            at_value = worst_case_delta(matrix, n, value)
            assert at_value.lower <= delta * (1 + REL), f"{where}: entry eps {value!r}"


# (name, constructor of ε0, independent matrix of ε0 or None (use the entry's), largest n)
CATALOG = [
    ("binary_rr", lambda e: rz.binary_rr(e), lambda e: krr_matrix(e, 2), 8),
    ("krr d=3", lambda e: rz.krr(e, 3), lambda e: krr_matrix(e, 3), 7),
    ("krr d=4", lambda e: rz.krr(e, 4), lambda e: krr_matrix(e, 4), 5),
    ("rappor d=2", lambda e: rz.rappor(e, 2), lambda e: rappor_matrix(e, 2), 6),
    ("rappor d=3", lambda e: rz.rappor(e, 3), lambda e: rappor_matrix(e, 3), 3),
    ("oue d=2", lambda e: rz.optimized_unary_encoding(e, 2), lambda e: oue_matrix(e, 2), 6),
    ("oue d=3", lambda e: rz.optimized_unary_encoding(e, 3), lambda e: oue_matrix(e, 3), 3),
    ("subset d=3 k=1", lambda e: rz.subset_selection(e, 3, 1), lambda e: subset_matrix(e, 3, 1), 6),
    ("subset d=4 k=2", lambda e: rz.subset_selection(e, 4, 2), lambda e: subset_matrix(e, 4, 2), 3),
    ("hadamard K=4", lambda e: rz.hadamard_response(e, 4), None, 5),
    ("local_hashing g=2 d=3", lambda e: rz.local_hashing(e, 2, 3), None, 3),
]
CATALOG_IDS = [case[0] for case in CATALOG]


def _catalog_matrix(case: tuple, eps0: float) -> tuple[rz.Randomizer, np.ndarray]:
    _, build, own, _ = case
    randomizer = build(eps0)
    if own is not None:
        matrix = own(eps0)
        assert same_columns(randomizer.matrix, matrix), f"{randomizer!r}: matrix differs"
    else:
        matrix = np.asarray(randomizer.matrix, dtype=float)
        np.testing.assert_allclose(matrix.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    return randomizer, merge_identical_columns(matrix)


@pytest.mark.parametrize("case", CATALOG, ids=CATALOG_IDS)
def test_catalog_delta_fixed_grid(case: tuple) -> None:
    for eps0 in (0.7, 2.5):
        randomizer, matrix = _catalog_matrix(case, eps0)
        for n in sorted({2, (2 + case[3]) // 2, case[3]}):
            for eps in (0.0, 0.05, 0.3, 0.69, 1.5):
                check_delta_against(randomizer, matrix, n, eps)


@pytest.mark.parametrize("case", CATALOG, ids=CATALOG_IDS)
def test_catalog_epsilon_fixed_grid(case: tuple) -> None:
    randomizer, matrix = _catalog_matrix(case, 2.0)
    for n in sorted({2, case[3]}):
        for delta in (1e-1, 1e-3, 1e-6):
            check_epsilon_against(randomizer, matrix, n, delta)


@settings(max_examples=max(5, settings.default.max_examples // 5))
@given(case=st.sampled_from(CATALOG), eps0=st.floats(0.05, 5.0), data=st.data(),
       eps=st.floats(0.0, 3.0))
def test_catalog_delta_fuzz(case: tuple, eps0: float, data: st.DataObject, eps: float) -> None:
    randomizer, matrix = _catalog_matrix(case, eps0)
    n = data.draw(st.integers(2, case[3]), label="n")
    check_delta_against(randomizer, matrix, n, eps)


@settings(max_examples=max(3, settings.default.max_examples // 10))
@given(case=st.sampled_from(CATALOG), eps0=st.floats(0.05, 5.0), data=st.data(),
       log_delta=st.floats(-9.0, -0.5))
def test_catalog_epsilon_fuzz(case: tuple, eps0: float, data: st.DataObject,
                              log_delta: float) -> None:
    randomizer, matrix = _catalog_matrix(case, eps0)
    n = data.draw(st.integers(2, min(case[3], 5)), label="n")
    check_epsilon_against(randomizer, matrix, n, 10.0**log_delta)


def _random_matrix(data: st.DataObject) -> np.ndarray:
    k = data.draw(st.integers(2, 3), label="inputs")
    m = data.draw(st.integers(2, 4), label="outputs")
    cells = st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 1.0, 1e-9, 0.5]))
    rows = []
    for _ in range(k):
        row = np.array(data.draw(st.lists(cells, min_size=m, max_size=m), label="row"))
        # entries below 1e-100 hit the internal errors pinned by the xfail cases at the end
        row[row < 1e-100] = 0.0
        if row.sum() <= 0:
            row[0] = 1.0
        rows.append(row / row.sum())
    return np.array(rows)


@settings(max_examples=max(5, settings.default.max_examples // 4))
@given(data=st.data(), eps=st.floats(0.0, 4.0))
def test_from_matrix_delta_fuzz(data: st.DataObject, eps: float) -> None:
    matrix = _random_matrix(data)
    n = data.draw(st.integers(2, 8 if matrix.shape[1] <= 3 else 5), label="n")
    randomizer = rz.from_matrix(matrix)
    check_delta_against(randomizer, merge_identical_columns(np.asarray(randomizer.matrix)), n, eps)


@settings(max_examples=max(3, settings.default.max_examples // 10))
@given(data=st.data(), log_delta=st.floats(-9.0, -0.5))
def test_from_matrix_epsilon_fuzz(data: st.DataObject, log_delta: float) -> None:
    matrix = _random_matrix(data)
    n = data.draw(st.integers(2, 5), label="n")
    randomizer = rz.from_matrix(matrix)
    check_epsilon_against(randomizer, merge_identical_columns(np.asarray(randomizer.matrix)), n,
                          10.0**log_delta)


# ---------------------------------------------------------------------------------------------
# findings: explicit cases
# ---------------------------------------------------------------------------------------------

# Two-row matrix whose float rows do not sum to exactly 1 (1 + 1.05e-17 and 1 + 2.1e-17 in exact
# arithmetic): Σ(R(0) − R(1))⁺ = 1.99999999895e-8 < Σ(R(1) − R(0))⁺ = 2e-8. The binary reduction
# (randomizers/binary_reduction.py) used the first only, and its sampled binary-RR bound fell
# below the exact worst case: n = 2, ε = 0.1: 1.579316291074e-08 < exact 1.579316291904e-08;
# ε = 0.5: 2.8102298314e-16 < 2.8102298344e-16. Found by the thorough run of
# test_from_matrix_delta_fuzz on [[1, 2e-8], [0.5, 2e-8]] (rows normalized):
# n = 2, ε = 0.5: 2.80404849917e-16 < exact 2.80404851395e-16.
TWO_ROW_FINDINGS = [
    (np.array([[1 - 2e-8, 2e-8], [1 - 4e-8, 4e-8]]), 2, 0.1),
    (np.array([[1 - 2e-8, 2e-8], [1 - 4e-8, 4e-8]]), 2, 0.5),
    (np.array([[1 - 2e-8, 2e-8], [1 - 4e-8, 4e-8]]), 5, 0.69),
    (np.array([[1.0, 1.9977993843606695e-08], [0.5, 1.9977993843606695e-08]]), 2, 0.5),
]


@pytest.mark.parametrize("rows, n, eps", TWO_ROW_FINDINGS)
def test_binary_reduction_two_sided_variation(rows: np.ndarray, n: int, eps: float) -> None:
    matrix = rows / rows.sum(axis=1, keepdims=True)
    randomizer = rz.from_matrix(matrix)
    check_delta_against(randomizer, np.asarray(randomizer.matrix), n, eps)


@settings(max_examples=max(5, settings.default.max_examples // 4))
@given(small=st.floats(1e-12, 1e-3), ratio=st.floats(1.0001, 50.0), bulk=st.floats(0.0, 1.0),
       eps=st.floats(0.0, 4.0), n=st.integers(2, 6))
def test_two_row_near_degenerate_fuzz(small: float, ratio: float, bulk: float, eps: float,
                                      n: int) -> None:
    """Two inputs differing only on a rare output (the binary reduction applies): the rows are
    built without renormalization, so they rarely sum to exactly 1 in float."""
    rest = 1.0 - small * ratio
    rows = np.array([[bulk * (1 - small), (1 - bulk) * (1 - small), small],
                     [bulk * rest, (1 - bulk) * rest, small * ratio]])
    rows = rows[:, rows.max(axis=0) > 0]
    try:
        randomizer = rz.from_matrix(rows)
    except ValueError as error:  # randomizers/matrix.py _frontier on this branch's base; fixed on main
        assume("zero-size array" not in str(error))
        raise
    check_delta_against(randomizer, merge_identical_columns(np.asarray(randomizer.matrix)), n, eps)


# Valid row-stochastic matrices (subnormal or tiny entries) on which the package raises an
# internal error instead of answering (not a soundness violation; docs promise a clear error or
# a value).
def test_from_matrix_subnormal_blanket_delta() -> None:
    """A subnormal blanket mass: the multi-level bound (whose ratio to it overflows) is left out;
    the round still answers with an upper bound of the exact δ."""
    row = np.array([1.0, 0.5, 0.25, 5e-324]) / 1.75
    matrix = np.array([[0.25] * 4, list(row)])
    check_delta_against(rz.from_matrix(matrix), matrix, 2, 0.5, tight=False)


def test_from_matrix_subnormal_lower_bound() -> None:
    """Rows that differ only by a subnormal entry: no projection separates them, the lower bound
    is 0 and the interval is ordered."""
    lower, upper = rz.from_matrix([[1.0, 0.0], [1.0, 5e-324]]).shuffled(2).epsilon_interval(0.1)
    assert lower == 0.0 and upper >= lower


# ---------------------------------------------------------------------------------------------
# Poisson-sampled rounds and the accountants
# ---------------------------------------------------------------------------------------------

from dp_accounting import dp_event  # noqa: E402
from dp_accounting.privacy_accountant import NeighboringRelation  # noqa: E402

from dpacct_shuffle import shuffle_round  # noqa: E402
from dpacct_shuffle.accountants import ShufflePLDAccountant  # noqa: E402
from dpacct_shuffle.events import ShuffleEvent  # noqa: E402
from dpacct_shuffle.sampling import poisson_sampled_profile  # noqa: E402

ADD_REMOVE = NeighboringRelation.ADD_OR_REMOVE_ONE

# (name, randomizer, independent matrix)
SAMPLED = [
    ("binary_rr 1.5", lambda: rz.binary_rr(1.5), lambda: krr_matrix(1.5, 2)),
    ("krr 1.0 d=3", lambda: rz.krr(1.0, 3), lambda: krr_matrix(1.0, 3)),
    ("rappor 2.0 d=2", lambda: rz.rappor(2.0, 2), lambda: rappor_matrix(2.0, 2)),
    ("matrix 3x3", lambda: rz.from_matrix([[0.6, 0.3, 0.1], [0.2, 0.2, 0.6], [0.1, 0.5, 0.4]]),
     lambda: np.array([[0.6, 0.3, 0.1], [0.2, 0.2, 0.6], [0.1, 0.5, 0.4]])),
]
SAMPLED_IDS = [case[0] for case in SAMPLED]


def sampled_replace_one(matrix: np.ndarray, population: int, gamma: float, eps: float) -> Worst:
    """Replace-one: N users of the void randomizer, every pair of real inputs."""
    return worst_case_delta(merge_identical_columns(void_matrix(matrix, gamma)), population, eps)


def sampled_add_remove(matrix: np.ndarray, population: int, gamma: float, eps: float) -> Worst:
    """Add/remove-one: the victim present (γR(x) + (1 − γ)⊥) or absent (⊥), both orders; the
    others (real inputs, each present w.p. γ) number N − 1 or N."""
    k = matrix.shape[0]
    pairs = [(x, k) for x in range(k)] + [(k, x) for x in range(k)]
    return worst_case_delta(merge_identical_columns(void_matrix(matrix, gamma, absent_row=True)),
                            population, eps, pairs=pairs, other_inputs=range(k),
                            others_counts=[population - 1, population])


def check_sampled(randomizer: rz.Randomizer, matrix: np.ndarray, population: int, gamma: float,
                  eps: float, *, accountants: bool) -> None:
    where = f"{randomizer!r} N={population} gamma={gamma} eps={eps}"
    replace = sampled_replace_one(matrix, population, gamma, eps)
    profile = poisson_sampled_profile(randomizer, population, gamma).delta(eps)
    assert profile >= replace.lower * (1 - REL), f"{where}: replace-one profile {profile!r} < {replace}"
    bounds = shuffle_round.delta_bounds(randomizer, population, eps, sampling_probability=gamma)
    assert bounds.upper >= replace.lower * (1 - REL), f"{where}: round upper {bounds.upper!r}"
    if bounds.lower is not None:
        assert bounds.lower <= replace.upper * (1 + REL), f"{where}: round lower {bounds.lower!r}"
    remove = sampled_add_remove(matrix, population, gamma, eps)
    profile_ar = poisson_sampled_profile(randomizer, population, gamma,
                                         neighboring_relation=ADD_REMOVE).delta(eps)
    assert profile_ar >= remove.lower * (1 - REL), f"{where}: add/remove {profile_ar!r} < {remove}"
    if accountants:
        event = dp_event.PoissonSampledDpEvent(gamma, ShuffleEvent(randomizer, population))
        acc = ShufflePLDAccountant().compose(event).get_delta(eps)
        assert acc >= replace.lower * (1 - REL), f"{where}: replace-one accountant {acc!r}"
        acc_ar = ShufflePLDAccountant(ADD_REMOVE).compose(event).get_delta(eps)
        assert acc_ar >= remove.lower * (1 - REL), f"{where}: add/remove accountant {acc_ar!r}"


# the analyzed 3x3 matrix's sampled round takes minutes in the package (void matrix analysis):
# it runs under the thorough profile only
FAST_SAMPLED = SAMPLED[:3]


@pytest.mark.parametrize("case", FAST_SAMPLED, ids=SAMPLED_IDS[:3])
def test_poisson_sampled_fixed_grid(case: tuple) -> None:
    randomizer, matrix = case[1](), case[2]()
    for population, gamma, eps in ((2, 0.5, 0.1), (4, 0.1, 0.5), (6, 0.9, 0.3), (3, 0.3, 0.0)):
        check_sampled(randomizer, matrix, population, gamma, eps, accountants=population == 4)


@settings(max_examples=max(3, settings.default.max_examples // 20))
@given(case=st.sampled_from(FAST_SAMPLED), population=st.integers(1, 6),
       gamma=st.floats(0.01, 1.0, exclude_max=True), eps=st.floats(0.0, 2.0))
def test_poisson_sampled_fuzz(case: tuple, population: int, gamma: float, eps: float) -> None:
    check_sampled(case[1](), case[2](), population, gamma, eps, accountants=False)


@pytest.mark.thorough
@settings(max_examples=20)
@given(case=st.sampled_from(SAMPLED), population=st.integers(1, 5), gamma=st.floats(0.01, 1.0, exclude_max=True),
       eps=st.floats(0.0, 2.0))
def test_poisson_sampled_accountants_thorough(case: tuple, population: int, gamma: float,
                                              eps: float) -> None:
    check_sampled(case[1](), case[2](), population, gamma, eps, accountants=True)


def _pair_laws(matrix: np.ndarray, x0: int, x1: int, others: Sequence[int]
               ) -> tuple[np.ndarray, np.ndarray]:
    mat = np.asarray(matrix, dtype=float)
    n = len(others) + 1
    space = HistogramSpace(mat.shape[1], n)
    law = _law_of(space, mat, others)
    return space.add(law, n, mat[x0]), space.add(law, n, mat[x1])


def composed_delta(p: np.ndarray, q: np.ndarray, rounds: int, eps: float) -> float:
    """δ(ε) of the `rounds`-fold product of (P, Q) (exact enumeration of the product)."""
    prod_p, prod_q = p, q
    for _ in range(rounds - 1):
        prod_p = np.outer(prod_p, p).ravel()
        prod_q = np.outer(prod_q, q).ravel()
    diff = prod_p - math.exp(eps) * prod_q
    return math.fsum(diff[diff > 0].tolist())


@pytest.mark.parametrize("case", CATALOG[:4] + CATALOG[7:8], ids=CATALOG_IDS[:4] + CATALOG_IDS[7:8])
def test_accountant_two_rounds_above_exact_composition(case: tuple) -> None:
    """ShufflePLDAccountant composing a ShuffleEvent twice ≥ the exact two-fold δ of the
    single-round worst (pair, configuration) at ε/2 (a lower estimate of the true worst case),
    both orders of that pair."""
    randomizer, matrix = _catalog_matrix(case, 1.5)
    for n in (2, 4):
        accountant = ShufflePLDAccountant().compose(ShuffleEvent(randomizer, n), 2)
        for eps in (0.1, 0.6, 1.5):
            worst = worst_case_delta(matrix, n, eps / 2, exact=False)
            p, q = _pair_laws(matrix, worst.x0, worst.x1, worst.others)
            exact = max(composed_delta(p, q, 2, eps), composed_delta(q, p, 2, eps))
            error = 1e-13 * (1 + math.exp(eps))
            value = accountant.get_delta(eps)
            assert value >= exact - error, f"{randomizer!r} n={n} eps={eps}: {value} < {exact}"


def test_add_remove_at_sampling_probability_one() -> None:
    """γ = 1 under add/remove-one: the report count reveals presence, the exact δ is 1."""
    exact = sampled_add_remove(krr_matrix(1.5, 2), 3, 1.0, 0.1)
    assert exact.lower == 1.0
    for randomizer in (rz.binary_rr(1.5), rz.krr(1.0, 3)):
        profile = poisson_sampled_profile(randomizer, 3, 1.0, neighboring_relation=ADD_REMOVE)
        assert profile.delta(0.1) == 1.0 and profile.delta(20.0) == 1.0
