"""Federated frequency estimation in Flower: local randomizer, shuffler stage, accounted rounds.

Client side. :class:`LocalRandomizerMod` is a Flower client mod: the ClientApp's ``query``
handler replies with the client's raw value (``{"value": v}`` in the ConfigRecord
:data:`RECORD_KEY`), and the mod replaces it by ``randomizer.sample(v)`` before the reply leaves
the client, so the raw value never does. :func:`analytics_client_app` builds such a ClientApp
from a function ``context -> value``.

Server side. :class:`ShuffledFrequencyEstimation` runs rounds of

1. sampling clients (``"fixed"``: ``sample_size`` of the N = ``population_size`` clients
   uniformly without replacement; ``"poisson"``: each client independently with probability
   ``sampling_probability``),
2. a budget check: the round does not start if its cost would take ε above ``max_epsilon``,
3. collecting the reports, then the **shuffler stage** :func:`shuffle_reports` — node ids and
   message metadata are dropped and the reports are put in uniformly random order — before
   anything else sees them,
4. estimating the frequencies with the randomizer's unbiased estimator, and composing the
   round's event, built from the number of reports actually received, into the accountant.

Trust assumption (the guarantee depends on it). **Flower has no shuffler**: the ServerApp
receives every reply together with its sender's node id. The shuffle bounds hold only if the
deployment puts a trusted shuffler between the clients and the analyst (a separate party, a
mixnet, or a trusted execution environment) that forwards only the anonymized multiset of
reports, and only as a batch of at least ``min_reports`` reports (for ``"poisson"`` rounds: only
when every sampled client's report is in). :func:`shuffle_reports` is what that shuffler
outputs; in a simulation, where one process plays all roles, it stands in for it.

Round events (replace-one unless stated):

* ``"fixed"`` under ``(without-replacement, replace-one)`` with all m sampled reports in:
  ``SampledWithoutReplacementDpEvent(N, m, ShuffleEvent(R, m))``;
* ``"fixed"`` otherwise: ``ShuffleEvent(R, k)``, k the reports received (no amplification by
  the sampling is claimed when drop-outs changed the cohort) — refused under add/remove-one (no
  proven bound there);
* ``"poisson"``: ``PoissonSampledDpEvent(γ, ShuffleEvent(R, N))``; under add/remove-one it is
  accepted exactly when the accountant's backend supports it.

The count k is public (the server sees how many reports arrive) and independent of the data
when drop-outs are; the round's bound is the bound given the clients that took part. The budget
check before the round uses ``min_reports`` reports, the fewest the shuffler releases: a round
with more reports costs no more (the bound is re-checked with k before release).
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from logging import INFO, WARNING
from typing import Optional

import numpy as np
from dp_accounting import dp_event
from flwr.app import ConfigRecord, Context, Message, MessageType, RecordDict
from flwr.clientapp import ClientApp
from flwr.clientapp.typing import ClientAppCallable
from flwr.common.logger import log
from flwr.serverapp import Grid, NeighboringRelation, SamplingMethod
from flwr.serverapp.exception import PrivacyBudgetExhausted
from numpy.typing import NDArray

from dpacct_shuffle.core.validation import check_num_users, check_range
from dpacct_shuffle.events import ShuffleEvent
from dpacct_shuffle.flower.accountant import ShufflePrivacyAccountant
from dpacct_shuffle.randomizers import Randomizer
from dpacct_shuffle.randomizers.frequency import Report

RECORD_KEY = "dpacct-shuffle.analytics"
"""Name of the ConfigRecord carrying the round number (server → client) and the value or report
(client → server)."""

SAMPLING_MODES = ("fixed", "poisson")


def _check_randomizer(randomizer: object) -> Randomizer:
    if not isinstance(randomizer, Randomizer) or randomizer.frequency_oracle is None:
        raise TypeError("randomizer must be a catalog Randomizer with a sampler and frequency "
                        "estimator (binary_rr, krr, rappor, optimized_unary_encoding), got "
                        f"{randomizer!r}")
    return randomizer


# ---------------------------------------------------------------------------------------------
# client side
# ---------------------------------------------------------------------------------------------


class LocalRandomizerMod:
    """Flower client mod applying ``randomizer`` to the value in the reply of a query.

    Only QUERY messages whose reply holds ``{"value": v}`` in the ConfigRecord :data:`RECORD_KEY`
    are changed: ``value`` is replaced by ``report = randomizer.sample(v, rng)``; other
    messages pass through unchanged. Each call draws from a fresh ``numpy`` generator seeded by
    the operating system (``np.random.default_rng()``).

    Args:
      randomizer: a catalog Randomizer with a sampler (e.g. ``krr(ε0, d)``); its ``epsilon0`` is
        the local guarantee of every report.
    """

    def __init__(self, randomizer: Randomizer) -> None:
        self.randomizer = _check_randomizer(randomizer)

    def __call__(self, msg: Message, ctxt: Context, call_next: ClientAppCallable) -> Message:
        reply = call_next(msg, ctxt)
        if msg.metadata.message_type != MessageType.QUERY or reply.has_error():
            return reply
        if RECORD_KEY not in reply.content.config_records:
            return reply
        record = reply.content.config_records[RECORD_KEY]
        if "value" not in record:
            return reply
        value = record["value"]
        report = self.randomizer.sample(value, np.random.default_rng())
        reply.content[RECORD_KEY] = ConfigRecord({"report": report})
        return reply


def analytics_client_app(value_of: Callable[[Context], int], randomizer: Randomizer) -> ClientApp:
    """A ClientApp answering analytics queries with ``randomizer.sample(value_of(context))``.

    ``value_of`` reads the client's value in [0, domain_size) from its ``Context`` (e.g. from
    ``context.node_config``); the randomization happens in :class:`LocalRandomizerMod`.
    """
    mod = LocalRandomizerMod(randomizer)
    app = ClientApp(mods=[mod])

    @app.query()
    def query(msg: Message, context: Context) -> Message:
        return Message(RecordDict({RECORD_KEY: ConfigRecord({"value": int(value_of(context))})}),
                       reply_to=msg)

    return app


# ---------------------------------------------------------------------------------------------
# shuffler stage
# ---------------------------------------------------------------------------------------------


def shuffle_reports(replies: Iterable[Message], rng: np.random.Generator) -> list[Report]:
    """What a trusted shuffler releases: the reports of the successful replies, without node ids
    or any other metadata, in uniformly random order (``rng.permutation``)."""
    reports: list[Report] = []
    for reply in replies:
        if reply.has_error() or RECORD_KEY not in reply.content.config_records:
            continue
        record = reply.content.config_records[RECORD_KEY]
        if "report" in record:
            reports.append(record["report"])
    return [reports[i] for i in rng.permutation(len(reports))]


# ---------------------------------------------------------------------------------------------
# server side
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AnalyticsRound:
    """Outcome of one analytics round.

    Attributes:
      server_round: 1-based round number.
      num_sampled: clients sampled (messages sent).
      num_reports: reports the shuffler released (0 if it released nothing).
      frequencies: unbiased estimates per value, or None if nothing was released.
      event: the DpEvent composed into the accountant, or None.
      round_epsilon: ε of this round alone at the config's target δ (0.0 if nothing released).
      cumulative_epsilon: the accountant's ε at the target δ after the round.
    """

    server_round: int
    num_sampled: int
    num_reports: int
    frequencies: Optional[NDArray[np.float64]]
    event: Optional[dp_event.DpEvent]
    round_epsilon: float
    cumulative_epsilon: float


class ShuffledFrequencyEstimation:
    """ServerApp strategy: shuffled frequency-estimation rounds charged to one accountant.

    Args:
      randomizer: catalog Randomizer with a sampler (the one the clients' mod applies).
      accountant: the run's :class:`ShufflePrivacyAccountant` (may be shared with a DP-FedAvg
        strategy); its ``population_size`` is the number of clients N.
      sampling: ``"fixed"`` (``sample_size`` clients without replacement) or ``"poisson"``
        (each client with probability ``sampling_probability``).
      sample_size: m for ``"fixed"`` (default: all N clients).
      sampling_probability: γ in (0, 1] for ``"poisson"``.
      min_reports: the fewest reports the shuffler releases (``"fixed"`` only; default: all
        ``sample_size``, so that only complete cohorts are released and the sampling amplifies).
        The budget check before a round charges a batch of ``min_reports`` reports.
      max_epsilon: budget (default: the accountant config's ``max_epsilon``; None = no limit).
      seed: seed of the server's generator (sampling and the shuffler's permutation).

    Raises:
      ValueError: inconsistent settings, or a round event the accountant refuses under its
        neighbouring relation (the message says what would work).
    """

    def __init__(self, randomizer: Randomizer, accountant: ShufflePrivacyAccountant, *,
                 sampling: str = "fixed", sample_size: Optional[int] = None,
                 sampling_probability: Optional[float] = None,
                 min_reports: Optional[int] = None,
                 max_epsilon: Optional[float] = None, seed: Optional[int] = None) -> None:
        self.randomizer = _check_randomizer(randomizer)
        if not isinstance(accountant, ShufflePrivacyAccountant):
            raise TypeError("accountant must be a ShufflePrivacyAccountant, got "
                            f"{type(accountant).__name__}")
        self.accountant = accountant
        if sampling not in SAMPLING_MODES:
            raise ValueError(f"sampling must be one of {SAMPLING_MODES}, got {sampling!r}")
        self.sampling = sampling
        population = accountant.config.population_size
        if sampling == "fixed":
            if sampling_probability is not None:
                raise ValueError("sampling_probability is only used with sampling='poisson'")
            size = population if sample_size is None else check_num_users(sample_size,
                                                                            "sample_size")
            if size > population:
                raise ValueError(f"sample_size must be <= population_size ({population}), "
                                 f"got {size}")
            self.sample_size: Optional[int] = size
            self.min_reports = size if min_reports is None else check_num_users(min_reports,
                                                                                 "min_reports")
            if self.min_reports > size:
                raise ValueError(f"min_reports must be <= sample_size ({size}), got {min_reports}")
            self.sampling_probability: Optional[float] = None
        else:
            if sample_size is not None or min_reports is not None:
                raise ValueError("sample_size and min_reports are only used with sampling='fixed' "
                                 "(a Poisson round is released only with every sampled report)")
            if sampling_probability is None:
                raise ValueError("sampling='poisson' needs sampling_probability in (0, 1]")
            self.sampling_probability = check_range("sampling_probability", sampling_probability,
                                                    0.0, 1.0, low_open=True)
            self.sample_size = None
            self.min_reports = 1
        self.max_epsilon = accountant.config.max_epsilon if max_epsilon is None else check_range(
            "max_epsilon", max_epsilon, 0.0, math.inf, low_open=True, high_open=True)
        self._rng = np.random.default_rng(seed)
        self.accountant.to_dp_event(self.round_event(self.min_reports))  # refuses early
        self.history: list[AnalyticsRound] = []

    # -- events ----------------------------------------------------------------------------------
    def round_event(self, num_reports: int) -> dp_event.DpEvent:
        """The event charged for a round whose shuffler released ``num_reports`` reports."""
        config = self.accountant.config
        population = config.population_size
        if self.sampling == "poisson":
            return dp_event.PoissonSampledDpEvent(self.sampling_probability,
                                                  ShuffleEvent(self.randomizer, population))
        shuffle = ShuffleEvent(self.randomizer, num_reports)
        if (config.sampling_method is SamplingMethod.WITHOUT_REPLACEMENT
                and config.neighboring_relation is NeighboringRelation.REPLACE_ONE
                and num_reports == self.sample_size < population):
            return dp_event.SampledWithoutReplacementDpEvent(population, self.sample_size, shuffle)
        return shuffle

    def _exceeds(self, event: dp_event.DpEvent) -> bool:
        return self.max_epsilon is not None and self.accountant.would_exceed(event,
                                                                             self.max_epsilon)

    # -- rounds ----------------------------------------------------------------------------------
    def _sample_nodes(self, grid: Grid, wait_seconds: float) -> list[int]:
        population = self.accountant.config.population_size
        deadline = time.monotonic() + wait_seconds
        while len(nodes := sorted(grid.get_node_ids())) < population:
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {len(nodes)} of population_size={population} clients "
                                   f"connected within {wait_seconds} s")
            time.sleep(0.2)
        if len(nodes) > population:
            raise ValueError(f"{len(nodes)} clients are connected but the accountant's "
                             f"population_size is {population}: sampling and accounting would "
                             "disagree")
        if self.sampling == "fixed":
            chosen = self._rng.choice(len(nodes), size=self.sample_size, replace=False)
        else:
            chosen = np.flatnonzero(self._rng.random(len(nodes)) < self.sampling_probability)
        return [nodes[i] for i in sorted(chosen)]

    def run_round(self, grid: Grid, server_round: int, *, timeout: Optional[float] = None,
                  wait_seconds: float = 120.0) -> AnalyticsRound:
        """One round (module docstring, steps 1-4).

        Raises:
          PrivacyBudgetExhausted: (Flower's exception) the round would exceed ``max_epsilon``;
            nothing was sent.
        """
        planned = self.round_event(self.min_reports)
        if self._exceeds(planned):
            spent = self.accountant.get_privacy_spent()
            log(INFO, "analytics round %d not started: it would exceed max_epsilon=%s "
                      "(current epsilon=%.6f at delta=%g)", server_round, self.max_epsilon,
                spent.epsilon, spent.delta)
            raise PrivacyBudgetExhausted(
                f"analytics round {server_round} would exceed max_epsilon={self.max_epsilon} "
                f"(current epsilon: {spent.epsilon}, delta: {spent.delta})")
        nodes = self._sample_nodes(grid, wait_seconds)
        messages = [Message(RecordDict({RECORD_KEY: ConfigRecord({"round": server_round})}),
                            dst_node_id=node, message_type=MessageType.QUERY,
                            group_id=str(server_round))
                    for node in nodes]
        replies = list(grid.send_and_receive(messages, timeout=timeout)) if messages else []
        reports = shuffle_reports(replies, self._rng)
        released = (len(reports) == len(nodes) if self.sampling == "poisson"
                    else len(reports) >= self.min_reports)
        if not released:
            log(WARNING, "analytics round %d: the shuffler released nothing (%d reports from %d "
                         "sampled clients)", server_round, len(reports), len(nodes))
            return self._record(server_round, len(nodes), 0, None, None, 0.0)
        event = self.round_event(len(reports))
        if self._exceeds(event):  # only possible if the bound is not monotone in the count
            raise PrivacyBudgetExhausted(
                f"analytics round {server_round} with {len(reports)} reports would exceed "
                f"max_epsilon={self.max_epsilon}; the shuffler released nothing")
        self.accountant.compose(event)
        round_accountant = ShufflePrivacyAccountant(self.accountant.config)
        round_accountant.compose(event)
        frequencies = self.randomizer.estimate_frequencies(reports)
        result = self._record(server_round, len(nodes), len(reports), frequencies, event,
                              round_accountant.get_epsilon(self.accountant.config.target_delta))
        log(INFO, "analytics round %d: %d reports shuffled, round epsilon=%.6f, cumulative "
                  "epsilon=%.6f at delta=%g", server_round, len(reports), result.round_epsilon,
            result.cumulative_epsilon, self.accountant.config.target_delta)
        return result

    def _record(self, server_round: int, num_sampled: int, num_reports: int,
                frequencies: Optional[NDArray[np.float64]], event: Optional[dp_event.DpEvent],
                round_epsilon: float) -> AnalyticsRound:
        result = AnalyticsRound(
            server_round, num_sampled, num_reports, frequencies, event, round_epsilon,
            self.accountant.get_epsilon(self.accountant.config.target_delta))
        self.history.append(result)
        return result

    def start(self, grid: Grid, num_rounds: int, *, timeout: Optional[float] = None,
              first_round: int = 1) -> list[AnalyticsRound]:
        """Run up to ``num_rounds`` rounds; stops (without raising) before a round that would
        exceed the budget. Returns the rounds run."""
        if isinstance(num_rounds, bool) or not isinstance(num_rounds, numbers.Integral) \
                or num_rounds < 1:
            raise ValueError(f"num_rounds must be a positive integer, got {num_rounds!r}")
        results = []
        for server_round in range(first_round, first_round + int(num_rounds)):
            try:
                results.append(self.run_round(grid, server_round, timeout=timeout))
            except PrivacyBudgetExhausted:
                break
        return results


__all__ = [
    "AnalyticsRound",
    "LocalRandomizerMod",
    "RECORD_KEY",
    "SAMPLING_MODES",
    "ShuffledFrequencyEstimation",
    "analytics_client_app",
    "shuffle_reports",
]
