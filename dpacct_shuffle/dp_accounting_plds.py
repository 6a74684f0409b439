"""PLDs of the events dp-accounting itself knows, through its public constructors only.

:class:`~dpacct_shuffle.accountants.ShufflePLDAccountant` owns its composed
``PrivacyLossDistribution``; for dp-accounting's own leaf events it builds each PLD here with the
arguments ``dp_accounting.pld.PLDAccountant`` (0.6.0) uses, so a ledger of such events gives
exactly dp-accounting's numbers:

* ``GaussianDpEvent`` (σ/√count, one PLD for ``count`` copies), ``LaplaceDpEvent``,
  ``DiscreteLaplaceDpEvent``, ``MixtureOfGaussiansDpEvent``, ``PoissonSampledDpEvent`` of a
  Gaussian or a Laplace (``sampling_prob``), ``TruncatedSubsampledGaussianDpEvent``: the
  ``from_*_mechanism`` constructors of ``dp_accounting.pld.privacy_loss_distribution``, with
  dp-accounting's relation rules;
* ``RandomizedResponseDpEvent`` (``from_randomized_response``) self-composed ``count`` times —
  dp-accounting 0.6.0 composes it once whatever ``count`` is (5 × 1-LDP reports came out as
  ε = 1) — and a noise parameter of 1 (output independent of the input) is a no-op instead of a
  ValueError.
"""

from __future__ import annotations

import enum
import math
from typing import Optional, Union

import numpy as np

from dp_accounting import dp_event
from dp_accounting import privacy_accountant
from dp_accounting.privacy_accountant import NeighboringRelation as NeighborRel
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.pld import privacy_loss_mechanism

from dpacct_shuffle.core.validation import check_range


_ADD_REMOVE_OR_SPECIAL = (NeighborRel.ADD_OR_REMOVE_ONE, NeighborRel.REPLACE_SPECIAL)
_REPLACE = (NeighborRel.REPLACE_ONE, NeighborRel.REPLACE_SPECIAL)


class Outcome(enum.Enum):
    """A leaf event that needs no PLD: nothing to compose, or no privacy at all."""

    NO_OP = "no-op"
    NON_PRIVATE = "non-private"


LeafPLD = Union[pld_lib.PrivacyLossDistribution, Outcome]


def _relation_rule(event: dp_event.DpEvent, relation: NeighborRel) -> Optional[str]:
    """dp-accounting's relation rule for a leaf event, or None if it has none here."""
    name = type(event).__name__
    if isinstance(event, dp_event.RandomizedResponseDpEvent) and relation not in _REPLACE:
        return (f"neighboring_relation must be `REPLACE_ONE` or `REPLACE_SPECIAL` for `{name}`. "
                f"Found {relation}.")
    restricted = (dp_event.LaplaceDpEvent, dp_event.DiscreteLaplaceDpEvent,
                  dp_event.MixtureOfGaussiansDpEvent)
    if isinstance(event, restricted) and relation not in _ADD_REMOVE_OR_SPECIAL:
        return (f"neighboring_relation must be `ADD_OR_REMOVE_ONE` or `REPLACE_SPECIAL` for "
                f"`{name}`. Found {relation}.")
    if isinstance(event, dp_event.PoissonSampledDpEvent):
        if isinstance(event.event, dp_event.GaussianDpEvent):
            return None
        if isinstance(event.event, dp_event.LaplaceDpEvent):
            if relation not in _ADD_REMOVE_OR_SPECIAL:
                return ("neighboring_relation must be `ADD_OR_REMOVE_ONE` or `REPLACE_SPECIAL` "
                        f"for `PoissonSampledDpEvent` of a `LaplaceDpEvent`. Found {relation}.")
            return None
        return ("Subevent of `PoissonSampledEvent` must be either `GaussianDpEvent` or "
                f"`LaplaceDpEvent`. Found {event.event}.")
    return None


_KNOWN = (dp_event.NoOpDpEvent, dp_event.NonPrivateDpEvent, dp_event.RandomizedResponseDpEvent,
          dp_event.GaussianDpEvent, dp_event.LaplaceDpEvent, dp_event.DiscreteLaplaceDpEvent,
          dp_event.MixtureOfGaussiansDpEvent, dp_event.PoissonSampledDpEvent,
          dp_event.TruncatedSubsampledGaussianDpEvent)


def leaf_error(event: dp_event.DpEvent, relation: NeighborRel) -> Optional[str]:
    """Why dp-accounting's PLD accounting cannot take this leaf event under ``relation`` (its own
    wording), or None if :func:`leaf_pld` builds it."""
    if not isinstance(event, _KNOWN):
        return "Unsupported event."
    return _relation_rule(event, relation)


#: most points of the dense grid dp-accounting builds for one continuous leaf (building it takes
#: about 160 bytes and a few microseconds per point: 1.6 GB here); GaussianDpEvent(0.001) asks
#: for 2·10^10 at the default interval 1e-4, GaussianDpEvent(0.1) for 5.9·10^6 (ε ≈ 294)
MAX_LEAF_GRID_POINTS = 10**7


def _gaussian_loss_range(standard_deviation: float, sensitivity: float, replace: bool) -> float:
    """Width of the privacy losses dp-accounting's connect-the-dots grid spans for a Gaussian
    (sampling probability 1: sampling never widens it)."""
    adjacency = (privacy_loss_mechanism.AdjacencyType.REPLACE if replace
                 else privacy_loss_mechanism.AdjacencyType.REMOVE)
    with np.errstate(all="ignore"):  # σ near 0: infinite or NaN bounds, refused by the caller
        bounds = privacy_loss_mechanism.GaussianPrivacyLoss(
            standard_deviation, sensitivity=sensitivity, adjacency_type=adjacency
        ).connect_dots_bounds()
    return float(bounds.epsilon_upper) - float(bounds.epsilon_lower)


def _loss_range(event: dp_event.DpEvent, count: int, relation: NeighborRel) -> Optional[float]:
    """Width of the loss grid of a continuous leaf with a positive noise parameter (None for the
    others, whose grids are small)."""
    replace = relation == NeighborRel.REPLACE_ONE
    if isinstance(event, dp_event.PoissonSampledDpEvent):
        event, count = event.event, 1
    if isinstance(event, dp_event.MixtureOfGaussiansDpEvent):
        noise, sensitivity = event.standard_deviation, max(abs(s) for s in event.sensitivities)
    elif isinstance(event, (dp_event.GaussianDpEvent, dp_event.LaplaceDpEvent,
                            dp_event.TruncatedSubsampledGaussianDpEvent)):
        noise, sensitivity = event.noise_multiplier, 1.0
    else:
        return None
    if not (noise > 0 and sensitivity > 0):  # no-op, non-private or dp-accounting's own error
        return None
    if isinstance(event, dp_event.LaplaceDpEvent):
        return 2.0 / float(noise)  # losses in [−1/b, 1/b]
    if isinstance(event, dp_event.TruncatedSubsampledGaussianDpEvent):
        return _gaussian_loss_range(noise / 2.0, 1.0, True)
    return _gaussian_loss_range(noise / math.sqrt(count), sensitivity, replace)


def check_leaf_grid(event: dp_event.DpEvent, count: int, interval: float,
                relation: NeighborRel) -> None:
    """ValueError, before dp-accounting allocates it, if the leaf's grid would exceed
    :data:`MAX_LEAF_GRID_POINTS` (a noise parameter so small that the mechanism is practically
    non-private, or an interval too fine for it)."""
    width = _loss_range(event, count, relation)
    if width is None or width / interval <= MAX_LEAF_GRID_POINTS:
        return
    raise ValueError(
        f"{event!r} needs a privacy-loss grid of "
        f"{width / interval:.3g} points at value_discretization_interval={interval!r} "
        f"(at most {MAX_LEAF_GRID_POINTS:.0e}): its privacy losses span {width:.4g}; use a "
        "larger noise_multiplier or a larger value_discretization_interval")


#: real fields of dp-accounting's leaf events: (field, upper end); each must lie in [0, upper end]
#: (finite where the end is inf); dp-accounting does not check them (NaN raised IndexError or
#: "cannot convert float NaN to integer" deep inside it)
_LEAF_FIELDS = {
    dp_event.GaussianDpEvent: (("noise_multiplier", math.inf),),
    dp_event.LaplaceDpEvent: (("noise_multiplier", math.inf),),
    dp_event.DiscreteLaplaceDpEvent: (("noise_parameter", math.inf),),
    dp_event.RandomizedResponseDpEvent: (("noise_parameter", 1.0),),
    dp_event.MixtureOfGaussiansDpEvent: (("standard_deviation", math.inf),),
    dp_event.PoissonSampledDpEvent: (("sampling_probability", 1.0),),
    dp_event.TruncatedSubsampledGaussianDpEvent: (("sampling_probability", 1.0),
                                                  ("noise_multiplier", math.inf)),
}


def check_leaf_parameters(event: dp_event.DpEvent) -> None:
    """ValueError/TypeError naming the field (``GaussianDpEvent.noise_multiplier``) unless every
    real field of a leaf (and of a Poisson-sampled leaf's inner event) is a number in its range
    (:data:`_LEAF_FIELDS`; a MixtureOfGaussiansDpEvent's sensitivities finite, its sampling_probs
    in [0, 1])."""
    leaves = [event]
    if isinstance(event, dp_event.PoissonSampledDpEvent):
        leaves.append(event.event)
    for leaf in leaves:
        name = type(leaf).__name__
        for field, high in _LEAF_FIELDS.get(type(leaf), ()):
            check_range(f"{name}.{field}", getattr(leaf, field), 0.0, high,
                        high_open=math.isinf(high))
        if isinstance(leaf, dp_event.MixtureOfGaussiansDpEvent):
            for i, value in enumerate(leaf.sensitivities):
                check_range(f"{name}.sensitivities[{i}]", value, high_open=True, low_open=True)
            for i, value in enumerate(leaf.sampling_probs):
                check_range(f"{name}.sampling_probs[{i}]", value, 0.0, 1.0)


def leaf_pld(event: dp_event.DpEvent, count: int, value_discretization_interval: float,
             relation: NeighborRel) -> LeafPLD:
    """The PLD of ``count`` copies of a leaf event dp-accounting knows (see the module docstring),
    or an :class:`Outcome`; ValueError for a field out of range (:func:`check_leaf_parameters`) or
    if its grid would exceed :data:`MAX_LEAF_GRID_POINTS`.
    Call only when :func:`leaf_error` is None."""
    d = value_discretization_interval
    check_leaf_parameters(event)
    check_leaf_grid(event, count, d, relation)
    if isinstance(event, dp_event.NoOpDpEvent):
        return Outcome.NO_OP
    if isinstance(event, dp_event.NonPrivateDpEvent):
        return Outcome.NON_PRIVATE
    if isinstance(event, dp_event.RandomizedResponseDpEvent):
        if event.num_buckets == 1 or event.noise_parameter == 1.0:
            return Outcome.NO_OP  # output independent of the input
        if event.noise_parameter == 0:
            return Outcome.NON_PRIVATE
        pld = pld_lib.from_randomized_response(
            noise_parameter=event.noise_parameter, num_buckets=event.num_buckets,
            value_discretization_interval=d, neighboring_relation=relation)
        return pld if count == 1 else pld.self_compose(count)
    if isinstance(event, dp_event.GaussianDpEvent):
        if event.noise_multiplier == 0:
            return Outcome.NON_PRIVATE
        return pld_lib.from_gaussian_mechanism(
            standard_deviation=event.noise_multiplier / math.sqrt(count),
            value_discretization_interval=d, neighboring_relation=relation)
    if isinstance(event, dp_event.LaplaceDpEvent):
        if event.noise_multiplier == 0:
            return Outcome.NON_PRIVATE
        return pld_lib.from_laplace_mechanism(
            parameter=event.noise_multiplier, value_discretization_interval=d).self_compose(count)
    if isinstance(event, dp_event.DiscreteLaplaceDpEvent):
        if event.noise_parameter == 0:
            return Outcome.NON_PRIVATE
        return pld_lib.from_discrete_laplace_mechanism(
            parameter=event.noise_parameter, sensitivity=event.sensitivity,
            value_discretization_interval=d).self_compose(count)
    if isinstance(event, dp_event.MixtureOfGaussiansDpEvent):
        if len(event.sensitivities) == 1 and event.sensitivities[0] == 0.0:
            return Outcome.NO_OP
        if event.standard_deviation == 0:
            return Outcome.NON_PRIVATE
        return pld_lib.from_mixture_gaussian_mechanism(
            standard_deviation=event.standard_deviation, sensitivities=event.sensitivities,
            sampling_probs=event.sampling_probs,
            value_discretization_interval=d).self_compose(count)
    if isinstance(event, dp_event.PoissonSampledDpEvent):
        inner = event.event
        if event.sampling_probability == 0:
            return Outcome.NO_OP
        if inner.noise_multiplier == 0:
            return Outcome.NON_PRIVATE
        if isinstance(inner, dp_event.GaussianDpEvent):
            return pld_lib.from_gaussian_mechanism(
                standard_deviation=inner.noise_multiplier, value_discretization_interval=d,
                sampling_prob=event.sampling_probability,
                neighboring_relation=relation).self_compose(count)
        return pld_lib.from_laplace_mechanism(
            parameter=inner.noise_multiplier, value_discretization_interval=d,
            sampling_prob=event.sampling_probability).self_compose(count)
    assert isinstance(event, dp_event.TruncatedSubsampledGaussianDpEvent)
    if (event.sampling_probability == 0 or event.truncated_batch_size == 0
            or event.dataset_size == 0):
        return Outcome.NO_OP
    if event.noise_multiplier == 0:
        return Outcome.NON_PRIVATE
    return pld_lib.from_truncated_subsampled_gaussian_mechanism(
        dataset_size=event.dataset_size, sampling_probability=event.sampling_probability,
        truncated_batch_size=event.truncated_batch_size,
        noise_multiplier=event.noise_multiplier, value_discretization_interval=d,
        neighboring_relation=relation).self_compose(count)


__all__ = ["MAX_LEAF_GRID_POINTS", "LeafPLD", "Outcome", "check_leaf_grid",
           "check_leaf_parameters", "leaf_error", "leaf_pld"]
