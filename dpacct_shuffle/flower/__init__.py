"""Flower integration: one privacy budget for DP-FedAvg rounds and shuffled analytics rounds.

* :class:`ShufflePrivacyAccountant` — a ``flwr.serverapp.PrivacyAccountant`` (pass it as
  ``accountant=`` to Flower's DP strategy wrappers) that also composes shuffle rounds;
* :mod:`dpacct_shuffle.flower.analytics` — a ClientApp helper that randomizes a client's value
  with a catalog randomizer, and a ServerApp strategy that shuffles one round of reports,
  estimates frequencies and charges the round to the accountant.

Importing this package requires Flower (``pip install 'dpacct-shuffle[flower]'``,
``flwr[simulation]==1.42.0``). The rest of ``dpacct_shuffle`` works without it.
"""

try:
    import flwr  # noqa: F401
except ImportError as error:  # pragma: no cover - exercised only without flwr installed
    raise ImportError(
        "dpacct_shuffle.flower needs Flower: `pip install 'dpacct-shuffle[flower]'` "
        "(flwr[simulation]==1.42.0). The rest of dpacct_shuffle works without it."
    ) from error

from dpacct_shuffle.flower.accountant import (
    ACCOUNTING_METHOD,
    STATE_SCHEMA_VERSION,
    ShufflePrivacyAccountant,
)

__all__ = ["ACCOUNTING_METHOD", "STATE_SCHEMA_VERSION", "ShufflePrivacyAccountant"]
