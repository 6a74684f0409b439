"""Privacy-loss profiles: from a shuffle bound to objects dp-accounting composes (docs/theory.md,
"Privacy-loss profiles").

A *privacy profile* here is a function ``δ(ε)``, ε ≥ 0, that upper-bounds the hockey-stick
divergence ``D_{e^ε}`` of a mechanism **in both directions** for every pair of neighbouring
datasets (replace-one: one user's input changed, everyone else fixed). :class:`PrivacyProfile`
holds such a function together with ``epsilon_cap``, an ε above which δ(ε) = 0 (ε0 = ln p for a
shuffled ε0-LDP report; ``inf`` if there is none).

Two conversions make a profile usable by dp-accounting:

* :func:`pld_from_profile` — a *pessimistic* ``dp_accounting.pld.PrivacyLossDistribution`` built
  with dp-accounting's own Connect-the-Dots discretisation
  (``pld_pmf.create_pmf_pessimistic_connect_dots``, Doroshenko et al. 2022, Algorithm 1).
* :func:`rdp_from_profile` — an upper bound on the Rényi divergence of every neighbouring pair, in
  both directions, at given orders.

The stages, one module each (everything is re-exported here):

* :mod:`~dpacct_shuffle.profiles.shuffle_bounds` — randomizer → bound: :class:`ShuffleBound`,
  :func:`as_shuffle_bound`, the batched pair curve (:class:`BatchedRandomizer`), user counts;
* :mod:`~dpacct_shuffle.profiles.parallel_bounds` — the bound of a random-mode parallel round;
* :mod:`~dpacct_shuffle.profiles.privacy_profile` — profile algebra: :class:`PrivacyProfile`,
  max/min of profiles, (leaky) randomized response, chains of LDP randomizers;
* :mod:`~dpacct_shuffle.profiles.round_profiles` — bound → profile of a shuffle round, plain or
  on a Poisson sample;
* :mod:`~dpacct_shuffle.profiles.adaptive_grid` — discretisation: the adaptive grid of values;
* :mod:`~dpacct_shuffle.profiles.connect_the_dots` — grid → pessimistic PLD (Connect-the-Dots);
* :mod:`~dpacct_shuffle.profiles.rdp` — grid → RDP curve;
* :mod:`~dpacct_shuffle.profiles.tuning` — the accountants' precision/cost settings.
"""

from __future__ import annotations

from dpacct_shuffle.profiles.adaptive_grid import (
    DEFAULT_EPSILON_TOLERANCE as DEFAULT_EPSILON_TOLERANCE,
    DEFAULT_MAX_STEP as DEFAULT_MAX_STEP,
    DEFAULT_MIN_DELTA as DEFAULT_MIN_DELTA,
    DEFAULT_VALUE_DISCRETIZATION,
    LOSS_RESOLUTION,
    ProfileGrid,
    discretization_for_scale,
    loss_scale,
    profile_grid,
)
from dpacct_shuffle.profiles.connect_the_dots import (
    connect_the_dots_points,
    ldp_pld,
    pld_from_grid,
    pld_from_profile,
)
from dpacct_shuffle.profiles.parallel_bounds import (
    check_probabilities as check_probabilities,
    parallel_composite as parallel_composite,
    parallel_composite_bound,
)
from dpacct_shuffle.profiles.privacy_profile import (
    PrivacyProfile,
    chained_ldp_profile as chained_ldp_profile,
    leaky_randomized_response_delta as leaky_randomized_response_delta,
    max_profile,
    min_profile,
    randomized_response_delta,
)
from dpacct_shuffle.profiles.rdp import randomized_response_rdp, rdp_from_grid, rdp_from_profile
from dpacct_shuffle.profiles.round_profiles import (
    DEFAULT_SAMPLING_TAIL as DEFAULT_SAMPLING_TAIL,
    poisson_sampled_shuffle_profile,
    sampled_users_lower_bound,
    shuffle_profile,
)
from dpacct_shuffle.profiles.shuffle_bounds import (
    BatchedRandomizer,
    RandomizerDescription,
    ShuffleBound,
    as_shuffle_bound,
    batched_entry_deltas,
    batched_randomizer,
    honest_users,
    round_randomizer,
    users_grid_floor,
    variation_ratios_of,
)
from dpacct_shuffle.profiles.tuning import (
    COHORT_LOWERING,
    CORE_RTOL,
    PARALLEL_STRUCTURE_MAX_USERS as PARALLEL_STRUCTURE_MAX_USERS,
    PARALLEL_STRUCTURE_PROFILE_MAX_USERS,
    ROUND_LOWERING,
)

__all__ = [
    "BatchedRandomizer",
    "CORE_RTOL",
    "DEFAULT_VALUE_DISCRETIZATION",
    "PrivacyProfile",
    "ProfileGrid",
    "COHORT_LOWERING",
    "ROUND_LOWERING",
    "RandomizerDescription",
    "ShuffleBound",
    "as_shuffle_bound",
    "batched_entry_deltas",
    "batched_randomizer",
    "LOSS_RESOLUTION",
    "connect_the_dots_points",
    "discretization_for_scale",
    "honest_users",
    "ldp_pld",
    "loss_scale",
    "max_profile",
    "min_profile",
    "parallel_composite_bound",
    "PARALLEL_STRUCTURE_PROFILE_MAX_USERS",
    "pld_from_grid",
    "pld_from_profile",
    "poisson_sampled_shuffle_profile",
    "profile_grid",
    "randomized_response_delta",
    "randomized_response_rdp",
    "rdp_from_grid",
    "rdp_from_profile",
    "round_randomizer",
    "sampled_users_lower_bound",
    "shuffle_profile",
    "users_grid_floor",
    "variation_ratios_of",
]
