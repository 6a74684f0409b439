"""Benchmark of the multi-level bound: certified upper ε with and without it, certified lower ε.

For each catalog entry and number of users: the upper ε of the variation-ratio (clone) bounds alone
(every cover and fallback except the multi-level one), the upper ε the entry reports (the minimum
including :class:`~dpacct_shuffle.randomizers.multilevel.MultiLevelBound`, where the entry has
one), the certified lower ε (exact δ of an explicit instance), the gap 1 − lower/upper and the
wall-clock seconds the entry spends on its multi-level bound (fresh caches per row): one
evaluation where it cannot lower the clone value by 0.1 %, else a search from there
(:meth:`~dpacct_shuffle.randomizers.multilevel.MultiLevelBound.epsilon_below`; for the Laplace
mechanism its dominating-pair bound, :class:`LaplaceBlanketBound`, likewise).

With ``--seconds`` the run prints the second table instead: the wall-clock seconds of one cold
``randomizer.shuffled(n).epsilon(delta)`` per entry and n (every library memo cache emptied first,
imports warmed up), beside the value it reports.

Usage: ``python benchmarks/bench_tightness.py [--users 1e3,1e4,1e6] [--epsilon0s 2,4]
[--delta 1e-6] [--entries "rappor d=100,laplace"] [--seconds] [--markdown docs/tightness.md]`` — prints a
markdown table; with ``--markdown`` also writes its rows into the page's generated table
(:mod:`markdown`; ``--entries`` restricts the run, and the update, to some entries).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

from dpacct_shuffle import randomizers as rz
from dpacct_shuffle.cli import format_lower, format_upper
from dpacct_shuffle.core import bound, multilevel
from dpacct_shuffle.randomizers import laplace_levels
from dpacct_shuffle.randomizers.laplace_levels import LaplaceBlanketBound
from dpacct_shuffle.randomizers.multilevel import MultiLevelBound

from bench_catalog import DIGITS, ENTRIES  # the same catalog entries as the catalog table
from markdown import MarkdownTable, add_table_arguments, selected_entries


def clone_epsilon(randomizer: rz.Randomizer, n: int, delta: float) -> float:
    """ε of the entry without its multi-level fallbacks (:class:`MultiLevelBound`,
    :class:`LaplaceBlanketBound`): min(max over cover, min over the rest)."""
    value = max(b.epsilon(delta, n) for b in randomizer.cover)
    for fallback in randomizer.fallbacks:
        if not isinstance(fallback, (MultiLevelBound, LaplaceBlanketBound)):
            value = min(value, fallback.epsilon(delta, n))
    return value


def measure(make: Callable[[float], rz.Randomizer], eps0: float, n: int, delta: float
            ) -> tuple[float, float, float, float | None]:
    """(clone upper ε, reported upper ε, lower ε, seconds spent on the multi-level bound or None)."""
    randomizer = make(eps0)
    old = clone_epsilon(randomizer, n, delta)
    levels = [b for b in randomizer.fallbacks if isinstance(b, MultiLevelBound) and b.level_sets]
    spectrum = [b for b in randomizer.fallbacks if isinstance(b, LaplaceBlanketBound)]
    seconds = None
    new = old
    if levels:
        bound._delta_bracket.cache_clear()
        multilevel._levels_bracket.cache_clear()
        start = time.perf_counter()
        new = min(old, levels[0].epsilon_below(delta, n, old))
        seconds = time.perf_counter() - start
    elif spectrum:  # as the entry uses it: skipped where it cannot lower the clone value
        laplace_levels._laplace_delta.cache_clear()
        start = time.perf_counter()
        new = min(old, spectrum[0].epsilon_below(delta, n, old))
        seconds = time.perf_counter() - start
    lower = randomizer.shuffled(n).epsilon_lower(delta)
    return old, new, lower, seconds


HEADER = ["randomizer", "eps0", "n", "upper (clone)", "upper (reported)", "lower", "gap",
          "s (multi-level)"]


def clear_library_caches() -> None:
    """Empty every memo cache (``functools.lru_cache``) of the loaded dpacct_shuffle modules."""
    for module_name, module in list(sys.modules.items()):
        if module_name.startswith("dpacct_shuffle") and module is not None:
            for value in vars(module).values():
                if callable(getattr(value, "cache_clear", None)):
                    value.cache_clear()


def cold_reported_epsilon(make: Callable[[float], rz.Randomizer], eps0: float, n: int,
                          delta: float) -> tuple[float, float]:
    """(reported upper ε, seconds) of one ``make(eps0).shuffled(n).epsilon(delta)``, caches empty."""
    clear_library_caches()
    start = time.perf_counter()
    value = make(eps0).shuffled(n).epsilon(delta)
    return value, time.perf_counter() - start


SECONDS_HEADER = ["randomizer", "eps0", "n", "upper (reported)", "s (cold reported eps)"]


def seconds_table(args: argparse.Namespace) -> None:
    """The ``--seconds`` run: one cold reported ε per entry and n, timed."""
    rz.krr(1.0, 3).shuffled(50).epsilon(args.delta)  # load the lazily imported modules
    table = MarkdownTable(SECONDS_HEADER)
    for eps0 in args.epsilon0s:
        for name in args.entries:
            for n in args.users:
                value, seconds = cold_reported_epsilon(ENTRIES[name], eps0, n, args.delta)
                table.add([name, f"{eps0:g}", f"{n:.0e}", format_upper(value, DIGITS),
                           f"{seconds:.2f}"])
    table.write(args.markdown, "bench_tightness_seconds",
                f"Generated by `python benchmarks/bench_tightness.py --seconds --markdown "
                f"{args.markdown}` (δ = {args.delta:g}; upper ends rounded up, 4 significant "
                "digits; `--entries` regenerates some rows).")

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=lambda s: [int(float(v)) for v in s.split(",")],
                        default=[10**3, 10**4, 10**6])
    parser.add_argument("--epsilon0s", type=lambda s: [float(v) for v in s.split(",")],
                        default=[4.0])
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--seconds", action="store_true",
                        help="time one cold reported epsilon per entry and n instead")
    add_table_arguments(parser, ENTRIES)
    args = parser.parse_args()
    args.entries = selected_entries(parser, args, ENTRIES)
    if args.seconds:
        seconds_table(args)
        return
    table = MarkdownTable(HEADER)
    for eps0 in args.epsilon0s:
        for name in args.entries:
            for n in args.users:
                old, new, lower, seconds = measure(ENTRIES[name], eps0, n, args.delta)
                gap = 1.0 - lower / new if new > 0 else 0.0
                timing = "—" if seconds is None else f"{seconds:.2f}"
                table.add([name, f"{eps0:g}", f"{n:.0e}", format_upper(old, DIGITS),
                           format_upper(new, DIGITS), format_lower(lower, DIGITS), f"{gap:.1%}",
                           timing])
    table.write(args.markdown, "bench_tightness",
                f"Generated by `python benchmarks/bench_tightness.py --markdown {args.markdown}` "
                f"(δ = {args.delta:g}; upper ends rounded up, lower ends down, 4 significant "
                "digits; `--entries` regenerates some rows).")

if __name__ == "__main__":
    main()
