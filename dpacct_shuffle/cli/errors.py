"""Program name, exit codes and the error the command line raises for its own input checks."""

from __future__ import annotations

PROG = "dpacct-shuffle"
EXIT_OK = 0
EXIT_RUNTIME = 1
EXIT_BAD_INPUT = 2


class UsageError(ValueError):
    """Bad command-line input detected by the CLI itself (reported like a library ValueError)."""


__all__ = ["EXIT_BAD_INPUT", "EXIT_OK", "EXIT_RUNTIME", "PROG", "UsageError"]
