"""Benchmark: one batched pair curve (``dpacct_shuffle.core.batched``) per number of users.

For k-ary RR (ε0 = 2, d = 100), ``--count`` values of n log-uniform in [``--low``, ``--high``]
and the lowering η = ``--lowering``, builds each curve ``_batched_delta(vr, n, η, 1e-18)`` with its
cache cold and prints per n: CPU milliseconds per curve (``time.process_time``, best of ``--repeat``),
its cells, and δ at the ε where the curve crosses δ = 1e-6 and 1e-12. With ``--against REV`` the
same is printed for the module of git revision REV (``git show REV:dpacct_shuffle/core/batched.py``,
imported from a temporary directory against the current package), beside the current one, with
the speed-up and the largest relative δ difference over ε where δ > 1e-15. The last row is the
mean over n (the average cost of a curve for n log-uniform in the range). BLAS runs on one thread
(as in ``bench_cohort.py``).

Usage: ``python benchmarks/bench_batched.py [--count 30] [--low 1e4] [--high 1e6]
[--lowering 5e-4] [--repeat 3] [--against REV]``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy is imported

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from types import ModuleType  # noqa: E402

import numpy as np  # noqa: E402

from dpacct_shuffle import randomizers as rz  # noqa: E402
from dpacct_shuffle.core import batched  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import describe_machine  # noqa: E402

_TAIL = 1e-18


def module_at_revision(revision: str) -> ModuleType:
    """The batched module of a git revision, imported under another name."""
    root = Path(__file__).resolve().parent.parent
    source = subprocess.run(["git", "show", f"{revision}:dpacct_shuffle/core/batched.py"],
                            cwd=root, check=True, capture_output=True, text=True).stdout
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "batched_at_revision.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location("batched_at_revision", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


def build(module: ModuleType, vr: object, n: int, lowering: float,
          repeat: int) -> tuple[float, object]:
    """(best CPU milliseconds of one cold build, the curve)."""
    best = float("inf")
    for _ in range(repeat):
        module._batched_delta.cache_clear()
        start = time.process_time()
        curve = module._batched_delta(vr, n, lowering, _TAIL)
        best = min(best, time.process_time() - start)
    return best * 1e3, curve


def epsilon_at(curve: object, delta: float, epsilon0: float) -> float:
    """The ε where the curve crosses δ (bisection)."""
    low, high = 0.0, epsilon0
    for _ in range(60):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if curve.delta(middle) > delta else (low, middle)
    return high


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--low", type=float, default=1e4)
    parser.add_argument("--high", type=float, default=1e6)
    parser.add_argument("--lowering", type=float, default=5e-4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--against", default=None, help="git revision to compare with")
    args = parser.parse_args()

    vr = rz.krr(2.0, 100).variation_ratio
    sizes = [int(v) for v in np.geomspace(args.low, args.high, args.count)]
    reference = module_at_revision(args.against) if args.against else None
    modules = ([reference] if reference else []) + [batched]
    for module in modules:  # warm-up (imports, tables)
        module._batched_delta(vr, sizes[-1] + 1, args.lowering, _TAIL)
    print(describe_machine())
    print(f"k-RR eps0=2 d=100, lowering {args.lowering:g}, {len(sizes)} n in "
          f"[{args.low:g}, {args.high:g}]")
    if reference:
        print(f"| n | ms ({args.against}) | ms | speed-up | cells ({args.against}) | cells | "
              f"δ(ε₆) ({args.against}) | δ(ε₆) | δ(ε₁₂) ({args.against}) | δ(ε₁₂) | "
              "max rel. δ diff. |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    else:
        print("| n | ms | cells | δ(ε₆) | δ(ε₁₂) |")
        print("|---:|---:|---:|---:|---:|")
    totals = np.zeros(2)
    for n in sizes:
        ms, curve = build(batched, vr, n, args.lowering, args.repeat)
        eps6, eps12 = (epsilon_at(curve, d, vr.epsilon0) for d in (1e-6, 1e-12))
        if reference:
            ms_ref, curve_ref = build(reference, vr, n, args.lowering, args.repeat)
            grid = np.linspace(0.0, vr.epsilon0, 4001)
            old, new = curve_ref.deltas(grid), curve.deltas(grid)
            kept = old > 1e-15
            difference = float(np.max(np.abs(new[kept] / old[kept] - 1.0)))
            totals += (ms_ref, ms)
            print(f"| {n} | {ms_ref:.2f} | {ms:.2f} | {ms_ref / ms:.2f} | "
                  f"{len(curve_ref.losses)} | {len(curve.losses)} | "
                  f"{curve_ref.delta(eps6):.6e} | {curve.delta(eps6):.6e} | "
                  f"{curve_ref.delta(eps12):.6e} | {curve.delta(eps12):.6e} | "
                  f"{difference:.1e} |")
        else:
            totals += (0.0, ms)
            print(f"| {n} | {ms:.2f} | {len(curve.losses)} | {curve.delta(eps6):.6e} | "
                  f"{curve.delta(eps12):.6e} |")
    mean = totals / len(sizes)
    if reference:
        print(f"| mean | {mean[0]:.2f} | {mean[1]:.2f} | {mean[0] / mean[1]:.2f} | | | | | | | |")
    else:
        print(f"| mean | {mean[1]:.2f} | | | |")


if __name__ == "__main__":
    main()
