"""Discretisation, first half: the adaptive grid of profile values a PLD or an RDP curve is built
from (:func:`profile_grid`).

Discretisation (stated for the tightness claims)
------------------------------------------------
* Grid losses are integer multiples of ``value_discretization_interval`` d, so δ is evaluated
  *at* the grid points and no loss needs rounding. By default d is chosen from the scale of the
  profile's privacy loss (:func:`loss_scale`, :func:`discretization_for_scale`): the largest
  1e-4·2^{−j} (j ≥ 0, 1e-4 being dp-accounting's default) with at least ``LOSS_RESOLUTION`` = 500
  grid steps per scale unit. A shuffle round with ε ≈ 0.008 thus gets d ≈ 3e-6 instead of a fixed
  1e-4, one step of which would be 1 % of its ε. An explicit d overrides the choice.
* The last positive grid point is ``ceil(ε_cap/d)·d`` with δ = 0 (δ vanishes for every ε ≥ ε_cap
  and is non-increasing), so the PLD has no mass at +∞ and its largest loss is ≤ ε_cap + d
  (an ε0-LDP round is ε0-DP after shuffling: the output is a post-processing of the reports);
  without a cap the last value goes to +∞.
* Points are placed adaptively: starting from ``_INITIAL_POINTS`` equally spaced points on
  [0, ε_cap], an interval [ε_a, ε_b] is bisected (at a multiple of d) while it is wider than
  ``max_step`` (0.25) or, for δ(ε_a) > ``min_delta`` (1e-16), while the estimated error in ε of
  its chord exceeds d + ``epsilon_tolerance``·ε_b (1e-3·ε_b). The estimate compares the chord
  with the log-linear interpolation of the two end values (:func:`_interval_epsilon_gaps`).
  Points beyond the first initial point with δ ≤ ``stop_delta`` (default ``min_delta``) are
  not evaluated: the chord from there to the cap point (δ = 0) is already a valid upper bound. Point placement and d only steer
  tightness — soundness never depends on them (tests/test_profiles.py and tests/test_cohorts.py
  assert one round's ε within 0.2 % of the core's).
* Values are made non-increasing by a running minimum (valid: the true δ is non-increasing, so
  min over ε_j ≤ ε_k of upper bounds at ε_j is an upper bound at ε_k).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Optional

import attr
import numpy as np
from numpy.typing import NDArray

from dpacct_shuffle.core.validation import check_range
from dpacct_shuffle.profiles.privacy_profile import PrivacyProfile
from dpacct_shuffle.progress import ProgressOption, ProgressReporter

DEFAULT_VALUE_DISCRETIZATION = 1e-4
# grid steps per unit of loss_scale when the discretisation is chosen automatically
LOSS_RESOLUTION = 500
# the automatic interval is DEFAULT_VALUE_DISCRETIZATION·2^-j for 0 <= j <= this
_MAX_HALVINGS = 30
DEFAULT_EPSILON_TOLERANCE = 1e-3
DEFAULT_MAX_STEP = 0.25
DEFAULT_MIN_DELTA = 1e-16
_INITIAL_POINTS = 32
_UNCAPPED_MAX_EPSILON = 64.0


@attr.s(frozen=True, slots=True, auto_attribs=True)
class ProfileGrid:
    """Profile values on a grid of losses ``k·d`` (k ≥ 0 integers, increasing).

    ``deltas`` are non-increasing upper bounds; if ``capped``, the last value is 0.
    """

    discretization: float
    rounded_epsilons: NDArray[np.int64]
    deltas: NDArray[np.float64]
    capped: bool


def _interval_epsilon_gaps(e_a: NDArray[np.float64], e_b: NDArray[np.float64],
                           y_a: NDArray[np.float64], y_b: NDArray[np.float64]) -> NDArray[np.float64]:
    """Estimated ε error of the Connect-the-Dots chord on grid intervals [e_a, e_b] with values
    y_a ≥ y_b (refinement only).

    Between two grid points a profile is close to log-linear in ε; the chord (linear in x = e^ε)
    lies above it. The estimate is the largest horizontal gap, in ε, between the chord and the
    log-linear interpolation at levels inside the interval (intervals ending at δ = 0 use the
    vertical chord to the cap, i.e. their width). Soundness never depends on it.
    """
    gaps = np.where((y_a > y_b) & (y_b <= 0.0), e_b - e_a, 0.0)
    inner = (y_a > y_b) & (y_b > 0.0)
    if np.any(inner):
        levels = np.linspace(0.0, 1.0, 17)[1:-1][None, :]
        e_a, e_b, y_a, y_b = (v[inner][:, None] for v in (e_a, e_b, y_a, y_b))
        e_true = e_a + levels * (e_b - e_a)
        y = y_a * (y_b / y_a) ** levels
        x_a, x_b = np.exp(e_a), np.exp(e_b)
        e_chord = np.log(x_a + (y_a - y) * (x_b - x_a) / (y_a - y_b))
        gaps[inner] = np.max(e_chord - e_true, axis=1)
    return gaps


def loss_scale(profile: PrivacyProfile) -> float:
    """Scale of a profile's privacy loss, √(2π)·δ(0) (steers the discretisation only).

    For a μ-GDP pair (privacy loss ~ N(μ²/2, μ²)) δ(0) = 2Φ(μ/2) − 1 ≈ μ/√(2π), so this is close
    to the standard deviation μ of the loss of the Gaussian-like shuffled pairs; for any pair
    δ(0) is the total variation of its two laws. One evaluation of the profile, at ε = 0 (the
    first grid point anyway). Returns 0 for a profile with δ(0) = 0.
    """
    return math.sqrt(2.0 * math.pi) * float(profile.delta(0.0))


def discretization_for_scale(scale: float) -> float:
    """The largest d = 1e-4·2^{−j} (0 ≤ j ≤ 30) with d ≤ ``scale``/``LOSS_RESOLUTION``.

    Powers of two keep the choice stable: it changes only when the scale moves by a factor of 2,
    so an accountant that re-chooses its interval as events arrive rarely rebuilds. A scale that is 0, infinite or
    NaN gives dp-accounting's default 1e-4.
    """
    if not scale > 0.0 or not math.isfinite(scale):
        return DEFAULT_VALUE_DISCRETIZATION
    ratio = DEFAULT_VALUE_DISCRETIZATION * LOSS_RESOLUTION / scale
    halvings = 0 if ratio <= 1.0 else min(_MAX_HALVINGS, math.ceil(math.log2(ratio)))
    return math.ldexp(DEFAULT_VALUE_DISCRETIZATION, -halvings)


def _discretization(profile: PrivacyProfile, value_discretization_interval: float | None) -> float:
    """``value_discretization_interval`` validated, or chosen from the profile's loss scale."""
    if value_discretization_interval is None:
        return discretization_for_scale(loss_scale(profile))
    return check_range("value_discretization_interval", value_discretization_interval, 0.0, 1.0,
                       low_open=True)


def profile_grid(profile: PrivacyProfile,
                 value_discretization_interval: float | None = None,
                 epsilon_tolerance: float = DEFAULT_EPSILON_TOLERANCE,
                 max_step: float = DEFAULT_MAX_STEP,
                 min_delta: float = DEFAULT_MIN_DELTA,
                 progress: ProgressOption = False,
                 stop_delta: float | None = None) -> ProfileGrid:
    """Adaptive grid of the profile (see the module docstring, "Discretisation").

    ``stop_delta`` (default ``min_delta``, at most it): the initial points are evaluated up to
    the first one with δ ≤ ``stop_delta`` (intervals with δ ≤ ``min_delta`` are still not
    refined). The chord from that point to the cap puts a mass of about its δ at the largest
    loss ε_cap, so a PLD whose tails are cut below ``min_delta`` asks for a smaller
    ``stop_delta`` (:mod:`dpacct_shuffle.event_plds`).

    ``value_discretization_interval`` None (default): chosen from the profile's loss scale
    (:func:`discretization_for_scale`). ``progress``: ``True`` shows a tqdm count of the profile
    evaluations on stderr (the number needed is not known in advance), a callback
    ``progress(done, done)`` is called after each (after each batch of them for a profile with
    an array form; :mod:`dpacct_shuffle.progress`).
    """
    with ProgressReporter(None, "privacy-loss profile", progress, unit="eval") as reporter:
        return _adaptive_grid(profile, value_discretization_interval, epsilon_tolerance,
                              max_step, min_delta, reporter.tick, stop_delta)


def _adaptive_grid(profile: PrivacyProfile, value_discretization_interval: float | None,
                   epsilon_tolerance: float, max_step: float, min_delta: float,
                   tick: Callable[[int], None],
                   stop_delta: float | None = None) -> ProfileGrid:
    """:func:`profile_grid`, calling ``tick(count)`` after ``count`` profile evaluations."""
    d = _discretization(profile, value_discretization_interval)
    tolerance = check_range("epsilon_tolerance", epsilon_tolerance, 0.0, 1.0, low_open=True)
    step = check_range("max_step", max_step, 0.0, math.inf, low_open=True)
    floor = check_range("min_delta", min_delta, 0.0, 1.0)
    stop = floor if stop_delta is None else check_range("stop_delta", stop_delta, 0.0, floor)
    values: dict[int, float] = {}

    def evaluate_many(ks: Sequence[int]) -> None:
        """Evaluate the profile at the new points k·d (one call when it has an array form)."""
        missing = sorted({int(k) for k in ks} - values.keys())
        if not missing:
            return
        if profile.deltas_upper is None:
            new = [float(profile.delta(k * d)) for k in missing]
        else:
            new = [float(v) for v in profile.deltas(np.array(missing, dtype=np.float64) * d)]
        for k, value in zip(missing, new):
            if not 0.0 <= value <= 1.0:  # also rejects NaN
                raise ValueError(f"profile returned delta={value!r} at epsilon={k * d!r}; "
                                 "a profile must return values in [0, 1]")
            values[k] = value
            tick(1)

    def evaluate(k: int) -> float:
        evaluate_many((k,))
        return values[k]

    capped = math.isfinite(profile.epsilon_cap)
    if capped:
        k_end = max(1, math.ceil(profile.epsilon_cap / d))
    else:
        # grow until δ is negligible, flat (everything beyond goes to +∞ anyway) or ε is huge
        k_end = max(1, math.ceil(1.0 / d))
        while (evaluate(k_end) > stop and k_end * d < _UNCAPPED_MAX_EPSILON
               and evaluate(2 * k_end) < values[k_end]):
            k_end *= 2
    # initial points in increasing ε, up to the first one with δ <= stop_delta: beyond it the chord
    # to the cap point (δ = 0) is already a valid upper bound, so no evaluation is needed there
    # (deep tails are also the most expensive evaluations of the core)
    initial = [int(k) for k in np.unique(np.linspace(0, k_end, _INITIAL_POINTS + 1).round())
               if k < k_end]
    if profile.deltas_upper is not None:
        # an array form: all of them in one call, then the same points as the sequential order
        # keeps (nothing beyond the first one with δ <= stop_delta)
        evaluate_many(initial)
        negligible = [k for k in sorted(values) if values[k] <= stop]
        for k in [k for k in values if negligible and k > negligible[0]]:
            del values[k]
    else:
        for k in initial:
            if evaluate(k) <= stop:
                break
    if capped:
        values[k_end] = 0.0  # δ(ε) = 0 for ε >= ε_cap, and k_end·d >= ε_cap
    else:
        evaluate(k_end)
    max_width = max(1, math.floor(step / d))
    keys = np.array(sorted(values), dtype=np.int64)
    refine_options = (d, tolerance, floor, max_width)
    if profile.deltas_upper is not None:
        levels = _refine_by_levels(profile, keys, np.array([values[int(k)] for k in keys]),
                                   refine_options, tick)
        if levels is not None:
            return ProfileGrid(d, levels[0], levels[1], capped)
    while True:
        keys = np.array(sorted(values), dtype=np.int64)
        ys = np.minimum.accumulate(np.array([values[int(k)] for k in keys]))
        refine = _refined(keys[:-1], keys[1:], ys[:-1], ys[1:], refine_options)
        if not np.any(refine):
            break
        evaluate_many(((keys[:-1][refine] + keys[1:][refine]) // 2).tolist())
    keys = np.array(sorted(values), dtype=np.int64)
    deltas = np.minimum.accumulate(np.array([values[int(k)] for k in keys], dtype=np.float64))
    return ProfileGrid(d, keys, deltas, capped)


def _refined(k_a: NDArray[np.int64], k_b: NDArray[np.int64], y_a: NDArray[np.float64],
             y_b: NDArray[np.float64], options: tuple[float, float, float, int]) -> NDArray[np.bool_]:
    """Which grid intervals [k_a·d, k_b·d] (values y_a ≥ y_b) the adaptive grid bisects: wider
    than ``max_width``, or a chord ε error above d + tolerance·ε_b, while δ(ε_a) > ``min_delta``
    (module docstring, "Discretisation"; elementwise, so any subset of intervals gives the same
    answers)."""
    d, tolerance, floor, max_width = options
    gaps = _interval_epsilon_gaps(np.asarray(k_a * d, dtype=np.float64),
                                  np.asarray(k_b * d, dtype=np.float64), y_a, y_b)
    widths = k_b - k_a
    allowed = d + tolerance * k_b * d
    return (widths >= 2) & (y_a > floor) & ((widths > max_width) | (gaps > allowed))


# bisection levels decided per profile evaluation in _refine_by_levels
_SPECULATIVE_LEVELS = 5


def _refine_by_levels(profile: PrivacyProfile, keys: NDArray[np.int64],
                      values: NDArray[np.float64], options: tuple[float, float, float, int],
                      tick: Callable[[int], None]
                      ) -> Optional[tuple[NDArray[np.int64], NDArray[np.float64]]]:
    """The refinement of :func:`profile_grid` for a profile with an array form, several levels
    per evaluation; None if the refined values are not non-increasing (then the caller refines
    pass by pass).

    Pass by pass, every interval of the current points is tested with the running minimum of the
    values (:func:`_refined`) and the tested ones are bisected. When the values of the final
    points are non-increasing, so are those of every earlier set of points (a subset), the
    running minimum equals the values, and an interval's test depends on its own end points
    only: the final points are the closure of bisecting every interval its test selects.
    Here each interval to test gets the midpoints of ``_SPECULATIVE_LEVELS`` levels of bisection
    evaluated in one call (the array form is elementwise, so every value is the one a pass would
    get), all of their sub-intervals are tested in one call, and the tests are resolved from the
    top: a sub-interval counts when its parent was bisected.
    """
    d = options[0]
    known_keys, known_values = keys, values
    included_keys, included_values = [keys], [values]
    starts, ends = keys[:-1], keys[1:]
    while len(starts):
        # the speculative bisection tree of every interval to test: level j has 2^j intervals
        level_starts, level_ends = [starts[:, None]], [ends[:, None]]
        for _ in range(_SPECULATIVE_LEVELS):
            a, b = level_starts[-1], level_ends[-1]
            middle = (a + b) // 2
            level_starts.append(np.stack([a, middle], axis=2).reshape(len(starts), -1))
            level_ends.append(np.stack([middle, b], axis=2).reshape(len(starts), -1))
        candidates = np.unique(np.concatenate([level.ravel() for level in level_ends[1:]]))
        missing = candidates[~np.isin(candidates, known_keys)]
        if len(missing):
            new = np.asarray(profile.deltas(missing.astype(np.float64) * d), dtype=np.float64)
            if not np.all((new >= 0.0) & (new <= 1.0)):  # also rejects NaN
                bad = int(np.flatnonzero(~((new >= 0.0) & (new <= 1.0)))[0])
                raise ValueError(f"profile returned delta={float(new[bad])!r} at "
                                 f"epsilon={int(missing[bad]) * d!r}; a profile must return "
                                 "values in [0, 1]")
            tick(len(new))
            merged = np.concatenate([known_keys, missing])
            order = np.argsort(merged, kind="stable")
            known_keys, known_values = merged[order], np.concatenate([known_values, new])[order]
        tested_starts = np.concatenate([level.ravel() for level in level_starts[:-1]])
        tested_ends = np.concatenate([level.ravel() for level in level_ends[:-1]])
        refine = _refined(tested_starts, tested_ends,
                          known_values[np.searchsorted(known_keys, tested_starts)],
                          known_values[np.searchsorted(known_keys, tested_ends)], options)
        # resolve from the top: level j's tests count where its parent (level j − 1) was bisected
        active = np.ones((len(starts), 1), dtype=bool)
        offset = 0
        for level in range(_SPECULATIVE_LEVELS):
            size = active.size
            bisected = active & refine[offset:offset + size].reshape(active.shape)
            offset += size
            middles = (level_starts[level] + level_ends[level]) // 2
            chosen = middles[bisected]
            included_keys.append(chosen)
            included_values.append(known_values[np.searchsorted(known_keys, chosen)])
            active = np.repeat(bisected, 2, axis=1)
        starts = level_starts[-1][active]
        ends = level_ends[-1][active]
    all_keys = np.concatenate(included_keys)
    order = np.argsort(all_keys, kind="stable")
    final_keys, final_values = all_keys[order], np.concatenate(included_values)[order]
    if np.any(np.diff(final_values) > 0.0):
        return None
    return final_keys, final_values
