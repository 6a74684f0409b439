"""Tests for dpacct_shuffle.events: validation, hashing, named-tuple round trips, profiles."""

from __future__ import annotations

import math

import dp_accounting
import pytest

from dpacct_shuffle import VariationRatio, randomizers
from dpacct_shuffle import profiles
from dpacct_shuffle.event_plds import PLD_PRECISION
from dpacct_shuffle.event_profiles import (
    Precision,
    event_profile,
    parallel_composite_randomizer,
    parallel_round_bound,
)
from dpacct_shuffle.events import (
    LDPCompositionEvent,
    LDPCompositionMode,
    ParallelCompositionEvent,
    ParallelMode,
    ShuffleEvent,
)
from dpacct_shuffle.lemmas import chained_ldp

VR1 = VariationRatio.worst_case(1.0)
VR2 = VariationRatio.worst_case(2.0)

EVENTS = [
    ShuffleEvent(VR1, 1000),
    ShuffleEvent(VR2, 500, honest_fraction=0.5),
    ParallelCompositionEvent([VR1, VR2], 100),
    ParallelCompositionEvent((VR1, VR2), 100, probabilities=[0.25, 0.75]),
    ParallelCompositionEvent([VR1, VR2], [30, 70], mode="disjoint"),
    LDPCompositionEvent([1.0, 0.5]),
    LDPCompositionEvent([1.0, 2.0], mode="chained"),
    LDPCompositionEvent([1.0, 2.0], mode=LDPCompositionMode.SEQUENTIAL, deltas=[1e-6, 0.0]),
]


@pytest.mark.parametrize("event", EVENTS, ids=repr)
def test_named_tuple_round_trip(event: dp_accounting.DpEvent) -> None:
    named = event.to_named_tuple()
    assert named.module_name == "dpacct_shuffle.events"
    back = dp_accounting.DpEvent.from_named_tuple(named)
    assert back == event and hash(back) == hash(event) and type(back) is type(event)


def test_nested_round_trip_inside_dp_accounting_events() -> None:
    nested = dp_accounting.ComposedDpEvent([
        dp_accounting.SelfComposedDpEvent(ShuffleEvent(VR1, 100), 10),
        dp_accounting.PoissonSampledDpEvent(0.1, ShuffleEvent(VR2, 1000)),
        LDPCompositionEvent([1.0], mode="chained"),
    ])
    assert dp_accounting.DpEvent.from_named_tuple(nested.to_named_tuple()) == nested


def test_events_are_dp_events_frozen_and_use_tuples() -> None:
    event = ParallelCompositionEvent([VR1, VR2], 100, probabilities=[0.5, 0.5])
    assert isinstance(event, dp_accounting.DpEvent)
    assert isinstance(event.branches, tuple) and isinstance(event.probabilities, tuple)
    assert event.mode is ParallelMode.RANDOM
    with pytest.raises(AttributeError):
        event.num_users = 3  # type: ignore[misc]
    ldp = LDPCompositionEvent([1.0, 2.0], "chained", [0, 0])
    assert ldp.epsilons == (1.0, 2.0) and ldp.deltas == (0.0, 0.0)
    assert ldp.mode is LDPCompositionMode.CHAINED


@pytest.mark.parametrize("factory,match,error", [
    (lambda: ShuffleEvent(VR1, 0), "num_users", ValueError),
    (lambda: ShuffleEvent(VR1, 10.5), "num_users", TypeError),
    (lambda: ShuffleEvent(VR1, 10, honest_fraction=0.0), "honest_fraction", ValueError),
    (lambda: ShuffleEvent(VR1, 10, honest_fraction=1.5), "honest_fraction", ValueError),
    (lambda: ShuffleEvent("krr", 10), "randomizer", TypeError),
    (lambda: ParallelCompositionEvent([], 10), "branches", ValueError),
    (lambda: ParallelCompositionEvent([VR1, VR2], 10, probabilities=[0.5, 0.6]), "probabilities",
     ValueError),
    (lambda: ParallelCompositionEvent([VR1, VR2], 10, probabilities=[1.0]), "probabilities",
     ValueError),
    (lambda: ParallelCompositionEvent([VR1, VR2], [10], mode="disjoint"), "num_users", ValueError),
    (lambda: ParallelCompositionEvent([VR1, VR2], [10, 20]), "num_users", TypeError),
    (lambda: ParallelCompositionEvent([VR1], 10, mode="sideways"), "mode", ValueError),
    (lambda: LDPCompositionEvent([]), "epsilons", TypeError),
    (lambda: LDPCompositionEvent([-1.0]), "epsilons", ValueError),
    (lambda: LDPCompositionEvent([math.inf]), "epsilons", ValueError),
    (lambda: LDPCompositionEvent([1.0], deltas=[1e-6, 0.0]), "deltas", ValueError),
    (lambda: LDPCompositionEvent([1.0], deltas=[2.0]), "deltas", ValueError),
    (lambda: LDPCompositionEvent([1.0], mode="parallel"), "mode", ValueError),
])
def test_bad_input_raises_naming_the_parameter(factory, match, error) -> None:
    with pytest.raises(error, match=match):
        factory()


def test_catalog_randomizers_are_accepted() -> None:
    krr = randomizers.krr(epsilon0=2.0, domain_size=10)
    event = ShuffleEvent(krr, 500)
    assert dp_accounting.DpEvent.from_named_tuple(event.to_named_tuple()) == event
    assert event_profile(event).epsilon_cap == pytest.approx(2.0)
    assert event_profile(event).delta(0.3) == pytest.approx(krr.shuffled(500).delta(0.3), rel=1e-2)
    parallel = ParallelCompositionEvent([krr, randomizers.binary_rr(epsilon0=1.0)], 500)
    assert parallel_composite_randomizer(parallel).beta == pytest.approx(
        0.5 * krr.variation_ratio.beta + 0.5 * randomizers.binary_rr(epsilon0=1.0).variation_ratio.beta)


def test_parallel_branch_without_variation_ratio_is_rejected_early() -> None:
    class DeltaOnly:
        epsilon0 = 1.0

        def delta(self, epsilon: float, n: int) -> float:
            return VR1.delta(epsilon, n)

    ShuffleEvent(DeltaOnly(), 10)  # fine for a single round
    with pytest.raises(TypeError, match=r"branches\[1\]"):
        ParallelCompositionEvent([VR1, DeltaOnly()], 10)
    ParallelCompositionEvent([VR1, DeltaOnly()], [10, 10], mode="disjoint")  # max of profiles


def test_shuffle_event_profile_uses_floor_of_honest_users() -> None:
    robust = event_profile(ShuffleEvent(VR1, 1001, honest_fraction=0.5))
    assert robust.delta(0.2) == event_profile(ShuffleEvent(VR1, 500)).delta(0.2)
    assert robust.delta(0.2) <= profiles.shuffle_profile(VR1, 500).delta(0.2)
    assert robust.epsilon_cap == pytest.approx(1.0)


def test_parallel_random_profile_is_the_composite_round() -> None:
    event = ParallelCompositionEvent([VR1, VR2], 200, probabilities=[0.25, 0.75])
    composite = parallel_composite_randomizer(event)
    assert composite.beta == pytest.approx(0.25 * VR1.beta + 0.75 * VR2.beta)
    assert composite.p == pytest.approx(VR2.p)
    # the round's bound is the minimum of the composite VariationRatio and the bounds that keep
    # each branch's own levels (tests/test_parallel_composite_bound.py)
    # (up to PARALLEL_STRUCTURE_MAX_USERS users at the default precision)
    structured = profiles.shuffle_profile(parallel_round_bound(
        event, structure_max_users=profiles.PARALLEL_STRUCTURE_MAX_USERS), 200).delta(0.5)
    assert event_profile(event).delta(0.5) <= structured
    assert event_profile(event).delta(0.5) <= profiles.shuffle_profile(composite, 200).delta(0.5)


def test_parallel_disjoint_profile_is_the_pointwise_max() -> None:
    event = ParallelCompositionEvent([VR1, VR2], [300, 50], mode="disjoint")
    for eps in (0.1, 0.5, 0.9, 1.5):
        expected = max(profiles.shuffle_profile(VR1, 300).delta(eps),
                       profiles.shuffle_profile(VR2, 50).delta(eps))
        assert event_profile(event).delta(eps) <= expected
        curves = max(event_profile(ShuffleEvent(VR1, 300), precision=PLD_PRECISION).delta(eps),
                     event_profile(ShuffleEvent(VR2, 50), precision=PLD_PRECISION).delta(eps))
        assert event_profile(event, precision=PLD_PRECISION).delta(eps) == curves
    with pytest.raises(ValueError, match="random"):
        parallel_composite_randomizer(event)


def test_ldp_chained_profile() -> None:
    event = LDPCompositionEvent([1.0, 2.0, 0.5], mode="chained")
    assert event_profile(event).epsilon_cap == chained_ldp(chained_ldp(1.0, 2.0), 0.5)
    with pytest.raises(ValueError, match="chained"):
        event_profile(LDPCompositionEvent([1.0]))


# -- events are data ------------------------------------------------------------------------------


def test_events_hold_data_only_and_old_methods_are_deprecated_delegations() -> None:
    """No computing method beyond the deprecated ones, each warning and returning exactly what
    the new function returns."""
    allowed = {"profile", "composite_bound", "composite_randomizer", "chained_profile",
               "delta_values"}
    for cls in (ShuffleEvent, ParallelCompositionEvent, LDPCompositionEvent):
        own = {name for name, value in vars(cls).items() if not name.startswith("_")
               and (callable(value) or isinstance(value, property))}
        fields = {field.name for field in cls.__attrs_attrs__}
        assert own - fields - {"to_named_tuple", "from_named_tuple"} <= allowed, cls
    event = ShuffleEvent(randomizers.krr(2.0, 10), 2000)
    with pytest.warns(DeprecationWarning, match="event_profile"):
        assert event.profile().delta(0.6) == event_profile(event).delta(0.6)
    parallel = ParallelCompositionEvent([VR1, VR2], 40)
    with pytest.warns(DeprecationWarning, match="parallel_round_bound"):
        bound = parallel.composite_bound()
    assert bound.delta_upper(0.5, 40) == parallel_round_bound(parallel).delta_upper(0.5, 40)
    with pytest.warns(DeprecationWarning, match="parallel_composite_randomizer"):
        assert parallel.composite_randomizer() == parallel_composite_randomizer(parallel)
    chained = LDPCompositionEvent([1.0, 2.0], mode="chained", deltas=[0.0, 1e-3])
    with pytest.warns(DeprecationWarning, match="ldp_deltas"):
        assert chained.delta_values == (0.0, 1e-3)
    with pytest.warns(DeprecationWarning, match="event_profile"):
        assert chained.chained_profile().delta(0.5) == event_profile(chained).delta(0.5)


def test_round_profile_is_the_tighter_of_curve_and_core_and_above_exact() -> None:
    """The one profile of a round: ≤ the batched curve and ≤ the core's point bound at every ε,
    ≥ the exact shuffled δ (binary RR, exact sums)."""
    from dpacct_shuffle.randomizers.binary_rr_exact import binary_rr_exact_delta

    event = ShuffleEvent(randomizers.binary_rr(1.0), 60)
    for eps in (0.1, 0.3, 0.5, 0.7, 0.9):
        value = event_profile(event).delta(eps)
        curve = event_profile(event, precision=PLD_PRECISION).delta(eps)
        point = profiles.shuffle_profile(event.randomizer, 60).delta(eps)
        exact = binary_rr_exact_delta(1.0, 60, eps)
        assert exact <= value <= min(curve, point)
        assert value <= exact * (1 + 1e-6)
    # the deep tail (issue example): the curve is flat at its truncated mass, the core is not
    krr = ShuffleEvent(randomizers.krr(2.0, 10), 2000)
    curve = event_profile(krr, precision=PLD_PRECISION).delta(0.6)
    value = event_profile(krr).delta(0.6)
    # (the pair curve's window tail is core.batched.PAIR_CURVE_TAIL = 1e-22: a floor near 8e-22)
    assert curve > 1e-23 and value < 1e-35
    assert value == profiles.shuffle_profile(krr.randomizer, 2000).delta(0.6)
    # only below pointwise_below is the core consulted
    tail_only = event_profile(krr, precision=Precision(pointwise_below=1e-16))
    assert tail_only.delta(0.6) == value
    assert tail_only.delta(0.2) == curve_at(krr, 0.2)


def curve_at(event: ShuffleEvent, epsilon: float) -> float:
    return event_profile(event, precision=PLD_PRECISION).delta(epsilon)


def test_precision_is_validated() -> None:
    with pytest.raises(ValueError, match="pointwise_below"):
        Precision(pointwise_below=2.0)
    with pytest.raises(ValueError, match="structure_max_users"):
        Precision(structure_max_users=0)
    with pytest.raises(TypeError, match="precision"):
        event_profile(ShuffleEvent(VR1, 10), precision=0.5)  # type: ignore[arg-type]
