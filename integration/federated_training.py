"""Federated learning with local DP-SGD (Opacus) plus shuffled k-RR label reports, one accountant.

Setup (all real: torch + Opacus on CPU, the accountant is dp-accounting's PLD underneath):

* ``--clients`` clients (default 40), each holding ``--records`` labelled records (synthetic
  Gaussian blobs, label skew per client). The server holds a test set.
* Each round the server Poisson-samples clients (each independently with rate ``--client-rate``),
  so the training cohort changes every round. Every sampled client trains the global model
  locally for ``--local-epochs`` epochs of DP-SGD with its own ``PrivacyEngine(accountant="shuffle")``
  (Poisson sampling of its records, clipping norm C, noise multiplier σ) and returns the weights
  (the server averages them, FedAvg).
* Label reports, an anonymous channel beside training: in every round each record independently
  sends one k-ary randomized-response report of its label (``randomizers.krr(ε0, classes)``,
  sampled from the randomizer's own matrix) with probability ``--report-rate`` γ, whether or not its
  client trains. The shuffler pools the reports and releases only their multiset, i.e. the label
  histogram; the number of reports changes every round. The server debiases the histogram into a
  label-distribution estimate.
* One :class:`~dpacct_shuffle.opacus.ShuffleAccountant` tracks both. A round's cost is charged
  before anything of it is released; if ε would then exceed the target (ε, δ) the charge is rolled
  back (``load_state_dict`` of the state saved before) and the loop stops.

Privacy unit and accounting (record-level, **replace-one**: one record's features and label
replaced; every ε printed is an upper bound for that relation):

* Which clients are sampled is independent of the data and visible to the server, so the accounting
  is conditional on the realised samples (valid for the joint output because the sample is
  data-independent) and takes no amplification from client sampling.
* A record lives in one client. Records of different clients are disjoint, so a round costs the
  record at most its own client's local steps (parallel composition). The server charges every
  round with a configuration dominating every sampled client: the largest number of local steps,
  the largest record sampling rate and the smallest σ (a Poisson-subsampled Gaussian with a smaller
  rate is a post-processing of one with a larger rate). Each step is
  ``PoissonSampledDpEvent(q, GaussianDpEvent(σ))`` at sensitivity 2 (replace-one).
* Label reports are accounted as ``PoissonSampledDpEvent(γ, ShuffleEvent(krr, N))`` with the
  population N = clients × records: every one of the N records takes part independently with
  probability γ and only the shuffled reports are released, which is the void-randomizer view of
  ``dpacct_shuffle.sampling`` (docs/sampling.md). This assumes what the channel provides: the
  server learns nothing about *who* reported beyond the shuffled multiset (in particular, the
  reporting records are drawn independently of the training cohort, which the server does see).
  Each record is sampled on its own: the void view needs every other user to report
  independently, which sampling whole clients (all their records at once) would not give.
  For comparison the table also prints the unsampled ε, ``ShuffleEvent(krr, N)`` every round (every
  record reports every round).
* Client sampling of the training cohort is not credited: the server sees which clients return
  weights, so their rounds are charged as if the record's client took part in every round.

Run ``python integration/federated_training.py [--rounds T] [--epsilon E] ...``; prints one table
row per round. ``main(argv)`` returns a :class:`FederatedResult` (used by the pytest wrapper).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TextIO

import numpy as np
import torch
from opacus import PrivacyEngine
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from dpacct_shuffle import randomizers
from dpacct_shuffle.core.validation import check_delta, check_num_users, check_range
from dpacct_shuffle.opacus import ShuffleAccountant
from dpacct_shuffle.randomizers import Randomizer

FEATURES = 8
HIDDEN = 16


@dataclass(frozen=True)
class Config:
    clients: int = 40
    records: int = 50
    classes: int = 4
    rounds: int = 12
    client_rate: float = 0.5
    local_epochs: int = 1
    batch_size: int = 10
    noise_multiplier: float = 2.0
    max_grad_norm: float = 1.0
    learning_rate: float = 0.5
    epsilon0: float = 2.0
    report_rate: float = 0.5
    target_epsilon: float = 6.0
    delta: float = 1e-5
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("clients", "records", "rounds", "local_epochs", "batch_size"):
            check_num_users(getattr(self, name), name)
        if check_num_users(self.classes, "classes") < 2:
            raise ValueError(f"classes must be >= 2, got {self.classes}")
        check_range("client_rate", self.client_rate, 0.0, 1.0, low_open=True)
        check_range("report_rate", self.report_rate, 0.0, 1.0, low_open=True)
        check_range("noise_multiplier", self.noise_multiplier, 0.0, math.inf, low_open=True)
        for name in ("max_grad_norm", "learning_rate", "epsilon0", "target_epsilon"):
            check_range(name, getattr(self, name), 0.0, math.inf, low_open=True, high_open=True)
        check_delta(self.delta)


@dataclass(frozen=True)
class RoundRow:
    round: int
    clients: int
    reports: int
    local_steps: int
    sample_rate: float
    epsilon_dp_sgd: float
    epsilon_reports: float
    epsilon_reports_unsampled: float
    epsilon: float
    accuracy: float
    histogram_l1: float


@dataclass
class FederatedResult:
    config: Config
    rows: list[RoundRow] = field(default_factory=list)
    stop_reason: str = ""
    next_round_epsilon: float = math.nan
    accountant: ShuffleAccountant = field(default_factory=ShuffleAccountant)
    randomizer: Randomizer | None = None
    seconds: float = 0.0



def make_model(classes: int) -> nn.Module:
    return nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, classes))


def synthetic_data(config: Config, rng: np.random.Generator
                   ) -> tuple[list[tuple[torch.Tensor, torch.Tensor]], torch.Tensor, torch.Tensor]:
    """Per-client (features, labels) with Dirichlet label skew, and a balanced test set."""
    centers = 2.0 * rng.standard_normal((config.classes, FEATURES))

    def sample(labels: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        features = centers[labels] + rng.standard_normal((labels.size, FEATURES))
        return torch.tensor(features, dtype=torch.float32), torch.tensor(labels, dtype=torch.long)

    clients = []
    for _ in range(config.clients):
        mix = rng.dirichlet(np.ones(config.classes))
        clients.append(sample(rng.choice(config.classes, size=config.records, p=mix)))
    test_features, test_labels = sample(rng.integers(0, config.classes, size=500))
    return clients, test_features, test_labels


class Client:
    """A client with its own Opacus engine (accountant "shuffle") training on its records."""

    def __init__(self, features: torch.Tensor, labels: torch.Tensor, config: Config,
                 seed: int) -> None:
        self.labels = labels.numpy()
        self.model = make_model(config.classes)
        self.engine = PrivacyEngine(accountant="shuffle")
        self.module, self.optimizer, self.loader = self.engine.make_private(
            module=self.model,
            optimizer=torch.optim.SGD(self.model.parameters(), lr=config.learning_rate),
            data_loader=DataLoader(TensorDataset(features, labels), batch_size=config.batch_size),
            noise_multiplier=config.noise_multiplier, max_grad_norm=config.max_grad_norm,
            noise_generator=torch.Generator().manual_seed(seed))
        self.local_epochs = config.local_epochs

    @property
    def sample_rate(self) -> float:
        """Opacus's record sampling rate: 1 / number of batches."""
        return 1.0 / len(self.loader)

    @property
    def steps_per_round(self) -> int:
        return self.local_epochs * len(self.loader)

    def train_round(self, global_state: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], int]:
        """Local DP-SGD from the global weights; returns (weights, optimizer steps taken)."""
        self.model.load_state_dict(global_state)
        before = self.steps_taken
        for _ in range(self.local_epochs):
            for features, labels in self.loader:
                self.optimizer.zero_grad()
                nn.functional.cross_entropy(self.module(features), labels).backward()
                self.optimizer.step()
        state = {key: value.detach().clone() for key, value in self.model.state_dict().items()}
        return state, self.steps_taken - before

    @property
    def steps_taken(self) -> int:
        """Optimizer steps so far (the counts of Opacus's history; ``len()`` counts its entries)."""
        return sum(int(steps) for _, _, steps in self.engine.accountant.history)


def randomized_reports(randomizer: Randomizer, labels: np.ndarray,
                       rng: np.random.Generator) -> np.ndarray:
    """One report per label, drawn from the randomizer's matrix row of the label."""
    cumulative = np.cumsum(randomizer.matrix[labels], axis=1)
    uniforms = rng.random((labels.size, 1))
    return np.minimum((uniforms > cumulative).sum(axis=1), randomizer.matrix.shape[1] - 1)


def debiased_frequencies(histogram: np.ndarray, epsilon0: float) -> np.ndarray:
    """Unbiased k-RR frequency estimate: (count/n − g)/((e^ε0 − 1)·g), g = 1/(e^ε0 + k − 1)."""
    classes, total = histogram.size, histogram.sum()
    g = 1.0 / (math.exp(epsilon0) + classes - 1.0)
    return (histogram / total - g) / (math.expm1(epsilon0) * g)


def round_cost(accountant: ShuffleAccountant, randomizer: Randomizer, steps: int,
               sample_rate: float, sigma: float, population: int, report_rate: float) -> None:
    """Charge one round: ``steps`` DP-SGD steps and one Poisson-sampled shuffle round.

    The report round is ``PoissonSampledDpEvent(report_rate, ShuffleEvent(randomizer,
    population))``: each of the ``population`` records reports with probability ``report_rate``.
    """
    for _ in range(steps):
        accountant.step(noise_multiplier=sigma, sample_rate=sample_rate)
    accountant.step_shuffle(randomizer, population, sampling_probability=report_rate)


def run(config: Config, out: TextIO | None = None) -> FederatedResult:
    """The federated loop; prints a per-round table to ``out`` (default: sys.stdout)."""
    out = sys.stdout if out is None else out
    start = time.perf_counter()
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    client_data, test_features, test_labels = synthetic_data(config, rng)
    clients = [Client(features, labels, config, config.seed * 1000 + i)
               for i, (features, labels) in enumerate(client_data)]
    randomizer = randomizers.krr(config.epsilon0, config.classes)
    global_model = make_model(config.classes)
    accountant = ShuffleAccountant("replace_one")  # DP-SGD steps and shuffle rounds
    dp_sgd_only = ShuffleAccountant("replace_one")  # the same steps alone, for comparison
    reports_only = ShuffleAccountant("replace_one")  # the sampled label reports alone
    reports_unsampled = ShuffleAccountant("replace_one")  # every record, every round
    population = config.clients * config.records
    result = FederatedResult(config, accountant=accountant, randomizer=randomizer)

    header = (f"{'round':>5} {'clients':>7} {'reports':>7} {'steps':>5} {'eps DP-SGD':>10} "
              f"{'eps reports':>11} {'(unsampled)':>11} {'eps total':>9} {'test acc':>8} "
              f"{'hist L1':>7}")
    print(f"target (epsilon, delta) = ({config.target_epsilon}, {config.delta}), replace-one, "
          f"{config.clients} clients x {config.records} records, client rate {config.client_rate}, "
          f"report rate {config.report_rate}, "
          f"sigma {config.noise_multiplier}, k-RR eps0 {config.epsilon0} on {config.classes} labels",
          file=out)
    print(header, file=out)
    for round_index in range(1, config.rounds + 1):
        sampled = [c for c in clients if rng.random() < config.client_rate]
        if not sampled:
            print(f"{round_index:>5} {0:>7}  (no client sampled: nothing released, no cost)",
                  file=out)
            continue
        steps = max(c.steps_per_round for c in sampled)
        rate = max(c.sample_rate for c in sampled)

        # reserve the round's budget before anything is released; roll back if it does not fit
        before_round = accountant.state_dict()
        round_cost(accountant, randomizer, steps, rate, config.noise_multiplier, population,
                   config.report_rate)
        epsilon = accountant.get_epsilon(config.delta)
        if epsilon > config.target_epsilon:
            accountant.load_state_dict(before_round)
            result.stop_reason = (f"round {round_index} would reach epsilon {epsilon:.4f} "
                                  f"> target {config.target_epsilon}")
            result.next_round_epsilon = epsilon
            break

        global_state = global_model.state_dict()
        weights, total = None, 0
        for client in sampled:
            state, taken = client.train_round(global_state)
            if taken != client.steps_per_round:
                raise RuntimeError(f"client took {taken} steps, planned {client.steps_per_round}")
            size = client.labels.size
            weights = ({k: v * size for k, v in state.items()} if weights is None
                       else {k: weights[k] + v * size for k, v in state.items()})
            total += size
        global_model.load_state_dict({k: v / total for k, v in weights.items()})

        # every record of every client reports with probability report_rate, independently
        reporting = np.concatenate([c.labels[rng.random(c.labels.size) < config.report_rate]
                                    for c in clients])
        reports = reporting.size
        shuffled = rng.permutation(randomized_reports(randomizer, reporting, rng))
        histogram = np.bincount(shuffled, minlength=config.classes)
        truth = np.bincount(reporting, minlength=config.classes) / reports
        histogram_l1 = float(np.abs(debiased_frequencies(histogram, config.epsilon0) - truth).sum())

        for _ in range(steps):
            dp_sgd_only.step(noise_multiplier=config.noise_multiplier, sample_rate=rate)
        reports_only.step_shuffle(randomizer, population, sampling_probability=config.report_rate)
        reports_unsampled.step_shuffle(randomizer, population)
        with torch.no_grad():
            accuracy = (global_model(test_features).argmax(dim=1) == test_labels).float().mean().item()
        row = RoundRow(round_index, len(sampled), reports, steps, rate,
                       dp_sgd_only.get_epsilon(config.delta), reports_only.get_epsilon(config.delta),
                       reports_unsampled.get_epsilon(config.delta), epsilon, accuracy, histogram_l1)
        result.rows.append(row)
        print(f"{row.round:>5} {row.clients:>7} {row.reports:>7} {row.local_steps:>5} "
              f"{row.epsilon_dp_sgd:>10.4f} {row.epsilon_reports:>11.4f} "
              f"{row.epsilon_reports_unsampled:>11.4f} {row.epsilon:>9.4f} "
              f"{row.accuracy:>8.3f} {row.histogram_l1:>7.3f}", file=out)
    else:
        result.stop_reason = f"all {config.rounds} rounds run within the budget"
    result.seconds = time.perf_counter() - start
    print(f"stopped: {result.stop_reason}; final epsilon {accountant.get_epsilon(config.delta):.4f} "
          f"at delta {config.delta} (replace-one) after {len(result.rows)} rounds, "
          f"{result.seconds:.1f} s", file=out)
    return result


def parse_args(argv: Sequence[str] | None) -> Config:
    defaults = Config()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, value in vars(defaults).items():
        parser.add_argument("--" + name.replace("_", "-"), type=type(value), default=value)
    return Config(**vars(parser.parse_args(argv)))


def main(argv: Sequence[str] | None = None) -> FederatedResult:
    torch.set_num_threads(1)
    return run(parse_args(argv))


if __name__ == "__main__":
    main()
