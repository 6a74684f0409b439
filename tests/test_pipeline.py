"""Pipeline files (:mod:`dpacct_shuffle.pipeline`): the schema accepts every documented key, builds
the same dp-accounting events as hand-written code, accounts them like the accountant does, and
rejects every misspelled key, conflicting key and out-of-range number with a one-line message."""

from __future__ import annotations

import io
import json
import string
from pathlib import Path
from typing import Any

import pytest
from dp_accounting import dp_event
from hypothesis import given, settings, strategies as st

from dpacct_shuffle import randomizers
from dpacct_shuffle.accountants import ShufflePLDAccountant
from dpacct_shuffle.cli import main
from dpacct_shuffle.events import LDPCompositionEvent, ParallelCompositionEvent, ShuffleEvent
from dpacct_shuffle.pipeline import Pipeline, account_pipeline, load_pipeline
from dpacct_shuffle.randomizers.spec import PARAMETER_ALIASES

RR3 = [[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]]


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def every_key_pipeline() -> dict[str, Any]:
    """A valid pipeline using every documented key at least once (and each randomizer form)."""
    return {
        "delta": 1e-6,
        "epsilon": 1.0,
        "value_discretization_interval": 1e-3,
        "steps": [
            {"type": "shuffle", "randomizer": {"name": "krr", "epsilon0": 2, "domain_size": 20},
             "users": 5000, "count": 2, "honest_fraction": 0.9},
            {"type": "shuffle", "randomizer": "krr:epsilon0=2,domain=20", "users": 1e4,
             "sampling_probability": 0.5},
            {"type": "parallel", "branches": [{"matrix": RR3}, {"matrix_file": "rr3.csv"}],
             "users": 2000, "probabilities": [0.25, 0.75], "mode": "random"},
            {"type": "parallel", "branches": [{"name": "oue", "epsilon0": 1, "domain_size": 4},
                                              {"name": "binary_rr", "epsilon0": 1}],
             "users": [1000, 3000], "mode": "disjoint", "honest_fraction": 1.0},
            {"type": "ldp", "epsilons": [1.0, 0.5], "deltas": [0.0, 1e-9], "mode": "chained"},
            {"type": "dpsgd", "noise_multiplier": 2.0, "sampling_probability": 0.01, "steps": 20},
            {"type": "dpsgd", "noise_multiplier": 2.0, "sampling_probability": 0.01, "count": 20},
            {"type": "gaussian", "noise_multiplier": 3.0, "count": 2},
            {"type": "shuffle", "randomizer": "krr:epsilon0=2,domain=20", "users": 1e4,
             "sample_size": 500},
        ],
    }


@pytest.fixture()
def rr3_dir(tmp_path: Path) -> Path:
    (tmp_path / "rr3.csv").write_text("\n".join(",".join(str(v) for v in row) for row in RR3))
    return tmp_path


def test_every_key_builds_the_hand_written_events(rr3_dir: Path) -> None:
    pipeline = load_pipeline(every_key_pipeline(), base_dir=rr3_dir)
    krr = randomizers.krr(2.0, 20)
    rr3 = randomizers.from_matrix(RR3)
    dpsgd = dp_event.SelfComposedDpEvent(
        dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(2.0)), 20)
    expected = [
        dp_event.SelfComposedDpEvent(ShuffleEvent(krr, 5000, 0.9), 2),
        dp_event.PoissonSampledDpEvent(0.5, ShuffleEvent(krr, 10_000)),
        ParallelCompositionEvent((rr3, rr3), 2000, (0.25, 0.75)),
        ParallelCompositionEvent((randomizers.oue(1.0, 4), randomizers.binary_rr(1.0)),
                                 (1000, 3000), None, "disjoint"),
        LDPCompositionEvent((1.0, 0.5), "chained", (0.0, 1e-9)),
        dpsgd,
        dpsgd,  # "count" on a dpsgd step is the number of steps
        dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(3.0), 2),
        dp_event.SampledWithoutReplacementDpEvent(10_000, 500, ShuffleEvent(krr, 500)),
    ]
    assert [step.event for step in pipeline.steps] == expected
    assert pipeline.event() == dp_event.ComposedDpEvent(expected)
    assert (pipeline.delta, pipeline.epsilon, pipeline.value_discretization_interval) == (1e-6, 1.0, 1e-3)


def test_account_equals_the_accountant_step_by_step_and_in_total(tmp_path: Path) -> None:
    data = {"delta": 1e-6, "epsilon": 0.5, "value_discretization_interval": 1e-3, "steps": [
        {"type": "shuffle", "randomizer": {"name": "krr", "epsilon0": 2, "domain_size": 20},
         "users": 5000, "count": 3},
        {"type": "ldp", "epsilons": [1.0]}]}
    result = account_pipeline(data)
    events = [dp_event.SelfComposedDpEvent(ShuffleEvent(randomizers.krr(2.0, 20), 5000), 3),
              LDPCompositionEvent((1.0,))]
    for step, event in zip(result.steps, events):
        accountant = ShufflePLDAccountant(value_discretization_interval=1e-3)
        accountant.compose(event)
        assert step.epsilon == accountant.get_epsilon(1e-6)
        assert step.delta == accountant.get_delta(0.5)
    accountant = ShufflePLDAccountant(value_discretization_interval=1e-3)
    accountant.compose(dp_event.ComposedDpEvent(events))
    assert result.epsilon == accountant.get_epsilon(1e-6)
    assert result.delta == accountant.get_delta(0.5)
    # composition costs more than either step and at most their sum (basic composition, with
    # the PLD's discretisation slack)
    first, second = (step.epsilon for step in result.steps)
    assert max(first, second) < result.epsilon <= first + second + 1e-2
    # the command line prints the same numbers, per step and in total
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    code, out, err = run("account", str(path), "--json")
    assert code == 0, err
    payload = json.loads(out)
    assert payload["epsilon"] == result.epsilon and payload["delta_at_epsilon"] == result.delta
    assert [s["epsilon"] for s in payload["per_step"]] == [first, second]
    code, out, _ = run("account", str(path))
    assert code == 0 and out.count("  steps[") == 2 and "steps[0] x3 shuffle krr" in out


def test_catastrophic_typo_cuont_exits_2_naming_key_path_and_allowed_keys(tmp_path: Path) -> None:
    path = tmp_path / "typo.toml"
    path.write_text('delta = 1e-8\n[[steps]]\ntype = "shuffle"\n'
                    'randomizer = { name = "krr", epsilon0 = 2, domain_size = 100 }\n'
                    'users = 100000\ncuont = 100\n')
    code, out, err = run("account", str(path))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("dpacct-shuffle: error: ")
    assert "'cuont'" in err and "steps[0]" in err
    assert "allowed keys here: count, honest_fraction, randomizer, sample_size, sampling_probability, type, users" in err


@pytest.mark.parametrize(("step", "fragments"), [
    ({"type": "dpsgd", "noise_multiplier": 1.0, "sampling_probability": 0.1, "steps": 10,
      "count": 3}, ["steps[0]", "'steps' or 'count'"]),
    ({"type": "shuffle", "randomizer": {"matrix": RR3, "matrix_file": "m.csv"}, "users": 10},
     ["steps[0].randomizer", "exactly one of 'matrix' and 'matrix_file'"]),
    ({"type": "shuffle", "randomizer": {"name": "krr", "epsilon0": 1, "domain": 3,
                                        "domain_size": 3}, "users": 10},
     ["steps[0].randomizer", "'domain' and 'domain_size' both give domain_size"]),
    ({"type": "shuffle", "randomizer": {"name": "krr", "epsilon0": 1, "domain_size": 3},
      "users": 10, "count": 10**18}, ["steps[0].count", "[1, 10^6]", str(10**18)]),
    ({"type": "shuffle", "randomizer": {"name": "krr", "epsilon0": float("nan"), "domain_size": 3},
      "users": 10}, ["steps[0].randomizer", "epsilon0 must be a finite real number, got nan"]),
    ({"type": "shuffle", "randomizer": {"name": "krr", "epsilon0": 1, "domain_size": True},
      "users": 10}, ["steps[0].randomizer", "domain_size must be an integer, got True"]),
    ({"type": "shuffle", "randomizer": {"name": "krr", "epsilon0": -1, "domain_size": 3},
      "users": 10}, ["steps[0].randomizer", "epsilon0", "-1"]),
    ({"type": "shuffle", "randomizer": {"name": "krr", "epsilon0": 1, "domain_size": 3},
      "users": 10.5}, ["steps[0].users", "integer in [1, 10^15]", "10.5"]),
    ({"type": "shuffle", "randomizer": {"name": "krr", "epsilon0": 1, "domain_size": 3},
      "users": 10**400}, ["steps[0].users", "integer in [1, 10^15]"]),
    ({"type": "shuffle", "randomizer": {"name": "krr", "epsilon0": 1, "domain_size": 3},
      "users": 10, "honest_fraction": 0}, ["steps[0].honest_fraction", "(0, 1]"]),
    ({"type": "shuffle", "randomizer": {"name": "krr", "epsilon0": 1, "domain_size": 3},
      "users": 10, "sampling_probability": float("inf")},
     ["steps[0].sampling_probability", "[0, 1]", "inf"]),
    ({"type": "shuffle", "randomizer": {"name": "krr", "epsilon0": 1, "domain_size": 3},
      "users": 10, "sampling_probability": 0.5, "sample_size": 5},
     ["steps[0]", "'sampling_probability' (Poisson sampling) or 'sample_size'"]),
    ({"type": "shuffle", "randomizer": {"name": "krr", "epsilon0": 1, "domain_size": 3},
      "users": 10, "sample_size": 11}, ["steps[0]", "sample_size must be <= users (10), got 11"]),
    ({"type": "shuffle", "randomizer": {"name": "no_such", "epsilon0": 1}, "users": 10},
     ["steps[0].randomizer", "unknown randomizer 'no_such'", "krr"]),
    ({"type": "shuffle", "randomizer": "krr:epsilon0", "users": 10},
     ["steps[0].randomizer", "NAME=VALUE"]),
    ({"type": "shuffle", "users": 10}, ["steps[0].randomizer", "required key is missing"]),
    ({"type": "parallel", "branches": [{"matrix": RR3}], "users": [10, 0], "mode": "disjoint"},
     ["steps[0].users", "integer", "0"]),
    ({"type": "parallel", "branches": [{"matrix": RR3}], "users": 10, "mode": "both"},
     ["steps[0].mode", "'random' or 'disjoint'", "'both'"]),
    ({"type": "parallel", "branches": [{"matrix": [[0.5, 0.6], [0.5, 0.5]]}], "users": 10},
     ["steps[0].branches[0]", "must sum to 1"]),
    ({"type": "parallel", "branches": [{"matrix": RR3}], "users": [10]},
     ["steps[0]", "users must be one number of users when mode = 'random'"]),
    ({"type": "parallel", "branches": [{"matrix": RR3}], "users": [10, 20], "mode": "disjoint"},
     ["steps[0]", "users must list one group size per branch (1)"]),
    ({"type": "parallel", "branches": [{"matrix": RR3}], "users": [10], "mode": "disjoint",
      "probabilities": [1.0]}, ["steps[0]", "probabilities cannot be given"]),
    ({"type": "parallel", "branches": [{"matrix": RR3}, {"matrix": RR3}], "users": 10,
      "probabilities": [0.5, 0.6]}, ["steps[0]", "probabilities", "sum to 1"]),
    ({"type": "ldp", "epsilons": [1.0], "deltas": [0.0, 0.0]}, ["steps[0]", "deltas", "one entry per epsilon"]),
    ({"type": "ldp", "epsilons": [1.0], "deltas": [1.0]}, ["steps[0].deltas[0]", "[0, 1)"]),
    ({"type": "ldp", "epsilons": [1.0, "x"]}, ["steps[0].epsilons[1]", "[0, inf)", "'x'"]),
    ({"type": "gaussian", "noise_multiplier": 0}, ["steps[0].noise_multiplier", "(0, inf)"]),
    ({"type": "teleport"}, ["steps[0]", "got type = 'teleport'", "'shuffle'"]),
])
def test_bad_step_is_one_clear_value_error(step: dict[str, Any], fragments: list[str]) -> None:
    with pytest.raises(ValueError) as error:
        load_pipeline({"delta": 1e-6, "steps": [step]})
    message = str(error.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, (fragment, message)


@pytest.mark.parametrize(("top", "fragments"), [
    ({"steps": [{"type": "gaussian", "noise_multiplier": 1.0}]}, ["'delta'", "'epsilon'"]),
    ({"delta": 1e-6, "steps": []}, ["'steps' must list at least one step"]),
    ({"delta": 1.0, "steps": [{"type": "gaussian", "noise_multiplier": 1.0}]},
     ["delta", "(0, 1)"]),
    ({"delta": 1e-6, "value_discretization_interval": 0,
      "steps": [{"type": "gaussian", "noise_multiplier": 1.0}]},
     ["value_discretization_interval", "[1e-06, 1]"]),
    ({"delta": 1e-6, "epsilon": -0.1, "steps": [{"type": "gaussian", "noise_multiplier": 1.0}]},
     ["epsilon", "[0, inf)"]),
    ({"delta": 1e-6, "stpes": []}, ["unknown key 'stpes'", "delta, epsilon, steps"]),
])
def test_bad_top_level_is_one_clear_value_error(top: dict[str, Any], fragments: list[str]) -> None:
    with pytest.raises(ValueError) as error:
        load_pipeline(top)
    for fragment in fragments:
        assert fragment in str(error.value), (fragment, str(error.value))


def test_json_file_with_a_repeated_key_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text('{"delta": 1e-6, "steps": [{"type": "gaussian", "noise_multiplier": 1.0, '
                    '"count": 100, "count": 1}]}')
    with pytest.raises(ValueError, match="'count' appears twice"):
        load_pipeline(path)
    code, _, err = run("account", str(path))
    assert code == 2 and "'count' appears twice" in err


def test_overrides_and_file_prefix(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"delta": 1e-6, "steps": [{"type": "gaussian", "noise_multiplier": 1.0}]}))
    assert load_pipeline(path, overrides={"delta": 1e-3}).delta == 1e-3
    with pytest.raises(ValueError, match=r"p\.json: delta: must be a real number in \(0, 1\)"):
        load_pipeline(path, overrides={"delta": 2.0})
    code, _, err = run("account", str(path), "--delta", "2")
    assert code == 2 and "delta" in err and "(0, 1)" in err


# -- hypothesis: a misspelled key anywhere is named --------------------------------------------
def _key_positions(value: Any, path: str = "") -> list[tuple[tuple[Any, ...], str]]:
    """(location of a key, path of its table) for every key of every table in ``value``."""
    found: list[tuple[tuple[Any, ...], str]] = []

    def walk(node: Any, loc: tuple[Any, ...], where: str) -> None:
        if isinstance(node, dict):
            for key, child in node.items():
                found.append(((*loc, key), where))
                if isinstance(child, (dict, list)) and key != "matrix":
                    walk(child, (*loc, key), f"{where}.{key}" if where else key)
        elif isinstance(node, list):
            for index, child in enumerate(node):
                walk(child, (*loc, index), f"{where}[{index}]")

    walk(value, (), path)
    return found


def _known_keys() -> set[str]:
    """Every key valid somewhere in a pipeline (a misspelling must not be one of them)."""
    from dpacct_shuffle import pipeline

    keys = set(Pipeline.model_fields) | set(pipeline._STEP_KEYS) | set(pipeline._RANDOMIZER_KEYS)
    return keys | {alias for aliases in PARAMETER_ALIASES.values() for alias in aliases}


KNOWN_KEYS = _known_keys()
TEMPLATE = every_key_pipeline()
POSITIONS = _key_positions(TEMPLATE)
LETTERS = string.ascii_lowercase + "_0"


@st.composite
def misspelling(draw: st.DrawFn, key: str) -> str:
    kind = draw(st.sampled_from(["delete", "insert", "replace", "swap", "case"]))
    i = draw(st.integers(0, len(key) - 1))
    if kind == "delete":
        typo = key[:i] + key[i + 1:]
    elif kind == "insert":
        typo = key[:i] + draw(st.sampled_from(LETTERS)) + key[i:]
    elif kind == "replace":
        typo = key[:i] + draw(st.sampled_from(LETTERS)) + key[i + 1:]
    elif kind == "swap":
        i = min(i, len(key) - 2)
        typo = key[:i] + key[i + 1] + key[i] + key[i + 2:]
    else:
        typo = key[:i] + key[i].upper() + key[i + 1:]
    return typo


def _rename(data: Any, loc: tuple[Any, ...], new_key: str) -> Any:
    data = json.loads(json.dumps(data))
    node = data
    for part in loc[:-1]:
        node = node[part]
    node[new_key] = node.pop(loc[-1])
    return data


@settings(max_examples=2 * settings.default.max_examples)
@given(data=st.data())
def test_a_misspelled_key_anywhere_exits_2_naming_it(data: st.DataObject, tmp_path_factory:
                                                     pytest.TempPathFactory) -> None:
    loc, where = data.draw(st.sampled_from(POSITIONS), label="position")
    typo = data.draw(misspelling(loc[-1]).filter(lambda k: k not in KNOWN_KEYS), label="typo")
    directory = tmp_path_factory.mktemp("typo")
    (directory / "rr3.csv").write_text("\n".join(",".join(str(v) for v in row) for row in RR3))
    path = directory / "p.json"
    path.write_text(json.dumps(_rename(TEMPLATE, loc, typo)))
    code, out, err = run("account", str(path))
    assert code == 2 and out == "" and err.count("\n") == 1, err
    # a named randomizer's table is read by the randomizer schema, with its wording
    assert f"unknown key {typo!r}" in err or f"has no parameter {typo!r}" in err, err
    assert f": {where}: " in err if where else ": unknown key" in err, err


def test_the_fuzzed_template_is_valid_and_covers_every_table(rr3_dir: Path) -> None:
    assert len(load_pipeline(every_key_pipeline(), base_dir=rr3_dir).steps) == 9
    tables = {where for _, where in POSITIONS}
    assert {"", "steps[0]", "steps[0].randomizer", "steps[2].branches[1]"} <= tables


# -- hypothesis: any value anywhere gives a pipeline or one clear ValueError --------------------
def _leaf_positions(value: Any, loc: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Locations of every value (tables and lists included) below the top level."""
    found: list[tuple[Any, ...]] = []
    children = value.items() if isinstance(value, dict) else (
        enumerate(value) if isinstance(value, list) else ())
    for key, child in children:
        found.append((*loc, key))
        found.extend(_leaf_positions(child, (*loc, key)))
    return found


LEAVES = _leaf_positions(TEMPLATE)
ODD_VALUES = st.one_of(
    st.sampled_from([float("nan"), float("inf"), -float("inf"), True, False, None, 0, -1, 10**400,
                     10**18, 1e308, 5e-324, -0.0, "", "1e3", "krr", "disjoint", [], {}, [[]],
                     [float("nan")], {"name": "krr"}, {"matrix": [[1.0]]}]),
    st.integers(), st.floats(), st.text(max_size=8),
    st.lists(st.floats(allow_nan=True), max_size=3))


def _replace(data: Any, loc: tuple[Any, ...], value: Any) -> Any:
    data = json.loads(json.dumps(data))
    node = data
    for part in loc[:-1]:
        node = node[part]
    node[loc[-1]] = value
    return data


@pytest.fixture(scope="module")
def matrix_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("matrix")
    (directory / "rr3.csv").write_text("\n".join(",".join(str(v) for v in row) for row in RR3))
    return directory


@settings(max_examples=2 * settings.default.max_examples)
@given(loc=st.sampled_from(LEAVES), value=ODD_VALUES)
def test_any_value_anywhere_gives_a_pipeline_or_one_value_error(
        loc: tuple[Any, ...], value: Any, matrix_dir: Path) -> None:
    data = _replace(TEMPLATE, loc, value)
    try:
        pipeline = load_pipeline(data, base_dir=matrix_dir)
    except ValueError as error:
        message = str(error)
        assert message and "\n" not in message
        return
    # accepted: the replaced value was valid there, and every number of the model is finite
    for step in pipeline.steps:
        assert step.count >= 1
    assert pipeline.delta is None or 0.0 < pipeline.delta < 1.0


def test_max_integer_parameter_is_deprecated_and_keeps_its_value() -> None:
    """The randomizer schema checks integer parameters now; the old cap stays readable, with a
    DeprecationWarning, from both places it was importable from."""
    import dpacct_shuffle.pipeline as pipeline_package
    from dpacct_shuffle.pipeline import fields

    for module in (fields, pipeline_package):
        with pytest.warns(DeprecationWarning, match="MAX_INTEGER_PARAMETER is deprecated"):
            assert module.MAX_INTEGER_PARAMETER == 10**15
        with pytest.raises(AttributeError):
            getattr(module, "NO_SUCH_NAME")
