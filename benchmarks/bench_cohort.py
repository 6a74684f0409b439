"""Benchmark: a cohort that changes every round, accounted with ``ShufflePLDAccountant``.

``--rounds`` rounds, each a ``ShuffleEvent`` with its own number of users drawn log-uniformly
from [``--low``, ``--high``] (all distinct), composed in two accountants:

* *grid*: ``ShufflePLDAccountant(users_grid_ratio=r)`` — every round accounted at an anchor
  among the rounds' own counts within a factor r below its count
  (:class:`dpacct_shuffle.user_anchors.UserCountAnchors`), one PLD per anchor;
* *exact*: ``ShufflePLDAccountant()`` — every round at its own n (skip with ``--no-exact``).

Printed: distinct n, distinct PLDs, ε at ``--delta`` and CPU seconds (``time.process_time``,
PLD caches cold) of each, and the relative ε gap. BLAS runs on one thread (``OPENBLAS_NUM_THREADS``
defaults to 1 here): the batched curves' small matrix products gain nothing from more threads, and
on a busy machine idle BLAS threads spinning would be counted as CPU time. ``--bound core`` uses
the certified
variation-ratio bound of k-ary RR (ε0 = 2, d = 100); ``--bound chernoff`` its Chernoff-form
bound (:func:`dpacct_shuffle.core.closed_forms.chernoff_delta`, also certified, looser, with no
summation), which isolates the cost of the PLD construction and composition from the cost of
evaluating the core.

Usage: ``python benchmarks/bench_cohort.py [--rounds 1000] [--low 1e4] [--high 1e6]
[--ratio 1.01] [--delta 1e-6] [--bound core|chernoff] [--no-exact] [--seed 0]``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy is imported (see the docstring)

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from dpacct_shuffle import VariationRatio  # noqa: E402
from dpacct_shuffle import randomizers as rz  # noqa: E402
from dpacct_shuffle.accountants import ShufflePLDAccountant  # noqa: E402
from dpacct_shuffle.core.closed_forms import chernoff_delta  # noqa: E402
from dpacct_shuffle.events import ShuffleEvent  # noqa: E402
from dpacct_shuffle.profiles import RandomizerDescription  # noqa: E402
from dpacct_shuffle.user_anchors import UserCountAnchors  # noqa: E402


class ChernoffShuffleBound:
    """The Chernoff-form shuffle bound of a VariationRatio (certified, cheap: no summation)."""

    def __init__(self, vr: VariationRatio) -> None:
        self.vr = vr
        self.epsilon0 = vr.epsilon0

    def delta(self, epsilon: float, n: int) -> float:
        return min(1.0, chernoff_delta(self.vr, epsilon, n))


def cohort_sizes(rounds: int, low: float, high: float, seed: int) -> list[int]:
    """``rounds`` distinct user counts, log-uniform in [low, high]."""
    rng = np.random.default_rng(seed)
    sizes: set[int] = set()
    while len(sizes) < rounds:
        sizes.update(int(v) for v in np.exp(rng.uniform(np.log(low), np.log(high),
                                                        rounds - len(sizes))))
    return sorted(sizes, key=lambda _: rng.random())


def account(randomizer: RandomizerDescription, sizes: list[int], delta: float,
            ratio: float | None) -> tuple[float, float]:
    """(ε at δ, CPU seconds) of the rounds composed one by one, queried once at the end."""
    start = time.process_time()
    accountant = ShufflePLDAccountant(users_grid_ratio=ratio)
    for n in sizes:
        accountant.compose(ShuffleEvent(randomizer, n))
    epsilon = accountant.get_epsilon(delta)
    return epsilon, time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--low", type=float, default=1e4)
    parser.add_argument("--high", type=float, default=1e6)
    parser.add_argument("--ratio", type=float, default=1.01)
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--bound", choices=("core", "chernoff"), default="core")
    parser.add_argument("--no-exact", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    krr = rz.krr(2.0, 100)
    randomizer = krr if args.bound == "core" else ChernoffShuffleBound(krr.variation_ratio)
    sizes = cohort_sizes(args.rounds, args.low, args.high, args.seed)
    anchors = UserCountAnchors(args.ratio)
    anchors.extend(sizes)  # the accountant's anchors: it is queried once, after every round
    print(f"k-RR eps0=2 d=100 ({args.bound} bound), {len(sizes)} rounds, n in "
          f"[{args.low:g}, {args.high:g}], delta={args.delta:g}")
    print("| accounting | distinct PLDs | epsilon | CPU s |")
    print("|---|---:|---:|---:|")
    eps_grid, cpu_grid = account(randomizer, sizes, args.delta, args.ratio)
    print(f"| users grid ratio {args.ratio:g} | {len(anchors.anchors)} | {eps_grid:.6f} | "
          f"{cpu_grid:.1f} |")
    if not args.no_exact:
        eps_exact, cpu_exact = account(randomizer, sizes, args.delta, None)
        print(f"| each round at its own n | {len(sizes)} | {eps_exact:.6f} | {cpu_exact:.1f} |")
        print(f"\nepsilon gap (grid / exact - 1): {eps_grid / eps_exact - 1:+.4%}")


if __name__ == "__main__":
    main()
