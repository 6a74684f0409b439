"""Progress bars (tqdm) for long computations: sweeps, calibrations, pipeline accounting.

Library functions take ``progress``: ``False``/``None`` (default, silent), ``True`` (a tqdm bar on
stderr) or a callback ``progress(done, total)``. The command line turns bars on when stderr is a
terminal (``--quiet`` turns them off).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import TracebackType
from typing import Optional, TextIO, Union

ProgressCallback = Callable[[int, int], None]
ProgressOption = Union[bool, ProgressCallback, None]


def is_terminal(stream: Optional[TextIO] = None) -> bool:
    """Whether ``stream`` (default: the current ``sys.stderr``) is an interactive terminal."""
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


class ProgressReporter:
    """Counts finished work items and reports them as ``progress`` asks (module docstring).

    ``total=None`` (unknown amount of work, e.g. a bisection) shows a running count. ``delay``:
    seconds before the bar appears (a call finished earlier shows nothing). Use as a context
    manager so the bar is closed on errors too.
    """

    def __init__(self, total: Optional[int], description: str, progress: ProgressOption,
                 *, unit: str = "it", delay: float = 0.0) -> None:
        self.total, self.done = total, 0
        self._callback = progress if callable(progress) else None
        self._bar = None
        if progress is True:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, desc=description, unit=unit, leave=False,
                             file=sys.stderr, dynamic_ncols=True, delay=delay)

    def tick(self, count: int = 1) -> None:
        """Record ``count`` finished items."""
        self.done += count
        if self._bar is not None:
            self._bar.update(count)
        if self._callback is not None:
            self._callback(self.done, self.total if self.total is not None else self.done)

    def close(self) -> None:
        """Remove the bar (if one is shown)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> "ProgressReporter":
        return self

    def __exit__(self, kind: Optional[type[BaseException]], value: Optional[BaseException],
                 traceback: Optional[TracebackType]) -> None:
        self.close()


__all__ = ["ProgressCallback", "ProgressOption", "ProgressReporter", "is_terminal"]
