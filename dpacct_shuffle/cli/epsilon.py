"""``dpacct-shuffle epsilon``: certified ε(δ) of one shuffle round, its lower bound and the
labelled references (``--compare``)."""

from __future__ import annotations

import argparse
from typing import TextIO

from dpacct_shuffle.cli.errors import EXIT_OK, UsageError
from dpacct_shuffle.cli.output import emit_json, format_upper
from dpacct_shuffle.cli.round_report import round_bounds_from_args, round_payload, write_round


def cmd_epsilon(args: argparse.Namespace, out: TextIO) -> int:
    """``epsilon``: certified ε(δ) upper bound and the lower bound
    (:func:`~dpacct_shuffle.shuffle_round.epsilon_bounds`); with ``--compare`` also the FMT
    closed form and the published pair, labelled (never called a guarantee)."""
    if args.compare and args.sampling_probability is not None:
        raise UsageError("--compare references unsampled rounds; omit it with --sampling-probability")
    if args.compare and args.sample_size is not None:
        raise UsageError("--compare references unsampled rounds; omit it with --sample-size")
    if args.compare and args.group:
        raise UsageError("--compare references rounds of one randomizer; omit it with --group")
    bounds = round_bounds_from_args(args, "epsilon")
    payload = round_payload(bounds)
    if args.compare:
        from dpacct_shuffle.randomizers.base import Randomizer
        from dpacct_shuffle.shuffle_round import fmt_closed_form, published_pair_epsilon

        randomizer = bounds.randomizer
        assert isinstance(randomizer, Randomizer)  # --group (users with several) refused above
        fmt = fmt_closed_form(randomizer, bounds.users, bounds.level)
        published = published_pair_epsilon(randomizer, bounds.users, bounds.level)
        payload["fmt_closed_form"] = fmt.value
        payload["published_pair_not_a_guarantee"] = published
        if fmt.value is None:
            payload["fmt_closed_form_unavailable"] = fmt.reason
    if args.json:
        emit_json(payload, out)
        return EXIT_OK
    write_round(bounds, out)
    if args.compare:
        out.write("FMT closed form (any eps0-LDP randomizer): "
                  + (format_upper(fmt.value) if fmt.value is not None else "n/a") + "\n")
        if published is not None:
            out.write(f"published pair, Wang et al. 2023 (NOT a guarantee): {published:.6g}\n")
    return EXIT_OK
