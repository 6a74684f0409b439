"""``dpacct-shuffle plot``: ε vs n, ε vs ε0, a campaign's ε vs its rounds, or each randomizer's
error vs the campaign's total ε as a figure (matplotlib, the ``plot`` extra)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from dpacct_shuffle.cli.errors import EXIT_OK, UsageError
from dpacct_shuffle.cli.output import emit_json
from dpacct_shuffle.cli.parser import randomizer_params, show_progress

if TYPE_CHECKING:
    from dpacct_shuffle.plots import Curve


def cmd_plot(args: argparse.Namespace, out: TextIO) -> int:
    """``plot``: ε vs n (``--users-list``), ε vs ε0 (``--x epsilon0 --epsilon0-list``), ε vs R
    (``--x rounds``) or error vs total ε (``--x epsilon``) to PNG/SVG/PDF
    (:mod:`dpacct_shuffle.plots`).

    Every argument is validated (exit 2) and the output directory checked (exit 1) before
    matplotlib is looked for (exit 1 with the install hint) and before the sweep starts.
    """
    from dpacct_shuffle import plots
    from dpacct_shuffle.core.validation import check_delta
    from dpacct_shuffle.randomizers.spec import build_randomizer, randomizer_factory

    suffix = Path(args.output).suffix.lower()
    if suffix not in (".png", ".svg", ".pdf"):
        raise UsageError(f"--output must end in .png, .svg or .pdf, got {args.output!r}")
    names = args.randomizer or []
    if args.x == "epsilon":
        return _error_vs_epsilon(args, out, names)
    if not names:
        raise UsageError("plot needs at least one --randomizer NAME")
    delta = check_delta(args.delta, "--delta")
    params = randomizer_params(args, without_epsilon0=True)
    if args.x == "users":
        users_list = plots.check_users_list(args.users_list, "--users-list")
        shared = params if args.epsilon0 is None else {**params, "epsilon0": args.epsilon0}
        entries = {name: build_randomizer(name, shared, lenient=True) for name in names}
    elif args.x == "rounds":
        if args.users is None or args.epsilon0 is None:
            raise UsageError("plot --x rounds needs --users N and --epsilon0")
        shared = {**params, "epsilon0": args.epsilon0}
        entries = {name: build_randomizer(name, shared, lenient=True) for name in names}
    else:
        if args.users is None:
            raise UsageError("plot --x epsilon0 needs --users N")
        epsilon0_list = plots.check_epsilon0_list(args.epsilon0_list, "--epsilon0-list")
        factories = {name: randomizer_factory(name, params, lenient=True) for name in names}
    plots.check_output_path(args.output)
    plots.require_matplotlib()  # fail before a long sweep
    progress = show_progress(args)
    start = time.perf_counter()
    if args.x == "rounds":
        curves = plots.epsilon_vs_rounds(entries, args.rounds_list, args.users, delta,
                                         sampling_probability=args.sampling_probability,
                                         progress=progress)
    elif args.x == "users":
        curves = plots.epsilon_vs_users(entries, users_list, delta, lower=not args.no_lower,
                                        fmt=not args.no_fmt, published=args.compare,
                                        progress=progress)
    else:
        curves = plots.epsilon_vs_epsilon0(factories, epsilon0_list, args.users, delta,
                                           lower=not args.no_lower, fmt=not args.no_fmt,
                                           published=args.compare, progress=progress)
    if args.x == "rounds":
        setting = f", n = {args.users}, eps0 = {args.epsilon0:g}"
    elif args.x == "epsilon0":
        setting = f", n = {args.users}"
    else:
        setting = "" if args.epsilon0 is None else f", eps0 = {args.epsilon0:g}"
    title = args.title or f"shuffle model, delta = {args.delta:g}{setting}"
    return _draw(args, out, curves, title, start)


def _error_vs_epsilon(args: argparse.Namespace, out: TextIO, names: list[str]) -> int:
    """``plot --x epsilon``: every applicable randomizer (or those of ``--randomizer``) calibrated
    at each total ε of ``--epsilon-list`` (:func:`dpacct_shuffle.plots.error_vs_epsilon`)."""
    from dpacct_shuffle import plots
    from dpacct_shuffle.core.validation import check_delta

    if args.users is None:
        raise UsageError("plot --x epsilon needs --users N")
    if (args.domain is None) == (args.range is None):
        raise UsageError("plot --x epsilon needs exactly one of --domain D (frequency "
                         "estimation) or --range A B (the mean of values in [A, B])")
    delta = check_delta(args.delta, "--delta")
    epsilons = plots.check_epsilon0_list(args.epsilon_list, "--epsilon-list")
    plots.check_output_path(args.output)
    plots.require_matplotlib()  # fail before a long sweep
    start = time.perf_counter()
    curves = plots.error_vs_epsilon(
        epsilons, args.users, delta, domain_size=args.domain,
        value_range=None if args.range is None else tuple(args.range), rounds=args.rounds,
        candidates=names or None, sampling_probability=args.sampling_probability,
        progress=show_progress(args))
    sampled = ("" if args.sampling_probability is None
               else f", sampled {args.sampling_probability:g}")
    what = f"d = {args.domain}" if args.domain is not None else f"values in {list(args.range)}"
    title = args.title or (f"{args.rounds} round(s) of {args.users} users{sampled}, {what}, "
                           f"delta = {args.delta:g}")
    return _draw(args, out, curves, title, start)


def _draw(args: argparse.Namespace, out: TextIO, curves: list[Curve], title: str,
          start: float) -> int:
    """Draw ``curves`` to ``--output`` and report the file (and, with ``--json``, the curves)."""
    from dpacct_shuffle import plots

    path = plots.draw_curves(curves, args.output, title=title)
    payload = {"command": "plot", "output": str(path), "seconds": time.perf_counter() - start,
               "curves": [curve.as_dict() for curve in curves]}
    if args.json:
        emit_json(payload, out)
    else:
        out.write(f"wrote {path} ({len(curves)} curve(s), {payload['seconds']:.1f} s)\n")
    return EXIT_OK
