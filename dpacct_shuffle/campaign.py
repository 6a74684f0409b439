"""Campaigns: R shuffle rounds of one randomizer (optionally sampled, optionally with DP-SGD steps),
their total (ε, δ) through :class:`~dpacct_shuffle.accountants.ShufflePLDAccountant`, and the
parameter that meets a total target.

A :class:`Campaign` is R identical rounds; each round shuffles the reports of ``num_users`` users

* all of them (default; replace-one neighbours);
* a Poisson sample, each user w.p. γ (``sampling_probability``; ``num_users`` is the population
  N; replace-one or add/remove-one): ``PoissonSampledDpEvent(γ, ShuffleEvent(R, N))``;
* a fixed-size cohort of m drawn uniformly (``sample_size``; replace-one):
  ``SampledWithoutReplacementDpEvent(N, m, ShuffleEvent(R, m))``;

plus, optionally, any other dp-accounting event composed once (``other_event``, e.g. DP-SGD steps
``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(σ)), T)``). The R rounds are
composed as one self-composition (``accountant.compose(round, R)``: one PLD, self-composed).

Calibration. Each search keeps a passing end — a value at which the campaign was composed through
the accountant and found to meet the target, ``get_epsilon(δ) ≤ ε`` — and a failing end, narrowed
by the one monotone search (:mod:`dpacct_shuffle.core.search`); it returns the passing end, so the
result is certified by construction. "Largest"/"smallest" hold up to the relative tolerance if the
accountant's ε is monotone in the parameter (the tests check that 2 % beyond fails):

* :func:`largest_campaign_epsilon0` — the per-report ε0 of a family ε0 ↦ randomizer; its lower
  start ε/R always passes for an ε0-LDP randomizer without other events (the accountant's ε is
  at most Σ ε0, basic composition);
* :func:`smallest_campaign_noise` — the smallest noise parameter (a Gaussian randomizer's σ, or the
  DP-SGD noise multiplier of ``other_event``), as the largest 1/σ;
* :func:`smallest_campaign_users` — the smallest population n (the bound is non-increasing in n);
* :func:`largest_campaign_rounds` — the largest R.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional

from dp_accounting import dp_event

from dpacct_shuffle.accountants import ShufflePLDAccountant
from dpacct_shuffle.core.search import expand_bracket, largest_below, smallest_true_integer
from dpacct_shuffle.core.validation import (MAX_EPSILON0, MIN_EPSILON0, check_delta,
                                            check_num_users, check_range)
from dpacct_shuffle.events import ShuffleEvent
from dpacct_shuffle.profiles import RandomizerDescription
from dpacct_shuffle.progress import ProgressOption, ProgressReporter
from dpacct_shuffle.sampling import NeighborRel, check_sampling_probability

#: Default relative width of the final bracket of the float searches.
CAMPAIGN_RTOL = 5e-3


@dataclass(frozen=True)
class Campaign:
    """R shuffle rounds of ``randomizer`` over ``num_users`` users (module docstring).

    Attributes:
      randomizer: anything :class:`~dpacct_shuffle.ShuffleEvent` takes (a catalog randomizer, a
        ``VariationRatio``, …).
      num_users: users per round; the population N when sampled.
      rounds: R ≥ 1.
      sampling_probability: γ ∈ (0, 1] (Poisson sampling) or None.
      sample_size: m ∈ [1, N] (a fixed-size cohort) or None; not together with γ.
      neighboring_relation: ``REPLACE_ONE``, or ``ADD_OR_REMOVE_ONE`` with Poisson sampling only.
      other_event: a dp-accounting event composed once besides the rounds (e.g. DP-SGD steps).
    """

    randomizer: RandomizerDescription
    num_users: int
    rounds: int = 1
    sampling_probability: Optional[float] = None
    sample_size: Optional[int] = None
    neighboring_relation: NeighborRel = NeighborRel.REPLACE_ONE
    other_event: Optional[dp_event.DpEvent] = None

    def __post_init__(self) -> None:
        users = check_num_users(self.num_users, "num_users")
        object.__setattr__(self, "num_users", users)
        object.__setattr__(self, "rounds", check_num_users(self.rounds, "rounds"))
        if self.sampling_probability is not None:
            if self.sample_size is not None:
                raise ValueError("give sampling_probability (Poisson sampling) or sample_size (a "
                                 "fixed-size cohort), not both")
            object.__setattr__(self, "sampling_probability",
                               check_sampling_probability(self.sampling_probability))
            if self.sampling_probability == 0.0:
                raise ValueError("sampling_probability must be in (0, 1], got 0.0")
        if self.sample_size is not None:
            size = check_num_users(self.sample_size, "sample_size")
            if size > users:
                raise ValueError(f"sample_size must be in [1, num_users = {users}], got {size}")
            object.__setattr__(self, "sample_size", size)
        if not isinstance(self.neighboring_relation, NeighborRel):
            raise TypeError(f"neighboring_relation must be a NeighborRel, got "
                            f"{self.neighboring_relation!r}")
        if (self.neighboring_relation is not NeighborRel.REPLACE_ONE
                and self.sampling_probability is None):
            raise ValueError("only a Poisson-sampled campaign (sampling_probability) has a "
                             "guarantee under ADD_OR_REMOVE_ONE: an unsampled round's report count "
                             "reveals whether the victim is present; got "
                             f"{self.neighboring_relation!r}")
        if self.other_event is not None and not isinstance(self.other_event, dp_event.DpEvent):
            raise TypeError(f"other_event must be a dp_accounting DpEvent or None, got "
                            f"{type(self.other_event).__name__}")

    def round_event(self) -> dp_event.DpEvent:
        """The event of one round."""
        if self.sampling_probability is not None:
            return dp_event.PoissonSampledDpEvent(self.sampling_probability,
                                                  ShuffleEvent(self.randomizer, self.num_users))
        if self.sample_size is not None:
            return dp_event.SampledWithoutReplacementDpEvent(
                self.num_users, self.sample_size, ShuffleEvent(self.randomizer, self.sample_size))
        return ShuffleEvent(self.randomizer, self.num_users)

    def event(self) -> dp_event.DpEvent:
        """The whole campaign as one dp-accounting event."""
        rounds = dp_event.SelfComposedDpEvent(self.round_event(), self.rounds)
        if self.other_event is None:
            return rounds
        return dp_event.ComposedDpEvent([rounds, self.other_event])

    @property
    def reports_per_round(self) -> int:
        """The (expected, if Poisson-sampled) number of reports of one round, rounded down."""
        if self.sample_size is not None:
            return self.sample_size
        if self.sampling_probability is not None:
            return max(1, int(self.num_users * self.sampling_probability))
        return self.num_users

    def accountant(self) -> ShufflePLDAccountant:
        """A fresh :class:`ShufflePLDAccountant` with the campaign composed (rounds as one
        self-composition)."""
        accountant = ShufflePLDAccountant(self.neighboring_relation, progress=False)
        accountant.compose(self.round_event(), self.rounds)
        if self.other_event is not None:
            accountant.compose(self.other_event)
        return accountant

    def epsilon(self, delta: float) -> float:
        """Certified ε of the whole campaign at ``delta``."""
        return float(self.accountant().get_epsilon(check_delta(delta)))

    def delta(self, epsilon: float) -> float:
        """Certified δ of the whole campaign at ``epsilon``."""
        eps = check_range("epsilon", epsilon, 0.0, math.inf, high_open=True)
        return float(self.accountant().get_delta(eps))

    def meets(self, target_epsilon: float, delta: float) -> bool:
        """Whether the campaign is certified (target_epsilon, delta)-DP: ε(δ) ≤ target."""
        return self.epsilon(delta) <= target_epsilon


@dataclass(frozen=True)
class CampaignCalibration:
    """Result of a campaign calibration.

    Attributes:
      value: the calibrated parameter (ε0, σ, n or R).
      epsilon: the certified campaign ε at the target δ with that value (≤ the target).
      campaign: the calibrated :class:`Campaign`.
      evaluations: how many campaigns were composed by the search.
      failing_value: the evaluated value nearest to ``value`` on the far side (above a largest
        value, below a smallest) that fails the target; None if none was evaluated (the search's
        bound passed). With ``value`` it brackets the threshold.
    """

    value: float
    epsilon: float
    campaign: Campaign
    evaluations: int
    failing_value: Optional[float] = None


def _check_target(target_epsilon: float, delta: float) -> tuple[float, float]:
    eps = check_range("target_epsilon", target_epsilon, 0.0, math.inf, low_open=True,
                      high_open=True)
    return eps, check_delta(delta)


class _Search:
    """Counts evaluations (and reports them as progress) and remembers each evaluated campaign's ε."""

    def __init__(self, build: Callable[[float], Campaign], target_epsilon: float, delta: float,
                 reporter: ProgressReporter) -> None:
        self.build, self.target, self.delta, self.reporter = build, target_epsilon, delta, reporter
        self.evaluations = 0
        self.epsilons: dict[float, float] = {}

    def epsilon(self, value: float) -> float:
        """The campaign's certified ε at ``value`` (composed once per value)."""
        if value not in self.epsilons:  # evaluated already (e.g. a bracket's end probed again)
            self.evaluations += 1
            self.reporter.tick()
            self.epsilons[value] = self.build(value).epsilon(self.delta)
        return self.epsilons[value]

    def passes(self, value: float) -> bool:
        return self.epsilon(value) <= self.target

    def result(self, value: float, largest: bool = True) -> CampaignCalibration:
        """The calibration at ``value`` (a passing value the search evaluated), the largest (or
        smallest) passing one."""
        epsilon = self.epsilon(value)
        failing = [x for x, eps in self.epsilons.items()
                   if eps > self.target and (x > value if largest else x < value)]
        nearest = (min(failing) if largest else max(failing)) if failing else None
        return CampaignCalibration(value, epsilon, self.build(value), self.evaluations, nearest)


def _largest_passing(search: _Search, start: float, floor: float, ceiling: float,
                     rtol: float, growth: float = 2.0) -> float:
    """Largest value in [floor, ceiling] that passes, to ``rtol``, by
    :func:`~dpacct_shuffle.core.search.largest_below` on the campaign's ε from ``start`` (its
    first step within a factor ``growth``); ValueError if ``floor`` fails."""
    value = largest_below(search.epsilon, search.target, start, floor=floor, ceiling=ceiling,
                          rtol=rtol, growth=growth)
    if value is None:
        raise ValueError(f"no value down to {floor!r} meets the target: the campaign already "
                         "exceeds it (e.g. its other events alone)")
    return value


def largest_campaign_epsilon0(family: Callable[[float], RandomizerDescription],
                              target_epsilon: float, delta: float, campaign: Campaign, *,
                              rtol: float = CAMPAIGN_RTOL, max_epsilon0: float = 20.0,
                              start_epsilon0: Optional[float] = None, growth: float = 2.0,
                              progress: ProgressOption = None) -> CampaignCalibration:
    """Largest ε0 such that ``campaign`` with ``family(ε0)`` as its randomizer is certified
    (target_epsilon, delta)-DP (module docstring).

    The search starts at ε0 = target_epsilon/R (basic composition: it passes for ε0-LDP families
    without other events) or at ``start_epsilon0``, and takes secant steps on the campaign's ε
    (:func:`~dpacct_shuffle.core.search.largest_below`) until a passing ε0 and a failing one lie
    within a relative ``rtol`` (``max_epsilon0`` returned if it passes); the passing one is
    returned.

    Args:
      family: ε0 ↦ randomizer (e.g. ``lambda e: randomizers.krr(e, 100)``).
      campaign: the campaign; its ``randomizer`` is replaced by ``family(ε0)``.
      growth: bound on the first step's factor from the start, > 1 (default 2): a start known to
        lie within a few percent of the answer (a previous calibration) warrants a smaller one.
      progress: as in :mod:`dpacct_shuffle.progress`, counting composed campaigns.
    """
    eps, target = _check_target(target_epsilon, delta)
    tolerance = check_range("rtol", rtol, 0.0, 1.0, low_open=True, high_open=True)
    ceiling = check_range("max_epsilon0", max_epsilon0, MIN_EPSILON0, MAX_EPSILON0)
    factor = check_range("growth", growth, 1.0, math.inf, low_open=True, high_open=True)
    if not callable(family):
        raise TypeError(f"family must be callable epsilon0 -> randomizer, got "
                        f"{type(family).__name__}")
    if not isinstance(campaign, Campaign):
        raise TypeError(f"campaign must be a Campaign, got {type(campaign).__name__}")

    def build(epsilon0: float) -> Campaign:
        return dataclasses.replace(campaign, randomizer=family(epsilon0))

    with ProgressReporter(None, "calibrate campaign", progress, unit="campaign") as reporter:
        search = _Search(build, eps, target, reporter)
        first = eps / campaign.rounds if start_epsilon0 is None else start_epsilon0
        start = min(ceiling, max(MIN_EPSILON0, first))
        value = _largest_passing(search, start, MIN_EPSILON0, ceiling, tolerance, factor)
    return search.result(value)


def smallest_campaign_noise(family: Callable[[float], Campaign], target_epsilon: float,
                            delta: float, *, rtol: float = CAMPAIGN_RTOL, start: float = 1.0,
                            max_noise: float = 1e6, min_noise: float = 1e-3,
                            progress: ProgressOption = None) -> CampaignCalibration:
    """Smallest noise σ ∈ [min_noise, max_noise] such that ``family(σ)`` is certified
    (target_epsilon, delta)-DP: the largest 1/σ passing, searched like
    :func:`largest_campaign_epsilon0` from ``start``.

    ``family``: σ ↦ Campaign, e.g. ``lambda s: Campaign(randomizers.gaussian(s), n, R)`` or a
    campaign whose ``other_event`` holds DP-SGD steps with noise multiplier σ. ValueError if even
    ``max_noise`` fails.
    """
    eps, target = _check_target(target_epsilon, delta)
    tolerance = check_range("rtol", rtol, 0.0, 1.0, low_open=True, high_open=True)
    low_noise = check_range("min_noise", min_noise, 0.0, math.inf, low_open=True, high_open=True)
    high_noise = check_range("max_noise", max_noise, low_noise, math.inf, low_open=True,
                             high_open=True)
    first = check_range("start", start, low_noise, high_noise)
    if not callable(family):
        raise TypeError(f"family must be callable sigma -> Campaign, got {type(family).__name__}")

    def build(inverse: float) -> Campaign:
        return family(1.0 / inverse)

    with ProgressReporter(None, "calibrate campaign", progress, unit="campaign") as reporter:
        search = _Search(build, eps, target, reporter)
        inverse = _largest_passing(search, 1.0 / first, 1.0 / high_noise, 1.0 / low_noise,
                                   tolerance)
    result = search.result(inverse)
    failing = None if result.failing_value is None else 1.0 / result.failing_value
    return dataclasses.replace(result, value=1.0 / inverse, failing_value=failing)


def _smallest_true(holds: Callable[[int], bool], first: int, ceiling: int, what: str) -> int:
    """Smallest k in [1, ceiling] with ``holds(k)``, for ``holds`` false then true: from ``first``
    bisect down if it holds, else double up to ``ceiling`` (ValueError if it never holds) and
    bisect."""
    if holds(first):
        return smallest_true_integer(holds, 1, first)
    expanded = expand_bracket(lambda k: not holds(k), first, min(2 * first, ceiling),
                              ceiling=ceiling)
    if expanded is None:
        raise ValueError(f"no {what} up to {ceiling} meets the target")
    low, high = expanded
    return smallest_true_integer(holds, low + 1, high)


def smallest_campaign_users(campaign: Campaign, target_epsilon: float, delta: float, *,
                            max_users: int = 10**10,
                            progress: ProgressOption = None) -> CampaignCalibration:
    """Smallest ``num_users`` (the population, when sampled) for which ``campaign`` is certified
    (target_epsilon, delta)-DP: doubling from the campaign's own n, then integer bisection; the
    result passes and one user fewer fails. A cohort's ``sample_size`` stays fixed (n ≥ m)."""
    eps, target = _check_target(target_epsilon, delta)
    ceiling = check_num_users(max_users, "max_users")
    floor = campaign.sample_size or 1

    def build(users: float) -> Campaign:
        return dataclasses.replace(campaign, num_users=int(users))

    with ProgressReporter(None, "calibrate campaign", progress, unit="campaign") as reporter:
        search = _Search(build, eps, target, reporter)

        def passes(users: int) -> bool:
            return users >= floor and search.passes(users)

        users = _smallest_true(passes, max(floor, campaign.num_users), ceiling, "number of users")
    return search.result(users, largest=False)


def largest_campaign_rounds(campaign: Campaign, target_epsilon: float, delta: float, *,
                            max_rounds: int = 10**6,
                            progress: ProgressOption = None) -> CampaignCalibration:
    """Largest R for which ``campaign`` is certified (target_epsilon, delta)-DP (the campaign's ε
    grows with R); ValueError if one round already fails."""
    eps, target = _check_target(target_epsilon, delta)
    ceiling = check_num_users(max_rounds, "max_rounds")

    def build(rounds: float) -> Campaign:
        return dataclasses.replace(campaign, rounds=int(rounds))

    with ProgressReporter(None, "calibrate campaign", progress, unit="campaign") as reporter:
        search = _Search(build, eps, target, reporter)
        if not search.passes(1):
            raise ValueError("one round already exceeds the target: no number of rounds meets it")
        # smallest R that fails, minus one
        fails = _smallest_true(lambda r: r > ceiling or not search.passes(r),
                               max(2, campaign.rounds), ceiling + 1, "number of rounds")
    return search.result(fails - 1)


__all__ = ["CAMPAIGN_RTOL", "Campaign", "CampaignCalibration", "largest_campaign_epsilon0",
           "largest_campaign_rounds", "smallest_campaign_noise", "smallest_campaign_users"]
