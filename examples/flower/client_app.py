"""ClientApp of the example: a tiny linear model for DP-FedAvg and one categorical value for the
shuffled analytics rounds (randomized on the client by ``LocalRandomizerMod``)."""

from __future__ import annotations

import numpy as np
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

from dpacct_shuffle import randomizers
from dpacct_shuffle.flower.analytics import RECORD_KEY, LocalRandomizerMod

# The local randomizer every client applies to its value (the server's strategy uses the same).
DOMAIN_SIZE = 4
RANDOMIZER = randomizers.krr(epsilon0=3.0, domain_size=DOMAIN_SIZE)
FEATURES = 3


def client_value(context: Context) -> int:
    """The client's categorical value in [0, 4): here derived from its partition id."""
    return int(context.node_config["partition-id"]) % DOMAIN_SIZE


def _local_data(context: Context) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(int(context.node_config["partition-id"]))
    features = rng.normal(size=(32, FEATURES))
    targets = features @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=32)
    return features, targets


app = ClientApp(mods=[LocalRandomizerMod(RANDOMIZER)])


@app.train()
def train(msg: Message, context: Context) -> Message:
    """A few gradient steps of least squares from the global weights."""
    weights = msg.content["arrays"].to_numpy_ndarrays()[0]
    features, targets = _local_data(context)
    for _ in range(5):
        weights = weights - 0.1 * features.T @ (features @ weights - targets) / len(targets)
    return Message(RecordDict({"arrays": ArrayRecord([weights]),
                               "metrics": MetricRecord({"num-examples": 1})}), reply_to=msg)


@app.query()
def query(msg: Message, context: Context) -> Message:
    """The raw value; the mod replaces it by its randomized report before the reply leaves."""
    return Message(RecordDict({RECORD_KEY: ConfigRecord({"value": client_value(context)})}),
                   reply_to=msg)
