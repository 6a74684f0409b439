"""Benchmark of the (ε0, δ0) bounds: what the approximation costs against the pure-ε0 bound.

For k-ary randomized response with ε0 and a leak probability δ0, and n users, at the target δ:
the pure bound's ε (no leak), the leak bound's ε (:func:`~dpacct_shuffle.randomizers.approximate`),
its certified lower ε, the class bound's ε (every (ε0, δ0)-LDP randomizer, Theorem 3.8 of
Feldman, McMillan and Talwar with the exact clone pair) and the theorem's closed form. For Gaussian
noise (ℓ2 clipping C = 1, noise σ): the local ε of one report and the shuffled ε.

Usage: ``python benchmarks/bench_approximate.py [--users 1e4,1e6] [--delta 1e-8]`` — prints
markdown tables.
"""

from __future__ import annotations

import argparse
import time

from dpacct_shuffle import randomizers as rz
from dpacct_shuffle.randomizers.approximate import fmt_theorem_3_8
from dpacct_shuffle.randomizers.gaussian import gaussian_epsilon


def closed_form(eps0: float, delta0: float, n: int, delta: float) -> str:
    try:
        epsilon, total = fmt_theorem_3_8(eps0, delta0, n, delta)
    except ValueError:
        return "condition fails"
    return f"{epsilon:.6g} (at δ = {total:.3g})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--users", default="1e4,1e6")
    parser.add_argument("--delta", type=float, default=1e-8)
    args = parser.parse_args()
    users = [int(float(u)) for u in args.users.split(",")]
    delta = args.delta
    print(f"k-RR, d = 10, δ = {delta:g}\n")
    print("| ε0 | δ0 | n | pure ε | leak bound ε | lower ε | class bound ε | Thm 3.8 closed form | s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for eps0 in (1.0, 4.0):
        for delta0 in (1e-16, 1e-10):
            for n in users:
                start = time.perf_counter()
                pure = rz.krr(eps0, 10).shuffled(n).epsilon(delta)
                leaky = rz.approximate(rz.krr(eps0, 10), delta0).shuffled(n)
                lower, upper = leaky.epsilon_interval(delta)
                whole = rz.approximate_ldp(eps0, delta0).shuffled(n).epsilon(delta)
                seconds = time.perf_counter() - start
                print(f"| {eps0:g} | {delta0:g} | {n} | {pure:.6g} | {upper:.6g} | {lower:.6g} "
                      f"| {whole:.6g} | {closed_form(eps0, delta0, n * 1, delta)} | {seconds:.1f} |")
    print(f"\nGaussian noise, ℓ2 clipping C = 1 (sensitivity 2), δ = {delta:g}\n")
    print("| σ | n | local ε | shuffled ε | s |")
    print("|---|---|---|---|---|")
    for sigma in (2.0, 8.0):
        for n in users:
            start = time.perf_counter()
            shuffled = rz.gaussian_vector(sigma, clipping_norm=1.0).shuffled(n).epsilon(delta)
            print(f"| {sigma:g} | {n} | {gaussian_epsilon(2.0 / sigma, delta):.6g} "
                  f"| {shuffled:.6g} | {time.perf_counter() - start:.1f} |")


if __name__ == "__main__":
    main()
