"""The part ``epsilon`` and ``delta`` share: one library call for the round's
:class:`~dpacct_shuffle.shuffle_round.RoundBounds`, its JSON payload and its printed lines."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, TextIO

from dpacct_shuffle.cli.errors import UsageError
from dpacct_shuffle.cli.output import describe_randomizer, format_lower, format_upper
from dpacct_shuffle.cli.parser import personalized_from_args, randomizer_from_args

if TYPE_CHECKING:
    from dpacct_shuffle.shuffle_round import Quantity, RoundBounds, RoundRandomizer

#: The option holding the given level of each quantity (δ for ε(δ), ε for δ(ε)).
LEVEL_OPTION = {"epsilon": "delta", "delta": "epsilon"}


def round_bounds_from_args(args: argparse.Namespace, quantity: Quantity) -> RoundBounds:
    """The bounds of the round the arguments describe (``--randomizer``/``--matrix`` and
    ``--users``, or the ``--group`` options; the level, ``--sampling-probability`` or
    ``--sample-size``, ``--no-lower``,
    ``--lower-max-users``)."""
    from dpacct_shuffle.sampling import check_sampling_probability
    from dpacct_shuffle.shuffle_round import delta_bounds, epsilon_bounds

    randomizer: RoundRandomizer
    if args.group:
        randomizer = personalized_from_args(args)
        users = randomizer.num_users
    elif args.users is None:
        raise UsageError("one of --users N or --group ENTRY:COUNT (repeated) is required")
    else:
        randomizer, users = randomizer_from_args(args), args.users
    gamma = args.sampling_probability
    if gamma is not None:
        gamma = check_sampling_probability(gamma, "--sampling-probability")
    size = args.sample_size
    if size is not None and size > users:
        raise UsageError(f"--sample-size must be at most the number of users ({users}), got {size}")
    evaluate = epsilon_bounds if quantity == "epsilon" else delta_bounds
    return evaluate(randomizer, users, getattr(args, LEVEL_OPTION[quantity]),
                    sampling_probability=gamma, lower=not args.no_lower,
                    lower_max_users=args.lower_max_users, sample_size=size)


def round_payload(bounds: RoundBounds) -> dict[str, object]:
    """The JSON object of ``epsilon``/``delta``: the setting, the upper bound, then the lower bound
    (key absent with ``--no-lower``; None with the reason where it is not available)."""
    from dpacct_shuffle.shuffle_round import LowerBoundStatus

    from dpacct_shuffle.randomizers.personalized import PersonalizedShuffle

    quantity = bounds.quantity
    payload: dict[str, object] = {"command": quantity}
    if isinstance(bounds.randomizer, PersonalizedShuffle):
        payload["randomizer"] = "personalized"
        payload["groups"] = [{"randomizer": randomizer.name,
                              "parameters": dict(randomizer.parameters), "users": count}
                             for randomizer, count in bounds.randomizer.groups]
    else:
        payload["randomizer"] = bounds.randomizer.name
        payload["parameters"] = dict(bounds.randomizer.parameters)
    payload.update({"users": bounds.users, LEVEL_OPTION[quantity]: bounds.level,
                    f"{quantity}_upper": bounds.upper, "seconds_upper": bounds.upper_seconds})
    if bounds.sampling_probability is not None:
        payload["sampling_probability"] = bounds.sampling_probability
    if bounds.sample_size is not None:
        payload["sample_size"] = bounds.sample_size
    status = bounds.lower_status
    key = f"{quantity}_lower"
    if status is LowerBoundStatus.NOT_REQUESTED:
        return payload
    if bounds.lower_seconds is not None:
        payload["seconds_lower"] = bounds.lower_seconds
    payload[key] = bounds.lower
    if status is LowerBoundStatus.ABOVE_MAX_USERS:
        payload["lower_skipped"] = f"n > lower_max_users = {bounds.lower_max_users}"
    elif status is LowerBoundStatus.EVALUATION_FAILED:
        payload["lower_unavailable"] = f"the instance evaluated to NaN at n = {bounds.users}"
    return payload


def _lower_text(bounds: RoundBounds) -> str:
    from dpacct_shuffle.shuffle_round import LowerBoundStatus

    status = bounds.lower_status
    if status is LowerBoundStatus.COMPUTED and bounds.lower is not None:
        return f"{format_lower(bounds.lower)}   (explicit instance)"
    if status is LowerBoundStatus.SAMPLED_ROUND:
        return "not available for a client-sampled round (Poisson or fixed-size cohort)"
    if status is LowerBoundStatus.ABOVE_MAX_USERS:
        return (f"skipped for n > {bounds.lower_max_users} (slow at this n; raise "
                "--lower-max-users to compute it)")
    if status is LowerBoundStatus.EVALUATION_FAILED:
        return "not available at this n (the instance's evaluation failed)"
    return "not available for this entry"


def write_round(bounds: RoundBounds, out: TextIO) -> None:
    """The setting, the upper bound (rounded up) and the lower bound (rounded down) as text."""
    from dpacct_shuffle.shuffle_round import LowerBoundStatus

    quantity = bounds.quantity
    if bounds.sample_size is not None:
        setting = (f"population n = {bounds.users}, a cohort of {bounds.sample_size} drawn "
                   "without replacement")
    elif bounds.sampling_probability is None:
        setting = f"n = {bounds.users}"
    else:
        setting = (f"population n = {bounds.users}, each reporting with probability "
                   f"{bounds.sampling_probability:g}")
    out.write(f"{describe_randomizer(bounds.randomizer)}, {setting}, "
              f"{LEVEL_OPTION[quantity]} = {bounds.level:g}\n")
    out.write(f"{quantity} upper bound: {format_upper(bounds.upper)}   "
              f"({bounds.upper_seconds:.2f} s)\n")
    if bounds.lower_status is not LowerBoundStatus.NOT_REQUESTED:
        out.write(f"{quantity} lower bound: {_lower_text(bounds)}\n")


__all__ = ["LEVEL_OPTION", "round_bounds_from_args", "round_payload", "write_round"]
