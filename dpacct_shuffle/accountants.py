"""dp-accounting accountants that understand shuffled and local reports.

* :class:`ShufflePLDAccountant` — a ``dp_accounting.PrivacyAccountant`` composing privacy loss
  distributions; for dp-accounting's own events it gives exactly ``dp_accounting.pld.PLDAccountant``'s
  numbers;
* :class:`ShuffleRdpAccountant` — a ``dp_accounting.rdp.RdpAccountant``
  (:mod:`dpacct_shuffle.rdp_accountant`, re-exported here).

**What "shuffle" means here.** These accountants account the *shuffle model*: each user applies a
local randomizer to their input and a shuffler releases the multiset of reports
(:mod:`dpacct_shuffle.events`). They do **not** account DP-SGD trained on *shuffled minibatches*
(a data loader that shuffles the dataset and cuts fixed-size batches): the Poisson-sampling
analysis of DP-SGD does not hold for that, and no accountant here gives its ε (Opacus issue #80;
Chua, Ghazi, Kamath, Kumar, Manurangsi, Sinha & Zhang, "How Private are DP-SGD Implementations?",
ICML 2024). For DP-SGD, sample batches by Poisson sampling (Opacus's default DPDataLoader) and
compose ``PoissonSampledDpEvent(q, GaussianDpEvent(σ))``.

Both are constructible with no arguments and then use the **replace-one** neighbouring relation
(one user's input replaced, everything else fixed): the relation the shuffle bounds hold for.
Under that relation a ``GaussianDpEvent`` has sensitivity 2 (a replaced record can move a
norm-≤C sum by 2C), as in dp-accounting's PLD; :class:`ShuffleRdpAccountant` does the same (its
parent used sensitivity 1 — see below). Under another relation the parents' rules apply to their
own events, and of this package's events only Poisson-sampled shuffle rounds are accepted
(under ``ADD_OR_REMOVE_ONE``, PLD only; :mod:`dpacct_shuffle.relations`).

Every number of an event of this package comes from one place: its profile
(:func:`dpacct_shuffle.event_profiles.event_profile`), turned into a PLD or RDP by
:mod:`dpacct_shuffle.event_plds`. Events dp-accounting knows get their PLDs from its public
constructors (:mod:`dpacct_shuffle.dp_accounting_plds`). :class:`ShufflePLDAccountant` owns its
composed ``PrivacyLossDistribution`` and its ledger and reads or writes no private attribute of
dp-accounting.

Parent defects fixed here rather than inherited (dp-accounting 0.6.0):

* ``PLDAccountant`` ignores ``count`` for ``RandomizedResponseDpEvent`` (5 × 1-LDP reports came
  out as ε = 1); here the randomized-response PLD is self-composed ``count`` times. A noise
  parameter of 1 (output independent of the input) is a no-op instead of a ValueError.
* ``RdpAccountant`` under ``REPLACE_ONE`` computes a ``GaussianDpEvent`` (and a
  ``LaplaceDpEvent``) with sensitivity 1, as for add/remove — an under-report. Here they are
  computed with sensitivity 2 (noise multiplier halved), matching dp-accounting's PLD.

RDP of shuffle events reuses the PLD grid, which stops evaluating the core at δ ≤ 1e-16; the chord
to the cap that bounds the rest is loose at high Rényi orders, so the RDP numbers are valid but can
be far above the PLD ones — prefer :class:`ShufflePLDAccountant` for shuffle rounds.

:class:`ShuffleRdpAccountant` extends dp-accounting's ``RdpAccountant``: dp-accounting's events go
to the parent, this package's RDP vectors to the accountant's own vector, and ε/δ come from
dp-accounting's public ``compute_epsilon``/``compute_delta`` of the sum of the parent's public
``rdp`` and that vector. Neither accountant reads or writes a private attribute of dp-accounting.
"""

from __future__ import annotations

import math
from typing import Any, Literal, Optional, Union

from dp_accounting import dp_event
from dp_accounting import privacy_accountant
from dp_accounting.privacy_accountant import NeighboringRelation as NeighborRel
from dp_accounting.pld import privacy_loss_distribution as pld_lib

from dpacct_shuffle.accountant_ledger import (
    CAP_ROUNDING,
    Leaf,
    checked_delta,
    checked_epsilon,
    delta_result,
    epsilon_result,
    flatten_events,
    ledger_summary,
    summed_cap,
)
from dpacct_shuffle.core.validation import check_range
from dpacct_shuffle.dp_accounting_plds import Outcome, leaf_error, leaf_pld
from dpacct_shuffle.event_plds import (
    event_epsilon_cap,
    event_loss_scale,
    event_pmfs,
    shuffle_event_grid,
    shuffle_event_loss_scale,
    shuffle_event_pld,
    shuffle_event_rdp,
)
from dpacct_shuffle.event_profiles import event_profile
from dpacct_shuffle.ldp_events import ldp_event_pld, ldp_event_rdp
from dpacct_shuffle.pld_composition import (
    LossPmfs,
    certified_compose,
    certified_power,
    certified_tree_compose,
)
from dpacct_shuffle.profiles import DEFAULT_VALUE_DISCRETIZATION, discretization_for_scale
from dpacct_shuffle.progress import ProgressOption, ProgressReporter, is_terminal
from dpacct_shuffle.relations import (
    ErrorDetails,
    is_own,
    relation_error,
    relation_message,
    supported_relation,
)
from dpacct_shuffle.rdp_accountant import ShuffleRdpAccountant
from dpacct_shuffle.user_anchors import (
    UserCountAnchors,
    anchored_event,
    event_on_users_grid,
    event_with_user_counts,
    user_counts,
)

CompositionErrorDetails = privacy_accountant.PrivacyAccountant.CompositionErrorDetails

# -- tuning of ShufflePLDAccountant (steer cost and tightness only; every PLD is pessimistic) ----
# an event's loss range shrinks the automatic interval at most to this fraction of its scale
# (bounds dense array sizes when scales differ a lot); see ShufflePLDAccountant._auto_interval
MAX_SCALE_SPREAD = 64.0
# tail mass cut at each truncation of this package's compositions (the right tail's goes to +∞);
# far below the smallest δ the accountants are asked for (continuity down to δ = 1e-15)
TAIL_TRUNCATION = 1e-20
# first relative step by which ε(δ) is raised until δ(ε) ≤ δ (doubled at each try)
CONSISTENCY_STEP = 1e-13
_CONSISTENCY_TRIES = 60
# seconds a composition runs before its progress bar appears
PROGRESS_DELAY = 1.0


def _consistent_epsilon(pld: pld_lib.PrivacyLossDistribution, delta: float,
                        epsilon: float) -> float:
    """``epsilon`` raised, if needed, until the PLD's δ(ε) ≤ ``delta``: dp-accounting's ε(δ)
    solves δ(ε) = δ in floating point and can land an ulp-level step low (δ(ε) = δ·(1 + 1e-11));
    a larger ε is still a guarantee, and then ``get_delta(get_epsilon(δ)) ≤ δ``."""
    step = max(epsilon, 1.0) * CONSISTENCY_STEP
    for _ in range(_CONSISTENCY_TRIES):
        if not math.isfinite(epsilon) or float(pld.get_delta_for_epsilon(epsilon)) <= delta:
            return epsilon
        epsilon, step = epsilon + step, 2.0 * step
    return math.inf


class ShufflePLDAccountant(privacy_accountant.PrivacyAccountant):  # type: ignore[misc]
    """PLD accountant for shuffle rounds, local reports and dp-accounting's events (replace-one
    default). A drop-in ``dp_accounting.PrivacyAccountant``: ``compose``, ``supports``,
    ``get_epsilon``, ``get_delta``, ``ledger``.

    Accounts *shuffle-model* reports (see the module docstring, "What 'shuffle' means here"): not
    DP-SGD on shuffled minibatches, for which Poisson-sampled batches and
    ``PoissonSampledDpEvent(q, GaussianDpEvent(σ))`` are the accountable alternative.

    Args:
      neighboring_relation: defaults to ``REPLACE_ONE``, the relation the shuffle bounds hold for
        (a Gaussian step then has sensitivity 2, as in dp-accounting's PLD). Under
        ``ADD_OR_REMOVE_ONE`` only Poisson-sampled shuffle rounds of this package are supported
        (:mod:`dpacct_shuffle.relations`).
      value_discretization_interval: PLD grid of every composed event. ``None`` (default):
        chosen from the scale of the composed events (below); a number: that grid, fixed, each
        event composed as it arrives (dp-accounting's behaviour).
      users_grid_ratio: ``None`` (default): every round is accounted at its own user count. A
        ratio r in (1, 2]: every round is accounted at an anchor a ≤ n < a·r chosen among the
        rounds' own user counts when they are composed
        (:class:`~dpacct_shuffle.user_anchors.UserCountAnchors`: greedily, the fewest anchors;
        rounds composed earlier keep theirs; sound because the bounds are non-increasing in n),
        so a cohort that changes every round costs one PLD per anchor, cached across rounds and
        accountants; each round's ε grows by at most about √r − 1 (0.5 % at r = 1.01). Each
        anchor's profile comes from the batched pair curve at ``profiles.COHORT_LOWERING``
        (:func:`dpacct_shuffle.user_anchors.anchored_event`).
      progress: ``"auto"`` (default): ``True`` when stderr is a terminal, else ``False``;
        ``True``: a tqdm bar on stderr for a composition that runs longer than
        ``PROGRESS_DELAY`` (1 s); ``False``/``None``: silent; a callback ``progress(done, total)``
        (:mod:`dpacct_shuffle.progress`).

    Automatic interval. Shuffle rounds and local reports are recorded by :meth:`compose` and
    composed when ε or δ is asked for; other events are composed at once at the current interval
    (so their errors surface there) and again if the interval changes. Without shuffle or
    local-report events the interval is dp-accounting's 1e-4 (dp-accounting's numbers exactly).
    Otherwise it is ``discretization_for_scale(max(σ_rms, σ_max/64))``: σ_i is each event's loss
    scale (:func:`dpacct_shuffle.event_plds.event_loss_scale`), σ_rms their root mean square over
    all composed copies, σ_max the largest; an event of unknown scale (Laplace, mixture of
    Gaussians, …) keeps 1e-4. The interval is a power-of-two fraction of 1e-4, so it changes
    rarely; when it does, the PLD is rebuilt from the recorded events (their PLDs are cached per
    event and interval). The choice steers tightness only: every PLD is pessimistic.

    Shuffle rounds are grouped (equal events self-composed once, by repeated squaring) and
    composed pairwise with certified tails, cut at ``TAIL_TRUNCATION`` (1e-20) instead of
    dp-accounting's 1e-15 (:mod:`dpacct_shuffle.pld_composition`; docs/theory.md, "Tiny δ:
    certified tails"), so ε stays continuous in δ down to 1e-15 and below; dp-accounting's own
    events are composed as its ``PLDAccountant`` does. ``get_delta(get_epsilon(δ)) ≤ δ`` for
    ledgers with this package's events.

    ε0 cap. If every composed event is pure DP with a known ε
    (:func:`~dpacct_shuffle.event_plds.event_epsilon_cap`: shuffle rounds of ε0-LDP randomizers,
    pure local reports), their sum Σ ε0 bounds the composition (basic composition of pure DP):
    :meth:`get_epsilon` returns at most Σ ε0 — finite at any δ, however much mass the truncated
    PLD keeps at +∞ — and :meth:`get_delta` returns 0 at ε ≥ Σ ε0.
    """

    def __init__(self, neighboring_relation: NeighborRel = NeighborRel.REPLACE_ONE,
                 value_discretization_interval: Optional[float] = None,
                 users_grid_ratio: Optional[float] = None,
                 progress: Union[ProgressOption, Literal["auto"]] = "auto") -> None:
        super().__init__(neighboring_relation)
        fixed = (None if value_discretization_interval is None else check_range(
            "value_discretization_interval", value_discretization_interval, 0.0, 1.0,
            low_open=True))
        self._anchors = None if users_grid_ratio is None else UserCountAnchors(users_grid_ratio)
        self._fixed_interval = fixed
        self._interval = DEFAULT_VALUE_DISCRETIZATION if fixed is None else fixed
        # dp-accounting's events, composed as its PLDAccountant does; this package's events,
        # composed with certified tails; their composition, for the queries
        self._composed = pld_lib.identity(self._interval)
        self._composed_any = False  # whether _composed is still the identity
        self._own: Optional[LossPmfs] = None
        self._query_pld: Optional[pld_lib.PrivacyLossDistribution] = None
        self._non_private = False
        self._leaves: list[Leaf] = []  # every leaf event composed, as it is accounted
        self._pending: list[int] = []  # indices in _leaves of own events not composed yet
        self._epsilon_caps: list[float] = []
        self._progress: ProgressOption = is_terminal() if progress == "auto" else progress

    # -- what it holds -------------------------------------------------------------------
    @property
    def value_discretization_interval(self) -> float:
        """The PLD grid in use (the fixed one, or the automatic choice for what is composed)."""
        self._build()
        return self._interval

    @property
    def leaf_events(self) -> tuple[Leaf, ...]:
        """Every leaf event composed so far with its count, as accounted (with
        ``users_grid_ratio``: at its anchors, once ε or δ has been asked for)."""
        return tuple(self._leaves)

    def composed_pld(self) -> pld_lib.PrivacyLossDistribution:
        """The composed ``PrivacyLossDistribution`` of everything accounted (without the ε0 cap;
        meaningless if :attr:`contains_non_private_event`)."""
        self._build()
        return self._queried_pld()

    def _queried_pld(self) -> pld_lib.PrivacyLossDistribution:
        """dp-accounting's events' PLD composed with this package's (cached until either
        changes)."""
        if self._query_pld is None:
            if self._own is None:
                self._query_pld = self._composed
            elif not self._composed_any:
                self._query_pld = self._own.to_dp_accounting()
            else:
                self._query_pld = self._composed.compose(self._own.to_dp_accounting(),
                                                         tail_mass_truncation=TAIL_TRUNCATION)
        return self._query_pld

    @property
    def contains_non_private_event(self) -> bool:
        """Whether an event without any privacy was composed (then ε = inf, δ = 1)."""
        self._build()
        return self._non_private

    def __repr__(self) -> str:
        interval = ("auto" if self._fixed_interval is None else repr(self._fixed_interval))
        grid = "" if self._anchors is None else f", users_grid_ratio={self._anchors.ratio!r}"
        return (f"{type(self).__name__}(neighboring_relation={self.neighboring_relation.name}, "
                f"value_discretization_interval={interval}{grid}; holds "
                f"{ledger_summary(self._leaves)})")

    # -- composition ----------------------------------------------------------------------
    def compose(self, event: dp_event.DpEvent, count: int = 1) -> "ShufflePLDAccountant":
        super().compose(event, count)
        if count > 0:
            self._epsilon_caps.append(count * event_epsilon_cap(event, self.neighboring_relation))
        return self

    def _leaf_error(self, event: dp_event.DpEvent) -> Optional[ErrorDetails]:
        if is_own(event):
            if not supported_relation(event, self.neighboring_relation):
                return relation_error(event, self.neighboring_relation)
            return None
        message = leaf_error(event, self.neighboring_relation)
        return None if message is None else CompositionErrorDetails(invalid_event=event,
                                                                    error_message=message)

    def _maybe_compose(self, event: dp_event.DpEvent, count: int,
                       do_compose: bool) -> Optional[ErrorDetails]:
        for leaf, copies in flatten_events(event, count):
            error = self._leaf_error(leaf)
            if error is not None:
                return error
            if do_compose and copies > 0:
                self._record(leaf, copies)
        return None

    def _record(self, event: dp_event.DpEvent, count: int) -> None:
        """Record a leaf: own events wait for :meth:`_build` (automatic interval), everything
        else is composed now at the current interval (its errors surface here)."""
        if is_own(event) and self._fixed_interval is None:
            self._leaves.append((event, count))
            self._pending.append(len(self._leaves) - 1)
            return
        if is_own(event) and self._anchors is not None:
            self._anchors.extend(user_counts(event))
            event = anchored_event(event, self._anchors)
        self._leaves.append((event, count))
        self._compose_leaf(event, count)

    def _leaf_pld(self, event: dp_event.DpEvent, count: int) -> Any:
        """PLD (or :class:`~dpacct_shuffle.dp_accounting_plds.Outcome`) of ``count`` copies of a
        leaf event dp-accounting knows, at the current interval."""
        return leaf_pld(event, count, self._interval, self.neighboring_relation)

    def _own_pmfs(self, event: dp_event.DpEvent, count: int) -> LossPmfs:
        """Pmfs of ``count`` copies of an event of this package, by repeated squaring with
        certified tails (:func:`dpacct_shuffle.pld_composition.certified_power`)."""
        single = event_pmfs(event, self._interval, self.neighboring_relation, TAIL_TRUNCATION)
        return certified_power(single, count, TAIL_TRUNCATION)

    def _compose_pld(self, pld: pld_lib.PrivacyLossDistribution) -> None:
        """Compose the PLD of dp-accounting's own events exactly as its ``PLDAccountant`` does
        (its ``compose``, default truncation)."""
        if pld.get_delta_for_epsilon(math.inf) >= 1.0:
            # no finite privacy loss at all (δ(ε) = 1 for every ε, e.g. a p = ∞ randomizer with
            # one user): no guarantee (ε = inf, δ = 1); dp-accounting cannot compose a PLD
            # without finite mass
            self._non_private = True
            return
        self._composed = self._composed.compose(pld)
        self._composed_any = True
        self._query_pld = None

    def _compose_own(self, pmfs: LossPmfs) -> None:
        """Compose the pmfs of this package's events with certified tails
        (:func:`dpacct_shuffle.pld_composition.certified_compose`)."""
        if pmfs.to_dp_accounting().get_delta_for_epsilon(math.inf) >= 1.0:
            self._non_private = True  # e.g. an (ε, 1)-LDP report: no finite privacy loss
            return
        self._own = (pmfs if self._own is None
                     else certified_compose(self._own, pmfs, TAIL_TRUNCATION))
        self._query_pld = None

    def _compose_leaf(self, event: dp_event.DpEvent, count: int) -> None:
        if is_own(event):
            single = event_pmfs(event, self._interval, self.neighboring_relation,
                                TAIL_TRUNCATION)
            self._compose_own(certified_power(single, count, TAIL_TRUNCATION))
            return
        result = self._leaf_pld(event, count)
        if result is Outcome.NON_PRIVATE:
            self._non_private = True
        elif result is not Outcome.NO_OP:
            self._compose_pld(result)

    # -- automatic interval and lazy composition -------------------------------------------
    def _auto_interval(self) -> float:
        if not any(is_own(event) for event, _ in self._leaves):
            return DEFAULT_VALUE_DISCRETIZATION
        squares, copies, largest = [], 0, 0.0
        for event, count in self._leaves:
            if isinstance(event, (dp_event.NoOpDpEvent, dp_event.NonPrivateDpEvent)):
                continue
            scale = event_loss_scale(event, self.neighboring_relation)
            if scale is None:
                return DEFAULT_VALUE_DISCRETIZATION
            squares.append(count * scale * scale)
            copies += count
            largest = max(largest, scale)
        rms = math.sqrt(math.fsum(squares) / copies) if copies else 0.0
        return discretization_for_scale(max(rms, largest / MAX_SCALE_SPREAD))

    def _build(self) -> None:
        """Compose the pending own events; rebuild everything if the interval changed."""
        if self._fixed_interval is not None:
            return
        if self._anchors is not None:
            # the new rounds' anchors, then each recorded round replaced by the event it is
            # accounted as (rounds recorded earlier keep their anchors)
            self._anchors.extend(users for index in self._pending
                                 for users in user_counts(self._leaves[index][0]))
            for index in self._pending:
                event, count = self._leaves[index]
                self._leaves[index] = (anchored_event(event, self._anchors), count)
        interval = self._auto_interval()
        if interval != self._interval:
            self._interval = interval
            self._composed = pld_lib.identity(interval)
            self._composed_any = False
            self._own, self._query_pld = None, None
            self._non_private = False
            for event, count in self._leaves:
                if not is_own(event):
                    self._compose_leaf(event, count)
            self._pending = [index for index, (e, _) in enumerate(self._leaves) if is_own(e)]
        if not self._pending:
            return
        groups: dict[Any, list[Any]] = {}
        separate: list[Leaf] = []
        for index in self._pending:
            event, count = self._leaves[index]
            try:
                groups.setdefault(event, [event, 0])[1] += count
            except TypeError:  # unhashable event (mutable randomizer): composed on its own
                separate.append((event, count))
        leaves = [(event, count) for event, count in groups.values()] + separate
        plds: list[LossPmfs] = []
        with ProgressReporter(len(leaves), "shuffle-round PLDs", self._progress, unit="event",
                              delay=PROGRESS_DELAY) as reporter:
            for event, count in leaves:
                plds.append(self._own_pmfs(event, count))
                reporter.tick()
        self._compose_own(certified_tree_compose(plds, TAIL_TRUNCATION))
        self._pending = []

    # -- queries --------------------------------------------------------------------------
    def _epsilon_cap(self) -> float:
        return summed_cap(self._epsilon_caps)

    def get_epsilon(self, target_delta: float) -> float:
        """Smallest ε with (ε, target_delta)-DP for everything composed (target_delta in [0, 1]):
        from the composed PLD, at most Σ ε0 (see the class docstring)."""
        delta = checked_delta(target_delta)
        self._build()
        if self._non_private:
            return min(math.inf, self._epsilon_cap())
        pld = self._queried_pld()
        value = epsilon_result(pld.get_epsilon_for_delta(delta))
        if self._own is not None:
            value = _consistent_epsilon(pld, delta, value)
        return min(value, self._epsilon_cap())

    def get_delta(self, target_epsilon: float) -> float:
        """Smallest δ with (target_epsilon, δ)-DP for everything composed (target_epsilon ≥ 0):
        from the composed PLD; 0 at ε ≥ Σ ε0."""
        epsilon = checked_epsilon(target_epsilon)
        self._build()
        if self._non_private:
            return 1.0
        if epsilon >= self._epsilon_cap():
            return 0.0
        return delta_result(self._queried_pld().get_delta_for_epsilon(epsilon))


__all__ = [
    "CAP_ROUNDING",
    "CONSISTENCY_STEP",
    "MAX_SCALE_SPREAD",
    "PROGRESS_DELAY",
    "TAIL_TRUNCATION",
    "ShufflePLDAccountant",
    "ShuffleRdpAccountant",
    "event_epsilon_cap",
    "event_on_users_grid",
    "event_profile",
    "event_with_user_counts",
    "ldp_event_pld",
    "ldp_event_rdp",
    "relation_message",
    "shuffle_event_grid",
    "shuffle_event_loss_scale",
    "shuffle_event_pld",
    "shuffle_event_rdp",
    "user_counts",
]
