"""Reproducible comparison against the published bounds.

Run ``python benchmarks/compare.py`` (default: a few minutes on one core) — prints Markdown tables
and, with ``--figure docs/comparison.png``, draws the comparison figure. ``--json FILE`` stores every
number. The three comparisons of the variation-ratio paper (Wang et al., arXiv:2304.05007), redone
with the sound bound:

1. **Single message** (ε0-LDP randomizers of the catalog): our certified, randomizer-specific
   bound vs the Feldman–McMillan–Talwar (FMT) bounds that only use ε0 — the numerical
   stronger-clone bound (our core at worst-case β, where w = 0 and all variants coincide with the
   FMT clone reduction, docs/theory.md, "Monotonicity in β"; checked against the paper authors'
   numbers in ``tests/data``) and the FMT closed form (Feldman, McMillan & Talwar,
   arXiv:2208.04591, Thm 3.2). The published variation-ratio pair (s = 1 − r0 − r1) is shown,
   labelled, for reproduction only: it is not a valid bound in general (docs/theory.md, "Published
   pair"). The certified lower bound of an explicit instance shows the remaining gap.
2. **Parallel composition** (k queries, each user answers one uniformly chosen query with k-RR,
   all reports shuffled together): our composite-randomizer bound with all n users
   (:func:`dpacct_shuffle.profiles.parallel_composite`) vs the conventional accounting that credits
   each query only with its own n/k users (FMT numerical and closed form at n/k, and our own k-RR
   bound at n/k).
3. **Multi-message protocols** (catalog entries with the published parameters): our bound vs FMT
   applied to a user's whole message tuple as one ε0-LDP report (ε0 = ln p; shuffling single
   messages is a post-processing of shuffling tuples, so this baseline is valid). Protocols with
   p = ∞ are not ε0-LDP for any ε0 and have no FMT baseline. The protocols' own specialised
   analyses are not in our sources and are not reproduced.

Savings are ``1 − ours/baseline`` in ε at the same δ; all "ours" numbers are certified upper bounds.
Times are wall-clock seconds per ε computation on the machine that ran the script.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from dpacct_shuffle import randomizers
from dpacct_shuffle.cli import format_lower, format_upper
from dpacct_shuffle.core.bound import published_pair
from dpacct_shuffle.lemmas import fmt_shuffle_bound
from dpacct_shuffle.profiles import parallel_composite

REFERENCE_CSV = Path(__file__).resolve().parent.parent / "tests" / "data" / "published_pair_delta_1e-8.csv"

SINGLE_MESSAGE: dict[str, Callable[[float], Any]] = {
    "k-RR d=10": lambda e: randomizers.krr(e, 10),
    "k-RR d=100": lambda e: randomizers.krr(e, 100),
    "OUE": lambda e: randomizers.oue(e, 100),
    "RAPPOR": lambda e: randomizers.rappor(e, 100),
    "subset selection d=100 k=10": lambda e: randomizers.subset_selection(e, 100, 10),
    "local hashing l=4": lambda e: randomizers.local_hashing(e, 4),
    "Hadamard response K=64": lambda e: randomizers.hadamard_response(e, 64),
    "piecewise": randomizers.piecewise,
}

MULTI_MESSAGE: dict[str, Callable[[], Any]] = {
    "Cheu et al. binary summation f=0.25": lambda: randomizers.cheu_binary_summation(0.25),
    "Cheu et al. binary summation f=0.1": lambda: randomizers.cheu_binary_summation(0.1),
    "mixDUMP f=0.5, d=10": lambda: randomizers.mix_dump(0.5, 10),
    "mixDUMP f=0.75, d=100": lambda: randomizers.mix_dump(0.75, 100),
    "Balcer et al. binary summation c=0.5": lambda: randomizers.balcer_binary_summation(0.5),
    "balls into bins d=10, s=1": lambda: randomizers.balls_into_bins(10, 1),
}


def clear_caches() -> None:
    """Empty the library's memo caches (core brackets, log-factorial tables) so every timing is a
    cold computation, not a cache hit."""
    import dpacct_shuffle.core.bound as bound_module

    for value in vars(bound_module).values():
        if callable(getattr(value, "cache_clear", None)):
            value.cache_clear()


def timed(function: Callable[[], float]) -> tuple[float, float]:
    """(value, seconds) of one cold computation (caches cleared first)."""
    clear_caches()
    start = time.perf_counter()
    value = function()
    return value, time.perf_counter() - start


def fmt_or_none(epsilon0: float, users: int, delta: float) -> float | None:
    """FMT closed form, or None outside its validity condition (never extrapolated)."""
    try:
        return fmt_shuffle_bound(epsilon0, users, delta)
    except ValueError:
        return None


def saving(ours: float, baseline: float | None) -> float | None:
    """1 − ours/baseline (fraction of the baseline's ε saved)."""
    if baseline is None or baseline <= 0.0 or not math.isfinite(baseline):
        return None
    return 1.0 - ours / baseline


def single_message(epsilon0s: Sequence[float], users: Sequence[int], delta: float,
                   lower_max_users: int, log: Callable[[str], None],
                   labels: Sequence[str] = tuple(SINGLE_MESSAGE)) -> list[dict[str, Any]]:
    """Comparison 1: one row per (randomizer, ε0, n), for the entries ``labels``."""
    rows = []
    for eps0 in epsilon0s:
        for n in users:
            clone, clone_s = timed(lambda: randomizers.worst_case_ldp(eps0).shuffled(n).epsilon(delta))
            closed = fmt_or_none(eps0, n, delta)
            for label in labels:
                entry = SINGLE_MESSAGE[label](eps0)
                shuffled = entry.shuffled(n)
                ours, ours_s = timed(lambda: shuffled.epsilon(delta))
                lower = lower_s = None
                if n <= lower_max_users and shuffled.lower_bound is not None:
                    lower, lower_s = timed(lambda: shuffled.epsilon_lower(delta))
                p, beta, q, q1 = entry.published
                published = published_pair(p, beta, q, q1).epsilon(delta, n)
                rows.append({
                    "randomizer": label, "epsilon0": eps0, "users": n, "delta": delta,
                    "beta": entry.variation_ratio.beta,
                    "beta_worst": math.tanh(eps0 / 2.0),
                    "fmt_closed_form": closed, "fmt_numerical_clone": clone,
                    "ours_upper": ours, "ours_lower": lower,
                    "published_pair_not_a_guarantee": published,
                    "saving_vs_fmt_numerical": saving(ours, clone),
                    "saving_vs_fmt_closed_form": saving(ours, closed),
                    "published_saving_vs_fmt_numerical": saving(published, clone),
                    "seconds_ours": ours_s, "seconds_lower": lower_s,
                    "seconds_fmt_numerical": clone_s,
                })
                log(f"single  eps0={eps0:g} n={n:.0e} {label}: ours {ours:.5g} "
                    f"(clone {clone:.5g}) {ours_s:.2f}s")
    return rows


def parallel_composition(epsilon0: float, domain: int, ks: Sequence[int], users: int, delta: float,
                         log: Callable[[str], None]) -> list[dict[str, Any]]:
    """Comparison 2: one row per number of queries k."""
    rows = []
    branch = randomizers.krr(epsilon0, domain)
    for k in ks:
        composite = parallel_composite([branch] * k, [1.0 / k] * k)
        ours, ours_s = timed(lambda: composite.epsilon(delta, users))
        group = users // k
        clone_group = randomizers.worst_case_ldp(epsilon0).shuffled(group).epsilon(delta)
        krr_group = branch.shuffled(group).epsilon(delta)
        closed_group = fmt_or_none(epsilon0, group, delta)
        rows.append({
            "queries": k, "epsilon0": epsilon0, "domain": domain, "users": users, "delta": delta,
            "users_per_query": group,
            "ours_composite_all_users": ours,
            "fmt_numerical_per_query_group": clone_group,
            "fmt_closed_form_per_query_group": closed_group,
            "ours_krr_per_query_group": krr_group,
            "saving_vs_fmt_numerical_groups": saving(ours, clone_group),
            "saving_vs_fmt_closed_form_groups": saving(ours, closed_group),
            "saving_vs_ours_groups": saving(ours, krr_group),
            "seconds_ours": ours_s,
        })
        log(f"parallel k={k}: ours {ours:.5g} vs groups clone {clone_group:.5g} ({ours_s:.2f}s)")
    return rows


def multi_message(users: Sequence[int], delta: float, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """Comparison 3: one row per (protocol, n)."""
    rows = []
    for label, make in MULTI_MESSAGE.items():
        entry = make()
        vr = entry.variation_ratio
        for n in users:
            ours, ours_s = timed(lambda: entry.shuffled(n).epsilon(delta))
            eps0 = vr.epsilon0
            clone = closed = None
            if math.isfinite(eps0):
                clone = randomizers.worst_case_ldp(eps0).shuffled(n).epsilon(delta)
                closed = fmt_or_none(eps0, n, delta)
            rows.append({
                "protocol": label, "users": n, "delta": delta, "p": vr.p, "beta": vr.beta,
                "q": max(vr.q0, vr.q1), "ln_p": eps0, "ours_upper": ours,
                "fmt_numerical_clone_ln_p": clone, "fmt_closed_form_ln_p": closed,
                "saving_vs_fmt_numerical": saving(ours, clone),
                "saving_vs_fmt_closed_form": saving(ours, closed),
                "seconds_ours": ours_s,
            })
            log(f"multi   {label} n={n:.0e}: ours {ours:.5g} ({ours_s:.2f}s)")
    return rows


def reference_check(path: Path, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """Our worst-case (= FMT numerical clone) and k-RR/OUE bounds next to the paper authors' numbers."""
    if not path.exists():
        return []
    rows = []
    with path.open() as handle:
        for record in csv.DictReader(handle):
            eps0, n, delta = float(record["epsilon0"]), int(record["n"]), float(record["delta"])
            kind = record["randomizer"]
            if kind == "worst_case_ldp":
                entry = randomizers.worst_case_ldp(eps0)
            elif kind == "grr":
                entry = randomizers.krr(eps0, int(record["domain"]))
            else:
                entry = randomizers.oue(eps0, 100)
            ours, seconds = timed(lambda: entry.shuffled(n).epsilon(delta))
            rows.append({"randomizer": kind, "epsilon0": eps0, "users": n, "delta": delta,
                         "paper_code_published_pair_upper": float(record["published_pair_eps_upper"]),
                         "paper_code_published_pair_lower": float(record["published_pair_eps_lower"]),
                         "ours_upper": ours, "seconds_ours": seconds})
            log(f"reference {kind} eps0={eps0:g} n={n:.0e}: ours {ours:.6g}")
    return rows


# -- output ---------------------------------------------------------------------------------------
DIGITS = 4  # significant digits of the tables


def cell(value: Any, kind: str = "g") -> str:
    """Markdown cell: numbers to 4 significant digits (``up``: certified upper bounds, rounded up;
    ``down``: certified lower bounds, rounded down; ``g``: to nearest), savings as percentages,
    None as n/a."""
    if value is None:
        return "n/a"
    if kind == "up":
        return format_upper(value, DIGITS)
    if kind == "down":
        return format_lower(value, DIGITS)
    if kind == "pct":
        return f"{100.0 * value + 0.0:.1f}%".replace("-0.0%", "0.0%")
    if kind == "s":
        return f"{value:.2f}"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def table(rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str, str]]) -> str:
    """Markdown table from ``rows`` with ``columns`` = (header, key, kind)."""
    head = "| " + " | ".join(h for h, _, _ in columns) + " |"
    rule = "|" + "|".join("---" for _ in columns) + "|"
    body = ["| " + " | ".join(cell(row.get(key), kind) for _, key, kind in columns) + " |"
            for row in rows]
    return "\n".join([head, rule, *body])


Columns = Sequence[tuple[str, str, str]]
SINGLE_COLUMNS: Columns = [
    ("randomizer", "randomizer", "g"), ("ε0", "epsilon0", "g"), ("n", "users", "g"),
    ("β / β_worst", "beta_ratio", "g"),
    ("FMT closed form", "fmt_closed_form", "g"), ("FMT numerical (clone)", "fmt_numerical_clone", "g"),
    ("ours (certified)", "ours_upper", "up"), ("lower bound", "ours_lower", "down"),
    ("published pair (not a guarantee)", "published_pair_not_a_guarantee", "g"),
    ("saving vs FMT numerical", "saving_vs_fmt_numerical", "pct"),
    ("saving vs FMT closed form", "saving_vs_fmt_closed_form", "pct"),
    ("time ours [s]", "seconds_ours", "s")]
PARALLEL_COLUMNS: Columns = [
    ("k queries", "queries", "g"), ("n/k", "users_per_query", "g"),
    ("FMT closed form, n/k users", "fmt_closed_form_per_query_group", "g"),
    ("FMT numerical, n/k users", "fmt_numerical_per_query_group", "g"),
    ("ours k-RR, n/k users", "ours_krr_per_query_group", "up"),
    ("ours composite, n users", "ours_composite_all_users", "up"),
    ("saving vs FMT numerical (n/k)", "saving_vs_fmt_numerical_groups", "pct"),
    ("saving vs ours (n/k)", "saving_vs_ours_groups", "pct"),
    ("time [s]", "seconds_ours", "s")]
MULTI_COLUMNS: Columns = [
    ("protocol", "protocol", "g"), ("n", "users", "g"), ("p", "p", "g"), ("β", "beta", "g"),
    ("q", "q", "g"), ("FMT closed form at ln p", "fmt_closed_form_ln_p", "g"),
    ("FMT numerical at ln p", "fmt_numerical_clone_ln_p", "g"),
    ("ours (certified)", "ours_upper", "up"),
    ("saving vs FMT numerical", "saving_vs_fmt_numerical", "pct"),
    ("time [s]", "seconds_ours", "s")]
REFERENCE_COLUMNS: Columns = [
    ("randomizer", "randomizer", "g"), ("ε0", "epsilon0", "g"), ("n", "users", "g"),
    ("paper code, lower", "paper_code_published_pair_lower", "g"),
    ("paper code, upper", "paper_code_published_pair_upper", "g"),
    ("ours (certified)", "ours_upper", "up"), ("time [s]", "seconds_ours", "s")]
# (results key, generated block of docs/comparison.md, columns, key columns of a row)
SECTIONS = {"single": ("single_message", "compare_single", SINGLE_COLUMNS, 3),
            "parallel": ("parallel", "compare_parallel", PARALLEL_COLUMNS, 1),
            "multi": ("multi_message", "compare_multi", MULTI_COLUMNS, 2),
            "reference": ("reference", "compare_reference", REFERENCE_COLUMNS, 3)}


def report(results: dict[str, Any]) -> str:
    """The Markdown report (tables and the claimed savings)."""
    parts = []
    single = results.get("single_message", [])
    if single:
        parts.append(f"### 1. Single message (δ = {results['delta']:g})\n")
        parts.append(table(single, SINGLE_COLUMNS))
        best = max(single, key=lambda r: r["saving_vs_fmt_numerical"])
        parts.append(f"\nLargest saving vs the FMT numerical bound: "
                     f"{100 * best['saving_vs_fmt_numerical']:.1f}% ({best['randomizer']}, "
                     f"ε0 = {best['epsilon0']:g}, n = {best['users']}); published pair on the same "
                     f"row: {100 * best['published_saving_vs_fmt_numerical']:.1f}%.")
    parallel = results.get("parallel", [])
    if parallel:
        first = parallel[0]
        parts.append(f"\n### 2. Parallel composition (k-RR d = {first['domain']}, ε0 = "
                     f"{first['epsilon0']:g}, n = {first['users']}, δ = {first['delta']:g})\n")
        parts.append(table(parallel, PARALLEL_COLUMNS))
    multi = results.get("multi_message", [])
    if multi:
        parts.append(f"\n### 3. Multi-message protocols (δ = {results['delta']:g})\n")
        parts.append(table(multi, MULTI_COLUMNS))
    reference = results.get("reference", [])
    if reference:
        parts.append("\n### Consistency with the paper authors' code (published pair, δ = 1e-8)\n")
        parts.append(table(reference, REFERENCE_COLUMNS))
    return "\n".join(parts) + "\n"


def write_markdown(results: dict[str, Any], page: Path, sections: Sequence[str]) -> None:
    """Write the rows of ``sections`` into the generated tables of ``page`` (``markdown``)."""
    from markdown import update_generated_table  # benchmarks/markdown.py (the script's folder)

    for section in sections:
        key, block, columns, key_columns = SECTIONS[section]
        rows = [[cell(row.get(name), kind) for _, name, kind in columns] for row in results[key]]
        note = (f"Generated by `python benchmarks/compare.py --markdown {page.as_posix()}` "
                f"(δ = {results['delta']:g}; `--sections` and `--entries` regenerate some rows).")
        update_generated_table(page, block, note, [header for header, _, _ in columns], rows,
                               key_columns)


def draw_figure(results: dict[str, Any], path: Path, curve_users: Sequence[int], epsilon0: float,
                log: Callable[[str], None]) -> None:
    """Two panels: ε vs n at one ε0 (single message) and ε vs k (parallel composition)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dpacct_shuffle import plots

    delta = results["delta"]
    entries = {"k-RR d=100": randomizers.krr(epsilon0, 100), "OUE": randomizers.oue(epsilon0, 100),
               "worst case ε0-LDP (= FMT numerical clone)": randomizers.worst_case_ldp(epsilon0)}
    start = time.perf_counter()
    curves = plots.epsilon_vs_users(entries, curve_users, delta, lower=True, fmt=True)
    log(f"figure curves: {time.perf_counter() - start:.1f}s")
    fig, (left, right) = plt.subplots(1, 2, figsize=(13.0, 5.2), dpi=110)
    labels = list(entries)
    colours = {label: f"C{i}" for i, label in enumerate(labels)}
    for curve in curves:
        if curve.kind == "fmt":
            left.plot(curve.x, curve.y, ":", color="black", label="FMT closed form")
            continue
        style = "-o" if curve.kind == "upper" else "--v"
        what = "certified upper bound" if curve.kind == "upper" else "lower bound (instance)"
        left.plot(curve.x, curve.y, style, color=colours[curve.label], markersize=4,
                  label=f"{curve.label}: {what}")
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("number of users n")
    left.set_ylabel(f"ε at δ = {delta:g}")
    left.set_title(f"single message, ε0 = {epsilon0:g}")
    left.grid(True, which="both", alpha=0.3)
    left.legend(fontsize=7.5)
    parallel = results.get("parallel", [])
    if parallel:
        ks = [row["queries"] for row in parallel]
        series = [("fmt_closed_form_per_query_group", "FMT closed form, n/k users per query", "k:"),
                  ("fmt_numerical_per_query_group", "FMT numerical clone, n/k users per query", "C2-s"),
                  ("ours_krr_per_query_group", "ours (k-RR), n/k users per query", "C0--^"),
                  ("ours_composite_all_users", "ours, composite randomizer, all n users", "C3-o")]
        for key, label, style in series:
            xs = [k for k, row in zip(ks, parallel) if row[key] is not None]
            ys = [row[key] for row in parallel if row[key] is not None]
            right.plot(xs, ys, style, markersize=5, label=label)
        first = parallel[0]
        right.set_xscale("log", base=2)
        right.set_yscale("log")
        right.set_xlabel("number of parallel queries k (each user answers one)")
        right.set_ylabel(f"ε at δ = {delta:g}")
        right.set_title(f"parallel composition, k-RR d = {first['domain']}, ε0 = "
                        f"{first['epsilon0']:g}, n = {first['users']:.0e}")
        right.grid(True, which="both", alpha=0.3)
        right.legend(fontsize=7.5)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the comparisons; print Markdown; optionally write JSON and the figure."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delta", type=float, default=1e-8)
    parser.add_argument("--epsilon0s", type=lambda s: [float(v) for v in s.split(",")], default=[1.0, 4.0])
    parser.add_argument("--users", type=lambda s: [int(float(v)) for v in s.split(",")],
                        default=[10**4, 10**6])
    parser.add_argument("--lower-max-users", type=float, default=1e5,
                        help="compute lower bounds only up to this n (they are the slow part)")
    parser.add_argument("--parallel-users", type=float, default=1e6)
    parser.add_argument("--parallel-ks", type=lambda s: [int(v) for v in s.split(",")],
                        default=[1, 4, 16, 64, 256])
    parser.add_argument("--figure", type=Path, help="write the comparison figure (PNG/SVG)")
    parser.add_argument("--figure-users", type=lambda s: [int(float(v)) for v in s.split(",")],
                        default=[10**3, 10**4, 10**5, 10**6])
    parser.add_argument("--json", type=Path, help="write all numbers to this JSON file")
    parser.add_argument("--reference", type=Path, default=REFERENCE_CSV,
                        help="CSV of the paper authors' published-pair values (skipped if missing)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    parser.add_argument("--sections", type=lambda s: s.split(","), default=list(SECTIONS),
                        help="comma-separated subset of " + ",".join(SECTIONS))
    parser.add_argument("--entries", type=lambda s: s.split(","), default=list(SINGLE_MESSAGE),
                        help="comma-separated single-message entries (default: all)")
    parser.add_argument("--markdown", type=Path,
                        help="page whose generated tables get the rows (docs/comparison.md)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.sections) - set(SECTIONS)) + sorted(set(args.entries) - set(SINGLE_MESSAGE))
    if unknown:
        parser.error(f"unknown sections or entries {unknown}")

    def log(message: str) -> None:
        if not args.quiet:
            print(message, file=sys.stderr, flush=True)

    start = time.perf_counter()
    results: dict[str, Any] = {"delta": args.delta}
    if "single" in args.sections:
        results["single_message"] = single_message(args.epsilon0s, args.users, args.delta,
                                                   int(args.lower_max_users), log, args.entries)
        for row in results["single_message"]:
            row["beta_ratio"] = row["beta"] / row["beta_worst"]
    if "parallel" in args.sections:
        results["parallel"] = parallel_composition(2.0, 10, args.parallel_ks,
                                                   int(args.parallel_users), args.delta, log)
    if "multi" in args.sections:
        results["multi_message"] = multi_message(args.users, args.delta, log)
    if "reference" in args.sections:
        results["reference"] = reference_check(args.reference, log)
    if args.figure is not None:
        draw_figure(results, args.figure, args.figure_users, 2.0, log)
    results["total_seconds"] = time.perf_counter() - start
    from machine import describe_machine  # benchmarks/machine.py (the script's own folder)

    results["machine"] = describe_machine()
    print(f"machine: {results['machine']}\n")
    print(report(results))
    print(f"total time: {results['total_seconds']:.0f} s")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2))
    if args.markdown is not None:
        write_markdown(results, args.markdown, args.sections)
    return 0


if __name__ == "__main__":
    sys.exit(main())
