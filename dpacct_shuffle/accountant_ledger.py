"""What both accountants of :mod:`dpacct_shuffle.accountants` share: the checks of a query's
target, the clipping of its result to a valid range, the ledger of composed leaf events and
the basic-composition cap Σ ε0 of pure-DP events."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from dp_accounting import dp_event

from dpacct_shuffle.core.validation import check_range
from dpacct_shuffle.relations import OWN_EVENTS, is_sampled_shuffle

# relative margin on the summed ε caps (float sums of products are rounded to nearest)
CAP_ROUNDING = 1e-12

#: one composed leaf event and how many times it was composed
Leaf = tuple[dp_event.DpEvent, int]


def checked_delta(target_delta: float) -> float:
    return check_range("target_delta", target_delta, 0.0, 1.0)


def checked_epsilon(target_epsilon: float) -> float:
    return check_range("target_epsilon", target_epsilon, 0.0, math.inf)


def epsilon_result(value: float) -> float:
    """ε ≥ 0; a NaN from dp-accounting on valid input is reported as no guarantee (inf)."""
    value = float(value)
    return math.inf if math.isnan(value) else max(0.0, value)


def delta_result(value: float) -> float:
    """δ clipped to [0, 1] (sound: δ ≤ 1 always holds); NaN reported as no guarantee (1)."""
    value = float(value)
    return 1.0 if math.isnan(value) else min(1.0, max(0.0, value))


def ledger_summary(leaves: Sequence[Leaf]) -> str:
    """``"3 × ShuffleEvent, 300 × PoissonSampledDpEvent"``: what an accountant holds."""
    counts: Counter[str] = Counter()
    for event, count in leaves:
        counts[type(event).__name__] += count
    return ", ".join(f"{count} × {name}" for name, count in counts.items()) or "nothing"


def summed_cap(caps: Sequence[float]) -> float:
    """Σ ε0 of the composed events (basic composition of pure DP), raised by ``CAP_ROUNDING``;
    0 for nothing composed, inf if some event has no known ε0."""
    if not caps:
        return 0.0
    total = math.fsum(caps)
    return total * (1.0 + CAP_ROUNDING) if math.isfinite(total) else math.inf


def flatten_events(event: dp_event.DpEvent, count: int) -> list[Leaf]:
    """The leaf events of ``ComposedDpEvent`` / ``SelfComposedDpEvent`` with their counts."""
    if isinstance(event, dp_event.SelfComposedDpEvent):
        return flatten_events(event.event, event.count * count)
    if isinstance(event, dp_event.ComposedDpEvent):
        return [leaf for inner in event.events for leaf in flatten_events(inner, count)]
    return [(event, count)]


def contains_own_event(event: dp_event.DpEvent) -> bool:
    """Whether an event of this package (or a sampled shuffle round) is nested in ``event``."""
    if isinstance(event, OWN_EVENTS) or is_sampled_shuffle(event):
        return True
    inner = [getattr(event, "event", None)] + list(getattr(event, "events", None) or [])
    return any(isinstance(e, dp_event.DpEvent) and contains_own_event(e) for e in inner)


__all__ = [
    "CAP_ROUNDING",
    "Leaf",
    "checked_delta",
    "checked_epsilon",
    "contains_own_event",
    "delta_result",
    "epsilon_result",
    "flatten_events",
    "ledger_summary",
    "summed_cap",
]
