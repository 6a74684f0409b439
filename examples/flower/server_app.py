"""ServerApp of the example: DP-FedAvg with Flower's server-side fixed-clipping wrapper accounted
by ``ShufflePrivacyAccountant``, then shuffled frequency-estimation rounds.

Flower's DP wrappers require ``PrivacyConfig(sampling_method='no-amplification',
neighboring_relation='add-or-remove-one')``. Under add/remove-one, shuffle rounds have a proven
bound when Poisson-sampled, so the analytics rounds (each client's own participation coin) are
charged to the training budget; an accountant refusing them would send them to a replace-one
budget of their own.

Each analytics round has about 10 reports (20 clients, each reporting with probability 0.5), and
each report is randomized on its client, so the estimates are noisy: they are logged with their
standard errors (``AnalyticsRound.standard_errors``), which fall as 1/sqrt(reports).
"""

from __future__ import annotations

import time

import numpy as np
from flwr.app import ArrayRecord, Context
from flwr.common.logger import log
from flwr.serverapp import Grid, NeighboringRelation, PrivacyConfig, SamplingMethod, ServerApp
from flwr.serverapp.exception import PrivacyBudgetExhausted
from flwr.serverapp.strategy import DifferentialPrivacyServerSideFixedClipping, FedAvg

from dpacct_shuffle.flower import ShufflePrivacyAccountant
from dpacct_shuffle.flower.analytics import (ShuffledFrequencyEstimation,
                                             frequency_standard_errors)

from client_app import DOMAIN_SIZE, FEATURES, RANDOMIZER

DELTA = 1e-5
SAMPLED_CLIENTS = 10
NUM_CLIENTS = 20  # the population: every connected client (set by run_simulation.py)

app = ServerApp()


@app.main()
def main(grid: Grid, context: Context) -> None:
    population = NUM_CLIENTS
    while len(list(grid.get_node_ids())) < population:  # FedAvg sizes its sample on connected nodes
        time.sleep(0.2)
    training_budget = ShufflePrivacyAccountant(PrivacyConfig(
        target_delta=DELTA, population_size=population,
        neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE,
        sampling_method=SamplingMethod.NO_AMPLIFICATION, max_epsilon=8.0))
    strategy = DifferentialPrivacyServerSideFixedClipping(
        FedAvg(fraction_train=SAMPLED_CLIENTS / population, fraction_evaluate=0.0,
               min_available_nodes=population),
        noise_multiplier=1.5, clipping_norm=1.0, num_sampled_clients=SAMPLED_CLIENTS,
        accountant=training_budget)  # the one line that switches Flower's accountant
    try:
        strategy.start(grid, ArrayRecord([np.zeros(FEATURES)]), num_rounds=3)
    except PrivacyBudgetExhausted as stop:
        log(20, "training stopped: %s", stop)
    spent = training_budget.get_privacy_spent()
    log(20, "training: epsilon=%.4f at delta=%g after %d releases", spent.epsilon, spent.delta,
        spent.num_releases)

    try:
        analytics = ShuffledFrequencyEstimation(RANDOMIZER, training_budget, sampling="poisson",
                                                sampling_probability=0.5, seed=0)
    except ValueError as refusal:
        log(20, "analytics on a replace-one budget of their own: %s", refusal)
        analytics_budget = ShufflePrivacyAccountant(PrivacyConfig(
            target_delta=DELTA, population_size=population,
            neighboring_relation=NeighboringRelation.REPLACE_ONE,
            sampling_method=SamplingMethod.WITHOUT_REPLACEMENT, max_epsilon=6.0))
        analytics = ShuffledFrequencyEstimation(RANDOMIZER, analytics_budget,
                                                sample_size=population - 2, seed=0)
    expected_reports = population // 2
    uniform = np.full(DOMAIN_SIZE, 1.0 / DOMAIN_SIZE)
    log(20, "analytics: each estimate is printed as value +- standard error. A round has about "
        "%d reports (each of %d clients reports with probability 0.5) and every report is "
        "randomized on its client (%s), so the estimates are noisy: the standard error is "
        "%.3f per value at %d reports and falls as 1/sqrt(reports) (%.3f at 100 times as many).",
        expected_reports, population, RANDOMIZER,
        frequency_standard_errors(RANDOMIZER, uniform, expected_reports)[0], expected_reports,
        frequency_standard_errors(RANDOMIZER, uniform, 100 * expected_reports)[0])
    for result in analytics.start(grid, num_rounds=4, first_round=4):
        if result.frequencies is None or result.standard_errors is None:
            log(20, "round %d: nothing released", result.server_round)
            continue
        estimates = ", ".join(f"{value:.3f} +- {error:.3f}" for value, error in
                              zip(result.frequencies, result.standard_errors))
        log(20, "round %d: %d reports, estimated frequencies [%s]", result.server_round,
            result.num_reports, estimates)
