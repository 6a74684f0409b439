"""CPU seconds of campaign calibration: the largest ε0 per report for R rounds and a total (ε, δ).

Usage: ``python benchmarks/bench_campaign.py [--rows NAME ...]``. Each row runs
:func:`dpacct_shuffle.campaign.largest_campaign_epsilon0` once and prints the ε0 found, the
certified campaign ε, the number of campaigns composed and the CPU seconds (user + system of this
process, ``time.process_time``).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from dpacct_shuffle import randomizers
from dpacct_shuffle.campaign import Campaign, largest_campaign_epsilon0
from dpacct_shuffle.planning import cover_only

ROWS: dict[str, tuple[Callable[[float], object], int, int, dict[str, float]]] = {
    "krr d=100, n=1e5, 365 rounds": (lambda e: randomizers.krr(e, 100), 10**5, 365, {}),
    "krr d=100, N=1e6 sampled 0.1, 365 rounds": (lambda e: randomizers.krr(e, 100), 10**6, 365,
                                                  {"sampling_probability": 0.1}),
    "rappor d=64 (cover), n=1e6, 365 rounds": (lambda e: cover_only(randomizers.rappor(e, 64)),
                                               10**6, 365, {}),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="*", choices=sorted(ROWS), help="rows to run (default all)")
    args = parser.parse_args()
    print("| campaign (target (1, 1e-8)) | eps0 | campaign eps | campaigns composed | CPU s |")
    print("|---|---|---|---|---|")
    for name in args.rows or list(ROWS):
        family, users, rounds, sampling = ROWS[name]
        start = time.process_time()
        result = largest_campaign_epsilon0(family, 1.0, 1e-8,  # type: ignore[arg-type]
                                           Campaign(family(1.0), users, rounds,  # type: ignore[arg-type]
                                                    **sampling))  # type: ignore[arg-type]
        seconds = time.process_time() - start
        print(f"| {name} | {result.value:.4f} | {result.epsilon:.4f} | {result.evaluations} | "
              f"{seconds:.2f} |", flush=True)


if __name__ == "__main__":
    main()
