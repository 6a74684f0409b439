"""The repository is self-contained: no tracked file names a path outside it.

Every tracked text file (``git ls-files``) is scanned for

* absolute paths of a developer machine (folders ``work``, ``root``, ``home``, ``tmp``, ``Users``,
  ``mnt``, ``scratch`` at the file-system root, a home-relative path, a Windows user folder) —
  system paths such as ``/dev/null`` are fine, and a path inside a URL is not a file path;
* relative paths that leave the repository (parent-folder steps resolved against the file's own
  folder, so a page in ``docs`` may link the test data but nothing above the repository root);
* names of internal working documents that do not ship with the package (built below from
  fragments so that this file does not match itself).

Tests and benchmarks read their reference data from ``tests/data`` (provenance in
``tests/data/README.md``).
"""

from __future__ import annotations

import posixpath
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

MACHINE_PATH = re.compile(r"(?<![\w./:~-])/(?:work|root|home|tmp|Users|mnt|scratch)/"  # POSIX
                          r"|(?<![\w/])~" + "/"                                     # a home folder
                          r"|\b[A-Z]:\\(?:Users|Documents)\b")                        # Windows
PARENT_PATH = re.compile(r"(?<![\w.])(?:\.\./)+[\w.\-/]*")
INTERNAL_NAMES = re.compile(
    r"\b" + "SP" + r"EC\b"                      # the internal design notes
    + r"|(?i:\bse" + r"ed 00\d)"                # internal reading notes, by number
    + r"|" + "HELP" + "ERS"                     # the internal working rules
)


def _tracked_files() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the tracked-file list is unavailable")
    listing = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    return [name for name in listing.stdout.decode("utf-8").split("\0") if name]


def _text(name: str) -> str | None:
    path = ROOT / name
    if not path.is_file():  # deleted in the work tree but still in the index
        return None
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:  # binary (figures)
        return None


def _violations(name: str, text: str) -> list[str]:
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        for match in MACHINE_PATH.finditer(line):
            found.append(f"{name}:{number}: absolute machine path {line[match.start():][:40]!r}")
        for match in PARENT_PATH.finditer(line):
            target = posixpath.normpath(posixpath.join(posixpath.dirname(name), match.group(0)))
            if target == ".." or target.startswith("../"):
                found.append(f"{name}:{number}: path leaving the repository {match.group(0)!r}")
        for match in INTERNAL_NAMES.finditer(line):
            found.append(f"{name}:{number}: internal document name {match.group(0)!r}")
    return found


def test_scanner_catches_what_it_must_and_nothing_else():
    up = ".." + "/"  # spelled in pieces so that this file passes its own scan
    bad = {
        "a.py": "REF = '/" + "work/shared/reference/x.csv'",
        "b.md": "see /" + "home/alice/data",
        "c.md": "and /" + "tmp/x.csv",
        "d.md": "open(" + "'~" + "/data/x.csv')",
        "e.md": "C:" + "\\" + "Users\\alice\\x.csv",
        "docs/c.md": f"[x]({up}{up}outside/file.md)",
        "d.py": "# " + "SP" + "EC §3",
        "e.py": "# " + "Se" + "ed 001, Thm 4.1",
        "f.md": "read " + "HELP" + "ERS.md",
    }
    for name, text in bad.items():
        assert _violations(name, text), name
    good = {
        "a.py": "subprocess.run(cmd, stdout=open('/dev/null', 'w'))",
        "b.md": "https://github.com/home/tmp/x and NeighborRel.REPLACE_" + "SP" + "ECIAL",
        "docs/c.md": f"[data]({up}tests/data/README.md) and ./relative/path",
        "tests/data/README.md": f"[theory]({up}{up}docs/theory.md)",
        "d.py": "rng = np.random.default_rng(seed=0); special_function_rtol(n)",
    }
    for name, text in good.items():
        assert not _violations(name, text), (name, _violations(name, text))


def test_tracked_files_are_self_contained():
    violations = []
    for name in _tracked_files():
        text = _text(name)
        if text is not None:
            violations.extend(_violations(name, text))
    assert not violations, "\n".join(violations)


def test_reference_data_ships_with_the_tests():
    data = ROOT / "tests" / "data"
    assert (data / "published_pair_delta_1e-8.csv").is_file()
    assert "arXiv:2304.05007" in (data / "README.md").read_text(encoding="utf-8")
