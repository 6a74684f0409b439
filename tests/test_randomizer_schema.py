"""The one randomizer schema (:mod:`dpacct_shuffle.randomizers.schema`): a spec string, the JSON
form, a pipeline file and the command line's flags describing the same randomizer build equal
randomizers, and the same invalid input gives the same message (and, where the front-end raises,
the same exception type) through all four."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from dpacct_shuffle import randomizers
from dpacct_shuffle.cli import main
from dpacct_shuffle.cli.parser import build_parser, randomizer_from_args
from dpacct_shuffle.pipeline import load_pipeline
from dpacct_shuffle.randomizers.approximate import approximate, approximate_ldp
from dpacct_shuffle.randomizers.base import Randomizer
from dpacct_shuffle.randomizers.gaussian import gaussian, gaussian_vector
from dpacct_shuffle.randomizers.schema import (SCHEMAS, ParameterSchema, describe, entry_schema,
                                              parse_scalar)
from dpacct_shuffle.randomizers.serialization import randomizer_from_dict, randomizer_to_dict
from dpacct_shuffle.randomizers.spec import build_randomizer, matrix_file_randomizer

#: a valid set of parameters of every named randomizer (small, fast to build)
VALID: dict[str, dict[str, Any]] = {
    "worst_case_ldp": {"epsilon0": 1.0},
    "binary_rr": {"epsilon0": 1.0},
    "krr": {"epsilon0": 2.0, "domain_size": 4},
    "rappor": {"epsilon0": 1.0, "domain_size": 4},
    "optimized_unary_encoding": {"epsilon0": 1.0, "domain_size": 4},
    "subset_selection": {"epsilon0": 1.0, "domain_size": 6, "subset_size": 2},
    "local_hashing": {"epsilon0": 1.0, "hash_range": 4, "collision_probability": 0.3},
    "hadamard_response": {"epsilon0": 1.0, "num_outputs": 8},
    "pckv_grr": {"epsilon0": 1.0, "domain_size": 4, "set_size": 2},
    "collision": {"epsilon0": 1.0, "domain_size": 4, "output_length": 4, "set_size": 2},
    "sampling_rappor": {"epsilon0": 1.0, "domain_size": 4, "sample_size": 2, "sampled_bits": True},
    "laplace": {"epsilon0": 1.0},
    "piecewise": {"epsilon0": 1.0},
    "duchi": {"epsilon0": 1.0},
    "harmony": {"epsilon0": 1.0, "dimension": 3},
    "metric_ldp": {"d01": 1.0, "d0_max": 2.0},
    "metric_laplace": {"d01": 1.0, "d_max": 2.0},
    "balcer_binary_summation": {"coin_probability": 0.1},
    "cheu_binary_summation": {"flip_probability": 0.1},
    "balls_into_bins": {"num_bins": 10, "num_special": 2},
    "mix_dump": {"flip_probability": 0.1, "num_bins": 4},
    "approximate_ldp": {"epsilon0": 1.0, "delta0": 1e-6},
    "gaussian": {"noise_std": 2.0, "lower": -1.0},
    "gaussian_vector": {"noise_std": 2.0},
}


def test_every_named_randomizer_has_a_valid_example() -> None:
    assert set(VALID) == set(SCHEMAS)


def text(value: object) -> str:
    """``value`` written in a spec string or on the command line."""
    if isinstance(value, bool):
        return str(value).lower()
    return repr(value) if isinstance(value, float) else str(value)


# -- the four front-ends: each returns the randomizer, or (exception type, message) ----------------
Outcome = Randomizer | tuple[type, str]


def spec_text(name: str, params: dict[str, Any]) -> str:
    return name + "".join((":" if i == 0 else ",") + f"{key}={text(value)}"
                          for i, (key, value) in enumerate(params.items()))


def through_spec(name: str, params: dict[str, Any]) -> Outcome:
    try:
        return build_randomizer(spec_text(name, params))
    except (ValueError, TypeError) as exc:
        return type(exc), str(exc)


def through_json(name: str, params: dict[str, Any]) -> Outcome:
    try:
        return randomizer_from_dict({"kind": "catalog", "name": name, "arguments": params})  # type: ignore[return-value]
    except (ValueError, TypeError) as exc:
        return type(exc), str(exc)


def toml_value(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return "nan" if math.isnan(value) else repr(value)
    return json.dumps(value)


def through_pipeline_file(name: str, params: dict[str, Any], directory: Path) -> Outcome:
    """A pipeline file with one shuffle step of this randomizer: TOML where a value is not finite
    (not JSON), else JSON (TOML integers stop at 2**63)."""
    if any(isinstance(value, float) and not math.isfinite(value) for value in params.values()):
        path = directory / "pipeline.toml"
        table = ", ".join(f"{key} = {toml_value(value)}" for key, value in params.items())
        path.write_text(f'delta = 1e-6\n[[steps]]\ntype = "shuffle"\nusers = 1000\n'
                        f'randomizer = {{ name = "{name}", {table} }}\n')
    else:
        path = directory / "pipeline.json"
        path.write_text(json.dumps({"delta": 1e-6, "steps": [
            {"type": "shuffle", "randomizer": {"name": name, **params}, "users": 1000}]}))
    try:
        step = load_pipeline(path).steps[0]
    except ValueError as exc:
        prefix = f"{path}: steps[0].randomizer: "
        message = str(exc)
        assert message.startswith(prefix), message
        return ValueError, message[len(prefix):]
    return step.randomizer.randomizer  # type: ignore[union-attr]


def cli_flags(name: str, params: dict[str, Any]) -> list[str]:
    flags = ["--randomizer", name]
    for key, value in params.items():
        if key == "epsilon0":
            flags.append(f"--epsilon0={text(value)}")
        elif key == "domain_size":
            flags.append(f"--domain={text(value)}")
        else:
            flags.append(f"--param={key}={text(value)}")
    return flags


def through_cli(name: str, params: dict[str, Any]) -> Outcome:
    """The randomizer the flags select (``params`` command's parsing), or the error line of
    ``dpacct-shuffle params`` with them (exit code 2)."""
    flags = cli_flags(name, params)
    out, err = io.StringIO(), io.StringIO()
    code = main(["params", *flags, "--json"], stdout=out, stderr=err)
    if code == 0:
        return randomizer_from_args(build_parser().parse_args(["params", *flags]))
    assert code == 2 and err.getvalue().count("\n") == 1, err.getvalue()
    return ValueError, err.getvalue()


# -- valid equivalents build equal randomizers ---------------------------------------------------
@pytest.mark.parametrize("name", sorted(VALID))
def test_every_front_end_builds_the_same_randomizer(name: str, tmp_path: Path) -> None:
    params = VALID[name]
    direct = SCHEMAS[name].factory(**params)
    assert describe(name, params).build() == direct
    assert through_spec(name, params) == direct
    assert through_json(name, params) == direct
    assert through_pipeline_file(name, params, tmp_path) == direct
    assert through_cli(name, params) == direct
    assert randomizer_from_dict(randomizer_to_dict(direct)) == direct


@pytest.mark.parametrize(("name", "params", "expected"), [
    ("oue", {"epsilon0": 1, "domain": 4}, randomizers.oue(1.0, 4)),
    ("krr", {"epsilon0": 2, "domain": 1e1}, randomizers.krr(2.0, 10)),
    ("krr", {"eps0": 2, "k": 10}, randomizers.krr(2.0, 10)),  # the spellings docs/pipelines.md lists
    ("rappor", {"epsilon_0": 2, "num_values": 5}, randomizers.rappor(2.0, 5)),
    ("krr", {"epsilon0": 2, "domain_size": 10, "delta0": 1e-9},
     approximate(randomizers.krr(2.0, 10), 1e-9)),
    ("approximate_ldp", {"epsilon0": 1, "delta0": 0}, approximate_ldp(1.0, 0.0)),
    ("gaussian", {"noise_std": 2, "upper": 3}, gaussian(2.0, 0.0, 3.0)),
    ("gaussian_vector", {"noise_std": 1.5, "clipping_norm": 2}, gaussian_vector(1.5, 2.0)),
    ("local_hashing", {"epsilon0": 1, "hash_range": 4, "domain_size": 16},
     randomizers.local_hashing(1.0, 4, 16)),
])
def test_aliases_and_integral_numbers_mean_the_same_everywhere(name: str, params: dict[str, Any],
                                                               expected: Randomizer,
                                                               tmp_path: Path) -> None:
    assert through_spec(name, params) == expected
    assert through_json(name, params) == expected
    assert through_pipeline_file(name, params, tmp_path) == expected
    assert through_cli(name, params) == expected


# -- the same invalid input gives the same message -----------------------------------------------
BAD = [
    ("krr", {"epsilon0": -1, "domain_size": 10}, ValueError,
     "epsilon0 must be in [1e-06, 500.0], got -1.0"),
    ("krr", {"epsilon0": math.nan, "domain_size": 10}, ValueError,
     "epsilon0 must be a finite real number, got nan"),
    ("krr", {"epsilon0": "abc", "domain_size": 10}, TypeError,
     "epsilon0 must be a finite real number, got 'abc'"),
    ("oue", {"epsilon0": True, "domain_size": 4}, TypeError,
     "epsilon0 must be a finite real number, got True"),
    ("krr", {"epsilon0": 1, "domain_size": 2.5}, TypeError, "domain_size must be an integer, got 2.5"),
    ("krr", {"epsilon0": 1, "domain_size": 1}, ValueError,
     "domain_size must be an integer in [2, 2**53], got 1"),
    ("krr", {"epsilon0": 1, "domain_size": 10, "foo": 3}, ValueError,
     "randomizer 'krr' has no parameter 'foo' (allowed: epsilon0, domain_size, delta0)"),
    ("krr", {"epsilon0": 1}, ValueError, "randomizer 'krr' needs parameter(s) domain_size"),
    ("krr", {"epsilon0": 1, "domain_size": 10, "delta0": 2}, ValueError,
     "delta0 must be in [0.0, 1.0), got 2.0"),
    ("subset_selection", {"epsilon0": 1, "domain_size": 10, "subset_size": 10}, ValueError,
     "subset_size must be an integer in [1, 9], got 10"),
    ("local_hashing", {"epsilon0": 1, "hash_range": 10, "collision_probability": 2}, ValueError,
     "collision_probability must be in [0.0, 1.0), got 2.0"),
    ("sampling_rappor", {"epsilon0": 1, "domain_size": 4, "sample_size": 2, "sampled_bits": 1},
     TypeError, "sampled_bits must be true or false, got 1"),
    ("balls_into_bins", {"num_bins": 10, "num_special": 6}, ValueError,
     "num_special must be an integer in [1, 5], got 6"),
    ("hadamard_response", {"epsilon0": 1, "num_outputs": 12}, ValueError,
     "num_outputs/blocks must be a power of two >= 2, got 12"),
    ("metric_ldp", {"d01": 1, "d0_max": 0.5}, ValueError, "d0_max must be >= d01 = 1.0, got 0.5"),
    ("gaussian", {"noise_std": 1, "lower": 2, "upper": 1}, ValueError,
     "upper must be > lower, got lower=2.0, upper=1.0"),
    ("approximate_ldp", {"epsilon0": 1}, ValueError,
     "randomizer 'approximate_ldp' needs parameter(s) delta0"),
    ("krrr", {"epsilon0": 1}, ValueError, "unknown randomizer 'krrr'; available: approximate_ldp, "),
]


@pytest.mark.parametrize(("name", "params", "error", "message"), BAD)
def test_the_same_invalid_input_gives_the_same_message_everywhere(
        name: str, params: dict[str, Any], error: type, message: str, tmp_path: Path) -> None:
    spec_error, json_error = through_spec(name, params), through_json(name, params)
    assert spec_error == json_error, (spec_error, json_error)
    assert spec_error[0] is error and message in spec_error[1], spec_error  # type: ignore[index]
    assert through_pipeline_file(name, params, tmp_path) == (ValueError, spec_error[1])  # type: ignore[index]
    with pytest.raises(ValueError) as in_pipeline:  # the spec string written in a pipeline
        load_pipeline({"delta": 1e-6, "steps": [{"type": "shuffle", "users": 1000,
                                                 "randomizer": spec_text(name, params)}]})
    assert str(in_pipeline.value) == f"steps[0].randomizer: {spec_error[1]}"  # type: ignore[index]
    kind, line = through_cli(name, params)  # type: ignore[misc]
    assert line.startswith("dpacct-shuffle: error: ") and spec_error[1] in line, line  # type: ignore[index]


def test_the_wrong_kind_of_value_names_the_parameter_and_kind() -> None:
    epsilon0 = entry_schema("krr").parameter("epsilon0")
    assert epsilon0 == ParameterSchema("epsilon0", "real")
    assert entry_schema("oue").name == "optimized_unary_encoding"
    domain = entry_schema("local_hashing").parameter("domain")
    assert domain is not None and domain.nullable and not domain.required
    assert domain.check(None) is None and domain.check(1e6) == 10**6
    with pytest.raises(TypeError, match=r"^domain_size must be an integer or None \(null\), got 'x'$"):
        domain.check("x")
    with pytest.raises(ValueError, match=r"^epsilon0 must be a finite real number, got an integer of 1329 bits$"):
        epsilon0.check(10**400)  # type: ignore[union-attr]
    with pytest.raises(ValueError, match=r"parameters 'domain' and 'domain_size' both give domain_size"):
        describe("krr", {"epsilon0": 1, "domain": 3, "domain_size": 3})
    with pytest.raises(ValueError, match=r"parameter 'epsilon0' is given twice"):
        build_randomizer("krr:epsilon0=1,epsilon0=2,domain_size=3")
    assert parse_scalar("1e3") == 1000.0 and parse_scalar("true") is True and parse_scalar("x") == "x"
    assert parse_scalar("None") is None and parse_scalar("null") is None
    # a description is canonical: names resolved, values converted, signature order
    assert describe("oue", {"domain": 4.0, "epsilon0": 2}) == describe(
        "optimized_unary_encoding", {"epsilon0": 2.0, "domain_size": 4})
    assert describe("oue", {"domain": 4.0, "epsilon0": 2}).arguments == (
        ("epsilon0", 2.0), ("domain_size", 4))
    assert build_randomizer("local_hashing:epsilon0=1,hash_range=4,domain_size=none") == \
        randomizers.local_hashing(1.0, 4)


# -- any single odd value: the four front-ends agree ---------------------------------------------
ODD = st.sampled_from([-1, 0, 1, 2, 3, 7, 2**60, 10**400, 0.0, -0.5, 0.5, 2.5, 1e-7, 600.0, 1e16,
                       math.nan, math.inf, -math.inf, True, False, "abc", None])


@settings(max_examples=100, deadline=None)
@given(name=st.sampled_from(sorted(VALID)), data=st.data())
def test_any_odd_value_gives_equal_randomizers_or_one_message(name: str, data: st.DataObject,
                                                              tmp_path_factory: pytest.TempPathFactory
                                                              ) -> None:
    params = dict(VALID[name])
    keys = [p.name for p in SCHEMAS[name].parameters]
    key = data.draw(st.sampled_from(keys + ["unknown_key"]), label="parameter")
    params[key] = data.draw(ODD, label="value")
    outcomes = [through_spec(name, params), through_json(name, params),
                through_pipeline_file(name, params, tmp_path_factory.mktemp("p")),
                through_cli(name, params)]
    if isinstance(outcomes[0], Randomizer):
        assert all(outcome == outcomes[0] for outcome in outcomes), outcomes
        return
    assert outcomes[1] == outcomes[0], outcomes
    message = outcomes[0][1]
    assert outcomes[2] == (ValueError, message), outcomes
    assert message in outcomes[3][1], outcomes  # type: ignore[index]


# -- a matrix: the JSON form, a matrix file, a pipeline file and --matrix agree -------------------
@pytest.mark.parametrize(("matrix", "error", "message"), [
    ([[0.5, "x"], [0.5, 0.5]], TypeError, "matrix[0][1] must be a finite real number, got 'x'"),
    ([[0.5, True], [0.5, 0.5]], TypeError, "matrix[0][1] must be a finite real number, got True"),
    ([[0.5, 0.5], [0.5]], ValueError,
     "matrix[1] has 1 entries and matrix[0] has 2: every row has one entry per output"),
    ([], ValueError, "matrix must be a non-empty list of rows (inputs) of numbers, got []"),
    ([[0.5, 0.5], 3], TypeError, "matrix[1] must be a list of numbers, got 3"),
    ([[0.5, 0.6], [0.5, 0.5]], ValueError, "matrix[0] must sum to 1 (within 1e-09), got 1.1"),
    ([[1.5, -0.5], [0.5, 0.5]], ValueError, "matrix[0] must contain finite probabilities in [0, 1]"),
])
def test_the_same_bad_matrix_gives_the_same_message_everywhere(matrix: object, error: type,
                                                                message: str, tmp_path: Path) -> None:
    with pytest.raises(error) as from_json:
        randomizer_from_dict({"kind": "matrix", "name": "m", "matrix": matrix})
    assert str(from_json.value) == message
    file = tmp_path / "m.json"
    file.write_text(json.dumps(matrix))
    with pytest.raises(error) as from_file:
        matrix_file_randomizer(file)
    assert str(from_file.value) in (message, f"matrix file {str(file)!r}: {message}")
    with pytest.raises(ValueError) as from_pipeline:
        load_pipeline({"delta": 1e-6, "steps": [{"type": "shuffle", "randomizer": {"matrix": matrix},
                                                 "users": 10}]})
    assert str(from_pipeline.value).endswith(f": {message}"), str(from_pipeline.value)
    out, err = io.StringIO(), io.StringIO()
    assert main(["params", "--matrix", str(file)], stdout=out, stderr=err) == 2
    assert message in err.getvalue()


def test_a_csv_matrix_file_is_read_like_its_json_form(tmp_path: Path) -> None:
    rows = [[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]]
    csv_file, json_file = tmp_path / "rr3.csv", tmp_path / "rr3.json"
    csv_file.write_text("# rows = inputs\n0.6, 0.2, 0.2\n0.2 0.6 0.2\n\n0.2,0.2,0.6\n")
    json_file.write_text(json.dumps({"matrix": rows}))
    expected = randomizers.from_matrix(rows, name="rr3")
    assert matrix_file_randomizer(csv_file) == expected
    assert matrix_file_randomizer(json_file) == expected
    csv_file.write_text("0.5, nan\n0.5, 0.5\n")
    with pytest.raises(ValueError, match=r"rr3.csv': matrix\[0\]\[1\] must be a finite real number, got nan$"):
        matrix_file_randomizer(csv_file)


@pytest.mark.parametrize(("flags", "message"), [
    (["--epsilon0", "1", "--param", "epsilon0=2", "--domain", "3"],
     "parameter 'epsilon0' is given twice (--epsilon0 and --param epsilon0=...)"),
    (["--epsilon0", "1", "--param", "domain_size=2", "--domain", "3"],
     "randomizer 'krr': parameters 'domain' and 'domain_size' both give domain_size"),
    (["--epsilon0", "1", "--param", "d=2", "--param", "d=3"],
     "parameter 'd' is given twice (--param d=... and --param d=...)"),
])
def test_a_setting_given_twice_on_the_command_line_is_refused(flags: list[str], message: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["params", "--randomizer", "krr", *flags], stdout=out, stderr=err) == 2
    assert message in err.getvalue() and out.getvalue() == ""


@pytest.mark.parametrize(("argv", "message"), [
    # the spec's eps0 used to win: calibrate searched a constant function and reported eps0 = 20
    (["calibrate", "--randomizer", "krr:epsilon0=1,domain_size=10", "--users", "1000",
      "--target-epsilon", "0.5", "--delta", "1e-8"],
     "randomizer 'krr:epsilon0=1,domain_size=10' fixes epsilon0: leave it out of the spec to vary it"),
    (["calibrate", "--randomizer", "gaussian:noise_std=1", "--users", "1000",
      "--target-epsilon", "0.5", "--delta", "1e-8"],
     "randomizer 'gaussian' has no parameter epsilon0 to vary (its parameters: noise_std, lower, upper)"),
    (["plot", "--x", "epsilon0", "--randomizer", "krr", "--randomizer", "metric_ldp:d01=1,d0_max=2",
      "--domain", "10", "--users", "1000", "--output", "never_written.png"],
     "randomizer 'metric_ldp' has no parameter epsilon0 to vary"),
    (["params", "--randomizer", "krr:epsilon0=1,domain_size=10", "--epsilon0", "3"],
     "randomizer 'krr:epsilon0=1,domain_size=10' sets epsilon0, which the other parameters also "
     "give: give each setting once"),
])
def test_a_spec_and_the_flags_never_silently_override_each_other(argv: list[str], message: str,
                                                                 tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    assert main([*argv, "--quiet"], stdout=out, stderr=err) == 2, out.getvalue()
    assert message in err.getvalue() and out.getvalue() == ""
    assert not (tmp_path / "never_written.png").exists()


def test_shared_options_still_apply_to_the_entries_that_take_them() -> None:
    # lenient (plot's several entries): the spec's own value wins, unknown shared names are skipped
    assert build_randomizer("krr:domain_size=10", {"domain": 100, "epsilon0": 1.0,
                                                   "num_outputs": 8}, lenient=True) == \
        randomizers.krr(1.0, 10)
