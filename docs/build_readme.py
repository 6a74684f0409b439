"""Assemble README.md from its head and the section files in docs/sections (sorted by name).

Run `python docs/build_readme.py` after editing a section; tests/test_readme.py checks that the
README is up to date and that its Python examples run.
"""

from __future__ import annotations

import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
HEAD = ROOT / "docs" / "readme_head.md"
SECTIONS = ROOT / "docs" / "sections"


def build() -> str:
    parts = [HEAD.read_text(encoding="utf-8").rstrip("\n")]
    for section in sorted(SECTIONS.glob("*.md")):
        text = section.read_text(encoding="utf-8").rstrip("\n")
        # section files link the figure and the theory page relative to docs/
        parts.append(text.replace("](comparison.png)", "](docs/comparison.png)").replace("](theory.md", "](docs/theory.md"))
    return "\n\n".join(parts) + "\n"


if __name__ == "__main__":
    (ROOT / "README.md").write_text(build(), encoding="utf-8")
