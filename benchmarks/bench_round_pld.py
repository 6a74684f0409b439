"""Benchmark: one shuffle round's PLD through ``ShufflePLDAccountant``, batched curve vs the core.

For each randomizer and number of users n, one round is composed in a fresh accountant twice:

* *batched* — the default: the round's profile is read from the batched pair curve
  (:func:`dpacct_shuffle.profiles.round_randomizer`, one pass for every ε);
* *core* — the randomizer's own bound evaluated at every profile point (the round's randomizer
  passed as a :class:`~dpacct_shuffle.profiles.ShuffleBound`, which the accountant takes as is).

Printed: ε at ``--delta`` of each, the core's own ε (``VariationRatio.epsilon`` with a bracket of
relative width 1e-6, or the Randomizer's rule), the relative gaps and the CPU seconds
(``time.process_time``, caches cold) of each PLD. BLAS runs on one thread, as in
``bench_cohort.py``.

Usage: ``python benchmarks/bench_round_pld.py [--delta 1e-6]``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy is imported (see bench_cohort)

import argparse  # noqa: E402
import time  # noqa: E402

from dpacct_shuffle import VariationRatio  # noqa: E402
from dpacct_shuffle import randomizers as rz  # noqa: E402
from dpacct_shuffle.accountants import ShufflePLDAccountant  # noqa: E402
from dpacct_shuffle.events import ShuffleEvent  # noqa: E402
from dpacct_shuffle.profiles import RandomizerDescription, as_shuffle_bound  # noqa: E402

CASES: list[tuple[str, RandomizerDescription, int]] = [
    ("k-RR eps0=2 d=100", rz.krr(2.0, 100), 1_000),
    ("k-RR eps0=2 d=100", rz.krr(2.0, 100), 100_000),
    ("worst case eps0=0.5", VariationRatio.worst_case(0.5), 10_000),
    ("worst case eps0=3", VariationRatio.worst_case(3.0), 100_000),
]


def pld_epsilon(randomizer: RandomizerDescription, n: int, delta: float) -> tuple[float, float]:
    """(ε at δ, CPU seconds) of one round's PLD in a fresh accountant."""
    start = time.process_time()
    epsilon = ShufflePLDAccountant().compose(ShuffleEvent(randomizer, n)).get_epsilon(delta)
    return epsilon, time.process_time() - start


def core_epsilon(randomizer: RandomizerDescription, n: int, delta: float) -> float:
    """The core's certified ε of one round."""
    if isinstance(randomizer, VariationRatio):
        return randomizer.epsilon(delta, n, rtol=1e-6)
    return randomizer.epsilon(delta, n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delta", type=float, default=1e-6)
    args = parser.parse_args()
    print(f"one round through ShufflePLDAccountant, delta={args.delta:g}")
    print("| randomizer | n | core epsilon | batched PLD | gap | CPU s | core PLD | gap | CPU s |"
          " speed-up |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, randomizer, n in CASES:
        batched, batched_cpu = pld_epsilon(randomizer, n, args.delta)
        direct, direct_cpu = pld_epsilon(as_shuffle_bound(randomizer), n, args.delta)
        core = core_epsilon(randomizer, n, args.delta)  # last: the PLDs start from cold caches
        print(f"| {name} | {n} | {core:.6f} | {batched:.6f} | {batched / core - 1:+.3%} | "
              f"{batched_cpu:.2f} | {direct:.6f} | {direct / core - 1:+.3%} | {direct_cpu:.1f} | "
              f"{direct_cpu / batched_cpu:.0f}x |")


if __name__ == "__main__":
    main()
