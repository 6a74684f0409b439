"""``dpacct-shuffle epsilon``: certified ε(δ) of one shuffle round, its lower bound and the
labelled references (``--compare``)."""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from typing import Any, TextIO

from dpacct_shuffle.cli.errors import EXIT_OK, UsageError
from dpacct_shuffle.cli.output import describe_randomizer, emit_json, format_lower, format_upper
from dpacct_shuffle.cli.parser import randomizer_from_args


def _fmt_reference(randomizer: Any, users: int, delta: float) -> tuple[float | None, str]:
    """FMT closed form for the entry's ε0 (None with the reason when it does not apply)."""
    from dpacct_shuffle.lemmas import fmt_shuffle_bound

    epsilon0 = randomizer.parameters.get("epsilon0")
    if epsilon0 is None:
        return None, "entry has no epsilon0"
    try:
        return fmt_shuffle_bound(float(epsilon0), users, delta), ""
    except ValueError as exc:
        return None, str(exc)


def _published_reference(randomizer: Any, users: int, delta: float) -> float | None:
    """ε of the published pair (Wang et al.) when the entry carries published (p, β, q, q1)."""
    from dpacct_shuffle.core.bound import published_pair

    if randomizer.published is None:
        return None
    p, beta, q, q1 = randomizer.published
    return published_pair(p, beta, q, q1).epsilon(delta, users)


def _lower_bound(shuffled: Any, args: argparse.Namespace, compute: Callable[[], float],
                 payload: dict[str, object], key: str) -> str:
    """Compute the instance lower bound if wanted and affordable; returns the text to print.

    Skipped with ``--no-lower`` and above ``--lower-max-users`` (its cost grows with n: ~2 s at
    n = 1e6, ~15 s at 1e7, minutes at 1e8), reported as None/"not available" for entries without
    an instance.
    """
    if args.no_lower:
        return ""
    if getattr(args, "sampling_probability", None) is not None:
        payload[key] = None
        return "not available for a client-sampled round"
    if args.users > args.lower_max_users:
        payload[key] = None
        payload["lower_skipped"] = f"n > lower_max_users = {args.lower_max_users}"
        return (f"skipped for n > {args.lower_max_users} (slow at this n; raise "
                "--lower-max-users to compute it)")
    start = time.perf_counter()
    value = compute() if shuffled.lower_bound is not None else None
    payload["seconds_lower"] = time.perf_counter() - start
    if value is not None and math.isnan(value):  # no number is printed for a failed evaluation
        payload[key] = None
        payload["lower_unavailable"] = f"the instance evaluated to NaN at n = {args.users}"
        return "not available at this n (the instance's evaluation failed)"
    payload[key] = value
    if value is None:
        return "not available for this entry"
    return f"{format_lower(value)}   (explicit instance)"


def _upper_bound(
    args: argparse.Namespace, command: str, given: str, compute: Callable[[Any], float]
) -> tuple[Any, Any, float, float, dict[str, object]]:
    """Shared start of ``epsilon``/``delta``: the randomizer, its shuffled protocol, the timed
    certified upper bound ``compute(shuffled)`` of ``command`` at the ``given`` level, and the JSON
    payload so far."""
    randomizer = randomizer_from_args(args)
    # the lower bound's cost is limited by --lower-max-users (_lower_bound), not the library default
    shuffled = randomizer.shuffled(args.users, lower_bound_max_users=None)
    gamma = args.sampling_probability
    start = time.perf_counter()
    if gamma is None:
        upper = compute(shuffled)
    else:
        upper = _sampled_round(randomizer, args.users, gamma, command, getattr(args, given))
    seconds = time.perf_counter() - start
    payload: dict[str, object] = {
        "command": command, "randomizer": randomizer.name, "parameters": dict(randomizer.parameters),
        "users": args.users, given: getattr(args, given), f"{command}_upper": upper,
        "seconds_upper": seconds,
    }
    if gamma is not None:
        payload["sampling_probability"] = gamma
    return randomizer, shuffled, upper, seconds, payload


def _sampled_round(randomizer: Any, users: int, gamma: float, command: str, level: float) -> float:
    """ε(δ) or δ(ε) of one Poisson-sampled round (population ``users``, replace-one) through
    ``ShufflePLDAccountant`` (the void view of :mod:`dpacct_shuffle.sampling`)."""
    from dp_accounting import dp_event

    from dpacct_shuffle.accountants import ShufflePLDAccountant
    from dpacct_shuffle.events import ShuffleEvent
    from dpacct_shuffle.sampling import check_sampling_probability

    event = dp_event.PoissonSampledDpEvent(
        check_sampling_probability(gamma, "--sampling-probability"), ShuffleEvent(randomizer, users))
    accountant = ShufflePLDAccountant().compose(event)
    if command == "epsilon":
        return float(accountant.get_epsilon(level))
    return float(accountant.get_delta(level))


def _round_setting(args: argparse.Namespace) -> str:
    """The printed description of the users of a round."""
    if args.sampling_probability is None:
        return f"n = {args.users}"
    return (f"population n = {args.users}, each reporting with probability "
            f"{args.sampling_probability:g}")


def cmd_epsilon(args: argparse.Namespace, out: TextIO) -> int:
    """``epsilon``: certified ε(δ) upper bound, the lower bound and (``--compare``) references."""
    randomizer, shuffled, upper, upper_seconds, payload = _upper_bound(
        args, "epsilon", "delta", lambda shuffled: shuffled.epsilon(args.delta))
    lower_text = _lower_bound(shuffled, args, lambda: shuffled.epsilon_lower(args.delta), payload,
                              "epsilon_lower")
    fmt_value = published = None
    if args.compare and args.sampling_probability is not None:
        raise UsageError("--compare references unsampled rounds; omit it with --sampling-probability")
    if args.compare:
        fmt_value, fmt_reason = _fmt_reference(randomizer, args.users, args.delta)
        published = _published_reference(randomizer, args.users, args.delta)
        payload["fmt_closed_form"] = fmt_value
        payload["published_pair_not_a_guarantee"] = published
        if fmt_value is None:
            payload["fmt_closed_form_unavailable"] = fmt_reason
    if args.json:
        emit_json(payload, out)
        return EXIT_OK
    out.write(f"{describe_randomizer(randomizer)}, {_round_setting(args)}, delta = {args.delta:g}\n")
    out.write(f"epsilon upper bound: {format_upper(upper)}   ({upper_seconds:.2f} s)\n")
    if lower_text:
        out.write(f"epsilon lower bound: {lower_text}\n")
    if args.compare:
        out.write("FMT closed form (any eps0-LDP randomizer): "
                  + (format_upper(fmt_value) if fmt_value is not None else "n/a") + "\n")
        if published is not None:
            out.write(f"published pair, Wang et al. 2023 (NOT a guarantee): {published:.6g}\n")
    return EXIT_OK
