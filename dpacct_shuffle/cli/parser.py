"""Argument parsing of ``dpacct-shuffle``: the parser, its option types, and the randomizer and
progress settings read from the parsed arguments.

Nothing here imports numpy or the bounds at module level, so ``--help`` and ``--version`` stay
fast; the library is imported when a command runs.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

from dpacct_shuffle.cli.errors import EXIT_BAD_INPUT, PROG, UsageError

if TYPE_CHECKING:
    from dpacct_shuffle.randomizers.base import Randomizer
    from dpacct_shuffle.randomizers.personalized import PersonalizedShuffle

LOWER_BOUND_MAX_USERS = 10**7  # = randomizers.LOWER_BOUND_MAX_USERS (not imported: lean --help)
MAX_RANGE_COUNT = 1000


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
    """``NAME=VALUE`` for ``--param`` (VALUE parsed as int, float, true/false, else string; its
    name and kind are checked by the randomizer schema when the entry is built)."""
    from dpacct_shuffle.randomizers.spec import parse_assignment

    try:
        return parse_assignment(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"--param: {exc}") from None


def parse_epsilon0(text: str) -> float:
    """``--epsilon0``: a real number, with the randomizer schema's check and message of the
    parameter ``epsilon0`` (its range is the entry's, checked when the entry is built)."""
    from dpacct_shuffle.randomizers.schema import ParameterSchema, parse_scalar

    try:
        return ParameterSchema("epsilon0", "real").real(parse_scalar(text))
    except (TypeError, ValueError) as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parse_parameter_text(text: str) -> object:
    """``--domain`` of a randomizer: the value as
    :func:`~dpacct_shuffle.randomizers.schema.parse_scalar` reads it; the randomizer schema checks
    it as the entry's domain parameter (``domain_size``, …) when the entry is built, with the
    message every front-end gives."""
    from dpacct_shuffle.randomizers.schema import parse_scalar

    return parse_scalar(text)


class GroupOption(NamedTuple):
    """One ``--group``: its text, the catalog spec or the ε0 of ``--randomizer``'s entry, and the
    number of users."""

    text: str
    spec: str | None
    epsilon0: float | None
    users: int


GROUP_FORM = "ENTRY:COUNT or EPS0:COUNT (e.g. krr:epsilon0=1,domain_size=4:5000, or 1.5:5000 with --randomizer)"


def parse_group(text: str) -> GroupOption:
    """``--group ENTRY:COUNT`` (a catalog spec ``NAME[:key=value,...]``) or ``--group EPS0:COUNT``
    (ε0 of the ``--randomizer`` entry); COUNT is the group's number of users."""
    spec, colon, count_text = text.rpartition(":")
    if not colon or not spec.strip():
        raise argparse.ArgumentTypeError(f"expected {GROUP_FORM}, got {text!r}")
    try:
        users = positive_integer("the COUNT of a group")(count_text)
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{exc} (the form is {GROUP_FORM})") from None
    try:
        epsilon0 = float(spec)
    except ValueError:
        return GroupOption(text, spec.strip(), None, users)
    if not math.isfinite(epsilon0):
        raise argparse.ArgumentTypeError(f"the EPS0 of a group must be a finite real number, "
                                         f"got {text!r}")
    return GroupOption(text, None, epsilon0, users)


def _refuse_repeated_settings(group: GroupOption, entry: str, own: dict[str, object],
                              shared: dict[str, object]) -> None:
    """UsageError if ``--group`` sets a parameter of ``entry`` that ``--domain``/``--param`` also
    give (one of the two would be ignored)."""
    from dpacct_shuffle.randomizers.schema import entry_schema

    schema = entry_schema(entry)

    def target(key: str) -> str:
        parameter = schema.parameter(key)
        return key if parameter is None else parameter.name

    named = {target(key) for key in own}
    repeated = sorted(key for key in shared if target(key) in named)
    if repeated:
        raise UsageError(f"--group {group.text} sets {', '.join(repeated)}, which --domain/--param "
                         "also give: give each setting once")


def personalized_from_args(args: argparse.Namespace) -> PersonalizedShuffle:
    """The round of the repeated ``--group`` options (users with different randomizers): each
    group's entry gets the shared ``--domain``/``--param`` settings; ``EPS0:COUNT`` groups are
    ``--randomizer``'s entry at that ε0. Combinations that would leave a setting unused are
    refused (``--users``, ``--matrix``, ``--epsilon0``, an unused ``--randomizer``)."""
    from dpacct_shuffle.randomizers.personalized import PersonalizedShuffle
    from dpacct_shuffle.randomizers.spec import build_randomizer, split_spec

    groups: list[GroupOption] = args.group
    if args.users is not None:
        raise UsageError("give either --users or --group, not both (the groups' COUNTs add up "
                         "to the number of users)")
    if getattr(args, "matrix", None) is not None:
        raise UsageError("--matrix cannot be combined with --group (give each group's catalog "
                         "entry as --group ENTRY:COUNT)")
    if args.epsilon0 is not None:
        raise UsageError("--epsilon0 cannot be combined with --group (give each group's eps0 as "
                         "--group EPS0:COUNT)")
    by_epsilon0 = [group for group in groups if group.epsilon0 is not None]
    if by_epsilon0 and args.randomizer is None:
        raise UsageError(f"--group {by_epsilon0[0].text} gives an eps0: it needs --randomizer "
                         f"NAME (the entry it sets eps0 of); the form is {GROUP_FORM}")
    if not by_epsilon0 and args.randomizer is not None:
        raise UsageError("--randomizer is unused: every --group names its own entry (use "
                         "--group EPS0:COUNT for groups of --randomizer's entry)")
    shared = randomizer_params(args)
    pairs = []
    for group in groups:
        try:
            if group.spec is None:
                own: dict[str, object] = {"epsilon0": group.epsilon0}
                _refuse_repeated_settings(group, args.randomizer, own, shared)
                randomizer = build_randomizer(args.randomizer, {**shared, **own})
            else:
                base, own = split_spec(group.spec)
                _refuse_repeated_settings(group, base, own, shared)
                randomizer = build_randomizer(group.spec, shared)
        except UsageError:
            raise
        except (ValueError, TypeError) as exc:
            raise type(exc)(f"--group {group.text}: {exc}") from None
        if getattr(randomizer, "matrix", None) is None:
            raise UsageError(f"--group {group.text}: {randomizer.name} has no finite matrix; "
                             "every group needs a finite randomizer on the same outputs")
        pairs.append((randomizer, group.users))
    try:
        return PersonalizedShuffle(pairs)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"--group: {exc}") from None


def randomizer_from_args(args: argparse.Namespace) -> Randomizer:
    """The randomizer selected by ``--randomizer NAME [params]`` or ``--matrix FILE``."""
    from dpacct_shuffle.randomizers.spec import build_randomizer, matrix_file_randomizer

    if args.matrix is not None:
        if args.randomizer is not None:
            raise UsageError("give either --randomizer or --matrix, not both")
        return matrix_file_randomizer(args.matrix)
    if args.randomizer is None:
        raise UsageError("one of --randomizer NAME or --matrix FILE is required")
    return build_randomizer(args.randomizer, randomizer_params(args))


def randomizer_params(args: argparse.Namespace, *, without_epsilon0: bool = False) -> dict[str, object]:
    """The catalog parameters given on the command line (--epsilon0, --domain, --param); a name
    given twice is a UsageError (one value would be ignored; two spellings of one parameter,
    ``--domain`` and ``--param domain_size=…``, are refused by the randomizer schema)."""
    params: dict[str, object] = {}
    flags: dict[str, str] = {}
    if getattr(args, "epsilon0", None) is not None and not without_epsilon0:
        params["epsilon0"], flags["epsilon0"] = args.epsilon0, "--epsilon0"
    if getattr(args, "domain", None) is not None:
        params["domain"], flags["domain"] = args.domain, "--domain"
    for name, value in getattr(args, "param", None) or []:
        if name in params:
            raise UsageError(f"parameter {name!r} is given twice ({flags[name]} and --param "
                             f"{name}=...): give each setting once")
        params[name], flags[name] = value, f"--param {name}=..."
    return params


def show_progress(args: argparse.Namespace) -> bool:
    """Progress bars (tqdm, on stderr) unless ``--quiet`` or stderr is not a terminal."""
    from dpacct_shuffle.progress import is_terminal

    return not args.quiet and is_terminal()


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
  dpacct-shuffle epsilon --matrix rr3.csv --users 1e4 --delta 1e-8 --json
  # users with different eps0: 5000 at eps0 = 1 and 5000 at eps0 = 2
  dpacct-shuffle epsilon --randomizer krr --domain 4 --group 1:5000 --group 2:5000 --delta 1e-8""",
    "delta": """examples:
  dpacct-shuffle delta --randomizer krr --epsilon0 2 --domain 10 --users 1e4 --epsilon 0.3""",
    "calibrate": """examples:
  # largest eps0 such that 1e5 users get (0.5, 1e-8)-DP
  dpacct-shuffle calibrate --randomizer krr --domain 100 --users 1e5 --target-epsilon 0.5 --delta 1e-8
  # smallest number of users for (0.5, 1e-8)-DP at eps0 = 2
  dpacct-shuffle calibrate --randomizer krr --domain 100 --epsilon0 2 --target-epsilon 0.5 --delta 1e-8
  # a campaign: largest eps0 per report for 365 daily rounds of 1e6 users, 10 % sampled each day
  dpacct-shuffle calibrate --randomizer krr --domain 100 --users 1e6 --rounds 365 \\
      --sampling-probability 0.1 --target-epsilon 1 --delta 1e-8""",
    "plan": """examples:
  dpacct-shuffle plan --domain 100 --users 1e5 --rounds 100 --target-epsilon 1 --delta 1e-8
  dpacct-shuffle plan --range 0 10 --users 1e6 --rounds 30 --sampling-probability 0.1 \\
      --target-epsilon 1 --delta 1e-8 --json""",
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
      --epsilon0-list 0.5:4:8 --delta 1e-8 --output eps_vs_eps0.svg
  dpacct-shuffle plot --x epsilon --domain 100 --users 1e5 --rounds 30 \\
      --epsilon-list 0.1,0.3,1,3,10 --delta 1e-8 --output error_vs_epsilon.svg""",
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
    group.add_argument("--epsilon0", type=parse_epsilon0, metavar="EPS0", help=epsilon0_help)
    group.add_argument("--domain", type=parse_parameter_text, metavar="D",
                       help="domain size of the entry")
    group.add_argument("--param", type=parse_param, action="append", metavar="NAME=VALUE",
                       help="any other parameter of the catalog entry (repeatable)")


def _add_group_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--group", type=parse_group, action="append", metavar="ENTRY:COUNT",
                        help="users with different randomizers (repeat, one per group, instead of "
                        "--users): a catalog spec and its number of users, e.g. "
                        "krr:epsilon0=1,domain_size=4:5000, or EPS0:COUNT for --randomizer's "
                        "entry at that eps0 (--domain, --param apply to every group)")


def _add_sampling_option(parser: argparse.ArgumentParser) -> None:
    sampling = parser.add_mutually_exclusive_group()
    sampling.add_argument("--sampling-probability", type=parse_real, metavar="GAMMA",
                          help="client sampling: each of the N users reports with probability "
                               "GAMMA (replace-one; the PLD accountant's value)")
    sampling.add_argument("--sample-size", type=parse_users, metavar="M",
                          help="fixed-size cohort: M of the N users, drawn uniformly without "
                               "replacement, report (replace-one; the PLD accountant's value)")


def _add_lower_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-lower", action="store_true", help="skip the lower bound")
    parser.add_argument("--lower-max-users", type=parse_limit, default=LOWER_BOUND_MAX_USERS,
                        metavar="N", help="compute the lower bound only for n <= N (default 1e7; "
                        "it takes ~2 s at n = 1e6, ~15 s at 1e7, minutes at 1e8)")


def _add_common(parser: argparse.ArgumentParser) -> None:
    """The options of every command (a new command calls this too): ``--json`` (stdout is one JSON
    object, unrounded floats) and ``--quiet`` (stderr carries errors only: no progress bar, no
    warnings; stdout is unchanged)."""
    output = parser.add_argument_group("output (every command)")
    output.add_argument("--json", action="store_true",
                        help="print one JSON object on stdout (unrounded floats)")
    output.add_argument("--quiet", "-q", action="store_true",
                        help="errors only on stderr: no progress bar, no warnings (the result "
                        "on stdout is unchanged)")


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
    p.add_argument("--users", "-n", type=parse_users, metavar="N", help="number of users (1e6 ok)")
    _add_group_option(p)
    p.add_argument("--delta", type=parse_real, required=True, help="target delta in (0, 1)")
    _add_lower_options(p)
    p.add_argument("--compare", action="store_true",
                   help="also print the FMT closed form and the published pair (labelled)")
    _add_sampling_option(p)
    _add_common(p)

    p = sub.add_parser("delta", help="certified delta(epsilon) of one shuffle round",
                       description="Certified upper bound on delta at a given epsilon (and the "
                       "lower bound of an explicit instance).", epilog=_EXAMPLES["delta"],
                       formatter_class=formatter)
    _add_randomizer_options(p)
    p.add_argument("--users", "-n", type=parse_users, metavar="N", help="number of users")
    _add_group_option(p)
    p.add_argument("--epsilon", type=parse_real, required=True, help="epsilon >= 0")
    _add_sampling_option(p)
    _add_lower_options(p)
    _add_common(p)

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
    p.add_argument("--rtol", type=parse_real,
                   help="relative tolerance of the eps0 search (default 1e-3; 5e-3 with --rounds)")
    p.add_argument("--rounds", type=positive_integer("number of rounds"), metavar="R",
                   help="calibrate a campaign of R identical rounds for the total (epsilon, delta) "
                   "(PLD accountant)")
    _add_sampling_option(p)
    _add_common(p)

    p = sub.add_parser("plan", help="best randomizer and eps0 for a campaign's total (epsilon, delta)",
                       description="Calibrate every applicable catalog randomizer (its largest "
                       "eps0 per report, certified for the whole campaign by the PLD accountant) "
                       "and rank them by the standard deviation of one round's estimate.",
                       epilog=_EXAMPLES["plan"], formatter_class=formatter)
    target = p.add_mutually_exclusive_group()
    target.add_argument("--domain", "-d", type=parse_domain, metavar="D",
                        help="frequency estimation over D values")
    target.add_argument("--range", type=parse_real, nargs=2, metavar=("A", "B"),
                        help="the mean of values in [A, B]")
    p.add_argument("--users", "-n", type=parse_users, required=True, metavar="N",
                   help="users per round (the population when sampled)")
    p.add_argument("--rounds", type=positive_integer("number of rounds"), default=1, metavar="R",
                   help="number of identical rounds (default 1)")
    p.add_argument("--target-epsilon", type=parse_real, required=True)
    p.add_argument("--delta", type=parse_real, required=True)
    _add_sampling_option(p)
    p.add_argument("--fallbacks", action="store_true",
                   help="account the entries with their fallback bounds too (tighter for some, slower)")
    _add_common(p)

    p = sub.add_parser("params", help="variation-ratio parameters of an entry or matrix",
                       description="Variation-ratio parameters (p, beta, q0, q1, alpha, r0, r1, "
                       "neutral share s) of a catalog entry or of a matrix file.",
                       epilog=_EXAMPLES["params"], formatter_class=formatter)
    _add_randomizer_options(p)
    p.add_argument("--list", action="store_true", help="list the catalog entries and their parameters")
    _add_common(p)

    p = sub.add_parser("account", help="epsilon of a pipeline file (PLD accountant)",
                       description="Compose a pipeline (shuffle rounds, parallel rounds, LDP reports, "
                       "DP-SGD steps) with ShufflePLDAccountant (replace-one neighbours).",
                       epilog=_EXAMPLES["account"], formatter_class=formatter)
    p.add_argument("pipeline", help="pipeline file (.json or .toml)")
    p.add_argument("--delta", type=parse_real, help="override the file's delta")
    p.add_argument("--epsilon", type=parse_real, help="also/instead report delta at this epsilon")
    _add_common(p)

    p = sub.add_parser("plot", help="epsilon vs n or vs eps0 (needs matplotlib)",
                       description="Upper bound, lower bound and FMT closed form on one figure.",
                       epilog=_EXAMPLES["plot"], formatter_class=formatter)
    _add_randomizer_options(p, multiple=True)
    p.add_argument("--x", choices=("users", "epsilon0", "rounds", "epsilon"), default="users",
                   help="x axis (default users; rounds: a campaign's epsilon vs its rounds; "
                   "epsilon: each randomizer's error vs the campaign's total epsilon)")
    p.add_argument("--rounds", type=positive_integer("number of rounds"), default=1, metavar="R",
                   help="--x epsilon: rounds of the campaign (default 1)")
    p.add_argument("--epsilon-list", type=parse_list(parse_real),
                   default=[0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0], metavar="LIST",
                   help="--x epsilon: total epsilons, 0.5,1,2 or start:stop:count (default "
                   "0.1,0.2,0.5,1,2,5,10)")
    p.add_argument("--range", type=parse_real, nargs=2, metavar=("A", "B"),
                   help="--x epsilon: the numeric randomizers' error of the mean of values in "
                   "[A, B] (instead of --domain's frequency estimation)")
    p.add_argument("--rounds-list", type=parse_list(positive_integer("number of rounds"),
                                                    log_spaced=True),
                   default=[1, 3, 10, 30, 100, 300, 1000], metavar="LIST",
                   help="R values for --x rounds (default 1,3,10,...,1000)")
    p.add_argument("--sampling-probability", type=parse_real, metavar="GAMMA",
                   help="--x rounds: also draw the campaign with each user sampled w.p. GAMMA")
    p.add_argument("--users-list", type=parse_list(parse_users, log_spaced=True),
                   default=[10**3, 2 * 10**3, 5 * 10**3, 10**4, 2 * 10**4, 5 * 10**4, 10**5,
                            2 * 10**5, 5 * 10**5, 10**6],
                   metavar="LIST", help="n values: 1e3,1e4 or start:stop:count (log-spaced; "
                   "default 10 values from 1e3 to 1e6)")
    p.add_argument("--users", "-n", type=parse_users, metavar="N", help="n for --x epsilon0")
    p.add_argument("--epsilon0-list", type=parse_list(parse_epsilon0), default=[0.5, 1.0, 2.0, 3.0, 4.0],
                   metavar="LIST", help="eps0 values: 0.5,1,2 or start:stop:count")
    p.add_argument("--delta", type=parse_real, default=1e-8, help="delta (default 1e-8)")
    p.add_argument("--output", "-o", required=True, help="output file (.png, .svg or .pdf)")
    p.add_argument("--title", help="figure title")
    p.add_argument("--no-lower", action="store_true", help="omit the lower bound")
    p.add_argument("--no-fmt", action="store_true", help="omit the FMT closed form")
    p.add_argument("--compare", action="store_true",
                   help="also draw the published variation-ratio pair, labelled NOT a guarantee")
    _add_common(p)
    return parser


__all__ = ["GROUP_FORM", "GroupOption", "LOWER_BOUND_MAX_USERS", "MAX_RANGE_COUNT", "build_parser",
           "parse_epsilon0", "parse_group", "parse_list", "parse_param", "parse_parameter_text",
           "parse_real", "personalized_from_args", "positive_integer", "randomizer_from_args",
           "randomizer_params", "show_progress"]
