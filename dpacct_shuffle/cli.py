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

Every sub-command accepts ``--json`` (one JSON object on stdout). Exit codes: 0 success;
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
"""

from __future__ import annotations

import argparse
import decimal
import inspect
import json
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

PROG = "dpacct-shuffle"
EXIT_OK = 0
EXIT_RUNTIME = 1
EXIT_BAD_INPUT = 2
DISPLAY_DIGITS = 6
LOWER_BOUND_MAX_USERS = 10**7  # = randomizers.LOWER_BOUND_MAX_USERS (not imported: lean --help)
MAX_RANGE_COUNT = 1000

class UsageError(ValueError):
    """Bad command-line input detected by the CLI itself (reported like a library ValueError)."""


class MissingDependencyError(RuntimeError):
    """An optional dependency needed by a sub-command is not installed."""


# ---------------------------------------------------------------------------------------------
# number formatting and parsing
# ---------------------------------------------------------------------------------------------


def _round_significant(value: float, digits: int, rounding: str) -> str:
    if not math.isfinite(value):
        return repr(value)
    if value == 0.0:
        return "0"
    exact = decimal.Decimal(value)  # the float's exact binary value, no rounding yet
    quantum = decimal.Decimal(1).scaleb(exact.adjusted() - digits + 1)
    rounded = exact.quantize(quantum, rounding=rounding).normalize()
    scientific = rounded.adjusted() < -4 or rounded.adjusted() >= digits
    return format(rounded, "e" if scientific else "f")


def format_upper(value: float, digits: int = DISPLAY_DIGITS) -> str:
    """``value`` to ``digits`` significant digits, rounded towards +∞ (printed upper bounds stay
    upper bounds: the printed number is ≥ the computed one)."""
    return _round_significant(float(value), digits, decimal.ROUND_CEILING)


def format_lower(value: float, digits: int = DISPLAY_DIGITS) -> str:
    """``value`` to ``digits`` significant digits, rounded towards −∞ (printed lower bounds stay
    lower bounds)."""
    return _round_significant(float(value), digits, decimal.ROUND_FLOOR)


def positive_integer(what: str) -> Callable[[str], int]:
    """Parser of a positive integer option given as ``"1000"``, ``"1e6"`` or ``"1_000_000"``;
    errors say ``what`` must be a positive integer (argparse adds the option's name)."""

    def parse(text: str) -> int:
        cleaned = text.strip().replace("_", "")
        try:
            value = int(cleaned)
        except ValueError:
            try:
                number = float(cleaned)
            except ValueError:
                number = math.nan
            if not math.isfinite(number) or not number.is_integer():
                raise argparse.ArgumentTypeError(
                    f"{what} must be a positive integer, got {text!r}") from None
            value = int(number)
        if value < 1:
            raise argparse.ArgumentTypeError(f"{what} must be a positive integer (>= 1), got {text!r}")
        return value

    return parse


parse_users = positive_integer("number of users")
parse_domain = positive_integer("domain size")
parse_limit = positive_integer("limit")


def parse_real(text: str) -> float:
    """A finite real number (``nan``/``inf`` rejected)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a real number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite real number, got {text!r}")
    return value


def parse_list(convert: Callable[[str], Any], *, log_spaced: bool = False
               ) -> Callable[[str], list[Any]]:
    """Comma-separated list (``"1e3,1e4,1e5"``) or a range ``"start:stop:count"`` with
    2 <= count <= :data:`MAX_RANGE_COUNT` (log-spaced integers if ``log_spaced``, else linear)."""

    def parse(text: str) -> list[Any]:
        if ":" in text:
            if text.count(":") != 2:
                raise argparse.ArgumentTypeError(
                    f"a range is start:stop:count (e.g. 1e3:1e5:5), got {text!r}")
            start_s, stop_s, count_s = text.split(":")
            start, stop = convert(start_s), convert(stop_s)
            try:
                count = int(count_s)
            except ValueError:
                raise argparse.ArgumentTypeError(
                    f"the count of start:stop:count must be an integer, got {count_s!r}") from None
            if not 2 <= count <= MAX_RANGE_COUNT:
                raise argparse.ArgumentTypeError(
                    f"the count of start:stop:count must be in [2, {MAX_RANGE_COUNT}], got {count}")
            if log_spaced:
                ratio = (stop / start) ** (1.0 / (count - 1))
                return sorted({int(round(start * ratio ** i)) for i in range(count)})
            step = (stop - start) / (count - 1)
            return [start + i * step for i in range(count)]
        items = [item for item in text.split(",") if item.strip()]
        if not items:
            raise argparse.ArgumentTypeError(
                f"expected a comma-separated list or start:stop:count, got {text!r}")
        return [convert(item) for item in items]

    return parse


def parse_param(text: str) -> tuple[str, object]:
    """``NAME=VALUE`` for ``--param`` (VALUE parsed as int, float, true/false, else string)."""
    from dpacct_shuffle.randomizers.spec import parse_assignment

    try:
        return parse_assignment(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--param: {exc}") from None


# ---------------------------------------------------------------------------------------------
# randomizers: catalog entries and matrices (parsing rules in dpacct_shuffle.randomizers.spec)
# ---------------------------------------------------------------------------------------------


def randomizer_from_args(args: argparse.Namespace) -> Any:
    """The randomizer selected by ``--randomizer NAME [params]`` or ``--matrix FILE``."""
    from dpacct_shuffle.randomizers import from_matrix
    from dpacct_shuffle.randomizers.spec import build_randomizer, read_matrix

    if args.matrix is not None:
        if args.randomizer is not None:
            raise UsageError("give either --randomizer or --matrix, not both")
        return from_matrix(read_matrix(args.matrix), name=Path(args.matrix).stem)
    if args.randomizer is None:
        raise UsageError("one of --randomizer NAME or --matrix FILE is required")
    return build_randomizer(args.randomizer, randomizer_params(args))


def randomizer_params(args: argparse.Namespace, *, without_epsilon0: bool = False) -> dict[str, object]:
    """The catalog parameters given on the command line (--epsilon0, --domain, --param)."""
    params: dict[str, object] = {}
    if getattr(args, "epsilon0", None) is not None and not without_epsilon0:
        params["epsilon0"] = args.epsilon0
    if getattr(args, "domain", None) is not None:
        params["domain"] = args.domain
    for name, value in getattr(args, "param", None) or []:
        params[name] = value
    return params


def _describe(randomizer: Any) -> str:
    params = ", ".join(f"{k}={v}" for k, v in randomizer.parameters.items())
    return f"{randomizer.name}({params})"


# ---------------------------------------------------------------------------------------------
# progress
# ---------------------------------------------------------------------------------------------


def _show_progress(args: argparse.Namespace) -> bool:
    """Progress bars (tqdm, on stderr) unless ``--quiet`` or stderr is not a terminal."""
    from dpacct_shuffle.progress import is_terminal

    return not getattr(args, "quiet", False) and is_terminal()


# ---------------------------------------------------------------------------------------------
# output
# ---------------------------------------------------------------------------------------------


def _json_default(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item"):
        return value.item()  # numpy scalars
    return str(value)


def _clean(value: object) -> object:
    """Replace non-finite floats by None (JSON has no inf/nan), recursively."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def _emit_json(payload: Mapping[str, object], out: TextIO) -> None:
    out.write(json.dumps(_clean(payload), default=_json_default, indent=2) + "\n")


# ---------------------------------------------------------------------------------------------
# sub-commands
# ---------------------------------------------------------------------------------------------


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
        _emit_json(payload, out)
        return EXIT_OK
    out.write(f"{_describe(randomizer)}, {_round_setting(args)}, delta = {args.delta:g}\n")
    out.write(f"epsilon upper bound: {format_upper(upper)}   ({upper_seconds:.2f} s)\n")
    if lower_text:
        out.write(f"epsilon lower bound: {lower_text}\n")
    if args.compare:
        out.write("FMT closed form (any eps0-LDP randomizer): "
                  + (format_upper(fmt_value) if fmt_value is not None else "n/a") + "\n")
        if published is not None:
            out.write(f"published pair, Wang et al. 2023 (NOT a guarantee): {published:.6g}\n")
    return EXIT_OK


def cmd_delta(args: argparse.Namespace, out: TextIO) -> int:
    """``delta``: certified δ(ε) upper bound and the lower bound."""
    randomizer, shuffled, upper, seconds, payload = _upper_bound(
        args, "delta", "epsilon", lambda shuffled: shuffled.delta(args.epsilon))
    lower_text = _lower_bound(shuffled, args, lambda: shuffled.delta_lower(args.epsilon), payload,
                              "delta_lower")
    if args.json:
        _emit_json(payload, out)
        return EXIT_OK
    out.write(f"{_describe(randomizer)}, {_round_setting(args)}, epsilon = {args.epsilon:g}\n")
    out.write(f"delta upper bound: {format_upper(upper)}   ({seconds:.2f} s)\n")
    if lower_text:
        out.write(f"delta lower bound: {lower_text}\n")
    return EXIT_OK


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
    with ProgressReporter(None, "calibrate", _show_progress(args), unit="evaluation") as progress:
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
                    f"<= {args.delta:g} for {_describe(randomizer)})")
    payload["seconds"] = time.perf_counter() - start
    if args.json:
        _emit_json(payload, out)
    else:
        out.write(text + "\n")
    return EXIT_OK


def variation_ratio_parameters(vr: Any) -> dict[str, float]:
    """The attributes of a :class:`~dpacct_shuffle.VariationRatio` as a plain dict."""
    return {"p": vr.p, "epsilon0": vr.epsilon0, "beta": vr.beta, "q0": vr.q0, "q1": vr.q1,
            "alpha": vr.alpha, "p_alpha": vr.p_alpha, "neutral_mass": vr.neutral_mass,
            "r0": vr.r0, "r1": vr.r1, "neutral_share": vr.neutral_share,
            "neutral_weight": vr.neutral_weight, "rest_share": vr.rest_share}


def cmd_params(args: argparse.Namespace, out: TextIO) -> int:
    """``params``: variation-ratio parameters of a catalog entry or a matrix file."""
    randomizer = randomizer_from_args(args)
    summary = randomizer.variation_ratio
    cover = [variation_ratio_parameters(vr) for vr in randomizer.variation_ratios]
    payload: dict[str, object] = {
        "command": "params", "randomizer": randomizer.name,
        "parameters": dict(randomizer.parameters),
        "variation_ratio": None if summary is None else variation_ratio_parameters(summary),
        "cover": cover, "published": randomizer.published, "notes": randomizer.notes,
    }
    if args.json:
        _emit_json(payload, out)
        return EXIT_OK
    out.write(f"{_describe(randomizer)}\n")
    if summary is None:
        out.write("variation ratio valid for every victim pair: none (unbounded ratio)\n")
    else:
        out.write("variation ratio valid for every victim pair:\n")
        for key, value in variation_ratio_parameters(summary).items():
            out.write(f"  {key:14s} {value!r}\n")
    if cover and (len(cover) > 1 or summary is None
                  or cover[0] != variation_ratio_parameters(summary)):
        out.write(f"cover: {len(cover)} parameter set(s) for classes of victim pairs (the shuffled "
                  "bound is the max over classes, the min over one class's candidates):\n")
        for entry in cover:
            out.write("  " + ", ".join(f"{k}={entry[k]:.6g}" for k in
                                       ("p", "beta", "q0", "q1", "r0", "r1", "neutral_share",
                                        "neutral_weight")) + "\n")
    if randomizer.published is not None:
        p, beta, q, q1 = randomizer.published
        out.write(f"published (Wang et al. 2023 table): p={p!r}, beta={beta!r}, q={q!r}, q1={q1!r}\n")
    if randomizer.notes:
        out.write(f"notes: {randomizer.notes}\n")
    return EXIT_OK


# -- account ------------------------------------------------------------------------------------


def cmd_account(args: argparse.Namespace, out: TextIO) -> int:
    """``account``: ε/δ of a pipeline file through the PLD accountant, per step and in total."""
    from dpacct_shuffle.pipeline import account_pipeline, load_pipeline

    overrides = {key: value for key, value in (("delta", args.delta), ("epsilon", args.epsilon))
                 if value is not None}
    pipeline = load_pipeline(args.pipeline, overrides=overrides)
    start = time.perf_counter()
    result = account_pipeline(pipeline, progress=_show_progress(args))
    seconds = time.perf_counter() - start
    payload: dict[str, object] = {"command": "account", "pipeline": str(args.pipeline),
                                  "steps": len(result.steps)}
    if result.target_delta is not None:
        payload.update({"delta": result.target_delta, "epsilon": result.epsilon})
    if result.target_epsilon is not None:
        payload.update({"epsilon_target": result.target_epsilon, "delta_at_epsilon": result.delta})
    payload.update({"per_step": [step.as_dict() for step in result.steps], "seconds": seconds})
    if args.json:
        _emit_json(payload, out)
        return EXIT_OK
    out.write(f"pipeline {args.pipeline}: {len(result.steps)} step(s), ShufflePLDAccountant "
              "(replace-one)\n")
    for step in result.steps:
        repeat = f" x{step.count}" if step.count > 1 else ""
        values = []
        if step.epsilon is not None:
            values.append(f"epsilon {format_upper(step.epsilon)}")
        if step.delta is not None:
            values.append(f"delta {format_upper(step.delta)}")
        out.write(f"  steps[{step.index}]{repeat} {step.description}: {', '.join(values)}\n")
    if result.epsilon is not None:
        out.write(f"epsilon: {format_upper(result.epsilon)}  at delta = {result.target_delta:g}\n")
    if result.delta is not None:
        out.write(f"delta: {format_upper(result.delta)}  at epsilon = {result.target_epsilon:g}\n")
    return EXIT_OK


# -- plot ---------------------------------------------------------------------------------------


def cmd_plot(args: argparse.Namespace, out: TextIO) -> int:
    """``plot``: ε vs n (``--users LIST``) or ε vs ε0 (``--epsilon0s LIST``) to PNG/SVG.

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
    if not names:
        raise UsageError("plot needs at least one --randomizer NAME")
    delta = check_delta(args.delta, "--delta")
    params = randomizer_params(args, without_epsilon0=True)
    if args.x == "users":
        users_list = plots.check_users_list(args.users_list, "--users-list")
        shared = params if args.epsilon0 is None else {**params, "epsilon0": args.epsilon0}
        entries = {name: build_randomizer(name, shared, lenient=True) for name in names}
    else:
        if args.users is None:
            raise UsageError("plot --x epsilon0 needs --users N")
        epsilon0_list = plots.check_epsilon0_list(args.epsilon0_list, "--epsilon0-list")
        factories = {name: randomizer_factory(name, params, lenient=True) for name in names}
    plots.check_output_path(args.output)
    plots.require_matplotlib()  # fail before a long sweep
    progress = _show_progress(args)
    start = time.perf_counter()
    if args.x == "users":
        curves = plots.epsilon_vs_users(entries, users_list, delta, lower=not args.no_lower,
                                        fmt=not args.no_fmt, progress=progress)
    else:
        curves = plots.epsilon_vs_epsilon0(factories, epsilon0_list, args.users, delta,
                                           lower=not args.no_lower, fmt=not args.no_fmt,
                                           progress=progress)
    if args.x == "epsilon0":
        setting = f", n = {args.users}"
    else:
        setting = "" if args.epsilon0 is None else f", eps0 = {args.epsilon0:g}"
    title = args.title or f"shuffle model, delta = {args.delta:g}{setting}"
    path = plots.draw_curves(curves, args.output, title=title)
    payload = {"command": "plot", "output": str(path), "seconds": time.perf_counter() - start,
               "curves": [curve.as_dict() for curve in curves]}
    if args.json:
        _emit_json(payload, out)
    else:
        out.write(f"wrote {path} ({len(curves)} curve(s), {payload['seconds']:.1f} s)\n")
    return EXIT_OK


# ---------------------------------------------------------------------------------------------
# parser
# ---------------------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line ``dpacct-shuffle: error: ...`` and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{PROG}: error: {message} (see {self.prog} --help)\n")


_EXAMPLES = {
    "main": """examples:
  dpacct-shuffle epsilon --randomizer krr --epsilon0 2 --domain 100 --users 1e6 --delta 1e-8
  dpacct-shuffle delta --randomizer worst_case_ldp --epsilon0 1 --users 1e4 --epsilon 0.1
  dpacct-shuffle calibrate --randomizer krr --domain 100 --users 1e5 --target-epsilon 0.5 --delta 1e-8
  dpacct-shuffle params --matrix my_randomizer.csv
  dpacct-shuffle account pipeline.toml --json
  dpacct-shuffle plot --randomizer krr --domain 100 --epsilon0 2 --users-list 1e3:1e5:5 --output eps.png

exit codes: 0 ok; 2 bad input (one line on stderr); 1 missing optional dependency or file error.""",
    "epsilon": """examples:
  dpacct-shuffle epsilon --randomizer krr --epsilon0 2 --domain 100 --users 1e6 --delta 1e-8
  dpacct-shuffle epsilon --randomizer worst_case_ldp --epsilon0 1 --users 1e4 --delta 1e-6 --compare
  dpacct-shuffle epsilon --matrix rr3.csv --users 1e4 --delta 1e-8 --json""",
    "delta": """examples:
  dpacct-shuffle delta --randomizer krr --epsilon0 2 --domain 10 --users 1e4 --epsilon 0.3""",
    "calibrate": """examples:
  # largest eps0 such that 1e5 users get (0.5, 1e-8)-DP
  dpacct-shuffle calibrate --randomizer krr --domain 100 --users 1e5 --target-epsilon 0.5 --delta 1e-8
  # smallest number of users for (0.5, 1e-8)-DP at eps0 = 2
  dpacct-shuffle calibrate --randomizer krr --domain 100 --epsilon0 2 --target-epsilon 0.5 --delta 1e-8""",
    "params": """examples:
  dpacct-shuffle params --randomizer krr --epsilon0 2 --domain 100
  dpacct-shuffle params --matrix rr3.csv --json     # CSV rows = inputs, columns = outputs""",
    "account": """pipeline file (JSON, or TOML on Python >= 3.11):
  delta = 1e-8
  [[steps]]
  type = "shuffle"          # also: parallel, ldp, dpsgd, gaussian
  randomizer = { name = "krr", epsilon0 = 2, domain_size = 100 }
  users = 100000
  count = 10
  [[steps]]
  type = "dpsgd"
  noise_multiplier = 1.1
  sampling_probability = 0.01
  steps = 1000

examples:
  dpacct-shuffle account pipeline.toml
  dpacct-shuffle account pipeline.json --delta 1e-6 --json""",
    "plot": """examples:
  dpacct-shuffle plot --randomizer krr --randomizer worst_case_ldp --domain 100 --epsilon0 2 \\
      --users-list 1e3:1e5:6 --delta 1e-8 --output eps_vs_n.png
  dpacct-shuffle plot --x epsilon0 --randomizer krr --domain 100 --users 1e4 \\
      --epsilon0-list 0.5:4:8 --delta 1e-8 --output eps_vs_eps0.svg""",
}


def _add_randomizer_options(parser: argparse.ArgumentParser, *, multiple: bool = False,
                            epsilon0_help: str = "local privacy parameter eps0 of the catalog entry") -> None:
    group = parser.add_argument_group("randomizer")
    if multiple:
        group.add_argument("--randomizer", action="append", metavar="NAME[:k=v,...]",
                           help="catalog entry (repeat for several), e.g. krr:domain_size=10 or "
                           "worst_case_ldp; shared options (--domain, --param) apply to the "
                           "entries that take them")
    else:
        group.add_argument("--randomizer", metavar="NAME",
                           help="catalog entry, e.g. krr, worst_case_ldp (see `params --list`)")
        group.add_argument("--matrix", metavar="FILE",
                           help="randomizer matrix, CSV or JSON (rows = inputs, columns = outputs)")
    group.add_argument("--epsilon0", type=parse_real, metavar="EPS0", help=epsilon0_help)
    group.add_argument("--domain", type=parse_domain, metavar="D", help="domain size of the entry")
    group.add_argument("--param", type=parse_param, action="append", metavar="NAME=VALUE",
                       help="any other parameter of the catalog entry (repeatable)")


def _add_sampling_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sampling-probability", type=parse_real, metavar="GAMMA",
                        help="client sampling: each of the N users reports with probability GAMMA "
                             "(replace-one; the PLD accountant's value)")


def _add_lower_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-lower", action="store_true", help="skip the lower bound")
    parser.add_argument("--lower-max-users", type=parse_limit, default=LOWER_BOUND_MAX_USERS,
                        metavar="N", help="compute the lower bound only for n <= N (default 1e7; "
                        "it takes ~2 s at n = 1e6, ~15 s at 1e7, minutes at 1e8)")


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON object (unrounded floats)")


def build_parser() -> argparse.ArgumentParser:
    """The ``dpacct-shuffle`` argument parser (sub-commands epsilon, delta, calibrate, params,
    account, plot)."""
    formatter = argparse.RawDescriptionHelpFormatter
    parser = _Parser(prog=PROG, description="Sound privacy accounting for the shuffle model "
                     "(neutral-aware variation-ratio bounds).", epilog=_EXAMPLES["main"],
                     formatter_class=formatter)
    from dpacct_shuffle import __version__

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    p = sub.add_parser("epsilon", help="certified epsilon(delta) of one shuffle round",
                       description="Certified upper bound on epsilon at a given delta for n users "
                       "each sending one report; the certified lower bound of an explicit instance "
                       "is printed where available.", epilog=_EXAMPLES["epsilon"],
                       formatter_class=formatter)
    _add_randomizer_options(p)
    p.add_argument("--users", "-n", type=parse_users, required=True, metavar="N", help="number of users (1e6 ok)")
    p.add_argument("--delta", type=parse_real, required=True, help="target delta in (0, 1)")
    _add_lower_options(p)
    p.add_argument("--compare", action="store_true",
                   help="also print the FMT closed form and the published pair (labelled)")
    _add_sampling_option(p)
    _add_common(p)
    p.set_defaults(handler=cmd_epsilon)

    p = sub.add_parser("delta", help="certified delta(epsilon) of one shuffle round",
                       description="Certified upper bound on delta at a given epsilon (and the "
                       "lower bound of an explicit instance).", epilog=_EXAMPLES["delta"],
                       formatter_class=formatter)
    _add_randomizer_options(p)
    p.add_argument("--users", "-n", type=parse_users, required=True, metavar="N")
    p.add_argument("--epsilon", type=parse_real, required=True, help="epsilon >= 0")
    _add_sampling_option(p)
    _add_lower_options(p)
    _add_common(p)
    p.set_defaults(handler=cmd_delta)

    p = sub.add_parser("calibrate", help="largest eps0 or smallest n for a target (epsilon, delta)",
                       description="With --users: the largest eps0 of the entry whose shuffled "
                       "certified delta(target) <= delta. With --epsilon0 (or --matrix): the smallest "
                       "number of users achieving it.", epilog=_EXAMPLES["calibrate"],
                       formatter_class=formatter)
    _add_randomizer_options(p, epsilon0_help="fix eps0 and search the number of users")
    p.add_argument("--users", "-n", type=parse_users, metavar="N", help="fix n and search eps0")
    p.add_argument("--target-epsilon", type=parse_real, required=True)
    p.add_argument("--delta", type=parse_real, required=True)
    p.add_argument("--max-epsilon0", type=parse_real, default=20.0,
                   help="search eps0 in [target, this] (default 20)")
    p.add_argument("--max-users", type=parse_limit, help="search n up to this (default 1e10)")
    p.add_argument("--rtol", type=parse_real, default=1e-3, help="relative tolerance of the eps0 search")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_common(p)
    p.set_defaults(handler=cmd_calibrate)

    p = sub.add_parser("params", help="variation-ratio parameters of an entry or matrix",
                       description="Variation-ratio parameters (p, beta, q0, q1, alpha, r0, r1, "
                       "neutral share s) of a catalog entry or of a matrix file.",
                       epilog=_EXAMPLES["params"], formatter_class=formatter)
    _add_randomizer_options(p)
    p.add_argument("--list", action="store_true", help="list the catalog entries and their parameters")
    _add_common(p)
    p.set_defaults(handler=cmd_params_or_list)

    p = sub.add_parser("account", help="epsilon of a pipeline file (PLD accountant)",
                       description="Compose a pipeline (shuffle rounds, parallel rounds, LDP reports, "
                       "DP-SGD steps) with ShufflePLDAccountant (replace-one neighbours).",
                       epilog=_EXAMPLES["account"], formatter_class=formatter)
    p.add_argument("pipeline", help="pipeline file (.json or .toml)")
    p.add_argument("--delta", type=parse_real, help="override the file's delta")
    p.add_argument("--epsilon", type=parse_real, help="also/instead report delta at this epsilon")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_common(p)
    p.set_defaults(handler=cmd_account)

    p = sub.add_parser("plot", help="epsilon vs n or vs eps0 (needs matplotlib)",
                       description="Upper bound, lower bound and FMT closed form on one figure.",
                       epilog=_EXAMPLES["plot"], formatter_class=formatter)
    _add_randomizer_options(p, multiple=True)
    p.add_argument("--x", choices=("users", "epsilon0"), default="users", help="x axis (default users)")
    p.add_argument("--users-list", type=parse_list(parse_users, log_spaced=True), default=[10**3, 10**4, 10**5],
                   metavar="LIST", help="n values: 1e3,1e4 or start:stop:count (log-spaced)")
    p.add_argument("--users", "-n", type=parse_users, metavar="N", help="n for --x epsilon0")
    p.add_argument("--epsilon0-list", type=parse_list(parse_real), default=[0.5, 1.0, 2.0, 3.0, 4.0],
                   metavar="LIST", help="eps0 values: 0.5,1,2 or start:stop:count")
    p.add_argument("--delta", type=parse_real, default=1e-8, help="delta (default 1e-8)")
    p.add_argument("--output", "-o", required=True, help="output file (.png, .svg or .pdf)")
    p.add_argument("--title", help="figure title")
    p.add_argument("--no-lower", action="store_true", help="omit the lower bound")
    p.add_argument("--no-fmt", action="store_true", help="omit the FMT closed form")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_common(p)
    p.set_defaults(handler=cmd_plot)
    return parser


def cmd_params_or_list(args: argparse.Namespace, out: TextIO) -> int:
    """``params`` (or ``params --list``: the catalog entries with their parameters)."""
    if not args.list:
        return cmd_params(args, out)
    from dpacct_shuffle.randomizers.spec import catalog_factory, catalog_names

    entries = {}
    for name in catalog_names():
        factory = catalog_factory(name)
        signature = inspect.signature(factory)
        first_paragraph = (inspect.getdoc(factory) or "").split("\n\n")[0]
        entries[name] = {"parameters": [str(p) for p in signature.parameters.values()],
                         "summary": " ".join(first_paragraph.split())}
    if args.json:
        _emit_json({"command": "params", "catalog": entries}, out)
        return EXIT_OK
    for name, entry in entries.items():
        out.write(f"{name}({', '.join(entry['parameters'])})\n    {entry['summary']}\n")
    return EXIT_OK


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None,
         stderr: TextIO | None = None) -> int:
    """Run ``dpacct-shuffle`` with ``argv`` (default ``sys.argv[1:]``) and return the exit code.

    ``ValueError``/``TypeError`` from the library and the CLI become one line
    ``dpacct-shuffle: error: ...`` on stderr and exit code 2.
    """
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    parser = build_parser()
    saved = sys.stdout, sys.stderr
    try:
        sys.stdout, sys.stderr = out, err  # argparse writes help/errors to sys.std*
        try:
            args = parser.parse_args(list(argv) if argv is not None else None)
        except SystemExit as exc:
            return int(exc.code) if isinstance(exc.code, int) else EXIT_BAD_INPUT
        try:
            return int(args.handler(args, out))
        except (ValueError, TypeError) as exc:
            err.write(f"{PROG}: error: {_one_line(exc)}\n")
            return EXIT_BAD_INPUT
        except ArithmeticError as exc:  # overflow or division by zero: inputs beyond float range
            err.write(f"{PROG}: error: numbers out of the supported range "
                      f"({type(exc).__name__}: {_one_line(exc)})\n")
            return EXIT_BAD_INPUT
        except (MissingDependencyError, ImportError, OSError) as exc:
            err.write(f"{PROG}: error: {_one_line(exc)}\n")
            return EXIT_RUNTIME
    finally:
        sys.stdout, sys.stderr = saved


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
