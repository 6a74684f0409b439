"""Benchmark: one Poisson-sampled or parallel round's PLD through ``ShufflePLDAccountant``.

For each case one round is accounted twice, caches cold:

* *after* — the accountant's default: every VariationRatio of the round's profile read from its
  batched pair curve at ``ROUND_LOWERING`` (a sampled round's void view, participant-count bound
  and analyzed void matrix, :func:`dpacct_shuffle.sampling.poisson_sampled_profile` with
  ``lowering``; a parallel round's composite VariationRatio and composite matrix, the structured
  bounds up to ``PARALLEL_STRUCTURE_PROFILE_MAX_USERS`` users), the profile in array form;
* *before* — the PLD of the profile with every bound evaluated point by point by its own
  evaluation (``poisson_sampled_profile`` without ``lowering``; ``parallel_composite_bound``
  with the structured bounds up to ``PARALLEL_STRUCTURE_MAX_USERS`` users).

Printed: the *before* profile's own ε at ``--delta`` (bisection on its δ(ε)), the ε of each PLD,
the relative gap of *after* to that profile, and the CPU seconds (``time.process_time``) of each
PLD. BLAS runs on one thread, as in ``bench_cohort.py``.

Usage: ``python benchmarks/bench_sampled_pld.py [--delta 1e-6] [--quick]`` (``--quick`` skips the
cases whose *before* PLD takes minutes).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy is imported (see bench_cohort)

import argparse  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

from dp_accounting import dp_event  # noqa: E402

from dpacct_shuffle import VariationRatio  # noqa: E402
from dpacct_shuffle import randomizers as rz  # noqa: E402
from dpacct_shuffle.accountants import ShufflePLDAccountant  # noqa: E402
from dpacct_shuffle.events import ParallelCompositionEvent, ShuffleEvent  # noqa: E402
from dpacct_shuffle.profiles import (  # noqa: E402
    PrivacyProfile,
    parallel_composite_bound,
    pld_from_profile,
    shuffle_profile,
)
from dpacct_shuffle.sampling import poisson_sampled_profile  # noqa: E402

from machine import describe_machine  # noqa: E402  (benchmarks/machine.py, the script's folder)

SURVEY = [rz.binary_rr(1.0), VariationRatio.worst_case(1.5)]


def _sampled(name: str, randomizer, n: int, gamma: float):
    event = dp_event.PoissonSampledDpEvent(gamma, ShuffleEvent(randomizer, n))
    return (name, n, f"{gamma:g}", event,
            lambda: poisson_sampled_profile(randomizer, n, gamma))


def _parallel(n: int):
    event = ParallelCompositionEvent(SURVEY, n)
    return ("parallel: binary RR eps0=1 + worst case eps0=1.5", n, "—", event,
            lambda: shuffle_profile(parallel_composite_bound(SURVEY, [0.5, 0.5]), n))


CASES = [
    _sampled("sampled: k-RR eps0=2 d=100", rz.krr(2.0, 100), 10_000, 0.1),
    _sampled("sampled: k-RR eps0=2 d=100", rz.krr(2.0, 100), 100_000, 0.01),
    _sampled("sampled: worst case eps0=1", VariationRatio.worst_case(1.0), 10_000, 0.05),
    _sampled("sampled: RAPPOR eps0=2 d=10", rz.rappor(2.0, 10), 3_000, 0.2),
    _sampled("sampled: binary RR eps0=1", rz.binary_rr(1.0), 10_000, 0.1),
    _parallel(64),
    _parallel(200),
    _parallel(1_000),
]
# cases whose "before" PLD takes minutes (skipped by --quick)
SLOW = {("parallel: binary RR eps0=1 + worst case eps0=1.5", 1_000)}


def _timed(function: Callable[[], float]) -> tuple[float, float]:
    start = time.process_time()
    value = function()
    return value, time.process_time() - start


def profile_epsilon(profile: PrivacyProfile, delta: float, steps: int = 40) -> float:
    """Smallest ε (bisection on [0, ε cap]) at which the profile is ≤ δ."""
    lo, hi = 0.0, profile.epsilon_cap
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if profile.delta(mid) > delta else (lo, mid)
    return hi


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    print(describe_machine())
    print(f"one round's PLD through ShufflePLDAccountant, delta={args.delta:g}")
    print("| round | N | gamma | profile epsilon | before: PLD epsilon | CPU s | after: PLD epsilon |"
          " gap | CPU s | speed-up |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, n, gamma, event, before_profile in CASES:
        after, after_cpu = _timed(
            lambda: ShufflePLDAccountant().compose(event).get_epsilon(args.delta))
        if args.quick and (name, n) in SLOW:
            print(f"| {name} | {n} | {gamma} | — | — | — | {after:.6f} | — | {after_cpu:.2f} | — |",
                  flush=True)
            continue
        profile = before_profile()
        before, before_cpu = _timed(
            lambda: pld_from_profile(profile).get_epsilon_for_delta(args.delta))
        reference = profile_epsilon(profile, args.delta)
        print(f"| {name} | {n} | {gamma} | {reference:.6f} | {before:.6f} | {before_cpu:.1f} | "
              f"{after:.6f} | {after / reference - 1:+.2%} | {after_cpu:.2f} | "
              f"{before_cpu / after_cpu:.0f}x |", flush=True)


if __name__ == "__main__":
    main()
