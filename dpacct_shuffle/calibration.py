"""Local-side calibration: the largest ε0, or the smallest number of users, for a shuffled target.

Both searches test the certified shuffled bound at the *target* point: a candidate passes when the
upper bound δ_upper(ε_target) of one shuffle round is ≤ δ_target (docs/theory.md, "Neutral-aware
bound"; for a catalog Randomizer the maximum over its cover, see
:mod:`dpacct_shuffle.randomizers.base`). Every value returned has passed that test, so the shuffled
protocol is (ε_target, δ_target)-DP (replace-one neighbours) whatever the shape of the bound;
"largest"/"smallest" hold up to the tolerance if the bound is monotone in ε0 (resp. non-increasing
in n).

With ``sampling_probability`` γ the round is client-sampled: ``n`` is the population, each user
takes part with probability γ, and the test uses the sampled round's bound
(:func:`dpacct_shuffle.sampling.poisson_sampled_profile`), under replace-one or, for sampled
rounds only, add/remove-one neighbours. With ``sample_size`` m the round is a fixed-size cohort:
exactly m of the ``n`` users are drawn uniformly without replacement and their reports shuffled
(:func:`dpacct_shuffle.without_replacement.shuffled_cohort_profile`, replace-one).
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
from dpacct_shuffle.sampling import NeighborRel, check_sampling_probability, poisson_sampled_profile
from dpacct_shuffle.without_replacement import shuffled_cohort_profile


def shuffled_delta(randomizer: Randomizer | VariationRatio, epsilon: float, n: int,
                   sampling_probability: float | None = None,
                   neighboring_relation: NeighborRel = NeighborRel.REPLACE_ONE,
                   sample_size: int | None = None) -> float:
    """Certified upper bound on δ(ε) of one shuffle round of ``n`` users.

    Args:
      randomizer: a catalog :class:`~dpacct_shuffle.randomizers.Randomizer` (its
        ``shuffled(n).delta``) or a :class:`~dpacct_shuffle.VariationRatio` (its ``delta``).
      sampling_probability: None (every user reports), or γ ∈ [0, 1]: a Poisson-sampled round
        from a population of ``n`` (:func:`~dpacct_shuffle.sampling.poisson_sampled_profile`).
      neighboring_relation: ``REPLACE_ONE``; ``ADD_OR_REMOVE_ONE`` for a sampled round only (an
        unsampled round's report count reveals whether the victim is present).
      sample_size: None, or m ∈ [1, n]: a cohort of exactly m of the ``n`` users, replace-one
        (:func:`~dpacct_shuffle.without_replacement.shuffled_cohort_profile`); not together with
        ``sampling_probability``.
    """
    if not isinstance(randomizer, (Randomizer, VariationRatio)):
        raise TypeError("randomizer must be a dpacct_shuffle Randomizer or VariationRatio, got "
                        f"{type(randomizer).__name__}")
    if sample_size is not None:
        if sampling_probability is not None:
            raise ValueError("give sampling_probability (Poisson sampling) or sample_size (a "
                             "fixed-size cohort), not both")
        if neighboring_relation is not NeighborRel.REPLACE_ONE:
            raise ValueError("a fixed-size cohort (sample_size) has a guarantee for REPLACE_ONE "
                             f"only, got {neighboring_relation!r}")
        return shuffled_cohort_profile(randomizer, sample_size, n).delta(epsilon)
    if sampling_probability is not None:
        gamma = check_sampling_probability(sampling_probability)
        return poisson_sampled_profile(randomizer, n, gamma,
                                       neighboring_relation=neighboring_relation).delta(epsilon)
    if neighboring_relation is not NeighborRel.REPLACE_ONE:
        raise ValueError("an unsampled shuffle round has a guarantee for REPLACE_ONE only (its "
                         "report count reveals whether the victim is present); give "
                         f"sampling_probability for add/remove-one, got {neighboring_relation!r}")
    if isinstance(randomizer, Randomizer):
        return randomizer.shuffled(n).delta(epsilon)
    if isinstance(randomizer, VariationRatio):
        return randomizer.delta(epsilon, n)
    raise TypeError("randomizer must be a dpacct_shuffle Randomizer or VariationRatio, got "
                    f"{type(randomizer).__name__}")


def _meets(randomizer: Randomizer | VariationRatio, epsilon: float, delta: float, n: int,
           sampling: tuple[float | None, NeighborRel, int | None]) -> bool:
    return shuffled_delta(randomizer, epsilon, n, *sampling) <= delta


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
      sampling_probability: as in :func:`shuffled_delta` (``n`` is then the population).
      neighboring_relation: as in :func:`shuffled_delta`. Under add/remove-one the sampled
        round's δ does not vanish at ε0, so the search starts at the smallest ε0 tried and raises
        ValueError if even that fails.
      sample_size: as in :func:`shuffled_delta` (a cohort of m of the ``n`` users).
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
    return Epsilon0Calibration(epsilon0, family(epsilon0).shuffled(n).epsilon(delta))


def smallest_num_users(randomizer: Randomizer | VariationRatio, target_epsilon: float,
                       delta: float, *, max_users: int = MAX_EVALUATED_USERS,
                       sampling_probability: float | None = None,
                       neighboring_relation: NeighborRel = NeighborRel.REPLACE_ONE) -> int:
    """Smallest n such that one shuffle round of ``n`` users of ``randomizer`` is
    (target_epsilon, delta)-DP.

    Doubling, then integer bisection (the bound is non-increasing in n). The returned n passes the
    certified test and n − 1 fails it; 1 if the randomizer alone already meets the target
    (ε0 ≤ target_epsilon). With ``sampling_probability`` γ, n is the population of a
    client-sampled round (:func:`shuffled_delta`; the void-view bound is non-increasing in n).

    Raises:
      ValueError: no n ≤ ``max_users`` meets the target.
    """
    eps = check_range("target_epsilon", target_epsilon, 0.0, math.inf, low_open=True,
                      high_open=True)
    target = check_delta(delta)
    ceiling = check_num_users(max_users, "max_users")
    sampling = (sampling_probability, neighboring_relation, None)
    shuffled_delta(randomizer, eps, 1, *sampling)  # type and relation checks before the search
    if _meets(randomizer, eps, target, 1, sampling):
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
