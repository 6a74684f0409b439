"""Local randomizers as users think of them, with certified shuffle bounds (upper and lower).

>>> from dpacct_shuffle import randomizers
>>> shuffled = randomizers.krr(epsilon0=2.0, domain_size=100).shuffled(1000)
>>> lower, upper = shuffled.epsilon_interval(1e-6)

* :mod:`~dpacct_shuffle.randomizers.catalog` — closed-form entries of the variation-ratio paper's
  tables (Wang et al., arXiv:2304.05007), each with a proven neutral share;
* :func:`from_matrix` — the parameter analyzer for any finite randomizer;
* :mod:`~dpacct_shuffle.randomizers.lower_bounds` — exact profiles of explicit instances (lower
  bounds);
* :mod:`~dpacct_shuffle.randomizers.binary_rr_exact` — the exact shuffled binary randomized
  response, certified to a relative tolerance (a lower and an upper bound).
"""

from dpacct_shuffle.randomizers.base import (
    LOWER_BOUND_MAX_USERS,
    LocalPairBound,
    LowerBoundSkippedWarning,
    PairBound,
    Randomizer,
    ShuffledRandomizer,
    SupportsShuffleBound,
    VariationRatioBound,
)
from dpacct_shuffle.randomizers.catalog import (
    ALIASES,
    CATALOG,
    balcer_binary_summation,
    balls_into_bins,
    binary_rr,
    cheu_binary_summation,
    collision,
    duchi,
    hadamard_response,
    harmony,
    krr,
    laplace,
    local_hashing,
    metric_laplace,
    metric_ldp,
    mix_dump,
    optimized_unary_encoding,
    oue,
    pckv_grr,
    piecewise,
    rappor,
    sampling_rappor,
    subset_selection,
    worst_case_ldp,
)
from dpacct_shuffle.randomizers.binary_rr_exact import BinaryRRProfile, binary_rr_exact_delta
from dpacct_shuffle.randomizers.lower_bounds import CountPair, InstanceLowerBound, trinomial_projection
from dpacct_shuffle.randomizers.matrix import from_matrix

__all__ = [
    "LOWER_BOUND_MAX_USERS",
    "LowerBoundSkippedWarning",
    "Randomizer",
    "ShuffledRandomizer",
    "SupportsShuffleBound",
    "PairBound",
    "VariationRatioBound",
    "LocalPairBound",
    "from_matrix",
    "CATALOG",
    "ALIASES",
    "worst_case_ldp",
    "binary_rr",
    "krr",
    "rappor",
    "optimized_unary_encoding",
    "oue",
    "subset_selection",
    "local_hashing",
    "hadamard_response",
    "pckv_grr",
    "collision",
    "sampling_rappor",
    "laplace",
    "piecewise",
    "duchi",
    "harmony",
    "metric_ldp",
    "metric_laplace",
    "balcer_binary_summation",
    "cheu_binary_summation",
    "balls_into_bins",
    "mix_dump",
    "BinaryRRProfile",
    "CountPair",
    "InstanceLowerBound",
    "binary_rr_exact_delta",
    "trinomial_projection",
]
