"""Run the example on Flower's simulation runtime (Ray backend, CPU):

    python examples/flower/run_simulation.py --num-clients 20
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from flwr.simulation import run_simulation  # noqa: E402

import server_app  # noqa: E402
from client_app import app as client_app  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-clients", type=int, default=20)
    parser.add_argument("--num-cpus", type=int, default=2, help="CPUs Ray may use")
    args = parser.parse_args()
    if args.num_clients < 12:
        parser.error("--num-clients must be at least 12 (10 are sampled per training round)")
    server_app.NUM_CLIENTS = args.num_clients
    run_simulation(server_app.app, client_app, num_supernodes=args.num_clients,
                   backend_config={"init_args": {"num_cpus": args.num_cpus},
                                   "client_resources": {"num_cpus": 1}})


if __name__ == "__main__":
    main()
