"""Lean imports: ``import dpacct_shuffle`` and ``dpacct-shuffle --help`` load no heavy optional or
slow module (checked in a fresh interpreter through ``sys.modules``)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("scipy.stats", "matplotlib", "torch", "opacus")


def loaded_after(code: str) -> list[str]:
    """The modules of :data:`HEAVY` in ``sys.modules`` after running ``code`` in a new interpreter."""
    probe = (f"import io, json, sys, contextlib\n{code}\n"
             f"print(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))")
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                               timeout=120, check=True)
    return json.loads(completed.stdout.strip().splitlines()[-1])


def test_import_package_is_lean() -> None:
    assert loaded_after("import dpacct_shuffle") == []


@pytest.mark.parametrize("argv", [["--help"], ["epsilon", "--help"], ["account", "--help"],
                                  ["--version"]])
def test_cli_help_is_lean(argv: list[str]) -> None:
    code = ("from dpacct_shuffle.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    assert main({argv!r}) == 0\n")
    assert loaded_after(code) == []


def test_import_randomizers_is_lean() -> None:
    assert loaded_after("from dpacct_shuffle import randomizers") == []


def test_the_probe_sees_a_heavy_import() -> None:
    # the check can fail: the deferred scipy.stats loads on its first use
    code = ("from dpacct_shuffle import randomizers\n"
            "from dpacct_shuffle.core.problem import stats\n"
            "stats.binom\n")
    assert "scipy.stats" in loaded_after(code)
