"""Profiles of a Poisson-sampled round: :func:`poisson_sampled_profile` (replace-one or
add/remove-one) and the cheap void view alone (:func:`void_view_profile`).

"The module docstring" below is that of the package, :mod:`dpacct_shuffle.sampling`
(the void view, floating point, robust shuffling).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dpacct_shuffle.core.batched import DEFAULT_LOWERING
from dpacct_shuffle.core.bound import VariationRatio
from dpacct_shuffle.core.validation import check_num_users, check_range
from dpacct_shuffle.profiles import (
    DEFAULT_SAMPLING_TAIL,
    ROUND_LOWERING,
    PrivacyProfile,
    RandomizerDescription,
    ShuffleBound,
    as_shuffle_bound,
    honest_users,
)
from dpacct_shuffle.randomizers.base import Randomizer
from dpacct_shuffle.randomizers.cover_rule import cover_fallback_bound
from dpacct_shuffle.randomizers.personalized import PersonalizedShuffle
from dpacct_shuffle.sampling.entry_bounds import (
    _bound_deltas,
    _min_over,
    _void_entry,
    void_matrix_randomizer,
)
from dpacct_shuffle.sampling.parameters import (
    DeltasFunction,
    FloatArray,
    NeighborRel,
    _presence_deltas,
    check_sampling_probability,
    void_variation_ratios,
)
from dpacct_shuffle.sampling.sampled_round import _SampledRound


def _void_view(randomizer: RandomizerDescription, gamma: float, lowering: float
               ) -> DeltasFunction | None:
    """δ(ε, N) of the void view alone with batched curves (:func:`void_view_profile`), None
    when the randomizer has no void form."""
    if isinstance(randomizer, VariationRatio):
        return _min_over(void_variation_ratios(randomizer, gamma), lowering)
    if isinstance(randomizer, Randomizer):
        covers = [_void_entry(e, gamma, lowering) for e in randomizer.cover]
        cover = [entry for entry in covers if entry is not None]
        if len(cover) < len(covers):
            return None
        fallbacks = [f for f in (_void_entry(e, gamma, lowering) for e in randomizer.fallbacks)
                     if f is not None]

        def randomizer_deltas(epsilons: FloatArray, n: int) -> FloatArray:
            return cover_fallback_bound(cover, fallbacks, lambda entry: entry(epsilons, n))

        return randomizer_deltas
    if not isinstance(randomizer, ShuffleBound) and hasattr(randomizer, "variation_ratio"):
        return _void_view(randomizer.variation_ratio, gamma, lowering)
    if isinstance(randomizer, Sequence) and not isinstance(randomizer, str) and randomizer:
        views = [_void_view(item, gamma, lowering) for item in randomizer]
        items = [view for view in views if view is not None]
        if len(items) < len(views):
            return None

        def sequence_deltas(epsilons: FloatArray, n: int) -> FloatArray:
            # each item covers some victim pairs: the cover rule without fallbacks
            return cover_fallback_bound(items, (), lambda item: item(epsilons, n))

        return sequence_deltas
    return None


def void_view_profile(randomizer: RandomizerDescription, num_users: int,
                      sampling_probability: float) -> PrivacyProfile | None:
    """The void view of a Poisson-sampled round (replace-one) alone, cheap at every ε.

    The same bound as the void part of :func:`poisson_sampled_profile` — N users of
    R'(x) = γ·R(x) + (1 − γ)·⊥ (:func:`void_variation_ratios`), entry by entry for a catalog
    Randomizer (max over the cover, min over the fallbacks that have a void form), and the analyzed
    void matrix (:func:`void_matrix_randomizer`) for a small matrix — with every VariationRatio
    that :func:`~dpacct_shuffle.core.batched.supports_batched_delta` accepts evaluated by its
    batched pair curve (one pass per VariationRatio for every ε; docs/theory.md, "Batched
    evaluation from the dominating pair"), the others by the core. No participant-count bound.
    None when a cover entry has no void form (e.g. an exact profile only). Used by
    :func:`dpacct_shuffle.without_replacement.shuffled_cohort_profile`, which evaluates it for
    several γ at every ε of a PLD.

    Args:
      randomizer: anything :func:`~dpacct_shuffle.profiles.as_shuffle_bound` accepts.
      num_users: the population N ≥ 1 (every user follows the protocol).
      sampling_probability: γ ∈ [0, 1].
    """
    gamma = check_sampling_probability(sampling_probability)
    population = check_num_users(num_users, "num_users")
    bound = as_shuffle_bound(randomizer)
    if gamma == 0.0:
        return PrivacyProfile(lambda epsilon: 0.0, 0.0, "poisson(0.0): nobody reports")
    view = _void_view(randomizer, gamma, DEFAULT_LOWERING)
    if view is None:
        return None
    analyzed = void_matrix_randomizer(randomizer, gamma)
    matrix = None if analyzed is None else _bound_deltas(analyzed, DEFAULT_LOWERING)

    def deltas_upper(epsilons: FloatArray) -> FloatArray:
        value = view(epsilons, population)
        if matrix is not None:
            value = np.minimum(value, matrix(epsilons, population))
        return np.minimum(1.0, value)

    def delta_upper(epsilon: float) -> float:
        return float(deltas_upper(np.array([epsilon], dtype=np.float64))[0])

    return PrivacyProfile(delta_upper, bound.epsilon0,
                          f"void_view({gamma!r}, {bound.source!r}, N={population})", deltas_upper)


def poisson_sampled_profile(randomizer: RandomizerDescription, num_users: int, sampling_probability: float,
                            honest_fraction: float = 1.0,
                            neighboring_relation: NeighborRel = NeighborRel.REPLACE_ONE,
                            tail: float = DEFAULT_SAMPLING_TAIL,
                            lowering: float | None = None) -> PrivacyProfile:
    """Profile of a shuffle round on a Poisson sample of a population of ``num_users`` users.

    Every user takes part independently with probability γ = ``sampling_probability`` and the
    participants' reports are shuffled (the server sees the reports, hence their number).

    * ``REPLACE_ONE``: the victim's input is replaced. δ(ε) = min of the void view (N = ⌊h·N⌋
      users of R'(x) = γ·R(x) + (1 − γ)·⊥, :func:`void_variation_ratios`) and the
      participant-count bound (:func:`dpacct_shuffle.profiles.poisson_sampled_shuffle_profile`),
      taken entry by entry for a catalog Randomizer; cap ε0 = ln p (the victim's local guarantee).
    * ``ADD_OR_REMOVE_ONE``: the victim is in the population or not (:func:`add_remove_variation_ratios`);
      no cap (with the victim present all N users may report, which is impossible without it).

    Args:
      randomizer: anything :func:`~dpacct_shuffle.profiles.as_shuffle_bound` accepts; add/remove
        needs VariationRatio parameters (:func:`~dpacct_shuffle.profiles.variation_ratios_of`).
      num_users: the population N (with the victim, for add/remove), ≥ 1.
      sampling_probability: γ ∈ [0, 1].
      honest_fraction: h ∈ (0, 1]: ⌊h·N⌋ users follow the protocol (module docstring).
      neighboring_relation: ``REPLACE_ONE`` or ``ADD_OR_REMOVE_ONE``.
      tail: lower-tail mass of the participant count in the participant-count bound.
      lowering: None (default): every VariationRatio is evaluated by the core point by point.
        A float η ∈ (0, 0.01]: by its batched pair curve at η wherever
        :func:`~dpacct_shuffle.core.batched.supports_batched_delta` accepts it (void candidates,
        the participant-count bound's entries, the analyzed void matrix), one curve per
        (VariationRatio, number of users) for all ε, and the profile gets an array form
        (``deltas_upper``): what the accountants use for a sampled round's PLD
        (:data:`~dpacct_shuffle.profiles.ROUND_LOWERING`). Each curve dominates the core's pair
        (docs/theory.md, "Batched evaluation from the dominating pair"), so the profile stays an
        upper bound; it is at most a few tenths of a percent looser in ε. Under
        ``ADD_OR_REMOVE_ONE`` the profile is always read from the every-ε curves of the merged
        presence pair (:func:`dpacct_shuffle.core.presence.presence_curves`, at η = ``lowering``,
        or ``ROUND_LOWERING`` when None) and has an array form.
    """
    gamma = check_sampling_probability(sampling_probability)
    population = check_num_users(num_users, "num_users")
    if lowering is not None:
        lowering = check_range("lowering", lowering, 0.0, 0.01, low_open=True)
    if isinstance(randomizer, PersonalizedShuffle) and len(randomizer.groups) == 1:
        randomizer = randomizer.groups[0][0]  # one group is the homogeneous round of its randomizer
    if neighboring_relation is NeighborRel.ADD_OR_REMOVE_ONE:
        if isinstance(randomizer, PersonalizedShuffle):
            raise TypeError("a PersonalizedShuffle (users with different randomizers) is accounted "
                            "for replace-one neighbours only; ADD_OR_REMOVE_ONE is not supported")
        users = honest_users(population, honest_fraction)
        delta_upper, deltas_upper = _presence_deltas(
            randomizer, gamma, users, ROUND_LOWERING if lowering is None else lowering)
        return PrivacyProfile(delta_upper, math.inf,
                              f"poisson_add_remove({gamma!r}, {randomizer!r}, N={users})",
                              deltas_upper)
    if neighboring_relation is not NeighborRel.REPLACE_ONE:
        raise ValueError("neighboring_relation must be REPLACE_ONE or ADD_OR_REMOVE_ONE, "
                         f"got {neighboring_relation!r}")
    round_ = _SampledRound(randomizer, population, gamma, honest_fraction, tail, lowering)
    if gamma == 0.0:
        return PrivacyProfile(lambda epsilon: 0.0, 0.0, "poisson(0.0): nobody reports")
    return PrivacyProfile(round_.delta, round_.bound.epsilon0,
                          f"poisson({gamma!r}, void shuffle({round_.bound.source!r}, "
                          f"N={round_.population}))",
                          None if lowering is None else round_.deltas)
