"""End-to-end runs on Flower's simulation runtime (``flwr.simulation.run_simulation``, Ray backend).

One simulation of 24 virtual clients (Ray starts once) plays every scenario in its ServerApp, and
the tests check what it recorded:

(a) federated analytics — shuffled k-RR rounds with fixed-size and Poisson client sampling, one
    accountant: estimates within 5 standard deviations of the truth, reported ε equal to
    ``ShufflePLDAccountant`` on the same events;
(b) DP-FedAvg with Flower's ``DifferentialPrivacyServerSideFixedClipping`` and
    ``ShufflePrivacyAccountant``, next to Flower's ``RdpAccountant`` on the same Gaussian rounds,
    then shuffled analytics rounds on the same (add/remove-one) budget;
(c) the budget stop: training and analytics runs end before the round that would exceed
    ``max_epsilon``.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

pytest.importorskip("flwr")
# one Ray runtime at a time: under pytest-xdist every Ray test runs on the same worker
pytestmark = pytest.mark.xdist_group("ray")
ray = pytest.importorskip("ray")

from dp_accounting import dp_event  # noqa: E402
from dp_accounting.pld import PLDAccountant  # noqa: E402
from dp_accounting.privacy_accountant import NeighboringRelation as DpRel  # noqa: E402
from flwr.app import (  # noqa: E402
    ArrayRecord,
    ConfigRecord,
    Context,
    Message,
    MetricRecord,
    RecordDict,
)
from flwr.clientapp import ClientApp  # noqa: E402
from flwr.serverapp import (  # noqa: E402
    GaussianPrivacyEvent,
    Grid,
    NeighboringRelation,
    PrivacyConfig,
    RdpAccountant,
    SamplingMethod,
    ServerApp,
)
from flwr.serverapp.exception import PrivacyBudgetExhausted  # noqa: E402
from flwr.serverapp.strategy import DifferentialPrivacyServerSideFixedClipping, FedAvg  # noqa: E402
from flwr.simulation import run_simulation  # noqa: E402

from dpacct_shuffle import randomizers  # noqa: E402
from dpacct_shuffle.accountants import ShufflePLDAccountant  # noqa: E402
from dpacct_shuffle.events import ShuffleEvent  # noqa: E402
from dpacct_shuffle.flower import ShufflePrivacyAccountant  # noqa: E402
from dpacct_shuffle.flower.analytics import (  # noqa: E402
    RECORD_KEY,
    LocalRandomizerMod,
    ShuffledFrequencyEstimation,
)

CLIENTS = 24
DELTA = 1e-5
KRR = randomizers.krr(3.0, 4)
TRUE_COUNTS = np.array([12, 6, 4, 2])  # partition ids 0-11 hold 0, 12-17 hold 1, ...
TRUTH = TRUE_COUNTS / CLIENTS
FIXED_SAMPLE, FIXED_ROUNDS = 20, 3
POISSON_RATE, POISSON_ROUNDS = 0.8, 2
SHARED_RATE = 0.5  # analytics on the add/remove-one training budget
SIGMA, CLIP, TRAIN_NODES, TRAIN_ROUNDS = 1.5, 1.0, 12, 3
BACKEND = {"init_args": {"num_cpus": 2}, "client_resources": {"num_cpus": 1}}

REPLACE_ONE = PrivacyConfig(DELTA, CLIENTS, NeighboringRelation.REPLACE_ONE,
                            SamplingMethod.WITHOUT_REPLACEMENT)
NO_AMPLIFICATION = PrivacyConfig(DELTA, CLIENTS, NeighboringRelation.ADD_OR_REMOVE_ONE,
                                 SamplingMethod.NO_AMPLIFICATION)


def _value(context: Context) -> int:
    partition = int(context.node_config["partition-id"])
    return int(np.searchsorted(np.cumsum(TRUE_COUNTS), partition, side="right"))


# -- the ClientApp: analytics queries (randomized by the mod) and training -------------------------

client_app = ClientApp(mods=[LocalRandomizerMod(KRR)])


@client_app.query()
def _query(msg: Message, context: Context) -> Message:
    return Message(RecordDict({RECORD_KEY: ConfigRecord({"value": _value(context)})}),
                   reply_to=msg)


@client_app.train()
def _train(msg: Message, context: Context) -> Message:
    arrays = msg.content["arrays"].to_numpy_ndarrays()
    step = np.full_like(arrays[0], 0.1 * (_value(context) + 1))
    return Message(RecordDict({"arrays": ArrayRecord([arrays[0] + step]),
                               "metrics": MetricRecord({"num-examples": 1})}), reply_to=msg)


# -- the ServerApp: every scenario in turn -------------------------------------------------------


def _epsilon_after(events: list[tuple[dp_event.DpEvent, int]],
                   relation: DpRel = DpRel.REPLACE_ONE) -> float:
    accountant = ShufflePLDAccountant(relation)
    for event, count in events:
        accountant.compose(event, count)
    return accountant.get_epsilon(DELTA)


def _fedavg(accountant: ShufflePrivacyAccountant) -> DifferentialPrivacyServerSideFixedClipping:
    return DifferentialPrivacyServerSideFixedClipping(
        FedAvg(fraction_train=TRAIN_NODES / CLIENTS, fraction_evaluate=0.0,
               min_available_nodes=CLIENTS),
        noise_multiplier=SIGMA, clipping_norm=CLIP, num_sampled_clients=TRAIN_NODES,
        accountant=accountant)


def _run_scenarios(grid: Grid, record: dict[str, object]) -> None:
    while len(list(grid.get_node_ids())) < CLIENTS:
        time.sleep(0.2)
    initial = ArrayRecord([np.zeros(3)])

    # (a) analytics rounds on one replace-one budget
    analytics = ShufflePrivacyAccountant(REPLACE_ONE)
    fixed = ShuffledFrequencyEstimation(KRR, analytics, sample_size=FIXED_SAMPLE, seed=1)
    poisson = ShuffledFrequencyEstimation(KRR, analytics, sampling="poisson",
                                          sampling_probability=POISSON_RATE, seed=2)
    record["fixed"] = fixed.start(grid, FIXED_ROUNDS)
    record["poisson"] = poisson.start(grid, POISSON_ROUNDS, first_round=FIXED_ROUNDS + 1)
    record["analytics_accountant"] = analytics

    # (b) DP-FedAvg with Flower's fixed-clipping wrapper, then analytics on the same budget
    training = ShufflePrivacyAccountant(NO_AMPLIFICATION)
    _fedavg(training).start(grid, initial, num_rounds=TRAIN_ROUNDS)
    record["training_epsilon"] = training.get_epsilon(DELTA)
    record["training_compositions"] = list(training.compositions)
    shared = ShuffledFrequencyEstimation(KRR, training, sampling="poisson",
                                         sampling_probability=SHARED_RATE, seed=3)
    record["shared"] = shared.start(grid, 2, first_round=TRAIN_ROUNDS + 1)
    try:  # a fixed-size round has no add/remove-one bound: refused
        ShuffledFrequencyEstimation(KRR, training, sample_size=FIXED_SAMPLE)
    except ValueError as error:
        record["fixed_refusal"] = str(error)
    record["training_accountant"] = training

    # (c) budget stops: the limit lies between the epsilon of 2 and of 3 releases
    gaussian = [(dp_event.GaussianDpEvent(SIGMA), 1)]
    limit = (_epsilon_after(gaussian * 2, DpRel.ADD_OR_REMOVE_ONE)
             + _epsilon_after(gaussian * 3, DpRel.ADD_OR_REMOVE_ONE)) / 2
    capped = ShufflePrivacyAccountant(PrivacyConfig(
        DELTA, CLIENTS, NeighboringRelation.ADD_OR_REMOVE_ONE, SamplingMethod.NO_AMPLIFICATION,
        max_epsilon=limit))
    try:
        _fedavg(capped).start(grid, initial, num_rounds=6)
    except PrivacyBudgetExhausted as error:
        record["training_stop"] = str(error)
    record["capped_training"] = (capped.num_releases, capped.get_epsilon(DELTA), limit)

    round_event = dp_event.SampledWithoutReplacementDpEvent(CLIENTS, FIXED_SAMPLE,
                                                            ShuffleEvent(KRR, FIXED_SAMPLE))
    analytics_limit = (_epsilon_after([(round_event, 2)]) + _epsilon_after([(round_event, 3)])) / 2
    capped_analytics = ShufflePrivacyAccountant(REPLACE_ONE)
    stopped = ShuffledFrequencyEstimation(KRR, capped_analytics, sample_size=FIXED_SAMPLE,
                                          max_epsilon=analytics_limit, seed=4)
    record["capped_analytics"] = (stopped.start(grid, 6), capped_analytics.get_epsilon(DELTA),
                                  analytics_limit)


@pytest.fixture(scope="module")
def simulation() -> dict[str, object]:
    record: dict[str, object] = {}
    server_app = ServerApp()

    @server_app.main()
    def _main(grid: Grid, context: Context) -> None:
        try:
            _run_scenarios(grid, record)
        except BaseException as error:  # surfaced by the tests, not swallowed by the runtime
            record["error"] = error
            raise

    try:
        run_simulation(server_app, client_app, num_supernodes=CLIENTS, backend_config=BACKEND)
    finally:
        if ray.is_initialized():
            ray.shutdown()
    if "error" in record:
        raise record["error"]
    return record


def _sampling_sd(size: int) -> np.ndarray:
    """Standard deviation of the sampled clients' frequencies (size of N, without replacement)."""
    return np.sqrt(TRUTH * (1 - TRUTH) / size * (CLIENTS - size) / (CLIENTS - 1))


# -- (a) ------------------------------------------------------------------------------------------


def test_analytics_estimates_are_close_to_the_truth(simulation):
    rounds = simulation["fixed"] + simulation["poisson"]
    assert len(rounds) == FIXED_ROUNDS + POISSON_ROUNDS
    oracle = KRR.frequency_oracle
    for result in rounds:
        assert result.num_answered == CLIENTS and 0 < result.num_reports <= CLIENTS
        sd = np.sqrt(oracle.standard_deviations(TRUTH, result.num_reports) ** 2
                     + _sampling_sd(result.num_reports) ** 2)
        assert np.all(np.abs(result.frequencies - TRUTH) <= 5 * sd), result
    assert all(result.num_reports == FIXED_SAMPLE for result in simulation["fixed"])


def test_analytics_epsilon_equals_the_shuffle_pld_accountant_on_the_same_events(simulation):
    rounds = simulation["fixed"] + simulation["poisson"]
    expected_events = (
        [dp_event.SampledWithoutReplacementDpEvent(CLIENTS, FIXED_SAMPLE,
                                                   ShuffleEvent(KRR, FIXED_SAMPLE))] * FIXED_ROUNDS
        + [dp_event.PoissonSampledDpEvent(POISSON_RATE, ShuffleEvent(KRR, CLIENTS))]
        * POISSON_ROUNDS)
    assert [result.event for result in rounds] == expected_events
    reference = ShufflePLDAccountant()
    for result in rounds:
        reference.compose(result.event)
        assert result.cumulative_epsilon == reference.get_epsilon(DELTA)
    assert simulation["analytics_accountant"].get_epsilon(DELTA) == reference.get_epsilon(DELTA)
    single = ShufflePLDAccountant().compose(expected_events[0]).get_epsilon(DELTA)
    assert simulation["fixed"][0].round_epsilon == single


# -- (b) ------------------------------------------------------------------------------------------


def test_dp_fedavg_epsilon_next_to_flowers_rdp_accountant(simulation):
    compositions = simulation["training_compositions"]
    assert compositions == [(GaussianPrivacyEvent(SIGMA, TRAIN_NODES, CLIENTS), 1)] * TRAIN_ROUNDS
    flower = RdpAccountant(NO_AMPLIFICATION)
    for event, count in compositions:
        flower.compose(event, count)
    ours = simulation["training_epsilon"]
    theirs = flower.get_epsilon(DELTA)
    pld_accountant = PLDAccountant(DpRel.ADD_OR_REMOVE_ONE)
    for _ in range(TRAIN_ROUNDS):  # one release per round, as the wrapper composes them
        pld_accountant.compose(dp_event.GaussianDpEvent(SIGMA))
    pld = pld_accountant.get_epsilon(DELTA)
    print(f"DP-FedAvg, {TRAIN_ROUNDS} rounds, sigma={SIGMA}: ShufflePrivacyAccountant "
          f"epsilon={ours:.6f}, Flower RdpAccountant epsilon={theirs:.6f} at delta={DELTA}")
    assert ours == pld  # dp-accounting's PLD of the same Gaussian releases
    assert ours <= theirs  # PLD is never looser than RDP's conversion here
    assert ours >= 0.7 * theirs  # and the PLD advantage for 3 Gaussian releases is moderate


def test_analytics_on_the_training_budget(simulation):
    training = simulation["training_accountant"]
    poisson_round = dp_event.PoissonSampledDpEvent(SHARED_RATE, ShuffleEvent(KRR, CLIENTS))
    shared = simulation["shared"]
    assert [result.event for result in shared] == [poisson_round, poisson_round]
    expected = _epsilon_after(
        [(dp_event.GaussianDpEvent(SIGMA), 1)] * TRAIN_ROUNDS + [(poisson_round, 1)] * 2,
        DpRel.ADD_OR_REMOVE_ONE)
    # the simulation queried ε between rounds, so its PLD was composed in another order than the
    # fresh accountant's: equal up to the float rounding of dp-accounting's FFT composition
    assert training.get_epsilon(DELTA) == pytest.approx(expected, rel=1e-10)
    assert shared[-1].cumulative_epsilon == training.get_epsilon(DELTA)
    assert simulation["training_epsilon"] < expected < math.inf
    print(f"DP-FedAvg + 2 Poisson-sampled shuffled k-RR rounds on one add/remove-one budget: "
          f"epsilon={expected:.6f} at delta={DELTA}")
    assert "add-or-remove-one" in simulation["fixed_refusal"]
    assert "replace-one" in simulation["fixed_refusal"]


# -- (c) ------------------------------------------------------------------------------------------


def test_training_stops_before_exceeding_max_epsilon(simulation):
    releases, epsilon, limit = simulation["capped_training"]
    assert "would exceed max_epsilon" in simulation["training_stop"]
    assert releases == 2
    assert epsilon <= limit
    three = _epsilon_after([(dp_event.GaussianDpEvent(SIGMA), 1)] * 3, DpRel.ADD_OR_REMOVE_ONE)
    assert three > limit


def test_analytics_stops_before_exceeding_max_epsilon(simulation):
    rounds, epsilon, limit = simulation["capped_analytics"]
    assert len(rounds) == 2
    assert epsilon <= limit
    assert math.isclose(epsilon, rounds[-1].cumulative_epsilon)
