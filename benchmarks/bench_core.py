"""Benchmark of the numerical core: ``VariationRatio.epsilon(delta=1e-8, n)``.

Randomizers: the worst case for ε0-LDP (``VariationRatio.worst_case``) and k-ary randomized response
with d = 100 (α = 1/(e^ε0 + d − 1), β = (e^ε0 − 1)α, q = e^ε0, neutral share (d − 2)α), at
ε0 ∈ {1, 2, 4} and n = 10^4 … 10^9. Every call starts from empty caches (the per-call time includes
all δ evaluations of the search). Peak memory is the tracemalloc peak of the call (numpy buffers
included) plus the process's maximum resident set size at the end.

Usage: ``python benchmarks/bench_core.py [--max-exponent 9] [--repeat 1]`` — prints the machine and a
markdown table (ε rounded up to 6 significant digits).
"""

from __future__ import annotations

import argparse
import math
import resource
import time
import tracemalloc

from dpacct_shuffle import VariationRatio
from dpacct_shuffle.cli import format_upper
from dpacct_shuffle.core import blocked, bound
from machine import describe_machine

DELTA = 1e-8
DOMAIN = 100


def k_rr(epsilon0: float, domain: int = DOMAIN) -> VariationRatio:
    """k-ary randomized response: s = (d − 2)α is a valid neutral share (docs/theory.md, "Decomposition")."""
    p = math.exp(epsilon0)
    return VariationRatio(p, (p - 1.0) / (p + domain - 1.0), p,
                          neutral_share=(domain - 2.0) / (p + domain - 1.0))


def _clear_caches() -> None:
    bound._delta_bracket.cache_clear()
    blocked._block_weights.cache_clear()
    blocked._cached_block_bands.cache_clear()


def measure(vr: VariationRatio, n: int, repeat: int) -> tuple[float, float, float, int]:
    """(epsilon, best seconds per call, tracemalloc peak MiB, number of δ evaluations)."""
    best = math.inf
    epsilon = math.nan
    evaluations = 0
    for _ in range(repeat):
        _clear_caches()
        start = time.perf_counter()
        epsilon = vr.epsilon(DELTA, n)
        best = min(best, time.perf_counter() - start)
        evaluations = bound._delta_bracket.cache_info().misses
    _clear_caches()
    tracemalloc.start()
    vr.epsilon(DELTA, n)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return epsilon, best, peak / 2**20, evaluations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-exponent", type=int, default=9)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    print(f"machine: {describe_machine()}")
    print()
    print("| randomizer | eps0 | n | epsilon (delta=1e-8) | seconds/call | delta evals | "
          "peak MiB (tracemalloc) |")
    print("|---|---|---|---|---|---|---|")
    for epsilon0 in (1.0, 2.0, 4.0):
        for name, vr in (("worst case", VariationRatio.worst_case(epsilon0)),
                         (f"k-RR d={DOMAIN}", k_rr(epsilon0))):
            for exponent in range(4, args.max_exponent + 1):
                n = 10**exponent
                epsilon, seconds, peak, evaluations = measure(vr, n, args.repeat)
                print(f"| {name} | {epsilon0:g} | 1e{exponent} | {format_upper(epsilon)} | {seconds:.3f} | "
                      f"{evaluations} | {peak:.1f} |", flush=True)
    max_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print()
    print(f"process max RSS: {max_rss:.0f} MiB")


if __name__ == "__main__":
    main()
