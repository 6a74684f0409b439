"""Benchmark: one shuffle round's ε through ``ShufflePLDAccountant`` against the core's own ε.

For each finite catalog entry (and a personalized round), each number of users n and each δ, one
round is composed in a fresh accountant and its ε at δ compared with the core's certified
``shuffled(n).epsilon(δ)`` (for a :class:`~dpacct_shuffle.randomizers.PersonalizedShuffle`, its
own ``epsilon(δ)``). Printed: the core ε, the PLD ε, the gap (PLD/core − 1; issue target
≤ 0.2 %) and the CPU seconds of the PLD (``time.process_time``, building and querying it; the
core's ε is computed afterwards, so the PLD starts from cold caches).

Usage: ``python benchmarks/bench_round_gap.py [--users 1e3,1e4,1e5,1e6] [--deltas 1e-6,1e-9]
[--entries "binary_rr eps0=1,k-RR eps0=2 d=100"]``. Entries whose PLD costs too much at large n
are limited by their ``max_users`` (rows are skipped above it).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy is imported (see bench_cohort)

import argparse  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402

from dpacct_shuffle import randomizers as rz  # noqa: E402
from dpacct_shuffle.accountants import ShufflePLDAccountant  # noqa: E402
from dpacct_shuffle.events import ShuffleEvent  # noqa: E402
from dpacct_shuffle.profiles import RandomizerDescription  # noqa: E402


@dataclass(frozen=True)
class Entry:
    """A catalog entry to measure: how to build it for n users, and up to which n."""

    make: Callable[[int], RandomizerDescription]
    max_users: int = 10**6


def _personalized(n: int) -> rz.PersonalizedShuffle:
    return rz.personalized_krr(10, [(1.0, n // 2), (2.0, n - n // 2)])


ENTRIES: dict[str, Entry] = {
    "binary_rr eps0=1": Entry(lambda n: rz.binary_rr(1.0)),
    "binary_rr eps0=3": Entry(lambda n: rz.binary_rr(3.0)),
    "k-RR eps0=2 d=100": Entry(lambda n: rz.krr(2.0, 100)),
    "rappor eps0=2 d=100": Entry(lambda n: rz.rappor(2.0, 100)),
    "oue eps0=2 d=100": Entry(lambda n: rz.oue(2.0, 100)),
    "subset_selection eps0=2 d=100 k=10": Entry(lambda n: rz.subset_selection(2.0, 100, 10)),
    "local_hashing eps0=2 l=8": Entry(lambda n: rz.local_hashing(2.0, 8)),
    "hadamard_response eps0=2 K=64": Entry(lambda n: rz.hadamard_response(2.0, 64)),
    "pckv_grr eps0=2 d=100 s=4": Entry(lambda n: rz.pckv_grr(2.0, 100, 4)),
    "laplace eps0=1": Entry(lambda n: rz.laplace(1.0)),
    "piecewise eps0=1": Entry(lambda n: rz.piecewise(1.0)),
    "duchi eps0=1": Entry(lambda n: rz.duchi(1.0)),
    "worst_case_ldp eps0=1": Entry(lambda n: rz.worst_case_ldp(1.0)),
    "personalized k-RR d=10 eps0=1|2": Entry(_personalized, max_users=10**5),
}


def core_epsilon(randomizer: RandomizerDescription, n: int, delta: float) -> float:
    """The core's certified ε of one round: ``shuffled(n).epsilon(δ)`` (or the personalized
    round's own ``epsilon``)."""
    if isinstance(randomizer, rz.PersonalizedShuffle):
        return randomizer.epsilon(delta)
    return randomizer.shuffled(n).epsilon(delta)


def pld_epsilons(randomizer: RandomizerDescription, n: int,
                 deltas: list[float]) -> tuple[list[float], float]:
    """(ε at each δ, CPU seconds) of one round's PLD in a fresh accountant."""
    start = time.process_time()
    accountant = ShufflePLDAccountant().compose(ShuffleEvent(randomizer, n))
    epsilons = [accountant.get_epsilon(delta) for delta in deltas]
    return epsilons, time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=lambda s: [int(float(v)) for v in s.split(",")],
                        default=[10**3, 10**4, 10**5, 10**6])
    parser.add_argument("--deltas", type=lambda s: [float(v) for v in s.split(",")],
                        default=[1e-6, 1e-9])
    parser.add_argument("--entries", type=lambda s: s.split(","), default=list(ENTRIES),
                        help="comma-separated entry names (default: all)")
    args = parser.parse_args()
    unknown = sorted(set(args.entries) - set(ENTRIES))
    if unknown:
        parser.error(f"unknown entries {unknown}; known: {sorted(ENTRIES)}")
    print("| entry | n | delta | core epsilon | PLD epsilon | gap | CPU s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in args.entries:
        entry = ENTRIES[name]
        for n in args.users:
            if n > entry.max_users:
                continue
            randomizer = entry.make(n)
            ours, cpu = pld_epsilons(randomizer, n, args.deltas)
            for delta, pld in zip(args.deltas, ours):
                core = core_epsilon(randomizer, n, delta)
                print(f"| {name} | {n:.0e} | {delta:g} | {core:.6f} | {pld:.6f} | "
                      f"{pld / core - 1:+.3%} | {cpu:.2f} |", flush=True)


if __name__ == "__main__":
    main()
