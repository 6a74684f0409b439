"""``ShuffleRdpAccountant``: dp-accounting's ``RdpAccountant`` that also accounts shuffle rounds
and local reports (see :mod:`dpacct_shuffle.accountants` for what both accountants account, the
neighbouring relations and the parent defects fixed here)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Optional

import numpy as np
from dp_accounting import dp_event
from dp_accounting import privacy_accountant
from dp_accounting.privacy_accountant import NeighboringRelation as NeighborRel
from dp_accounting.rdp import rdp_privacy_accountant
from numpy.typing import NDArray

from dpacct_shuffle.accountant_ledger import (
    Leaf,
    checked_delta,
    checked_epsilon,
    contains_own_event,
    delta_result,
    epsilon_result,
    flatten_events,
    ledger_summary,
    summed_cap,
)
from dpacct_shuffle.event_plds import event_epsilon_cap, shuffle_event_rdp
from dpacct_shuffle.events import LDPCompositionEvent
from dpacct_shuffle.ldp_events import ldp_event_rdp
from dpacct_shuffle.relations import (
    OWN_EVENTS,
    ErrorDetails,
    is_sampled_shuffle,
    relation_error,
    supported_relation,
)

CompositionErrorDetails = privacy_accountant.PrivacyAccountant.CompositionErrorDetails


class ShuffleRdpAccountant(rdp_privacy_accountant.RdpAccountant):  # type: ignore[misc]
    """``RdpAccountant`` that also accounts shuffle rounds and local reports (replace-one default).

    Accounts shuffle-model reports, not DP-SGD on shuffled minibatches (module docstring).

    The RDP of this package's events is kept in the accountant's own vector, added to the
    parent's public :attr:`rdp`; ε and δ come from dp-accounting's public
    ``rdp_privacy_accountant.compute_epsilon`` / ``compute_delta`` of the sum. As in
    :class:`ShufflePLDAccountant`, if every composed event is pure DP with a known ε0 (each
    round's RDP is also min'd with the RDP of ε0-DP randomized response,
    :func:`dpacct_shuffle.profiles.rdp_from_grid`), ε is at most Σ ε0 and δ is 0 at ε ≥ Σ ε0
    (basic composition of pure DP; the conversion from RDP alone gives more at tiny δ). Queries are
    validated (a bad target is a ValueError naming it; the parent accepts NaN and out-of-range
    targets) and their results kept in range (ε ≥ 0, δ in [0, 1]).

    Args:
      orders: RDP orders (default: dp-accounting's ``DEFAULT_RDP_ORDERS``), all >= 1.
      neighboring_relation: defaults to ``REPLACE_ONE``, the relation the shuffle bounds hold for;
        a ``GaussianDpEvent``/``LaplaceDpEvent`` is then computed with sensitivity 2 (the parent
        used 1). Under any other relation the shuffle/LDP events are unsupported.
    """

    def __init__(self, orders: Optional[Sequence[float]] = None,
                 neighboring_relation: NeighborRel = NeighborRel.REPLACE_ONE) -> None:
        super().__init__(orders, neighboring_relation)
        self._rdp_orders: tuple[float, ...] = tuple(float(order) for order in super().orders)
        self._shuffle_rdp: NDArray[np.float64] = np.zeros(len(self._rdp_orders))
        self._held: list[Leaf] = []
        self._epsilon_caps: list[float] = []

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(neighboring_relation={self.neighboring_relation.name}, "
                f"orders: {len(self._rdp_orders)} from {min(self._rdp_orders):g} to "
                f"{max(self._rdp_orders):g}; holds {ledger_summary(self._held)})")

    @property
    def rdp(self) -> NDArray[np.float64]:
        """The RDP of everything composed at :attr:`orders`: the parent's RDP of dp-accounting's
        events plus this package's events."""
        return np.asarray(super().rdp + self._shuffle_rdp, dtype=np.float64)

    def compose(self, event: dp_event.DpEvent, count: int = 1) -> "ShuffleRdpAccountant":
        super().compose(event, count)
        self._held.extend(flatten_events(event, count))
        if count > 0:
            self._epsilon_caps.append(count * event_epsilon_cap(event, self.neighboring_relation))
        return self

    def get_epsilon_and_optimal_order(self, target_delta: float) -> tuple[float, float]:
        """Smallest ε with (ε, target_delta)-DP (target_delta in [0, 1]) and the RDP order that
        gives it (``rdp_privacy_accountant.compute_epsilon``)."""
        epsilon, order = rdp_privacy_accountant.compute_epsilon(
            self._rdp_orders, self.rdp, checked_delta(target_delta))
        return min(epsilon_result(epsilon), summed_cap(self._epsilon_caps)), order

    def get_epsilon(self, target_delta: float) -> float:
        """Smallest ε with (ε, target_delta)-DP for everything composed; target_delta in [0, 1]."""
        return self.get_epsilon_and_optimal_order(target_delta)[0]

    def get_delta_and_optimal_order(self, target_epsilon: float) -> tuple[float, float]:
        """Smallest δ with (target_epsilon, δ)-DP (target_epsilon ≥ 0) and the RDP order that
        gives it (``rdp_privacy_accountant.compute_delta``)."""
        epsilon = checked_epsilon(target_epsilon)
        delta, order = rdp_privacy_accountant.compute_delta(self._rdp_orders, self.rdp, epsilon)
        cap = summed_cap(self._epsilon_caps)
        if math.isfinite(cap) and epsilon >= cap:
            return 0.0, order
        return delta_result(delta), order

    def get_delta(self, target_epsilon: float) -> float:
        """Smallest δ with (target_epsilon, δ)-DP for everything composed; target_epsilon >= 0."""
        return self.get_delta_and_optimal_order(target_epsilon)[0]

    def _maybe_compose(self, event: dp_event.DpEvent, count: int,
                       do_compose: bool) -> Optional[ErrorDetails]:
        replace_one = self.neighboring_relation is NeighborRel.REPLACE_ONE
        if isinstance(event, OWN_EVENTS) or is_sampled_shuffle(event):
            if not replace_one and supported_relation(event, self.neighboring_relation):
                return CompositionErrorDetails(
                    invalid_event=event,
                    error_message="the Rényi divergence of a Poisson-sampled shuffle round under "
                                  "ADD_OR_REMOVE_ONE is infinite (with the victim present every "
                                  "user may report, an outcome impossible without it); use "
                                  "ShufflePLDAccountant.")
            if not replace_one:
                return relation_error(event, self.neighboring_relation)
            rdp: Optional[NDArray[np.float64]] = None
            if isinstance(event, LDPCompositionEvent):
                rdp = ldp_event_rdp(event, self._rdp_orders)
                if rdp is None:
                    return CompositionErrorDetails(
                        invalid_event=event,
                        error_message="RDP of an (epsilon, delta>0)-LDP report is unbounded; "
                                      "use ShufflePLDAccountant.")
            elif do_compose:
                rdp = shuffle_event_rdp(event, self._rdp_orders)
            if do_compose and rdp is not None:
                self._shuffle_rdp = self._shuffle_rdp + count * rdp
            return None
        if isinstance(event, dp_event.RepeatAndSelectDpEvent) and contains_own_event(event):
            # the parent transforms the RDP of the repeated event, which it holds in its own
            # state only; this package's RDP is held apart
            return CompositionErrorDetails(
                invalid_event=event,
                error_message="RepeatAndSelectDpEvent of shuffle rounds or local reports is not "
                              "supported; use ShufflePLDAccountant or compose the rounds.")
        if replace_one and isinstance(event, dp_event.GaussianDpEvent):
            # parent defect: sensitivity 1 under replace-one; a replaced record moves the sum by 2C
            return super()._maybe_compose(
                dp_event.GaussianDpEvent(event.noise_multiplier / 2.0), count, do_compose)
        if replace_one and isinstance(event, dp_event.LaplaceDpEvent):
            return super()._maybe_compose(
                dp_event.LaplaceDpEvent(event.noise_multiplier / 2.0), count, do_compose)
        if (replace_one and isinstance(event, dp_event.SampledWithoutReplacementDpEvent)
                and isinstance(event.event, dp_event.GaussianDpEvent)):
            # same defect inside the parent's sampling-without-replacement bound (Wang, Balle,
            # Kasiviswanathan): its base RDP is the Gaussian's, which under replace-one has
            # sensitivity 2, i.e. the curve of noise_multiplier / 2
            halved = dp_event.SampledWithoutReplacementDpEvent(
                event.source_dataset_size, event.sample_size,
                dp_event.GaussianDpEvent(event.event.noise_multiplier / 2.0))
            return super()._maybe_compose(halved, count, do_compose)
        return super()._maybe_compose(event, count, do_compose)


__all__ = ["ShuffleRdpAccountant"]
