"""Poisson client sampling in shuffle rounds (docs/theory.md, "Client sampling").

Two relations, each a privacy profile (:class:`~dpacct_shuffle.profiles.PrivacyProfile`)
bounding both directions of every neighbouring pair:

* :func:`poisson_sampled_profile`, replace-one — each of the ``num_users`` users of a known
  population takes part independently with probability γ and the participants' reports are
  shuffled. Bound: the *void view* (below), and, entry by entry, the participant-count bound of
  :func:`dpacct_shuffle.profiles.poisson_sampled_shuffle_profile`; the smaller is kept.
* :func:`poisson_sampled_profile`, add/remove-one — the same round, the victim present in one
  dataset and absent from the other (:func:`add_remove_variation_ratios`).

Fixed-size cohorts (exactly m of the N users) are accounted by
:func:`dpacct_shuffle.without_replacement.without_replacement_profile` on the m-user round, or
more tightly by :func:`dpacct_shuffle.without_replacement.shuffled_cohort_profile` (Poisson rounds
of the population, divided by the probability of at least m participants).

The void view
-------------
Let ⊥ be a symbol no randomizer outputs. "Take part with probability γ, then shuffle the
participants' reports" releases the multiset of participants' reports; with N known, that is a
bijective function of the multiset of N messages in which every non-participant sends ⊥ (the
number of ⊥ is N minus the number of reports). So the sampled round *is* a shuffle round of N
users applying the void randomizer

    R'(x) = γ·R(x) + (1 − γ)·δ_⊥,

and every shuffle bound for R' is a bound for the sampled round, with the participant count
visible. Its variation-ratio parameters, for a victim pair (x⁰, x¹) of R with parameters
(p, β, q0, q1) and neutral split μ_b = pα·Q_b + α·Q_{1−b} + w·N, others R(x_i) ≥ r0·Q0 + r1·Q1 + s·N:

* R'(x⁰) − R'(x¹) = γ·(μ0 − μ1): total variation γβ, the same Q0, Q1, α' = γα;
* the ratio on R's outputs is that of R, on ⊥ it is 1: the same p; for the same reason the same
  q0, q1, and the clone rates pα'/q_j = γ·r_j are exactly the others' γ·r_j·Q_j;
* the victim's neutral part w'·N' = γw·N + (1 − γ)·δ_⊥ (w' = 1 − (p + 1)α' = γw + 1 − γ); every
  other user reproduces γ·s·N (γ times R's guarantee) and (1 − γ)·δ_⊥ (exactly its own ⊥ mass).

The core's several-types bound (:mod:`dpacct_shuffle.core.bound`, ``neutral_parts``) takes parts
(w_t, s_t) with disjoint supports. R's relaxed neutral data is a share s with weight ν = λ·s ≤ w
(λ = min_t w_t/s_t over R's own parts); any valid split of R reduces to the two parts (ν, s),
(w − ν, 0) for the core (put λ·s_t of each part w_t into the first, the rest into the second).
So R' has the parts (γν, γs), (γ(w − ν), 0) and (1 − γ, σ) for any σ ≤ 1 − γ, a share
γs + σ and ratio λ' = min(λ, (1 − γ)/σ). :func:`void_variation_ratios` returns the candidates
σ = 1 − γ (λ' = min(λ, 1)), σ = (1 − γ)/λ when λ > 1 (λ' = λ) and, when λ < 1, R's part dropped
(share 1 − γ, λ' = 1); the bound is the minimum over them.

Pair classes and local bounds. A catalog ``Randomizer`` covers its victim pairs by entries
(``cover``, min'ed with ``fallbacks``); the void view applies entry by entry: a candidate
VariationRatio of an entry maps to its void candidates, and a :class:`LocalPairBound` (the victim's
own local divergence) to γ times it (D_{e^ε}(γμ0 + (1−γ)δ_⊥ ‖ γμ1 + (1−γ)δ_⊥) = γ·D_{e^ε}(μ0‖μ1)
for ε ≥ 0). For every entry the participant-count bound (same pair class, m sampled users) is also
evaluated and the smaller value kept. ``from_matrix`` randomizers are covered by the same rule (their
cover consists of VariationRatio candidates and local bounds). A randomizer with a small ``matrix``
(at most ``VOID_MATRIX_MAX_CELLS`` cells with the ⊥ column) is also analyzed as the finite
randomizer R' itself (:func:`void_matrix_randomizer`), and the smaller value kept.

Floating point: the void parameters are computed for a sampling probability γ_up ≥ γ (γ rounded up
by 4 ulps): a round with probability γ is a post-processing of the round with γ_up ≥ γ (drop each
released report independently with probability 1 − γ/γ_up), so its divergences are at most those
of γ_up; the shares are shrunk by a relative 1e-12 (a smaller share only loosens the bound).

Robust shuffling (``honest_fraction`` h): only ⌊h·N⌋ users of the population follow the protocol
(sampling and randomizer); the others' messages (including whether they send one) may be anything,
known to the adversary. The released multiset is a post-processing of the honest users' void
messages, so every bound is evaluated for ⌊h·N⌋ users, like an unsampled round.

The stages, one module each (everything public is re-exported here):

* :mod:`~dpacct_shuffle.sampling.parameters` — the void randomizer's and the presence pair's
  VariationRatios, the exact sampled binary RR;
* :mod:`~dpacct_shuffle.sampling.entry_bounds` — δ(ε, n) arrays of VariationRatios and catalog
  entries, the void matrix and the void groups of a personalized round;
* :mod:`~dpacct_shuffle.sampling.sampled_round` — min(void view, participant-count bound) of one
  replace-one round;
* :mod:`~dpacct_shuffle.sampling.sampled_profiles` — :func:`poisson_sampled_profile` and
  :func:`void_view_profile`.
"""

from __future__ import annotations

from dpacct_shuffle.sampling.entry_bounds import void_matrix_randomizer, void_personalized_round
from dpacct_shuffle.sampling.parameters import (
    VOID_MATRIX_MAX_CELLS as VOID_MATRIX_MAX_CELLS,
    DeltaFunction as DeltaFunction,
    DeltasFunction as DeltasFunction,
    FloatArray as FloatArray,
    NeighborRel as NeighborRel,
    add_remove_variation_ratios,
    binary_rr_epsilon0,
    check_sampling_probability,
    exact_sampled_profile,
    void_variation_ratios,
)
from dpacct_shuffle.sampling.sampled_profiles import poisson_sampled_profile, void_view_profile

__all__ = [
    "add_remove_variation_ratios",
    "binary_rr_epsilon0",
    "check_sampling_probability",
    "exact_sampled_profile",
    "poisson_sampled_profile",
    "void_matrix_randomizer",
    "void_personalized_round",
    "void_variation_ratios",
    "void_view_profile",
]
