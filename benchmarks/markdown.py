"""Generated Markdown tables: the ``--markdown PAGE`` mode of the benchmark scripts.

A page holds each generated table between ``<!-- generated: NAME -->`` and
``<!-- end generated: NAME -->``, with a note naming the command that produced it. A run writes the
rows it computed into that block: rows whose key (the first ``key_columns`` cells) is already there
are replaced in place, new rows are appended, the other rows are kept (so a run restricted to some
entries, e.g. ``--entries``, regenerates only theirs).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def update_generated_table(page: Path, name: str, note: str, header: Sequence[str],
                           rows: Sequence[Sequence[str]], key_columns: int = 3) -> None:
    """Write ``rows`` (with ``header`` and ``note``) into the block ``name`` of ``page``."""
    begin, end = f"<!-- generated: {name} -->", f"<!-- end generated: {name} -->"
    text = page.read_text(encoding="utf-8")
    if begin not in text or end not in text:
        raise ValueError(f"{page} has no block {begin} … {end}")
    head, rest = text.split(begin, 1)
    block, tail = rest.split(end, 1)
    old = [_cells(line) for line in block.splitlines() if line.startswith("|")][2:]
    merged = [list(cells) for cells in old if len(cells) == len(header)]
    index = {tuple(cells[:key_columns]): i for i, cells in enumerate(merged)}
    for cells in rows:
        key = tuple(cells[:key_columns])
        if key in index:
            merged[index[key]] = list(cells)
        else:
            index[key] = len(merged)
            merged.append(list(cells))
    lines = [begin, note, "", _row(header), _row(["---"] * len(header)).replace(" ", ""),
             *(_row(cells) for cells in merged), end]
    page.write_text(head + "\n".join(lines) + tail, encoding="utf-8")


__all__ = ["update_generated_table"]
