"""Benchmark of the randomizer catalog: certified ε interval ``shuffled(n).epsilon_interval(δ)``.

For each entry: the certified lower ε (exact δ of an explicit instance, dpacct_shuffle.randomizers
.exact), the certified upper ε, their relative gap 1 − lower/upper, and the wall-clock seconds of
each end (fresh object per call; the core's caches are shared, as in normal use).

Usage: ``python benchmarks/bench_catalog.py [--users 1e4,1e6] [--delta 1e-8]`` — prints the machine
and a markdown table. Upper ends are printed rounded up and lower ends rounded down (4 significant
digits), so the printed interval contains the certified one.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from dpacct_shuffle import randomizers as rz
from dpacct_shuffle.cli import format_lower, format_upper
from machine import describe_machine

DIGITS = 4

ENTRIES: dict[str, Callable[[float], rz.Randomizer]] = {
    "binary_rr": rz.binary_rr,
    "krr d=100": lambda e: rz.krr(e, 100),
    "rappor d=100": lambda e: rz.rappor(e, 100),
    "oue d=100": lambda e: rz.oue(e, 100),
    "subset_selection d=100 k=10": lambda e: rz.subset_selection(e, 100, 10),
    "local_hashing l=8": lambda e: rz.local_hashing(e, 8),
    "hadamard_response K=64": lambda e: rz.hadamard_response(e, 64),
    "pckv_grr d=100 s=4": lambda e: rz.pckv_grr(e, 100, 4),
    "piecewise": rz.piecewise,
    "laplace": rz.laplace,
}


def measure(make: Callable[[float], rz.Randomizer], eps0: float, n: int, delta: float
            ) -> tuple[float, float, float, float]:
    """(lower ε, upper ε, seconds for the lower end, seconds for the upper end)."""
    start = time.perf_counter()
    lower = make(eps0).shuffled(n).epsilon_lower(delta)
    middle = time.perf_counter()
    upper = make(eps0).shuffled(n).epsilon(delta)
    return lower, upper, middle - start, time.perf_counter() - middle


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=lambda s: [int(float(v)) for v in s.split(",")],
                        default=[10**4, 10**6])
    parser.add_argument("--epsilon0s", type=lambda s: [float(v) for v in s.split(",")],
                        default=[1.0, 4.0])
    parser.add_argument("--delta", type=float, default=1e-8)
    args = parser.parse_args()
    print(f"machine: {describe_machine()}; delta = {args.delta:g}")
    print()
    print("| randomizer | eps0 | n | lower eps | upper eps | gap | s (lower) | s (upper) |")
    print("|---|---|---|---|---|---|---|---|")
    for eps0 in args.epsilon0s:
        for n in args.users:
            for name, make in ENTRIES.items():
                lower, upper, t_low, t_up = measure(make, eps0, n, args.delta)
                gap = 1.0 - lower / upper if upper > 0 else 0.0
                print(f"| {name} | {eps0:g} | {n:.0e} | {format_lower(lower, DIGITS)} | "
                      f"{format_upper(upper, DIGITS)} | {gap:.1%} "
                      f"| {t_low:.2f} | {t_up:.2f} |", flush=True)


if __name__ == "__main__":
    main()
