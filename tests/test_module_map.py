"""CONTRIBUTING.md's layout names every module of the package, so the map a newcomer reads stays
true: adding a module without saying there what it is for fails here."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "dpacct_shuffle"


def _layout_section() -> str:
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    found = re.search(r"^## Layout$(?P<body>.*?)^## ", text, re.M | re.S)
    assert found, "CONTRIBUTING.md has a '## Layout' section"
    return found["body"]


def _named(layout: str) -> set[str]:
    """Every backticked word of the section, split at '/', '(' and ',' (``core/``, ``bound.py``,
    ``profiles/shuffle_bounds.py``, ``events``)."""
    names: set[str] = set()
    for quoted in re.findall(r"`([^`]+)`", layout):
        for part in re.split(r"[/(),\s]+", quoted):
            if part:
                names.add(part)
    return names


def test_every_module_and_subpackage_is_named_in_the_layout() -> None:
    named = _named(_layout_section())
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if path.name == "__init__.py":
            if relative.parent != Path(".") and relative.parent.name not in named:
                missing.append(f"{relative.parent}/")
            continue
        if path.stem not in named and path.name not in named:
            missing.append(str(relative))
    assert not missing, f"name these in CONTRIBUTING.md's layout, with their one job: {missing}"


def test_the_layout_names_no_module_that_is_gone() -> None:
    layout = _layout_section()
    stems = {path.stem for path in PACKAGE.rglob("*.py")} | {
        path.parent.name for path in PACKAGE.rglob("__init__.py")}
    listed = re.findall(r"^\| `([\w/.]+)` \|", layout, re.M)  # the first cell of each table row
    quoted_files = {name.rsplit("/", 1)[-1][:-3] for name in listed if name.endswith(".py")}
    assert quoted_files <= stems, f"the layout names modules that do not exist: {quoted_files - stems}"
