"""``dpacct-shuffle delta``: certified δ(ε) of one shuffle round and its lower bound."""

from __future__ import annotations

import argparse
from typing import TextIO

from dpacct_shuffle.cli.errors import EXIT_OK
from dpacct_shuffle.cli.output import emit_json
from dpacct_shuffle.cli.round_report import round_bounds_from_args, round_payload, write_round


def cmd_delta(args: argparse.Namespace, out: TextIO) -> int:
    """``delta``: certified δ(ε) upper bound and the lower bound
    (:func:`~dpacct_shuffle.shuffle_round.delta_bounds`)."""
    bounds = round_bounds_from_args(args, "delta")
    if args.json:
        emit_json(round_payload(bounds), out)
    else:
        write_round(bounds, out)
    return EXIT_OK
