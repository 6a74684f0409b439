"""``dpacct-shuffle plan``: calibrate every applicable catalog randomizer for a campaign and rank
them by the accuracy of one round (:mod:`dpacct_shuffle.planning`)."""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, TextIO

from dpacct_shuffle.cli.errors import EXIT_OK, UsageError
from dpacct_shuffle.cli.output import emit_json, format_lower, format_upper
from dpacct_shuffle.cli.parser import show_progress

if TYPE_CHECKING:
    from dpacct_shuffle.randomizers.base import Randomizer

#: Parameters the table leaves out (the same for every plan, or shown in their own column).
_IMPLIED = ("epsilon0", "domain_size", "collision_probability", "blocks", "set_size")


def _label(randomizer: Randomizer) -> str:
    """The entry's name and its shape parameters, e.g. ``local_hashing(hash_range=42)``."""
    shape = ", ".join(f"{key}={value}" for key, value in randomizer.parameters.items()
                      if key not in _IMPLIED)
    return f"{randomizer.name}({shape})" if shape else randomizer.name


def cmd_plan(args: argparse.Namespace, out: TextIO) -> int:
    """``plan``: frequency oracles over ``--domain D``, or numeric randomizers over ``--range a b``."""
    if (args.domain is None) == (args.range is None):
        raise UsageError("plan needs exactly one of --domain D (frequency estimation) or "
                         "--range A B (the mean of values in [A, B])")
    from dpacct_shuffle import planning
    from dpacct_shuffle.randomizers.serialization import randomizer_to_dict

    start = time.perf_counter()
    common = dict(sampling_probability=args.sampling_probability, sample_size=args.sample_size,
                  fallbacks=args.fallbacks, progress=show_progress(args))
    if args.domain is not None:
        result = planning.plan_frequency(args.domain, args.users, args.rounds,
                                         args.target_epsilon, args.delta, **common)
        what = "std of one item's frequency estimate (true frequency 0), per round"
    else:
        result = planning.plan_mean(tuple(args.range), args.users, args.rounds,
                                    args.target_epsilon, args.delta, **common)
        what = "std of the mean estimate (worst input), per round"
    if args.json:
        emit_json({"command": "plan", "target_epsilon": args.target_epsilon, "delta": args.delta,
                   "users": args.users, "rounds": args.rounds,
                   "sampling_probability": args.sampling_probability,
                   "sample_size": args.sample_size,
                   "common_epsilon0": result.common_epsilon0,
                   "ranking_differs_at_common_epsilon0": result.ranking_differs,
                   "plans": [{"randomizer": randomizer_to_dict(plan.randomizer),
                              "epsilon0": plan.epsilon0, "epsilon": plan.epsilon,
                              "std": plan.std, "std_at_common_epsilon0": plan.common_std}
                             for plan in result.plans],
                   "seconds": time.perf_counter() - start}, out)
        return EXIT_OK
    out.write(f"campaign: {args.rounds} round(s) of {args.users} users"
              + (f", sampled w.p. {args.sampling_probability:g}"
                 if args.sampling_probability is not None else "")
              + (f", cohorts of {args.sample_size}" if args.sample_size is not None else "")
              + f"; total target ({args.target_epsilon:g}, {args.delta:g})\n")
    out.write(f"ranked by the {what}\n\n")
    rows = [(f"{rank}", _label(plan.randomizer), format_lower(plan.epsilon0, 4),
             format_upper(plan.epsilon, 4), format_upper(plan.std, 3),
             format_upper(plan.common_std, 3))
            for rank, plan in enumerate(result.plans, start=1)]
    header = ("#", "randomizer", "eps0", "campaign eps", "std",
              f"std at eps0={format_lower(result.common_epsilon0, 4)}")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        out.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() + "\n")
    order = " > ".join(plan.randomizer.name for plan in result.common_ranking)
    if result.ranking_differs:
        out.write(f"\nnote: at a common eps0 = {format_lower(result.common_epsilon0, 4)} the ranking "
                  f"differs ({order}): each randomizer's own certified eps0 changes the answer.\n")
    else:
        out.write(f"\nat a common eps0 = {format_lower(result.common_epsilon0, 4)} the ranking is "
                  "the same.\n")
    return EXIT_OK
