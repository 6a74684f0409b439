"""CPU seconds and composed campaigns of ``plan``: every frequency oracle calibrated for a campaign.

Usage: ``python benchmarks/bench_plan.py [--domain D] [--users N] [--rounds R]``. Runs
:func:`dpacct_shuffle.planning.plan_frequency` once (default: the planning issue's command, d = 100,
n = 10⁵, R = 100, total (1, 1e-8)) and prints, per randomizer in calibration order, the campaigns
composed by its search and the CPU seconds (user + system of this process,
``time.process_time``) spent on it, then the total.
"""

from __future__ import annotations

import argparse
import time

from dpacct_shuffle.planning import frequency_candidates, plan_frequency


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", type=int, default=100)
    parser.add_argument("--users", type=int, default=10**5)
    parser.add_argument("--rounds", type=int, default=100)
    args = parser.parse_args()
    names = [candidate.name for candidate in frequency_candidates(args.domain)]
    marks = [time.process_time()]

    def tick(done: int, total: int) -> None:
        marks.append(time.process_time())

    result = plan_frequency(args.domain, args.users, args.rounds, 1.0, 1e-8, progress=tick)
    evaluations = {plan.randomizer.name: plan.evaluations for plan in result.plans}
    epsilon0 = {plan.randomizer.name: plan.epsilon0 for plan in result.plans}
    print(f"plan d={args.domain}, n={args.users}, R={args.rounds}, total (1, 1e-8)")
    print("| randomizer | eps0 | campaigns composed | CPU s |")
    print("|---|---|---|---|")
    for index, name in enumerate(names):
        key = "oue" if name == "optimized_unary_encoding" else name
        print(f"| {name} | {epsilon0[key]:.4f} | {evaluations[key]} | "
              f"{marks[index + 1] - marks[index]:.2f} |")
    print(f"| total | | {sum(evaluations.values())} | {marks[-1] - marks[0]:.2f} |")


if __name__ == "__main__":
    main()
