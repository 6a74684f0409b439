"""Benchmark of import and start-up times (fresh interpreter per measurement).

Measures, for each target, the wall time of ``python -c CODE`` minus that of ``python -c pass``
(the interpreter's own start-up), the median over ``--repeat`` runs, and lists the heavy modules
(scipy.stats, matplotlib, torch, opacus, dp_accounting, pydantic) the target loaded.

Usage: ``python benchmarks/bench_import.py [--repeat 5]`` — prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time

HEAVY = ("scipy.stats", "matplotlib", "torch", "opacus", "dp_accounting", "pydantic")
TARGETS = {
    "import dpacct_shuffle": "import dpacct_shuffle",
    "dpacct-shuffle --help": ("import contextlib, io\nfrom dpacct_shuffle.cli import main\n"
                              "with contextlib.redirect_stdout(io.StringIO()):\n"
                              "    main(['--help'])"),
    "import dpacct_shuffle.randomizers": "import dpacct_shuffle.randomizers",
    "import dpacct_shuffle.accountants": "import dpacct_shuffle.accountants",
    "import dpacct_shuffle.pipeline": "import dpacct_shuffle.pipeline",
}


def _run(code: str) -> tuple[float, list[str]]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))"
    start = time.perf_counter()
    completed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                               check=True)
    return time.perf_counter() - start, json.loads(completed.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per target (median reported)")
    args = parser.parse_args()
    baseline = statistics.median(_run("pass")[0] for _ in range(args.repeat))
    print(f"python {platform.python_version()}, interpreter start-up {baseline * 1e3:.0f} ms "
          f"(subtracted), median of {args.repeat} runs\n")
    print("| target | time (ms) | heavy modules loaded |")
    print("|---|---:|---|")
    for label, code in TARGETS.items():
        runs = [_run(code) for _ in range(args.repeat)]
        seconds = statistics.median(t for t, _ in runs) - baseline
        loaded = ", ".join(runs[0][1]) or "none"
        print(f"| `{label}` | {seconds * 1e3:.0f} | {loaded} |")


if __name__ == "__main__":
    main()
