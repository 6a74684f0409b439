"""Command line interface ``dpacct-shuffle`` (argparse, no extra dependency).

Sub-commands (``dpacct-shuffle COMMAND --help`` shows examples):

* ``epsilon``   — certified ε(δ) upper bound of one shuffle round, and the certified lower bound
  (explicit instance, :mod:`dpacct_shuffle.randomizers.exact`) where the entry has one;
* ``delta``     — certified δ(ε) upper bound (and lower bound);
* ``calibrate`` — largest ε0 (or smallest number of users n) meeting a target (ε, δ);
* ``params``    — the variation-ratio parameters (p, β, q0, q1, α, r0, r1, s) of a catalog entry or
  of a randomizer matrix read from a CSV/JSON file;
* ``account``   — ε (or δ) of a pipeline (shuffle rounds, parallel rounds, LDP reports, DP-SGD
  steps) described in a JSON or TOML file, via :class:`~dpacct_shuffle.accountants.ShufflePLDAccountant`;
* ``plot``      — ε vs n or ε vs ε0 (upper bound, lower bound, FMT closed form) as PNG/SVG
  (needs matplotlib, the ``plot`` extra).

Every sub-command accepts ``--json`` (one JSON object on stdout). Exit codes: 0 success;
2 bad input (argument errors and every ``ValueError``/``TypeError`` raised by the library, reported
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
import csv
import decimal
import inspect
import io
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
LOWER_BOUND_MAX_USERS = 10**7

# CLI flags that map onto a catalog factory's keyword, tried in this order
_PARAMETER_ALIASES: dict[str, tuple[str, ...]] = {
    "epsilon0": ("epsilon0", "eps0", "epsilon_0"),
    "domain": ("domain_size", "domain", "d", "k", "num_values"),
}


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


def parse_users(text: str) -> int:
    """Number of users from ``"1000"``, ``"1e6"`` or ``"1_000_000"`` (must be a positive integer)."""
    cleaned = text.strip().replace("_", "")
    try:
        value = int(cleaned)
    except ValueError:
        try:
            number = float(cleaned)
        except ValueError:
            raise argparse.ArgumentTypeError(f"number of users must be a positive integer, got {text!r}") from None
        if not math.isfinite(number) or not number.is_integer():
            raise argparse.ArgumentTypeError(f"number of users must be a positive integer, got {text!r}") from None
        value = int(number)
    if value < 1:
        raise argparse.ArgumentTypeError(f"number of users must be >= 1, got {text!r}")
    return value


def parse_real(text: str) -> float:
    """A finite real number (``nan``/``inf`` rejected)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a real number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite real number, got {text!r}")
    return value


def parse_list(convert: Callable[[str], Any]) -> Callable[[str], list[Any]]:
    """Comma-separated list (``"1e3,1e4,1e5"``) or a range ``"start:stop:count"`` (log-spaced for
    users, linear for reals)."""

    def parse(text: str) -> list[Any]:
        if text.count(":") == 2:
            start_s, stop_s, count_s = text.split(":")
            start, stop = convert(start_s), convert(stop_s)
            try:
                count = int(count_s)
            except ValueError:
                raise argparse.ArgumentTypeError(f"range count must be an integer, got {count_s!r}") from None
            if count < 2:
                raise argparse.ArgumentTypeError(f"range count must be >= 2, got {count}")
            if convert is parse_users:
                ratio = (stop / start) ** (1.0 / (count - 1))
                values = sorted({int(round(start * ratio ** i)) for i in range(count)})
                return values
            step = (stop - start) / (count - 1)
            return [start + i * step for i in range(count)]
        items = [item for item in text.split(",") if item.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"expected a non-empty list, got {text!r}")
        return [convert(item) for item in items]

    return parse


def _parse_scalar(text: str) -> object:
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def parse_param(text: str) -> tuple[str, object]:
    """``NAME=VALUE`` for ``--param`` (VALUE parsed as int, float, true/false, else string)."""
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"--param expects NAME=VALUE, got {text!r}")
    name, value = text.split("=", 1)
    if not name.strip():
        raise argparse.ArgumentTypeError(f"--param expects NAME=VALUE, got {text!r}")
    return name.strip(), _parse_scalar(value)


# ---------------------------------------------------------------------------------------------
# randomizers: catalog entries and matrices
# ---------------------------------------------------------------------------------------------


def _randomizers_module() -> Any:
    from dpacct_shuffle import randomizers

    return randomizers


def catalog_names() -> list[str]:
    """Names of the catalog factories (``dpacct_shuffle.randomizers.CATALOG``, e.g. ``krr``)."""
    return sorted(_randomizers_module().CATALOG)


def _factory(name: str) -> Callable[..., Any]:
    """Catalog factory called ``name`` or one of its aliases (``randomizers.ALIASES``, e.g. oue)."""
    module = _randomizers_module()
    names = catalog_names()
    canonical = module.ALIASES.get(name, name)
    if canonical not in names:
        raise UsageError(f"unknown randomizer {name!r}; available: {', '.join(names)} "
                         f"(aliases: {', '.join(sorted(module.ALIASES))}; or use --matrix FILE)")
    return module.CATALOG[canonical]


def _resolve_keywords(name: str, factory: Callable[..., Any], params: Mapping[str, object],
                      *, lenient: bool = False, complete: bool = True) -> dict[str, object]:
    """Map CLI parameter names (incl. the aliases --epsilon0, --domain) onto the factory's keywords.

    ``lenient``: parameters the factory does not take are skipped instead of rejected (shared
    options of a multi-randomizer plot). ``complete``: require every parameter without a default.
    """
    signature = inspect.signature(factory)
    accepted = [p.name for p in signature.parameters.values()
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    keywords: dict[str, object] = {}
    for given, value in params.items():
        target = given if given in accepted else None
        if target is None:
            for alias in _PARAMETER_ALIASES.get(given, ()):
                if alias in accepted:
                    target = alias
                    break
        if target is None and lenient:
            continue
        if target is None:
            raise UsageError(f"randomizer {name!r} takes parameters ({', '.join(accepted)}); "
                             f"got unknown parameter {given!r}")
        keywords[target] = value
    missing = [p.name for p in signature.parameters.values()
               if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
               and p.name not in keywords]
    if missing and complete:
        flags = ", ".join(missing)
        raise UsageError(f"randomizer {name!r} needs parameter(s) {flags} "
                         "(use --epsilon0/--domain or --param NAME=VALUE)")
    return keywords


def split_spec(spec: str) -> tuple[str, dict[str, object]]:
    """``"krr:domain_size=10,epsilon0=1"`` -> (``"krr"``, {...}); a bare name has no parameters."""
    name, _, rest = spec.partition(":")
    try:
        params = dict(parse_param(item) for item in rest.split(",") if item.strip())
    except argparse.ArgumentTypeError as exc:
        raise UsageError(f"randomizer {spec!r}: {exc} (form NAME:key=value,...)") from None
    return name.strip(), params


def build_randomizer(name: str, params: Mapping[str, object], *, lenient: bool = False) -> Any:
    """Catalog entry ``name`` built with ``params`` (aliases: epsilon0, domain); ``name`` may carry
    its own parameters as ``NAME:key=value,...`` (they take precedence)."""
    base, own = split_spec(name)
    factory = _factory(base)
    keywords = _resolve_keywords(base, factory, {**params, **own}, lenient=lenient)
    _resolve_keywords(base, factory, own, complete=False)  # NAME:key=value must be known keys
    return factory(**keywords)


def read_matrix(path: str | Path) -> list[list[float]]:
    """Randomizer matrix (rows = inputs, columns = outputs) from a CSV or JSON file.

    CSV: one row per input, comma- or whitespace-separated numbers; blank lines and lines starting
    with ``#`` are skipped. JSON: a list of rows, or an object with a ``"matrix"`` list of rows.
    """
    file = Path(path)
    text = file.read_text(encoding="utf-8")
    if file.suffix.lower() == ".json" or text.lstrip().startswith(("[", "{")):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"matrix file {str(file)!r} is not valid JSON: {exc}") from None
        if isinstance(data, dict):
            if "matrix" not in data:
                raise ValueError(f"matrix file {str(file)!r}: JSON object needs a 'matrix' key")
            data = data["matrix"]
        if not isinstance(data, list) or not all(isinstance(row, list) for row in data):
            raise ValueError(f"matrix file {str(file)!r}: expected a list of rows of numbers")
        return [[_matrix_entry(v, file) for v in row] for row in data]
    rows: list[list[float]] = []
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    for record in csv.reader(io.StringIO("\n".join(lines))):
        cells = [cell for field in record for cell in field.split()]
        rows.append([_matrix_entry(cell, file) for cell in cells])
    if not rows:
        raise ValueError(f"matrix file {str(file)!r} contains no rows")
    return rows


def _matrix_entry(value: object, file: Path) -> float:
    if isinstance(value, bool):
        raise ValueError(f"matrix file {str(file)!r}: entries must be numbers, got {value!r}")
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"matrix file {str(file)!r}: entries must be numbers, got {value!r}") from None


def randomizer_from_args(args: argparse.Namespace) -> Any:
    """The randomizer selected by ``--randomizer NAME [params]`` or ``--matrix FILE``."""
    if args.matrix is not None:
        if args.randomizer is not None:
            raise UsageError("give either --randomizer or --matrix, not both")
        return _randomizers_module().from_matrix(read_matrix(args.matrix), name=Path(args.matrix).stem)
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


def randomizer_factory(name: str, params: Mapping[str, object], *, lenient: bool = False
                       ) -> Callable[[float], Any]:
    """ε0 ↦ catalog entry ``name`` (``NAME[:key=value,...]``) with ``params`` and that ε0 (for
    sweeps and calibration)."""
    base = {k: v for k, v in params.items() if k != "epsilon0"}
    build_randomizer(name, {**base, "epsilon0": 1.0}, lenient=lenient)  # validate names early

    def make(epsilon0: float) -> Any:
        return build_randomizer(name, {**base, "epsilon0": epsilon0}, lenient=lenient)

    return make


def _describe(randomizer: Any) -> str:
    params = ", ".join(f"{k}={v}" for k, v in randomizer.parameters.items())
    return f"{randomizer.name}({params})"


# ---------------------------------------------------------------------------------------------
# progress
# ---------------------------------------------------------------------------------------------


class Progress:
    """Plain-text progress bar on stderr, shown only once a sweep has run for ``after`` seconds.

    On a terminal the line is redrawn in place (``\\r``); otherwise a new line is written at most
    every ``interval`` seconds. ``total=None`` (unknown amount of work, e.g. a bisection) shows a
    count instead of a bar. ``enabled=False`` (``--quiet``) silences it.
    """

    def __init__(self, label: str, total: int | None, *, stream: TextIO | None = None,
                 enabled: bool = True, after: float = 1.0, interval: float = 5.0,
                 width: int = 30) -> None:
        self.label = label
        self.total = None if total is None else max(int(total), 1)
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.after = after
        self.interval = interval
        self.width = width
        self.start = time.monotonic()
        self.done = 0
        self._shown = False
        self._last_write = -math.inf

    def _tty(self) -> bool:
        isatty = getattr(self.stream, "isatty", None)
        return bool(isatty and isatty())

    def line(self) -> str:
        """The current progress text."""
        elapsed = time.monotonic() - self.start
        if self.total is None:
            return f"{self.label}: {self.done} evaluations, {elapsed:.0f}s"
        filled = int(round(self.width * self.done / self.total))
        return (f"{self.label} [{'#' * filled}{'.' * (self.width - filled)}] "
                f"{self.done}/{self.total} {elapsed:.0f}s")

    def advance(self, steps: int = 1) -> None:
        """Record ``steps`` finished items and redraw if due."""
        self.done += steps
        if self.total is not None:
            self.done = min(self.done, self.total)
        now = time.monotonic()
        if not self.enabled or now - self.start < self.after:
            return
        tty = self._tty()
        finished = self.total is not None and self.done == self.total
        if now - self._last_write < (0.1 if tty else self.interval) and not finished:
            return
        self._last_write = now
        if tty:
            self.stream.write("\r" + self.line())
            self._shown = True
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()

    def close(self) -> None:
        """Finish the in-place bar with a newline (if one was drawn)."""
        if self._shown:
            self.stream.write("\n")
            self.stream.flush()
            self._shown = False

    def __call__(self, done: int, total: int) -> None:
        """Callback form ``progress(done, total)`` used by :mod:`dpacct_shuffle.plots`."""
        self.total = max(int(total), 1)
        self.advance(done - self.done)


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
    if args.users > args.lower_max_users:
        payload[key] = None
        payload["lower_skipped"] = f"n > lower_max_users = {args.lower_max_users}"
        return (f"skipped for n > {args.lower_max_users} (slow at this n; raise "
                "--lower-max-users to compute it)")
    start = time.perf_counter()
    value = compute() if shuffled.lower_bound is not None else None
    payload[key] = value
    payload["seconds_lower"] = time.perf_counter() - start
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
    shuffled = randomizer.shuffled(args.users)
    start = time.perf_counter()
    upper = compute(shuffled)
    seconds = time.perf_counter() - start
    payload: dict[str, object] = {
        "command": command, "randomizer": randomizer.name, "parameters": dict(randomizer.parameters),
        "users": args.users, given: getattr(args, given), f"{command}_upper": upper,
        "seconds_upper": seconds,
    }
    return randomizer, shuffled, upper, seconds, payload


def cmd_epsilon(args: argparse.Namespace, out: TextIO) -> int:
    """``epsilon``: certified ε(δ) upper bound, the lower bound and (``--compare``) references."""
    randomizer, shuffled, upper, upper_seconds, payload = _upper_bound(
        args, "epsilon", "delta", lambda shuffled: shuffled.epsilon(args.delta))
    lower_text = _lower_bound(shuffled, args, lambda: shuffled.epsilon_lower(args.delta), payload,
                              "epsilon_lower")
    fmt_value = published = None
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
    out.write(f"{_describe(randomizer)}, n = {args.users}, delta = {args.delta:g}\n")
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
    out.write(f"{_describe(randomizer)}, n = {args.users}, epsilon = {args.epsilon:g}\n")
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

    progress = Progress("calibrate", None, enabled=not args.quiet)
    start = time.perf_counter()
    payload: dict[str, object] = {"command": "calibrate", "target_epsilon": args.target_epsilon,
                                  "delta": args.delta}
    try:
        if args.users is not None:
            if args.randomizer is None:
                raise UsageError("calibrate --users needs --randomizer NAME")
            make = randomizer_factory(args.randomizer, randomizer_params(args, without_epsilon0=True))

            def family(epsilon0: float) -> Any:
                progress.advance()
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
    finally:
        progress.close()
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


def read_pipeline(path: str | Path) -> dict[str, Any]:
    """Pipeline description from a JSON (``.json``) or TOML (``.toml``, Python ≥ 3.11) file."""
    file = Path(path)
    text = file.read_text(encoding="utf-8")
    if file.suffix.lower() == ".toml":
        try:
            import tomllib
        except ImportError:  # Python 3.10
            raise MissingDependencyError("TOML pipelines need Python >= 3.11 (tomllib); "
                                         "use a JSON file instead") from None
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"pipeline file {str(file)!r} is not valid TOML: {exc}") from None
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"pipeline file {str(file)!r} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"pipeline file {str(file)!r} must hold an object/table at top level")
    return data


def _require(step: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in step:
        raise ValueError(f"{where}: missing key {key!r}")
    return step[key]


def _count(step: Mapping[str, Any], where: str, key: str = "count") -> int:
    value = step.get(key, 1)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{where}: {key} must be a positive integer, got {value!r}")
    return value


def randomizer_from_spec(spec: object, where: str, base_dir: Path) -> Any:
    """A randomizer from a pipeline entry: ``{"name": "krr", "epsilon0": 2, "domain_size": 100}``,
    ``{"matrix": [[...], ...]}`` or ``{"matrix_file": "m.csv"}`` (relative to the pipeline file)."""
    if isinstance(spec, str):
        spec = {"name": spec}
    if not isinstance(spec, Mapping):
        raise TypeError(f"{where}: randomizer must be a table/object, got {type(spec).__name__}")
    if "matrix" in spec or "matrix_file" in spec:
        matrix = spec["matrix"] if "matrix" in spec else read_matrix(base_dir / str(spec["matrix_file"]))
        return _randomizers_module().from_matrix(matrix, name=str(spec.get("name", "matrix")))
    name = _require(spec, "name", where)
    return build_randomizer(str(name), {k: v for k, v in spec.items() if k != "name"})


def pipeline_event(pipeline: Mapping[str, Any], base_dir: Path = Path(".")) -> Any:
    """The dp-accounting ``ComposedDpEvent`` of a pipeline description (see docs/cli.md).

    Step types: ``shuffle`` (:class:`~dpacct_shuffle.events.ShuffleEvent`; ``randomizer``,
    ``users``, optional ``honest_fraction``, ``sampling_probability`` for client sampling),
    ``parallel`` (:class:`~dpacct_shuffle.events.ParallelCompositionEvent`; ``branches``, ``users``,
    optional ``probabilities``, ``mode``), ``ldp`` (:class:`~dpacct_shuffle.events.LDPCompositionEvent`;
    ``epsilons``, optional ``deltas``, ``mode``), ``dpsgd`` (Poisson-sampled Gaussian steps;
    ``noise_multiplier``, ``sampling_probability``, ``steps``) and ``gaussian``
    (``noise_multiplier``). Every step takes an optional ``count`` (repetitions).
    """
    from dp_accounting import dp_event

    from dpacct_shuffle.events import LDPCompositionEvent, ParallelCompositionEvent, ShuffleEvent

    steps = _require(pipeline, "steps", "pipeline")
    if not isinstance(steps, list) or not steps:
        raise ValueError("pipeline: 'steps' must be a non-empty list")
    events = []
    for index, step in enumerate(steps):
        where = f"steps[{index}]"
        if not isinstance(step, Mapping):
            raise TypeError(f"{where} must be a table/object, got {type(step).__name__}")
        kind = _require(step, "type", where)
        count = _count(step, where)
        if kind == "shuffle":
            randomizer = randomizer_from_spec(_require(step, "randomizer", where), where, base_dir)
            event: Any = ShuffleEvent(randomizer, _require(step, "users", where),
                                      step.get("honest_fraction", 1.0))
            if "sampling_probability" in step:
                event = dp_event.PoissonSampledDpEvent(step["sampling_probability"], event)
        elif kind == "parallel":
            branches = _require(step, "branches", where)
            if not isinstance(branches, list):
                raise TypeError(f"{where}: branches must be a list of randomizers")
            event = ParallelCompositionEvent(
                tuple(randomizer_from_spec(b, f"{where}.branches[{i}]", base_dir)
                      for i, b in enumerate(branches)),
                _require(step, "users", where), step.get("probabilities"),
                step.get("mode", "random"), step.get("honest_fraction", 1.0))
        elif kind == "ldp":
            event = LDPCompositionEvent(_require(step, "epsilons", where),
                                        step.get("mode", "sequential"), step.get("deltas"))
        elif kind == "dpsgd":
            sigma = _require(step, "noise_multiplier", where)
            rate = _require(step, "sampling_probability", where)
            event = dp_event.SelfComposedDpEvent(
                dp_event.PoissonSampledDpEvent(rate, dp_event.GaussianDpEvent(sigma)),
                _count(step, where, "steps"))
        elif kind == "gaussian":
            event = dp_event.GaussianDpEvent(_require(step, "noise_multiplier", where))
        else:
            raise ValueError(f"{where}: type must be one of 'shuffle', 'parallel', 'ldp', "
                             f"'dpsgd', 'gaussian', got {kind!r}")
        events.append(dp_event.SelfComposedDpEvent(event, count) if count > 1 else event)
    return dp_event.ComposedDpEvent(events)


def account_pipeline(pipeline: Mapping[str, Any], base_dir: Path = Path(".")) -> dict[str, object]:
    """Compose a pipeline with :class:`~dpacct_shuffle.accountants.ShufflePLDAccountant`.

    The pipeline gives ``delta`` (report ε) and/or ``epsilon`` (report δ), and optionally
    ``value_discretization_interval`` (default 1e-4).
    """
    from dpacct_shuffle.accountants import ShufflePLDAccountant

    if "delta" not in pipeline and "epsilon" not in pipeline:
        raise ValueError("pipeline: give 'delta' (to report epsilon) and/or 'epsilon' (to report delta)")
    kwargs = {}
    if "value_discretization_interval" in pipeline:
        kwargs["value_discretization_interval"] = pipeline["value_discretization_interval"]
    accountant = ShufflePLDAccountant(**kwargs)
    event = pipeline_event(pipeline, base_dir)
    status = accountant.supports(event)
    if not status:
        raise ValueError(f"ShufflePLDAccountant does not support this pipeline: {event!r}")
    accountant.compose(event)
    result: dict[str, object] = {"steps": len(pipeline["steps"])}
    if "delta" in pipeline:
        result["delta"] = pipeline["delta"]
        result["epsilon"] = accountant.get_epsilon(pipeline["delta"])
    if "epsilon" in pipeline:
        result["epsilon_target"] = pipeline["epsilon"]
        result["delta_at_epsilon"] = accountant.get_delta(pipeline["epsilon"])
    return result


def cmd_account(args: argparse.Namespace, out: TextIO) -> int:
    """``account``: ε/δ of a pipeline file through the PLD accountant."""
    pipeline = read_pipeline(args.pipeline)
    if args.delta is not None:
        pipeline["delta"] = args.delta
    if args.epsilon is not None:
        pipeline["epsilon"] = args.epsilon
    start = time.perf_counter()
    result = account_pipeline(pipeline, Path(args.pipeline).parent)
    result["seconds"] = time.perf_counter() - start
    payload = {"command": "account", "pipeline": str(args.pipeline), **result}
    if args.json:
        _emit_json(payload, out)
        return EXIT_OK
    out.write(f"pipeline {args.pipeline}: {result['steps']} step(s), ShufflePLDAccountant "
              f"(replace-one)\n")
    if "epsilon" in result:
        out.write(f"epsilon: {format_upper(result['epsilon'])}  at delta = {result['delta']:g}\n")
    if "delta_at_epsilon" in result:
        out.write(f"delta: {format_upper(result['delta_at_epsilon'])}  at epsilon = "
                  f"{result['epsilon_target']:g}\n")
    return EXIT_OK


# -- plot ---------------------------------------------------------------------------------------


def cmd_plot(args: argparse.Namespace, out: TextIO) -> int:
    """``plot``: ε vs n (``--users LIST``) or ε vs ε0 (``--epsilon0s LIST``) to PNG/SVG.

    Every argument is validated (exit 2) and the output directory checked (exit 1) before
    matplotlib is looked for (exit 1 with the install hint) and before the sweep starts.
    """
    from dpacct_shuffle import plots
    from dpacct_shuffle.core.validation import check_delta

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
    progress = Progress("plot", 1, enabled=not args.quiet)
    start = time.perf_counter()
    try:
        if args.x == "users":
            curves = plots.epsilon_vs_users(entries, users_list, delta, lower=not args.no_lower,
                                            fmt=not args.no_fmt, progress=progress)
        else:
            curves = plots.epsilon_vs_epsilon0(factories, epsilon0_list, args.users, delta,
                                               lower=not args.no_lower, fmt=not args.no_fmt,
                                               progress=progress)
    finally:
        progress.close()
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
    group.add_argument("--domain", type=parse_users, metavar="D", help="domain size of the entry")
    group.add_argument("--param", type=parse_param, action="append", metavar="NAME=VALUE",
                       help="any other parameter of the catalog entry (repeatable)")


def _add_lower_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-lower", action="store_true", help="skip the lower bound")
    parser.add_argument("--lower-max-users", type=parse_users, default=LOWER_BOUND_MAX_USERS,
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
    _add_common(p)
    p.set_defaults(handler=cmd_epsilon)

    p = sub.add_parser("delta", help="certified delta(epsilon) of one shuffle round",
                       description="Certified upper bound on delta at a given epsilon (and the "
                       "lower bound of an explicit instance).", epilog=_EXAMPLES["delta"],
                       formatter_class=formatter)
    _add_randomizer_options(p)
    p.add_argument("--users", "-n", type=parse_users, required=True, metavar="N")
    p.add_argument("--epsilon", type=parse_real, required=True, help="epsilon >= 0")
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
    p.add_argument("--max-users", type=parse_users, help="search n up to this (default 1e10)")
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
    _add_common(p)
    p.set_defaults(handler=cmd_account)

    p = sub.add_parser("plot", help="epsilon vs n or vs eps0 (needs matplotlib)",
                       description="Upper bound, lower bound and FMT closed form on one figure.",
                       epilog=_EXAMPLES["plot"], formatter_class=formatter)
    _add_randomizer_options(p, multiple=True)
    p.add_argument("--x", choices=("users", "epsilon0"), default="users", help="x axis (default users)")
    p.add_argument("--users-list", type=parse_list(parse_users), default=[10**3, 10**4, 10**5],
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
    entries = {}
    for name in catalog_names():
        factory = _factory(name)
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
