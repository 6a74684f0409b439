"""Hypothesis over the command line: random flags and values never end in a traceback.

Every run exits 0, 1 or 2 (exceptions other than the CLI's own error handling would propagate out
of ``main`` and fail the test), exit 2 and exit 1 print exactly one line ``dpacct-shuffle: error:``
and nothing on stdout, and no output contains NaN. The values mix valid ones (kept cheap: few users,
so that a valid run finishes quickly) with every kind of bad number and text. ``plot`` is left
out (it writes figure files); its option parsing is shared with the commands covered here.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from dpacct_shuffle.cli import main

NUMBERS = ["0", "1", "2", "-1", "0.5", "1e-6", "1e-8", "1e3", "100", "1.5", "1e400", "-1e400",
           "709", "710", "1000", "1e-300",
           str(10**30), "5e-324", "nan", "inf", "-inf", "", "abc", "1_000", "true", "0x10",
           "1e3:1e5", "1:2:3", "1e3:1e5:100000000"]
RANDOMIZERS = ["krr", "oue", "worst_case_ldp", "binary_rr", "piecewise", "laplace", "duchi",
               "no_such", "krr:domain_size=3",
               "krr:domain_size", "rappor:epsilon0=nan", "balls_into_bins", ":", ""]
PARAMS = ["domain_size=3", "x=1", "epsilon0=1e400", "num_bins=10", "num_special=2", "=1", "a"]
USERS = ["1", "2", "10", "300", "1e10", "0", "-5", "1.5", "1e400", "nan", str(10**30), "x"]
LIMITS = ["1", "0", "1e3", "x", "nan", "-1"]  # --lower-max-users: never large (lower bounds cost)
GROUPS = ["1:3", "2:2", "krr:epsilon0=1,domain_size=3:3", "binary_rr:epsilon0=2:2", "0:2", "nan:3",
          "1:0", "1", ":3", "krr:3", "1:1e400", "laplace:epsilon0=1:2", "1e400:2", "x:y:z", ""]

COMMON_FLAGS = {
    "--randomizer": RANDOMIZERS, "--epsilon0": NUMBERS, "--domain": NUMBERS,
    "--param": PARAMS, "--json": None, "--quiet": None,
}
FLAGS = {
    "epsilon": {**COMMON_FLAGS, "--users": USERS, "--delta": NUMBERS, "--no-lower": None,
                "--lower-max-users": LIMITS, "--compare": None, "--matrix": ["MATRIX", "MISSING"],
                "--group": GROUPS},
    "delta": {**COMMON_FLAGS, "--users": USERS, "--epsilon": NUMBERS, "--no-lower": None,
              "--lower-max-users": LIMITS, "--matrix": ["MATRIX", "MISSING"], "--group": GROUPS},
    "calibrate": {**COMMON_FLAGS, "--users": USERS, "--target-epsilon": NUMBERS,
                  "--delta": NUMBERS, "--max-epsilon0": NUMBERS, "--max-users": LIMITS,
                  "--rtol": NUMBERS},
    "params": {**COMMON_FLAGS, "--list": None,
               "--matrix": ["MATRIX", "BAD_MATRIX", "BINARY", "MISSING"]},
    "account": {"PIPELINE": ["GOOD", "TYPO", "NAN", "GARBAGE", "BINARY", "MISSING"],
                "--delta": NUMBERS,
                "--epsilon": NUMBERS, "--json": None, "--quiet": None},
}


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("fuzz")
    contents = {
        "MATRIX": "0.6,0.2,0.2\n0.2,0.6,0.2\n0.2,0.2,0.6\n",
        "BAD_MATRIX": "0.5,0.6\nnan,0.5\n",
        "GOOD": json.dumps({"delta": 1e-6, "steps": [{"type": "gaussian", "noise_multiplier": 5.0}]}),
        "TYPO": json.dumps({"delta": 1e-6, "steps": [{"type": "gaussian", "noise_multiplier": 5.0,
                                                      "cuont": 3}]}),
        "NAN": '{"delta": NaN, "steps": [{"type": "gaussian", "noise_multiplier": Infinity}]}',
        "GARBAGE": "\x00\xff{[",
    }
    binary = root / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00{")
    paths = {}
    for name, text in contents.items():
        path = root / f"{name.lower()}.json"
        path.write_text(text, encoding="utf-8", errors="surrogateescape")
        paths[name] = str(path)
    paths["MISSING"] = str(root / "missing.json")
    paths["BINARY"] = str(binary)
    return paths


@st.composite
def argv(draw: st.DrawFn, files: dict[str, str]) -> list[str]:
    command = draw(st.sampled_from(sorted(FLAGS)))
    options = FLAGS[command]
    chosen = draw(st.lists(st.sampled_from(sorted(options)), max_size=7))
    args = [command]
    for flag in chosen:
        values = options[flag]
        value = None if values is None else draw(st.sampled_from(values))
        if value is not None:
            value = files.get(value, value)
        if flag == "PIPELINE":
            args.append(value)
        elif value is None:
            args.append(flag)
        else:
            args.extend([flag, value])
    return args


NAN = re.compile(r"\bnan\b", re.IGNORECASE)


@settings(max_examples=2 * settings.default.max_examples)
@given(data=st.data())
def test_random_argv_exits_0_1_or_2_with_one_error_line_and_no_nan(
        data: st.DataObject, files: dict[str, str]) -> None:
    arguments = data.draw(argv(files), label="argv")
    out, err = io.StringIO(), io.StringIO()
    code = main(arguments, stdout=out, stderr=err)
    stdout, stderr = out.getvalue(), err.getvalue()
    assert code in (0, 1, 2), (code, stderr)
    assert not NAN.search(stdout), stdout
    if code != 0:
        assert stdout == "", stdout
        assert stderr.startswith("dpacct-shuffle: error: ") and stderr.count("\n") == 1, stderr
    else:
        assert stderr == "", stderr


@pytest.mark.parametrize(("argv", "named", "not_named"), [
    (["epsilon", "--randomizer", "krr", "--epsilon0", "1", "--domain", "0", "--users", "10",
      "--delta", "1e-6"], "domain", "number of users"),
    (["epsilon", "--randomizer", "krr", "--epsilon0", "1", "--domain", "3", "--users", "0",
      "--delta", "1e-6"], "number of users", "domain"),
    (["epsilon", "--randomizer", "krr", "--epsilon0", "1", "--domain", "3", "--users", "10",
      "--delta", "1e-6", "--lower-max-users", "0"], "--lower-max-users", "number of users"),
    (["calibrate", "--randomizer", "krr", "--epsilon0", "1", "--domain", "3",
      "--target-epsilon", "0.5", "--delta", "1e-6", "--max-users", "-3"], "--max-users",
     "number of users"),
    (["plot", "--randomizer", "krr", "--users-list", "1e3:1e5", "--output", "x.png"],
     "start:stop:count", "positive integer"),
    (["plot", "--randomizer", "krr", "--epsilon0-list", "0.5:4", "--output", "x.png"],
     "start:stop:count", "real number"),
    (["plot", "--randomizer", "krr", "--users-list", "1e3:1e5:1000000", "--output", "x.png"],
     "count", "number of users"),
    (["epsilon", "--randomizer", "krr", "--epsilon0", "1", "--domain", "3", "--users", "10",
      "--delta", "nan"], "--delta", "users"),
    (["epsilon", "--randomizer", "krr", "--param", "domain_size", "--users", "10",
      "--delta", "1e-6"], "NAME=VALUE", "users"),
])
def test_error_messages_name_the_right_option(argv: list[str], named: str, not_named: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(argv, stdout=out, stderr=err) == 2
    message = err.getvalue()
    assert named in message and not_named not in message, message
    assert message.count("\n") == 1


def test_binary_files_exit_2_naming_the_file(files: dict[str, str]) -> None:
    for argv in (["account", files["BINARY"]], ["params", "--matrix", files["BINARY"]]):
        out, err = io.StringIO(), io.StringIO()
        assert main(argv, stdout=out, stderr=err) == 2
        assert "binary.json" in err.getvalue() and "not UTF-8 text" in err.getvalue()


def test_account_on_a_directory_or_missing_file_exits_1(tmp_path: Path) -> None:
    for target in (tmp_path, tmp_path / "missing.json"):
        out, err = io.StringIO(), io.StringIO()
        assert main(["account", str(target)], stdout=out, stderr=err) == 1
        assert err.getvalue().startswith("dpacct-shuffle: error: ")
