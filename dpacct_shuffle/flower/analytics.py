"""Federated frequency estimation in Flower: local randomizer, shuffler stage, accounted rounds.

Client side. :class:`LocalRandomizerMod` is a Flower client mod: the ClientApp's ``query``
handler replies with the client's raw value (``{"value": v}`` in the ConfigRecord
:data:`RECORD_KEY`), and the mod replaces it by ``randomizer.sample(v)`` before the reply leaves
the client, so the raw value never does. In a Poisson round the mod also flips the client's own
participation coin and, if the client sits the round out, sends no report.
:func:`analytics_client_app` builds such a ClientApp from a function ``context -> value``.

Server side. :class:`ShuffledFrequencyEstimation` runs rounds of

1. a budget check: the round does not start if a complete round would take ε above
   ``max_epsilon``;
2. a query to every one of the N = ``population_size`` clients;
3. the **shuffler stage** (:func:`collect_reports`, then :func:`shuffle_reports`): node ids,
   message metadata and non-participants are dropped, for ``sampling="fixed"`` a uniformly
   random ``sample_size`` of
   the reports is kept, and the reports are put in uniformly random order;
4. a second budget check with the event of what the shuffler is about to release (it depends on
   how many clients answered; if it would exceed the budget, nothing is released);
5. estimating the frequencies with the randomizer's unbiased estimator and their standard errors
   (:func:`frequency_standard_errors`), and composing the round's event into the accountant (the
   round's and the cumulative ε are logged).

Why the sampling happens on the clients or in the shuffler. In the shuffle model the analyst is
the adversary. Amplification by sampling needs the sample to be secret from it: if the server
picked the clients, it would know whether the victim took part, and only the unsampled shuffle
bound would hold. So Poisson sampling is each client's own coin (the shuffler hides who sent a
report), and fixed-size sampling is done by the shuffler.

Trust assumption (the guarantee depends on it). **Flower has no shuffler**: the ServerApp
receives every reply together with its sender's node id. The shuffle bounds hold only if the
deployment puts a trusted shuffler between the clients and the analyst (a separate party, a
mixnet, or a trusted execution environment) that forwards only what :func:`shuffle_reports`
returns — the anonymized multiset of the selected reports — and only when the round's release
rule is met (Poisson rounds: every client answered; fixed-size rounds: at least ``min_reports``
reports). In a simulation, where one process plays every role, :func:`shuffle_reports` stands
in for it.

Round events (replace-one unless stated; k = clients that answered, m = ``sample_size``):

* ``"fixed"``, k ≥ m, under ``(without-replacement, replace-one)``:
  ``SampledWithoutReplacementDpEvent(k, m, ShuffleEvent(R, m))`` (the shuffler's sample of m of
  the k reports; k = N without drop-outs);
* ``"fixed"`` otherwise: ``ShuffleEvent(R, r)`` with r = min(k, m) reports released (no
  amplification claimed) — refused under add/remove-one (no proven bound there);
* ``"poisson"``: ``PoissonSampledDpEvent(γ, ShuffleEvent(R, N))``, released only if all N
  clients answered; under add/remove-one it is accepted exactly when the accountant's backend
  supports it.

The number of clients that answered is public and must not depend on the data (drop-outs
independent of the clients' values); each round's bound is the bound given that number.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from logging import INFO, WARNING
from typing import Optional, TypeGuard

import numpy as np
from dp_accounting import dp_event
from flwr.app import ConfigRecord, ConfigRecordValues, Context, Message, MessageType, RecordDict
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

PARTICIPATION_KEY = "participation_probability"
"""Key of the Poisson participation probability in a query's ConfigRecord."""

SAMPLING_MODES = ("fixed", "poisson")


def _check_randomizer(randomizer: object) -> Randomizer:
    if not isinstance(randomizer, Randomizer) or randomizer.frequency_oracle is None:
        raise TypeError("randomizer must be a catalog Randomizer with a sampler and frequency "
                        "estimator (binary_rr, krr, rappor, optimized_unary_encoding, "
                        "local_hashing), got "
                        f"{randomizer!r}")
    return randomizer


# ---------------------------------------------------------------------------------------------
# client side
# ---------------------------------------------------------------------------------------------


class LocalRandomizerMod:
    """Flower client mod applying ``randomizer`` to the value in the reply of a query.

    Only QUERY messages whose reply holds ``{"value": v}`` in the ConfigRecord :data:`RECORD_KEY`
    are changed: ``value`` is replaced by ``report = randomizer.sample(v, rng)``; other
    messages pass through unchanged. If the query carries a participation probability γ
    (:data:`PARTICIPATION_KEY`, Poisson rounds), the client takes part with probability γ (its own
    coin) and otherwise replies without a report. Each call draws from a fresh ``numpy``
    generator seeded by the operating system (``np.random.default_rng()``).

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
        rng = np.random.default_rng()
        query = msg.content.config_records.get(RECORD_KEY)
        rate = query.get(PARTICIPATION_KEY) if query is not None else None
        if rate is not None and not rng.random() < check_range(PARTICIPATION_KEY, rate, 0.0, 1.0,
                                                                low_open=True):
            reply.content[RECORD_KEY] = ConfigRecord({"report_sent": False})  # sits this round out
            return reply
        value = record["value"]
        if not isinstance(value, int):
            raise TypeError(f"the query's value must be an integer, got {value!r}")
        report = self.randomizer.sample(value, rng)
        reply.content[RECORD_KEY] = ConfigRecord({"report": report, "report_sent": True})
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


def collect_reports(replies: Iterable[Message]) -> tuple[int, list[Report]]:
    """(number of clients that answered, their reports): a client that sat a Poisson round out
    answers without a report; errors and replies without the record do not count."""
    answered = 0
    reports: list[Report] = []
    for reply in replies:
        if reply.has_error() or RECORD_KEY not in reply.content.config_records:
            continue
        record = reply.content.config_records[RECORD_KEY]
        if "report" in record:
            report = record["report"]
            if not _is_report(report):
                raise ValueError(f"a client's report must be an integer or a list of integers, "
                                 f"got {report!r}")
            reports.append(report)
            answered += 1
        elif record.get("report_sent") is False:
            answered += 1
    return answered, reports


def _is_report(value: ConfigRecordValues) -> TypeGuard[Report]:
    """An integer or a list of integers (the estimator checks their range)."""
    return isinstance(value, int) or (isinstance(value, list)
                                      and all(isinstance(bit, int) for bit in value))


def shuffle_reports(reports: list[Report], rng: np.random.Generator,
                    sample_size: Optional[int] = None) -> list[Report]:
    """What a trusted shuffler releases: ``sample_size`` of the reports chosen uniformly without
    replacement (all of them if None or fewer), in uniformly random order (``rng.permutation``).
    The reports carry no node ids or metadata (see :func:`collect_reports`)."""
    keep = len(reports) if sample_size is None else min(sample_size, len(reports))
    return [reports[i] for i in rng.permutation(len(reports))[:keep]]


# ---------------------------------------------------------------------------------------------
# server side
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AnalyticsRound:
    """Outcome of one analytics round.

    Attributes:
      server_round: 1-based round number.
      num_answered: clients that answered the query (with or without a report).
      num_reports: reports the shuffler released (0 if it released nothing).
      frequencies: unbiased estimates per value, or None if nothing was released.
      event: the DpEvent composed into the accountant, or None.
      round_epsilon: ε of this round alone at the config's target δ (0.0 if nothing released).
      cumulative_epsilon: the accountant's ε at the target δ after the round.
      standard_errors: the estimated standard error of each estimate
        (:func:`frequency_standard_errors`), or None if nothing was released.
    """

    server_round: int
    num_answered: int
    num_reports: int
    frequencies: Optional[NDArray[np.float64]]
    event: Optional[dp_event.DpEvent]
    round_epsilon: float
    cumulative_epsilon: float
    standard_errors: Optional[NDArray[np.float64]] = None


def frequency_standard_errors(randomizer: Randomizer, frequencies: NDArray[np.float64],
                              num_reports: int) -> NDArray[np.float64]:
    """Estimated standard error of each unbiased frequency estimate f̂_v from ``num_reports``
    reports: the estimator's standard deviation for the clients' fixed values,
    √(f·p*(1 − p*) + (1 − f)·q*(1 − q*)) / (√n·(p* − q*)) (Wang, Blocki, Li & Jha, "Locally
    Differentially Private Protocols for Frequency Estimation", USENIX Security 2017, Section 4;
    :mod:`dpacct_shuffle.randomizers.frequency`), evaluated at the estimates clipped to [0, 1]
    (plug-in). It falls as 1/√n: with ~10 reports of k-RR at ε0 = 3 on 4 values it is ≈ 0.09
    per value, the local noise that protects each client.

    Raises:
      TypeError: a randomizer without a frequency estimator.
      ValueError: ``num_reports`` < 1.
    """
    oracle = randomizer.frequency_oracle
    if oracle is None:
        raise TypeError(f"{randomizer!r} has no frequency estimator")
    reports = check_num_users(num_reports, "num_reports")
    plug_in = np.clip(np.asarray(frequencies, dtype=np.float64), 0.0, 1.0)
    return oracle.standard_deviations(plug_in, reports)


class ShuffledFrequencyEstimation:
    """ServerApp strategy: shuffled frequency-estimation rounds charged to one accountant.

    Args:
      randomizer: catalog Randomizer with a sampler (the one the clients' mod applies).
      accountant: the run's :class:`ShufflePrivacyAccountant` (may be shared with a DP-FedAvg
        strategy); its ``population_size`` is the number of clients N, all of which are queried.
      sampling: ``"fixed"`` (the shuffler keeps ``sample_size`` of the reports, uniformly without
        replacement) or ``"poisson"`` (each client takes part with ``sampling_probability``, its
        own coin).
      sample_size: m for ``"fixed"`` (default: all N).
      sampling_probability: γ in (0, 1] for ``"poisson"``.
      min_reports: the fewest reports the shuffler releases in a ``"fixed"`` round (default 1).
      max_epsilon: budget (default: the accountant config's ``max_epsilon``; None = no limit).
      seed: seed of the shuffler's generator (its sample and permutation).

    Raises:
      ValueError: inconsistent settings, or a round event the accountant refuses under its
        neighbouring relation (the message says what would work).
    """

    def __init__(self, randomizer: Randomizer, accountant: ShufflePrivacyAccountant, *,
                 sampling: str = "fixed", sample_size: Optional[int] = None,
                 sampling_probability: Optional[float] = None, min_reports: int = 1,
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
        self.sample_size: Optional[int] = None
        self.sampling_probability: Optional[float] = None
        self.min_reports = check_num_users(min_reports, "min_reports")
        if sampling == "fixed":
            if sampling_probability is not None:
                raise ValueError("sampling_probability is only used with sampling='poisson'")
            size = population if sample_size is None else check_num_users(sample_size,
                                                                            "sample_size")
            if size > population:
                raise ValueError(f"sample_size must be <= population_size ({population}), "
                                 f"got {size}")
            if self.min_reports > size:
                raise ValueError(f"min_reports must be <= sample_size ({size}), got {min_reports}")
            self.sample_size = size
        else:
            if sample_size is not None or min_reports != 1:
                raise ValueError("sample_size and min_reports are only used with sampling='fixed' "
                                 "(a Poisson round is released only when every client answered)")
            if sampling_probability is None:
                raise ValueError("sampling='poisson' needs sampling_probability in (0, 1]")
            self.sampling_probability = check_range("sampling_probability", sampling_probability,
                                                    0.0, 1.0, low_open=True)
        self.max_epsilon = accountant.config.max_epsilon if max_epsilon is None else check_range(
            "max_epsilon", max_epsilon, 0.0, math.inf, low_open=True, high_open=True)
        self._rng = np.random.default_rng(seed)
        self.accountant.to_dp_event(self.round_event(population))  # refuses early
        self.history: list[AnalyticsRound] = []

    # -- events ----------------------------------------------------------------------------------
    def round_event(self, num_answered: int) -> dp_event.DpEvent:
        """The event charged for a released round in which ``num_answered`` clients answered
        (module docstring, "Round events")."""
        config = self.accountant.config
        if self.sampling == "poisson":
            return dp_event.PoissonSampledDpEvent(
                self.sampling_probability, ShuffleEvent(self.randomizer, config.population_size))
        assert self.sample_size is not None  # set by the constructor for sampling="fixed"
        released = min(num_answered, self.sample_size)
        shuffle = ShuffleEvent(self.randomizer, released)
        if (config.sampling_method is SamplingMethod.WITHOUT_REPLACEMENT
                and config.neighboring_relation is NeighboringRelation.REPLACE_ONE
                and self.sample_size < num_answered):
            return dp_event.SampledWithoutReplacementDpEvent(num_answered, self.sample_size,
                                                             shuffle)
        return shuffle

    def _exceeds(self, event: dp_event.DpEvent) -> bool:
        return self.max_epsilon is not None and self.accountant.would_exceed(event,
                                                                             self.max_epsilon)

    def _released(self, num_answered: int, num_reports: int) -> bool:
        if self.sampling == "poisson":
            return num_answered == self.accountant.config.population_size
        return num_reports >= self.min_reports

    # -- rounds ----------------------------------------------------------------------------------
    def _all_nodes(self, grid: Grid, wait_seconds: float) -> list[int]:
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
        return nodes

    def run_round(self, grid: Grid, server_round: int, *, timeout: Optional[float] = None,
                  wait_seconds: float = 120.0) -> AnalyticsRound:
        """One round (module docstring, steps 1-5).

        Raises:
          PrivacyBudgetExhausted: (Flower's exception) a complete round would exceed
            ``max_epsilon`` (nothing was sent), or the round as answered would (nothing was
            released).
        """
        population = self.accountant.config.population_size
        if self._exceeds(self.round_event(population)):
            spent = self.accountant.get_privacy_spent()
            log(INFO, "analytics round %d not started: it would exceed max_epsilon=%s "
                      "(current epsilon=%.6f at delta=%g)", server_round, self.max_epsilon,
                spent.epsilon, spent.delta)
            raise PrivacyBudgetExhausted(
                f"analytics round {server_round} would exceed max_epsilon={self.max_epsilon} "
                f"(current epsilon: {spent.epsilon}, delta: {spent.delta})")
        query: dict[str, ConfigRecordValues] = {"round": server_round}
        if self.sampling == "poisson":
            assert self.sampling_probability is not None  # set for sampling="poisson"
            query[PARTICIPATION_KEY] = self.sampling_probability
        messages = [Message(RecordDict({RECORD_KEY: ConfigRecord(query)}), dst_node_id=node,
                            message_type=MessageType.QUERY, group_id=str(server_round))
                    for node in self._all_nodes(grid, wait_seconds)]
        answered, reports = collect_reports(grid.send_and_receive(messages, timeout=timeout))
        released = shuffle_reports(reports, self._rng, self.sample_size)
        if not self._released(answered, len(released)):
            log(WARNING, "analytics round %d: the shuffler released nothing (%d of %d clients "
                         "answered, %d reports)", server_round, answered, population, len(reports))
            return self._record(server_round, answered, 0, None, None, 0.0)
        event = self.round_event(answered)
        if self._exceeds(event):
            raise PrivacyBudgetExhausted(
                f"analytics round {server_round} with {answered} answers would exceed "
                f"max_epsilon={self.max_epsilon}; the shuffler released nothing")
        self.accountant.compose(event)
        round_accountant = ShufflePrivacyAccountant(self.accountant.config)
        round_accountant.compose(event)
        frequencies = self.randomizer.estimate_frequencies(released) if released else None
        errors = (None if frequencies is None else
                  frequency_standard_errors(self.randomizer, frequencies, len(released)))
        result = self._record(server_round, answered, len(released), frequencies, event,
                              round_accountant.get_epsilon(self.accountant.config.target_delta),
                              errors)
        log(INFO, "analytics round %d: %d reports shuffled, round epsilon=%.6f, cumulative "
                  "epsilon=%.6f at delta=%g", server_round, len(released), result.round_epsilon,
            result.cumulative_epsilon, self.accountant.config.target_delta)
        return result

    def _record(self, server_round: int, num_answered: int, num_reports: int,
                frequencies: Optional[NDArray[np.float64]], event: Optional[dp_event.DpEvent],
                round_epsilon: float,
                standard_errors: Optional[NDArray[np.float64]] = None) -> AnalyticsRound:
        result = AnalyticsRound(
            server_round, num_answered, num_reports, frequencies, event, round_epsilon,
            self.accountant.get_epsilon(self.accountant.config.target_delta), standard_errors)
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
    "PARTICIPATION_KEY",
    "RECORD_KEY",
    "SAMPLING_MODES",
    "ShuffledFrequencyEstimation",
    "analytics_client_app",
    "collect_reports",
    "frequency_standard_errors",
    "shuffle_reports",
]
