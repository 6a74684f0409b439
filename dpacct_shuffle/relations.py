"""Which events of this package have a guarantee under which neighbouring relation.

The one relation policy every accountant, the Opacus and Flower adapters and the event→numbers
dispatch (:mod:`dpacct_shuffle.event_profiles`) apply:

* ``REPLACE_ONE`` (one user's input replaced, everyone else fixed): every event of
  :mod:`dpacct_shuffle.events`, sampled or not, and a without-replacement-sampled Gaussian — the
  relation the shuffle bounds hold for (docs/theory.md, "Setting");
* ``ADD_OR_REMOVE_ONE``: Poisson-sampled shuffle rounds only (client sampling hides whether the
  victim is present; an unsampled round's number of reports reveals it; docs/theory.md,
  "Client sampling");
* any other relation: none of them.

Events dp-accounting itself knows follow dp-accounting's own rules (checked where their PLDs are
built, :mod:`dpacct_shuffle.dp_accounting_plds`).
"""

from __future__ import annotations

from typing import Any

from dp_accounting import dp_event
from dp_accounting import privacy_accountant
from dp_accounting.privacy_accountant import NeighboringRelation as NeighborRel

from dpacct_shuffle.events import LDPCompositionEvent, ParallelCompositionEvent, ShuffleEvent

CompositionErrorDetails = privacy_accountant.PrivacyAccountant.CompositionErrorDetails
#: dp-accounting's ``PrivacyAccountant.CompositionErrorDetails`` (dp-accounting ships no type hints)
ErrorDetails = Any

SHUFFLE_EVENTS = (ShuffleEvent, ParallelCompositionEvent)
OWN_EVENTS = (ShuffleEvent, ParallelCompositionEvent, LDPCompositionEvent)


def is_sampled_shuffle(event: dp_event.DpEvent) -> bool:
    """A shuffle round inside ``PoissonSampledDpEvent`` or ``SampledWithoutReplacementDpEvent``."""
    return (isinstance(event, (dp_event.PoissonSampledDpEvent,
                               dp_event.SampledWithoutReplacementDpEvent))
            and isinstance(event.event, SHUFFLE_EVENTS))


def is_poisson_shuffle(event: dp_event.DpEvent) -> bool:
    """A shuffle round inside ``PoissonSampledDpEvent`` (client sampling)."""
    return (isinstance(event, dp_event.PoissonSampledDpEvent)
            and isinstance(event.event, SHUFFLE_EVENTS))


def is_without_replacement_gaussian(event: dp_event.DpEvent) -> bool:
    """``SampledWithoutReplacementDpEvent`` of a ``GaussianDpEvent`` with noise (its PLD is built
    here: dp-accounting's PLD accountant does not support it)."""
    return (isinstance(event, dp_event.SampledWithoutReplacementDpEvent)
            and isinstance(event.event, dp_event.GaussianDpEvent)
            and event.event.noise_multiplier > 0)


def is_own(event: dp_event.DpEvent) -> bool:
    """An event whose numbers this package computes: a shuffle round (possibly sampled), local
    reports, or a without-replacement-sampled Gaussian."""
    return (isinstance(event, OWN_EVENTS) or is_sampled_shuffle(event)
            or is_without_replacement_gaussian(event))


def supported_relation(event: dp_event.DpEvent, relation: NeighborRel) -> bool:
    """Replace-one for every event of this package; add/remove-one for Poisson-sampled shuffle
    rounds (see the module docstring)."""
    if relation is NeighborRel.REPLACE_ONE:
        return True
    return relation is NeighborRel.ADD_OR_REMOVE_ONE and is_poisson_shuffle(event)


def relation_message(event: dp_event.DpEvent, relation: NeighborRel) -> str:
    """Why ``event`` has no guarantee under ``relation`` here, and what would work."""
    if isinstance(event, SHUFFLE_EVENTS) or is_sampled_shuffle(event):
        if is_poisson_shuffle(event):
            return (f"a Poisson-sampled shuffle round has a guarantee under REPLACE_ONE and "
                    f"ADD_OR_REMOVE_ONE only. Found {relation}.")
        return (f"{type(event).__name__} has a guarantee for replace-one neighbours only, none "
                f"under {relation}: the number of shuffled reports reveals whether the victim is "
                "present. Use neighboring_relation REPLACE_ONE, or wrap the round in "
                "PoissonSampledDpEvent(sampling_probability, ...) (client sampling hides "
                "presence; accepted under ADD_OR_REMOVE_ONE).")
    return (f"neighboring_relation must be `REPLACE_ONE` for {type(event).__name__} "
            f"(local-report and Gaussian bounds here hold for replace-one neighbours). "
            f"Found {relation}.")


def relation_error(event: dp_event.DpEvent, relation: NeighborRel) -> ErrorDetails:
    """:func:`relation_message` as dp-accounting's ``CompositionErrorDetails``."""
    return CompositionErrorDetails(invalid_event=event,
                                   error_message=relation_message(event, relation))


__all__ = [
    "OWN_EVENTS",
    "SHUFFLE_EVENTS",
    "is_own",
    "is_poisson_shuffle",
    "is_sampled_shuffle",
    "is_without_replacement_gaussian",
    "relation_error",
    "relation_message",
    "supported_relation",
]
