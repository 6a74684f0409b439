"""Opacus integration: shuffle-aware privacy accounting for DP-SGD with one changed line.

>>> from opacus import PrivacyEngine
>>> import dpacct_shuffle.opacus  # registers the accountant under the name "shuffle"
>>> engine = PrivacyEngine(accountant="shuffle")

:class:`ShuffleAccountant` is an ``opacus.accountants.IAccountant``. Opacus reports every optimizer
step through :meth:`~ShuffleAccountant.step` (kept in Opacus's ``history`` format, a list of
``(noise_multiplier, sample_rate, num_steps)``); shuffle rounds and any other event of
:class:`dpacct_shuffle.accountants.ShufflePLDAccountant` are added with
:meth:`~ShuffleAccountant.step_shuffle` / :meth:`~ShuffleAccountant.compose`. ``get_epsilon``
composes all of them with the PLD accountant: every optimizer step is
``PoissonSampledDpEvent(sample_rate, GaussianDpEvent(noise_multiplier))`` (Opacus's DP-SGD step:
Poisson sampling, per-sample clipping to norm C, Gaussian noise of standard deviation σ·C), and the
composition of dominating pairs is adaptive, so the order of events does not matter.

Neighbouring relation (a constructor option, stated with every number):

* ``"add_or_remove_one"`` (default): one record added or removed — the relation of Opacus and of
  every Opacus accountant (a Gaussian step has sensitivity 1), so a DP-SGD-only ledger gives
  exactly dp-accounting's ``PLDAccountant(ADD_OR_REMOVE_ONE)`` value. Poisson-sampled shuffle
  rounds (``step_shuffle(..., sampling_probability=γ)``) have a guarantee under it
  (:mod:`dpacct_shuffle.sampling`); an unsampled shuffle round (its number of reports reveals
  whether the victim is present) or local reports raise ValueError naming the two ways out.
* ``"replace_one"``: one record replaced by another; the relation the shuffle bounds hold for
  (docs/theory.md, "Setting"). A Gaussian step then has sensitivity 2 (a replaced record moves the
  clipped sum by up to 2C), exactly as dp-accounting's ``PLDAccountant`` treats it.

What "shuffle" means here: the accountant accounts *shuffle-model* reports (users randomize
locally, a shuffler releases the multiset of reports). It does **not** account DP-SGD trained on
*shuffled minibatches* (a data loader that shuffles and cuts fixed-size batches, instead of
Opacus's Poisson-sampling ``DPDataLoader``): the Poisson analysis of DP-SGD does not hold for that
(Opacus issue #80; Chua, Ghazi, Kamath, Kumar, Manurangsi, Sinha & Zhang, "How Private are DP-SGD
Implementations?", ICML 2024). Keep Opacus's Poisson sampling (``make_private`` with
``poisson_sampling=True``, its default) for the ε reported here to hold.

:func:`noise_multiplier_for_epsilon` calibrates σ for a target ε counting the planned shuffle
rounds (Opacus's ``make_private_with_epsilon`` cannot: it calibrates a fresh accountant holding only
the planned DP-SGD steps).

Importing this module requires Opacus (``pip install 'dpacct-shuffle[opacus]'``).
"""

from __future__ import annotations

import functools
import math
import numbers
import warnings
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, Optional, Union

try:
    from opacus.accountants import IAccountant, create_accountant, register_accountant
except ImportError as error:  # pragma: no cover - exercised only without opacus installed
    raise ImportError(
        "dpacct_shuffle.opacus needs Opacus: install a CPU torch wheel, then "
        "`pip install 'dpacct-shuffle[opacus]'` (opacus==1.6.0). The rest of dpacct_shuffle "
        "works without it."
    ) from error

from dp_accounting import dp_event
from dp_accounting import mechanism_calibration
from dp_accounting import privacy_accountant
from dp_accounting.privacy_accountant import NeighboringRelation as NeighborRel
from dp_accounting.pld import privacy_loss_distribution as pld_lib

from dpacct_shuffle.accountants import ShufflePLDAccountant
from dpacct_shuffle.dp_accounting_plds import check_leaf_grid
from dpacct_shuffle.progress import ProgressOption
from dpacct_shuffle.relations import relation_message
from dpacct_shuffle.core.json_text import check_json_depth
from dpacct_shuffle.core.validation import check_delta, check_epsilon, check_range
from dpacct_shuffle.event_serialization import event_from_dict, event_to_dict
from dpacct_shuffle.events import ParallelCompositionEvent, ShuffleEvent
from dpacct_shuffle.profiles import RandomizerDescription


MECHANISM = "shuffle"

_RELATION_NAMES = {
    "replace_one": NeighborRel.REPLACE_ONE,
    "add_or_remove_one": NeighborRel.ADD_OR_REMOVE_ONE,
}

RelationLike = Union[str, NeighborRel]
HistoryEntry = tuple[float, float, int]


def _relation(value: object) -> NeighborRel:
    """``"replace_one"`` / ``"add_or_remove_one"`` (or the dp-accounting enum members)."""
    if isinstance(value, NeighborRel) and value.name.lower() in _RELATION_NAMES:
        return value
    if isinstance(value, str) and value.lower() in _RELATION_NAMES:
        return _RELATION_NAMES[value.lower()]
    raise ValueError("neighboring_relation must be one of 'replace_one', 'add_or_remove_one' "
                     f"(or the NeighboringRelation members), got {value!r}")


def _count(value: object, name: str = "count") -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a positive integer, got {value!r}")
    if int(value) < 1:
        raise ValueError(f"{name} must be a positive integer (>= 1), got {value!r}")
    return int(value)


def dp_sgd_event(noise_multiplier: float, sample_rate: float) -> dp_event.DpEvent:
    """One Opacus DP-SGD step as a dp-accounting event: Poisson-sampled Gaussian.

    Args:
      noise_multiplier: σ ≥ 0 (noise standard deviation over the clipping norm; 0 = no privacy).
      sample_rate: Poisson sampling probability in [0, 1].
    """
    sigma = check_range("noise_multiplier", noise_multiplier, 0.0, math.inf, high_open=True)
    rate = check_range("sample_rate", sample_rate, 0.0, 1.0)
    return dp_event.PoissonSampledDpEvent(rate, dp_event.GaussianDpEvent(sigma))


def _history_entry(entry: object, index: int) -> HistoryEntry:
    if not isinstance(entry, Sequence) or len(entry) != 3:
        raise ValueError(f"history[{index}] must be (noise_multiplier, sample_rate, num_steps), "
                         f"got {entry!r}")
    sigma, rate, steps = entry
    dp_sgd_event(sigma, rate)  # validates both
    return float(sigma), float(rate), _count(steps, f"history[{index}] num_steps")


@functools.lru_cache(maxsize=16)
def _dp_sgd_step_pld(noise_multiplier: float, sample_rate: float, relation: NeighborRel,
                     value_discretization_interval: float) -> pld_lib.PrivacyLossDistribution:
    """PLD of one DP-SGD step, built with exactly the arguments dp-accounting's ``PLDAccountant``
    uses for ``PoissonSampledDpEvent(q, GaussianDpEvent(σ))`` (cached: building it is the costly
    part of ``get_epsilon``, and Opacus asks for ε after every few steps)."""
    return pld_lib.from_gaussian_mechanism(
        standard_deviation=noise_multiplier,
        value_discretization_interval=value_discretization_interval,
        sampling_prob=sample_rate,
        neighboring_relation=relation)


class _StepCachingPLDAccountant(ShufflePLDAccountant):
    """:class:`ShufflePLDAccountant` that reuses the one-step PLD of DP-SGD steps.

    Its DP-SGD step PLD is ``_dp_sgd_step_pld(...).self_compose(count)``, exactly what
    :mod:`dpacct_shuffle.dp_accounting_plds` (and dp-accounting's ``PLDAccountant``) build for
    ``PoissonSampledDpEvent(q, GaussianDpEvent(σ))`` with a fresh PLD, so the results are identical
    (tests compare with ``dp_accounting.pld.PLDAccountant``). Edge cases (σ = 0, q = 0) go to the
    parent.
    """

    def _leaf_pld(self, event: dp_event.DpEvent, count: int) -> Any:
        if (isinstance(event, dp_event.PoissonSampledDpEvent)
                and isinstance(event.event, dp_event.GaussianDpEvent)
                and event.sampling_probability > 0 and event.event.noise_multiplier > 0):
            check_leaf_grid(event, count, self._interval, self.neighboring_relation)
            step = _dp_sgd_step_pld(float(event.event.noise_multiplier),
                                    float(event.sampling_probability), self.neighboring_relation,
                                    self._interval)
            return step.self_compose(count)
        return super()._leaf_pld(event, count)


class ShuffleAccountant(IAccountant):  # type: ignore[misc]  # Opacus is not type-checked here
    """Opacus accountant composing DP-SGD steps, shuffle rounds and local reports as PLDs.

    Accounts DP-SGD steps (Poisson-sampled, as Opacus's DPDataLoader draws them) and
    shuffle-model reports; not DP-SGD on shuffled fixed-size minibatches (module docstring).

    Args:
      neighboring_relation: ``"add_or_remove_one"`` (default; Opacus's relation, sensitivity 1;
        among this package's events only Poisson-sampled shuffle rounds are then accepted) or
        ``"replace_one"`` (the relation of the shuffle bounds, under which a Gaussian step has
        sensitivity 2; every event of this package is accepted).
      value_discretization_interval: PLD grid of every composed event; ``None`` (default): chosen
        from the scale of the composed events, as :class:`ShufflePLDAccountant` does (dp-accounting's
        1e-4 when only DP-SGD steps are composed).
      progress: progress bar of long compositions (:class:`ShufflePLDAccountant`'s ``progress``:
        ``"auto"``, the default, shows one after a second when stderr is a terminal; ``True``
        always after a second; ``False`` never).

    Attributes:
      history: Opacus's list of ``(noise_multiplier, sample_rate, num_steps)``; consecutive equal
        steps are merged, as in Opacus's RDP/PRV accountants. Opacus's ``get_noise_multiplier``
        assigns it directly; it is the only record of the DP-SGD steps.
      events: list of ``(DpEvent, count)`` of everything added by :meth:`compose` and
        :meth:`step_shuffle`, consecutive equal events merged. DpEvents are immutable, so the list
        holds them by reference.
    """

    def __init__(self, neighboring_relation: RelationLike = NeighborRel.ADD_OR_REMOVE_ONE,
                 value_discretization_interval: Optional[float] = None,
                 progress: Union[ProgressOption, Literal["auto"]] = "auto") -> None:
        super().__init__()
        self._progress = progress
        self._relation = _relation(neighboring_relation)
        self._fixed_interval = (None if value_discretization_interval is None else
                                               check_range("value_discretization_interval",
                                                           value_discretization_interval, 0.0, 1.0,
                                                           low_open=True))
        self.events: list[tuple[dp_event.DpEvent, int]] = []
        self._cache: Optional[tuple[tuple[Any, ...], ShufflePLDAccountant]] = None

    # -- configuration ---------------------------------------------------------------------------
    @property
    def neighboring_relation(self) -> NeighborRel:
        """The relation every reported ε refers to.

        Assignable (e.g. ``engine.accountant.neighboring_relation = "add_or_remove_one"`` after
        ``PrivacyEngine(accountant="shuffle")``) only while every event added so far is supported
        under the new relation: once a shuffle or local-report event is in, the relation stays
        replace-one (ValueError).
        """
        return self._relation

    @neighboring_relation.setter
    def neighboring_relation(self, value: RelationLike) -> None:
        relation = _relation(value)
        for event, _ in self.events:
            self._check_supported(event, relation)
        self._relation = relation
        self._cache = None

    @property
    def value_discretization_interval(self) -> Optional[float]:
        """The fixed PLD grid, or None for the automatic choice."""
        return self._fixed_interval

    @classmethod
    def mechanism(cls) -> str:
        return MECHANISM

    # -- adding events ---------------------------------------------------------------------------
    def step(self, *, noise_multiplier: float, sample_rate: float) -> None:
        """One DP-SGD step (called by Opacus's optimizer hook); merged into ``history``."""
        dp_sgd_event(noise_multiplier, sample_rate)
        sigma, rate = float(noise_multiplier), float(sample_rate)
        if self.history and self.history[-1][0] == sigma and self.history[-1][1] == rate:
            last_sigma, last_rate, steps = self.history.pop()
            self.history.append((last_sigma, last_rate, steps + 1))
        else:
            self.history.append((sigma, rate, 1))

    def step_shuffle(self, randomizer: RandomizerDescription, num_users: int, count: int = 1,
                     honest_fraction: float = 1.0,
                     sampling_probability: Optional[float] = None) -> None:
        """``count`` shuffle rounds, in each of which the focal user sends one report.

        ``ShuffleEvent(randomizer, num_users, honest_fraction)`` (see
        :class:`dpacct_shuffle.events.ShuffleEvent`): ``randomizer`` is a catalog Randomizer, a
        VariationRatio or a ``delta(ε, n)`` profile, ``num_users`` the number of reports shuffled
        together. Replace-one only: ValueError under add/remove (the default) — sample the
        round or construct the accountant with ``neighboring_relation="replace_one"``.

        With ``sampling_probability`` γ each round is
        ``PoissonSampledDpEvent(γ, ShuffleEvent(randomizer, num_users, honest_fraction))``: every
        one of the ``num_users`` clients (the population) takes part with probability γ
        (:func:`dpacct_shuffle.sampling.poisson_sampled_profile`); accepted under both relations.
        """
        event: dp_event.DpEvent = ShuffleEvent(randomizer, num_users, honest_fraction)
        if sampling_probability is not None:
            event = dp_event.PoissonSampledDpEvent(
                check_range("sampling_probability", sampling_probability, 0.0, 1.0), event)
        self.compose(event, count)

    def compose(self, event: dp_event.DpEvent, count: int = 1) -> None:
        """Add ``count`` copies of any event :class:`ShufflePLDAccountant` supports.

        Raises:
          TypeError: ``event`` is not a DpEvent.
          ValueError: the event is unsupported under this accountant's neighbouring relation (for
            an unsampled shuffle round or local reports under add/remove: they only have a
            replace-one guarantee).
        """
        if not isinstance(event, dp_event.DpEvent):
            raise TypeError(f"event must be a dp_accounting DpEvent, got {type(event).__name__}")
        times = _count(count)
        self._check_supported(event)
        if self.events and self.events[-1][0] == event:
            self.events[-1] = (event, self.events[-1][1] + times)
        else:
            self.events.append((event, times))

    def _check_supported(self, event: dp_event.DpEvent,
                         relation: Optional[NeighborRel] = None) -> None:
        """ValueError unless ``event`` is supported under ``relation`` (default: the current one)."""
        relation = self._relation if relation is None else relation
        if _StepCachingPLDAccountant(relation, self._fixed_interval).supports(event):
            return
        if (relation is not NeighborRel.REPLACE_ONE
                and ShufflePLDAccountant(NeighborRel.REPLACE_ONE).supports(event)):
            replace = ("construct the accountant with ShuffleAccountant(neighboring_relation="
                       "'replace_one') (assign it to engine.accountant before make_private; DP-SGD "
                       "steps then have sensitivity 2)")
            if isinstance(event, (ShuffleEvent, ParallelCompositionEvent)):
                raise ValueError(
                    f"an unsampled {type(event).__name__} has a guarantee for replace-one "
                    f"neighbours only, none under neighboring_relation={relation.name.lower()!r} "
                    "(Opacus's relation, this accountant's default): the number of shuffled "
                    "reports reveals whether a user is present. Two ways out: sample the round — step_shuffle(..., "
                    "sampling_probability=γ), i.e. PoissonSampledDpEvent(γ, round), accepted "
                    f"under add/remove-one — or {replace}.")
            raise ValueError(
                f"{type(event).__name__} cannot be accounted under neighboring_relation="
                f"{relation.name.lower()!r} (Opacus's relation, this accountant's default): "
                f"{relation_message(event, relation)} Way out: {replace}.")
        raise ValueError(f"event {event!r} is not supported by ShufflePLDAccountant under "
                         f"neighboring_relation={relation.name}")

    # -- results ---------------------------------------------------------------------------------
    def _fresh_pld_accountant(self) -> ShufflePLDAccountant:
        return _StepCachingPLDAccountant(self._relation, self._fixed_interval,
                                         progress=self._progress)

    def ledger_events(self) -> list[tuple[dp_event.DpEvent, int]]:
        """Everything accounted, as ``(DpEvent, count)``: the DP-SGD steps first, then the rest."""
        steps = [(dp_sgd_event(sigma, rate), steps)
                 for sigma, rate, steps in (_history_entry(e, i) for i, e in enumerate(self.history))]
        return steps + list(self.events)

    def pld_accountant(self) -> ShufflePLDAccountant:
        """A :class:`ShufflePLDAccountant` holding every accounted event (cached until the next
        change; treat it as read-only)."""
        key = (tuple(tuple(entry) for entry in self.history), tuple(self.events))
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        accountant = self._fresh_pld_accountant()
        for event, count in self.ledger_events():
            accountant.compose(event, count)
        self._cache = (key, accountant)
        return accountant

    def get_epsilon(self, delta: float) -> float:
        """ε of everything accounted so far at ``delta``, for the accountant's neighbouring relation.

        The number is an (ε, δ)-DP guarantee for ``self.neighboring_relation``: under
        ``REPLACE_ONE`` (default) for datasets differing in one replaced record (Gaussian steps at
        sensitivity 2); under ``ADD_OR_REMOVE_ONE`` for one record added or removed (Opacus's
        relation, sensitivity 1). It is dp-accounting's pessimistic PLD composition
        (``PLDAccountant.get_epsilon``) of all DP-SGD steps and all added events: ``inf`` if an
        event gives no privacy (σ = 0), 0.0 if nothing was accounted.

        Args:
          delta: target δ in (0, 1).
        """
        return float(self.pld_accountant().get_epsilon(check_delta(delta)))

    def get_delta(self, epsilon: float) -> float:
        """δ of everything accounted so far at ``epsilon`` (same relation as :meth:`get_epsilon`)."""
        return float(self.pld_accountant().get_delta(check_epsilon(epsilon)))

    def __len__(self) -> int:
        """Entries of the ledger, like Opacus's accountants (``len(history)``): the entries of
        ``history`` (consecutive equal DP-SGD steps are one entry) plus those of ``events``."""
        return len(self.history) + len(self.events)

    def __repr__(self) -> str:
        steps = sum(int(entry[2]) for entry in self.history)
        events = ", ".join(f"{count} × {type(event).__name__}" for event, count in self.events)
        interval = "auto" if self._fixed_interval is None else repr(self._fixed_interval)
        return (f"ShuffleAccountant(neighboring_relation={self._relation.name.lower()!r}, "
                f"value_discretization_interval={interval}; holds {steps} DP-SGD step(s) in "
                f"{len(self.history)} history entr{'y' if len(self.history) == 1 else 'ies'}"
                f"{', ' + events if events else ''})")

    # -- checkpoints -----------------------------------------------------------------------------
    def state_dict(self, destination: Optional[dict[str, Any]] = None) -> dict[str, Any]:
        """Opacus's ``history``/``mechanism`` plus ``events``, ``neighboring_relation`` and
        ``value_discretization_interval`` — plain data only (numbers, strings, lists, dicts).

        ``events`` is a list of ``[event JSON form, count]``, the JSON form of
        :func:`dpacct_shuffle.event_serialization.event_to_dict`, so a checkpoint holding the dict
        loads with ``torch.load(path, weights_only=True)``, even where this package is not
        installed, and :meth:`load_state_dict` reproduces ε exactly. TypeError if an event has no
        JSON form (a randomizer built directly with the Randomizer constructor)."""
        result: dict[str, Any] = super().state_dict(
            OrderedDict() if destination is None else destination)
        # Opacus's (σ, q, steps) tuples, as Python numbers (numpy scalars are not plain data)
        result["history"] = [(float(sigma), float(rate), int(steps))
                             for sigma, rate, steps in result["history"]]
        result["events"] = [[event_to_dict(event), count] for event, count in self.events]
        result["neighboring_relation"] = self._relation.name
        result["value_discretization_interval"] = self._fixed_interval
        return result

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restore a :meth:`state_dict` (validated; the relation and grid are restored too).

        ``events`` entries hold an event's JSON form (what :meth:`state_dict` writes) or a DpEvent.

        Nothing is changed unless the whole state is valid.

        Raises:
          ValueError: Opacus's checks (missing keys, other mechanism), missing or invalid
            shuffle keys, or an event unsupported under the stored relation.
        """
        check_json_depth("state_dict", state_dict)  # error messages repr its entries
        IAccountant.load_state_dict(ShuffleAccountant(), state_dict)  # Opacus's checks, on a scratch
        missing = [key for key in ("events", "neighboring_relation", "value_discretization_interval")
                   if key not in state_dict]
        if missing:
            raise ValueError(f"state_dict lacks the keys {missing} of a ShuffleAccountant")
        history = [_history_entry(entry, i) for i, entry in enumerate(state_dict["history"])]
        restored = ShuffleAccountant(state_dict["neighboring_relation"],
                                     state_dict["value_discretization_interval"])
        for i, item in enumerate(state_dict["events"]):
            if not isinstance(item, Sequence) or len(item) != 2:
                raise ValueError(f"events[{i}] must be (event JSON form or DpEvent, count), "
                                 f"got {item!r}")
            event = event_from_dict(item[0]) if isinstance(item[0], Mapping) else item[0]
            restored.compose(event, item[1])
        self.history = history
        self.events = restored.events
        self._relation = restored._relation
        self._fixed_interval = restored._fixed_interval
        self._cache = None


def noise_multiplier_for_epsilon(
    *,
    target_epsilon: float,
    target_delta: float,
    sample_rate: float,
    steps: int,
    planned_events: Iterable[tuple[dp_event.DpEvent, int]] = (),
    accountant: Optional[ShuffleAccountant] = None,
    neighboring_relation: RelationLike = NeighborRel.ADD_OR_REMOVE_ONE,
    tolerance: float = 1e-3,
) -> float:
    """Smallest σ (within ``tolerance``) for which everything planned meets (ε, δ).

    Counts, besides ``steps`` DP-SGD steps ``PoissonSampledDpEvent(sample_rate, GaussianDpEvent(σ))``,
    the ``planned_events`` (``(DpEvent, count)`` pairs, e.g. ``(ShuffleEvent(R, n), rounds)``) and,
    if ``accountant`` is given, everything it has already accounted (its relation and grid are used
    then; otherwise ``neighboring_relation``, default add/remove-one like Opacus). Opacus's
    ``make_private_with_epsilon`` counts only the DP-SGD steps.

    The search is dp-accounting's ``mechanism_calibration.calibrate_dp_mechanism`` on a
    :class:`ShufflePLDAccountant` composing exactly what :meth:`ShuffleAccountant.get_epsilon` would,
    so at the returned σ ``get_epsilon(target_delta) ≤ target_epsilon`` (dp-accounting guarantees a
    non-positive gap at the returned value).

    Raises:
      ValueError: bad inputs, or the fixed events alone already exceed ``target_epsilon`` (no σ
        helps).
    """
    eps = check_range("target_epsilon", target_epsilon, 0.0, math.inf, low_open=True,
                      high_open=True)
    delta = check_delta(target_delta, "target_delta")
    rate = check_range("sample_rate", sample_rate, 0.0, 1.0, low_open=True)
    num_steps = _count(steps, "steps")
    tol = check_range("tolerance", tolerance, 0.0, 1.0, low_open=True)
    base = accountant if accountant is not None else ShuffleAccountant(neighboring_relation)
    fixed = base.ledger_events()
    for i, item in enumerate(planned_events):
        if not isinstance(item, Sequence) or len(item) != 2:
            raise ValueError(f"planned_events[{i}] must be (DpEvent, count), got {item!r}")
        base._check_supported(item[0])
        fixed.append((item[0], _count(item[1], f"planned_events[{i}] count")))
    fixed_event = dp_event.ComposedDpEvent(
        [dp_event.SelfComposedDpEvent(event, count) for event, count in fixed])

    def make_accountant() -> ShufflePLDAccountant:
        return base._fresh_pld_accountant()

    floor = make_accountant().compose(fixed_event).get_epsilon(delta)
    if floor >= eps:
        raise ValueError(f"target_epsilon={eps!r} is already used up by the events besides the "
                         f"DP-SGD steps (their epsilon is {floor!r} at delta={delta!r})")

    def make_event(sigma: float) -> dp_event.DpEvent:
        return dp_event.ComposedDpEvent([
            fixed_event,
            dp_event.SelfComposedDpEvent(dp_sgd_event(sigma, rate), num_steps)])

    return float(mechanism_calibration.calibrate_dp_mechanism(
        make_accountant, make_event, eps, delta,
        mechanism_calibration.LowerEndpointAndGuess(0.0, 1.0), tol=tol))


def _register() -> None:
    """Register :class:`ShuffleAccountant` as "shuffle" in Opacus's registry (idempotent)."""
    try:
        register_accountant(MECHANISM, ShuffleAccountant)
        return
    except ValueError:
        pass
    existing = type(create_accountant(MECHANISM))
    if existing is ShuffleAccountant:
        return
    if existing.__module__ == __name__ and existing.__qualname__ == ShuffleAccountant.__qualname__:
        register_accountant(MECHANISM, ShuffleAccountant, force=True)  # module reloaded
        return
    warnings.warn(f"Opacus accountant name {MECHANISM!r} is taken by {existing.__module__}."
                  f"{existing.__qualname__}; PrivacyEngine(accountant={MECHANISM!r}) will not use "
                  "dpacct_shuffle's ShuffleAccountant (assign an instance to engine.accountant)",
                  RuntimeWarning, stacklevel=2)


_register()

__all__ = [
    "MECHANISM",
    "ShuffleAccountant",
    "dp_sgd_event",
    "noise_multiplier_for_epsilon",
]
