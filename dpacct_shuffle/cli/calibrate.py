"""``dpacct-shuffle calibrate``: the largest ε0 for n users, or the smallest n for ε0."""

from __future__ import annotations

import argparse
import time
from typing import Any, TextIO

from dpacct_shuffle.cli.errors import EXIT_OK, UsageError
from dpacct_shuffle.cli.output import describe_randomizer, emit_json, format_lower, format_upper
from dpacct_shuffle.cli.parser import randomizer_from_args, randomizer_params, show_progress


def cmd_calibrate(args: argparse.Namespace, out: TextIO) -> int:
    """``calibrate``: largest ε0 for n users (``--users``), or smallest n for ε0 (``--epsilon0``)."""
    if (args.users is None) == (args.epsilon0 is None):
        raise UsageError("calibrate needs exactly one of --users (find the largest epsilon0) "
                         "or --epsilon0 (find the smallest number of users)")
    if args.matrix is not None and args.users is not None:
        raise UsageError("calibrate --users searches eps0 of a catalog entry and cannot be used "
                         "with --matrix (a matrix has a fixed eps0: omit --users to search n)")
    from dpacct_shuffle import calibration
    from dpacct_shuffle.progress import ProgressReporter
    from dpacct_shuffle.randomizers.spec import randomizer_factory

    start = time.perf_counter()
    payload: dict[str, object] = {"command": "calibrate", "target_epsilon": args.target_epsilon,
                                  "delta": args.delta}
    with ProgressReporter(None, "calibrate", show_progress(args), unit="evaluation") as progress:
        if args.users is not None:
            if args.randomizer is None:
                raise UsageError("calibrate --users needs --randomizer NAME")
            make = randomizer_factory(args.randomizer, randomizer_params(args, without_epsilon0=True))

            def family(epsilon0: float) -> Any:
                progress.tick()
                return make(epsilon0)

            value = calibration.largest_epsilon0(family, args.target_epsilon, args.delta, args.users,
                                                 max_epsilon0=args.max_epsilon0, rtol=args.rtol)
            check = make(value).shuffled(args.users).epsilon(args.delta)
            payload.update({"randomizer": args.randomizer, "users": args.users,
                            "largest_epsilon0": value, "epsilon_upper_at_result": check})
            text = (f"largest epsilon0: {format_lower(value)}  (certified delta({args.target_epsilon:g}) "
                    f"<= {args.delta:g} with n = {args.users}; epsilon upper bound there: "
                    f"{format_upper(check)})")
        else:
            randomizer = randomizer_from_args(args)
            kwargs = {} if args.max_users is None else {"max_users": args.max_users}
            users = calibration.smallest_num_users(randomizer, args.target_epsilon, args.delta,
                                                   **kwargs)
            payload.update({"randomizer": randomizer.name, "parameters": dict(randomizer.parameters),
                            "smallest_users": users})
            text = (f"smallest number of users: {users}  (certified delta({args.target_epsilon:g}) "
                    f"<= {args.delta:g} for {describe_randomizer(randomizer)})")
    payload["seconds"] = time.perf_counter() - start
    if args.json:
        emit_json(payload, out)
    else:
        out.write(text + "\n")
    return EXIT_OK
