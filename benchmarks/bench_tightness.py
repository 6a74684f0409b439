"""Benchmark of the multi-level bound: certified upper ε with and without it, certified lower ε.

For each catalog entry and number of users: the upper ε of the variation-ratio (clone) bounds alone
(every cover and fallback except the multi-level one), the upper ε the entry reports (the minimum
including :class:`~dpacct_shuffle.randomizers.multilevel.MultiLevelBound`, where the entry has
one), the certified lower ε (exact δ of an explicit instance), the gap 1 − lower/upper and the
wall-clock seconds of the multi-level bound's own ε search (fresh caches per row; for the Laplace
mechanism its dominating-pair bound, :class:`LaplaceBlanketBound`, skipped as in the entry where
it cannot lower the clone value).

Usage: ``python benchmarks/bench_tightness.py [--users 1e3,1e4,1e6] [--epsilon0s 2,4]
[--delta 1e-6]`` — prints a markdown table.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from dpacct_shuffle import randomizers as rz
from dpacct_shuffle.core import bound, multilevel
from dpacct_shuffle.randomizers import laplace_levels
from dpacct_shuffle.randomizers.laplace_levels import LaplaceBlanketBound
from dpacct_shuffle.randomizers.multilevel import MultiLevelBound

from bench_catalog import ENTRIES  # the same catalog entries as the catalog table


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
    """(clone upper ε, reported upper ε, lower ε, seconds of the multi-level ε or None)."""
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
        new = min(old, levels[0].epsilon(delta, n))
        seconds = time.perf_counter() - start
    elif spectrum:  # as the entry uses it: skipped where it cannot lower the clone value
        laplace_levels._laplace_delta.cache_clear()
        start = time.perf_counter()
        new = min(old, spectrum[0].epsilon_below(delta, n, old))
        seconds = time.perf_counter() - start
    lower = randomizer.shuffled(n).epsilon_lower(delta)
    return old, new, lower, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=lambda s: [int(float(v)) for v in s.split(",")],
                        default=[10**3, 10**4, 10**6])
    parser.add_argument("--epsilon0s", type=lambda s: [float(v) for v in s.split(",")],
                        default=[4.0])
    parser.add_argument("--delta", type=float, default=1e-6)
    args = parser.parse_args()
    print("| randomizer | eps0 | n | upper (clone) | upper (reported) | lower | gap | "
          "s (multi-level) |")
    print("|---|---|---|---|---|---|---|---|")
    for eps0 in args.epsilon0s:
        for name, make in ENTRIES.items():
            for n in args.users:
                old, new, lower, seconds = measure(make, eps0, n, args.delta)
                gap = 1.0 - lower / new if new > 0 else 0.0
                timing = "—" if seconds is None else f"{seconds:.2f}"
                print(f"| {name} | {eps0:g} | {n:.0e} | {old:.4g} | {new:.4g} | {lower:.4g} "
                      f"| {gap:.1%} | {timing} |", flush=True)


if __name__ == "__main__":
    main()
