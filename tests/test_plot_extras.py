"""The ``plot`` extra is optional: without matplotlib the plot tests are skipped (not collection
errors) and ``dpacct-shuffle plot`` validates its arguments first (bad input exits 2, a missing
matplotlib exits 1 with the install hint); an output directory that does not exist is an error
(exit 1), never created.

matplotlib stays installed: ``sys.modules["matplotlib"] = None`` makes ``import matplotlib`` raise
ImportError, in this process (``monkeypatch``) or in a subprocess.
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from dpacct_shuffle import plots, randomizers
from dpacct_shuffle.cli import EXIT_BAD_INPUT, EXIT_RUNTIME, main

ROOT = Path(__file__).resolve().parent.parent
BLOCK_MATPLOTLIB = "import sys; sys.modules['matplotlib'] = None; "


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def no_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError):
        import matplotlib  # noqa: F401


def test_plot_tests_are_skipped_without_matplotlib() -> None:
    code = (BLOCK_MATPLOTLIB + "import pytest; "
            "sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', 'tests/test_plots.py']))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    # a module-level skip collects no test (exit 5); a collection error would exit 2
    assert result.returncode == pytest.ExitCode.NO_TESTS_COLLECTED, result.stdout + result.stderr
    assert "1 skipped" in result.stdout and "error" not in result.stdout.lower(), result.stdout
    assert "the plot extra (matplotlib) is not installed" in result.stdout


def test_cli_process_without_matplotlib_exits_1_with_install_hint(tmp_path: Path) -> None:
    target = tmp_path / "eps.png"
    argv = ["plot", "--randomizer", "worst_case_ldp", "--epsilon0", "1", "--users-list", "1e3",
            "--output", str(target), "--quiet"]
    result = subprocess.run(
        [sys.executable, "-c", BLOCK_MATPLOTLIB + "from dpacct_shuffle.cli import main; "
         "sys.exit(main())", *argv], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == EXIT_RUNTIME
    assert result.stdout == ""
    assert result.stderr.startswith("dpacct-shuffle: error: plotting needs matplotlib")
    assert "pip install 'dpacct-shuffle[plot]'" in result.stderr
    assert result.stderr.count("\n") == 1
    assert not target.exists()


@pytest.mark.parametrize(("argv", "named"), [
    (("--randomizer", "krr", "--domain", "10", "--epsilon0", "-1"), "epsilon0"),
    (("--randomizer", "worst_case_ldp", "--epsilon0", "1", "--delta", "2"), "--delta"),
    (("--randomizer", "no_such_entry", "--epsilon0", "1"), "no_such_entry"),
    (("--randomizer", "krr", "--epsilon0", "1"), "domain"),
    (("--epsilon0", "1",), "--randomizer"),
    (("--x", "epsilon0", "--randomizer", "worst_case_ldp"), "--users"),
    (("--x", "epsilon0", "--randomizer", "worst_case_ldp", "--users", "100",
      "--epsilon0-list", "0,1"), "--epsilon0-list[0]"),
])
def test_bad_input_exits_2_before_looking_for_matplotlib(
        no_matplotlib: None, tmp_path: Path, argv: tuple[str, ...], named: str) -> None:
    target = tmp_path / "eps.png"
    code, out, err = run("plot", *argv, "--output", str(target), "--quiet")
    assert code == EXIT_BAD_INPUT, err
    assert out == "" and err.startswith("dpacct-shuffle: error: ") and err.count("\n") == 1
    assert named in err
    assert "matplotlib" not in err
    assert not target.exists()


def test_bad_output_suffix_exits_2_without_matplotlib(no_matplotlib: None, tmp_path: Path) -> None:
    code, _, err = run("plot", "--randomizer", "worst_case_ldp", "--epsilon0", "1", "--output",
                       str(tmp_path / "eps.txt"))
    assert code == EXIT_BAD_INPUT and "--output must end in .png, .svg or .pdf" in err


def test_valid_arguments_without_matplotlib_exit_1(no_matplotlib: None, tmp_path: Path) -> None:
    target = tmp_path / "eps.png"
    code, out, err = run("plot", "--randomizer", "worst_case_ldp", "--epsilon0", "1", "--output",
                         str(target), "--quiet")
    assert code == EXIT_RUNTIME and out == ""
    assert "pip install 'dpacct-shuffle[plot]'" in err and err.count("\n") == 1
    assert not target.exists()


@pytest.mark.parametrize("blocked", [False, True])
def test_missing_output_directory_exits_1_and_is_not_created(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, blocked: bool) -> None:
    if blocked:
        monkeypatch.setitem(sys.modules, "matplotlib", None)
    missing = tmp_path / "no" / "such" / "directory"
    code, out, err = run("plot", "--randomizer", "worst_case_ldp", "--epsilon0", "1",
                         "--users-list", "1e3", "--output", str(missing / "eps.png"), "--quiet")
    assert code == EXIT_RUNTIME and out == ""
    assert "does not exist" in err and str(missing) in err and err.count("\n") == 1
    assert not (tmp_path / "no").exists()


def test_draw_curves_never_creates_directories(tmp_path: Path) -> None:
    curves = plots.epsilon_vs_users({"wc": randomizers.worst_case_ldp(1.0)}, [1000], 1e-6,
                                    lower=False, fmt=False)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        plots.draw_curves(curves, tmp_path / "missing" / "eps.png")
    assert not (tmp_path / "missing").exists()
