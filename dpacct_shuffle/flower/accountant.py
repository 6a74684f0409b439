"""``ShufflePrivacyAccountant``: a Flower ``PrivacyAccountant`` that also accounts shuffle rounds.

Flower 1.42's DP strategy wrappers (``DifferentialPrivacyServerSideFixedClipping``,
``DifferentialPrivacyClientSideFixedClipping``) take any object implementing the Protocol
``flwr.serverapp.PrivacyAccountant``; its own backend ``flwr.serverapp.RdpAccountant`` knows only
Gaussian releases. This accountant composes Flower's ``GaussianPrivacyEvent`` and this package's
events (``ShuffleEvent``, ``ParallelCompositionEvent``, ``LDPCompositionEvent`` and sampled shuffle
rounds) in one :class:`dpacct_shuffle.accountants.ShufflePLDAccountant`, so one budget covers
DP-FedAvg rounds and shuffled analytics rounds together.

Flower's events, with Flower's semantics (``RdpAccountant._to_backend_event``): a
``GaussianPrivacyEvent(σ, m, N)`` is

* ``SamplingMethod.POISSON`` (with ``ADD_OR_REMOVE_ONE``): ``PoissonSampledDpEvent(m/N,
  GaussianDpEvent(σ))``, sensitivity 1 — the same dp-accounting event as Flower's, PLD instead
  of RDP;
* ``SamplingMethod.NO_AMPLIFICATION`` (with ``ADD_OR_REMOVE_ONE``; what Flower's DP wrappers
  require): ``GaussianDpEvent(σ)``, sensitivity 1 — same event as Flower's;
* ``SamplingMethod.WITHOUT_REPLACEMENT`` (with ``REPLACE_ONE``):
  ``SampledWithoutReplacementDpEvent(N, m, GaussianDpEvent(σ))`` with the Gaussian at
  **sensitivity 2**: Flower's noise has standard deviation σ·C for updates clipped to norm C, and
  replacing one client moves the clipped sum by up to 2C. Flower's ``RdpAccountant`` hands the
  same event to dp-accounting's ``RdpAccountant``, which computes it at sensitivity 1 (a
  replace-one under-report; see :mod:`dpacct_shuffle.accountants`). Its numbers for σ/2 are the
  comparable ones.

Neighbouring relations are never mixed: the accountant's relation is the ``PrivacyConfig``'s,
and an event without a proven bound under it is refused (ValueError naming the relation and
what would work). Shuffle and local-report events hold for replace-one neighbours; under
add/remove-one only Poisson-sampled shuffle rounds have a bound (:mod:`dpacct_shuffle.sampling`);
the accountant accepts exactly what ``ShufflePLDAccountant`` supports under the relation.

Every ε is dp-accounting's pessimistic PLD composition: an upper bound.
"""

from __future__ import annotations

import copy
import math
import numbers
from typing import Optional, Union

from dp_accounting import dp_event
from dp_accounting.privacy_accountant import NeighboringRelation as NeighborRel
from flwr.serverapp import (
    GaussianPrivacyEvent,
    NeighboringRelation,
    PrivacyConfig,
    PrivacySpent,
    SamplingMethod,
)

from dpacct_shuffle.accountants import ShufflePLDAccountant
from dpacct_shuffle.core.json_text import check_json_depth
from dpacct_shuffle.core.validation import check_delta, check_epsilon, check_range
from dpacct_shuffle.flower.serialization import check_serializable, event_from_json, event_to_json


ACCOUNTING_METHOD = "shuffle-pld"
STATE_SCHEMA_VERSION = 1

PrivacyEvent = Union[GaussianPrivacyEvent, dp_event.DpEvent]


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < 1:
        raise ValueError(f"count must be a positive integer, got {value!r}")
    return int(value)


def _discretization_interval(value: object) -> Optional[float]:
    """None, or the PLD grid spacing of dp-accounting's accountant, in (0, 1]."""
    if value is None:
        return None
    return check_range("value_discretization_interval", value, 0.0, 1.0, low_open=True)


def _backend_relation(config: PrivacyConfig) -> NeighborRel:
    return NeighborRel[config.neighboring_relation.name]


def _config_to_json(config: PrivacyConfig) -> dict[str, object]:
    return {
        "target_delta": config.target_delta,
        "population_size": config.population_size,
        "neighboring_relation": config.neighboring_relation.value,
        "sampling_method": config.sampling_method.value,
        "max_epsilon": config.max_epsilon,
    }


def _config_from_json(value: object) -> PrivacyConfig:
    if not isinstance(value, dict):
        raise ValueError(f"state['config'] must be a dict, got {value!r}")
    try:
        return PrivacyConfig(
            target_delta=value["target_delta"],
            population_size=value["population_size"],
            neighboring_relation=NeighboringRelation(value["neighboring_relation"]),
            sampling_method=SamplingMethod(value["sampling_method"]),
            max_epsilon=value["max_epsilon"],
        )
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"state['config'] is not a valid PrivacyConfig: {error}") from None


class ShufflePrivacyAccountant:
    """Flower ``PrivacyAccountant`` over :class:`~dpacct_shuffle.accountants.ShufflePLDAccountant`.

    Args:
      config: Flower's ``PrivacyConfig`` (target δ, population N, relation, sampling method,
        optional ``max_epsilon``). Its relation is the relation of every reported ε.
      value_discretization_interval: PLD grid of every composed event; ``None`` (default):
        ``ShufflePLDAccountant``'s automatic choice (dp-accounting's 1e-4 while only Gaussian
        releases are composed, finer or coarser with the scale of the shuffle rounds), a
        number: that grid, fixed.

    Attributes:
      compositions: list of ``(event, count)`` in the order composed (Flower's
        ``GaussianPrivacyEvent`` or a DpEvent).
    """

    def __init__(self, config: PrivacyConfig,
                 value_discretization_interval: Optional[float] = None) -> None:
        if not isinstance(config, PrivacyConfig):
            raise TypeError(f"config must be a flwr.serverapp.PrivacyConfig, got "
                            f"{type(config).__name__}")
        self._config = config
        self._discretization_interval = _discretization_interval(value_discretization_interval)
        self._backend = self._new_backend()
        self.compositions: list[tuple[PrivacyEvent, int]] = []

    #: Ledger entries :meth:`__repr__` shows before summarising the rest.
    REPR_ENTRIES = 4

    def __repr__(self) -> str:
        """The relation and sampling method, the population, the target δ and the ε limit, then
        what the accountant holds: the number of releases and the ledger (``count x event``, the
        first :attr:`REPR_ENTRIES` entries). Computes no ε (that can take seconds)."""
        config = self._config
        setting = (f"{config.sampling_method.value}, {config.neighboring_relation.value}, "
                   f"population_size={config.population_size}, "
                   f"target_delta={config.target_delta:g}")
        if config.max_epsilon is not None:
            setting += f", max_epsilon={config.max_epsilon:g}"
        if not self.compositions:
            return f"{type(self).__name__}({setting}; no releases yet)"
        shown = [f"{count} x {event!r}" for event, count in self.compositions[:self.REPR_ENTRIES]]
        hidden = len(self.compositions) - len(shown)
        if hidden:
            shown.append(f"... {hidden} more entr{'y' if hidden == 1 else 'ies'}")
        releases = self.num_releases
        return (f"{type(self).__name__}({setting}; {releases} release"
                f"{'' if releases == 1 else 's'}: {', '.join(shown)})")

    # -- Flower's Protocol -------------------------------------------------------------------
    @property
    def config(self) -> PrivacyConfig:
        """The privacy configuration."""
        return self._config

    @property
    def num_releases(self) -> int:
        """Number of composed releases (the sum of the counts)."""
        return sum(count for _, count in self.compositions)

    def compose(self, event: PrivacyEvent, count: int = 1) -> None:
        """Compose ``count`` identical releases.

        ``event`` is Flower's ``GaussianPrivacyEvent`` (read with the configured sampling method,
        module docstring) or one of this package's DpEvents (possibly wrapped in
        ``PoissonSampledDpEvent`` / ``SampledWithoutReplacementDpEvent``).

        Raises:
          TypeError: an event of another type.
          ValueError: bad ``count``, a population mismatch, or an event without a proven bound
            under the configured neighbouring relation.
        """
        times = _count(count)
        backend_event = self.to_dp_event(event)
        self._backend.compose(backend_event, times)
        self.compositions.append((event, times))

    def get_epsilon(self, delta: float) -> float:
        """Cumulative ε at ``delta`` in (0, 1) (an upper bound; 0.0 before any release)."""
        return float(self._backend.get_epsilon(check_delta(delta)))

    def get_delta(self, epsilon: float) -> float:
        """Cumulative δ at ``epsilon`` ≥ 0 (an upper bound)."""
        value = check_epsilon(epsilon)
        return float(self._backend.get_delta(value))

    def get_privacy_spent(self, delta: Optional[float] = None) -> PrivacySpent:
        """Flower's ``PrivacySpent`` at ``delta`` (default: the config's ``target_delta``);
        ``accounting_method`` is ``"shuffle-pld"`` and ``optimal_order`` is None (PLD has no
        Rényi order)."""
        target = self._config.target_delta if delta is None else check_delta(delta)
        return PrivacySpent(epsilon=self.get_epsilon(target), delta=target,
                            num_releases=self.num_releases, accounting_method=ACCOUNTING_METHOD,
                            optimal_order=None)

    def would_exceed(self, event: PrivacyEvent, max_epsilon: Optional[float] = None,
                     count: int = 1) -> bool:
        """Whether composing ``count`` × ``event`` would take ε at the config's ``target_delta``
        above ``max_epsilon`` (default: the config's). Exact: the event is composed on a copy of
        the accountant's PLD, nothing here is changed.

        Raises:
          ValueError: no limit given anywhere, a bad limit, or an event :meth:`compose` refuses.
        """
        times = _count(count)
        limit = self._config.max_epsilon if max_epsilon is None else max_epsilon
        if limit is None:
            raise ValueError("max_epsilon must be given to would_exceed() or in PrivacyConfig")
        limit = check_range("max_epsilon", limit, 0.0, math.inf, low_open=True, high_open=True)
        projected = copy.deepcopy(self._backend)
        projected.compose(self.to_dp_event(event), times)
        return bool(projected.get_epsilon(self._config.target_delta) > limit)

    def state_dict(self) -> dict[str, object]:
        """Plain JSON-able state: schema version, backend name, config, PLD grid and the ledger
        of compositions (randomizers as their catalog call or analyzed matrix)."""
        return {
            "schema_version": STATE_SCHEMA_VERSION,
            "backend": ACCOUNTING_METHOD,
            "config": _config_to_json(self._config),
            "value_discretization_interval": self._discretization_interval,
            "compositions": [{"event": event_to_json(event), "count": count}
                             for event, count in self.compositions],
        }

    def load_state_dict(self, state: dict[str, object]) -> None:
        """Restore a :meth:`state_dict`: the ledger is replayed on a fresh PLD, so ε is
        reproduced exactly. The stored config must equal this accountant's (as in Flower's
        ``RdpAccountant``). Nothing changes unless the whole state is valid.

        Raises:
          ValueError: another schema or backend, another config, or an invalid ledger.
        """
        if not isinstance(state, dict):
            raise ValueError(f"state must be a dict, got {type(state).__name__}")
        check_json_depth("state", state)  # error messages repr its entries
        if state.get("schema_version") != STATE_SCHEMA_VERSION:
            raise ValueError(f"unsupported state schema_version {state.get('schema_version')!r} "
                             f"(expected {STATE_SCHEMA_VERSION})")
        if state.get("backend") != ACCOUNTING_METHOD:
            raise ValueError(f"state was produced by backend {state.get('backend')!r}, not "
                             f"{ACCOUNTING_METHOD!r}")
        if _config_from_json(state.get("config")) != self._config:
            raise ValueError("state's privacy configuration does not match this accountant's")
        if "value_discretization_interval" not in state:
            raise ValueError("state lacks 'value_discretization_interval'")
        restored = ShufflePrivacyAccountant(
            self._config, _discretization_interval(state["value_discretization_interval"]))
        compositions = state.get("compositions")
        if not isinstance(compositions, list):
            raise ValueError("state['compositions'] must be a list")
        for i, item in enumerate(compositions):
            if not isinstance(item, dict) or set(item) != {"event", "count"}:
                raise ValueError(f"state['compositions'][{i}] must be {{'event': ..., 'count': "
                                 f"...}}, got {item!r}")
            try:
                restored.compose(event_from_json(item["event"]), item["count"])
            except TypeError as error:
                raise ValueError(f"state['compositions'][{i}]: {error}") from None
        self._discretization_interval = restored._discretization_interval
        self._backend = restored._backend
        self.compositions = restored.compositions

    # -- translation -------------------------------------------------------------------------
    def to_dp_event(self, event: PrivacyEvent) -> dp_event.DpEvent:
        """The dp-accounting event composed for ``event`` (validated; module docstring)."""
        if isinstance(event, GaussianPrivacyEvent):
            return self._gaussian_event(event)
        if not isinstance(event, dp_event.DpEvent):
            raise TypeError("event must be a flwr.serverapp.GaussianPrivacyEvent or a "
                            f"dp_accounting DpEvent, got {type(event).__name__}")
        check_serializable(event)
        if not self._backend.supports(event):
            raise ValueError(self._unsupported_message(event))
        return event

    def _gaussian_event(self, event: GaussianPrivacyEvent) -> dp_event.DpEvent:
        if event.population_size != self._config.population_size:
            raise ValueError("GaussianPrivacyEvent population_size does not match PrivacyConfig: "
                             f"{event.population_size} != {self._config.population_size}")
        gaussian = dp_event.GaussianDpEvent(event.noise_multiplier)
        method = self._config.sampling_method
        if method is SamplingMethod.POISSON:
            return dp_event.PoissonSampledDpEvent(event.sample_size / event.population_size,
                                                  gaussian)
        if method is SamplingMethod.WITHOUT_REPLACEMENT:
            return dp_event.SampledWithoutReplacementDpEvent(event.population_size,
                                                             event.sample_size, gaussian)
        return gaussian

    def _unsupported_message(self, event: dp_event.DpEvent) -> str:
        relation = self._config.neighboring_relation.value
        name = type(event).__name__
        if self._backend.neighboring_relation is not NeighborRel.REPLACE_ONE and \
                ShufflePLDAccountant(NeighborRel.REPLACE_ONE).supports(event):
            return (f"{name} has no proven bound under neighboring_relation='{relation}' (this "
                    "PrivacyConfig): shuffle and local-report bounds hold for replace-one "
                    "neighbours, and for add-or-remove-one only for Poisson-sampled shuffle "
                    "rounds. Use a PoissonSampledDpEvent(sampling_probability, ShuffleEvent("
                    "randomizer, population_size)), or PrivacyConfig(sampling_method="
                    "'without-replacement', neighboring_relation='replace-one').")
        return (f"{name} ({event!r}) is not supported by ShufflePLDAccountant under "
                f"neighboring_relation='{relation}'")

    def _new_backend(self) -> ShufflePLDAccountant:
        return ShufflePLDAccountant(_backend_relation(self._config),
                                    self._discretization_interval)


__all__ = ["ACCOUNTING_METHOD", "STATE_SCHEMA_VERSION", "ShufflePrivacyAccountant"]
