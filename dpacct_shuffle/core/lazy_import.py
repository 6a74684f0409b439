"""Deferred imports: a module object whose first attribute access imports the real module.

``import dpacct_shuffle`` and ``dpacct-shuffle --help`` stay fast because heavy modules
(``scipy.stats`` takes about as long to import as the rest of the package) load only when a
computation first needs them.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class LazyModule:
    """Stands for the module ``name``; ``lazy.attribute`` imports it on first use (then the
    import system's cache makes every later access a dictionary lookup)."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def _module(self) -> ModuleType:
        return importlib.import_module(self._name)

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._module(), attribute)

    def __repr__(self) -> str:
        return f"LazyModule({self._name!r})"


__all__ = ["LazyModule"]
