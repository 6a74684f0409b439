"""mkdocs hook: formulas rendered to MathML when the site is built, so pages need no script and no
network to show them.

``pymdownx.arithmatex`` (generic mode) wraps every formula of the pages and of the rendered
docstrings as ``<span class="arithmatex">\\(...\\)</span>`` (inline) or
``<div class="arithmatex">\\[...\\]</div>`` (display). This hook replaces each by the MathML that
``latex2mathml`` (pure Python, pinned in the ``docs`` extra) makes of it; browsers render MathML
Core natively. A formula the converter cannot read (or with a command it does not know)
stops the build with the page and the formula,
instead of leaving raw TeX on the page.
"""

from __future__ import annotations

import html
import re
from typing import Any

from latex2mathml.converter import convert
from mkdocs.exceptions import PluginError

_FORMULA = re.compile(
    r'<(?P<tag>span|div) class="arithmatex">\s*(?P<open>\\\(|\\\[)(?P<tex>.*?)(?:\\\)|\\\])\s*</(?P=tag)>',
    re.S)


_UNKNOWN_COMMAND = re.compile(r">(\\[A-Za-z]+)<")


def to_mathml(tex: str, *, display: bool) -> str:
    """The MathML element of the TeX formula ``tex`` (``display="block"`` for displayed ones).

    Raises ValueError for a command the converter does not know (it would print it as text).
    """
    mathml: str = convert(tex, display="block" if display else "inline")
    unknown = _UNKNOWN_COMMAND.search(mathml)
    if unknown is not None:
        raise ValueError(f"unknown TeX command {unknown.group(1)}")
    return mathml


def on_page_content(html_text: str, page: Any, **kwargs: Any) -> str:
    """Replace every arithmatex formula of the page by its MathML."""

    def render(match: re.Match[str]) -> str:
        tex = html.unescape(match.group("tex")).strip()
        display = match.group("open") == "\\["
        try:
            mathml = to_mathml(tex, display=display)
        except Exception as exc:  # the converter raises its own error types
            raise PluginError(f"{page.file.src_uri}: cannot convert the formula {tex!r} to MathML: "
                              f"{type(exc).__name__}: {exc}") from exc
        if display:
            return f'<div class="arithmatex">{mathml}</div>'
        return f'<span class="arithmatex">{mathml}</span>'

    return _FORMULA.sub(render, html_text)
