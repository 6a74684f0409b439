"""Plan a deployment: calibrate every applicable catalog randomizer for a campaign and rank them by
the accuracy each buys.

For a campaign (:class:`~dpacct_shuffle.campaign.Campaign`: R rounds over n users, optionally
sampled) and a total target (ε, δ), each candidate randomizer gets its own largest per-report ε0
(:func:`~dpacct_shuffle.campaign.largest_campaign_epsilon0`: certified through
``ShufflePLDAccountant``), and the plans are ranked by the standard deviation of one round's
estimate (:mod:`dpacct_shuffle.accuracy`):

* :func:`plan_frequency` — frequency estimation over d values: ``krr``, ``rappor``,
  ``optimized_unary_encoding``, ``local_hashing`` (hash range l = round(e^ε0) + 1, the optimum of
  Wang et al., USENIX Security 2017, Section 4.4), ``hadamard_response`` (one block of K outputs,
  the smallest power of two above d) and ``subset_selection`` (k = round(d/(e^ε0 + 1)), Ye & Barg
  2018), ranked by the std of f̂_v for an item of true frequency 0;
* :func:`plan_mean` — the mean of values in [a, b]: ``laplace``, ``piecewise``, ``duchi``, ranked by
  the std of the mean estimate at the worst input. Harmony on one coordinate is Duchi's mechanism
  (the same report law, variation-ratio parameters and variance), so it is not listed twice. The
  Gaussian report has no ε0 to calibrate — its noise is calibrated, by
  :func:`~dpacct_shuffle.campaign.smallest_campaign_noise` — and a campaign of its blanket bound
  takes seconds to tens of seconds to compose, so it is calibrated on its own.

Entries whose shape depends on ε0 (local hashing's l, subset selection's k) are calibrated twice:
first with the shape tuned at every ε0 tried, then with the shape of that result fixed (so the
plan's ε0 is near-largest for the randomizer it returns; the first result passes with that shape,
so the second search starts from a passing value) — unless the first search's failing end has
the same shape, when its final bracket already is one of the fixed-shape family.

Accounting. By default each candidate is accounted through its cover — the variation-ratio pair
bounds every catalog entry is built on (:class:`~dpacct_shuffle.randomizers.Randomizer`'s
``cover``), a valid upper bound for it — without the entries' fallback bounds (multi-level bounds,
exact binary-RR curves): those are tighter for some entries but a round's PLD evaluates them at
about a hundred points, at up to seconds each (at n = 10⁵, R = 100, ε0 = 3.7: k-RR's fallback
gives the same ε as its cover; RAPPOR's took minutes for one campaign, with the same ε as the
cover to five digits). ``fallbacks=True`` accounts the catalog randomizer itself. Either way every reported ε is certified by ``ShufflePLDAccountant`` for the randomizer
returned, and its ε0 is near-largest for the bound used.

The ranking at a common ε0 (the smallest of the calibrated ε0, which every candidate affords) is
reported beside it: the local-DP ranking and the shuffle-model ranking at a fixed total budget
often differ (a randomizer whose shuffled bound amplifies more gets a larger ε0).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Optional

from dpacct_shuffle import randomizers
from dpacct_shuffle.accuracy import frequency_std, mean_std
from dpacct_shuffle.campaign import Campaign, largest_campaign_epsilon0
from dpacct_shuffle.core.validation import check_range
from dpacct_shuffle.progress import ProgressOption, ProgressReporter
from dpacct_shuffle.randomizers.base import Randomizer
from dpacct_shuffle.randomizers.catalog import ALIASES
from dpacct_shuffle.sampling import NeighborRel

Shape = dict[str, int]

#: Relative width of each ε0 search's final bracket: 1.02·ε0 lies beyond its failing end.
PLAN_RTOL = 1e-2
#: First step of a search started from another candidate's ε0 (they are alike).
NEIGHBOUR_GROWTH = 1.25


@dataclass(frozen=True)
class Candidate:
    """A catalog randomizer to calibrate: ``build(ε0, shape)``; ``tune(ε0)`` gives the shape
    (discrete parameters) best at ε0 — empty for entries without one."""

    name: str
    build: Callable[[float, Shape], Randomizer]
    tune: Callable[[float], Shape]


def _no_shape(epsilon0: float) -> Shape:
    return {}


def _hash_range(epsilon0: float) -> Shape:
    return {"hash_range": max(2, int(round(math.exp(epsilon0))) + 1)}


def frequency_candidates(domain_size: int) -> list[Candidate]:
    """The catalog frequency oracles applicable to ``domain_size`` values (module docstring)."""
    d = int(domain_size)
    outputs = max(4, 1 << d.bit_length())  # smallest power of two > d, at least 4

    def subset_size(epsilon0: float) -> Shape:
        return {"subset_size": min(d - 1, max(1, int(round(d / (math.exp(epsilon0) + 1.0)))))}

    candidates = [
        Candidate("krr", lambda e, s: randomizers.krr(e, d), _no_shape),
        Candidate("rappor", lambda e, s: randomizers.rappor(e, d), _no_shape),
        Candidate("optimized_unary_encoding",
                  lambda e, s: randomizers.optimized_unary_encoding(e, d), _no_shape),
        # after OUE: its cover is OUE's first variation ratio, so its search starts where OUE's
        # pair curve is cached (core.batched caches curves by variation ratio)
        Candidate("hadamard_response",
                  lambda e, s: randomizers.hadamard_response(e, outputs, domain_size=d), _no_shape),
        Candidate("local_hashing",
                  lambda e, s: randomizers.local_hashing(e, s["hash_range"], d), _hash_range),
    ]
    if d >= 3:
        candidates.append(Candidate(
            "subset_selection",
            lambda e, s: randomizers.subset_selection(e, d, s["subset_size"]), subset_size))
    return candidates


def mean_candidates() -> list[Candidate]:
    """The numeric catalog randomizers for the mean of a scalar (module docstring)."""
    return [Candidate("laplace", lambda e, s: randomizers.laplace(e), _no_shape),
            Candidate("piecewise", lambda e, s: randomizers.piecewise(e), _no_shape),
            Candidate("duchi", lambda e, s: randomizers.duchi(e), _no_shape)]


@dataclass(frozen=True)
class Plan:
    """One calibrated randomizer.

    Attributes:
      randomizer: the calibrated catalog randomizer.
      epsilon0: its per-report ε0 (the largest meeting the target, to the search's tolerance).
      epsilon: the certified campaign ε at the target δ.
      std: standard deviation of one round's estimate (frequency 0, or the mean's worst input).
      common_std: the same at the common ε0 of :class:`PlanResult`.
      evaluations: campaigns composed by its calibration.
    """

    randomizer: Randomizer
    epsilon0: float
    epsilon: float
    std: float
    common_std: float
    evaluations: int


@dataclass(frozen=True)
class PlanResult:
    """Plans best first (smallest ``std``), the common ε0 and whether ranking by ``common_std``
    orders them differently."""

    plans: tuple[Plan, ...]
    common_epsilon0: float
    ranking_differs: bool
    target_epsilon: float
    delta: float
    campaign: Campaign

    @property
    def common_ranking(self) -> tuple[Plan, ...]:
        """The plans ranked by their std at the common ε0."""
        return tuple(sorted(self.plans, key=lambda plan: plan.common_std))


def cover_only(randomizer: Randomizer) -> Randomizer:
    """``randomizer``'s cover alone (its variation-ratio pair bounds, no fallbacks): a valid upper
    bound of the same mechanism (module docstring, "Accounting")."""
    return Randomizer(randomizer.name, randomizer.parameters, randomizer.cover,
                      variation_ratio=randomizer.variation_ratio)


def _calibrate(candidate: Candidate, target_epsilon: float, delta: float, campaign: Campaign,
               rtol: float, fallbacks: bool,
               start: Optional[float]) -> tuple[Randomizer, float, float, int]:
    """(randomizer, ε0, certified ε, evaluations) of one candidate (two stages if it has a shape),
    the search starting at ``start`` (None: ε/R, first step at most ×2; else at most
    ×:data:`NEIGHBOUR_GROWTH`). The second stage (only if the first's final bracket changes the
    shape) starts at the first's result, which passes with the shape fixed (the same randomizer),
    with a first step of at most 3·rtol: the fixed-shape optimum lies within a few percent of it."""
    accounted: Callable[[Randomizer], Randomizer] = (
        (lambda randomizer: randomizer) if fallbacks else cover_only)
    first = largest_campaign_epsilon0(lambda e: accounted(candidate.build(e, candidate.tune(e))),
                                      target_epsilon, delta, campaign, rtol=rtol,
                                      start_epsilon0=start,
                                      growth=2.0 if start is None else NEIGHBOUR_GROWTH)
    shape = candidate.tune(first.value)
    if not shape or (first.failing_value is not None
                     and candidate.tune(first.failing_value) == shape):
        # no shape, or the same shape at both ends of the first search's final bracket: that
        # bracket is one of the fixed-shape family too
        return (candidate.build(first.value, shape), first.value, first.epsilon,
                first.evaluations)
    fixed = largest_campaign_epsilon0(lambda e: accounted(candidate.build(e, shape)),
                                      target_epsilon, delta, campaign, rtol=rtol,
                                      start_epsilon0=first.value, growth=1.0 + 3.0 * rtol)
    return (candidate.build(fixed.value, shape), fixed.value, fixed.epsilon,
            first.evaluations + fixed.evaluations)


def _plan(candidates: Sequence[Candidate], std: Callable[[Randomizer], float],
          target_epsilon: float, delta: float, campaign: Campaign, rtol: float, fallbacks: bool,
          progress: ProgressOption) -> PlanResult:
    calibrated: list[tuple[Randomizer, float, float, int]] = []
    with ProgressReporter(len(candidates), "plan", progress, unit="randomizer") as reporter:
        for candidate in candidates:
            # each search starts from the previous candidate's ε0 (they are alike): a few
            # evaluations bracket it instead of stepping up from ε/R
            start = calibrated[-1][1] if calibrated else None
            calibrated.append(_calibrate(candidate, target_epsilon, delta, campaign, rtol,
                                         fallbacks, start))
            reporter.tick()
    common = min(epsilon0 for _, epsilon0, _, _ in calibrated)
    plans = []
    for (randomizer, epsilon0, epsilon, evaluations), candidate in zip(calibrated, candidates):
        at_common = candidate.build(common, candidate.tune(common))
        plans.append(Plan(randomizer, epsilon0, epsilon, std(randomizer), std(at_common),
                          evaluations))
    ranked = tuple(sorted(plans, key=lambda plan: plan.std))
    by_common = tuple(sorted(plans, key=lambda plan: plan.common_std))
    differs = [p.randomizer.name for p in ranked] != [p.randomizer.name for p in by_common]
    return PlanResult(ranked, common, differs, target_epsilon, delta, campaign)


def _campaign(num_users: int, rounds: int, sampling_probability: Optional[float],
              sample_size: Optional[int], neighboring_relation: NeighborRel) -> Campaign:
    return Campaign(randomizers.krr(1.0, 2), num_users, rounds,
                    sampling_probability=sampling_probability, sample_size=sample_size,
                    neighboring_relation=neighboring_relation)


def plan_frequency(domain_size: int, num_users: int, rounds: int, target_epsilon: float,
                   delta: float, *, sampling_probability: Optional[float] = None,
                   sample_size: Optional[int] = None,
                   neighboring_relation: NeighborRel = NeighborRel.REPLACE_ONE,
                   candidates: Optional[Sequence[str]] = None, rtol: float = PLAN_RTOL,
                   fallbacks: bool = False, progress: ProgressOption = None) -> PlanResult:
    """Calibrate every frequency oracle of :func:`frequency_candidates` (or the ``candidates``
    named) for the campaign and rank them by the std of one round's estimate of an item of true
    frequency 0 (:func:`dpacct_shuffle.accuracy.frequency_std`, with the campaign's sampling).

    Args:
      domain_size: d ≥ 2.
      num_users: users per round (the population when sampled), as in
        :class:`~dpacct_shuffle.campaign.Campaign`.
      rounds: R, identical rounds.
      target_epsilon: the total ε.
      delta: the total δ.
      sampling_probability: γ, Poisson sampling (see :class:`~dpacct_shuffle.campaign.Campaign`).
      sample_size: m, a fixed-size cohort.
      neighboring_relation: as in :class:`~dpacct_shuffle.campaign.Campaign`.
      candidates: names among :func:`frequency_candidates` or their catalog aliases (e.g.
        ``oue``; default: all).
      fallbacks: account the catalog randomizers with their fallback bounds (module docstring,
        "Accounting"); default: their cover only.
      progress: a bar over the candidates (:mod:`dpacct_shuffle.progress`).
    """
    d = check_range("domain_size", domain_size, 2, math.inf, high_open=True)
    if d != int(d):
        raise ValueError(f"domain_size must be an integer >= 2, got {domain_size!r}")
    campaign = _campaign(num_users, rounds, sampling_probability, sample_size,
                         neighboring_relation)
    chosen = _choose(frequency_candidates(int(d)), candidates)

    def std(randomizer: Randomizer) -> float:
        return frequency_std(randomizer, campaign.num_users, 0.0,
                             sampling_probability=campaign.sampling_probability,
                             sample_size=campaign.sample_size)

    return _plan(chosen, std, target_epsilon, delta, campaign, rtol, fallbacks, progress)


def plan_mean(value_range: tuple[float, float], num_users: int, rounds: int,
              target_epsilon: float, delta: float, *, sampling_probability: Optional[float] = None,
              sample_size: Optional[int] = None,
              neighboring_relation: NeighborRel = NeighborRel.REPLACE_ONE,
              candidates: Optional[Sequence[str]] = None, rtol: float = PLAN_RTOL,
              fallbacks: bool = False, progress: ProgressOption = None) -> PlanResult:
    """Calibrate the numeric randomizers of :func:`mean_candidates` for the campaign and rank them
    by the std of one round's mean estimate of values in ``value_range`` = (a, b) at the worst
    input (:func:`dpacct_shuffle.accuracy.mean_std`); arguments as :func:`plan_frequency`."""
    if (not isinstance(value_range, Sequence) or len(value_range) != 2):
        raise TypeError(f"value_range must be a pair (a, b), got {value_range!r}")
    low = check_range("value_range[0]", value_range[0], -math.inf, math.inf, low_open=True,
                      high_open=True)
    high = check_range("value_range[1]", value_range[1], low, math.inf, low_open=True,
                       high_open=True)
    campaign = _campaign(num_users, rounds, sampling_probability, sample_size,
                         neighboring_relation)
    chosen = _choose(mean_candidates(), candidates)

    def std(randomizer: Randomizer) -> float:
        return mean_std(randomizer, campaign.num_users, value_range=(low, high),
                        sampling_probability=campaign.sampling_probability,
                        sample_size=campaign.sample_size)

    return _plan(chosen, std, target_epsilon, delta, campaign, rtol, fallbacks, progress)


def _choose(available: list[Candidate], names: Optional[Sequence[str]]) -> list[Candidate]:
    if names is None:
        return available
    known = {candidate.name: candidate for candidate in available}
    canonical = [ALIASES.get(name, name) if isinstance(name, str) else name for name in names]
    unknown = [name for name in canonical if name not in known]
    if unknown or not names:
        raise ValueError(f"candidates must be names among {sorted(known)} (or their aliases), "
                         f"got {list(names)!r}")
    return [known[name] for name in canonical]


__all__ = ["NEIGHBOUR_GROWTH", "PLAN_RTOL", "Candidate", "Plan", "PlanResult", "cover_only", "frequency_candidates", "mean_candidates",
           "plan_frequency", "plan_mean"]
