"""Searches on a monotone predicate: the one place where a threshold is bracketed and narrowed.

Every search here keeps a *feasible* end (where the predicate holds, e.g. "the certified δ is ≤
the target") and an *infeasible* end, and returns the feasible end — the point where the
predicate was evaluated and found true, never an interpolated point. A search for a guarantee
therefore returns a value whose certificate was checked.

* :func:`bisect` halves a float bracket [feasible, infeasible] (either order) to a relative width
  or for a fixed number of steps;
* :func:`smallest_true_integer` bisects integers;
* :func:`expand_bracket` doubles an end until the predicate flips, with a ceiling;
* :func:`epsilon_search` finds the smallest ε with a certified δ_upper(ε) ≤ δ by secant steps on
  ln(−ln δ) against ln ε, safeguarded by bisection;
* :func:`largest_below` finds the largest x with a non-decreasing value(x) ≤ a target by secant
  steps on ln value against ln x, safeguarded by bisection (e.g. a campaign's per-report ε0).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeVar, overload

Number = TypeVar("Number", int, float)


def bisect(holds: Callable[[float], bool], feasible: float, infeasible: float, *,
           rtol: float | None = None, steps: int | None = None) -> float:
    """The feasible end of the bracket after bisecting it (midpoint ``0.5·(a + b)``).

    Invariant: ``holds(feasible)`` is true (or taken as true) and ``holds(infeasible)`` false; each
    step evaluates the midpoint and replaces the end on the same side of the predicate. ``feasible``
    may lie above or below ``infeasible`` (a smallest feasible ε, or a largest feasible ε0).

    Stops after ``steps`` midpoints, or while ``|feasible − infeasible| > rtol·|feasible|`` is
    false (exactly one of the two must be given). Returns the feasible end.
    """
    if (rtol is None) == (steps is None):
        raise TypeError("bisect needs exactly one of rtol or steps")
    done = 0
    width = 0.0 if rtol is None else rtol

    def go_on() -> bool:
        if steps is not None:
            return done < steps
        return abs(feasible - infeasible) > width * abs(feasible)

    while go_on():
        done += 1
        middle = 0.5 * (feasible + infeasible)
        if holds(middle):
            feasible = middle
        else:
            infeasible = middle
    return feasible


def smallest_true_integer(holds: Callable[[int], bool], low: int, high: int) -> int:
    """Smallest integer k in [low, high] with ``holds(k)``, for a predicate monotone in k (false
    then true) and true at ``high`` (which is returned without evaluation if nothing smaller holds).

    Invariant: every k < low fails and ``high`` holds; each step evaluates ``(low + high) // 2``.
    """
    while low < high:
        middle = (low + high) // 2
        if holds(middle):
            high = middle
        else:
            low = middle + 1
    return low


@overload
def expand_bracket(holds: Callable[[Number], bool], low: Number, high: Number
                   ) -> tuple[Number, Number]: ...


@overload
def expand_bracket(holds: Callable[[Number], bool], low: Number, high: Number, *,
                   ceiling: Number | float) -> tuple[Number, Number] | None: ...


def expand_bracket(holds: Callable[[Number], bool], low: Number, high: Number, *,
                   ceiling: Number | float = math.inf) -> tuple[Number, Number] | None:
    """Double ``high`` while ``holds(high)``: returns (low, high) with ``holds(high)`` false and
    ``low`` the last point found true (the ``low`` given if the first ``high`` fails already).

    ``high`` is capped at ``ceiling``; ``None`` if the predicate still holds at the ceiling (never
    without a ceiling: the search then doubles until the predicate fails). Works
    for floats and integers (``min(2·high, ceiling)``).
    """
    while holds(high):
        if high >= ceiling:
            return None
        doubled = 2 * high
        low, high = high, (doubled if doubled < ceiling else type(high)(ceiling))
    return low, high


def epsilon_search(delta_upper: Callable[[float], float], delta: float, total_variation: float,
                   eps_cap: float, guess: float, rtol: float) -> float:
    """Smallest ε (relative tolerance rtol) with certified δ_upper(ε) ≤ delta.

    ``delta_upper`` must be non-increasing in ε, at most ``total_variation`` at ε = 0 and 0 for
    ε ≥ ``eps_cap``; ``guess`` is a starting point only.

    Secant iterations on F(u) = ln(−ln δ_upper(e^u)) − ln(−ln delta), u = ln ε: for the Gaussian-like
    tails of the pair ln δ ≈ −b·ε^γ, so F is nearly affine in u and the secant converges in a few
    steps. Every evaluated point is recorded as "too small" (δ_upper > delta, the infeasible end)
    or "feasible"; once the estimate has settled, a feasible point just above it and a too-small
    point rtol below are probed. Falls back to bisection in the bracket whenever the secant step
    leaves it. The result is the feasible end: always a point where the certified upper bound was
    evaluated and found ≤ delta.
    """
    if delta >= total_variation:  # δ(0) is at most the victim's TV (post-processing of the victim)
        return 0.0
    log_target = -math.log(delta)

    def upper(eps: float) -> float:
        if eps >= eps_cap:
            return 0.0
        return delta_upper(eps)

    def merit(d: float) -> float:
        """F without the log of ε: ln(−ln δ) − ln(−ln target), ±inf at δ ∈ {0, 1}."""
        if d <= 0.0:
            return math.inf
        if d >= 1.0:
            return -math.inf
        return math.log(-math.log(d)) - math.log(log_target)

    lo = 0.0  # largest ε known with δ_upper > delta (ε = 0 qualifies: delta < total_variation)
    hi = eps_cap if math.isfinite(eps_cap) else math.inf  # smallest known feasible ε
    points: list[tuple[float, float]] = []  # (u, F) of finite evaluations
    widths: list[float] = []  # log(hi/lo) before each step since the last bisection

    def record(eps: float) -> bool:
        nonlocal lo, hi
        value = upper(eps)
        feasible = value <= delta
        if feasible:
            hi = min(hi, eps)
        else:
            lo = max(lo, eps)
        f = merit(value)
        if math.isfinite(f):
            points.append((math.log(eps), f))
        return feasible

    eps = guess
    first_guess = eps
    zero_checked = False
    record(eps)
    for _ in range(100):
        if math.isfinite(hi) and hi - lo <= rtol * hi:
            break
        if lo == 0.0 and hi <= 1e-3 * first_guess and not zero_checked:
            # every ε > 0 tried is feasible, far below the guess: maybe ε = 0 is
            zero_checked = True
            if upper(0.0) <= delta:
                return 0.0
        # next estimate of the root
        if len(points) >= 2 and points[-1][1] != points[-2][1]:
            (u1, f1), (u2, f2) = points[-2], points[-1]
            estimate = math.exp(min(u2 - f2 * (u2 - u1) / (f2 - f1), 700.0))
        elif points:
            u2, f2 = points[-1]
            # ln δ ≈ −b·ε²: F ≈ 2·(u − u*)
            estimate = math.exp(min(u2 - f2 / 2.0, 700.0))
        else:
            estimate = 2.0 * eps if not math.isfinite(hi) else 0.5 * (lo + hi)
        bracket_hi = hi if math.isfinite(hi) else 4.0 * max(lo, eps)
        # bisection (geometric once lo > 0) when the secant leaves the bracket or the bracket's
        # log-width did not halve over the last three evaluations (a plateau-then-cliff δ, e.g.
        # tiny β with a neutral share close to 1, stalls the secant)
        width = math.log(hi / lo) if lo > 0.0 and math.isfinite(hi) else math.inf
        widths.append(width)
        stalled = len(widths) >= 4 and not widths[-1] <= 0.5 * widths[-4]
        if stalled or not (lo < estimate < bracket_hi) or not math.isfinite(estimate):
            estimate = math.sqrt(lo * bracket_hi) if lo > 0.0 else 0.25 * bracket_hi
            widths.clear()
        settled = abs(estimate - eps) <= 0.5 * rtol * estimate
        if settled:
            if not hi <= estimate * (1.0 + 0.5 * rtol):
                # no feasible point close above the estimate yet: probe one just above it
                eps = min(estimate * (1.0 + 0.25 * rtol), bracket_hi)
                record(eps)
                continue
            # a feasible point sits at the estimate: probe a too-small point rtol below it
            eps = hi * (1.0 - 0.9 * rtol)
            if eps <= lo:
                break
            record(eps)
            continue
        eps = estimate
        record(eps)
    return hi


def largest_below(value: Callable[[float], float], target: float, start: float, *,
                  floor: float, ceiling: float, rtol: float, growth: float = 2.0,
                  max_step: float = 8.0) -> float | None:
    """Largest x in [floor, ceiling] (0 < floor ≤ ceiling) with ``value(x) ≤ target``, to relative
    width ``rtol``, for ``value`` non-decreasing in x; ``None`` if ``floor`` fails.

    Returns the feasible end: an evaluated x with ``value(x) ≤ target``, and (unless it is
    ``ceiling``) an evaluated x' ∈ (x, (1 + rtol)·x] with ``value(x') > target`` — so the result is
    certified by its own evaluation whatever the steps were, and near-largest by monotonicity.

    Steps: the root of the secant through the two latest evaluations with finite positive value,
    in (ln x, ln value) — before any failure the smaller of that and the root in (x, ln value), so
    that a value growing exponentially is not overshot (one evaluation: slope 1, ln value ≈ ln x,
    the first step kept within a factor ``growth`` of ``start``); outside a bracket a step moves
    at most a factor ``max_step``.
    Inside a bracket [feasible, infeasible] the probe is the estimate x*; once x* is within rtol/2
    of the previous probe (settled) it is x*·(1 ∓ rtol/2), on the side where the bracket's end is
    farther, so that two evaluations close the bracket; an estimate outside the bracket, or a
    bracket that did not halve over three evaluations, gets its midpoint (bisection).
    """
    feasible: float | None = None  # largest evaluated x with value ≤ target
    infeasible: float | None = None  # smallest evaluated x with value > target
    points: list[tuple[float, float]] = []  # (x, ln value) of finite positive values
    widths: list[float] = []

    def probe(x: float) -> None:
        nonlocal feasible, infeasible
        result = value(x)
        if result <= target:
            feasible = x if feasible is None else max(feasible, x)
        else:
            infeasible = x if infeasible is None else min(infeasible, x)
        if 0.0 < result < math.inf:
            points.append((x, math.log(result)))

    def secant(log_x: bool) -> float:
        """Root of the secant through the two latest points, in (ln x or x, ln value)."""
        (u1, f1), (u2, f2) = points[-2], points[-1]
        if log_x:
            u1, u2 = math.log(u1), math.log(u2)
        if u1 == u2 or not (f2 - f1) / (u2 - u1) > 0.0:
            return math.nan
        root = u2 + (math.log(target) - f2) * (u2 - u1) / (f2 - f1)
        return math.exp(min(root, 700.0)) if log_x else root

    def estimate(stepping_up: bool) -> float:
        """The secant's root in (ln x, ln value); stepping up beyond every evaluation, the smaller
        of it and the root in (x, ln value) (a value growing like e^(c·x) is overshot by the
        first, a power of x by the second)."""
        if len(points) >= 2:
            guesses = [secant(True)] + ([secant(False)] if stepping_up else [])
            finite = [guess for guess in guesses if math.isfinite(guess) and guess > 0.0]
            if finite:
                return min(finite)
        if points:
            u2, f2 = points[-1]
            guess = u2 * math.exp(min(math.log(target) - f2, 700.0))
            return min(max(guess, u2 / growth), u2 * growth)
        return math.nan

    x = min(max(start, floor), ceiling)
    probe(x)
    for _ in range(200):
        if feasible is not None and infeasible is not None and (
                infeasible - feasible <= rtol * feasible):
            return feasible
        if infeasible is None and feasible is not None and feasible >= ceiling:
            return ceiling
        if feasible is None and infeasible is not None and infeasible <= floor:
            return None
        guess = estimate(infeasible is None)
        if feasible is None or infeasible is None:
            if feasible is not None:  # only passes so far: step up
                if not math.isfinite(guess):
                    guess = feasible * growth
                x = min(max(guess * (1.0 + 0.5 * rtol), feasible * (1.0 + 0.99 * rtol),
                            math.nextafter(feasible, math.inf)), feasible * max_step, ceiling)
            else:  # only failures so far: step down
                assert infeasible is not None
                if not math.isfinite(guess):
                    guess = infeasible / growth
                x = max(min(guess * (1.0 - 0.5 * rtol), infeasible / (1.0 + 0.99 * rtol),
                            math.nextafter(infeasible, -math.inf)), infeasible / max_step, floor)
            probe(x)
            continue
        widths.append(infeasible - feasible)
        stalled = len(widths) >= 4 and not widths[-1] <= 0.5 * widths[-4]
        if stalled or not feasible < guess < infeasible:
            x = 0.5 * (feasible + infeasible)
            widths.clear()
        elif abs(guess - x) > 0.5 * rtol * guess:  # not settled: probe the estimate itself
            margin = 0.02 * (infeasible - feasible)
            x = min(max(guess, feasible + margin), infeasible - margin)
        elif guess - feasible >= infeasible - guess:
            # settled, the feasible end farther: a passing probe just below the estimate, close
            # enough to the failing end to close the bracket if it passes
            x = max(guess * (1.0 - 0.5 * rtol), infeasible / (1.0 + 0.99 * rtol))
        else:
            x = min(guess * (1.0 + 0.5 * rtol), feasible * (1.0 + 0.99 * rtol))
        if not feasible < x < infeasible:
            x = 0.5 * (feasible + infeasible)
            if not feasible < x < infeasible:  # adjacent floats: no narrower bracket exists
                return feasible
        probe(x)
    raise RuntimeError("largest_below did not converge in 200 evaluations")


__all__ = ["bisect", "epsilon_search", "expand_bracket", "largest_below", "smallest_true_integer"]
