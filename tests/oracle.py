"""Independent brute-force oracles for the numerical core (numpy/scipy/fractions only).

Nothing here imports :mod:`dpacct_shuffle`: every value is computed from the *definitions*
(docs/theory.md, "Setting" to "Neutral-aware bound"), not from the core's formulas, so that the tests compare two independent derivations.

Oracles
-------
* :func:`pair_delta_bruteforce` -- hockey-stick divergence of the neutral-aware dominating pair
  (docs/theory.md, "Neutral-aware bound") by enumerating every count vector ``(#Q0, #Q1, #N)`` of ``n`` users (``n <= 40``).
* :func:`pair_delta_fraction` -- the same quantity in exact rational arithmetic (small ``n``),
  used to check the floating-point oracle.
* :func:`pair_delta_truncated` -- a slow cell-by-cell sum for ``n`` in the hundreds/thousands,
  returning a rigorous ``(lower, upper)`` bracket (binomial tails outside the summed box are
  bounded with scipy's binomial cdf/sf).
* :func:`exact_shuffled_delta` -- exact hockey-stick divergence of a *finite* local randomizer
  (a row-stochastic matrix) under shuffling, by iterated convolution over histogram space.
* :func:`shuffled_delta_by_sequences` -- the same by enumerating every output sequence (tiny
  ``n``), fully independent of the convolution code.
* :func:`krr_matrix`, :func:`krr_neutral_aware_params`, :func:`krr_published_params` -- k-ary
  randomized response and its variation-ratio parameters (docs/theory.md, "Decomposition").

The dominating pair
-------------------------------
``alpha = beta/(p-1)``, ``w = 1-(p+1)alpha``.  Under ``x0`` the victim is a Q0-clone w.p.
``p*alpha``, a Q1-clone w.p. ``alpha``, neutral w.p. ``w``; under ``x1`` the first two are
swapped.  Each of the other ``n-1`` users is independently Q0 w.p. ``r0 = p*alpha/q0``, Q1 w.p.
``r1 = p*alpha/q1``, N w.p. ``s`` and "rest" w.p. ``1-r0-r1-s``.  ``P``/``Q`` are the laws of
``(#Q0, #Q1, #N)`` over all ``n`` users under ``x0``/``x1``; direction 0 is
``sum max(0, P - e^eps Q)``, direction 1 swaps ``P`` and ``Q``.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np
from scipy import stats
from scipy.special import gammaln, xlogy

__all__ = [
    "PairParams",
    "pair_params",
    "pair_delta_bruteforce",
    "pair_delta_max",
    "pair_delta_fraction",
    "pair_delta_truncated",
    "krr_matrix",
    "krr_neutral_aware_params",
    "krr_published_params",
    "shuffled_output_law",
    "exact_shuffled_delta",
    "exact_shuffled_delta_directions",
    "shuffled_delta_by_sequences",
    "epsilon_by_bisection",
]

_REST_ROUNDING = 1e-12  # |rest| below this (negative) is float rounding of s = 1 - r0 - r1


@dataclass(frozen=True)
class PairParams:
    """Masses of the dominating pair: victim (p_alpha, alpha, w), others (r0, r1, s, rest)."""

    p: float
    beta: float
    p_alpha: float
    alpha: float
    w: float
    r0: float
    r1: float
    s: float
    rest: float


def pair_params(
    p: float,
    beta: float,
    q0: float,
    q1: float | None = None,
    neutral_share: float | None = None,
) -> PairParams:
    """Victim and other-user masses from (p, beta, q0, q1, s); ``neutral_share=None`` -> w/max(q).

    ``p = inf`` is allowed (then ``alpha = 0`` and ``p*alpha = beta``).
    """
    q1 = q0 if q1 is None else q1
    if not (p >= 1 and 0 <= beta and q0 >= 1 and q1 >= 1):
        raise ValueError(f"oracle: bad parameters p={p}, beta={beta}, q0={q0}, q1={q1}")
    if math.isinf(p):
        alpha, p_alpha = 0.0, float(beta)
    elif beta == 0:
        alpha, p_alpha = 0.0, 0.0
    else:
        alpha = beta / (p - 1)
        p_alpha = p * alpha
    w = 1.0 - p_alpha - alpha
    if w < 0:
        if w < -1e-15:
            raise ValueError(f"oracle: beta={beta} > (p-1)/(p+1) for p={p}")
        w = 0.0
    r0, r1 = p_alpha / q0, p_alpha / q1
    s = w / max(q0, q1) if neutral_share is None else float(neutral_share)
    rest = 1.0 - r0 - r1 - s
    if rest < 0:
        if rest < -_REST_ROUNDING:
            raise ValueError(f"oracle: r0+r1+s = {r0 + r1 + s} > 1")
        rest = 0.0
    return PairParams(float(p), float(beta), p_alpha, alpha, w, r0, r1, s, rest)


def _signed_victim_weights(pp: PairParams, eps: float, direction: int) -> tuple[float, float, float]:
    """Weights (on victim type Q0, Q1, N) of ``P - e^eps Q`` (direction 0) or ``Q - e^eps P`` (1).

    Written as ``alpha*(p - e^eps)`` etc. (not ``p*alpha - e^eps*alpha``) so the sign is exact:
    for ``e^eps >= p`` every weight is <= 0 and the divergence is exactly 0.
    """
    big = math.exp(eps)
    if math.isinf(pp.p):
        heavy_minus_light = pp.p_alpha  # p*alpha - e^eps*alpha with alpha = 0
        light_minus_heavy = -big * pp.p_alpha
    else:
        heavy_minus_light = pp.alpha * (pp.p - big)
        light_minus_heavy = pp.alpha * (1.0 - pp.p * big)
    neutral = pp.w * (1.0 - big)
    if direction == 0:
        return heavy_minus_light, light_minus_heavy, neutral
    if direction == 1:
        return light_minus_heavy, heavy_minus_light, neutral
    raise ValueError("direction must be 0 or 1")


def _log_multinomial_others(pp: PairParams, m: int, a, b, k):
    """log P[(#Q0, #Q1, #N) = (a, b, k)] for m iid other users; -inf where impossible."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    k = np.asarray(k, dtype=np.int64)
    rest = m - a - b - k
    valid = (a >= 0) & (b >= 0) & (k >= 0) & (rest >= 0)
    ac, bc, kc, rc = (np.where(valid, x, 0) for x in (a, b, k, rest))
    logp = (
        gammaln(m + 1.0)
        - gammaln(ac + 1.0)
        - gammaln(bc + 1.0)
        - gammaln(kc + 1.0)
        - gammaln(rc + 1.0)
        + xlogy(ac, pp.r0)
        + xlogy(bc, pp.r1)
        + xlogy(kc, pp.s)
        + xlogy(rc, pp.rest)
    )
    return np.where(valid, logp, -np.inf)


def pair_delta_bruteforce(
    p: float,
    beta: float,
    q0: float,
    q1: float | None,
    neutral_share: float | None,
    n: int,
    eps: float,
    direction: int,
) -> float:
    """Hockey-stick divergence of the dominating pair by full enumeration (n <= 40).

    ``P(a,b,k) = p*alpha*M(a-1,b,k) + alpha*M(a,b-1,k) + w*M(a,b,k-1)`` with ``M`` the
    multinomial law of the other ``n-1`` users' counts (log-space pmf); ``Q`` swaps the first two
    weights.  Returns ``fsum max(0, P - e^eps Q)`` (direction 0) or with P, Q swapped (1).
    """
    if not (isinstance(n, int) and 1 <= n <= 60):
        raise ValueError("oracle: n must be an int in [1, 60]")
    pp = pair_params(p, beta, q0, q1, neutral_share)
    m = n - 1
    idx = np.arange(n + 1)
    a, b, k = np.meshgrid(idx, idx, idx, indexing="ij")  # total counts over all n users
    w_q0, w_q1, w_n = _signed_victim_weights(pp, eps, direction)
    m_a = np.exp(_log_multinomial_others(pp, m, a - 1, b, k))
    m_b = np.exp(_log_multinomial_others(pp, m, a, b - 1, k))
    m_k = np.exp(_log_multinomial_others(pp, m, a, b, k - 1))
    diff = w_q0 * m_a + w_q1 * m_b + w_n * m_k
    return math.fsum(diff[diff > 0].tolist())


def pair_delta_max(
    p: float,
    beta: float,
    q0: float,
    q1: float | None,
    neutral_share: float | None,
    n: int,
    eps: float,
) -> float:
    """max over both directions of :func:`pair_delta_bruteforce`."""
    return max(
        pair_delta_bruteforce(p, beta, q0, q1, neutral_share, n, eps, 0),
        pair_delta_bruteforce(p, beta, q0, q1, neutral_share, n, eps, 1),
    )


def pair_delta_fraction(
    p: float,
    beta: float,
    q0: float,
    q1: float | None,
    neutral_share: float | None,
    n: int,
    eps: float,
    direction: int,
) -> Fraction:
    """Exact rational value of the pair divergence for the float-rounded masses (small n).

    The masses from :func:`pair_params` and ``exp(eps)`` are converted to ``Fraction`` exactly;
    ``P`` and ``Q`` are built with exact integer multinomial coefficients (``math.comb``).
    Independent of the float oracle's log-space arithmetic.  p must be finite.
    """
    pp = pair_params(p, beta, q0, q1, neutral_share)
    r0, r1, s, rest = (Fraction(x) for x in (pp.r0, pp.r1, pp.s, pp.rest))
    pa, al, w = Fraction(pp.p_alpha), Fraction(pp.alpha), Fraction(pp.w)
    big = Fraction(math.exp(eps))
    m = n - 1

    @functools.lru_cache(maxsize=None)
    def others(a: int, b: int, k: int) -> Fraction:
        rr = m - a - b - k
        if min(a, b, k, rr) < 0:
            return Fraction(0)
        coef = math.comb(m, a) * math.comb(m - a, b) * math.comb(m - a - b, k)
        return coef * r0**a * r1**b * s**k * rest**rr

    total = Fraction(0)
    for a in range(n + 1):
        for b in range(n + 1 - a):
            for k in range(n + 1 - a - b):
                ma, mb, mk = others(a - 1, b, k), others(a, b - 1, k), others(a, b, k - 1)
                law0 = pa * ma + al * mb + w * mk
                law1 = al * ma + pa * mb + w * mk
                diff = law0 - big * law1 if direction == 0 else law1 - big * law0
                if diff > 0:
                    total += diff
    return total


def _count_range(m: int, prob: float, tail: float) -> tuple[int, int, float]:
    """[lo, hi] with P[Bin(m, prob) outside] = returned excluded mass (<= 2*tail).

    Uses scipy's binomial cdf/sf on every count (its ppf/isf are not reliable at tiny tails).
    """
    if prob <= 0.0 or m == 0:
        return 0, 0, 0.0
    if prob >= 1.0:
        return m, m, 0.0
    counts = np.arange(m + 1)
    cdf = stats.binom.cdf(counts, m, prob)
    sf = stats.binom.sf(counts, m, prob)
    lo = int(np.argmax(cdf >= tail))  # P[X < lo] = cdf[lo-1] < tail
    hi = int(np.argmax(sf <= tail)) if np.any(sf <= tail) else m  # P[X > hi] = sf[hi]
    excluded = (float(cdf[lo - 1]) if lo > 0 else 0.0) + float(sf[hi])
    return lo, hi, excluded


def pair_delta_truncated(
    p: float,
    beta: float,
    q0: float,
    q1: float | None,
    neutral_share: float | None,
    n: int,
    eps: float,
    direction: int,
    tail: float = 1e-22,
) -> tuple[float, float]:
    """Rigorous bracket ``(lower, upper)`` of the pair divergence for n up to a few thousand.

    Sums ``max(0, P - e^eps Q)`` cell by cell (P, Q from the victim mixture of shifted
    multinomial pmfs, exactly as in :func:`pair_delta_bruteforce`) over the box of total counts
    that contains every outcome whose *other users'* counts lie inside their marginal binomial
    quantile ranges.  Each omitted cell contributes at most its P (or Q) mass, and every omitted
    outcome has some other-users' marginal outside its range, so
    ``upper = lower + sum of the three binomial tail masses`` (union bound, scipy cdf/sf).
    """
    pp = pair_params(p, beta, q0, q1, neutral_share)
    m = n - 1
    a_lo, a_hi, ex_a = _count_range(m, pp.r0, tail)
    b_lo, b_hi, ex_b = _count_range(m, pp.r1, tail)
    k_lo, k_hi, ex_k = _count_range(m, pp.s, tail)
    w_q0, w_q1, w_n = _signed_victim_weights(pp, eps, direction)
    # Other users' counts on an extended box (one below the range, so that shifts stay inside).
    a_ext = np.arange(a_lo - 1, a_hi + 2)
    b_ext = np.arange(b_lo - 1, b_hi + 2)
    log_fact = gammaln(np.arange(m + 1, dtype=float) + 1.0)

    def one_axis(counts: np.ndarray, prob: float) -> np.ndarray:
        """-log(c!) + c log(prob), -inf for c < 0."""
        cc = np.clip(counts, 0, m)
        return np.where(counts >= 0, -log_fact[cc] + xlogy(cc, prob), -np.inf)

    fa = one_axis(a_ext, pp.r0)[:, None]
    fb = one_axis(b_ext, pp.r1)[None, :]
    fr = -log_fact + xlogy(np.arange(m + 1), pp.rest)  # rest count term
    ab_sum = a_ext[:, None] + b_ext[None, :]

    def others_slice(k: int) -> np.ndarray:
        """M(a, b, k) for a in a_ext, b in b_ext (multinomial pmf of the m other users)."""
        if k < 0 or k > m:
            return np.zeros(ab_sum.shape)
        rest = m - k - ab_sum
        rest_term = np.where(rest >= 0, fr[np.clip(rest, 0, m)], -np.inf)
        const = log_fact[m] - log_fact[k] + float(xlogy(k, pp.s))
        return np.exp(const + fa + fb + rest_term)

    partial_sums: list[float] = []
    previous = others_slice(k_lo - 1)
    for k in range(k_lo, k_hi + 2):  # total neutral count K (others' k plus the victim)
        current = others_slice(k)
        # rows/cols 1: of the extended box are total counts a_lo..a_hi+1, b_lo..b_hi+1
        diff = w_q0 * current[:-1, 1:] + w_q1 * current[1:, :-1] + w_n * previous[1:, 1:]
        positive = diff[diff > 0]
        if positive.size:
            partial_sums.append(math.fsum(positive.tolist()))
        previous = current
    lower = math.fsum(partial_sums)
    return lower, lower + ex_a + ex_b + ex_k


# ---------------------------------------------------------------------------------------------
# Finite local randomizers: exact shuffled divergence
# ---------------------------------------------------------------------------------------------


def krr_matrix(eps0: float, d: int) -> np.ndarray:
    """k-ary randomized response on d values: e^eps0/(e^eps0+d-1) on the diagonal, 1/(...) off."""
    if d < 2:
        raise ValueError("d must be >= 2")
    big = math.exp(eps0)
    mat = np.full((d, d), 1.0 / (big + d - 1))
    np.fill_diagonal(mat, big / (big + d - 1))
    return mat


def krr_neutral_aware_params(eps0: float, d: int) -> dict[str, float]:
    """VariationRatio kwargs for k-RR: p=q=e^eps0, beta=(e^eps0-1)/(e^eps0+d-1), s=(d-2)alpha."""
    big = math.exp(eps0)
    alpha = 1.0 / (big + d - 1)
    return {"p": big, "beta": (big - 1) / (big + d - 1), "q": big, "neutral_share": (d - 2) * alpha}


def krr_published_params(eps0: float, d: int) -> dict[str, float]:
    """The published pair for k-RR: same p, beta, q with s = 1 - r0 - r1 (NOT valid in general)."""
    kw = krr_neutral_aware_params(eps0, d)
    r = kw["p"] * (kw["beta"] / (kw["p"] - 1)) / kw["q"]
    kw["neutral_share"] = 1.0 - 2.0 * r
    return kw


def _check_matrix(matrix: np.ndarray) -> np.ndarray:
    mat = np.asarray(matrix, dtype=float)
    if mat.ndim != 2 or mat.shape[1] < 2 or np.any(mat < 0):
        raise ValueError("matrix must be a non-negative 2-D array with >= 2 outputs")
    if not np.allclose(mat.sum(axis=1), 1.0, rtol=0, atol=1e-12):
        raise ValueError("matrix rows must sum to 1")
    return mat


def _add_user(law: np.ndarray, row: np.ndarray) -> np.ndarray:
    """Convolve a histogram law (counts of outputs 0..d-2; the last output is implied) with one user.

    ``row`` may be any real vector (a signed combination of output distributions).  The result
    has one more slot per axis, so no mass is ever dropped.
    """
    d = row.shape[0]
    new = np.zeros(tuple(s + 1 for s in law.shape))
    core = tuple(slice(0, s) for s in law.shape)
    new[core] += row[d - 1] * law
    for j in range(d - 1):
        shifted = tuple(slice(1, s + 1) if ax == j else slice(0, s) for ax, s in enumerate(law.shape))
        new[shifted] += row[j] * law
    return new


@functools.lru_cache(maxsize=64)
def _cached_law(matrix_bytes: bytes, shape: tuple[int, int], inputs: tuple[int, ...]) -> np.ndarray:
    mat = np.frombuffer(matrix_bytes, dtype=float).reshape(shape)
    d = shape[1]
    law = np.ones((1,) * (d - 1))
    for x in sorted(inputs):
        law = _add_user(law, mat[x])
    law.setflags(write=False)
    return law


def shuffled_output_law(matrix: np.ndarray, inputs: Sequence[int]) -> np.ndarray:
    """Exact law of the output histogram of users with the given inputs (iterated convolution).

    Entry ``[c_0, ..., c_{d-2}]`` is the probability that c_j users output j (the count of output
    d-1 is ``len(inputs) - sum c``).  Shape ``(len(inputs)+1,)*(d-1)``.
    """
    mat = np.ascontiguousarray(_check_matrix(matrix))
    return _cached_law(mat.tobytes(), mat.shape, tuple(int(x) for x in inputs))


def exact_shuffled_delta_directions(
    matrix: np.ndarray, x0: int, x1: int, others: Sequence[int], eps: float
) -> tuple[float, float]:
    """Exact ``(D(P||Q), D(Q||P))`` at ``e^eps`` for the shuffled histogram.

    P: victim holds x0, Q: victim holds x1; ``others`` are the other users' inputs.  The
    difference ``P - e^eps Q`` is computed as the others' law convolved with the signed row
    ``R(x0) - e^eps R(x1)`` (linearity), so no large P, Q cancel against each other.
    """
    mat = _check_matrix(matrix)
    law = shuffled_output_law(mat, others)
    big = math.exp(eps)
    out = []
    for src, dst in ((x0, x1), (x1, x0)):
        diff = _add_user(law, mat[src] - big * mat[dst])
        out.append(math.fsum(diff[diff > 0].tolist()))
    return out[0], out[1]


def exact_shuffled_delta(
    matrix: np.ndarray, x0: int, x1: int, others: Sequence[int], eps: float
) -> float:
    """Exact shuffled delta(eps) of a finite randomizer for one neighbouring pair (max of both directions)."""
    return max(exact_shuffled_delta_directions(matrix, x0, x1, others, eps))


def shuffled_delta_by_sequences(
    matrix: np.ndarray, x0: int, x1: int, others: Sequence[int], eps: float
) -> float:
    """Same as :func:`exact_shuffled_delta` by enumerating all d^n output sequences (tiny n only)."""
    mat = _check_matrix(matrix)
    d = mat.shape[1]
    n = len(others) + 1
    if d**n > 200_000:
        raise ValueError("too many sequences")
    laws = []
    for victim in (x0, x1):
        inputs = [victim, *others]
        law: Counter[tuple[int, ...]] = Counter()
        for seq in itertools.product(range(d), repeat=n):
            prob = math.prod(mat[x, y] for x, y in zip(inputs, seq))
            hist = tuple(seq.count(j) for j in range(d))
            law[hist] += prob
        laws.append(law)
    big = math.exp(eps)
    keys = set(laws[0]) | set(laws[1])
    d01 = math.fsum(max(0.0, laws[0][h] - big * laws[1][h]) for h in keys)
    d10 = math.fsum(max(0.0, laws[1][h] - big * laws[0][h]) for h in keys)
    return max(d01, d10)


def epsilon_by_bisection(delta_of, delta: float, high: float, steps: int = 40) -> float:
    """Smallest ε in [0, high] with ``delta_of(ε) <= delta`` for a non-increasing ``delta_of``,
    by ``steps`` bisection steps (the upper end of the last bracket; 0 if δ(0) ≤ delta)."""
    if delta_of(0.0) <= delta:
        return 0.0
    low = 0.0
    for _ in range(steps):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if delta_of(mid) > delta else (low, mid)
    return high
