"""JSON forms of randomizers and events, and plain-data Opacus checkpoints."""

from __future__ import annotations

import io
import json
import math
import subprocess
import sys

import pytest
from dp_accounting import dp_event
from hypothesis import given
from hypothesis import strategies as st

from dpacct_shuffle import VariationRatio, randomizers
from dpacct_shuffle.accountants import ShufflePLDAccountant
from dpacct_shuffle.event_serialization import (event_from_dict, event_from_json, event_to_dict,
                                                event_to_json)
from dpacct_shuffle.events import LDPCompositionEvent, ParallelCompositionEvent, ShuffleEvent
from dpacct_shuffle.randomizers.base import Randomizer, VariationRatioBound
from dpacct_shuffle.randomizers.serialization import (randomizer_from_dict, randomizer_from_json,
                                                      randomizer_to_dict, randomizer_to_json)

RANDOMIZERS = [
    randomizers.krr(2.0, 100),
    randomizers.oue(1.0, 5),
    randomizers.hadamard_response(1.0, 8, blocks=2),
    randomizers.local_hashing(1.0, 4, collision_probability=0.3),
    randomizers.sampling_rappor(2.0, 6, 2, sampled_bits=True),
    randomizers.metric_ldp(0.5, 2.0, 3.0),
    randomizers.mix_dump(0.1, 3),
    randomizers.from_matrix([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3]], name="three"),
    randomizers.rappor(1.0, 4).variation_ratios[-1],  # neutral weight below w (two neutral types)
    VariationRatio(math.inf, 0.5, 2.0),
]


@pytest.mark.parametrize("randomizer", RANDOMIZERS, ids=repr)
def test_randomizer_json_round_trip_is_equal_and_gives_the_same_bounds(randomizer) -> None:
    text = randomizer_to_json(randomizer)
    json.loads(text, parse_constant=lambda name: pytest.fail(f"non-strict JSON constant {name}"))
    restored = randomizer_from_json(text)
    assert restored == randomizer and restored is not randomizer
    if isinstance(randomizer, VariationRatio):
        assert restored.delta(0.1, 500) == randomizer.delta(0.1, 500)
    else:
        assert restored.shuffled(500).epsilon(1e-6) == randomizer.shuffled(500).epsilon(1e-6)


def test_randomizer_json_forms_are_documented_shapes() -> None:
    assert randomizer_to_dict(randomizers.krr(2.0, 100)) == {
        "kind": "catalog", "name": "krr", "arguments": {"epsilon0": 2.0, "domain_size": 100}}
    assert randomizer_to_dict(randomizers.oue(1.0, 5))["name"] == "optimized_unary_encoding"
    assert randomizer_to_dict(randomizers.from_matrix([[0.5, 0.5], [0.25, 0.75]])) == {
        "kind": "matrix", "name": "matrix", "matrix": [[0.5, 0.5], [0.25, 0.75]]}
    vr = VariationRatio(math.inf, 0.5, 2.0)
    assert randomizer_to_dict(vr) == {"kind": "variation_ratio", "p": "inf", "beta": 0.5, "q": 2.0,
                                      "q1": 2.0, "neutral_share": vr.neutral_share,
                                      "neutral_weight": vr.neutral_weight}


@given(st.floats(1.0, 1e6), st.floats(0.0, 1.0), st.floats(1.0, 1e6), st.floats(1.0, 1e6),
       st.floats(0.0, 1.0))
def test_variation_ratio_json_round_trip_is_exact(p, beta_fraction, q, q1, share_fraction) -> None:
    beta = beta_fraction * (p - 1.0) / (p + 1.0)
    try:
        vr = VariationRatio(p, beta, q, q1=q1)
        vr = VariationRatio(p, beta, q, q1=q1, neutral_share=share_fraction * vr.neutral_share)
    except ValueError:
        return
    restored = randomizer_from_json(randomizer_to_json(vr))
    assert restored == vr and restored._key() == vr._key()


@pytest.mark.parametrize("data, error, match", [
    ({"kind": "catalog", "name": "krr", "arguments": {"epsilon0": 2.0, "domian_size": 4}},
     ValueError, "domian_size"),
    ({"kind": "catalog", "name": "krr", "arguments": {"epsilon0": 2.0}}, ValueError,
     "needs parameter\\(s\\) domain_size"),
    ({"kind": "catalog", "name": "kRR", "arguments": {}}, ValueError, "unknown randomizer 'kRR'"),
    ({"kind": "catalog", "name": "krr", "arguments": {"epsilon0": 900.0, "domain_size": 4}},
     ValueError, "epsilon0"),
    ({"kind": "matrix", "name": "m", "matrix": [[0.5, 0.6], [0.5, 0.5]]}, ValueError, "sum to 1"),
    ({"kind": "matrix", "name": "m"}, ValueError, "missing"),
    ({"kind": "variation_ratio", "p": 2.0, "beta": 0.1, "q": 2.0, "q1": 2.0, "neutral_share": 0.1,
      "neutral_weight": 2.0}, ValueError, "neutral_weight"),
    ({"kind": "variation_ratio", "p": "two"}, ValueError, "missing"),
    ({"kind": "pickle"}, ValueError, "kind"),
    ([1, 2], TypeError, "object"),
])
def test_randomizer_json_errors_name_the_problem(data, error, match) -> None:
    with pytest.raises(error, match=match):
        randomizer_from_dict(data)


def test_personalized_round_json_round_trip_is_equal_and_gives_the_same_bounds() -> None:
    round_ = randomizers.PersonalizedShuffle([
        (randomizers.krr(1.0, 3), 4), (randomizers.krr(2.0, 3), 3),
        (randomizers.from_matrix([[0.5, 0.3, 0.2], [0.3, 0.4, 0.3]], name="m"), 2)])
    text = randomizer_to_json(round_)
    assert json.loads(text) == {"kind": "personalized", "groups": [
        {"randomizer": randomizer_to_dict(member), "users": count} for member, count in round_.groups]}
    restored = randomizer_from_json(text)
    assert restored == round_ and restored is not round_
    assert restored.delta(0.3) == round_.delta(0.3)
    assert restored.shuffled().delta_lower(0.3) == round_.shuffled().delta_lower(0.3)


@pytest.mark.parametrize("groups, error, match", [
    ({"randomizer": "krr"}, TypeError, "must be a list"),
    ([], TypeError, "non-empty sequence"),
    ([{"randomizer": {"kind": "catalog", "name": "krr",
                      "arguments": {"epsilon0": 1.0, "domain_size": 3}}, "count": 2}],
     ValueError, r"groups\[0\]: the keys are randomizer and users"),
    ([{"randomizer": randomizer_to_dict(VariationRatio(2.0, 0.1, 2.0)), "users": 2}],
     TypeError, r"groups\[0\]\.randomizer must be a Randomizer"),
    ([{"randomizer": {"kind": "catalog", "name": "krr",
                      "arguments": {"epsilon0": 1.0, "domain_size": 3}}, "users": 0}],
     ValueError, r"groups\[0\]\[1\] must be a positive integer"),
    (["krr"], TypeError, r"groups\[0\] must be an object"),
])
def test_personalized_json_errors_name_the_problem(groups, error, match) -> None:
    with pytest.raises(error, match=match):
        randomizer_from_dict({"kind": "personalized", "groups": groups})


def test_randomizers_without_an_origin_have_no_json_form() -> None:
    vr = VariationRatio(2.0, 0.2, 2.0)
    custom = Randomizer("custom", {}, [VariationRatioBound([vr])], variation_ratio=vr)
    with pytest.raises(TypeError, match="no JSON form"):
        randomizer_to_dict(custom)
    with pytest.raises(TypeError, match="JSON form"):
        randomizer_to_dict("krr")


EVENTS = [
    dp_event.GaussianDpEvent(1.0),
    dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.1)),
    dp_event.SelfComposedDpEvent(ShuffleEvent(randomizers.krr(2.0, 100), 10_000), 5),
    dp_event.ComposedDpEvent([
        dp_event.LaplaceDpEvent(1.0), dp_event.NoOpDpEvent(), dp_event.NonPrivateDpEvent(),
        dp_event.RandomizedResponseDpEvent(0.5, 4),
        LDPCompositionEvent([1.0, 0.5], mode="chained", deltas=[0.0, 1e-6])]),
    ParallelCompositionEvent([randomizers.krr(1.0, 10), VariationRatio(math.inf, 0.5, 2.0)], 1000,
                             probabilities=[0.3, 0.7]),
    ParallelCompositionEvent([randomizers.krr(1.0, 10),
                              randomizers.from_matrix([[0.6, 0.4], [0.4, 0.6]])],
                             [100, 200], mode="disjoint"),
    dp_event.SampledWithoutReplacementDpEvent(1000, 10, dp_event.GaussianDpEvent(2.0)),
    dp_event.ZCDpEvent(0.5, 0.1),
    ShuffleEvent(randomizers.rappor(1.0, 4), 100, honest_fraction=0.5),
    ShuffleEvent(randomizers.personalized_krr(4, [(1.0, 50), (2.0, 50)]), 100),
]


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: type(e).__name__)
def test_event_json_round_trip_is_equal(event) -> None:
    restored = event_from_json(event_to_json(event))
    assert restored == event


def test_event_json_form_is_named_tuple_data() -> None:
    event = dp_event.SelfComposedDpEvent(ShuffleEvent(randomizers.krr(2.0, 100), 10_000), 5)
    assert event_to_dict(event) == {
        "module_name": "dp_accounting.dp_event", "class_name": "SelfComposedDpEvent",
        "event": {"module_name": "dpacct_shuffle.events", "class_name": "ShuffleEvent",
                  "randomizer": {"kind": "catalog", "name": "krr",
                                 "arguments": {"epsilon0": 2.0, "domain_size": 100}},
                  "num_users": 10_000, "honest_fraction": 1.0},
        "count": 5}
    # accounting the restored event gives the same epsilon
    restored = event_from_dict(event_to_dict(event))
    assert (ShufflePLDAccountant().compose(restored).get_epsilon(1e-6)
            == ShufflePLDAccountant().compose(event).get_epsilon(1e-6))


@pytest.mark.parametrize("data, match", [
    ({"module_name": "os", "class_name": "system"}, "module_name"),
    ({"module_name": "dp_accounting.dp_event", "class_name": "DpEvent"}, "no DpEvent class"),
    ({"module_name": "dp_accounting.dp_event", "class_name": "GaussianDpEvent", "noise": 1.0},
     "unknown fields \\['noise'\\]"),
    ({"class_name": "GaussianDpEvent"}, "module_name"),
    ({"module_name": "dpacct_shuffle.events", "class_name": "ShuffleEvent",
      "randomizer": {"kind": "catalog", "name": "krr", "arguments": {"epsilon0": 1.0,
                                                                     "domain_size": 4}},
      "num_users": 0}, "num_users"),
])
def test_event_json_errors_name_the_problem(data, match) -> None:
    with pytest.raises(ValueError, match=match):
        event_from_dict(data)


# -- Opacus checkpoints ---------------------------------------------------------------------------
torch = pytest.importorskip("torch")
pytest.importorskip("opacus")


def test_opacus_checkpoint_loads_with_weights_only_and_without_the_package(tmp_path) -> None:
    from opacus import PrivacyEngine

    from dpacct_shuffle.opacus import ShuffleAccountant

    engine = PrivacyEngine(accountant="shuffle")
    accountant = engine.accountant
    accountant.neighboring_relation = "replace_one"  # unsampled shuffle rounds below
    for _ in range(3):
        accountant.step(noise_multiplier=1.1, sample_rate=0.01)
    accountant.step_shuffle(randomizers.krr(2.0, 100), 10_000, count=3)
    accountant.step_shuffle(randomizers.from_matrix([[0.6, 0.4], [0.3, 0.7]]), 20)
    accountant.compose(dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(5.0), 2))
    expected = accountant.get_epsilon(1e-6)
    path = tmp_path / "checkpoint.pt"
    torch.save({"accountant": accountant.state_dict()}, path)

    # a process in which dpacct_shuffle cannot be imported reads the checkpoint
    script = ("import sys; sys.modules['dpacct_shuffle'] = None; import torch; "
              "state = torch.load(sys.argv[1], weights_only=True)['accountant']; "
              "print(state['mechanism'], type(state['events'][0][0]).__name__, "
              "state['events'][0][0]['event']['randomizer']['name'] "
              "if 'event' in state['events'][0][0] else state['events'][0][0]['randomizer']['name'])")
    result = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True,
                            text=True, cwd=tmp_path, check=True)
    assert result.stdout.split() == ["shuffle", "dict", "krr"]

    restored = ShuffleAccountant()
    restored.load_state_dict(torch.load(path, weights_only=True)["accountant"])
    assert restored.events == accountant.events and restored.history == accountant.history
    assert restored.get_epsilon(1e-6) == expected

    buffer = io.BytesIO()  # a legacy state holding DpEvent objects still loads
    legacy = dict(accountant.state_dict(), events=list(accountant.events))
    torch.save(legacy, buffer)
    buffer.seek(0)
    again = ShuffleAccountant()
    again.load_state_dict(torch.load(buffer, weights_only=False))
    assert again.get_epsilon(1e-6) == expected
