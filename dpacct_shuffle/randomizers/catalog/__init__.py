"""Catalog of local randomizers with their variation-ratio parameters.

Every entry returns a :class:`Randomizer` whose (p, β, q) are those published in the
variation-ratio paper (Wang, Peng, Li, Wen, Li, Yu, Wang and Yang, "Privacy Amplification via
Shuffling: Unified, Simplified, and Tightened", arXiv:2304.05007), except where the published β is
not the total variation of the randomizer as implemented here — each such case is stated in the
entry's docstring and ``notes``. The published triple is kept in ``Randomizer.published``.

Neutral share s (docs/theory.md, "Decomposition"). The bound needs, for every other user's input
x_i, R(x_i) ≥ r0·Q0 + r1·Q1 + s·N pointwise. The generic s = w/max(q0, q1) is always valid and is
the core's default. Where a larger s is proven below, it is passed explicitly. Notation: e = e^ε0,
α = β/(p − 1), w = 1 − (p + 1)α, Q0 = (μ0 − μ1)⁺/β, Q1 = (μ1 − μ0)⁺/β, w·N = min(μ0, μ1) − α(Q0 + Q1).

Validity over victim pairs. When pairs differ (a smaller TV for some pairs), an entry with the
generic s covers them all: the bound is non-decreasing in β for fixed p, q with the generic s
(docs/theory.md, "Monotonicity in β"), and the decomposition stays valid for any p ≥ the pair's own
ratio. Entries with a specific s state why it holds for every pair, or carry one VariationRatio per
kind of pair.

Lower bounds (``shuffled(n).epsilon_interval``): exact divergences of explicit instances after a
post-processing (:mod:`dpacct_shuffle.randomizers.lower_bounds`, :mod:`dpacct_shuffle.randomizers.binary_rr_exact`); entries without a finite instance
(general metric LDP, multi-message protocols) report 0.0 as their lower bound.

Modules, by family: :mod:`~dpacct_shuffle.randomizers.catalog.ldp_classes` (every ε0-LDP or
metric-LDP randomizer), :mod:`~dpacct_shuffle.randomizers.catalog.frequency_oracles`,
:mod:`~dpacct_shuffle.randomizers.catalog.numeric`,
:mod:`~dpacct_shuffle.randomizers.catalog.multi_message`; what they share is in
:mod:`~dpacct_shuffle.randomizers.catalog.entry`.
"""

from __future__ import annotations

from dpacct_shuffle.randomizers.catalog.frequency_oracles import (
    binary_rr,
    collision,
    hadamard_response,
    krr,
    local_hashing,
    optimized_unary_encoding,
    oue,
    pckv_grr,
    rappor,
    sampling_rappor,
    subset_selection,
)
from dpacct_shuffle.randomizers.catalog.ldp_classes import metric_ldp, worst_case_ldp
from dpacct_shuffle.randomizers.catalog.multi_message import (
    balcer_binary_summation,
    balls_into_bins,
    cheu_binary_summation,
    mix_dump,
)
from dpacct_shuffle.randomizers.catalog.numeric import duchi, harmony, laplace, metric_laplace, piecewise

ALIASES = {"oue": "optimized_unary_encoding"}  # short names of CATALOG entries (also functions)

CATALOG = {
    "worst_case_ldp": worst_case_ldp,
    "binary_rr": binary_rr,
    "krr": krr,
    "rappor": rappor,
    "optimized_unary_encoding": optimized_unary_encoding,
    "subset_selection": subset_selection,
    "local_hashing": local_hashing,
    "hadamard_response": hadamard_response,
    "pckv_grr": pckv_grr,
    "collision": collision,
    "sampling_rappor": sampling_rappor,
    "laplace": laplace,
    "piecewise": piecewise,
    "duchi": duchi,
    "harmony": harmony,
    "metric_ldp": metric_ldp,
    "metric_laplace": metric_laplace,
    "balcer_binary_summation": balcer_binary_summation,
    "cheu_binary_summation": cheu_binary_summation,
    "balls_into_bins": balls_into_bins,
    "mix_dump": mix_dump,
}

# the CATALOG entries, the ALIASES, then the two tables (spelled out: type checkers read it)
__all__ = [
    "worst_case_ldp",
    "binary_rr",
    "krr",
    "rappor",
    "optimized_unary_encoding",
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
    "oue",
    "CATALOG",
    "ALIASES",
]
