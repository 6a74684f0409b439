"""Every code block of the README and of the documentation pages is checked against the code.

How the blocks of a page (``README.md``, ``docs/**/*.md``) are checked, in the order they appear,
in a fresh temporary working directory:

* a block whose info string carries a title, e.g. ````toml title="pipeline.toml"``, is written to
  that file first (so commands and examples can read it);
* ````python`` blocks run in one namespace per page;
* ````console`` blocks: every ``$ dpacct-shuffle ARGS`` line (a trailing ``\\`` continues it on the
  next line) runs in-process through :func:`dpacct_shuffle.cli.main`, and what it prints (stdout
  and stderr, interleaved as on a terminal; progress bars are drawn only on a terminal, so never
  here) must equal the lines that follow, up to the next ``$``. In those lines ``…`` stands for one number, or the trailing digits of one,
  that changes from run to run (a timing); every other character is compared exactly (trailing
  spaces aside). The command must succeed, unless its output shows ``dpacct-shuffle: error:``;
* other blocks (``bash``, ``text``, untitled ``toml``, …) are illustrations and are not run.

A Python block that imports an optional dependency which is not installed (torch, Opacus, Flower,
matplotlib), or a ``plot`` command without matplotlib, is not run; the page's other blocks are,
and the page is then reported as skipped.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import io
import os
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from dpacct_shuffle.cli import EXIT_OK, PROG, main

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
OPTIONAL_MODULES = ("torch", "opacus", "flwr", "matplotlib")
VARIABLE = "…"
_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`\n]*)$")
_TITLE = re.compile(r'title="(?P<title>[^"]+)"')


@dataclass(frozen=True)
class Block:
    """One fenced code block: its language, optional file title, text and the (1-based) number of
    its first line in the page."""

    language: str
    title: str | None
    text: str
    line: int


def code_blocks(markdown: str) -> list[Block]:
    """The fenced blocks of a Markdown page (indented fences inside lists included)."""
    blocks: list[Block] = []
    lines = markdown.splitlines()
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent, fence, info = opening["indent"], opening["fence"], opening["info"].strip()
        body: list[str] = []
        index += 1
        first_line = index + 1  # 1-based number of the block's first line
        while index < len(lines) and lines[index].strip() != fence:
            line = lines[index]
            body.append(line[len(indent):] if line.startswith(indent) else line.lstrip())
            index += 1
        if index == len(lines):
            raise AssertionError(f"unterminated code block opened at line {first_line - 1}")
        language = info.split()[0].lstrip(".{").rstrip("}") if info else ""
        title = _TITLE.search(info)
        blocks.append(Block(language, title["title"] if title else None, "\n".join(body),
                            first_line))
        index += 1
    return blocks


@dataclass(frozen=True)
class Command:
    """One ``$ dpacct-shuffle ...`` line of a console block and the output shown below it."""

    argv: list[str]
    expected: list[str]
    line: int


def console_commands(block: Block) -> list[Command]:
    """The commands of a console block with their expected output."""
    commands: list[Command] = []
    lines = block.text.splitlines()
    index = 0
    while index < len(lines):
        start = index
        line = lines[index]
        assert line.startswith("$ "), (
            f"line {block.line + index}: a console block starts with a `$ ` command, got {line!r}")
        command = line[2:]
        while command.endswith("\\"):
            index += 1
            command = command[:-1] + " " + lines[index].strip()
        index += 1
        expected: list[str] = []
        while index < len(lines) and not lines[index].startswith("$ "):
            expected.append(lines[index].rstrip())
            index += 1
        argv = shlex.split(command)
        assert argv and argv[0] == PROG, (
            f"line {block.line + start}: console blocks run `{PROG}` commands only, got "
            f"{command!r} (show other commands in a ```bash or ```text block)")
        assert not {"|", ">", "<", "&&", ";"} & set(argv), f"line {block.line + start}: no shell syntax"
        commands.append(Command(argv[1:], expected, block.line + start))
    return commands


def output_pattern(expected: str) -> re.Pattern[str]:
    """Regular expression of one expected output line (``…`` = one variable number)."""
    return re.compile(_NUMBER.join(re.escape(part) for part in expected.split(VARIABLE)))


def matches(expected: list[str], printed: list[str]) -> bool:
    """Whether printed lines equal the expected ones up to the marked variable numbers."""
    return len(expected) == len(printed) and all(
        output_pattern(e).fullmatch(p) is not None for e, p in zip(expected, printed))


def run_console(block: Block) -> list[str]:
    """Run every command of a console block and compare what it prints; returns the commands not
    run because they need a missing optional dependency (``plot`` without matplotlib)."""
    not_run: list[str] = []
    for command in console_commands(block):
        if command.argv[:1] == ["plot"] and missing_optional_modules("import matplotlib"):
            not_run.append(f"command at line {command.line} needs matplotlib")
            continue
        stream = io.StringIO()
        code = main(command.argv, stdout=stream, stderr=stream)
        printed = [line.rstrip() for line in stream.getvalue().splitlines()]
        shows_error = any(line.startswith(f"{PROG}: error:") for line in command.expected)
        assert (code != EXIT_OK) == shows_error, (
            f"line {command.line}: `{PROG} {shlex.join(command.argv)}` exited with {code}\n"
            + "\n".join(printed))
        assert matches(command.expected, printed), (
            f"line {command.line}: `{PROG} {shlex.join(command.argv)}` printed\n"
            + "\n".join(printed) + "\nbut the page shows\n" + "\n".join(command.expected))
    return not_run


def missing_optional_modules(code: str) -> list[str]:
    """The optional dependencies (``OPTIONAL_MODULES``) that ``code`` imports and are missing."""
    return [name for name in OPTIONAL_MODULES
            if re.search(rf"^\s*(?:import|from)\s+{name}\b", code, re.M)
            and importlib.util.find_spec(name) is None]


@contextlib.contextmanager
def _working_directory(path: Path) -> Iterator[None]:
    previous = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(previous)


def _page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_code_blocks_of_page(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = code_blocks(page.read_text(encoding="utf-8"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    for block in blocks:
        if block.title is not None:
            (tmp_path / block.title).write_text(block.text + "\n", encoding="utf-8")
    namespace: dict[str, object] = {"__name__": "__docs__"}
    skipped: list[str] = []
    with _working_directory(tmp_path):
        for block in blocks:
            if block.language == "python":
                missing = missing_optional_modules(block.text)
                if missing:
                    skipped.append(f"block at line {block.line} needs {', '.join(missing)}")
                    continue
                exec(compile(block.text, f"{_page_id(page)}, block at line {block.line}", "exec"),
                     namespace)
            elif block.language == "console":
                skipped.extend(run_console(block))
    if skipped:
        pytest.skip(f"{_page_id(page)}: every other block passed; not installed: {'; '.join(skipped)}")


# -- the checker itself ------------------------------------------------------------------------


def test_variable_marker_matches_only_numbers() -> None:
    assert matches(["epsilon upper bound: 0.0432073   (… s)"],
                   ["epsilon upper bound: 0.0432073   (0.10 s)"])
    assert matches(["took …"], ["took 1.5e-03"])
    assert matches(["0.0034…"], ["0.00341087"])
    assert not matches(["epsilon upper bound: 0.0432073   (… s)"],
                       ["epsilon upper bound: 0.0432074   (0.10 s)"])
    assert not matches(["(… s)"], ["(fast s)"])
    assert not matches(["a", "b"], ["a"])
    assert not matches(["a"], ["a", "b"])


def test_console_parser_reads_continuations_and_output() -> None:
    block = code_blocks(
        "```console\n$ dpacct-shuffle params \\\n    --randomizer krr\nline 1\n\n"
        "$ dpacct-shuffle --version\ndpacct-shuffle …\n```\n")[0]
    first, second = console_commands(block)
    assert first.argv == ["params", "--randomizer", "krr"] and first.expected == ["line 1", ""]
    assert second.argv == ["--version"] and second.expected == ["dpacct-shuffle …"]
    titled = code_blocks('text\n  ```toml title="p.toml"\n  delta = 1e-8\n  ```\n')
    assert titled == [Block("toml", "p.toml", "delta = 1e-8", 3)]


def test_console_check_fails_on_a_changed_digit() -> None:
    good = code_blocks("```console\n$ dpacct-shuffle params --randomizer binary_rr --epsilon0 1\n"
                       "```\n")[0]
    stream = io.StringIO()
    assert main(["params", "--randomizer", "binary_rr", "--epsilon0", "1"], stdout=stream) == 0
    shown = stream.getvalue()
    run_console(code_blocks(f"```console\n$ dpacct-shuffle params --randomizer binary_rr "
                            f"--epsilon0 1\n{shown}```\n")[0])
    changed = re.sub(r"\d(?=\D*$)", lambda m: str((int(m[0]) + 1) % 10), shown, count=1)
    with pytest.raises(AssertionError, match="but the page shows"):
        run_console(code_blocks(f"```console\n$ dpacct-shuffle params --randomizer binary_rr "
                                f"--epsilon0 1\n{changed}```\n")[0])
    with pytest.raises(AssertionError, match="but the page shows"):
        run_console(good)  # no output shown, some printed


# -- README, CI and site configuration ---------------------------------------------------------


def _ci_test_command() -> str:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    found = re.search(r"^TEST_COMMAND='(?P<command>[^']+)'$", ci, re.M)
    assert found, ".ci/run defines TEST_COMMAND='...'"
    return found["command"]


def test_readme_starts_with_the_two_setup_commands_and_ci_runs_the_test_command() -> None:
    text = README.read_text(encoding="utf-8")
    first = code_blocks(text)[0]
    assert first.language == "bash" and first.line <= 5, "the README opens with the set-up commands"
    main_job, test_command = first.text.splitlines()
    assert main_job.startswith(f"pip install . && {PROG} epsilon")
    assert test_command == _ci_test_command()


class _IgnoreTags(yaml.SafeLoader):
    """YAML loader that reads mkdocs' ``!!python/name:`` and ``!ENV`` tags as plain values."""


_IgnoreTags.add_multi_constructor("", lambda loader, suffix, node: None)
_IgnoreTags.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)


def _nav_pages(entries: object) -> Iterator[str]:
    if isinstance(entries, str):
        yield entries
    elif isinstance(entries, list):
        for entry in entries:
            yield from _nav_pages(entry)
    elif isinstance(entries, dict):
        for value in entries.values():
            yield from _nav_pages(value)


def test_every_documentation_page_is_in_the_site_navigation() -> None:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_IgnoreTags)
    listed = set(_nav_pages(config["nav"]))
    pages = {str(page.relative_to(DOCS)) for page in DOCS.rglob("*.md")}
    assert pages <= listed, f"add to the nav of mkdocs.yml: {sorted(pages - listed)}"
    assert listed <= pages, f"nav entries without a page: {sorted(listed - pages)}"


def _nav_labels(entries: object) -> Iterator[str]:
    if isinstance(entries, list):
        for entry in entries:
            yield from _nav_labels(entry)
    elif isinstance(entries, dict):
        for label, value in entries.items():
            yield label
            yield from _nav_labels(value)


def test_every_navigation_label_appears_once() -> None:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_IgnoreTags)
    labels = [label.casefold() for label in _nav_labels(config["nav"])]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    assert not repeated, f"navigation labels used more than once: {repeated}"


def test_readme_links_into_the_repository_resolve() -> None:
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\((?!https?://|#)([^)#\s]+)(?:#[^)]*)?\)", text)
    missing = [target for target in targets if not (ROOT / target).exists()]
    assert not missing, f"README links to missing files: {missing}"



def test_docstrings_render_without_warnings(caplog: pytest.LogCaptureFixture) -> None:
    """What `mkdocs build --strict` would reject: Google-style docstrings griffe cannot read."""
    griffe = pytest.importorskip("griffe", reason="the docs extra (mkdocstrings) is not installed")
    package = griffe.load("dpacct_shuffle", search_paths=[str(ROOT)], resolve_aliases=False)

    def parse(obj: object) -> None:
        if obj.is_alias:
            return
        if obj.docstring is not None:
            obj.docstring.parse("google")
        for member in obj.members.values():
            parse(member)

    with caplog.at_level(logging.WARNING, logger="griffe"):
        parse(package)
    warnings = [record.getMessage() for record in caplog.records if record.name.startswith("griffe")]
    assert not warnings, "\n".join(warnings)


def test_every_module_has_an_api_reference_page() -> None:
    documented = set()
    for page in (DOCS / "api").glob("*.md"):
        documented.update(re.findall(r"^::: ([\w.]+)", page.read_text(encoding="utf-8"), re.M))
    modules = {".".join(path.relative_to(ROOT).with_suffix("").parts)
               for path in (ROOT / "dpacct_shuffle").rglob("*.py")
               if path.name != "__init__.py" and not path.name.startswith("_")}
    assert modules <= documented, f"add to a page of docs/api/: {sorted(modules - documented)}"
