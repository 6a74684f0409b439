"""Check the built documentation site: offline, formulas rendered, no code cut off.

Two kinds of check:

* on the HTML files (no browser; ``tests/test_docs_site.py`` runs these on every test run):
  :func:`external_resources` lists every script, stylesheet, font, image or frame the pages would
  load from another host, :func:`unrendered_formulas` every formula left as TeX instead of MathML;
* in headless Chromium (run on demand: ``python docs/check_site.py``): the site is served on
  127.0.0.1, each page of :data:`PAGES` is loaded at a desktop and a phone width, a screenshot is
  saved, and a script added by this server (never by the site) reports every code block wider than
  its box, every displayed formula that neither fits nor scrolls, every formula the browser does
  not lay out as MathML, every image not shown, and any page wider than the window.

Usage::

    python docs/check_site.py [--site DIR] [--screenshots DIR] [--chromium PATH]

Without ``--site`` it builds the site with ``mkdocs build --strict`` into a temporary directory.
Chromium is the Debian package (``apt-get install chromium``). Exit status 0 when every check
passes, 1 otherwise (each problem on one line).
"""

from __future__ import annotations

import argparse
import functools
import html.parser
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Pages checked in the browser: the home page (install line, a figure), the integration pages
#: (long ``PrivacyConfig``/``FedAvg`` lines), the theory page (most formulas), pages with figures,
#: an API page.
PAGES = ("index.html", "flower/index.html", "opacus/index.html", "theory/index.html",
         "cli/index.html", "sampling/index.html", "lower-bounds/index.html",
         "api/flower/index.html")

#: Window sizes (width, height): a desktop and a phone.
WINDOWS = ((1280, 1600), (412, 1600))

_REMOTE = re.compile(r"^\s*(?:[a-zA-Z][a-zA-Z0-9+.-]*:)?//")
_CSS_URL = re.compile(r"""(?:url\(\s*['"]?|@import\s+['"])([^'")\s]+)""")
_TEX = re.compile(r"\\\(|\\\[|\$\$")


def is_remote(url: str) -> bool:
    """Whether ``url`` names another host (``http://``, ``https://``, ``//host``...); ``data:``
    URLs and relative paths are local."""
    return bool(_REMOTE.match(url))


class _Resources(html.parser.HTMLParser):
    """Collects what a page loads: script sources, stylesheets and other ``<link>`` targets that
    are fetched (icons, preloads, fonts), images, frames, and ``<style>`` text."""

    _LOADED_LINKS = {"stylesheet", "preload", "modulepreload", "prefetch", "icon", "preconnect",
                     "dns-prefetch", "manifest"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.urls: list[tuple[str, str]] = []
        self.styles: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "script" and values.get("src"):
            self.urls.append(("script", values["src"]))
        elif tag == "link" and values.get("href"):
            relations = set(values.get("rel", "").lower().split())
            if relations & self._LOADED_LINKS:
                self.urls.append((f"link rel={values.get('rel')}", values["href"]))
        elif tag in ("img", "iframe", "source", "audio", "video", "embed") and values.get("src"):
            self.urls.append((tag, values["src"]))
        elif tag == "object" and values.get("data"):
            self.urls.append((tag, values["data"]))
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.styles.append(data)


def external_resources(site: Path) -> list[str]:
    """Every resource of the built site at ``site`` that a browser would fetch from another host:
    ``<script src>``, loaded ``<link>`` targets (stylesheets, fonts, preconnects), images and
    frames of every HTML file, and ``url(...)``/``@import`` of every CSS file and ``<style>``
    element. Each as ``"FILE: KIND URL"``; empty when the site works offline."""
    found = []
    for path in sorted(site.rglob("*.html")):
        parser = _Resources()
        parser.feed(path.read_text(encoding="utf-8"))
        name = path.relative_to(site)
        found += [f"{name}: {kind} {url}" for kind, url in parser.urls if is_remote(url)]
        found += [f"{name}: <style> url {url}" for text in parser.styles
                  for url in _CSS_URL.findall(text) if is_remote(url)]
    for path in sorted(site.rglob("*.css")):
        text = path.read_text(encoding="utf-8")
        found += [f"{path.relative_to(site)}: url {url}" for url in _CSS_URL.findall(text)
                  if is_remote(url)]
    return found


class _ArithmatexText(html.parser.HTMLParser):
    """Text inside ``class="arithmatex"`` elements that is not MathML (raw TeX left behind)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = 0  # > 0 inside an arithmatex element
        self.math_depth = 0
        self.leftovers: list[str] = []
        self.formulas = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if self.depth:
            self.depth += 1
        elif "arithmatex" in classes:
            self.depth, self.formulas = 1, self.formulas + 1
        if tag == "math":
            self.math_depth += 1

    def handle_endtag(self, tag: str) -> None:
        if self.depth:
            self.depth -= 1
        if tag == "math":
            self.math_depth -= 1

    def handle_data(self, data: str) -> None:
        if self.depth and not self.math_depth and data.strip():
            self.leftovers.append(data.strip())


def unrendered_formulas(site: Path) -> tuple[int, list[str]]:
    """The number of formulas of the site and the ones left as TeX (inside an arithmatex element
    but outside ``<math>``, or a TeX delimiter ``\\(``, ``\\[``, ``$$`` in a page's text)."""
    count, problems = 0, []
    for path in sorted(site.rglob("*.html")):
        parser = _ArithmatexText()
        text = path.read_text(encoding="utf-8")
        parser.feed(text)
        count += parser.formulas
        problems += [f"{path.relative_to(site)}: TeX left: {item[:80]}" for item in parser.leftovers]
        body = re.sub(r"<(script|pre|code)\b.*?</\1>", "", text, flags=re.S)
        problems += [f"{path.relative_to(site)}: TeX delimiter in the text near "
                     f"{body[max(0, m.start() - 30):m.end() + 30]!r}" for m in _TEX.finditer(body)]
    return count, problems


def build_site(destination: Path) -> None:
    """``mkdocs build --strict`` of this repository into ``destination``."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
                    "--config-file", str(ROOT / "mkdocs.yml"), "--site-dir", str(destination)],
                   check=True, cwd=ROOT, env=env)


# The probe the checking server appends to each page it serves: it measures the laid-out page
# and writes the findings as JSON into <body data-site-check="...">, which --dump-dom prints.
_PROBE = """<script>
window.addEventListener("load", () => setTimeout(() => {
  const problems = [];
  const label = (el) => (el.textContent || "").trim().slice(0, 70);
  document.querySelectorAll("pre > code").forEach((code) => {
    const box = code.closest("pre");
    if (code.scrollWidth > code.clientWidth + 1 || box.scrollWidth > box.clientWidth + 1)
      problems.push("code block wider than its box: " + label(code));
  });
  let formulas = 0;
  document.querySelectorAll("math").forEach((math) => {
    formulas += 1;
    const rect = math.getBoundingClientRect();
    const display = getComputedStyle(math).display;
    if (!display.includes("math")) problems.push("formula not laid out as MathML (" + display + ")");
    if (rect.width < 1 || rect.height < 1) problems.push("formula with an empty box");
    const holder = math.closest("div.arithmatex");
    if (holder && holder.scrollWidth > holder.clientWidth + 1
        && !["auto", "scroll"].includes(getComputedStyle(holder).overflowX))
      problems.push("displayed formula cut off: " + label(holder));
  });
  document.querySelectorAll("img").forEach((img) => {
    if (!img.complete || img.naturalWidth === 0) problems.push("image not shown: " + img.src);
  });
  if (document.documentElement.scrollWidth > window.innerWidth + 1)
    problems.push("page wider than the window: " + document.documentElement.scrollWidth + " px");
  document.body.dataset.siteCheck = JSON.stringify({problems: problems, formulas: formulas,
    codeBlocks: document.querySelectorAll("pre > code").length,
    images: document.querySelectorAll("img").length});
}, 300));
</script>"""


class _ProbingHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the site; HTML pages requested with ``?probe`` get :data:`_PROBE` appended."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        path, _, query = self.path.partition("?")
        if query != "probe" or not path.endswith(".html"):
            super().do_GET()
            return
        body = (Path(self.directory) / path.lstrip("/")).read_bytes()
        body = body.replace(b"</body>", _PROBE.encode() + b"</body>")
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # quiet server
        pass


@functools.lru_cache(maxsize=1)
def _empty_profile() -> str:
    return tempfile.mkdtemp(prefix="check-site-chromium-")


def chromium(executable: str, url: str, window: tuple[int, int], *extra: str) -> str:
    """Run headless Chromium on ``url`` (no network besides 127.0.0.1, fresh profile) and return
    its stdout."""
    command = [executable, "--headless", "--no-sandbox", "--disable-gpu",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--no-first-run", "--hide-scrollbars", f"--user-data-dir={_empty_profile()}",
               f"--window-size={window[0]},{window[1]}", "--virtual-time-budget=4000", *extra, url]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if completed.returncode != 0:
        raise RuntimeError(f"chromium failed on {url}: {completed.stderr.strip()[-500:]}")
    return completed.stdout


def browser_problems(site: Path, executable: str, screenshots: Path) -> Iterator[str]:
    """Load every page of :data:`PAGES` at every size of :data:`WINDOWS`; save a screenshot of
    each and yield every problem the probe reports."""
    handler = functools.partial(_ProbingHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        for page in PAGES:
            for window in WINDOWS:
                name = f"{page.replace('/index.html', '').replace('.html', '').replace('/', '-')}"
                shot = screenshots / f"{name}-{window[0]}.png"
                chromium(executable, base + page, window, f"--screenshot={shot}")
                dom = chromium(executable, base + page + "?probe", window, "--dump-dom")
                found = re.search(r'data-site-check="([^"]*)"', dom)
                if found is None:
                    yield f"{page} at {window[0]} px: the probe did not run"
                    continue
                report = json.loads(html.unescape(found.group(1)))
                print(f"{page} at {window[0]} px: {report['codeBlocks']} code blocks, "
                      f"{report['formulas']} formulas, {report['images']} images, "
                      f"screenshot {shot}")
                for problem in report["problems"]:
                    yield f"{page} at {window[0]} px: {problem}"
    finally:
        server.shutdown()


def main(argv: Sequence[str] | None = None) -> int:
    """Build (or take) the site, run the offline checks and the browser checks; 0 if all pass."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, help="a built site (default: build one now)")
    parser.add_argument("--screenshots", type=Path, help="where to save the screenshots "
                        "(default: a new temporary directory)")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium",
                        help="the Chromium executable (default: chromium on PATH)")
    args = parser.parse_args(argv)
    site = args.site
    if site is None:
        site = Path(tempfile.mkdtemp(prefix="check-site-")) / "site"
        build_site(site)
    screenshots = args.screenshots or Path(tempfile.mkdtemp(prefix="check-site-shots-"))
    screenshots.mkdir(parents=True, exist_ok=True)
    problems = external_resources(site)
    count, unrendered = unrendered_formulas(site)
    problems += unrendered
    print(f"site {site}: {count} formulas, {len(problems)} offline problem(s)")
    problems += list(browser_problems(site, args.chromium, screenshots))
    for problem in problems:
        print("PROBLEM", problem)
    print(f"{len(problems)} problem(s); screenshots in {screenshots}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
