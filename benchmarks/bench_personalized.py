"""Benchmark: a shuffle round with two groups of k-ary randomized response users of different ε0.

For each total n (half the users at ``--eps0-low``, half at ``--eps0-high``, domain ``--domain``)
prints ε at ``--delta`` of the mixed round (:func:`dpacct_shuffle.randomizers.personalized_krr`)
beside the homogeneous rounds of n users at the smaller and at the larger ε0, the mixed round's
certified lower bound (an explicit configuration, ``shuffled().epsilon_lower``), and the CPU
seconds (``time.process_time``) of each. The mixed round lies between the two homogeneous ones: its cost
against the homogeneous bound at the smallest ε0 is the price of the users who chose a weaker
local guarantee.

Usage: ``python benchmarks/bench_personalized.py [--users 200 2000 20000] [--domain 4]
[--eps0-low 1.0] [--eps0-high 2.0] [--delta 1e-6]``.
"""

from __future__ import annotations

import argparse
import time

from dpacct_shuffle.randomizers import krr, personalized_krr


def _timed(function, *args):
    start = time.process_time()
    value = function(*args)
    return value, time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, nargs="+", default=[200, 2000, 20000])
    parser.add_argument("--domain", type=int, default=4)
    parser.add_argument("--eps0-low", type=float, default=1.0)
    parser.add_argument("--eps0-high", type=float, default=2.0)
    parser.add_argument("--delta", type=float, default=1e-6)
    args = parser.parse_args()
    print(f"k-RR d={args.domain}, half the users at eps0={args.eps0_low}, half at "
          f"eps0={args.eps0_high}; epsilon at delta={args.delta:g}")
    print(f"{'n':>8} {'homog. low':>11} {'mixed':>9} {'homog. high':>12} {'mixed/low':>10} "
          f"{'mixed lower':>12} {'t low':>7} {'t mixed':>8} {'t high':>7} {'t lower':>8}")
    for n in args.users:
        half = n // 2
        mixed_round = personalized_krr(args.domain, [(args.eps0_low, half),
                                                     (args.eps0_high, n - half)])
        low, t_low = _timed(krr(args.eps0_low, args.domain).shuffled(n).epsilon, args.delta)
        mixed, t_mixed = _timed(mixed_round.epsilon, args.delta)
        high, t_high = _timed(krr(args.eps0_high, args.domain).shuffled(n).epsilon, args.delta)
        lower, t_lower = _timed(mixed_round.shuffled().epsilon_lower, args.delta)
        print(f"{n:>8} {low:>11.5f} {mixed:>9.5f} {high:>12.5f} {mixed / low:>10.3f} "
              f"{lower:>12.5f} {t_low:>7.2f} {t_mixed:>8.2f} {t_high:>7.2f} {t_lower:>8.2f}")


if __name__ == "__main__":
    main()
