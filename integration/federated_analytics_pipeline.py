"""End-to-end privacy accounting of a realistic federated-analytics campaign.

One user's total privacy loss over a campaign that mixes everything a production pipeline does:

1. daily frequency estimation (k-ary randomized response over 20 app languages, ε0 = 2), shuffled
   with all clients, 7 days;
2. a survey round in which every client answers one of three questions chosen at random
   (parallel composition, one shuffle round);
3. client-sampled shuffled rounds (20 % of clients per round, 10 rounds) of a binary-RR counter
   (ε0 = 1), where only 80 % of clients are trusted to follow the protocol (robust shuffling);
4. federated learning: 1000 DP-SGD steps, Poisson client sampling q = 0.01, noise multiplier 1.1
   (replace-one: sensitivity 2, dp-accounting's PLD);
5. three local telemetry reports sent without a shuffler (ε = 0.5, 0.5, 1).

Neighbouring relation: replace-one (one client's data replaced) throughout. Every number printed
is an upper bound: ε at the given δ from ``ShufflePLDAccountant`` (pessimistic PLD), and from
``ShuffleRdpAccountant`` where RDP can account the stage ("n/a": RDP cannot account Poisson-
sampled Gaussians under replace-one).

Run ``python integration/federated_analytics_pipeline.py [--clients N] [--delta D] [--json PATH]``
(about a minute at the default 10 000 clients on one core).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import asdict, dataclass

from dp_accounting import dp_event

from dpacct_shuffle import randomizers
from dpacct_shuffle.accountants import ShufflePLDAccountant, ShuffleRdpAccountant
from dpacct_shuffle.events import LDPCompositionEvent, ParallelCompositionEvent, ShuffleEvent


@dataclass(frozen=True)
class StageResult:
    """One stage of the campaign: its ε alone and the campaign's ε up to and including it."""

    name: str
    epsilon_pld: float
    epsilon_rdp: float | None
    cumulative_epsilon_pld: float
    basic_composition_bound: float  # Σ over stages so far of ε_i(δ/k), k = stages so far


def campaign(clients: int) -> list[tuple[str, dp_event.DpEvent]]:
    """The campaign's stages as dp-accounting events."""
    languages = randomizers.krr(epsilon0=2.0, domain_size=20)
    survey = ParallelCompositionEvent(
        branches=[randomizers.binary_rr(epsilon0=1.0), randomizers.krr(epsilon0=2.0, domain_size=5),
                  randomizers.krr(epsilon0=1.5, domain_size=10)],
        num_users=clients,
    )
    counter = ShuffleEvent(randomizers.binary_rr(epsilon0=1.0), clients, honest_fraction=0.8)
    return [
        ("frequency estimation, 7 shuffled rounds",
         dp_event.SelfComposedDpEvent(ShuffleEvent(languages, clients), 7)),
        ("survey, 3 questions in parallel", survey),
        ("sampled counters, 10 rounds (20%, 80% honest)",
         dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(0.2, counter), 10)),
        ("federated learning, 1000 DP-SGD steps",
         dp_event.SelfComposedDpEvent(
             dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.1)), 1000)),
        ("local telemetry, 3 reports", LDPCompositionEvent([0.5, 0.5, 1.0])),
    ]


def account(clients: int, delta: float) -> list[StageResult]:
    """Account each stage alone and the campaign cumulatively."""
    results = []
    cumulative = ShufflePLDAccountant()
    alone: list[ShufflePLDAccountant] = []
    for name, event in campaign(clients):
        stage = ShufflePLDAccountant().compose(event)
        alone.append(stage)
        rdp = ShuffleRdpAccountant()
        epsilon_rdp = rdp.compose(event).get_epsilon(delta) if rdp.supports(event) else None
        cumulative.compose(event)
        basic = math.fsum(a.get_epsilon(delta / len(alone)) for a in alone)
        results.append(StageResult(name, stage.get_epsilon(delta), epsilon_rdp,
                                   cumulative.get_epsilon(delta), basic))
    return results


def format_table(results: list[StageResult], clients: int, delta: float) -> str:
    lines = [f"Federated analytics campaign: {clients} clients, replace-one, delta = {delta:g}",
             f"{'stage':<46} {'eps (PLD)':>10} {'eps (RDP)':>10} {'cumulative':>11} {'basic comp.':>12}"]
    for r in results:
        rdp = "n/a" if r.epsilon_rdp is None else f"{r.epsilon_rdp:.4f}"
        lines.append(f"{r.name:<46} {r.epsilon_pld:>10.4f} {rdp:>10} "
                     f"{r.cumulative_epsilon_pld:>11.4f} {r.basic_composition_bound:>12.4f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=10_000, help="number of clients (>= 2)")
    parser.add_argument("--delta", type=float, default=1e-6, help="target delta in (0, 1)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    args = parser.parse_args(argv)
    if args.clients < 2:
        parser.error(f"--clients must be >= 2, got {args.clients}")
    if not 0.0 < args.delta < 1.0:
        parser.error(f"--delta must be in (0, 1), got {args.delta}")
    start = time.perf_counter()
    results = account(args.clients, args.delta)
    print(format_table(results, args.clients, args.delta))
    print(f"({time.perf_counter() - start:.1f} s)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"clients": args.clients, "delta": args.delta,
                       "stages": [asdict(r) for r in results]}, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
