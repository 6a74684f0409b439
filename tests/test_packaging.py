"""Release metadata is consistent: one version, the licence the metadata declares, typed package."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

import dpacct_shuffle

ROOT = Path(__file__).resolve().parent.parent


def _pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib", reason="tomllib needs Python >= 3.11")
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_version_is_defined_once_and_everything_else_reads_or_matches_it() -> None:
    project = _pyproject()
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "dpacct_shuffle.__version__"}
    assert re.fullmatch(r"\d+\.\d+\.\d+", dpacct_shuffle.__version__)
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert str(citation["version"]) == dpacct_shuffle.__version__
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(rf"^## {re.escape(dpacct_shuffle.__version__)}\b", changelog, re.M)
    assert re.search(r"^## Unreleased$", changelog, re.M)


def test_licence_file_is_the_apache_text_the_metadata_declares() -> None:
    project = _pyproject()["project"]
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert citation["license"] == "Apache-2.0"


def test_package_is_typed_and_ships_the_marker() -> None:
    assert (ROOT / "dpacct_shuffle" / "py.typed").is_file()
    assert "py.typed" in _pyproject()["tool"]["setuptools"]["package-data"]["dpacct_shuffle"]


def test_project_metadata_has_urls_classifiers_and_the_documented_extras() -> None:
    project = _pyproject()["project"]
    assert {"Homepage", "Documentation", "Repository", "Changelog"} <= set(project["urls"])
    assert "Typing :: Typed" in project["classifiers"]
    assert {"test", "opacus", "plot", "docs", "flower"} <= set(project["optional-dependencies"])
