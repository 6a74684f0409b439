"""The lemma toolbox: small, validated conversions between privacy guarantees.

Every function cites the lemma it implements and returns plain numbers, a privacy profile (a
callable ``delta(eps) -> delta``) or, for constructions, a numpy array. Sources (full references
and the list of lemmas in docs/theory.md, "Lemmas"):

* [HC] Y. Huang and C. L. Canonne, "Lemmas of Differential Privacy" (a compendium; its numbering
  is used where a lemma has no earlier source, and in parentheses otherwise);
* [DR14] C. Dwork and A. Roth, "The Algorithmic Foundations of Differential Privacy",
  Foundations and Trends in Theoretical Computer Science 9(3–4), 2014, ch. 3;
* [ASZ18] Acharya, Sun, Zhang, NeurIPS 2018; [KOV15] Kairouz, Oh, Viswanath, "The Composition
  Theorem for Differential Privacy", ICML 2015; [BNS19] Bun, Nelson, Stemmer, "Heavy Hitters and
  the Structure of Local Privacy", ACM TALG 2019; [EFMRSTT20] Erlingsson et al., "Encode, Shuffle,
  Analyze Privacy Revisited", arXiv:2001.03618; [NV20] Naor, Vexler, FORC 2020; [CSUZZ19] Cheu,
  Smith, Ullman, Zeber, Zhilyaev, "Distributed Differential Privacy via Shuffling", EUROCRYPT
  2019; [FMT21] Feldman, McMillan, Talwar, "Hiding Among the Clones", FOCS 2021,
  arXiv:2012.12803; [FMT22] Feldman, McMillan, Talwar, "Stronger Privacy Amplification by
  Shuffling for Rényi and Approximate Differential Privacy", SODA 2023, arXiv:2208.04591;
  [Ste22] Steinke, "Composition of Differential Privacy & Privacy Amplification by Subsampling",
  arXiv:2210.00597.

Soundness conventions:

* every ε or δ returned as a *guarantee* is rounded **up** by a few ulps
  (:func:`~dpacct_shuffle.core.rounding.round_loss_up`), and quantities that are inverted to
  feed a non-increasing profile are rounded **down**;
* exact zeros and infinities are returned as such;
* every input is validated: bad input raises ``ValueError``/``TypeError`` naming the parameter
  and its allowed range, and no function returns a bound outside its lemma's validity condition.

The divergence helpers (:func:`hockey_stick_divergence`, :func:`max_divergence`,
:func:`approximate_max_divergence`, :func:`kl_divergence`, :func:`randomizer_delta`,
:func:`randomizer_epsilon`, :func:`deletion_delta`) compute the exact quantity of *explicit*
finite distributions; they are the tools the tests use to check each lemma on concrete
randomizers.

Correction to [HC] (documented in :func:`advanced_grouposition_approx`): Theorem 4.2 as printed
there adds ``δ + k·δ'`` (δ = the LDP parameter, δ' = the tail parameter inside ε'); that is
false — a leaky randomized response violates it — and the valid additive term is ``δ' + k·δ``.

Layout (import every name from ``dpacct_shuffle.lemmas``): :mod:`~dpacct_shuffle.lemmas.divergences`
(exact divergences of explicit distributions), :mod:`~dpacct_shuffle.lemmas.central` (central DP
conversions, composition, subsampling), :mod:`~dpacct_shuffle.lemmas.local` (local DP),
:mod:`~dpacct_shuffle.lemmas.shuffle` (the shuffle model), :mod:`~dpacct_shuffle.lemmas.checks`
(argument checks and the ``Profile`` type).
"""

from __future__ import annotations

from dpacct_shuffle.lemmas.central import (
    approx_to_pure,
    basic_composition,
    kl_divergence_bound,
    mix_with_uniform,
    pure_to_approx,
    subsampled_profile,
    subsampling,
)
from dpacct_shuffle.lemmas.checks import Profile
from dpacct_shuffle.lemmas.divergences import (
    approximate_max_divergence,
    deletion_delta,
    hockey_stick_divergence,
    kl_divergence,
    max_divergence,
    randomizer_delta,
    randomizer_epsilon,
)
from dpacct_shuffle.lemmas.local import (
    advanced_grouposition,
    advanced_grouposition_approx,
    chained_ldp,
    chained_ldp_product_bound,
    deletion_to_replacement,
    deletion_to_replacement_profile,
    pure_ldp_profile,
    replacement_to_deletion,
)
from dpacct_shuffle.lemmas.shuffle import (
    fmt_shuffle_bound,
    robust_fmt_shuffle_bound,
    shuffle_to_ldp,
    shuffle_to_ldp_profile,
)

__all__ = [
    "Profile",
    "advanced_grouposition",
    "advanced_grouposition_approx",
    "approx_to_pure",
    "approximate_max_divergence",
    "basic_composition",
    "chained_ldp",
    "chained_ldp_product_bound",
    "deletion_delta",
    "deletion_to_replacement",
    "deletion_to_replacement_profile",
    "fmt_shuffle_bound",
    "hockey_stick_divergence",
    "kl_divergence",
    "kl_divergence_bound",
    "max_divergence",
    "mix_with_uniform",
    "pure_ldp_profile",
    "pure_to_approx",
    "randomizer_delta",
    "randomizer_epsilon",
    "replacement_to_deletion",
    "robust_fmt_shuffle_bound",
    "shuffle_to_ldp",
    "shuffle_to_ldp_profile",
    "subsampled_profile",
    "subsampling",
]
