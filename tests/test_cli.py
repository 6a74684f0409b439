"""Tests of the ``dpacct-shuffle`` command line (in-process via ``main(argv)`` and once as a
subprocess through the installed console script). Printed numbers are checked against the library
and against closed forms."""

from __future__ import annotations

import io
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting import privacy_accountant
from hypothesis import given, strategies as st

from dpacct_shuffle import randomizers
from dpacct_shuffle.accountants import ShufflePLDAccountant
from dpacct_shuffle.cli import format_lower, format_upper, main
from dpacct_shuffle.events import ShuffleEvent
from dpacct_shuffle.sampling import void_personalized_round
from dpacct_shuffle.shuffle_round import round_delta, round_epsilon


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def run_json(*argv: str) -> dict:
    code, out, err = run(*argv, "--json")
    assert code == 0, err
    return json.loads(out)


KRR = ("--randomizer", "krr", "--epsilon0", "2", "--domain", "100")


# -- epsilon / delta ------------------------------------------------------------------------------
def test_epsilon_json_equals_library() -> None:
    result = run_json("epsilon", *KRR, "--users", "1e4", "--delta", "1e-8")
    shuffled = randomizers.krr(2.0, 100).shuffled(10_000)
    assert result["epsilon_upper"] == shuffled.epsilon(1e-8)
    assert result["epsilon_lower"] == shuffled.epsilon_lower(1e-8)
    assert result["users"] == 10_000 and result["delta"] == 1e-8
    assert 0.0 < result["epsilon_lower"] <= result["epsilon_upper"]


def test_epsilon_text_rounds_upper_up_and_lower_down() -> None:
    code, out, err = run("epsilon", *KRR, "--users", "1e4", "--delta", "1e-8")
    assert code == 0 and err == ""
    shuffled = randomizers.krr(2.0, 100).shuffled(10_000)
    upper_line = next(line for line in out.splitlines() if line.startswith("epsilon upper bound:"))
    lower_line = next(line for line in out.splitlines() if line.startswith("epsilon lower bound:"))
    printed_upper = float(upper_line.split()[3])
    printed_lower = float(lower_line.split()[3])
    upper, lower = shuffled.epsilon(1e-8), shuffled.epsilon_lower(1e-8)
    assert upper <= printed_upper <= upper * (1 + 1e-5)
    assert lower * (1 - 1e-5) <= printed_lower <= lower


def test_epsilon_compare_prints_labelled_references() -> None:
    result = run_json("epsilon", *KRR, "--users", "1e4", "--delta", "1e-8", "--compare", "--no-lower")
    from dpacct_shuffle.core.bound import published_pair
    from dpacct_shuffle.lemmas import fmt_shuffle_bound

    entry = randomizers.krr(2.0, 100)
    assert result["fmt_closed_form"] == fmt_shuffle_bound(2.0, 10_000, 1e-8)
    assert result["published_pair_not_a_guarantee"] == published_pair(*entry.published).epsilon(1e-8, 10_000)
    assert "epsilon_lower" not in result
    code, out, _ = run("epsilon", *KRR, "--users", "1e4", "--delta", "1e-8", "--compare", "--no-lower")
    assert "NOT a guarantee" in out


def test_delta_json_equals_library() -> None:
    result = run_json("delta", "--randomizer", "worst_case_ldp", "--epsilon0", "1", "--users", "2000",
                      "--epsilon", "0.3")
    shuffled = randomizers.worst_case_ldp(1.0).shuffled(2000)
    assert result["delta_upper"] == shuffled.delta(0.3)
    assert result["delta_lower"] == shuffled.delta_lower(0.3)
    assert 0.0 < result["delta_lower"] <= result["delta_upper"]


def test_lower_bound_skipped_above_lower_max_users() -> None:
    result = run_json("delta", *KRR, "--users", "2000", "--epsilon", "0.1", "--lower-max-users", "1000")
    assert result["delta_lower"] is None and "lower_max_users" in result["lower_skipped"]
    assert result["delta_upper"] == randomizers.krr(2.0, 100).shuffled(2000).delta(0.1)
    code, out, _ = run("epsilon", *KRR, "--users", "2000", "--delta", "1e-6", "--lower-max-users", "1e3")
    assert code == 0 and "epsilon lower bound: skipped for n > 1000" in out


def test_entry_without_lower_bound_reports_none() -> None:
    result = run_json("epsilon", "--randomizer", "balls_into_bins", "--param", "num_bins=10",
                      "--param", "num_special=2", "--users", "1e3", "--delta", "1e-6")
    assert result["epsilon_lower"] is None
    assert result["epsilon_upper"] == randomizers.balls_into_bins(10, 2).shuffled(1000).epsilon(1e-6)


# -- users with different randomizers --------------------------------------------------------------
def test_groups_json_equals_library() -> None:
    result = run_json("epsilon", "--randomizer", "krr", "--domain", "4", "--group", "1:100",
                      "--group", "2:50", "--delta", "1e-4")
    round_ = randomizers.personalized_krr(4, [(1.0, 100), (2.0, 50)])
    assert result["epsilon_upper"] == round_.epsilon(1e-4)
    assert result["epsilon_lower"] == round_.shuffled().epsilon_lower(1e-4)
    assert 0.0 < result["epsilon_lower"] <= result["epsilon_upper"]
    assert result["randomizer"] == "personalized" and result["users"] == 150
    assert result["groups"] == [
        {"randomizer": "krr", "parameters": {"epsilon0": 1.0, "domain_size": 4}, "users": 100},
        {"randomizer": "krr", "parameters": {"epsilon0": 2.0, "domain_size": 4}, "users": 50}]


def test_groups_by_spec_and_by_epsilon0_are_the_same_round() -> None:
    by_spec = run_json("delta", "--group", "krr:epsilon0=1,domain_size=3:20",
                       "--group", "krr:epsilon0=2,domain_size=3:20", "--epsilon", "0.4")
    mixed = run_json("delta", "--randomizer", "krr", "--param", "domain_size=3", "--group", "1:20",
                     "--group", "krr:epsilon0=2:20", "--epsilon", "0.4")
    round_ = randomizers.personalized_krr(3, [(1.0, 20), (2.0, 20)])
    for result in (by_spec, mixed):
        assert result["delta_upper"] == round_.delta(0.4)
        assert result["delta_lower"] == round_.shuffled().delta_lower(0.4)
    code, out, err = run("delta", "--randomizer", "krr", "--domain", "3", "--group", "1:20",
                         "--group", "2:20", "--epsilon", "0.4")
    assert code == 0 and err == ""
    assert out.startswith("personalized[krr(epsilon0=1.0, domain_size=3) x 20, "
                          "krr(epsilon0=2.0, domain_size=3) x 20], n = 40, epsilon = 0.4\n")
    assert f"delta upper bound: {format_upper(round_.delta(0.4))} " in out
    assert f"delta lower bound: {format_lower(round_.shuffled().delta_lower(0.4))} " in out
    code, _, err = run("epsilon", "--randomizer", "krr", "--domain", "3", "--group", "1:5",
                       "--group", "2:5", "--delta", "1e-3", "--compare")
    assert code == 2 and "omit it with --group" in err


def test_groups_with_client_sampling_are_the_canonical_round() -> None:
    result = run_json("delta", "--randomizer", "krr", "--domain", "2", "--group", "1:6",
                      "--group", "2:6", "--epsilon", "0.5", "--sampling-probability", "0.3")
    round_ = randomizers.personalized_krr(2, [(1.0, 6), (2.0, 6)])
    assert result["delta_upper"] == round_delta(round_, 12, 0.5, sampling_probability=0.3)
    void = void_personalized_round(round_, 0.3, round_up=False)
    assert result["sampling_probability"] == 0.3
    assert 0.0 < result["delta_lower"] == void.shuffled().delta_lower(0.5) <= result["delta_upper"]


GROUP_ERRORS = [
    (("--randomizer", "krr", "--domain", "3", "--group", "1:5", "--users", "5"), "--users or --group"),
    (("--group", "1:5", "--group", "2:5"), "needs --randomizer"),
    (("--randomizer", "krr", "--group", "krr:epsilon0=1,domain_size=3:5"), "--randomizer is unused"),
    (("--randomizer", "krr", "--domain", "3", "--epsilon0", "1", "--group", "1:5"), "--epsilon0 cannot"),
    (("--group", "krr:epsilon0=1,domain_size=3"), "COUNT of a group must be a positive integer"),
    (("--group", "krr:epsilon0=1,domain_size=3:0"), "COUNT of a group must be a positive integer"),
    (("--group", "5"), "expected ENTRY:COUNT or EPS0:COUNT"),
    (("--randomizer", "krr", "--domain", "3", "--group", "nan:5"), "EPS0 of a group must be a finite"),
    (("--randomizer", "krr", "--domain", "3", "--group=-1:5"), "--group -1:5: epsilon0"),
    (("--group", "laplace:epsilon0=1:3", "--group", "laplace:epsilon0=2:3"), "no finite matrix"),
    (("--group", "krr:epsilon0=1,domain_size=3:3", "--group", "krr:epsilon0=1,domain_size=4:3"),
     "same output space"),
    (("--randomizer", "krr", "--domain", "3"), "one of --users N or --group"),
    (("--group", "krr:epsilon0=1,domain_size=3:3", "--group", "krr:epsilon0=2,domain_size=3:3",
      "--domain", "5"), "sets domain, which --domain/--param also give"),
    (("--randomizer", "krr", "--domain", "3", "--param", "epsilon0=2", "--group", "1:3"),
     "sets epsilon0, which"),
    (("--group", "no_such:epsilon0=1:3"), "--group no_such:epsilon0=1:3: "),
]


@pytest.mark.parametrize("options, message", GROUP_ERRORS)
def test_bad_groups_exit_2_naming_the_flag(options: tuple[str, ...], message: str) -> None:
    code, out, err = run("delta", *options, "--epsilon", "0.5")
    assert code == 2 and out == ""
    assert err.startswith("dpacct-shuffle: error: ") and err.count("\n") == 1
    assert message in err


# -- matrices and params --------------------------------------------------------------------------
RR3 = [[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]]


@pytest.fixture()
def rr3_csv(tmp_path: Path) -> Path:
    path = tmp_path / "rr3.csv"
    path.write_text("# 3-ary randomized response, eps0 = ln 3\n"
                    + "\n".join(",".join(str(v) for v in row) for row in RR3) + "\n")
    return path


def test_params_of_catalog_entry() -> None:
    result = run_json("params", *KRR)
    vr = randomizers.krr(2.0, 100).variation_ratio
    params = result["variation_ratio"]
    for key in ("p", "beta", "q0", "q1", "alpha", "r0", "r1", "neutral_share", "rest_share"):
        assert params[key] == getattr(vr, key)
    # k-RR closed forms: alpha = 1/(e^eps0 + d - 1), s = (d - 2) alpha
    alpha = 1.0 / (math.exp(2.0) + 99.0)
    assert params["alpha"] == pytest.approx(alpha, rel=1e-12)
    assert params["neutral_share"] == pytest.approx(98 * alpha, rel=1e-12)


def test_params_and_epsilon_of_matrix_files(rr3_csv: Path, tmp_path: Path) -> None:
    json_path = tmp_path / "rr3.json"
    json_path.write_text(json.dumps({"matrix": RR3}))
    from_csv = run_json("params", "--matrix", str(rr3_csv))
    from_json = run_json("params", "--matrix", str(json_path))
    assert from_csv["variation_ratio"] == from_json["variation_ratio"]
    # 3-ary RR with e^eps0 = 3: p = 3 and TV = 0.4 (up to the analyzer's few-ulp rounding up)
    assert from_csv["variation_ratio"]["p"] == pytest.approx(3.0, rel=1e-12)
    assert from_csv["variation_ratio"]["beta"] == pytest.approx(0.4, rel=1e-12)
    result = run_json("epsilon", "--matrix", str(rr3_csv), "--users", "3000", "--delta", "1e-6")
    assert result["epsilon_upper"] == randomizers.from_matrix(RR3).shuffled(3000).epsilon(1e-6)


def test_params_list_names_the_catalog() -> None:
    result = run_json("params", "--list")
    assert set(result["catalog"]) == set(randomizers.CATALOG)
    assert any("domain_size" in p for p in result["catalog"]["krr"]["parameters"])


# -- calibrate ------------------------------------------------------------------------------------
def test_calibrate_largest_epsilon0_brackets_the_target() -> None:
    result = run_json("calibrate", "--randomizer", "krr", "--domain", "20", "--users", "2000",
                      "--target-epsilon", "0.3", "--delta", "1e-6", "--rtol", "1e-3", "--quiet")
    eps0 = result["largest_epsilon0"]
    assert randomizers.krr(eps0, 20).shuffled(2000).delta(0.3) <= 1e-6
    assert randomizers.krr(eps0 * (1 + 1e-3), 20).shuffled(2000).delta(0.3) > 1e-6
    assert result["epsilon_upper_at_result"] <= 0.3 * (1 + 1e-3)


def test_calibrate_smallest_users_is_minimal() -> None:
    result = run_json("calibrate", "--randomizer", "worst_case_ldp", "--epsilon0", "1",
                      "--target-epsilon", "0.5", "--delta", "1e-6", "--quiet")
    n = result["smallest_users"]
    entry = randomizers.worst_case_ldp(1.0)
    assert entry.shuffled(n).delta(0.5) <= 1e-6 < entry.shuffled(n - 1).delta(0.5)


# -- account --------------------------------------------------------------------------------------
def test_account_shuffle_pipeline_equals_direct_accountant(tmp_path: Path) -> None:
    pipeline = {"delta": 1e-6, "steps": [
        {"type": "shuffle", "randomizer": {"name": "krr", "epsilon0": 2, "domain_size": 20},
         "users": 5000, "count": 3}]}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(pipeline))
    result = run_json("account", str(path))
    accountant = ShufflePLDAccountant()
    accountant.compose(dp_event.SelfComposedDpEvent(ShuffleEvent(randomizers.krr(2.0, 20), 5000), 3))
    assert result["epsilon"] == accountant.get_epsilon(1e-6)
    # three rounds cost more than one and less than three times one (composition, not a stub)
    one = randomizers.krr(2.0, 20).shuffled(5000).epsilon(1e-6)
    assert one < result["epsilon"] < 3 * one * 1.01


def test_account_parallel_step_with_matrix_branches_equals_direct_accountant(tmp_path: Path) -> None:
    (tmp_path / "rr3.csv").write_text("\n".join(",".join(str(v) for v in row) for row in RR3))
    pipeline = {"delta": 1e-6, "steps": [
        {"type": "parallel", "users": 2000, "probabilities": [0.25, 0.75],
         "branches": [{"matrix": RR3}, {"matrix_file": "rr3.csv"}]}]}
    path = tmp_path / "p.json"
    path.write_text(json.dumps(pipeline))
    result = run_json("account", str(path))
    from dpacct_shuffle.events import ParallelCompositionEvent

    rr3 = randomizers.from_matrix(RR3)
    accountant = ShufflePLDAccountant()
    accountant.compose(ParallelCompositionEvent((rr3, rr3), 2000, (0.25, 0.75)))
    assert result["epsilon"] == accountant.get_epsilon(1e-6)


def test_account_single_ldp_report_matches_randomized_response(tmp_path: Path) -> None:
    # one 1-LDP report: eps(delta) = ln(e - delta (e + 1)) (binary RR profile)
    path = tmp_path / "p.toml"
    path.write_text('delta = 1e-3\n[[steps]]\ntype = "ldp"\nepsilons = [1.0]\n')
    result = run_json("account", str(path))
    exact = math.log(math.e - 1e-3 * (math.e + 1.0))  # itself rounded: compare to ~1e-12 relative
    assert exact * (1 - 1e-12) <= result["epsilon"] <= exact + 2e-4


def test_account_dpsgd_step_matches_dp_accounting(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"delta": 1e-5, "steps": [
        {"type": "dpsgd", "noise_multiplier": 2.0, "sampling_probability": 0.01, "steps": 50}]}))
    result = run_json("account", str(path))
    reference = pld_privacy_accountant.PLDAccountant(privacy_accountant.NeighboringRelation.REPLACE_ONE)
    reference.compose(dp_event.SelfComposedDpEvent(
        dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(2.0)), 50))
    assert result["epsilon"] == pytest.approx(reference.get_epsilon(1e-5), rel=1e-9)


# -- bad input ------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv", [
    ("epsilon", "--randomizer", "krr", "--epsilon0", "-1", "--domain", "10", "--users", "100", "--delta", "1e-6"),
    ("epsilon", *KRR, "--users", "100", "--delta", "2"),
    ("epsilon", "--randomizer", "no_such_entry", "--users", "100", "--delta", "1e-6"),
    ("epsilon", *KRR, "--users", "1.5", "--delta", "1e-6"),
    ("epsilon", *KRR, "--users", "100"),
    ("epsilon", "--randomizer", "krr", "--epsilon0", "1", "--users", "100", "--delta", "1e-6"),
    ("epsilon", *KRR, "--param", "nonsense=3", "--users", "100", "--delta", "1e-6"),
    ("delta", *KRR, "--users", "100", "--epsilon", "nan"),
    ("calibrate", "--randomizer", "krr", "--domain", "10", "--target-epsilon", "0.5", "--delta", "1e-6"),
    ("no-such-command",),
    ("plot", "--randomizer", "krr:domain_size", "--epsilon0", "1", "--output", "x.png"),
    ("plot", "--randomizer", "krr", "--epsilon0", "1", "--output", "x.txt"),
])
def test_bad_input_exits_2_with_one_line(argv: tuple[str, ...]) -> None:
    code, out, err = run(*argv)
    assert code == 2
    assert out == ""
    assert err.startswith("dpacct-shuffle: error: ")
    assert err.endswith("\n") and err.count("\n") == 1


def test_bad_files_exit_2(tmp_path: Path) -> None:
    bad_matrix = tmp_path / "bad.csv"
    bad_matrix.write_text("0.5,0.6\n0.5,0.5\n")  # first row sums to 1.1
    code, _, err = run("params", "--matrix", str(bad_matrix))
    assert code == 2 and "must sum to 1" in err and err.count("\n") == 1
    bad_pipeline = tmp_path / "p.json"
    bad_pipeline.write_text(json.dumps({"delta": 1e-6, "steps": [{"type": "teleport"}]}))
    code, _, err = run("account", str(bad_pipeline))
    assert code == 2 and "teleport" in err and err.count("\n") == 1


def test_missing_file_exits_1() -> None:
    code, _, err = run("params", "--matrix", "/nonexistent/matrix.csv")
    assert code == 1 and err.startswith("dpacct-shuffle: error: ") and err.count("\n") == 1


def test_help_has_examples() -> None:
    code, out, _ = run("--help")
    assert code == 0 and "examples:" in out and "exit codes" in out
    for command in ("epsilon", "delta", "calibrate", "params", "account", "plot"):
        code, out, _ = run(command, "--help")
        assert code == 0 and "examples:" in out and "dpacct-shuffle " + command in out


# -- rounding of printed bounds -------------------------------------------------------------------
@given(st.floats(min_value=1e-300, max_value=1e300, allow_nan=False, allow_infinity=False))
def test_printed_bounds_are_rounded_outward(value: float) -> None:
    up, down = float(format_upper(value)), float(format_lower(value))
    assert down <= value <= up
    assert up <= value * (1 + 1e-5) and down >= value * (1 - 1e-5)


# -- the installed console script -----------------------------------------------------------------
def test_console_script_subprocess() -> None:
    script = shutil.which("dpacct-shuffle")
    argv = [script] if script else [sys.executable, "-m", "dpacct_shuffle.cli"]
    completed = subprocess.run(
        [*argv, "epsilon", *KRR, "--users", "1e3", "--delta", "1e-6", "--json", "--no-lower"],
        capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == 0, completed.stderr
    result = json.loads(completed.stdout)
    assert result["epsilon_upper"] == randomizers.krr(2.0, 100).shuffled(1000).epsilon(1e-6)
    completed = subprocess.run([*argv, "epsilon", *KRR, "--users", "0", "--delta", "1e-6"],
                               capture_output=True, text=True, timeout=300, check=False)
    assert completed.returncode == 2
    assert completed.stderr.startswith("dpacct-shuffle: error: ") and completed.stderr.count("\n") == 1


# -- progress bars ------------------------------------------------------------------------------
def test_progress_reporter_calls_back_draws_tqdm_or_stays_silent(capsys: pytest.CaptureFixture[str]) -> None:
    from dpacct_shuffle.progress import ProgressReporter

    calls: list[tuple[int, int]] = []
    with ProgressReporter(3, "sweep", lambda done, total: calls.append((done, total))) as reporter:
        for _ in range(3):
            reporter.tick()
    assert calls == [(1, 3), (2, 3), (3, 3)]
    with ProgressReporter(2, "sweep", True) as reporter:
        reporter.tick(2)
    assert "sweep" in capsys.readouterr().err  # tqdm drew on stderr
    with ProgressReporter(2, "sweep", False) as reporter:
        reporter.tick(2)
    assert capsys.readouterr() == ("", "")


def test_cli_draws_no_bar_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"delta": 1e-6, "steps": [
        {"type": "gaussian", "noise_multiplier": 2.0}, {"type": "ldp", "epsilons": [0.5]}]}))
    code, out, err = run("account", str(path))
    assert code == 0 and err == "" and "epsilon:" in out


class _Terminal(io.StringIO):
    """A stderr that says it is a terminal, so that the command line would draw progress bars."""

    def isatty(self) -> bool:
        return True


def _pipeline_file(tmp_path: Path) -> Path:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"delta": 1e-6, "steps": [
        {"type": "gaussian", "noise_multiplier": 2.0}, {"type": "ldp", "epsilons": [0.5]}]}))
    return path


def _every_command(tmp_path: Path) -> dict[str, tuple[str, ...]]:
    """One small, valid invocation of every command."""
    return {
        "epsilon": ("epsilon", *KRR, "--users", "1e3", "--delta", "1e-6", "--no-lower"),
        "delta": ("delta", *KRR, "--users", "1e3", "--epsilon", "1", "--no-lower"),
        "calibrate": ("calibrate", *KRR, "--target-epsilon", "0.5", "--delta", "1e-6"),
        "params": ("params", *KRR),
        "account": ("account", str(_pipeline_file(tmp_path))),
        "plot": ("plot", "--randomizer", "binary_rr", "--epsilon0", "1", "--users-list", "100,200",
                 "--delta", "1e-6", "--no-lower", "--no-fmt", "--output", str(tmp_path / "e.svg")),
        "plan": ("plan", "--range", "0", "1", "--users", "1000", "--target-epsilon", "1",
                 "--delta", "1e-6"),
    }


def test_every_command_takes_quiet_and_json(tmp_path: Path) -> None:
    from dpacct_shuffle.cli.app import COMMANDS

    invocations = _every_command(tmp_path)
    assert set(invocations) == set(COMMANDS)  # a new command gets a line here
    for name, argv in invocations.items():
        out, err = io.StringIO(), _Terminal()
        code = main([*argv, "--quiet", "--json"], stdout=out, stderr=err)
        assert code == 0 and err.getvalue() == "", (name, err.getvalue())
        assert json.loads(out.getvalue())["command"] == name
        out_q, err_q = io.StringIO(), _Terminal()
        assert main([*argv, "-q"], stdout=out_q, stderr=err_q) == 0 and err_q.getvalue() == ""
        text = out_q.getvalue()
        assert text and not text.lstrip().startswith("{")  # --quiet alone: the usual text
        for option in ("--quiet", "--json"):
            assert option in run(argv[0], "--help")[1], (name, option)


def test_quiet_removes_the_progress_bar_a_terminal_would_show(tmp_path: Path) -> None:
    argv = ("account", str(_pipeline_file(tmp_path)))
    loud = _Terminal()
    assert main(list(argv), stdout=io.StringIO(), stderr=loud) == 0
    assert "account" in loud.getvalue()  # tqdm drew the pipeline's bar on the terminal
    quiet = _Terminal()
    assert main([*argv, "--quiet"], stdout=io.StringIO(), stderr=quiet) == 0
    assert quiet.getvalue() == ""


def test_quiet_hides_warnings_and_keeps_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    import warnings

    from dpacct_shuffle.cli import app

    def warn_then_answer(args: object, out: io.StringIO) -> int:
        warnings.warn("a warning of the library", UserWarning)
        out.write("answer\n")
        return 0

    monkeypatch.setitem(app.COMMANDS, "params", warn_then_answer)
    with pytest.warns(UserWarning, match="a warning of the library"):
        code, out, _ = run("params", *KRR)
    assert code == 0 and out == "answer\n"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, out, err = run("params", *KRR, "--quiet")
    assert code == 0 and out == "answer\n" and err == "" and caught == []
    code, out, err = run("epsilon", *KRR, "--users", "0", "--delta", "1e-6", "--quiet")
    assert code == 2 and out == "" and err.startswith("dpacct-shuffle: error: ")


# -- benchmarks/compare.py (smoke test at small n: the structure of its claims) ------------------
def test_compare_benchmark_rows_are_consistent() -> None:
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "compare.py"
    spec = importlib.util.spec_from_file_location("compare_benchmark", path)
    compare = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compare)
    rows = compare.single_message([1.0], [2000], 1e-6, lower_max_users=0, log=lambda _: None)
    assert {row["randomizer"] for row in rows} == set(compare.SINGLE_MESSAGE)
    worst = randomizers.worst_case_ldp(1.0).shuffled(2000).epsilon(1e-6)
    for row in rows:
        assert row["fmt_numerical_clone"] == worst
        # beta <= worst-case beta: a randomizer-specific bound never exceeds the generic one
        assert row["ours_upper"] <= worst and row["saving_vs_fmt_numerical"] >= 0.0
        assert row["saving_vs_fmt_numerical"] == 1.0 - row["ours_upper"] / worst
    parallel = compare.parallel_composition(2.0, 10, [1, 4], 4000, 1e-6, log=lambda _: None)
    assert parallel[0]["ours_composite_all_users"] == parallel[1]["ours_composite_all_users"]
    assert parallel[1]["users_per_query"] == 1000
    assert parallel[1]["fmt_numerical_per_query_group"] == (
        randomizers.worst_case_ldp(2.0).shuffled(1000).epsilon(1e-6))
    assert "| k queries |" in compare.report({"delta": 1e-6, "single_message": [],
                                              "parallel": parallel, "multi_message": [],
                                              "reference": []})


def test_epsilon_of_a_fixed_size_cohort_is_the_canonical_round_and_bad_sizes_exit_2() -> None:
    payload = run_json("epsilon", "--randomizer", "worst_case_ldp", "--epsilon0", "1",
                       "--users", "40", "--sample-size", "10", "--delta", "1e-3")
    assert payload["epsilon_upper"] == round_epsilon(randomizers.worst_case_ldp(1.0), 40, 1e-3,
                                                     sample_size=10)
    assert payload["sample_size"] == 10 and payload["epsilon_lower"] is None
    code, out, err = run("delta", "--randomizer", "worst_case_ldp", "--epsilon0", "1",
                         "--users", "40", "--sample-size", "41", "--epsilon", "0.1")
    assert code == 2 and out == "" and "--sample-size must be at most the number of users (40)" in err
    code, _, err = run("epsilon", "--randomizer", "worst_case_ldp", "--epsilon0", "1", "--users",
                       "40", "--sample-size", "10", "--sampling-probability", "0.1", "--delta", "1e-3")
    assert code == 2 and "not allowed with argument" in err


def test_calibrate_rounds_returns_a_certified_near_largest_epsilon0() -> None:
    """``calibrate --rounds R``: R rounds of the returned ε0, recomposed by a fresh accountant, meet
    the target; 2 % more ε0 misses it."""
    payload = run_json("calibrate", "--randomizer", "krr", "--domain", "10", "--users", "1000",
                       "--rounds", "10", "--target-epsilon", "1", "--delta", "1e-6")
    assert payload["rounds"] == 10 and payload["randomizer"] == "krr"

    def campaign_epsilon(epsilon0: float) -> float:
        event = ShuffleEvent(randomizers.krr(epsilon0, 10), 1000)
        return ShufflePLDAccountant().compose(event, 10).get_epsilon(1e-6)

    epsilon0 = payload["largest_epsilon0"]
    assert campaign_epsilon(epsilon0) <= 1.0
    assert payload["epsilon_upper_at_result"] == pytest.approx(campaign_epsilon(epsilon0), rel=1e-9)
    assert campaign_epsilon(1.02 * epsilon0) > 1.0
