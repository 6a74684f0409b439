"""One event, one number: the same event gives the identical ε through ShufflePLDAccountant, the
Opacus accountant, the Flower accountant and a pipeline file (replace-one, where every event here
has a guarantee), and the Poisson-sampled round the identical ε under add/remove-one too."""

from __future__ import annotations

import pytest
from dp_accounting import dp_event
from dp_accounting.privacy_accountant import NeighboringRelation

from dpacct_shuffle import randomizers
from dpacct_shuffle.accountants import ShufflePLDAccountant
from dpacct_shuffle.events import ParallelCompositionEvent, ShuffleEvent
from dpacct_shuffle.pipeline import account_pipeline

pytest.importorskip("opacus")
pytest.importorskip("flwr")

from flwr.serverapp import NeighboringRelation as FlowerRelation  # noqa: E402
from flwr.serverapp import PrivacyConfig, SamplingMethod  # noqa: E402

from dpacct_shuffle.flower import ShufflePrivacyAccountant  # noqa: E402
from dpacct_shuffle.opacus import ShuffleAccountant  # noqa: E402

DELTA = 1e-6
KRR = {"name": "krr", "epsilon0": 2.0, "domain_size": 10}
BINARY = {"name": "binary_rr", "epsilon0": 1.0}
USERS = 2000
# (event, the same event as a pipeline step)
CASES = [
    (ShuffleEvent(randomizers.krr(2.0, 10), USERS),
     {"type": "shuffle", "randomizer": KRR, "users": USERS}),
    (dp_event.PoissonSampledDpEvent(0.1, ShuffleEvent(randomizers.krr(2.0, 10), USERS)),
     {"type": "shuffle", "randomizer": KRR, "users": USERS, "sampling_probability": 0.1}),
    (ParallelCompositionEvent([randomizers.krr(2.0, 10), randomizers.binary_rr(1.0)], 200),
     {"type": "parallel", "branches": [KRR, BINARY], "users": 200}),
]


def _flower(relation: NeighboringRelation) -> ShufflePrivacyAccountant:
    if relation is NeighboringRelation.REPLACE_ONE:
        config = PrivacyConfig(DELTA, USERS, FlowerRelation.REPLACE_ONE,
                               SamplingMethod.WITHOUT_REPLACEMENT)
    else:
        config = PrivacyConfig(DELTA, USERS, FlowerRelation.ADD_OR_REMOVE_ONE,
                               SamplingMethod.POISSON)
    return ShufflePrivacyAccountant(config)


@pytest.mark.parametrize("event, step", CASES, ids=["round", "sampled", "parallel"])
def test_same_event_same_epsilon_everywhere(event: dp_event.DpEvent, step: dict[str, object]) -> None:
    relation = NeighboringRelation.REPLACE_ONE
    reference = ShufflePLDAccountant(relation).compose(event, 2).get_epsilon(DELTA)
    assert 0.0 < reference < 10.0

    opacus = ShuffleAccountant("replace_one")
    opacus.compose(event, 2)
    flower = _flower(relation)
    flower.compose(event, 2)
    pipeline = account_pipeline({"delta": DELTA, "steps": [dict(step, count=2)]})
    assert opacus.get_epsilon(DELTA) == reference
    assert flower.get_epsilon(DELTA) == reference
    assert pipeline.epsilon == reference


def test_sampled_round_same_epsilon_under_add_remove() -> None:
    event = CASES[1][0]
    relation = NeighboringRelation.ADD_OR_REMOVE_ONE
    reference = ShufflePLDAccountant(relation).compose(event).get_epsilon(DELTA)
    opacus = ShuffleAccountant()  # add/remove-one: Opacus's relation
    opacus.compose(event)
    flower = _flower(relation)
    flower.compose(event)
    assert 0.0 < reference == opacus.get_epsilon(DELTA) == flower.get_epsilon(DELTA)
