"""Hostile input over the public library API: a value or a clear ValueError/TypeError.

Every property below calls a public entry point with parameters drawn from sensible ranges mixed
with extreme ones (subnormal and huge floats, 10**400, ±inf, NaN, bools, strings, None) and
asserts: either ValueError/TypeError, or a result that is never NaN, with ε ≥ 0, δ ∈ [0, 1] and
lower bound ≤ upper bound. For finite matrices with n ≤ 3 the bounds are also checked against the
exact shuffled δ(ε) (every victim pair, every configuration of the others, mpmath at 40 digits):
lower ≤ exact ≤ upper.

Example counts follow the loaded hypothesis profile (``tests/conftest.py``: ``ci`` by default,
``HYPOTHESIS_PROFILE=thorough`` for thousands); the costly properties use a fraction of it.
"""

from __future__ import annotations

import inspect
import itertools
import math
from collections.abc import Callable

import mpmath
import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.privacy_accountant import UnsupportedEventError
from hypothesis import given, settings
from hypothesis import strategies as st

from dpacct_shuffle import VariationRatio, calibration, lemmas, randomizers
from dpacct_shuffle.accountants import ShufflePLDAccountant, ShuffleRdpAccountant
from dpacct_shuffle.core import closed_forms
from dpacct_shuffle.events import LDPCompositionEvent, ShuffleEvent

CLEAR_ERRORS = (ValueError, TypeError)
EXAMPLES = settings.default.max_examples

WILD_NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 5e-324, 1e-300, 1e-17, 1e-6, 709.0, 710.0, 1e308, 10**400,
                     -(10**400), 2**53 + 1, math.inf, -math.inf, math.nan]),
    st.integers(-(10**30), 10**30),
)
WILD = st.one_of(WILD_NUMBERS, st.booleans(), st.none(), st.text(max_size=3),
                 st.just([1.0]), st.just(np.float64(1.5)), st.just(np.int64(3)))


def outcome(call: Callable[[], object], allowed: tuple[type[BaseException], ...] = CLEAR_ERRORS
            ) -> object | None:
    """``call()``, or None if it raised one of the clear errors (anything else propagates)."""
    try:
        return call()
    except allowed:
        return None


def assert_epsilon(value: float) -> None:
    assert isinstance(value, float) and not math.isnan(value) and value >= 0.0, value


def assert_delta(value: float) -> None:
    assert isinstance(value, float) and 0.0 <= value <= 1.0, value


def assert_interval(interval: tuple[float, float], check: Callable[[float], None]) -> None:
    lower, upper = interval
    check(lower)
    check(upper)
    assert lower <= upper, interval


# -- catalog --------------------------------------------------------------------------------------
_SMALL_INTS = st.integers(1, 12)
_SENSIBLE_EPS0 = st.floats(1e-6, 12.0)


def _argument(name: str) -> st.SearchStrategy[object]:
    if name in ("epsilon0", "d01", "d0_max", "d1_max", "d_max"):
        return st.one_of(_SENSIBLE_EPS0, WILD)
    if "probability" in name:
        return st.one_of(st.floats(0.0, 1.0), WILD)
    return st.one_of(_SMALL_INTS, WILD)


@st.composite
def catalog_calls(draw: st.DrawFn) -> tuple[str, dict[str, object]]:
    name = draw(st.sampled_from(sorted(randomizers.CATALOG)))
    arguments = {}
    for parameter in inspect.signature(randomizers.CATALOG[name]).parameters.values():
        if parameter.default is inspect.Parameter.empty or draw(st.booleans()):
            arguments[parameter.name] = draw(_argument(parameter.name))
    return name, arguments


def _small(arguments: dict[str, object]) -> bool:
    """Evaluate the bounds only where they are cheap (small integer parameters)."""
    return all(not isinstance(v, (int, np.integer)) or isinstance(v, bool) or abs(int(v)) <= 12
               for v in arguments.values())


@settings(max_examples=2 * EXAMPLES)
@given(catalog_calls(), st.one_of(st.integers(1, 50), WILD), st.sampled_from([1e-30, 1e-6, 0.3]),
       st.sampled_from([0.0, 0.05, 1.0, 30.0]))
def test_catalog_entries_give_values_or_clear_errors(call, n, delta, epsilon) -> None:
    name, arguments = call
    randomizer = outcome(lambda: randomizers.CATALOG[name](**arguments))
    if randomizer is None or not _small(arguments):
        return
    shuffled = outcome(lambda: randomizer.shuffled(n))
    if shuffled is None:
        return
    assert_interval(shuffled.epsilon_interval(delta), assert_epsilon)
    assert_interval(shuffled.delta_interval(epsilon), assert_delta)


# -- from_matrix, against the exact shuffled profile ------------------------------------------------
_ENTRY = st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 1e-300, 1e-17, 1e-9, 1.0]))


@st.composite
def stochastic_matrices(draw: st.DrawFn) -> list[list[float]]:
    rows, cols = draw(st.integers(2, 3)), draw(st.integers(2, 3))
    matrix = []
    for _ in range(rows):
        row = [draw(_ENTRY) for _ in range(cols)]
        total = math.fsum(row)
        if total == 0.0:
            row[0], total = 1.0, 1.0
        matrix.append([x / total for x in row])
    return matrix


def exact_shuffled_delta(matrix: np.ndarray, n: int, epsilon: float) -> mpmath.mpf:
    """max over ordered victim pairs and multisets of the others' inputs of D_{e^ε} of the laws of
    the output histogram, rows normalised in mpmath (40 digits)."""
    mpmath.mp.dps = 40
    rows = [[mpmath.mpf(float(x)) for x in row] for row in matrix]
    rows = [[x / mpmath.fsum(row) for x in row] for row in rows]
    outputs = len(rows[0])

    def law(inputs: tuple[int, ...]) -> dict[tuple[int, ...], mpmath.mpf]:
        result: dict[tuple[int, ...], mpmath.mpf] = {(0,) * outputs: mpmath.mpf(1)}
        for x in inputs:
            step: dict[tuple[int, ...], mpmath.mpf] = {}
            for hist, mass in result.items():
                for y in range(outputs):
                    key = tuple(h + (k == y) for k, h in enumerate(hist))
                    step[key] = step.get(key, mpmath.mpf(0)) + mass * rows[x][y]
            result = step
        return result

    factor = mpmath.e ** mpmath.mpf(epsilon)
    best = mpmath.mpf(0)
    for x0, x1 in itertools.permutations(range(len(rows)), 2):
        for others in itertools.combinations_with_replacement(range(len(rows)), n - 1):
            first, second = law((x0, *others)), law((x1, *others))
            value = mpmath.fsum(max(mpmath.mpf(0), mass - factor * second.get(hist, 0))
                                for hist, mass in first.items())
            best = max(best, value)
    return best


@settings(max_examples=max(10, EXAMPLES // 2))
@given(stochastic_matrices(), st.integers(1, 3), st.sampled_from([0.0, 0.1, 1.0, 5.0, 45.0]),
       st.sampled_from([1e-30, 1e-6, 0.2]))
def test_from_matrix_bounds_bracket_the_exact_profile(matrix, n, epsilon, delta) -> None:
    randomizer = outcome(lambda: randomizers.from_matrix(matrix))
    if randomizer is None:
        return
    shuffled = randomizer.shuffled(n)
    lower, upper = shuffled.delta_interval(epsilon)
    assert_interval((lower, upper), assert_delta)
    exact = exact_shuffled_delta(randomizer.matrix, n, epsilon)
    # the analyzed rows are the float rows renormalised (an ulp per entry): relative 1e-12 slack
    assert lower <= exact * (1 + 1e-12) + 1e-300, (lower, exact)
    assert upper >= exact * (1 - 1e-12), (upper, exact)
    assert_interval(shuffled.epsilon_interval(delta), assert_epsilon)


@given(st.lists(st.lists(WILD, min_size=1, max_size=3), min_size=1, max_size=3))
def test_from_matrix_rejects_garbage_clearly(matrix) -> None:
    randomizer = outcome(lambda: randomizers.from_matrix(matrix))
    if randomizer is not None:
        assert_interval(randomizer.shuffled(2).delta_interval(0.5), assert_delta)


# -- VariationRatio and closed forms --------------------------------------------------------------
@given(st.one_of(st.floats(1.0, 50.0), WILD), st.one_of(st.floats(0.0, 1.0), WILD),
       st.one_of(st.floats(1.0, 100.0), WILD), st.one_of(st.none(), st.floats(1.0, 100.0), WILD),
       st.one_of(st.none(), st.floats(0.0, 1.0), WILD), st.integers(1, 2000),
       st.sampled_from([0.0, 0.01, 0.5, 3.0]), st.sampled_from([1e-12, 1e-6, 0.5]))
def test_variation_ratio_values_or_clear_errors(p, beta, q, q1, share, n, epsilon, delta) -> None:
    vr = outcome(lambda: VariationRatio(p, beta, q, q1=q1, neutral_share=share))
    if vr is None:
        return
    assert_interval(tuple(vr.delta_interval(epsilon, n)), assert_delta)
    assert_epsilon(vr.epsilon(delta, n))
    chernoff = closed_forms.chernoff_delta(vr, epsilon, n)
    assert_delta(chernoff)
    assert chernoff >= vr.delta(epsilon, n) * (1 - 1e-12)


@given(st.one_of(st.floats(0.0, 5.0), WILD), st.one_of(st.integers(1, 10**12), WILD),
       st.one_of(st.floats(1e-12, 0.5), WILD))
def test_fmt_epsilon_values_or_clear_errors(epsilon0, n, delta) -> None:
    value = outcome(lambda: closed_forms.fmt_epsilon(epsilon0, n, delta))
    if value is not None:
        assert_epsilon(value)


# -- events and accountants -----------------------------------------------------------------------
_RANDOMIZERS = [randomizers.krr(2.0, 4), randomizers.binary_rr(1.0), VariationRatio(math.inf, 0.5, 2.0),
                randomizers.from_matrix([[1.0, 0.0], [0.0, 1.0]]), randomizers.balls_into_bins(3, 1)]


@st.composite
def events(draw: st.DrawFn) -> object:
    kind = draw(st.sampled_from(["shuffle", "ldp", "gaussian"]))
    if kind == "shuffle":
        return ShuffleEvent(draw(st.sampled_from(_RANDOMIZERS)),
                            draw(st.one_of(st.integers(1, 300), WILD)),
                            draw(st.one_of(st.just(1.0), st.floats(0.0, 1.0), WILD)))
    if kind == "ldp":
        size = draw(st.integers(1, 3))
        return LDPCompositionEvent(draw(st.lists(st.one_of(st.floats(0.0, 5.0), WILD),
                                                 min_size=size, max_size=size)),
                                   draw(st.sampled_from(["sequential", "chained", "parallel"])),
                                   draw(st.one_of(st.none(), st.lists(
                                       st.one_of(st.floats(0.0, 1.0), WILD), min_size=size,
                                       max_size=size))))
    return dp_event.GaussianDpEvent(draw(st.floats(0.1, 10.0)))


@settings(max_examples=max(10, EXAMPLES // 3))
@given(st.data(), st.sampled_from([ShufflePLDAccountant, ShuffleRdpAccountant]),
       st.one_of(st.sampled_from([0.0, 1e-6, 0.5, 1.0]), WILD),
       st.one_of(st.sampled_from([0.0, 0.5, 3.0, math.inf]), WILD))
def test_accountants_give_values_or_clear_errors(data, accountant_class, delta, epsilon) -> None:
    event = outcome(lambda: data.draw(events()))
    accountant = accountant_class()
    if event is not None:
        # UnsupportedEventError is dp-accounting's documented answer to an unsupported event
        # (here: RDP of an (ε, δ > 0)-LDP report); supports() says False beforehand
        supported = accountant.supports(event)
        composed = outcome(lambda: accountant.compose(event), CLEAR_ERRORS + (UnsupportedEventError,))
        assert (composed is not None) == supported
    epsilon_value = outcome(lambda: accountant.get_epsilon(delta))
    if epsilon_value is not None:
        assert_epsilon(epsilon_value)
    delta_value = outcome(lambda: accountant.get_delta(epsilon))
    if delta_value is not None:
        assert_delta(delta_value)


# -- lemmas and calibration -----------------------------------------------------------------------
_DISTRIBUTION = st.lists(st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 1e-300, 1e-17])),
                         min_size=2, max_size=4).filter(lambda row: math.fsum(row) > 0.0)


@given(_DISTRIBUTION, _DISTRIBUTION, st.one_of(st.floats(0.0, 1.0), WILD),
       st.one_of(st.floats(0.0, 30.0), WILD))
def test_lemma_divergences_values_or_clear_errors(first, second, delta, epsilon) -> None:
    size = min(len(first), len(second))
    p = np.array(first[:size]) / math.fsum(first[:size])
    q = np.array(second[:size]) / math.fsum(second[:size])
    if math.fsum(p[:size]) == 0.0 or math.fsum(q[:size]) == 0.0:
        return
    for call in (lambda: lemmas.approximate_max_divergence(p, q, delta),
                 lambda: lemmas.randomizer_epsilon(np.stack([p, q]), delta)):
        value = outcome(call)
        if value is not None:
            assert_epsilon(value)
    value = outcome(lambda: lemmas.hockey_stick_divergence(p, q, epsilon))
    if value is not None:
        assert_delta(value)


@settings(max_examples=max(5, EXAMPLES // 10))
@given(st.one_of(st.floats(0.05, 2.0), WILD), st.one_of(st.floats(1e-9, 0.1), WILD),
       st.one_of(st.integers(1, 2000), WILD))
def test_calibration_values_or_clear_errors(target_epsilon, delta, n) -> None:
    value = outcome(lambda: calibration.largest_epsilon0(
        randomizers.krr, target_epsilon, delta, n, max_epsilon0=8.0, domain_size=4))
    if value is not None:
        assert_epsilon(value)


# -- the reported inputs, one per class ----------------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda: VariationRatio(2.0, 0.1, 2.0, q1=10**400),
    lambda: closed_forms.fmt_epsilon(0.5, 10**400, 1e-6),
    lambda: randomizers.krr(710.0, 100),
    lambda: randomizers.piecewise(5e-324),
    lambda: VariationRatio.worst_case(800.0),
    lambda: randomizers.metric_ldp(1.0, 710.0),
])
def test_reported_inputs_are_clear_errors(call) -> None:
    with pytest.raises(ValueError, match="must be"):
        call()


ISSUE_MATRIX = [[0.9985804327373026, 0.001419566047374027, 1.2153234292626182e-09],
                [0.0031995316764767846, 2.7148272564905417e-07, 0.9968001968407976],
                [0.5826984088348905, 0.4173015911651095, 5.794096929766267e-22]]


@pytest.mark.parametrize("matrix, n", [([[1.0, 1e-17], [1e-17, 1.0]], 2), (ISSUE_MATRIX, 2),
                                       (ISSUE_MATRIX, 3)])
def test_near_deterministic_matrices_bracket_the_exact_value(matrix, n) -> None:
    """Rows with entries 17-22 orders of magnitude apart: the analyzer used to fail (RuntimeError)
    and the lower bound ignored rest masses lost to rounding (ε lower 700 > exact 39.14)."""
    shuffled = randomizers.from_matrix(matrix).shuffled(n)
    lower, upper = shuffled.epsilon_interval(1e-30)
    assert lower <= upper
    for epsilon in (0.5 * lower, lower, 0.5 * (lower + upper), upper):
        exact = exact_shuffled_delta(shuffled.randomizer.matrix, n, epsilon)
        d_lower, d_upper = shuffled.delta_interval(epsilon)
        assert d_lower <= exact * (1 + 1e-12) + 1e-300 and d_upper >= exact * (1 - 1e-12)
    # at the lower ε the exact δ still exceeds 1e-30, at the upper it does not
    assert exact_shuffled_delta(shuffled.randomizer.matrix, n, lower) > 1e-30
    assert exact_shuffled_delta(shuffled.randomizer.matrix, n, upper) <= 1e-30
    assert upper - lower <= 1e-3 * upper


def test_trinomial_tails_are_accurate_and_defined_beyond_two_to_the_31() -> None:
    """scipy's bdtr/bdtrc gave P[Bin(1e8, 1/2) > 5e7] = 0.3896 (exact 0.49996) and NaN for
    n >= 2**31; the trinomial instances use the incomplete beta function."""
    from dpacct_shuffle.randomizers.lower_bounds import _binomial_tail


    mpmath.mp.dps = 40
    n = 10**8
    central = mpmath.e ** (mpmath.loggamma(n + 1) - 2 * mpmath.loggamma(n // 2 + 1) - n * mpmath.log(2))
    exact = (1 - central) / 2  # P[X > n/2] = P[X >= n/2 + 1] by symmetry
    value = float(_binomial_tail(np.array([n // 2 + 1]), np.array([n]), 0.5, upper=True)[0])
    assert abs(value - exact) <= 1e-10 * exact
    low = float(_binomial_tail(np.array([n // 2 - 1]), np.array([n]), 0.5, upper=False)[0])
    assert abs(low - exact) <= 1e-10 * exact  # P[X <= n/2 - 1] = P[X > n/2]
    big = 2**31 + 1
    tails = _binomial_tail(np.array([big // 2 + 1, big // 2]), np.array([big, big]), 0.5, upper=True)
    assert np.all(np.isfinite(tails)) and tails[0] == pytest.approx(0.5, rel=1e-9)  # n odd: symmetric
    assert tails[0] + float(_binomial_tail(np.array([big // 2]), np.array([big]), 0.5,
                                           upper=False)[0]) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.thorough
def test_trinomial_instance_is_defined_beyond_two_to_the_31() -> None:
    """The whole instance at n = 2**31 + 1 (about 45 s of CPU: half a million incomplete beta
    functions of parameters near 10⁹)."""
    e = math.e
    g = 1.0 / (e + 9.0)
    instance = randomizers.trinomial_projection(2**31 + 1, (e * g, g), (g, e * g), (e * g, g))
    # a number (it was NaN); at this n the instance's rounding margins (θ's relative error times
    # 10⁹ trials) exceed its positive part, so the certified value is 0 (δ_upper is about 1e-6)
    assert_delta(instance.delta(1e-5))
