"""Benchmark: what a deployment composes, each row in a fresh process (CPU seconds).

Every row of :data:`ROWS` is one workload of a real deployment with a speed target. The script
runs each row in its own fresh Python process (``python bench_deployment.py --run-row NAME``), so
that no cache, import or compiled curve of another row is reused, and measures the row's work
with ``time.process_time`` (user + system CPU of that process; the imports and the construction
of the inputs are done before the clock starts, unless the row measures an import). BLAS runs on
one thread, as in ``bench_cohort.py``.

Printed per row: what is measured, the CPU seconds measured when the row was filed (the *today*
column: a quoted measurement, not re-run), the target, the CPU seconds now (median of
``--repeat`` fresh processes) and the row's result (usually an ε, so that a faster row can be
checked not to have become looser).

Adding a row: write a module-level function decorated with :func:`row`; it does its imports and
builds its inputs, then returns a zero-argument callable, the timed work, which returns the
result as a short string.

Usage: ``python benchmarks/bench_deployment.py [--entries NAME,NAME] [--repeat 3]
[--markdown docs/benchmarks.md]``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy is imported (see the docstring)

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

# run as a script: its folder (markdown.py, machine.py, bench_cohort.py) and the repository root
sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]

from machine import describe_machine  # noqa: E402
from markdown import MarkdownTable, add_table_arguments, selected_entries  # noqa: E402

DELTA = 1e-6  # the δ at which the rows' ε are read


@dataclass(frozen=True)
class Row:
    """One workload: ``what`` is measured, ``today`` quotes the CPU time when it was filed,
    ``target`` is the CPU time it must take, ``setup`` returns the timed work."""

    name: str
    what: str
    today: str
    target: str
    setup: Callable[[], Callable[[], str]]


ROWS: dict[str, Row] = {}


def row(what: str, today: str, target: str) -> Callable[[Callable[[], Callable[[], str]]],
                                                        Callable[[], Callable[[], str]]]:
    """Register the decorated setup function as the row named after it."""
    def register(setup: Callable[[], Callable[[], str]]) -> Callable[[], Callable[[], str]]:
        ROWS[setup.__name__] = Row(setup.__name__, what, today, target, setup)
        return setup
    return register


def _epsilon_of(events: list[object], relation: str = "REPLACE_ONE",
                users_grid_ratio: float | None = None) -> Callable[[], str]:
    """The timed work of a row that composes ``events`` in ``ShufflePLDAccountant`` and reads ε
    at :data:`DELTA`."""
    from dp_accounting.pld.pld_privacy_accountant import NeighborRel

    from dpacct_shuffle.accountants import ShufflePLDAccountant

    def work() -> str:
        accountant = ShufflePLDAccountant(NeighborRel[relation], users_grid_ratio=users_grid_ratio)
        for event in events:
            accountant.compose(event)  # type: ignore[arg-type]
        return f"ε = {accountant.get_epsilon(DELTA):.6g}"
    return work


@row("one add/remove-one Poisson round (k-RR ε0 = 2, d = 100, N = 10⁵, γ = 0.01), PLD + ε",
     "14.8", "0.5")
def poisson_add_remove() -> Callable[[], str]:
    from dp_accounting import dp_event

    from dpacct_shuffle import randomizers as rz
    from dpacct_shuffle.events import ShuffleEvent

    event = dp_event.PoissonSampledDpEvent(0.01, ShuffleEvent(rz.krr(2.0, 100), 100_000))
    return _epsilon_of([event], "ADD_OR_REMOVE_ONE")


@row("fixed-size cohort round (100 of 10⁴, k-RR ε0 = 2, d = 100), PLD + ε", "17.6", "0.5")
def cohort_round() -> Callable[[], str]:
    from dp_accounting import dp_event

    from dpacct_shuffle import randomizers as rz
    from dpacct_shuffle.events import ShuffleEvent

    event = dp_event.SampledWithoutReplacementDpEvent(10_000, 100,
                                                      ShuffleEvent(rz.krr(2.0, 100), 100))
    return _epsilon_of([event])


@row("1000 rounds with 1000 distinct n (`bench_cohort.py`, users grid ratio 1.015)", "4.8", "2")
def cohort_1000_rounds() -> Callable[[], str]:
    from bench_cohort import cohort_sizes

    from dpacct_shuffle import randomizers as rz
    from dpacct_shuffle.events import ShuffleEvent

    krr = rz.krr(2.0, 100)
    events: list[object] = [ShuffleEvent(krr, n) for n in cohort_sizes(1000, 1e4, 1e6, 0)]
    return _epsilon_of(events, users_grid_ratio=1.015)


@row("365 rounds of RAPPOR(ε0 = 2, d = 64), n = 10⁶, one ε", "> 34", "2")
def rappor_365_rounds() -> Callable[[], str]:
    from dp_accounting import dp_event

    from dpacct_shuffle import randomizers as rz
    from dpacct_shuffle.events import ShuffleEvent

    event = dp_event.SelfComposedDpEvent(ShuffleEvent(rz.rappor(2.0, 64), 10**6), 365)
    return _epsilon_of([event])


@row("ε of k-RR(ε0 = 1, d = 4) at δ = 1e-20 and 1e-300, Hadamard response(1, 64) at δ = 1e-15, "
     "n = 10¹²", "> 60", "1")
def tiny_delta_huge_n() -> Callable[[], str]:
    from dpacct_shuffle import randomizers as rz

    def work() -> str:
        shuffled = rz.krr(1.0, 4).shuffled(10**12)
        hadamard = rz.hadamard_response(1.0, 64).shuffled(10**12)
        return (f"{shuffled.epsilon(1e-20):.4g}, {shuffled.epsilon(1e-300):.4g}, "
                f"{hadamard.epsilon(1e-15):.4g}")
    return work


@row("one Poisson round (γ = 0.01) of a 3×3 `from_matrix` randomizer (N = 10⁴)", "> 280", "1")
def matrix_poisson_round() -> Callable[[], str]:
    from dp_accounting import dp_event

    from dpacct_shuffle import randomizers as rz
    from dpacct_shuffle.events import ShuffleEvent

    matrix = rz.from_matrix([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.25, 0.25, 0.5]])
    return _epsilon_of([dp_event.PoissonSampledDpEvent(0.01, ShuffleEvent(matrix, 10**4))])


@row("one random-mode parallel round (k-RR(2, 10) or k-RR(1, 4), n = 64), PLD + ε", "26", "0.5")
def parallel_round_64() -> Callable[[], str]:
    from dpacct_shuffle import randomizers as rz
    from dpacct_shuffle.events import ParallelCompositionEvent

    return _epsilon_of([ParallelCompositionEvent([rz.krr(2.0, 10), rz.krr(1.0, 4)], 64)])


@row("one random-mode parallel round (k-RR(2, 10) or k-RR(1, 4), n = 65), PLD + ε", "18", "0.5")
def parallel_round_65() -> Callable[[], str]:
    from dpacct_shuffle import randomizers as rz
    from dpacct_shuffle.events import ParallelCompositionEvent

    return _epsilon_of([ParallelCompositionEvent([rz.krr(2.0, 10), rz.krr(1.0, 4)], 65)])


@row("one random-mode parallel round (k-RR(2, 10) or k-RR(1, 4), n = 1000), PLD + ε", "2.0",
     "0.5")
def parallel_round_1000() -> Callable[[], str]:
    from dpacct_shuffle import randomizers as rz
    from dpacct_shuffle.events import ParallelCompositionEvent

    return _epsilon_of([ParallelCompositionEvent([rz.krr(2.0, 10), rz.krr(1.0, 4)], 1000)])


@row("one personalized k-RR round (d = 10, ε0 = 1 and 2, 500 users each), PLD + ε", "0.77",
     "0.5")
def personalized_round() -> Callable[[], str]:
    from dpacct_shuffle import randomizers as rz
    from dpacct_shuffle.events import ShuffleEvent

    return _epsilon_of([ShuffleEvent(rz.personalized_krr(10, [(1.0, 500), (2.0, 500)]), 1000)])


@row("one shuffled Gaussian round (σ = 1 on [0, 1], n = 10³), PLD + ε", "6.8", "0.5")
def gaussian_round() -> Callable[[], str]:
    from dpacct_shuffle import randomizers as rz
    from dpacct_shuffle.events import ShuffleEvent

    return _epsilon_of([ShuffleEvent(rz.gaussian(1.0), 1000)])


@row("one shuffled Laplace round (ε0 = 4 on [0, 1], n = 10³), PLD + ε", "20.0", "1")
def laplace_round_1e3() -> Callable[[], str]:
    from dpacct_shuffle import randomizers as rz
    from dpacct_shuffle.events import ShuffleEvent

    return _epsilon_of([ShuffleEvent(rz.laplace(4.0), 1000)])


@row("one shuffled Laplace round (ε0 = 4 on [0, 1], n = 10⁴), PLD + ε", "> 80", "1")
def laplace_round_1e4() -> Callable[[], str]:
    from dpacct_shuffle import randomizers as rz
    from dpacct_shuffle.events import ShuffleEvent

    return _epsilon_of([ShuffleEvent(rz.laplace(4.0), 10_000)])


def _cold_epsilon(entry: str, n: int) -> Callable[[], str]:
    """The timed work of a cold ε row: ``entry``'s shuffled ε at :data:`DELTA` (scipy.stats,
    which the package imports on first use, is imported before the clock starts)."""
    import scipy.stats  # noqa: F401

    from dpacct_shuffle import randomizers as rz

    randomizer = {"rappor": rz.rappor(2.0, 64), "oue": rz.optimized_unary_encoding(2.0, 64),
                  "hadamard": rz.hadamard_response(2.0, 64),
                  "local_hashing": rz.local_hashing(2.0, 8)}[entry]
    return lambda: f"ε = {randomizer.shuffled(n).epsilon(DELTA):.6g}"


@row("cold ε of RAPPOR(2, 64), n = 10⁴ (after imports)", "1.3–3.2", "0.3")
def cold_rappor() -> Callable[[], str]:
    return _cold_epsilon("rappor", 10_000)


@row("cold ε of OUE(2, 64), n = 10⁴ (after imports)", "1.3–3.2", "0.3")
def cold_oue() -> Callable[[], str]:
    return _cold_epsilon("oue", 10_000)


@row("cold ε of Hadamard response(2, 64), n = 10³ (after imports)", "1.3–3.2", "0.3")
def cold_hadamard() -> Callable[[], str]:
    return _cold_epsilon("hadamard", 1_000)


@row("cold ε of local hashing(2, 8), n = 10³ (after imports)", "1.3–3.2", "0.3")
def cold_local_hashing() -> Callable[[], str]:
    return _cold_epsilon("local_hashing", 1_000)


@row("warm repeat of the same k-RR query (krr(2, 100), n = 10⁴, δ = 1e-8)", "0.03", "0.001")
def warm_krr() -> Callable[[], str]:
    from dpacct_shuffle import randomizers as rz

    rz.krr(2.0, 100).shuffled(10**4).epsilon(1e-8)
    return lambda: f"ε = {rz.krr(2.0, 100).shuffled(10**4).epsilon(1e-8):.6g}"


@row("`from dpacct_shuffle import randomizers` (result: scipy.stats imported)", "seconds",
     "no scipy.stats")
def import_randomizers() -> Callable[[], str]:
    def work() -> str:
        from dpacct_shuffle import randomizers  # noqa: F401

        return f"scipy.stats imported: {'scipy.stats' in sys.modules}"
    return work


def run_row(name: str) -> None:
    """Run one row in this process and print ``{"seconds": …, "result": …}`` as JSON."""
    work = ROWS[name].setup()
    start = time.process_time()
    result = work()
    seconds = time.process_time() - start
    print(json.dumps({"seconds": seconds, "result": result}))


def measure(name: str) -> tuple[float, str]:
    """(CPU seconds, result) of one row in a fresh process."""
    completed = subprocess.run([sys.executable, __file__, "--run-row", name], check=True,
                               capture_output=True, text=True)
    answer = json.loads(completed.stdout.strip().splitlines()[-1])
    return float(answer["seconds"]), str(answer["result"])


HEADER = ["what", "today (CPU s)", "target (CPU s)", "now (CPU s)", "result"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_table_arguments(parser, list(ROWS))
    parser.add_argument("--repeat", type=int, default=3,
                        help="fresh processes per row; the median CPU time is printed")
    parser.add_argument("--run-row", choices=sorted(ROWS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run_row is not None:
        run_row(args.run_row)
        return
    if args.repeat < 1:
        parser.error("--repeat must be >= 1")
    names = selected_entries(parser, args, list(ROWS))
    print(describe_machine())
    table = MarkdownTable(HEADER)
    for name in names:
        runs = [measure(name) for _ in range(args.repeat)]
        seconds = statistics.median(s for s, _ in runs)
        entry = ROWS[name]
        table.add([entry.what, entry.today, f"≤ {entry.target}", f"{seconds:.2f}", runs[0][1]])
    table.write(args.markdown, "bench_deployment",
                f"Generated by `python benchmarks/bench_deployment.py --markdown {args.markdown}` "
                f"(δ = {DELTA:g}; *today*: the CPU seconds measured when the workload was filed, "
                f"quoted; *now*: median of {args.repeat} fresh processes; `--entries` "
                "regenerates some rows).", key_columns=1)


if __name__ == "__main__":
    main()
