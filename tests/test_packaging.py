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


def _ci_script() -> str:
    return (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_ci_runs_in_a_fresh_virtual_environment_it_creates_itself() -> None:
    script = _ci_script()
    creates = script.index('-m venv "$work/ci-venv"')
    activates = script.index('PATH="$work/ci-venv/bin:$PATH"')
    first_step = script.index('run_step "README test command"')
    assert creates < activates < first_step, "the venv is made and put first on PATH before any step"
    assert "--system-site-packages" not in script


def test_every_tool_ci_runs_is_pinned_in_an_extra_it_installs() -> None:
    script = _ci_script()
    extras = _pyproject()["project"]["optional-dependencies"]
    installed = set(re.findall(r'pip install (?:--quiet )?"\.\[([a-z,]+)\]"', script))
    installed_extras = {name for group in installed for name in group.split(",")}
    assert {"ci", "test", "docs"} <= installed_extras
    pins = {
        re.split(r"[\[=<>]", requirement)[0]: requirement
        for name in installed_extras
        for requirement in extras[name]
    }
    for tool, command in [("mypy", "mypy"), ("build", "python -m build"), ("twine", "twine check"),
                          ("mkdocs", "mkdocs build --strict")]:
        assert command in script, f".ci/run no longer runs {command}"
        assert "==" in pins[tool], f"{tool} is run by .ci/run but not pinned in an extra it installs"


def test_type_checker_is_strict_and_checks_the_package() -> None:
    mypy = _pyproject()["tool"]["mypy"]
    assert mypy["strict"] is True and mypy["files"] == ["dpacct_shuffle"]


def test_no_module_of_the_package_is_exempt_from_the_type_check() -> None:
    """Only third-party packages without type information may be exempted, and only from the
    missing-import check: no override names a module of the package or ignores errors."""
    for override in _pyproject()["tool"]["mypy"].get("overrides", []):
        modules = override["module"] if isinstance(override["module"], list) else [override["module"]]
        assert not any(module.startswith("dpacct_shuffle") for module in modules), override
        assert set(override) <= {"module", "ignore_missing_imports"}, override
