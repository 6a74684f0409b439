"""Generated Markdown tables: the ``--markdown PAGE`` mode of the benchmark scripts.

A page holds each generated table between ``<!-- generated: NAME -->`` and
``<!-- end generated: NAME -->``, with a note naming the command that produced it. A run writes the
rows it computed into that block: rows whose key (the first ``key_columns`` cells) is already there
are replaced in place, new rows are appended, the other rows are kept (so a run restricted to some
entries, e.g. ``--entries``, regenerates only theirs).

:func:`add_table_arguments` gives a script the shared ``--entries``/``--markdown`` options and
:func:`selected_entries` validates them; :class:`MarkdownTable` prints rows as they are computed
and writes them into the page at the end.
"""

from __future__ import annotations

import argparse
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


def add_table_arguments(parser: argparse.ArgumentParser, entries: Sequence[str],
                        separator: str = ",") -> None:
    """Add ``--entries`` (``separator``-separated names among ``entries``, default all) and
    ``--markdown PAGE`` (the page whose generated table gets the rows)."""
    kind = {",": "comma", ";": "semicolon"}.get(separator, repr(separator))
    parser.add_argument("--entries", type=lambda s: s.split(separator), default=list(entries),
                        help=f"{kind}-separated entry names (default: all)")
    parser.add_argument("--markdown", type=Path, help="page whose generated table gets the rows")


def selected_entries(parser: argparse.ArgumentParser, args: argparse.Namespace,
                     entries: Sequence[str]) -> list[str]:
    """``args.entries``, after exiting with a usage error if one is not among ``entries``."""
    unknown = sorted(set(args.entries) - set(entries))
    if unknown:
        parser.error(f"unknown entries {unknown}; known: {sorted(entries)}")
    return list(args.entries)


class MarkdownTable:
    """A table printed row by row (header first) and optionally written into a page."""

    def __init__(self, header: Sequence[str]) -> None:
        self.header = list(header)
        self.rows: list[list[str]] = []
        print(_row(self.header))
        print("|" + "---|" * len(self.header))

    def add(self, cells: Sequence[str]) -> None:
        """Print one row now and keep it for :meth:`write`."""
        self.rows.append(list(cells))
        print(_row(cells), flush=True)

    def write(self, page: Path | None, name: str, note: str, key_columns: int = 3) -> None:
        """:func:`update_generated_table` with the rows so far; nothing when ``page`` is None."""
        if page is not None:
            update_generated_table(page, name, note, self.header, self.rows, key_columns)


__all__ = ["MarkdownTable", "add_table_arguments", "selected_entries", "update_generated_table"]
