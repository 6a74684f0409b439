"""Generate the figures of the documentation pages (SVG, in ``docs/figures/``).

* ``epsilon-vs-users.svg`` — ε(δ) of one shuffle round against the number of users n for three
  randomizers at ε0 = 2, beside the Feldman–McMillan–Talwar closed form
  (:func:`dpacct_shuffle.plots.epsilon_vs_users`); shown on the home page and the catalog page;
* ``sampled-vs-unsampled.svg`` — ε(δ) of one round of a population of N clients when all report,
  when each reports with probability γ (Poisson, add/remove- and replace-one bound of
  :mod:`dpacct_shuffle.sampling`) and when a cohort of N/10 is drawn without replacement
  (:func:`dpacct_shuffle.shuffle_round.epsilon_bounds`); shown on the client-sampling page;
* ``upper-vs-lower.svg`` — the certified upper bound and the certified lower bound (exact ε of an
  explicit instance) against ε0 at n fixed, for k-RR, RAPPOR and subset selection (:func:`dpacct_shuffle.plots.epsilon_vs_epsilon0`):
  the true ε lies between the two lines; shown on the lower-bounds and tightness pages;
* ``epsilon-vs-rounds.svg`` — ε(δ) of a campaign of R daily rounds against R, every user
  reporting or each with probability γ (:func:`dpacct_shuffle.plots.epsilon_vs_rounds`, composed
  by ``ShufflePLDAccountant``); shown on the planning page;
* ``error-vs-epsilon.svg`` — the standard deviation of one round's frequency estimate against the
  total ε, each frequency oracle at its own largest certified ε0
  (:func:`dpacct_shuffle.plots.error_vs_epsilon`); shown on the planning page.

Every number comes from the library; drawing is :func:`dpacct_shuffle.plots.draw_curves` (the
``plot`` extra, matplotlib). Usage, from the repository root::

    python docs/make_figures.py [--output DIR] [--small]

``--small`` uses a few points per curve (what the test runs); the committed figures are the
default configuration (about a minute of CPU).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without installing the package
    sys.path.insert(0, str(ROOT))

from dpacct_shuffle import plots, randomizers  # noqa: E402
from dpacct_shuffle.shuffle_round import epsilon_bounds  # noqa: E402

DELTA = 1e-8
FIGURES = ("epsilon-vs-users.svg", "sampled-vs-unsampled.svg", "upper-vs-lower.svg",
           "epsilon-vs-rounds.svg", "error-vs-epsilon.svg")


@dataclass(frozen=True)
class Configuration:
    """The points of each figure."""

    users: tuple[int, ...]  # epsilon-vs-users
    populations: tuple[int, ...]  # sampled-vs-unsampled
    epsilon0s: tuple[float, ...]  # upper-vs-lower
    users_upper_lower: int
    rounds: tuple[int, ...]  # epsilon-vs-rounds
    users_rounds: int
    totals: tuple[float, ...]  # error-vs-epsilon
    users_error: int
    domain_error: int
    oracles: tuple[str, ...]


FULL = Configuration(users=(10**3, 3 * 10**3, 10**4, 3 * 10**4, 10**5, 3 * 10**5, 10**6, 10**7),
                     populations=(10**3, 3 * 10**3, 10**4, 3 * 10**4, 10**5, 10**6),
                     epsilon0s=(0.5, 1.0, 2.0, 3.0, 4.0, 6.0), users_upper_lower=10**4,
                     rounds=(1, 3, 10, 30, 100, 365), users_rounds=10**5,
                     totals=(0.05, 0.1, 0.2, 0.5, 1.0, 2.0), users_error=10**5, domain_error=100,
                     oracles=("krr", "oue", "rappor", "hadamard_response"))
SMALL = Configuration(users=(10**3, 10**4), populations=(500, 1000), epsilon0s=(1.0, 2.0),
                      users_upper_lower=500, rounds=(1, 10), users_rounds=1000,
                      totals=(2.0,), users_error=500, domain_error=4, oracles=("krr",))


def epsilon_vs_users(configuration: Configuration, output: Path) -> Path:
    """ε against n for k-RR on 100 values, binary RR and the worst case of ε0-LDP, ε0 = 2."""
    entries = {"k-RR, d = 100": randomizers.krr(2.0, 100),
               "binary RR": randomizers.binary_rr(2.0),
               "any eps0-LDP randomizer": randomizers.worst_case_ldp(2.0)}
    curves = plots.epsilon_vs_users(entries, configuration.users, DELTA, lower=False)
    return plots.draw_curves(curves, output / FIGURES[0],
                             title=f"one shuffle round, eps0 = 2, delta = {DELTA:g}")


def sampled_vs_unsampled(configuration: Configuration, output: Path) -> Path:
    """ε against the population N for k-RR (ε0 = 2, d = 10): every client reports, Poisson
    sampling with γ = 0.1 and 0.01, a fixed-size cohort of N/10."""
    randomizer = randomizers.krr(2.0, 10)
    settings: dict[str, Callable[[int], dict[str, Any]]] = {
        "all N clients report": lambda population: {},
        "each reports w.p. 0.1 (Poisson)": lambda population: {"sampling_probability": 0.1},
        "each reports w.p. 0.01 (Poisson)": lambda population: {"sampling_probability": 0.01},
        "cohort of N/10 (without replacement)": lambda population: {
            "sample_size": population // 10},
    }
    xs = tuple(float(n) for n in configuration.populations)
    curves = [plots.Curve(label, "upper", "users", xs, tuple(
        epsilon_bounds(randomizer, population, DELTA, lower=False, **options(population)).upper
        for population in configuration.populations)) for label, options in settings.items()]
    return plots.draw_curves(curves, output / FIGURES[1],
                             title=f"k-RR (eps0 = 2, d = 10), delta = {DELTA:g}: sampled or not")


def upper_vs_lower(configuration: Configuration, output: Path) -> Path:
    """Certified upper and lower bounds against ε0 for k-RR, RAPPOR and subset selection (k = 3),
    all on 10 values."""
    factories = {"k-RR, d = 10": lambda eps0: randomizers.krr(eps0, 10),
                 "RAPPOR, d = 10": lambda eps0: randomizers.rappor(eps0, 10),
                 "subset selection, d = 10, k = 3":
                     lambda eps0: randomizers.subset_selection(eps0, 10, 3)}
    curves = plots.epsilon_vs_epsilon0(factories, configuration.epsilon0s,
                                       configuration.users_upper_lower, DELTA, fmt=False)
    return plots.draw_curves(curves, output / FIGURES[2],
                             title=f"upper and lower bounds, n = {configuration.users_upper_lower}, "
                             f"delta = {DELTA:g}")


def epsilon_vs_rounds(configuration: Configuration, output: Path) -> Path:
    """ε of R rounds against R for k-RR on 100 values and binary RR (ε0 = 1), every user
    reporting or each with probability 0.1 (replace-one)."""
    entries = {"k-RR, d = 100": randomizers.krr(1.0, 100), "binary RR": randomizers.binary_rr(1.0)}
    curves = plots.epsilon_vs_rounds(entries, configuration.rounds, configuration.users_rounds,
                                     DELTA, sampling_probability=0.1, progress=False)
    return plots.draw_curves(curves, output / FIGURES[3],
                             title=f"R rounds of {configuration.users_rounds:,} users, eps0 = 1, "
                             f"delta = {DELTA:g}")


def error_vs_epsilon(configuration: Configuration, output: Path) -> Path:
    """Std of one round's frequency estimate against the total ε (one round), each oracle at its
    own certified ε0."""
    curves = plots.error_vs_epsilon(configuration.totals, configuration.users_error, DELTA,
                                    domain_size=configuration.domain_error,
                                    candidates=configuration.oracles, progress=False)
    return plots.draw_curves(curves, output / FIGURES[4],
                             title=f"one round of {configuration.users_error:,} users, "
                             f"d = {configuration.domain_error}, delta = {DELTA:g}")


def make_figures(output: Path, configuration: Configuration = FULL) -> list[Path]:
    """Write every figure of :data:`FIGURES` into ``output`` (an existing directory)."""
    plots.check_output_path(output / FIGURES[0])
    return [epsilon_vs_users(configuration, output), sampled_vs_unsampled(configuration, output),
            upper_vs_lower(configuration, output), epsilon_vs_rounds(configuration, output),
            error_vs_epsilon(configuration, output)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "figures",
                        help="directory of the figures (default docs/figures)")
    parser.add_argument("--small", action="store_true", help="a few points per curve")
    args = parser.parse_args(argv)
    args.output.mkdir(parents=True, exist_ok=True)
    for path in make_figures(args.output, SMALL if args.small else FULL):
        print("wrote", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
