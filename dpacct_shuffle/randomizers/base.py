"""The :class:`Randomizer` type: a named local randomizer with certified shuffle bounds.

A randomizer's worst case may depend on the victim pair (x⁰, x¹) — e.g. Hadamard response with
several blocks has two kinds of pairs with different (β, s). The core :class:`VariationRatio`
describes one kind, so a Randomizer carries a *cover*: a tuple of :class:`PairBound` such that for
every victim pair at least one of them is a valid bound for that pair. In addition, *fallbacks* —
bounds valid for every pair at once, e.g. one summary VariationRatio with p = max p, β = max β,
q = max q and the generic neutral share (valid for all pairs by the monotonicity of the bound in β,
docs/theory.md, "Monotonicity in β") — can only lower the reported value:

    δ_upper(ε) = min( max_{cover} δ_k(ε), min_{fallbacks} δ_f(ε) ),
    ε_upper(δ) = min( max_k ε_k(δ), min_f ε_f(δ) ).

That rule is :func:`~dpacct_shuffle.randomizers.cover_rule.cover_fallback_bound`;
:meth:`Randomizer.delta` and :meth:`Randomizer.epsilon` apply it to the entries' point bounds, and
everything that needs the shuffled bound of a randomizer (``shuffled(n)``, the privacy profiles,
the events) asks those, through the :class:`SupportsShuffleBound` protocol that Randomizer and
:class:`~dpacct_shuffle.VariationRatio` both satisfy, or applies the same function to its own
evaluation of the entries (batched curves, sampled rounds).
"""

from __future__ import annotations

import math
import types
import warnings
from typing import Callable, Hashable, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from dpacct_shuffle.core.bound import DELTA_RTOL, VariationRatio
from dpacct_shuffle.core.search import bisect, expand_bracket
from dpacct_shuffle.core.validation import check_delta, check_epsilon, check_num_users, check_range
from dpacct_shuffle.randomizers.answer_cache import ANSWER_CACHE_SIZE, ANSWERS, clear_answer_cache
from dpacct_shuffle.randomizers.cover_rule import cover_fallback_bound
from dpacct_shuffle.randomizers.exact_small_n import ExactShuffle, MatrixExact
from dpacct_shuffle.randomizers.lower_bounds import ExactLowerInstance, InstanceLowerBound
from dpacct_shuffle.randomizers.frequency import FrequencyOracle, Report

#: Default of ``shuffled(n, lower_bound_max_users=...)``: the lower-bound instances are evaluated
#: for at most this many users. Their cost grows with n (seconds up to 10^7 users, up to minutes
#: from 10^8 on); above the limit the lower bounds are skipped with a
#: :class:`LowerBoundSkippedWarning` and reported as 0.0, which is always a valid lower bound.
#: The command line's ``--lower-max-users`` has the same default.
LOWER_BOUND_MAX_USERS = 10**7


@runtime_checkable
class SupportsShuffleBound(Protocol):
    """Certified bounds of the shuffle protocol in which each of n users sends one report.

    Satisfied by :class:`Randomizer` (catalog entries, :func:`~dpacct_shuffle.randomizers.from_matrix`
    results) and :class:`~dpacct_shuffle.VariationRatio`:

    * ``epsilon0`` — the local guarantee of one report: δ(ε) = 0 for every ε ≥ epsilon0 (∞ if none);
    * ``delta(epsilon, n, *, rtol)`` — an upper bound on δ(ε) of the shuffled protocol, both
      directions, every neighbouring pair (replace-one); ``rtol`` is the relative width at which a
      certified bracket may stop (a cost setting: the value is an upper bound whatever it is;
      bounds computed without a bracket do not need it);
    * ``epsilon(delta, n)`` — an ε at which the protocol is (ε, δ)-DP.
    """

    @property
    def epsilon0(self) -> float: ...

    def delta(self, epsilon: float, n: int, *, rtol: float = DELTA_RTOL) -> float: ...

    def epsilon(self, delta: float, n: int) -> float: ...


class LowerBoundSkippedWarning(UserWarning):
    """A lower bound was not evaluated because n exceeds ``lower_bound_max_users``."""


LowerBoundFactory = Callable[[int], "InstanceLowerBound | None"]
Rebuild = Callable[[], "Randomizer"]

#: Relative margin by which a candidate's lower estimate must exceed δ before its ε search is
#: skipped (:meth:`VariationRatioBound.epsilon_below`): far above the estimate's float error.
SKIP_MARGIN = 1e-6
class PairBound:
    """Upper bound for a set of victim pairs. Subclasses implement delta/epsilon for n users."""

    def delta(self, epsilon: float, n: int) -> float:  # pragma: no cover - interface
        raise NotImplementedError

    def delta_at_rtol(self, epsilon: float, n: int, rtol: float) -> float:
        """:meth:`delta` with the core's certified brackets allowed to stop at relative width
        ``rtol`` (:meth:`SupportsShuffleBound.delta`); bounds without a bracket ignore it."""
        return self.delta(epsilon, n)

    def deltas_at_rtol(self, epsilons: NDArray[np.float64], n: int,
                       rtol: float) -> NDArray[np.float64]:
        """:meth:`delta_at_rtol` at every ε of ``epsilons`` (bounds with a curve for all ε, e.g.
        the exact binary RR, answer them at once)."""
        return np.array([self.delta_at_rtol(float(eps), n, rtol) for eps in epsilons],
                        dtype=np.float64)

    def curve_deltas(self, epsilons: NDArray[np.float64], n: int,
                     lowering: float) -> NDArray[np.float64] | None:
        """Upper bounds on δ at every ε ≥ 0 of ``epsilons`` read from every-ε curves built once
        for n users (η = ``lowering``, docs/theory.md, "Batched evaluation from the dominating
        pair"), or None when this bound has no such curve (then it is evaluated point by point)."""
        return None

    def epsilon(self, delta: float, n: int) -> float:  # pragma: no cover - interface
        raise NotImplementedError

    def epsilon_below(self, delta: float, n: int, current: float) -> float:
        """A valid ε(δ) for use in min(current, ·): :meth:`epsilon` unless a subclass knows it
        cannot improve on ``current`` (then any value ≥ current)."""
        return self.epsilon(delta, n)


class VariationRatioBound(PairBound):
    """Minimum over candidate VariationRatio objects, each valid for every pair of the set.

    Several candidates arise from the trade-off between clone rates r and the neutral share s
    (:mod:`dpacct_shuffle.randomizers.matrix`): which is tightest depends on (ε, n), and the
    minimum of valid upper bounds is a valid upper bound.
    """

    def __init__(self, candidates: Sequence[VariationRatio]) -> None:
        if not candidates:
            raise ValueError("candidates must contain at least one VariationRatio")
        self.candidates = tuple(candidates)

    def delta(self, epsilon: float, n: int) -> float:
        return self.delta_at_rtol(epsilon, n, DELTA_RTOL)

    def delta_at_rtol(self, epsilon: float, n: int, rtol: float) -> float:
        return min(vr.delta(epsilon, n, rtol=rtol) for vr in self.candidates)

    def epsilon(self, delta: float, n: int) -> float:
        return self.epsilon_below(delta, n, math.inf)

    def epsilon_below(self, delta: float, n: int, current: float) -> float:
        """min(``current``, every candidate's ε(δ)), each candidate's search skipped when its
        lower estimate at the running minimum already exceeds δ by a relative
        ``SKIP_MARGIN``: the pair's exact divergence is then above δ at every ε up to that
        minimum (it is non-increasing in ε), so the certified search can only return a larger ε,
        which the minimum would drop — the value is the same as without skipping, after one
        evaluation instead of a search."""
        best = current
        for vr in self.candidates:
            if best <= 0.0:
                break
            if math.isfinite(best) and (
                    vr.delta_interval(best, n).lower > delta * (1.0 + SKIP_MARGIN)):
                continue
            best = min(best, vr.epsilon(delta, n))
        return best

    def __repr__(self) -> str:
        return f"VariationRatioBound({list(self.candidates)!r})"


class LocalPairBound(PairBound):
    """Local hockey-stick divergence of finite victim laws: shuffled δ ≤ max over pairs of it.

    The shuffled output is a post-processing of the victim's own message (the others' messages are
    independent of it), so D_{e^ε} of the victim pair bounds the shuffled divergence for any n.
    ``mu0``/``mu1`` are arrays of shape (pairs, outputs); the bound is the maximum over pairs.
    """

    def __init__(self, mu0: np.ndarray, mu1: np.ndarray) -> None:
        self.mu0 = np.atleast_2d(np.asarray(mu0, dtype=float))
        self.mu1 = np.atleast_2d(np.asarray(mu1, dtype=float))

    def _delta(self, eps: float) -> float:
        if math.isinf(eps):
            return self._floor()
        scale = math.exp(eps) if eps <= 700.0 else math.inf
        # each term μ0 − e^ε·μ1 is raised by 4u·(μ0 + e^ε·μ1) (u = 2^-53): exp, the product and the
        # difference err by at most 3u of those magnitudes, and near ε = ln(μ0/μ1) the difference
        # cancels, so a purely relative slack on the sum does not cover them ([[1, 1e-17],
        # [1e-17, 1]], ε = 39.1439: 1.3782380775429e-05 against the exact 1.3782380775474e-05)
        unit = 4.0 * 2.0**-53

        def scaled(mu: np.ndarray) -> np.ndarray:
            """(1 − unit)·e^ε·μ, rounded down; beyond ε = 700 as exp(ε + ln μ) (e^ε overflows while
            e^ε·μ may not, e.g. μ subnormal), whose rounding (≤ 2u·(ε + |ln μ|) relative) is
            charged too."""
            if eps <= 700.0:
                return (1.0 - unit) * scale * mu
            with np.errstate(divide="ignore", over="ignore"):
                logs = np.log(mu)
                scaled_mu: np.ndarray = np.exp(eps + logs) * (
                    1.0 - unit - 2.0**-52 * (eps + np.abs(logs)))
                return scaled_mu

        with np.errstate(invalid="ignore", over="ignore"):
            # where μ0 ≤ μ1 the exact term is ≤ 0 (e^ε ≥ 1): no rounding to cover there
            forward = np.where(self.mu1 > 0, np.where(self.mu0 > self.mu1, np.maximum(
                (1.0 + unit) * self.mu0 - scaled(self.mu1), 0.0), 0.0),
                self.mu0).sum(axis=1)
            backward = np.where(self.mu0 > 0, np.where(self.mu1 > self.mu0, np.maximum(
                (1.0 + unit) * self.mu1 - scaled(self.mu0), 0.0), 0.0),
                self.mu1).sum(axis=1)
        # round up: the sums of nonnegative terms carry relative error <= outputs * ulp
        slack = 1.0 + 4.0 * self.mu0.shape[1] * np.finfo(float).eps
        return min(1.0, float(max(forward.max(), backward.max()) * slack))  # δ ≤ 1 always

    def delta(self, epsilon: float, n: int) -> float:
        return self._delta(check_epsilon(epsilon))

    def _floor(self) -> float:
        """lim_{ε→∞} δ(ε): mass of one law where the other vanishes."""
        forward = np.where(self.mu1 > 0, 0.0, self.mu0).sum(axis=1)
        backward = np.where(self.mu0 > 0, 0.0, self.mu1).sum(axis=1)
        return float(max(forward.max(), backward.max()))

    def epsilon(self, delta: float, n: int) -> float:
        target = check_delta(delta)
        if self._delta(0.0) <= target:
            return 0.0
        if self._floor() > target:
            return math.inf  # no finite ε: some output identifies the victim's input
        both = (self.mu0 > 0) & (self.mu1 > 0)
        # log ratios (μ0/μ1 overflows for subnormal masses): δ(ε) = the floor beyond the largest
        logs = np.abs(np.log(self.mu0[both]) - np.log(self.mu1[both]))
        hi = max(float(logs.max()) * (1.0 + 1e-12) + 1e-300, 1e-12) if logs.size else 1.0
        _, hi = expand_bracket(lambda eps: self._delta(eps) > target, 0.0, hi)
        return bisect(lambda eps: not self._delta(eps) > target, hi, 0.0, steps=60)


class ExactSmallNBound(PairBound):
    """The exact worst-case shuffled δ(ε) of a finite randomizer (its ``matrix``) at every n whose
    enumeration fits the work budget (:mod:`dpacct_shuffle.randomizers.exact_small_n`;
    docs/theory.md, "Exact values at small n"):

        δ(ε) = max over victim pairs (x, x′), both orders, and configurations c of the n − 1
               others of Σ_h (P_x(h) − e^ε·P_x′(h))⁺,  P_x(h) = Σ_o R[x, o]·O_c(h − e_o),

    certified from above (floats with their error bound added). Valid for every pair, so a
    fallback; above the budget it is the trivial bound (δ ≤ 1, ε ≤ ∞), which changes nothing.
    """

    def __init__(self, matrix: NDArray[np.float64]) -> None:
        self.exact = MatrixExact(matrix)

    def shuffle(self, n: int) -> ExactShuffle | None:
        """The enumeration at n users, None above the budget."""
        return self.exact.shuffle(n)

    def delta(self, epsilon: float, n: int) -> float:
        return float(self.deltas_at_rtol(np.array([check_epsilon(epsilon)]), n, DELTA_RTOL)[0])

    def deltas_at_rtol(self, epsilons: NDArray[np.float64], n: int,
                       rtol: float) -> NDArray[np.float64]:
        shuffle = self.shuffle(n)
        eps = np.asarray(epsilons, dtype=np.float64)
        return np.ones(eps.shape) if shuffle is None else shuffle.delta_bounds(eps)[1]

    def delta_at_rtol(self, epsilon: float, n: int, rtol: float) -> float:
        return self.delta(epsilon, n)

    def epsilon(self, delta: float, n: int) -> float:
        shuffle = self.shuffle(n)
        return math.inf if shuffle is None else shuffle.epsilon_bounds(check_delta(delta))[1]

    def __repr__(self) -> str:
        return f"ExactSmallNBound(matrix of shape {self.exact.matrix.shape})"


class Randomizer:
    """A local randomizer with its variation-ratio parameters and shuffle bounds.

    Attributes:
      name: short identifier (e.g. ``"krr"``).
      parameters: read-only mapping of its inputs (ε0, domain size, ...) and derived constants.
      variation_ratio: a single :class:`VariationRatio` valid for *every* victim pair (may be
        looser than the cover; ``None`` only when no finite ratio bound exists).
      variation_ratios: all VariationRatio candidates of the cover (deduplicated).
      matrix: rows = inputs, columns = outputs (finite randomizers small enough to materialise),
        else ``None``. Read-only.
      published: the (p, β, q, q1) of the variation-ratio paper's table, when the entry has one.
      notes: validity statements specific to this randomizer.
      frequency_oracle: the sampler and unbiased frequency estimator
        (:mod:`~dpacct_shuffle.randomizers.frequency`) of entries that have one (k-RR, binary RR,
        RAPPOR, OUE, local hashing with a domain size), else ``None``; used by :meth:`sample`
        and :meth:`estimate_frequencies`.

    Equality and pickling. Catalog entries and :func:`~dpacct_shuffle.randomizers.from_matrix`
    randomizers record their origin: they compare (and hash) by value — catalog entries by
    (``name``, ``parameters``), analyzed ones by (``name``, the analyzed matrix's shape and the SHA-256
    of its bytes)
    — and pickle / ``copy.deepcopy`` as that origin (the catalog call with its arguments, or the
    analyzed matrix and name), rebuilt on loading: the copy equals the original and gives the same
    bounds. A Randomizer built directly with this constructor compares by identity and cannot be
    pickled (TypeError).

    Immutability. A Randomizer's public attributes are fixed at construction (assigning one raises
    AttributeError), so value equality, hashing and the accountants' caches keyed by it stay valid;
    :meth:`with_fallbacks` makes a variant with more fallbacks. The bounds are computed from those
    attributes alone, so equal value keys mean equal answers: :meth:`epsilon` and :meth:`delta` of
    randomizers whose origin is recorded (catalog entries, ``from_matrix``) are cached by (value
    key, arguments) (:func:`clear_answer_cache` forgets them).
    """

    _FROZEN_ATTRIBUTES = frozenset({"name", "parameters", "cover", "fallbacks", "variation_ratio",
                                    "matrix", "published", "notes", "frequency_oracle"})

    def __init__(
        self,
        name: str,
        parameters: Mapping[str, object],
        cover: Sequence[PairBound],
        *,
        variation_ratio: VariationRatio | None,
        fallbacks: Sequence[PairBound] = (),
        matrix: np.ndarray | None = None,
        lower_bound: LowerBoundFactory | None = None,
        published: tuple[float, float, float, float] | None = None,
        notes: str = "",
        frequency_oracle: FrequencyOracle | None = None,
    ) -> None:
        if not cover:
            raise ValueError("cover must contain at least one PairBound")
        self.name = name
        self.parameters = types.MappingProxyType(dict(parameters))
        self.cover = tuple(cover)
        self.variation_ratio = variation_ratio
        # a finite randomizer always carries its exact small-n value (ExactSmallNBound) as one
        # fallback, built here from its own matrix
        if matrix is not None:
            matrix = np.array(matrix, dtype=float)
            matrix.setflags(write=False)
        kept: list[PairBound] = []
        for bound in fallbacks:  # one of the same matrix is kept in place (with its cache)
            if not isinstance(bound, ExactSmallNBound) or (
                    matrix is not None and not any(isinstance(b, ExactSmallNBound) for b in kept)
                    and np.array_equal(bound.exact.matrix, matrix)):
                kept.append(bound)
        if matrix is not None and not any(isinstance(b, ExactSmallNBound) for b in kept):
            kept.append(ExactSmallNBound(matrix))
        self.fallbacks = tuple(kept)
        self.matrix = matrix
        self._lower_bound = lower_bound
        self.published = published
        self.notes = notes
        self.frequency_oracle = frequency_oracle
        self._rebuild: Rebuild | None = None
        self._identity: Hashable | None = None
        self._frozen = True

    def __setattr__(self, name: str, value: object) -> None:
        if name in self._FROZEN_ATTRIBUTES and getattr(self, "_frozen", False):
            raise AttributeError(f"Randomizer.{name} is fixed at construction; use with_fallbacks() "
                                 "or build a new Randomizer")
        object.__setattr__(self, name, value)

    def with_fallbacks(self, *bounds: PairBound) -> "Randomizer":
        """A new Randomizer equal to this one with ``bounds`` appended to its fallbacks (each must
        be a certified bound valid for every pair of inputs). Its origin is not recorded: a catalog
        entry or ``from_matrix`` records it on the finished randomizer."""
        return Randomizer(self.name, self.parameters, self.cover,
                          variation_ratio=self.variation_ratio,
                          fallbacks=(*self.fallbacks, *bounds), matrix=self.matrix,
                          lower_bound=self._lower_bound, published=self.published,
                          notes=self.notes, frequency_oracle=self.frequency_oracle)

    def _record_origin(self, rebuild: Rebuild, identity: Hashable) -> None:
        """Set once by the catalog and ``from_matrix``: ``rebuild()`` (a picklable callable, e.g. a
        ``functools.partial`` of a module-level function) returns a Randomizer whose ``identity``
        equals ``identity`` (its value key for ``==``/``hash``)."""
        if self._identity is not None:
            raise AttributeError("a Randomizer's origin is recorded once")
        self._rebuild = rebuild
        self._identity = identity

    @property
    def epsilon0(self) -> float:
        """ln p of ``variation_ratio`` (valid for every pair: no likelihood ratio of two reports
        exceeds p, so δ(ε) = 0 for ε ≥ it); ∞ when there is none."""
        return math.inf if self.variation_ratio is None else self.variation_ratio.epsilon0

    def delta(self, epsilon: float, n: int, *, rtol: float = DELTA_RTOL) -> float:
        """Certified upper bound on δ(ε) of the shuffled protocol with n users: the maximum over
        the cover, lowered by every fallback (module docstring)."""
        eps, users = check_epsilon(epsilon), check_num_users(n)
        width = check_range("rtol", rtol, 0.0, 1.0, low_open=True)

        def compute() -> float:
            return float(cover_fallback_bound(
                self.cover, self.fallbacks,
                lambda bound: np.array([bound.delta_at_rtol(eps, users, width)]))[0])

        if self._identity is None:
            return compute()
        return ANSWERS.get(("delta", self._identity, eps, users, width), compute)

    def epsilon(self, delta: float, n: int) -> float:
        """Certified upper bound on ε(δ) of the shuffled protocol with n users: the maximum over
        the cover, lowered by every fallback (module docstring); a fallback's search is skipped
        where it cannot improve on the value reached (:meth:`PairBound.epsilon_below`)."""
        target, users = check_delta(delta), check_num_users(n)

        def compute() -> float:
            return float(cover_fallback_bound(
                self.cover, self.fallbacks,
                lambda bound: np.array([bound.epsilon(target, users)]),
                lambda bound, current: np.array(
                    [bound.epsilon_below(target, users, float(current[0]))]))[0])

        if self._identity is None:
            return compute()
        return ANSWERS.get(("epsilon", self._identity, target, users), compute)

    @property
    def variation_ratios(self) -> tuple[VariationRatio, ...]:
        seen: dict[VariationRatio, None] = {}
        for bound in self.cover:
            if isinstance(bound, VariationRatioBound):
                for vr in bound.candidates:
                    seen.setdefault(vr, None)
        return tuple(seen)

    def lower_bound(self, n: int) -> InstanceLowerBound | None:
        """Certified lower-bound instances for n users, or None if the entry has none: the entry's
        explicit instances and, for a finite randomizer whose enumeration fits the budget, the
        exact worst case itself (:class:`ExactSmallNBound`, certified from below)."""
        users = check_num_users(n)
        if users < 2:
            return None
        instance = None if self._lower_bound is None else self._lower_bound(users)
        exact = next((bound.shuffle(users) for bound in self.fallbacks
                      if isinstance(bound, ExactSmallNBound)), None)
        if exact is None:
            return instance
        worst = ExactLowerInstance(exact)
        if instance is None:
            return InstanceLowerBound([worst], "exact worst case over every configuration",
                                      is_exact=True)
        return InstanceLowerBound([*instance.pairs, worst], instance.description, is_exact=True)

    def _oracle(self) -> FrequencyOracle:
        if self.frequency_oracle is None:
            raise TypeError(f"{self!r} has no sampler and frequency estimator; catalog entries with "
                            "one: binary_rr, krr, rappor, optimized_unary_encoding, local_hashing, "
                            "hadamard_response (one block), subset_selection, sampling_rappor")
        return self.frequency_oracle

    def sample(self, value: int, rng: np.random.Generator) -> Report:
        """One randomized report of ``value`` in [0, domain_size) (the law of the matrix row)."""
        return self._oracle().sample(value, rng)

    def estimate_frequencies(self, reports: Sequence[Report]) -> NDArray[np.float64]:
        """Unbiased estimates of the fraction of users holding each value, from their reports
        (in any order: the estimate depends only on the multiset)."""
        return self._oracle().estimate_frequencies(reports)

    def shuffled(self, n: int, *, lower_bound_max_users: int | None = LOWER_BOUND_MAX_USERS
                 ) -> "ShuffledRandomizer":
        """The shuffle protocol with n users, each applying this randomizer once; lower bounds
        are evaluated only for n <= ``lower_bound_max_users`` (None: always)."""
        return ShuffledRandomizer(self, check_num_users(n),
                                  lower_bound_max_users=lower_bound_max_users)

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.parameters.items())
        return f"Randomizer({self.name}: {params})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Randomizer):
            return NotImplemented
        if self._identity is None or other._identity is None:
            return self is other
        return self._identity == other._identity

    def __hash__(self) -> int:
        return object.__hash__(self) if self._identity is None else hash(self._identity)

    def __reduce__(self) -> tuple[Rebuild, tuple[()]]:
        """Pickled (and deep-copied) as its origin, called again on loading (class docstring)."""
        if self._rebuild is None:
            raise TypeError(f"{self!r} cannot be pickled: only catalog entries and from_matrix "
                            "randomizers record how to rebuild themselves")
        return self._rebuild, ()


class ShuffledRandomizer:
    """Shuffled protocol of n users: certified upper bounds and certified lower bounds. Its
    :meth:`epsilon`/:meth:`delta` are one round's canonical numbers, those of
    :func:`dpacct_shuffle.shuffle_round.round_epsilon`/``round_delta`` for this round.

    Lower bounds are evaluated only for n <= ``lower_bound_max_users`` (default
    :data:`LOWER_BOUND_MAX_USERS`; None for no limit); above it they are 0.0 and a
    :class:`LowerBoundSkippedWarning` says so, so no call runs for minutes unasked.
    """

    def __init__(self, randomizer: Randomizer, n: int, *,
                 lower_bound_max_users: int | None = LOWER_BOUND_MAX_USERS) -> None:
        self.randomizer = randomizer
        self.n = check_num_users(n)
        self.lower_bound_max_users = (None if lower_bound_max_users is None else
                                      check_num_users(lower_bound_max_users,
                                                      "lower_bound_max_users"))
        self._lower: InstanceLowerBound | None = None
        self._lower_built = False

    # -- upper bounds ---------------------------------------------------------------------
    def delta(self, epsilon: float) -> float:
        """Certified upper bound on δ(ε) of the shuffled protocol (worst neighbouring pair):
        :meth:`Randomizer.delta` at this n."""
        return self.randomizer.delta(epsilon, self.n)

    def epsilon(self, delta: float) -> float:
        """Certified upper bound on ε(δ): the protocol is (ε, δ)-DP at the returned ε
        (:meth:`Randomizer.epsilon` at this n)."""
        return self.randomizer.epsilon(delta, self.n)

    # -- lower bounds ---------------------------------------------------------------------
    @property
    def lower_bound(self) -> InstanceLowerBound | None:
        """The explicit instance behind the lower bounds (None if the entry has none, or if n is
        above ``lower_bound_max_users``: then with a :class:`LowerBoundSkippedWarning`)."""
        if not self._lower_built:
            limit = self.lower_bound_max_users
            if limit is not None and self.n > limit:
                warnings.warn(f"lower bound skipped for n = {self.n} > lower_bound_max_users = "
                              f"{limit} (its evaluation takes minutes at this n; pass "
                              "shuffled(n, lower_bound_max_users=None) to compute it); "
                              "reporting 0.0", LowerBoundSkippedWarning, stacklevel=3)
                self._lower = None
            else:
                self._lower = self.randomizer.lower_bound(self.n)
            self._lower_built = True
        return self._lower

    def delta_lower(self, epsilon: float) -> float:
        """Certified lower bound on the worst-case δ(ε) (0.0 if the entry has no instance or n is
        above ``lower_bound_max_users``, and at ε ≥ ``epsilon0``, where the protocol is (ε, 0)-DP)."""
        eps = check_epsilon(epsilon)
        instance = self.lower_bound
        if instance is None or eps >= self.randomizer.epsilon0:
            return 0.0
        return instance.delta(eps)

    def epsilon_lower(self, delta: float) -> float:
        """Certified lower bound on the smallest valid ε(δ) (0.0 if the entry has no instance or n
        is above ``lower_bound_max_users``); at most ``epsilon0`` (every report is ε0-DP, and so
        is the shuffled protocol, a post-processing of them)."""
        target = check_delta(delta)
        instance = self.lower_bound
        return 0.0 if instance is None else min(instance.epsilon(target), self.randomizer.epsilon0)

    def delta_interval(self, epsilon: float) -> tuple[float, float]:
        """(certified lower, certified upper) bounds on δ(ε)."""
        return self.delta_lower(epsilon), self.delta(epsilon)

    def epsilon_interval(self, delta: float) -> tuple[float, float]:
        """(certified lower, certified upper) bounds on ε(δ)."""
        return self.epsilon_lower(delta), self.epsilon(delta)

    def __repr__(self) -> str:
        return f"ShuffledRandomizer({self.randomizer!r}, n={self.n})"


__all__ = [
    "ANSWER_CACHE_SIZE",
    "LOWER_BOUND_MAX_USERS",
    "clear_answer_cache",
    "SupportsShuffleBound",
    "LowerBoundSkippedWarning",
    "PairBound",
    "VariationRatioBound",
    "LocalPairBound",
    "ExactSmallNBound",
    "Randomizer",
    "ShuffledRandomizer",
]
