"""One round, one number: every entry point for ε(δ) or δ(ε) of one shuffle round returns exactly
the canonical :func:`~dpacct_shuffle.shuffle_round.round_epsilon` /
:func:`~dpacct_shuffle.shuffle_round.round_delta` — for a round in which every user reports, a
Poisson-sampled round and a fixed-size cohort."""

from __future__ import annotations

import io
import json

import pytest
from dp_accounting import dp_event

from dpacct_shuffle import VariationRatio, randomizers
from dpacct_shuffle.calibration import calibrate_epsilon0, shuffled_delta
from dpacct_shuffle.cli import main
from dpacct_shuffle.event_profiles import event_profile
from dpacct_shuffle.events import ShuffleEvent
from dpacct_shuffle.randomizers.binary_rr_sampled import SampledBinaryRRProfile
from dpacct_shuffle.sampling import NeighborRel
from dpacct_shuffle.shuffle_round import delta_bounds, epsilon_bounds, round_delta, round_epsilon

USERS, DELTA, EPSILON = 500, 1e-6, 0.4
KRR = randomizers.krr(2.0, 10)
CLI_KRR = ("--randomizer", "krr", "--epsilon0", "2", "--domain", "10", "--users", str(USERS))
# (round options of the Python API, the same options on the command line)
ROUNDS = [
    ({}, ()),
    ({"sampling_probability": 0.2}, ("--sampling-probability", "0.2")),
    ({"sample_size": 50}, ("--sample-size", "50")),
]
IDS = ["every-user", "poisson", "cohort"]


def _cli(*argv: str) -> dict[str, object]:
    out, err = io.StringIO(), io.StringIO()
    assert main([*argv, "--no-lower", "--json"], stdout=out, stderr=err) == 0, err.getvalue()
    payload = json.loads(out.getvalue())
    assert isinstance(payload, dict)
    return payload


@pytest.mark.parametrize("options, flags", ROUNDS, ids=IDS)
def test_every_epsilon_entry_point_is_the_canonical_round_epsilon(
        options: dict[str, float], flags: tuple[str, ...]) -> None:
    canonical = round_epsilon(KRR, USERS, DELTA, **options)
    assert 0.0 < canonical < KRR.epsilon0
    assert epsilon_bounds(KRR, USERS, DELTA, lower=False, **options).upper == canonical
    assert _cli("epsilon", *CLI_KRR, "--delta", str(DELTA), *flags)["epsilon_upper"] == canonical
    if not options:
        assert KRR.shuffled(USERS).epsilon(DELTA) == canonical == KRR.epsilon(DELTA, USERS)
    # the ε returned is certified by the same δ(ε): its δ is at most the given δ
    assert round_delta(KRR, USERS, canonical, **options) <= DELTA


def _event(options: dict[str, float]) -> dp_event.DpEvent:
    if "sampling_probability" in options:
        return dp_event.PoissonSampledDpEvent(options["sampling_probability"],
                                              ShuffleEvent(KRR, USERS))
    size = int(options["sample_size"])
    return dp_event.SampledWithoutReplacementDpEvent(USERS, size, ShuffleEvent(KRR, size))


@pytest.mark.parametrize("options, flags", ROUNDS, ids=IDS)
def test_every_delta_entry_point_is_the_canonical_round_delta(
        options: dict[str, float], flags: tuple[str, ...]) -> None:
    canonical = round_delta(KRR, USERS, EPSILON, **options)
    assert 0.0 < canonical < 1.0
    assert delta_bounds(KRR, USERS, EPSILON, lower=False, **options).upper == canonical
    assert shuffled_delta(KRR, EPSILON, USERS, **options) == canonical  # type: ignore[arg-type]
    assert _cli("delta", *CLI_KRR, "--epsilon", str(EPSILON), *flags)["delta_upper"] == canonical
    if not options:
        assert KRR.shuffled(USERS).delta(EPSILON) == canonical == KRR.delta(EPSILON, USERS)
    else:  # the point-query profile of the round's event
        assert event_profile(_event(options)).delta(EPSILON) == canonical


@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
def test_a_sampled_binary_rr_round_is_within_the_exact_interval(relation: str) -> None:
    """Binary RR's sampled round is known exactly (a certified interval around the worst case
    over every configuration of the others): the canonical δ lies in it."""
    rr = randomizers.binary_rr(1.0)
    neighbours = (NeighborRel.REPLACE_ONE if relation == "replace_one"
                  else NeighborRel.ADD_OR_REMOVE_ONE)
    exact = SampledBinaryRRProfile(1.0, 200, 0.1, relation)
    for eps in (0.01, 0.05):
        lower, upper = exact.delta_interval(eps)
        value = round_delta(rr, 200, eps, sampling_probability=0.1, neighboring_relation=neighbours)
        assert lower <= value <= upper


def test_a_cohort_of_everyone_and_sampling_everyone_are_the_every_user_round() -> None:
    every = round_epsilon(KRR, USERS, DELTA)
    assert round_epsilon(KRR, USERS, DELTA, sample_size=USERS) == every
    assert round_epsilon(KRR, USERS, DELTA, sampling_probability=1.0) == every
    assert round_delta(KRR, USERS, EPSILON, sampling_probability=1.0) == KRR.delta(EPSILON, USERS)


def test_sampling_amplifies() -> None:
    """A Poisson round with 50 expected reports and a cohort of 50 of the 500 users have a
    smaller ε than a round of 50 users who all report."""
    fifty = round_epsilon(KRR, 50, DELTA)
    assert round_epsilon(KRR, USERS, DELTA, sampling_probability=0.1) < fifty
    assert round_epsilon(KRR, USERS, DELTA, sample_size=50) < fifty


def test_calibration_reports_the_canonical_epsilon() -> None:
    result = calibrate_epsilon0(lambda eps0: randomizers.krr(eps0, 10), 0.5, DELTA, USERS,
                                rtol=1e-2)
    assert result.epsilon_upper == round_epsilon(randomizers.krr(result.epsilon0, 10), USERS, DELTA)
    # δ(0.5) ≤ δ was tested; the every-user round's ε is the core's search, to its rtol 1e-4
    assert result.epsilon_upper <= 0.5 * (1.0 + 1e-4)


def test_a_variation_ratio_round_and_the_relations() -> None:
    vr = VariationRatio.worst_case(1.0)
    assert round_epsilon(vr, USERS, DELTA) == vr.epsilon(DELTA, USERS)
    add_remove = round_delta(vr, USERS, EPSILON, sampling_probability=0.2,
                             neighboring_relation=NeighborRel.ADD_OR_REMOVE_ONE)
    assert 0.0 < add_remove == shuffled_delta(vr, EPSILON, USERS, 0.2,
                                              NeighborRel.ADD_OR_REMOVE_ONE)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"neighboring_relation": NeighborRel.ADD_OR_REMOVE_ONE}, ValueError, "REPLACE_ONE only"),
    ({"sample_size": 10, "sampling_probability": 0.1}, ValueError, "not both"),
    ({"sample_size": 10, "neighboring_relation": NeighborRel.ADD_OR_REMOVE_ONE}, ValueError,
     "REPLACE_ONE only"),
    ({"sample_size": USERS + 1}, ValueError, "sample_size must be <= population_size"),
    ({"sampling_probability": 1.5}, ValueError, "sampling_probability"),
])
def test_bad_rounds_are_refused_alike(kwargs: dict[str, object], error: type[Exception],
                                      message: str) -> None:
    for query in (round_epsilon, round_delta):
        with pytest.raises(error, match=message):
            query(KRR, USERS, 0.1, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="randomizer must be"):
        round_epsilon("krr", USERS, DELTA)  # type: ignore[arg-type]
