"""dp-accounting accountants that understand shuffled and local reports.

* :class:`ShufflePLDAccountant` — a ``dp_accounting.pld.PLDAccountant``;
* :class:`ShuffleRdpAccountant` — a ``dp_accounting.rdp.RdpAccountant``.

Both are constructible with no arguments and then use the **replace-one** neighbouring relation
(one user's input replaced, everything else fixed): the relation the shuffle bounds hold for.
Under that relation dp-accounting's PLD treats a ``GaussianDpEvent`` with sensitivity 2 (a
replaced record can move a norm-≤C sum by 2C); :class:`ShuffleRdpAccountant` does the same (its
parent used sensitivity 1 — see below). Pass another relation explicitly to get the parents'
behaviour for their own events; the events of :mod:`dpacct_shuffle.events` are then unsupported
(``supports()`` returns False, never raises) — except Poisson-sampled shuffle rounds, which
:class:`ShufflePLDAccountant` also accounts under ``ADD_OR_REMOVE_ONE`` (client sampling hides
whether the victim is present; an unsampled round's message count reveals it).

Supported, anywhere inside ``ComposedDpEvent`` / ``SelfComposedDpEvent``:

* :class:`~dpacct_shuffle.events.ShuffleEvent`, :class:`~dpacct_shuffle.events.ParallelCompositionEvent`
  (PLD via :func:`dpacct_shuffle.profiles.pld_from_profile`, RDP via
  :func:`dpacct_shuffle.profiles.rdp_from_profile`);
* ``PoissonSampledDpEvent(γ, ·)`` around either of them (client sampling from a population of
  ``num_users``): replace-one and, PLD only, add/remove-one, through the void view of
  :mod:`dpacct_shuffle.sampling` (:func:`~dpacct_shuffle.sampling.poisson_sampled_profile`; the
  Rényi divergence under add/remove-one is infinite, so the RDP accountant refuses it);
* ``SampledWithoutReplacementDpEvent(N, m, ·)`` around either of them, or around a
  ``GaussianDpEvent`` (m of N clients sampled uniformly, replace-one; the PLD accountant's
  parent does not support this event): profile η·δ(ln(1 + (e^ε − 1)/η)), η = m/N, of
  :func:`dpacct_shuffle.without_replacement.without_replacement_profile`, with the Gaussian's
  exact profile at sensitivity 2 (``ShuffleRdpAccountant`` keeps the parent's RDP bound for the
  Gaussian, at sensitivity 2 as below);
* :class:`~dpacct_shuffle.events.LDPCompositionEvent` (PLD: leaky randomized response losses,
  dp-accounting's ``from_privacy_parameters``; RDP: binary randomized response, pure LDP only);
* everything the parent supports.

Parent defects fixed here rather than inherited (dp-accounting 0.6.0):

* ``PLDAccountant`` ignores ``count`` for ``RandomizedResponseDpEvent`` (5 × 1-LDP reports came
  out as ε = 1); here the randomized-response PLD is self-composed ``count`` times. A noise
  parameter of 1 (output independent of the input) is a no-op instead of a ValueError.
* ``RdpAccountant`` under ``REPLACE_ONE`` computes a ``GaussianDpEvent`` (and a
  ``LaplaceDpEvent``) with sensitivity 1, as for add/remove — an under-report. Here they are
  computed with sensitivity 2 (noise multiplier halved), matching dp-accounting's PLD.

RDP of shuffle events reuses the PLD grid, which stops evaluating the core at δ ≤ 1e-16; the chord
to the cap that bounds the rest is loose at high Rényi orders, so the RDP numbers are valid but can
be far above the PLD ones — prefer :class:`ShufflePLDAccountant` for shuffle rounds.

Not changed: ``RdpAccountant`` refuses ``PoissonSampledDpEvent`` of a Gaussian under
``REPLACE_ONE`` (so does this subclass); the mixture-of-Gaussians PLD path of dp-accounting 0.6.0
fails under numpy 2 and is not used by anything here.

Private parent attributes relied on (guarded by ``tests/test_accountants.py``):
``PLDAccountant._pld``, ``._contains_non_dp_event``, ``._value_discretization_interval``;
``RdpAccountant._rdp``, ``._orders``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, Optional, TypeVar

import numpy as np
from dp_accounting import dp_event
from dp_accounting import privacy_accountant
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.rdp import rdp_privacy_accountant
from numpy.typing import NDArray

from dpacct_shuffle.events import (
    LDPCompositionEvent,
    LDPCompositionMode,
    ParallelCompositionEvent,
    ParallelMode,
    ShuffleEvent,
)
from dpacct_shuffle.profiles import (
    DEFAULT_VALUE_DISCRETIZATION,
    PrivacyProfile,
    ProfileGrid,
    ldp_pld,
    max_profile,
    pld_from_grid,
    profile_grid,
    randomized_response_rdp,
    rdp_from_grid,
)
from dpacct_shuffle.sampling import poisson_sampled_profile
from dpacct_shuffle.without_replacement import gaussian_profile, without_replacement_profile

NeighborRel = privacy_accountant.NeighboringRelation
CompositionErrorDetails = privacy_accountant.PrivacyAccountant.CompositionErrorDetails

_SHUFFLE_EVENTS = (ShuffleEvent, ParallelCompositionEvent)
_OWN_EVENTS = (ShuffleEvent, ParallelCompositionEvent, LDPCompositionEvent)


# ---------------------------------------------------------------------------------------------
# event -> profile
# ---------------------------------------------------------------------------------------------


def _sampled_profile(event: dp_event.PoissonSampledDpEvent,
                     relation: NeighborRel = NeighborRel.REPLACE_ONE) -> PrivacyProfile:
    """Profile of ``PoissonSampledDpEvent(γ, ShuffleEvent | ParallelCompositionEvent)``: the void
    view (:func:`dpacct_shuffle.sampling.poisson_sampled_profile`) under ``relation``."""
    inner, gamma = event.event, event.sampling_probability
    if isinstance(inner, ShuffleEvent):
        return poisson_sampled_profile(inner.randomizer, inner.num_users, gamma,
                                       inner.honest_fraction, relation)
    if inner.mode is ParallelMode.RANDOM:
        return poisson_sampled_profile(inner.composite_randomizer(), inner.num_users, gamma,
                                       inner.honest_fraction, relation)
    return max_profile([poisson_sampled_profile(branch, size, gamma, inner.honest_fraction, relation)
                        for branch, size in zip(inner.branches, inner.num_users)])


def _shuffled_users(event: ShuffleEvent | ParallelCompositionEvent) -> int:
    """Number of reports a shuffle round shuffles (all groups of a disjoint round together)."""
    users = event.num_users
    return users if isinstance(users, int) else sum(users)


def _without_replacement_profile(event: dp_event.SampledWithoutReplacementDpEvent) -> PrivacyProfile:
    """Profile of ``SampledWithoutReplacementDpEvent(N, m, inner)``, replace-one (see
    :func:`dpacct_shuffle.without_replacement.without_replacement_profile`).

    ``inner`` is a ``GaussianDpEvent`` (a sum of updates clipped to norm C with noise σ·C: under
    replace-one the sensitivity is 2C) or a shuffle round of at most m reports (the round on the
    sample; fewer reports than m, e.g. drop-outs independent of the data, only make its bound
    larger).
    """
    inner = event.event
    if isinstance(inner, dp_event.GaussianDpEvent):
        base = gaussian_profile(inner.noise_multiplier, sensitivity=2.0)
    else:
        if _shuffled_users(inner) > event.sample_size:
            raise ValueError(
                f"the shuffle round inside SampledWithoutReplacementDpEvent shuffles "
                f"{_shuffled_users(inner)} reports, more than sample_size={event.sample_size}")
        base = inner.profile()
    return without_replacement_profile(base, event.sample_size, event.source_dataset_size)


def event_profile(event: dp_event.DpEvent,
                  relation: NeighborRel = NeighborRel.REPLACE_ONE) -> PrivacyProfile:
    """The privacy profile of a (possibly Poisson- or without-replacement-sampled) shuffle event,
    or of a without-replacement-sampled Gaussian, under ``relation``: ``REPLACE_ONE`` for all of
    them, ``ADD_OR_REMOVE_ONE`` for Poisson-sampled shuffle rounds only."""
    if not _supported_relation(event, relation):
        raise ValueError(_relation_message(event, relation))
    if isinstance(event, dp_event.PoissonSampledDpEvent):
        return _sampled_profile(event, relation)
    if isinstance(event, dp_event.SampledWithoutReplacementDpEvent):
        return _without_replacement_profile(event)
    if isinstance(event, _SHUFFLE_EVENTS):
        return event.profile()
    raise TypeError(f"no shuffle profile for {type(event).__name__}")


def _is_sampled_shuffle(event: dp_event.DpEvent) -> bool:
    return (isinstance(event, (dp_event.PoissonSampledDpEvent,
                               dp_event.SampledWithoutReplacementDpEvent))
            and isinstance(event.event, _SHUFFLE_EVENTS))


def _is_without_replacement_gaussian(event: dp_event.DpEvent) -> bool:
    return (isinstance(event, dp_event.SampledWithoutReplacementDpEvent)
            and isinstance(event.event, dp_event.GaussianDpEvent)
            and event.event.noise_multiplier > 0)


def _is_poisson_shuffle(event: dp_event.DpEvent) -> bool:
    return (isinstance(event, dp_event.PoissonSampledDpEvent)
            and isinstance(event.event, _SHUFFLE_EVENTS))


def _supported_relation(event: dp_event.DpEvent, relation: NeighborRel) -> bool:
    """Replace-one for every event here; add/remove-one for Poisson-sampled shuffle rounds."""
    if relation is NeighborRel.REPLACE_ONE:
        return True
    return relation is NeighborRel.ADD_OR_REMOVE_ONE and _is_poisson_shuffle(event)


_Result = TypeVar("_Result")


def _cached(function: Callable[..., _Result]) -> Callable[..., _Result]:
    """lru_cache that falls back to a plain call for unhashable events (e.g. mutable randomizers)."""
    cached = functools.lru_cache(maxsize=256)(function)

    @functools.wraps(function)
    def wrapper(*args: Any) -> _Result:
        try:
            hash(args)
        except TypeError:
            return function(*args)
        return cached(*args)

    return wrapper


@_cached
def shuffle_event_grid(event: dp_event.DpEvent,
                       value_discretization_interval: float = DEFAULT_VALUE_DISCRETIZATION,
                       relation: NeighborRel = NeighborRel.REPLACE_ONE
                       ) -> tuple[ProfileGrid, float]:
    """Profile grid and ε cap of one (possibly sampled) shuffle event under ``relation`` (cached
    per event, shared by the PLD and the RDP conversions)."""
    profile = event_profile(event, relation)
    return profile_grid(profile, value_discretization_interval), profile.epsilon_cap


@_cached
def shuffle_event_pld(event: dp_event.DpEvent,
                      value_discretization_interval: float = DEFAULT_VALUE_DISCRETIZATION,
                      relation: NeighborRel = NeighborRel.REPLACE_ONE
                      ) -> pld_lib.PrivacyLossDistribution:
    """Pessimistic PLD of one (possibly sampled) shuffle event under ``relation`` (cached per
    event)."""
    return pld_from_grid(shuffle_event_grid(event, value_discretization_interval, relation)[0])


def shuffle_event_rdp(event: dp_event.DpEvent, orders: Sequence[float]) -> NDArray[np.float64]:
    """RDP upper bound (both directions) of one (possibly sampled) shuffle event, replace-one."""
    grid, epsilon_cap = shuffle_event_grid(event)
    return rdp_from_grid(grid, orders, epsilon_cap)


def ldp_event_pld(event: LDPCompositionEvent,
                  value_discretization_interval: float = DEFAULT_VALUE_DISCRETIZATION
                  ) -> pld_lib.PrivacyLossDistribution:
    """PLD of a user's local reports (sequential: composed leaky-RR PLDs; chained: its profile)."""
    deltas = event.delta_values
    if event.mode is LDPCompositionMode.SEQUENTIAL:
        result = pld_lib.identity(value_discretization_interval)
        for epsilon, delta in zip(event.epsilons, deltas):
            result = result.compose(ldp_pld(epsilon, delta, value_discretization_interval))
        return result
    profile = event.chained_profile()
    if all(delta == 0.0 for delta in deltas):
        return ldp_pld(profile.epsilon_cap, 0.0, value_discretization_interval)
    return pld_from_grid(profile_grid(profile, value_discretization_interval))


def ldp_event_rdp(event: LDPCompositionEvent, orders: Sequence[float]) -> Optional[NDArray[np.float64]]:
    """RDP of a user's local reports, or None if some report is only (ε, δ>0)-LDP without a
    pure block (the Rényi divergence of a leaky randomized response is infinite)."""
    deltas = event.delta_values
    orders_array = np.asarray(orders, dtype=np.float64)
    if event.mode is LDPCompositionMode.SEQUENTIAL:
        if any(delta > 0.0 for delta in deltas):
            return None
        return sum((randomized_response_rdp(eps, orders_array) for eps in event.epsilons),
                   np.zeros_like(orders_array))
    cap = event.chained_profile().epsilon_cap
    if math.isinf(cap):
        return None
    return randomized_response_rdp(cap, orders_array)


def _relation_message(event: dp_event.DpEvent, relation: NeighborRel) -> str:
    if isinstance(event, _SHUFFLE_EVENTS) or _is_sampled_shuffle(event):
        if _is_poisson_shuffle(event):
            return (f"a Poisson-sampled shuffle round has a guarantee under REPLACE_ONE and "
                    f"ADD_OR_REMOVE_ONE only. Found {relation}.")
        return (f"{type(event).__name__} has no guarantee under {relation}: the number of shuffled "
                "reports reveals whether the victim is present. Use neighboring_relation "
                "REPLACE_ONE, or wrap the round in PoissonSampledDpEvent(sampling_probability, "
                "...) (client sampling hides presence; accepted under ADD_OR_REMOVE_ONE).")
    return (f"neighboring_relation must be `REPLACE_ONE` for {type(event).__name__} "
            f"(local-report and Gaussian bounds here hold for replace-one neighbours). "
            f"Found {relation}.")


def _relation_error(event: dp_event.DpEvent, relation: NeighborRel) -> CompositionErrorDetails:
    return CompositionErrorDetails(invalid_event=event,
                                   error_message=_relation_message(event, relation))


# ---------------------------------------------------------------------------------------------
# accountants
# ---------------------------------------------------------------------------------------------


class ShufflePLDAccountant(pld_privacy_accountant.PLDAccountant):
    """``PLDAccountant`` that also accounts shuffle rounds and local reports (replace-one default).

    Args:
      neighboring_relation: defaults to ``REPLACE_ONE``, the relation the shuffle bounds hold for
        (dp-accounting's PLD then treats a Gaussian step with sensitivity 2). Under any other
        relation the shuffle/LDP events are unsupported.
      value_discretization_interval: PLD grid (default 1e-4); the shuffle PLDs use the same grid.
    """

    def __init__(self, neighboring_relation: NeighborRel = NeighborRel.REPLACE_ONE,
                 value_discretization_interval: float = DEFAULT_VALUE_DISCRETIZATION) -> None:
        super().__init__(neighboring_relation, value_discretization_interval)

    def _compose_pld(self, pld: pld_lib.PrivacyLossDistribution, count: int) -> None:
        self._pld = self._pld.compose(pld.self_compose(count) if count > 1 else pld)

    def _maybe_compose(self, event: dp_event.DpEvent, count: int,
                       do_compose: bool) -> Optional[CompositionErrorDetails]:
        if (isinstance(event, _OWN_EVENTS) or _is_sampled_shuffle(event)
                or _is_without_replacement_gaussian(event)):
            if not _supported_relation(event, self.neighboring_relation):
                return _relation_error(event, self.neighboring_relation)
            if do_compose:
                if isinstance(event, LDPCompositionEvent):
                    pld = ldp_event_pld(event, self._value_discretization_interval)
                else:
                    pld = shuffle_event_pld(event, self._value_discretization_interval,
                                            self.neighboring_relation)
                self._compose_pld(pld, count)
            return None
        if (isinstance(event, dp_event.RandomizedResponseDpEvent)
                and self.neighboring_relation in (NeighborRel.REPLACE_ONE, NeighborRel.REPLACE_SPECIAL)
                and event.num_buckets > 1 and 0.0 < event.noise_parameter <= 1.0):
            # parent defect: it composes the randomized-response PLD once, whatever `count` is
            if do_compose and event.noise_parameter < 1.0:
                self._compose_pld(pld_lib.from_randomized_response(
                    noise_parameter=event.noise_parameter,
                    num_buckets=event.num_buckets,
                    value_discretization_interval=self._value_discretization_interval,
                    neighboring_relation=self.neighboring_relation,
                ), count)
            return None
        return super()._maybe_compose(event, count, do_compose)


class ShuffleRdpAccountant(rdp_privacy_accountant.RdpAccountant):
    """``RdpAccountant`` that also accounts shuffle rounds and local reports (replace-one default).

    Args:
      orders: RDP orders (default: dp-accounting's ``DEFAULT_RDP_ORDERS``), all >= 1.
      neighboring_relation: defaults to ``REPLACE_ONE``, the relation the shuffle bounds hold for;
        a ``GaussianDpEvent``/``LaplaceDpEvent`` is then computed with sensitivity 2 (the parent
        used 1). Under any other relation the shuffle/LDP events are unsupported.
    """

    def __init__(self, orders: Optional[Sequence[float]] = None,
                 neighboring_relation: NeighborRel = NeighborRel.REPLACE_ONE) -> None:
        super().__init__(orders, neighboring_relation)

    def _maybe_compose(self, event: dp_event.DpEvent, count: int,
                       do_compose: bool) -> Optional[CompositionErrorDetails]:
        replace_one = self.neighboring_relation is NeighborRel.REPLACE_ONE
        if isinstance(event, _OWN_EVENTS) or _is_sampled_shuffle(event):
            if not replace_one and _supported_relation(event, self.neighboring_relation):
                return CompositionErrorDetails(
                    invalid_event=event,
                    error_message="the Rényi divergence of a Poisson-sampled shuffle round under "
                                  "ADD_OR_REMOVE_ONE is infinite (with the victim present every "
                                  "user may report, an outcome impossible without it); use "
                                  "ShufflePLDAccountant.")
            if not replace_one:
                return _relation_error(event, self.neighboring_relation)
            if isinstance(event, LDPCompositionEvent):
                rdp = ldp_event_rdp(event, self._orders)
                if rdp is None:
                    return CompositionErrorDetails(
                        invalid_event=event,
                        error_message="RDP of an (epsilon, delta>0)-LDP report is unbounded; "
                                      "use ShufflePLDAccountant.")
            elif do_compose:
                rdp = shuffle_event_rdp(event, self._orders)
            if do_compose:
                self._rdp = self._rdp + count * rdp
            return None
        if replace_one and isinstance(event, dp_event.GaussianDpEvent):
            # parent defect: sensitivity 1 under replace-one; a replaced record moves the sum by 2C
            return super()._maybe_compose(
                dp_event.GaussianDpEvent(event.noise_multiplier / 2.0), count, do_compose)
        if replace_one and isinstance(event, dp_event.LaplaceDpEvent):
            return super()._maybe_compose(
                dp_event.LaplaceDpEvent(event.noise_multiplier / 2.0), count, do_compose)
        if (replace_one and isinstance(event, dp_event.SampledWithoutReplacementDpEvent)
                and isinstance(event.event, dp_event.GaussianDpEvent)):
            # same defect inside the parent's sampling-without-replacement bound (Wang, Balle,
            # Kasiviswanathan): its base RDP is the Gaussian's, which under replace-one has
            # sensitivity 2, i.e. the curve of noise_multiplier / 2
            halved = dp_event.SampledWithoutReplacementDpEvent(
                event.source_dataset_size, event.sample_size,
                dp_event.GaussianDpEvent(event.event.noise_multiplier / 2.0))
            return super()._maybe_compose(halved, count, do_compose)
        return super()._maybe_compose(event, count, do_compose)


__all__ = [
    "ShufflePLDAccountant",
    "ShuffleRdpAccountant",
    "event_profile",
    "ldp_event_pld",
    "ldp_event_rdp",
    "shuffle_event_grid",
    "shuffle_event_pld",
    "shuffle_event_rdp",
]
