"""The Python blocks of docs/sampling.md run, in order, in one namespace."""

from __future__ import annotations

import pathlib
import re

PAGE = pathlib.Path(__file__).resolve().parent.parent / "docs" / "sampling.md"


def test_sampling_page_python_blocks_run() -> None:
    blocks = re.findall(r"```python\n(.*?)\n```", PAGE.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 3
    namespace: dict[str, object] = {"__name__": "docs_sampling"}
    for index, code in enumerate(blocks):
        exec(compile(code, f"docs/sampling.md python block {index}", "exec"), namespace)
