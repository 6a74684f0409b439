"""mkdocs hook: show the Sphinx cross-reference roles of the docstrings as plain code.

The docstrings cite other objects as ``:func:`name```, ``:class:`~package.Name``` and so on;
mkdocstrings renders the backquoted part as code and leaves the role name in front of it. This
hook removes the role and, for a leading ``~``, keeps only the last component of the dotted name
(Sphinx's convention).
"""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|attr|data|obj|exc|const):<code>(~?)([^<]*)</code>")


def _plain(match: re.Match[str]) -> str:
    short, name = match.groups()
    return f"<code>{name.rsplit('.', 1)[-1] if short else name}</code>"


def on_page_content(html: str, **kwargs: Any) -> str:
    """Replace every rendered role by the code it refers to."""
    return _ROLE.sub(_plain, html)
