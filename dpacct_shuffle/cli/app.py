"""The ``dpacct-shuffle`` program: parse the arguments, run the command, map errors to exit codes."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Sequence
from typing import TextIO

from dpacct_shuffle.cli.account import cmd_account
from dpacct_shuffle.cli.calibrate import cmd_calibrate
from dpacct_shuffle.cli.delta import cmd_delta
from dpacct_shuffle.cli.epsilon import cmd_epsilon
from dpacct_shuffle.cli.errors import EXIT_BAD_INPUT, EXIT_RUNTIME, PROG
from dpacct_shuffle.cli.params import cmd_params_or_list
from dpacct_shuffle.cli.parser import build_parser
from dpacct_shuffle.cli.plan import cmd_plan
from dpacct_shuffle.cli.plot import cmd_plot

COMMANDS: dict[str, Callable[..., int]] = {
    "epsilon": cmd_epsilon, "delta": cmd_delta, "calibrate": cmd_calibrate,
    "params": cmd_params_or_list, "account": cmd_account, "plot": cmd_plot, "plan": cmd_plan,
}


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None,
         stderr: TextIO | None = None) -> int:
    """Run ``dpacct-shuffle`` with ``argv`` (default ``sys.argv[1:]``) and return the exit code.

    ``ValueError``/``TypeError`` from the library and the CLI become one line
    ``dpacct-shuffle: error: ...`` on stderr and exit code 2. With ``--quiet`` (every command)
    warnings are not shown, so stderr carries errors only.
    """
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    parser = build_parser()
    saved = sys.stdout, sys.stderr
    try:
        sys.stdout, sys.stderr = out, err  # argparse writes help/errors to sys.std*
        try:
            args = parser.parse_args(list(argv) if argv is not None else None)
        except SystemExit as exc:
            return int(exc.code) if isinstance(exc.code, int) else EXIT_BAD_INPUT
        try:
            with warnings.catch_warnings():
                if args.quiet:
                    warnings.simplefilter("ignore")
                return int(COMMANDS[args.command](args, out))
        except (ValueError, TypeError) as exc:
            err.write(f"{PROG}: error: {_one_line(exc)}\n")
            return EXIT_BAD_INPUT
        except ArithmeticError as exc:  # overflow or division by zero: inputs beyond float range
            err.write(f"{PROG}: error: numbers out of the supported range "
                      f"({type(exc).__name__}: {_one_line(exc)})\n")
            return EXIT_BAD_INPUT
        except (ImportError, OSError) as exc:
            err.write(f"{PROG}: error: {_one_line(exc)}\n")
            return EXIT_RUNTIME
    finally:
        sys.stdout, sys.stderr = saved


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


__all__ = ["COMMANDS", "main"]
