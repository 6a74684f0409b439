"""``dpacct-shuffle delta``: certified δ(ε) of one shuffle round and its lower bound."""

from __future__ import annotations

import argparse
from typing import TextIO

from dpacct_shuffle.cli.epsilon import _lower_bound, _round_setting, _upper_bound
from dpacct_shuffle.cli.errors import EXIT_OK
from dpacct_shuffle.cli.output import describe_randomizer, emit_json, format_upper


def cmd_delta(args: argparse.Namespace, out: TextIO) -> int:
    """``delta``: certified δ(ε) upper bound and the lower bound."""
    randomizer, shuffled, upper, seconds, payload = _upper_bound(
        args, "delta", "epsilon", lambda shuffled: shuffled.delta(args.epsilon))
    lower_text = _lower_bound(shuffled, args, lambda: shuffled.delta_lower(args.epsilon), payload,
                              "delta_lower")
    if args.json:
        emit_json(payload, out)
        return EXIT_OK
    out.write(f"{describe_randomizer(randomizer)}, {_round_setting(args)}, epsilon = {args.epsilon:g}\n")
    out.write(f"delta upper bound: {format_upper(upper)}   ({seconds:.2f} s)\n")
    if lower_text:
        out.write(f"delta lower bound: {lower_text}\n")
    return EXIT_OK
