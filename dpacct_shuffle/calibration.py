"""Local-side calibration: the largest ε0, or the smallest number of users, for a shuffled target.

Both searches test the certified shuffled bound at the *target* point: a candidate passes when the
upper bound δ_upper(ε_target) of one shuffle round, the canonical
:func:`dpacct_shuffle.shuffle_round.round_delta`, is ≤ δ_target (docs/theory.md, "Neutral-aware
bound"; for a catalog Randomizer the maximum over its cover lowered by its fallbacks, see
:mod:`dpacct_shuffle.randomizers.cover_rule`). Every value returned has passed that test, so the
shuffled protocol is (ε_target, δ_target)-DP (replace-one neighbours) whatever the shape of the bound;
"largest"/"smallest" hold up to the tolerance if the bound is monotone in ε0 (resp. non-increasing
in n).

With ``sampling_probability`` γ the round is client-sampled: ``n`` is the population, each user
takes part with probability γ, under replace-one or, for sampled rounds only, add/remove-one
neighbours. With ``sample_size`` m the round is a fixed-size cohort: exactly m of the ``n`` users
are drawn uniformly without replacement and their reports shuffled (replace-one). Both are the
sampled rounds of :func:`~dpacct_shuffle.shuffle_round.round_delta`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from dpacct_shuffle.core.bound import MAX_EVALUATED_USERS, VariationRatio
from dpacct_shuffle.core.search import bisect, expand_bracket, smallest_true_integer
from dpacct_shuffle.core.validation import check_delta, check_num_users, check_range
from dpacct_shuffle.progress import ProgressOption, ProgressReporter
from dpacct_shuffle.randomizers.base import Randomizer
from dpacct_shuffle.sampling import NeighborRel
from dpacct_shuffle.shuffle_round import round_delta, round_epsilon


def shuffled_delta(randomizer: Randomizer | VariationRatio, epsilon: float, n: int,
                   sampling_probability: float | None = None,
                   neighboring_relation: NeighborRel = NeighborRel.REPLACE_ONE,
                   sample_size: int | None = None) -> float:
    """Certified upper bound on δ(ε) of one shuffle round of ``n`` users: an alias of the
    canonical :func:`dpacct_shuffle.shuffle_round.round_delta` (``round_delta(randomizer, n,
    epsilon, sampling_probability=..., sample_size=..., neighboring_relation=...)``), whose
    docstring describes the arguments (``n`` is the population of a sampled round)."""
    return round_delta(randomizer, n, epsilon, sampling_probability=sampling_probability,
                       sample_size=sample_size, neighboring_relation=neighboring_relation)


def _meets(randomizer: Randomizer | VariationRatio, epsilon: float, delta: float, n: int,
           sampling: tuple[float | None, NeighborRel, int | None]) -> bool:
    gamma, relation, size = sampling
    return round_delta(randomizer, n, epsilon, sampling_probability=gamma, sample_size=size,
                       neighboring_relation=relation) <= delta


def largest_epsilon0(family: Callable[..., Randomizer | VariationRatio], target_epsilon: float,
                     delta: float, n: int, *, max_epsilon0: float = 20.0, rtol: float = 1e-3,
                     sampling_probability: float | None = None,
                     neighboring_relation: NeighborRel = NeighborRel.REPLACE_ONE,
                     sample_size: int | None = None,
                     **family_kwargs: object) -> float:
    """Largest local ε0 such that ``family(ε0, **family_kwargs)`` shuffled among ``n`` users is
    (target_epsilon, delta)-DP.

    Bisection on ε0 ∈ [target_epsilon, max_epsilon0]. The lower end always passes: the shuffled
    output is a post-processing of the victim's ε0-LDP report, so δ(ε) = 0 for ε ≥ ε0 (the core's
    cap). The returned ε0 passes the certified test; ε0·(1 + rtol) fails it (unless ``max_epsilon0``
    is returned, which means every ε0 up to it passes).

    Args:
      family: ``epsilon0, **family_kwargs -> Randomizer | VariationRatio``, e.g.
        ``randomizers.krr`` (with ``domain_size=…``) or ``VariationRatio.worst_case``.
      target_epsilon: ε of the shuffled round, > 0.
      delta: δ of the shuffled round, in (0, 1).
      n: number of users shuffled together, ≥ 1.
      max_epsilon0: search ceiling (> target_epsilon).
      rtol: relative width of the final bracket, in (0, 1).
      sampling_probability: as in :func:`~dpacct_shuffle.shuffle_round.round_delta` (``n`` is
        then the population).
      neighboring_relation: as in :func:`~dpacct_shuffle.shuffle_round.round_delta`. Under
        add/remove-one the sampled round's δ does not vanish at ε0, so the search starts at the
        smallest ε0 tried and raises ValueError if even that fails.
      sample_size: as in :func:`~dpacct_shuffle.shuffle_round.round_delta` (a cohort of m of the
        ``n`` users).
    """
    eps = check_range("target_epsilon", target_epsilon, 0.0, math.inf, low_open=True,
                      high_open=True)
    target = check_delta(delta)
    users = check_num_users(n, "n")
    ceiling = check_range("max_epsilon0", max_epsilon0, eps, math.inf, low_open=True,
                          high_open=True)
    tolerance = check_range("rtol", rtol, 0.0, 1.0, low_open=True, high_open=True)
    if not callable(family):
        raise TypeError(f"family must be callable (epsilon0, **kwargs) -> randomizer, got "
                        f"{type(family).__name__}")

    sampling = (sampling_probability, neighboring_relation, sample_size)

    refusals: list[ValueError] = []

    def passes(epsilon0: float) -> bool:
        # an ε0 the family refuses (outside its range) is infeasible, not an error of the search
        try:
            candidate = family(epsilon0, **family_kwargs)
        except ValueError as exc:
            refusals.append(exc)
            return False
        return _meets(candidate, eps, target, users, sampling)

    if not passes(eps):
        if refusals:
            raise ValueError(f"epsilon0 = target_epsilon = {eps!r} is refused by the family: "
                             f"{refusals[-1]}") from refusals[-1]
        raise ValueError(f"epsilon0 = target_epsilon = {eps!r} already fails: the round's bound "
                         "does not vanish at epsilon >= epsilon0 (for this family, or because an "
                         "add/remove-one sampled round has no such cap)")
    bracket = expand_bracket(passes, eps, min(2.0 * eps, ceiling), ceiling=ceiling)
    if bracket is None:
        return ceiling
    low, high = bracket
    return bisect(passes, low, high, rtol=tolerance)


@dataclass(frozen=True)
class Epsilon0Calibration:
    """Result of :func:`calibrate_epsilon0`.

    Attributes:
      epsilon0: the largest ε0 found (it passes the certified test δ_upper(ε_target) ≤ δ).
      epsilon_upper: the certified upper bound on ε(δ) of the shuffled round at that ε0
        (≤ the target ε, up to the ε search's tolerance).
    """

    epsilon0: float
    epsilon_upper: float


def calibrate_epsilon0(family: Callable[[float], Randomizer], target_epsilon: float, delta: float,
                       n: int, *, max_epsilon0: float = 20.0, rtol: float = 1e-3,
                       progress: ProgressOption = None) -> Epsilon0Calibration:
    """:func:`largest_epsilon0` of ``family`` (ε0 -> Randomizer, every user reports) together with
    the certified ε(δ) of the shuffled round at the result.

    ``progress``: ``True`` shows a tqdm bar counting the evaluations of ``family`` during the
    search, a callback ``progress(done, done)`` is called after each (:mod:`dpacct_shuffle.progress`).
    """
    with ProgressReporter(None, "calibrate", progress, unit="evaluation") as reporter:
        def counted(epsilon0: float) -> Randomizer:
            reporter.tick()
            return family(epsilon0)

        epsilon0 = largest_epsilon0(counted, target_epsilon, delta, n, max_epsilon0=max_epsilon0,
                                    rtol=rtol)
    return Epsilon0Calibration(epsilon0, round_epsilon(family(epsilon0), n, delta))


def smallest_num_users(randomizer: Randomizer | VariationRatio, target_epsilon: float,
                       delta: float, *, max_users: int = MAX_EVALUATED_USERS,
                       sampling_probability: float | None = None,
                       neighboring_relation: NeighborRel = NeighborRel.REPLACE_ONE) -> int:
    """Smallest n such that one shuffle round of ``n`` users of ``randomizer`` is
    (target_epsilon, delta)-DP.

    Doubling, then integer bisection (the bound is non-increasing in n). The returned n passes the
    certified test and n − 1 fails it; 1 if the randomizer alone already meets the target
    (ε0 ≤ target_epsilon). With ``sampling_probability`` γ, n is the population of a
    client-sampled round (:func:`~dpacct_shuffle.shuffle_round.round_delta`; the void-view bound
    is non-increasing in n).

    Raises:
      ValueError: no n ≤ ``max_users`` meets the target.
    """
    eps = check_range("target_epsilon", target_epsilon, 0.0, math.inf, low_open=True,
                      high_open=True)
    target = check_delta(delta)
    ceiling = check_num_users(max_users, "max_users")
    sampling = (sampling_probability, neighboring_relation, None)
    if _meets(randomizer, eps, target, 1, sampling):  # type and relation checked before the search
        return 1

    def meets(users: int) -> bool:
        return _meets(randomizer, eps, target, users, sampling)

    bracket = expand_bracket(lambda users: not meets(users), 1, 2, ceiling=ceiling)
    if bracket is None:
        raise ValueError(f"no number of users up to max_users={ceiling} makes {randomizer!r} "
                         f"({eps!r}, {target!r})-DP")
    low, high = bracket
    return smallest_true_integer(meets, low + 1, high)


__all__ = ["Epsilon0Calibration", "calibrate_epsilon0", "largest_epsilon0", "shuffled_delta",
           "smallest_num_users"]
