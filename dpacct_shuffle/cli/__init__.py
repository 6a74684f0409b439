"""Command line interface ``dpacct-shuffle`` (argparse, no extra dependency).

Sub-commands (``dpacct-shuffle COMMAND --help`` shows examples):

* ``epsilon``   — certified ε(δ) upper bound of one shuffle round, and the certified lower bound
  (explicit instance, :mod:`dpacct_shuffle.randomizers.lower_bounds`) where the entry has one;
* ``delta``     — certified δ(ε) upper bound (and lower bound);
* ``calibrate`` — largest ε0 (or smallest number of users n) meeting a target (ε, δ);
* ``params``    — the variation-ratio parameters (p, β, q0, q1, α, r0, r1, s) of a catalog entry or
  of a randomizer matrix read from a CSV/JSON file;
* ``account``   — ε (or δ) of a pipeline (shuffle rounds, parallel rounds, LDP reports, DP-SGD
  steps) described in a JSON or TOML file, via :class:`~dpacct_shuffle.accountants.ShufflePLDAccountant`;
* ``plot``      — ε vs n or ε vs ε0 (upper bound, lower bound, FMT closed form) as PNG/SVG
  (needs matplotlib, the ``plot`` extra).

Every sub-command accepts ``--json`` (one JSON object on stdout, its ``"command"`` key naming
the command) and ``--quiet``/``-q`` (stderr carries errors only: no progress bar, no warnings;
stdout unchanged); a new command gets both from ``parser._add_common``. Exit codes: 0 success;
2 bad input (argument errors, every ``ValueError``/``TypeError`` raised by the library and
numbers beyond floating-point range (``ArithmeticError``), reported
as one line ``dpacct-shuffle: error: ...`` on stderr); 1 a missing optional dependency (matplotlib)
or an unreadable/unwritable file.

Soundness of the printed numbers: upper bounds are printed rounded *up* to the displayed
significant digits and lower bounds rounded *down* (:func:`format_upper`, :func:`format_lower`);
``--json`` prints the library's floats unrounded. The published variation-ratio pair (Wang et al.,
arXiv:2304.05007, Thm 4.1) and the FMT closed form are printed only with ``--compare`` and
labelled; the published pair is not a valid bound in general (docs/theory.md, "Published pair") and
is never called a guarantee.

Layout: :mod:`~dpacct_shuffle.cli.parser` (options and their types),
:mod:`~dpacct_shuffle.cli.app` (:func:`main`: dispatch and exit codes), one module per command
(``epsilon``, ``delta``, ``calibrate``, ``params``, ``account``, ``plot``; each reads its arguments,
makes one library call and prints the result), :mod:`~dpacct_shuffle.cli.output` (outward-rounded
numbers, JSON). The numbers come from the library: :mod:`dpacct_shuffle.shuffle_round`,
:mod:`dpacct_shuffle.calibration`, :mod:`dpacct_shuffle.pipeline`, :mod:`dpacct_shuffle.plots`,
:mod:`dpacct_shuffle.randomizers.spec`.
"""

from dpacct_shuffle.cli.app import main
from dpacct_shuffle.cli.errors import EXIT_BAD_INPUT, EXIT_OK, EXIT_RUNTIME, PROG, UsageError
from dpacct_shuffle.cli.output import format_lower, format_upper
from dpacct_shuffle.cli.parser import LOWER_BOUND_MAX_USERS

__all__ = ["EXIT_BAD_INPUT", "EXIT_OK", "EXIT_RUNTIME", "LOWER_BOUND_MAX_USERS", "PROG",
           "UsageError", "format_lower", "format_upper", "main"]
