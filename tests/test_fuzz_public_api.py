"""Fuzzing every public constructor and query with hostile input, under a per-call CPU limit.

Complements ``test_public_api_properties.py`` (values against brute force, accountants,
calibration) and ``test_cli_fuzz.py`` (the command line): here each public entry point gets its own
property, so the number of generated inputs scales with the profile — about 1,500 under ``ci``
(the default, derandomized) and over 60,000 under ``HYPOTHESIS_PROFILE=thorough`` (2,000 per
property). Each call must, within ``CALL_CPU_SECONDS`` of CPU time, return a value (never NaN;
ε ≥ 0, δ ∈ [0, 1], lower ≤ upper) or raise ValueError/TypeError whose message names one of the
call's parameters.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import math
import os
import signal
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpacct_shuffle import VariationRatio, lemmas, randomizers
from dpacct_shuffle.event_serialization import event_from_json
from dpacct_shuffle.randomizers.serialization import randomizer_from_json

#: every example of the profile under ``thorough`` (2,000 per property, random seeds: over 50,000
#: inputs); half of the ``ci`` profile's 100 in the default run (derandomized: about 1,500 inputs
#: in about ten seconds, a fair share of a suite near its time budget)
EXAMPLES = (settings.default.max_examples if os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
            else settings.default.max_examples // 2)
CALL_CPU_SECONDS = 20.0
CLEAR_ERRORS = (ValueError, TypeError)

HOSTILE_NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 5e-324, 2.2e-308, 1e-300, 1e-17, 1e-6, 0.5, 1.0, 2.0, 7.5, 499.9,
                     500.0, 500.1, 709.8, 710.0, 745.0, 1e300, 1e308, -1.0, -1e-300, math.inf,
                     -math.inf, math.nan]),
    st.integers(-(2**70), 2**70),
    st.sampled_from([2, 3, 4, 16, 64, 1000, 2**20, 10**6, 2**53, 2**53 + 1, 10**15 + 1, 10**400,
                     -(10**400)]),
)
HOSTILE = st.one_of(HOSTILE_NUMBERS, st.booleans(), st.none(), st.text(max_size=4),
                    st.just([1.0]), st.just({"a": 1}), st.just(np.float64(2.5)),
                    st.just(np.int64(8)), st.just(np.nan))
#: sensible values mixed in, so that constructors get past their first check often
SENSIBLE = st.one_of(st.floats(0.1, 8.0), st.integers(2, 64))
ARGUMENT = st.one_of(SENSIBLE, HOSTILE)
FUZZ = settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow,
                                                             HealthCheck.filter_too_much])


class CallTooSlow(AssertionError):
    """A call ran longer than ``CALL_CPU_SECONDS`` of CPU time."""


@contextlib.contextmanager
def cpu_limit(seconds: float = CALL_CPU_SECONDS) -> Iterator[None]:
    """Raise :class:`CallTooSlow` inside the block after ``seconds`` of this process's CPU time
    (ITIMER_PROF: a loaded machine's waiting does not count)."""
    def expire(signum: int, frame: object) -> None:
        raise CallTooSlow(f"call took more than {seconds} CPU seconds")

    previous = signal.signal(signal.SIGPROF, expire)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0.0)
        signal.signal(signal.SIGPROF, previous)


def value_or_clear_error(call: Callable[[], object], names: list[str]) -> object | None:
    """``call()`` under the CPU limit, or None after a ValueError/TypeError naming one of
    ``names`` (any other exception, or an error naming none of them, fails the test)."""
    try:
        with cpu_limit():
            return call()
    except CLEAR_ERRORS as exc:
        message = str(exc)
        assert any(name in message for name in names), (names, message)
        return None


def check_value(value: object) -> None:
    if isinstance(value, float):
        assert not math.isnan(value), value
    elif isinstance(value, tuple):
        for item in value:
            check_value(item)


def parameter_names(function: Callable[..., object]) -> list[str]:
    return list(inspect.signature(function).parameters)


# -- constructors and queries of every catalog entry ---------------------------------------
@pytest.mark.parametrize("name", sorted(randomizers.CATALOG))
@FUZZ
@given(data=st.data())
def test_catalog_constructor_then_queries(name: str, data: st.DataObject) -> None:
    entry = randomizers.CATALOG[name]
    names = parameter_names(entry)
    required = [p for p in inspect.signature(entry).parameters.values()
                if p.default is inspect.Parameter.empty and p.kind is p.POSITIONAL_OR_KEYWORD]
    args = [data.draw(ARGUMENT, label=p.name) for p in required]
    built = value_or_clear_error(lambda: entry(*args), names)
    if built is None:
        return
    assert isinstance(built, randomizers.Randomizer)
    n = data.draw(st.one_of(st.integers(1, 200), HOSTILE), label="n")
    shuffled = value_or_clear_error(lambda: built.shuffled(n, lower_bound_max_users=200), ["n"])
    if shuffled is None:
        return
    delta = data.draw(st.one_of(st.sampled_from([1e-6, 1e-10]), HOSTILE), label="delta")
    epsilon = data.draw(st.one_of(st.floats(0.0, 3.0), HOSTILE), label="epsilon")
    upper = value_or_clear_error(lambda: shuffled.epsilon(delta), ["delta"])
    if upper is not None:
        assert isinstance(upper, float) and upper >= 0.0 and not math.isnan(upper)
        if math.isfinite(upper):
            assert shuffled.delta(upper) <= delta  # the two queries agree
    interval = value_or_clear_error(lambda: shuffled.delta_interval(epsilon), ["epsilon"])
    if interval is not None:
        low, high = interval
        assert 0.0 <= low <= high <= 1.0, interval


# -- finite matrices -------------------------------------------------------------------------
MATRIX_ENTRY = st.one_of(st.floats(0.0, 1.0), st.sampled_from([0.0, 5e-324, 1e-310, 1e-17, 1.0]),
                         HOSTILE)


@FUZZ
@given(st.lists(st.lists(MATRIX_ENTRY, min_size=1, max_size=3), min_size=1, max_size=3),
       st.booleans(), st.integers(1, 6), st.sampled_from([1e-8, 0.1]))
def test_from_matrix_values_or_clear_errors(rows, normalise: bool, n: int, delta: float) -> None:
    if normalise:  # make stochastic rows out of the finite non-negative draws, kept as drawn
        try:
            array = np.abs(np.asarray(rows, dtype=float))
            if np.all(np.isfinite(array)) and np.all(array.sum(axis=1) > 0):
                rows = (array / array.sum(axis=1, keepdims=True)).tolist()
        except (TypeError, ValueError, OverflowError):  # not a finite array: kept as drawn
            pass
    built = value_or_clear_error(lambda: randomizers.from_matrix(rows), ["matrix"])
    if built is None:
        return
    shuffled = built.shuffled(n)
    low, high = value_or_clear_error(lambda: shuffled.epsilon_interval(delta), ["delta"]) or (0, 0)
    assert not math.isnan(high) and 0.0 <= low <= high, (low, high)


# -- the core's variation-ratio triple ------------------------------------------------------
@FUZZ
@given(ARGUMENT, ARGUMENT, ARGUMENT, st.one_of(st.integers(1, 1000), HOSTILE),
       st.one_of(st.floats(0.0, 2.0), HOSTILE))
def test_variation_ratio_values_or_clear_errors(p, beta, q, n, epsilon) -> None:
    vr = value_or_clear_error(lambda: VariationRatio(p, beta, q), ["p", "beta", "q"])
    if vr is None:
        return
    delta = value_or_clear_error(lambda: vr.delta(epsilon, n), ["epsilon", "n"])
    if delta is not None:
        assert 0.0 <= delta <= 1.0


# -- lemmas ----------------------------------------------------------------------------------
LEMMAS = ["kl_divergence_bound", "deletion_to_replacement", "basic_composition",
          "advanced_composition", "randomizer_delta"]


@pytest.mark.parametrize("name", [name for name in LEMMAS if hasattr(lemmas, name)])
@FUZZ
@given(data=st.data())
def test_lemmas_values_or_clear_errors(name: str, data: st.DataObject) -> None:
    function = getattr(lemmas, name)
    signature = inspect.signature(function)
    args = []
    for parameter in signature.parameters.values():
        if parameter.default is not inspect.Parameter.empty:
            continue
        if parameter.name == "pairs":
            args.append(data.draw(st.one_of(
                st.lists(st.tuples(ARGUMENT, st.one_of(st.floats(0.0, 1.0), HOSTILE)), max_size=4),
                HOSTILE)))
        elif parameter.name == "matrix":
            args.append(data.draw(st.one_of(
                st.just([[0.5, 0.5], [0.1, 0.9]]), st.just([[1.0, 0.0], [0.0, 1.0]]),
                st.just([[5e-324, 1.0], [1.0, 5e-324]]), HOSTILE)))
        else:
            args.append(data.draw(ARGUMENT, label=parameter.name))
    names = list(signature.parameters) + ["pairs[", "matrix"]
    value = value_or_clear_error(lambda: function(*args), names)
    check_value(value)
    if name == "randomizer_delta" and value is not None:
        assert 0.0 <= value <= 1.0


# -- decoders ---------------------------------------------------------------------------------
def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


JSON_TEXT = st.one_of(
    st.text(max_size=30),
    st.builds(_deep, st.integers(1, 20_000)),
    st.builds(lambda d: '{"a": ' * d + "1" + "}" * d, st.integers(1, 5_000)),
    st.sampled_from(['{"event": NaN}', '{"kind": Infinity}', "NaN", "[1e999]", "{}", "[]", "null",
                     '{"kind": "variation_ratio", "p": 2.0}']),
    st.recursive(st.one_of(st.none(), st.booleans(), st.floats(allow_nan=False),
                           st.integers(), st.text(max_size=5)),
                 lambda children: st.one_of(st.lists(children, max_size=3),
                                            st.dictionaries(st.text(max_size=5), children,
                                                            max_size=3)),
                 max_leaves=20).map(json.dumps),
    HOSTILE,
)


@pytest.mark.parametrize("decode", [event_from_json, randomizer_from_json],
                         ids=["event", "randomizer"])
@FUZZ
@given(JSON_TEXT)
def test_json_decoders_values_or_clear_errors(decode, text) -> None:
    value_or_clear_error(lambda: decode(text),
                         ["JSON", "event", "randomizer", "kind", "module", "class", "field", "text"])
