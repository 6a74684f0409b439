"""Benchmark: what a real deployment composes, row by row (CPU seconds, a fresh process per row).

Each row runs in a new interpreter: its ``setup`` (imports, building the inputs) is not timed, its
``measured`` statements are, with ``time.process_time`` (user + system CPU of that process), so
caches start cold unless the setup warms them on purpose. Printed: what the row does, the CPU
seconds the issue recorded before the work ("today"), the target, and the seconds measured now
(``> limit`` when the row did not finish within ``--timeout`` seconds of wall time), plus the
value the row computed. BLAS runs on one thread, as in ``bench_cohort.py``.

Usage: ``python benchmarks/bench_deployment.py [--timeout 600] [--only SUBSTRING]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Row:
    """One row: ``setup`` runs untimed, ``measured`` timed; ``measured`` sets ``value``."""

    what: str
    today: str
    target: str
    setup: str
    measured: str


_RAPPOR = "rz.rappor(2.0, 64)"
_MATRIX = "rz.from_matrix([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.25, 0.25, 0.5]])"
_ACCOUNTANT = ("from dp_accounting import dp_event\n"
               "from dpacct_shuffle import randomizers as rz\n"
               "from dpacct_shuffle.accountants import ShufflePLDAccountant\n"
               "from dpacct_shuffle.events import ShuffleEvent\n")


def _cold_epsilon(entry: str, n: int) -> str:
    return f"value = {entry}.shuffled({n}).epsilon(1e-6)"


ROWS = [
    Row("365 rounds of RAPPOR(eps0 = 2, d = 64), n = 10^6, one eps (delta = 1e-6)",
        "> 34", "2", _ACCOUNTANT,
        "accountant = ShufflePLDAccountant()\n"
        f"accountant.compose(dp_event.SelfComposedDpEvent(ShuffleEvent({_RAPPOR}, 10**6), 365))\n"
        "value = accountant.get_epsilon(1e-6)"),
    Row("one Poisson round (gamma = 0.01) of a 3x3 from_matrix randomizer, N = 10^4",
        "> 280", "1", _ACCOUNTANT,
        "accountant = ShufflePLDAccountant()\n"
        f"accountant.compose(dp_event.PoissonSampledDpEvent(0.01, ShuffleEvent({_MATRIX}, 10**4)))\n"
        "value = accountant.get_epsilon(1e-6)"),
    # (scipy.stats, which the package imports on first use, is imported in the setup: the row
    # times the computation; the last row times the import)
    *[Row(f"cold eps of {label}, n = {n} (after imports)", "1.3-3.2", "0.3",
          "import scipy.stats\nfrom dpacct_shuffle import randomizers as rz",
          _cold_epsilon(entry, n))
      for label, entry in (("RAPPOR(2, 64)", _RAPPOR),
                           ("OUE(2, 64)", "rz.optimized_unary_encoding(2.0, 64)"),
                           ("Hadamard(2, 64)", "rz.hadamard_response(2.0, 64)"),
                           ("local hashing(2, 8)", "rz.local_hashing(2.0, 8)"))
      for n in (1_000, 10_000)],
    Row("warm repeat of the same k-RR query (krr(2, 100), n = 10^4, delta = 1e-8)",
        "0.03", "0.001",
        "from dpacct_shuffle import randomizers as rz\n"
        "rz.krr(2.0, 100).shuffled(10**4).epsilon(1e-8)",
        "value = rz.krr(2.0, 100).shuffled(10**4).epsilon(1e-8)"),
    Row("from dpacct_shuffle import randomizers (value: scipy.stats imported)",
        "seconds", "no scipy.stats", "",
        "from dpacct_shuffle import randomizers\n"
        "value = 'scipy.stats' in sys.modules"),
]

_HARNESS = """
import os, sys, time, json
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
{setup}
_start = time.process_time()
{measured}
_cpu = time.process_time() - _start
print(json.dumps({{"cpu": _cpu, "value": repr(value)}}))
"""


def run_row(row: Row, timeout: float) -> tuple[str, str]:
    """(CPU seconds, value) of ``row`` in a fresh interpreter."""
    code = _HARNESS.format(setup=row.setup, measured=textwrap.dedent(row.measured))
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=timeout, cwd=ROOT, env=env, check=False)
    except subprocess.TimeoutExpired:
        return f"> {timeout:g} (wall)", "-"
    if done.returncode != 0:
        return "error", done.stderr.strip().splitlines()[-1] if done.stderr else "?"
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return f"{result['cpu']:.4g}", result["value"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--only", default="", help="run the rows whose text contains this")
    args = parser.parse_args()
    print("| what | today (CPU s) | target (CPU s) | now (CPU s) | value |")
    print("|---|---:|---:|---:|---|")
    for row in ROWS:
        if args.only not in row.what:
            continue
        now, value = run_row(row, args.timeout)
        print(f"| {row.what} | {row.today} | {row.target} | {now} | {value} |", flush=True)


if __name__ == "__main__":
    main()
