"""The README is assembled from docs/sections, its Python examples run, and CI runs its test command."""

from __future__ import annotations

import importlib.util
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _build_readme() -> str:
    spec = importlib.util.spec_from_file_location("build_readme", ROOT / "docs" / "build_readme.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build()


def test_readme_is_assembled_from_sections() -> None:
    assert README == _build_readme(), "run `python docs/build_readme.py`"


def test_first_lines_are_the_two_setup_commands_and_ci_runs_the_test_command() -> None:
    block = re.search(r"```bash\n(.*?)\n```", README, re.S).group(1).splitlines()
    assert len(block) == 2
    main_job, test_command = block
    assert main_job.startswith("pip install . && dpacct-shuffle epsilon")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_command in ci.splitlines()


PYTHON_BLOCKS = re.findall(r"```python\n(.*?)\n```", README, re.S)


@pytest.mark.parametrize("index", range(len(PYTHON_BLOCKS)))
def test_readme_python_example_runs(index: int) -> None:
    code = PYTHON_BLOCKS[index]
    if "import opacus" in code or "dpacct_shuffle.opacus" in code or "import torch" in code:
        pytest.importorskip("opacus")
    exec(compile(code, f"README.md python block {index}", "exec"), {"__name__": "readme_example"})
