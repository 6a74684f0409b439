"""The built documentation site works offline: no script, stylesheet or font from another host,
every formula rendered to MathML at build time (docs/hooks/mathml.py), the checks of
docs/check_site.py themselves catching what they look for. The browser checks of
docs/check_site.py (headless Chromium) run on demand, not here."""

from __future__ import annotations

import importlib.util
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load(relative: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(Path(relative).stem, ROOT / relative)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check_site = _load("docs/check_site.py")


def test_the_scan_finds_remote_scripts_stylesheets_fonts_and_images(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "index.html").write_text(
        '<html><head><script src="https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js">'
        '</script><script src="../assets/local.js"></script>'
        '<link rel="stylesheet" href="//fonts.googleapis.com/css?family=Roboto">'
        '<link rel="preconnect" href="https://fonts.gstatic.com">'
        '<link rel="canonical" href="https://example.org/a/">'  # not fetched
        '<style>@import "https://example.org/x.css"; body{}</style></head>'
        '<body><a href="https://example.org">a link is not loaded</a>'
        '<img src="http://example.org/i.png"><img src="data:image/png;base64,AA=="></body></html>',
        encoding="utf-8")
    (tmp_path / "extra.css").write_text(
        "@font-face{src:url(https://fonts.gstatic.com/r.woff2)} .x{background:url('img/a.png')}",
        encoding="utf-8")
    found = check_site.external_resources(tmp_path)
    assert found == [
        "a/index.html: script https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js",
        "a/index.html: link rel=stylesheet //fonts.googleapis.com/css?family=Roboto",
        "a/index.html: link rel=preconnect https://fonts.gstatic.com",
        "a/index.html: img http://example.org/i.png",
        "a/index.html: <style> url https://example.org/x.css",
        "extra.css: url https://fonts.gstatic.com/r.woff2",
    ]


def test_the_scan_finds_formulas_left_as_tex(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text(
        '<p><span class="arithmatex"><math><mi>x</mi></math></span> and '
        '<span class="arithmatex">\\(y^2\\)</span>, and $$z$$ in the text; '
        "<code>\\(kept in code\\)</code></p>", encoding="utf-8")
    count, problems = check_site.unrendered_formulas(tmp_path)
    assert count == 2
    assert problems[0] == "index.html: TeX left: \\(y^2\\)"
    assert any("$$z$$" in problem for problem in problems[1:])
    assert not any("kept in code" in problem for problem in problems)


def test_the_hook_renders_mathml_and_stops_on_a_formula_it_cannot_read() -> None:
    pytest.importorskip("latex2mathml", reason="the docs extra is not installed")
    mkdocs_exceptions = pytest.importorskip("mkdocs.exceptions")
    hook = _load("docs/hooks/mathml.py")
    page = types.SimpleNamespace(file=types.SimpleNamespace(src_uri="theory.md"))
    html = hook.on_page_content(
        '<p><span class="arithmatex">\\(e^\\varepsilon &lt; 1\\)</span></p>'
        '<div class="arithmatex">\\[\\frac{a}{b}\\]</div>', page=page)
    assert '<span class="arithmatex"><math xmlns="http://www.w3.org/1998/Math/MathML" ' \
           'display="inline">' in html
    assert 'display="block"><mrow><mfrac>' in html and "\\(" not in html and "\\[" not in html
    assert "<mo>&#x0003C;</mo>" in html  # the page's escaped < reached the converter as <
    with pytest.raises(mkdocs_exceptions.PluginError, match=r"theory\.md.*x\^"):
        hook.on_page_content('<span class="arithmatex">\\(x^\\)</span>', page=page)
    with pytest.raises(mkdocs_exceptions.PluginError, match=r"unknown TeX command \\varepsilom"):
        hook.on_page_content('<div class="arithmatex">\\[\\varepsilom\\]</div>', page=page)


def test_built_site_loads_nothing_from_the_network_and_shows_formulas_as_mathml(
        tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="the docs extra is not installed")
    pytest.importorskip("material", reason="the docs extra is not installed")
    pytest.importorskip("latex2mathml", reason="the docs extra is not installed")
    site = tmp_path / "site"
    check_site.build_site(site)  # --strict
    assert check_site.external_resources(site) == []
    count, problems = check_site.unrendered_formulas(site)
    assert problems == []
    assert count >= 20  # docs/theory.md alone has more
    theory = (site / "theory" / "index.html").read_text(encoding="utf-8")
    assert theory.count("<math ") >= 15
