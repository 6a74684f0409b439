"""Benchmark: a cohort that changes every round, accounted with ``ShufflePLDAccountant``.

``--rounds`` rounds, each a ``ShuffleEvent`` with its own number of users drawn log-uniformly
from [``--low``, ``--high``] (all distinct), composed in these accountants:

* *users grid ratio r* (each r of ``--ratios``): ``ShufflePLDAccountant(users_grid_ratio=r)`` —
  every round accounted at an anchor among the rounds' own counts within a factor r below its
  count (:class:`dpacct_shuffle.user_anchors.UserCountAnchors`), one PLD per anchor;
* *each round at its own n*: ``ShufflePLDAccountant()`` (skip with ``--no-exact``).

Printed: distinct PLDs, ε at ``--delta``, its gap to each round at its own n and the CPU seconds
(``time.process_time``) of each, every accountant in a fresh process (caches cold). BLAS runs on
one thread (``OPENBLAS_NUM_THREADS`` defaults to 1 here): the batched curves' small matrix
products gain nothing from more threads, and on a busy machine idle BLAS threads spinning would
be counted as CPU time. ``--bound core`` uses the certified variation-ratio bound of k-ary RR
(ε0 = 2, d = 100); ``--bound chernoff`` its Chernoff-form bound
(:func:`dpacct_shuffle.core.closed_forms.chernoff_delta`, also certified, looser, with no
summation), which isolates the cost of the PLD construction and composition from the cost of
evaluating the core. ``--markdown PAGE`` writes the rows into the page's generated table
``bench_cohort`` (:mod:`markdown`).

Usage: ``python benchmarks/bench_cohort.py [--rounds 1000] [--low 1e4] [--high 1e6]
[--ratios 1.015] [--delta 1e-6] [--bound core|chernoff] [--no-exact] [--seed 0]
[--markdown docs/cohorts.md]``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy is imported (see the docstring)

import argparse  # noqa: E402
import multiprocessing  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from dpacct_shuffle import VariationRatio  # noqa: E402
from dpacct_shuffle import randomizers as rz  # noqa: E402
from dpacct_shuffle.accountants import ShufflePLDAccountant  # noqa: E402
from dpacct_shuffle.core.closed_forms import chernoff_delta  # noqa: E402
from dpacct_shuffle.events import ShuffleEvent  # noqa: E402
from dpacct_shuffle.user_anchors import UserCountAnchors  # noqa: E402
from markdown import MarkdownTable  # noqa: E402


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


def account(bound: str, sizes: list[int], delta: float,
            ratio: float | None) -> tuple[float, float]:
    """(ε at δ, CPU seconds) of the rounds composed one by one, queried once at the end."""
    krr = rz.krr(2.0, 100)
    randomizer = krr if bound == "core" else ChernoffShuffleBound(krr.variation_ratio)
    start = time.process_time()
    accountant = ShufflePLDAccountant(users_grid_ratio=ratio)
    for n in sizes:
        accountant.compose(ShuffleEvent(randomizer, n))
    epsilon = accountant.get_epsilon(delta)
    return epsilon, time.process_time() - start


def account_cold(bound: str, sizes: list[int], delta: float,
                 ratio: float | None) -> tuple[float, float]:
    """:func:`account` in a fresh process: every cache (curves, profiles, PLDs) starts empty."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                             max_tasks_per_child=1) as pool:
        return pool.submit(account, bound, sizes, delta, ratio).result()


HEADER = ["accounting", "distinct PLDs", "epsilon", "gap", "CPU s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--low", type=float, default=1e4)
    parser.add_argument("--high", type=float, default=1e6)
    parser.add_argument("--ratios", type=lambda text: [float(r) for r in text.split(",")],
                        default=[1.015], help="comma-separated users grid ratios")
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--bound", choices=("core", "chernoff"), default="core")
    parser.add_argument("--no-exact", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--markdown", type=Path, help="page whose generated table gets the rows")
    args = parser.parse_args()

    sizes = cohort_sizes(args.rounds, args.low, args.high, args.seed)
    print(f"k-RR eps0=2 d=100 ({args.bound} bound), {len(sizes)} rounds, n in "
          f"[{args.low:g}, {args.high:g}], delta={args.delta:g}")
    table = MarkdownTable(HEADER)
    exact = None
    if not args.no_exact:
        exact, cpu = account_cold(args.bound, sizes, args.delta, None)
        table.add(["each round at its own n", str(len(sizes)), f"{exact:.6f}", "", f"{cpu:.1f}"])
    for ratio in args.ratios:
        anchors = UserCountAnchors(ratio)
        anchors.extend(sizes)  # the accountant's anchors: it is queried once, after every round
        epsilon, cpu = account_cold(args.bound, sizes, args.delta, ratio)
        gap = "" if exact is None else f"{epsilon / exact - 1:+.3%}"
        table.add([f"users grid ratio {ratio:g}", str(len(anchors.anchors)), f"{epsilon:.6f}", gap,
                   f"{cpu:.1f}"])
    table.write(args.markdown, "bench_cohort",
                f"Generated by `python benchmarks/bench_cohort.py --ratios "
                f"{','.join(f'{r:g}' for r in args.ratios)} --markdown {args.markdown}` "
                f"(k-RR ε0 = 2, d = 100, {len(sizes)} rounds with distinct n in "
                f"[{args.low:g}, {args.high:g}], δ = {args.delta:g}, {args.bound} bound; CPU "
                "seconds of one run, caches cold).", key_columns=1)


if __name__ == "__main__":
    main()
