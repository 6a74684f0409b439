"""Precision/cost settings of the accountants' round profiles: the point-query bracket width, the
batched curves' η for one round and for a changing cohort's anchors, and how many users the
structured bounds of a random-mode parallel round are evaluated for."""

from __future__ import annotations

from dpacct_shuffle.core.batched import DEFAULT_LOWERING

# random-mode parallel rounds: the bounds keeping each branch's structure are evaluated up to this
# many users (parallel_composite_bound)
PARALLEL_STRUCTURE_MAX_USERS = 1000
# ... and up to this many users in the profile a PLD or RDP is built from (about a hundred points,
# and the multi-level bound costs 0.02 s per point at 50 users, 0.12 s at 100, 2.5 s at 1000)
PARALLEL_STRUCTURE_PROFILE_MAX_USERS = 64
#: Relative bracket width at which the profiles (and the sampled-round profiles of
#: :mod:`dpacct_shuffle.sampling`) evaluate the core's upper bounds point by point: the upper end
#: is certified whatever the width; a looser width only makes each evaluation cheaper.
CORE_RTOL = 1e-2
# η of the batched curve for a single round's PLD (round_randomizer): a quarter of the default,
# so that one round's ε through the PLD stays within 0.2 % of the core's
ROUND_LOWERING = DEFAULT_LOWERING / 4.0
# η of the batched curve for the anchors of a changing cohort (users_grid_ratio): rounds composed by
# the hundred, whose error is dominated by the anchors' slack in n (cohort benchmark: +0.035 % in
# ε against η = 5e-4, with half the curve's cost)
COHORT_LOWERING = 1e-3
