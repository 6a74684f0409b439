"""``dpacct-shuffle calibrate``: the largest ε0 for n users, or the smallest n for ε0 — of one round,
or with ``--rounds R`` of a campaign of R rounds (:mod:`dpacct_shuffle.campaign`)."""

from __future__ import annotations

import argparse
import time
from typing import TextIO

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
    if args.rounds is not None or args.sampling_probability is not None or (
            args.sample_size is not None):
        return _calibrate_campaign(args, out)
    from dpacct_shuffle import calibration
    from dpacct_shuffle.randomizers.spec import randomizer_factory

    start = time.perf_counter()
    payload: dict[str, object] = {"command": "calibrate", "target_epsilon": args.target_epsilon,
                                  "delta": args.delta}
    if args.users is not None:
        if args.randomizer is None:
            raise UsageError("calibrate --users needs --randomizer NAME")
        family = randomizer_factory(args.randomizer, randomizer_params(args, without_epsilon0=True))
        result = calibration.calibrate_epsilon0(
            family, args.target_epsilon, args.delta, args.users, max_epsilon0=args.max_epsilon0,
            rtol=1e-3 if args.rtol is None else args.rtol, progress=show_progress(args))
        payload.update({"randomizer": args.randomizer, "users": args.users,
                        "largest_epsilon0": result.epsilon0,
                        "epsilon_upper_at_result": result.epsilon_upper})
        text = (f"largest epsilon0: {format_lower(result.epsilon0)}  (certified "
                f"delta({args.target_epsilon:g}) <= {args.delta:g} with n = {args.users}; epsilon "
                f"upper bound there: {format_upper(result.epsilon_upper)})")
    else:
        randomizer = randomizer_from_args(args)
        limit = {} if args.max_users is None else {"max_users": args.max_users}
        users = calibration.smallest_num_users(randomizer, args.target_epsilon, args.delta, **limit)
        payload.update({"randomizer": randomizer.name, "parameters": dict(randomizer.parameters),
                        "smallest_users": users})
        text = (f"smallest number of users: {users}  (certified delta({args.target_epsilon:g}) "
                f"<= {args.delta:g} for {describe_randomizer(randomizer)})")
    return _report(args, payload, text, start, out)


def _calibrate_campaign(args: argparse.Namespace, out: TextIO) -> int:
    """``calibrate --rounds R`` (and/or sampling): the campaign's largest ε0 (``--users``) or
    smallest population (``--epsilon0``/``--matrix``) for the total (ε, δ)."""
    from dpacct_shuffle.campaign import (Campaign, largest_campaign_epsilon0,
                                         smallest_campaign_users)
    from dpacct_shuffle.randomizers.spec import randomizer_factory

    rounds = 1 if args.rounds is None else args.rounds
    start = time.perf_counter()
    payload: dict[str, object] = {"command": "calibrate", "target_epsilon": args.target_epsilon,
                                  "delta": args.delta, "rounds": rounds,
                                  "sampling_probability": args.sampling_probability,
                                  "sample_size": args.sample_size}
    sampling = {"sampling_probability": args.sampling_probability,
                "sample_size": args.sample_size}
    how = (f"{rounds} round(s)" + (f", each user sampled w.p. {args.sampling_probability:g}"
                                   if args.sampling_probability is not None else "")
           + (f", cohorts of {args.sample_size}" if args.sample_size is not None else ""))
    if args.users is not None:
        if args.randomizer is None:
            raise UsageError("calibrate --users needs --randomizer NAME")
        family = randomizer_factory(args.randomizer, randomizer_params(args, without_epsilon0=True))
        campaign = Campaign(family(1.0), args.users, rounds, **sampling)
        rtol = {} if args.rtol is None else {"rtol": args.rtol}
        result = largest_campaign_epsilon0(family, args.target_epsilon, args.delta, campaign,
                                           max_epsilon0=args.max_epsilon0,
                                           progress=show_progress(args), **rtol)
        payload.update({"randomizer": args.randomizer, "users": args.users,
                        "largest_epsilon0": result.value, "epsilon_upper_at_result": result.epsilon,
                        "evaluations": result.evaluations})
        text = (f"largest epsilon0: {format_lower(result.value)}  (certified campaign epsilon "
                f"{format_upper(result.epsilon)} <= {args.target_epsilon:g} at delta "
                f"{args.delta:g}: {how} of n = {args.users})")
    else:
        randomizer = randomizer_from_args(args)
        first = args.sample_size if args.sample_size is not None else 1
        limit = {} if args.max_users is None else {"max_users": args.max_users}
        result = smallest_campaign_users(Campaign(randomizer, first, rounds, **sampling),
                                         args.target_epsilon, args.delta,
                                         progress=show_progress(args), **limit)
        payload.update({"randomizer": randomizer.name, "parameters": dict(randomizer.parameters),
                        "smallest_users": int(result.value),
                        "epsilon_upper_at_result": result.epsilon})
        text = (f"smallest number of users: {int(result.value)}  (certified campaign epsilon "
                f"{format_upper(result.epsilon)} <= {args.target_epsilon:g} at delta "
                f"{args.delta:g}: {how} of {describe_randomizer(randomizer)})")
    return _report(args, payload, text, start, out)


def _report(args: argparse.Namespace, payload: dict[str, object], text: str, start: float,
            out: TextIO) -> int:
    """Print the result (JSON with ``--json``, else ``text``) with the seconds it took."""
    payload["seconds"] = time.perf_counter() - start
    if args.json:
        emit_json(payload, out)
    else:
        out.write(text + "\n")
    return EXIT_OK
