"""Real deployments side by side: what each costs in ε with this package and with the published or
closed-form accounting, and what accuracy it buys.

Three scenarios with published parameters:

* **An Apple-style campaign** — ε0 of 1 or 2 per datum, up to 16 reports a day for 30 to 365 days,
  n = 10⁶ to 10⁸ devices, d = 10³ to 10⁴ values (the parameter ranges of Apple's Differential
  Privacy Team, "Learning with Privacy at Scale", Apple Machine Learning Journal, 2017). Every
  report is an ε0-LDP frequency report, shuffled with the other devices' reports of its slot.
* **Chrome's RAPPOR** — 128-bit Bloom filters, h = 2 hash functions, f = 0.5, p = 0.5, q = 0.75
  (Erlingsson, Pihur & Korolova, "RAPPOR: Randomized Aggregatable Privacy-Preserving Ordinal
  Response", CCS 2014, Section 6), one report per client.
* **A Flower DP-FedAvg run** — ``LocalDpMod`` Gaussian noise on updates clipped to norm C, 100 of
  10⁴ clients a round, 1000 rounds.

For each: the certified ε of this package (``Campaign.epsilon``: ``ShufflePLDAccountant``) beside
the accounting available without it — local DP with basic composition, and the closed form of
Feldman, McMillan & Talwar (FOCS 2021, arXiv:2012.12803; ε0-LDP: SODA 2023 form, arXiv:2208.04591,
Thm 3.2) per round, composed optimally over the rounds (dp-accounting's PLD of an (ε, δ)-DP
mechanism, self-composed) — and the standard deviation of one round's estimate
(:mod:`dpacct_shuffle.accuracy`).

Usage, from the repository root::

    python examples/deployment_scenarios.py              # the tables, as text
    python examples/deployment_scenarios.py --markdown > docs/scenarios.md

``tests/test_scenarios_page.py`` checks that ``docs/scenarios.md`` is this script's output.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without installing the package
    sys.path.insert(0, str(ROOT))

from dp_accounting import dp_event, privacy_accountant  # noqa: E402
from dp_accounting.pld import common as pld_common  # noqa: E402
from dp_accounting.pld import privacy_loss_distribution as pld_lib  # noqa: E402
from dp_accounting.rdp import rdp_privacy_accountant as rdp_accountant  # noqa: E402

from dpacct_shuffle import randomizers  # noqa: E402
from dpacct_shuffle.accuracy import frequency_std, mean_std  # noqa: E402
from dpacct_shuffle.campaign import Campaign  # noqa: E402
from dpacct_shuffle.core.closed_forms import fmt_epsilon  # noqa: E402
from dpacct_shuffle.randomizers.frequency import UnaryEncodingOracle  # noqa: E402
from dpacct_shuffle.randomizers.gaussian import (gaussian_epsilon,  # noqa: E402
                                                 local_dp_mod_noise_std)

#: δ of every row: 1/(100·n), n the population.
DELTA_PER_USER = 0.01
#: Shares c of the total δ given to the per-round δ of a composed closed form (δ_r = c·δ/R); the
#: best is reported.
DELTA_SHARES = (0.1, 0.3, 0.5, 0.7, 0.9)
#: Discretization of dp-accounting's PLDs for the composed closed forms (rounded up: pessimistic).
PLD_INTERVAL = 1e-4


def delta_for(population: int) -> float:
    """The δ of a row: 1/(100·population)."""
    return DELTA_PER_USER / population


def composed_epsilon(round_epsilon: float, round_delta: float, rounds: int, delta: float) -> float:
    """ε at ``delta`` of ``rounds`` (ε_r, δ_r)-DP rounds composed optimally: dp-accounting's PLD of
    the leaky randomized response (Kairouz, Oh & Viswanath, ICML 2015), which every (ε_r, δ_r)-DP
    round post-processes, self-composed."""
    pld = pld_lib.from_privacy_parameters(
        pld_common.DifferentialPrivacyParameters(round_epsilon, round_delta), PLD_INTERVAL)
    return float(pld.self_compose(rounds).get_epsilon_for_delta(delta))


def best_split(round_bound: Callable[[float], tuple[float, float]], rounds: int,
               delta: float) -> float | None:
    """Smallest composed ε over the shares of :data:`DELTA_SHARES`; ``round_bound(δ_r)`` gives a
    round's (ε_r, δ_r') or raises ValueError where its closed form does not apply (None if it
    applies at no share)."""
    values = []
    for share in DELTA_SHARES:
        try:
            round_epsilon, round_delta = round_bound(share * delta / rounds)
        except ValueError:
            continue
        values.append(composed_epsilon(round_epsilon, round_delta, rounds, delta))
    return min(values) if values else None


def fmt_campaign_epsilon(epsilon0: float, users: int, rounds: int, delta: float) -> float | None:
    """FMT's closed form for one round of ``users`` ε0-LDP reports, composed over ``rounds``."""
    return best_split(lambda round_delta: (fmt_epsilon(epsilon0, users, round_delta), round_delta),
                      rounds, delta)


def fmt(value: float | None, digits: int = 3) -> str:
    """A number to ``digits`` significant digits ("n/a" for None, "∞" for inf)."""
    if value is None:
        return "n/a"
    if math.isinf(value):
        return "∞"
    if abs(value) >= 10**digits:
        return f"{value:.0f}"
    return f"{value:.{digits}g}"


_SUPERSCRIPTS = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def power_of_ten(value: int) -> str:
    """``value`` as 10 to a power, e.g. 10⁶ (the nearest power)."""
    return "10" + str(round(math.log10(value))).translate(_SUPERSCRIPTS)


@dataclass(frozen=True)
class Table:
    """One scenario's table: a title, the text above it, the header and a row function."""

    title: str
    text: str
    header: tuple[str, ...]
    settings: tuple[tuple[object, ...], ...]
    row: Callable[..., tuple[str, ...]]

    def rows(self, indices: Sequence[int] | None = None) -> list[tuple[str, ...]]:
        """The rows of the settings (all, or those at ``indices``)."""
        chosen = range(len(self.settings)) if indices is None else indices
        return [self.row(*self.settings[i]) for i in chosen]


def table_line(cells: Sequence[str]) -> str:
    """One line of a markdown table."""
    return "| " + " | ".join(cells) + " |"


# -- Apple-style campaign ----------------------------------------------------------------------
def apple_row(epsilon0: float, per_day: int, days: int, users: int, domain: int) -> tuple[str, ...]:
    rounds = per_day * days
    delta = delta_for(users)
    outputs = 1 << domain.bit_length()  # smallest power of two above d
    hadamard = randomizers.hadamard_response(epsilon0, outputs, domain_size=domain)
    any_ldp = Campaign(randomizers.worst_case_ldp(epsilon0), users, rounds).epsilon(delta)
    ours = Campaign(hadamard, users, rounds).epsilon(delta)
    return (fmt(epsilon0), f"{per_day} × {days}", power_of_ten(users),
            f"{domain:,}", fmt(delta), fmt(rounds * epsilon0),
            fmt(fmt_campaign_epsilon(epsilon0, users, rounds, delta)), fmt(any_ldp), fmt(ours),
            fmt(frequency_std(hadamard, users)))


APPLE = Table(
    title="An Apple-style campaign",
    text=(
        "Parameter ranges of Apple's deployment (Apple Differential Privacy Team, \"Learning with "
        "Privacy at Scale\", Apple Machine Learning Journal, 2017): ε0 of 1 or 2 per datum, up to "
        "16 reports a day, for 30 to 365 days, from n = 10⁶ to 10⁸ devices, over d = 10³ to 10⁴ "
        "values. Each of the R = reports a day × days reports of a device is ε0-LDP and shuffled "
        "with the n − 1 other devices' reports of its slot (reports of several slots shuffled "
        "together are a post-processing of the slots shuffled apart, so the bound holds for them "
        "too).\n\n"
        "* *local, basic composition*: R·ε0, the guarantee without a shuffler;\n"
        "* *FMT, composed*: the Feldman–McMillan–Talwar closed form for one round of n ε0-LDP "
        "reports at δ_r, the R rounds composed optimally by dp-accounting (best of δ_r = "
        "c·δ/R for c in 0.1 … 0.9);\n"
        "* *ours, any ε0-LDP*: this package's certified ε for every ε0-LDP randomizer (so also "
        "for Apple's count-mean sketches);\n"
        "* *ours, Hadamard response*: the same for the catalog's Hadamard response with K the "
        "smallest power of two above d (one Hadamard coefficient per report, as in Apple's "
        "Hadamard count-mean sketch);\n"
        "* *std*: standard deviation of one round's estimated frequency of an item nobody holds, "
        "Hadamard response with n reports."),
    header=("ε0", "reports a day × days", "n", "d", "δ", "local, basic composition",
            "FMT, composed", "ours, any ε0-LDP", "ours, Hadamard response", "std of a frequency"),
    settings=((1.0, 1, 30, 10**6, 10**3), (2.0, 1, 365, 10**6, 10**4),
              (2.0, 16, 30, 10**7, 10**4), (1.0, 16, 365, 10**8, 10**3),
              (2.0, 16, 365, 10**8, 10**4)),
    row=apple_row,
)


# -- Chrome's RAPPOR -----------------------------------------------------------------------------
@dataclass(frozen=True)
class RapporParameters:
    """RAPPOR's published parameters (Erlingsson, Pihur & Korolova, CCS 2014)."""

    bits: int = 128
    hashes: int = 2
    f: float = 0.5
    p: float = 0.5
    q: float = 0.75

    @property
    def permanent_epsilon(self) -> float:
        """ε∞ = 2h·ln((1 − f/2)/(f/2)) (their Theorem 1): every report of one value, ever."""
        return 2.0 * self.hashes * math.log((1.0 - self.f / 2.0) / (self.f / 2.0))

    @property
    def one_probabilities(self) -> tuple[float, float]:
        """(q*, p*): P[reported bit = 1] for a bit set / not set in the Bloom filter."""
        shared = 0.5 * self.f * (self.p + self.q)
        return shared + (1.0 - self.f) * self.q, shared + (1.0 - self.f) * self.p

    @property
    def report_epsilon(self) -> float:
        """ε1 = h·ln(q*(1 − p*)/(p*(1 − q*))) (their Theorem 2): one report."""
        q_star, p_star = self.one_probabilities
        return self.hashes * math.log(q_star * (1.0 - p_star) / (p_star * (1.0 - q_star)))


CHROME = RapporParameters()


def rappor_row(users: int) -> tuple[str, ...]:
    delta = delta_for(users)
    epsilon1 = CHROME.report_epsilon
    any_ldp = randomizers.worst_case_ldp(epsilon1).shuffled(users).epsilon(delta)
    try:
        closed = fmt_epsilon(epsilon1, users, delta)
    except ValueError:
        closed = None
    q_star, p_star = CHROME.one_probabilities
    bit_std = math.sqrt(float(UnaryEncodingOracle(CHROME.bits, q_star, p_star).variances(0.0, users)))
    return (power_of_ten(users), fmt(delta), fmt(epsilon1), fmt(CHROME.permanent_epsilon),
            fmt(closed), fmt(any_ldp), fmt(bit_std))


_Q_STAR, _P_STAR = CHROME.one_probabilities
RAPPOR = Table(
    title="Chrome's RAPPOR",
    text=(
        f"Published parameters (Erlingsson, Pihur & Korolova, \"RAPPOR: Randomized Aggregatable "
        f"Privacy-Preserving Ordinal Response\", CCS 2014): {CHROME.bits}-bit Bloom filters with "
        f"h = {CHROME.hashes} hash functions, permanent randomized response f = {CHROME.f:g}, "
        f"instantaneous p = {CHROME.p:g}, q = {CHROME.q:g}. A reported bit is 1 w.p. "
        f"q* = {_Q_STAR:g} where the value's filter has a 1 and p* = {_P_STAR:g} elsewhere, so one "
        f"report is ε1-LDP with ε1 = h·ln(q*(1 − p*)/(p*(1 − q*))) = "
        f"{fmt(CHROME.report_epsilon, 4)}, and all reports of one value ever sent are "
        f"ε∞-LDP with ε∞ = 2h·ln((1 − f/2)/(f/2)) = {fmt(CHROME.permanent_epsilon, 4)} "
        f"(the paper's Theorems 1 and 2). One collection, each client sending one report, "
        f"shuffled:\n\n"
        "* *FMT*: the closed form at ε1 (n/a outside its validity condition);\n"
        "* *ours, any ε1-LDP*: this package's certified ε for every ε1-LDP randomizer, which the "
        "instantaneous report is;\n"
        "* *std of a bit*: standard deviation of the estimated fraction of clients whose filter "
        "sets a given bit (true fraction 0), (p*(1 − p*)/n)^½/(q* − p*).\n\n"
        "Daily reports of a value whose permanent response is memoized are correlated: composing "
        "shuffled rounds assumes fresh randomness each round, so a campaign of memoized reports "
        "is covered by ε∞ (local), not by a composition of these rows."),
    header=("n", "δ", "published ε1 (one report)", "published ε∞ (all reports)", "FMT",
            "ours, any ε1-LDP", "std of a bit"),
    settings=((10**5,), (10**6,), (10**7,)),
    row=rappor_row,
)


# -- Flower DP-FedAvg with LocalDpMod ------------------------------------------------------------
FLOWER_CLIENTS, FLOWER_COHORT, FLOWER_ROUNDS, CLIPPING_NORM = 10**4, 100, 1000, 1.0


def sampled_gaussian_epsilon(noise_multiplier: float, delta: float) -> float:
    """ε of the campaign without a shuffler: the cohort-sampled Gaussian mechanism composed over the
    rounds by dp-accounting's RDP accountant (replace-one), as for central DP-FedAvg."""
    accountant = rdp_accountant.RdpAccountant(
        neighboring_relation=privacy_accountant.NeighboringRelation.REPLACE_ONE)
    accountant.compose(dp_event.SelfComposedDpEvent(dp_event.SampledWithoutReplacementDpEvent(
        FLOWER_CLIENTS, FLOWER_COHORT, dp_event.GaussianDpEvent(noise_multiplier)), FLOWER_ROUNDS))
    return float(accountant.get_epsilon(delta))


def flower_row(local_epsilon: float, local_delta: float) -> tuple[str, ...]:
    delta = delta_for(FLOWER_CLIENTS)
    sensitivity = 2.0 * CLIPPING_NORM  # two clipped updates are at most 2C apart
    sigma = local_dp_mod_noise_std(sensitivity, local_epsilon, local_delta)
    exact_local = gaussian_epsilon(sensitivity / sigma, local_delta)
    sampled_local = sampled_gaussian_epsilon(sigma / sensitivity, delta)
    report = randomizers.gaussian_vector(sigma, CLIPPING_NORM)
    ours = Campaign(report, FLOWER_CLIENTS, FLOWER_ROUNDS, sample_size=FLOWER_COHORT).epsilon(delta)
    coordinate_std = mean_std(randomizers.gaussian(sigma, -CLIPPING_NORM, CLIPPING_NORM),
                              FLOWER_CLIENTS, 0.0, sample_size=FLOWER_COHORT)
    return (f"({fmt(local_epsilon)}, {fmt(local_delta)})", fmt(sigma / CLIPPING_NORM),
            fmt(exact_local), fmt(delta),
            f"({fmt(FLOWER_ROUNDS * local_epsilon)}, {fmt(FLOWER_ROUNDS * local_delta)})",
            fmt(sampled_local), fmt(ours), fmt(coordinate_std / CLIPPING_NORM))


FLOWER = Table(
    title="Flower DP-FedAvg with LocalDpMod",
    text=(
        f"Flower's `LocalDpMod(clipping_norm, sensitivity, epsilon, delta)` clips a client's "
        f"update to ℓ2 norm C and adds N(0, σ²·I) with σ = sensitivity·(2 ln(1.25/δ))^½/ε; "
        f"sensitivity 2C (two clipped updates are at most 2C apart). "
        f"{FLOWER_COHORT} of {FLOWER_CLIENTS:,} clients are drawn uniformly each round, for "
        f"{FLOWER_ROUNDS:,} rounds, and their updates are shuffled.\n\n"
        "* *exact local ε*: the ε at the mod's δ of one noisy update (the exact Gaussian profile, "
        "Balle & Wang, ICML 2018): the mod's own formula is only proven for ε < 1;\n"
        "* *local, basic composition*: the mod's guarantee summed over every round (a client may "
        "be drawn in each);\n"
        "* *no shuffler, sampled, RDP*: the cohort-sampled Gaussian mechanism (noise multiplier "
        "σ/(2C)) composed over the rounds by dp-accounting's RDP accountant — the accounting of "
        "the same run without the shuffler;\n"
        "* FMT's closed form for (ε0, δ0)-LDP reports (their Theorem 3.8) needs "
        "ε0 ≤ ln(n/(16 ln(2/δ))), impossible with 100 reports a round at these δ, and is "
        "not shown;\n"
        "* *ours*: this package's certified ε of the campaign (`Campaign(gaussian_vector(σ, C), "
        "N, R, sample_size=m)`);\n"
        "* *std*: standard deviation of one coordinate of the averaged update, in units of C "
        "(σ/√m, the noise alone)."),
    header=("LocalDpMod (ε, δ)", "σ/C", "exact local ε", "δ", "local, basic composition",
            "no shuffler, sampled, RDP", "ours", "std of a coordinate / C"),
    settings=((1.0, 1e-5), (8.0, 1e-5)),
    row=flower_row,
)

TABLES = (APPLE, RAPPOR, FLOWER)

INTRO = (
    "# Deployment scenarios\n\n"
    "What published deployments cost in ε with this package and with the accounting available "
    "without it, and what accuracy they buy. Generated by `python examples/deployment_scenarios.py "
    "--markdown` (the tests check this page is its output); δ = 1/(100·n), n the population. "
    "Every \"ours\" value is a certified upper bound composed by `ShufflePLDAccountant` "
    "([planning](planning.md)); the other columns are the published guarantees and closed forms, "
    "computed as stated under each table. Numbers have three significant digits.\n")


def section(table: Table, rows: Sequence[tuple[str, ...]]) -> str:
    """A table's section of the page, with the given rows."""
    lines = [f"## {table.title}", "", table.text, "", table_line(table.header),
             table_line(tuple("---" for _ in table.header)), *(table_line(row) for row in rows)]
    return "\n".join(lines) + "\n"


def markdown() -> str:
    """The whole page."""
    return "\n".join([INTRO, *(section(table, table.rows()) for table in TABLES)])


def text() -> str:
    """The tables as plain text."""
    parts = []
    for table in TABLES:
        rows = [table.header, *table.rows()]
        widths = [max(len(row[i]) for row in rows) for i in range(len(table.header))]
        parts.append(table.title + "\n" + "\n".join(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
            for row in rows))
    return "\n\n".join(parts) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--markdown", action="store_true",
                        help="print the documentation page (docs/scenarios.md)")
    args = parser.parse_args(argv)
    sys.stdout.write(markdown() if args.markdown else text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
