"""Figures of shuffle-model bounds: ε vs n, ε vs ε0, a campaign's ε vs its number of rounds and the
error each randomizer buys vs the campaign's total ε (matplotlib is optional, imported lazily).

Data and drawing are separate: :func:`epsilon_vs_users` and :func:`epsilon_vs_epsilon0` compute
:class:`Curve` objects with numpy/scipy only (through the library), :func:`draw_curves` draws them
with matplotlib (the ``plot`` extra: ``pip install dpacct-shuffle[plot]``) and raises
:class:`ImportError` with an installation hint when it is missing.

Curve kinds (one figure can hold all of them for several randomizers):

* ``upper`` — the certified upper bound ``Randomizer.shuffled(n).epsilon(δ)`` (neutral-aware
  variation-ratio bound, docs/theory.md, "Neutral-aware bound");
* ``lower`` — the certified lower bound ``shuffled(n).epsilon_lower(δ)`` of an explicit instance
  (:mod:`dpacct_shuffle.randomizers.lower_bounds`); the true ε(δ) lies between ``lower`` and ``upper``;
* ``fmt`` — the Feldman–McMillan–Talwar closed form (Feldman, McMillan & Talwar, SODA 2023,
  arXiv:2208.04591, Thm 3.2;
  :func:`dpacct_shuffle.lemmas.fmt_shuffle_bound`), valid for any ε0-LDP randomizer; points outside
  its validity condition ε0 ≤ ln(n/(8 ln(2/δ)) − 1) are NaN (a gap in the line), never extrapolated;
* ``published`` — the published variation-ratio pair (Wang et al., arXiv:2304.05007), labelled "not
  a guarantee" (docs/theory.md, "Published pair"); only drawn when requested;
* ``std`` — (:func:`error_vs_epsilon`) the standard deviation of one round's estimate against the
  campaign's total ε, each randomizer at its own largest certified ε0
  (:mod:`dpacct_shuffle.planning`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, SupportsFloat

from dpacct_shuffle.core.validation import check_delta, check_num_users, check_range
from dpacct_shuffle.lemmas import fmt_shuffle_bound
from dpacct_shuffle.progress import ProgressOption, ProgressReporter
from dpacct_shuffle.randomizers.base import Randomizer
from dpacct_shuffle.shuffle_round import published_pair_epsilon

KIND_LABELS = {
    "upper": "upper bound (ours, certified)",
    "lower": "lower bound (explicit instance)",
    "fmt": "FMT closed form",
    "published": "published pair (NOT a guarantee)",
    "std": "std at its certified eps0",
}
_LINESTYLES = {"upper": "-", "lower": "--", "fmt": ":", "published": "-.", "std": "-"}
_MARKERS = {"upper": "o", "lower": "v", "fmt": "", "published": "x", "std": "o"}


@dataclass(frozen=True)
class Curve:
    """One line of a figure: ``y[i]`` = ε at ``x[i]`` (NaN where the bound does not apply).

    Attributes:
      label: the randomizer (or, for ``fmt``, the ε0) the curve belongs to.
      kind: ``"upper"``, ``"lower"``, ``"fmt"``, ``"published"`` or ``"std"`` (module docstring).
      x_name: ``"users"``, ``"epsilon0"``, ``"rounds"`` or ``"epsilon"`` (a campaign's total ε).
      x: the abscissae (numbers of users, ε0 values, numbers of rounds or total ε).
      y: ε at each abscissa (NaN where the bound does not apply); for ``std``, the standard
        deviation.
      seconds: the computing time of each point.
    """

    label: str
    kind: str
    x_name: str
    x: tuple[float, ...]
    y: tuple[float, ...]
    seconds: tuple[float, ...] = field(default=())

    def as_dict(self) -> dict[str, object]:
        """JSON-friendly form (NaN becomes None)."""
        return {"label": self.label, "kind": self.kind, "x_name": self.x_name, "x": list(self.x),
                "y": [None if math.isnan(v) else v for v in self.y], "seconds": list(self.seconds)}


def require_matplotlib() -> Any:
    """Import matplotlib (Agg backend when no display backend was chosen) or raise ImportError
    with an installation hint."""
    try:
        import matplotlib
    except ImportError:
        raise ImportError("plotting needs matplotlib, an optional dependency: "
                          "pip install 'dpacct-shuffle[plot]' (or pip install matplotlib)") from None
    return matplotlib


def check_users_list(users: Sequence[int], name: str = "users") -> list[int]:
    """The numbers of users of an ε-vs-n sweep, each validated; ValueError if the list is empty."""
    ns = [check_num_users(n, f"{name}[{i}]") for i, n in enumerate(users)]
    if not ns:
        raise ValueError(f"{name} must contain at least one number of users")
    return ns


def check_epsilon0_list(epsilon0s: Sequence[float], name: str = "epsilon0s") -> list[float]:
    """The ε0 values of an ε-vs-ε0 sweep, each finite and > 0; ValueError if the list is empty."""
    eps0s = [check_range(f"{name}[{i}]", e, 0.0, math.inf, low_open=True, high_open=True)
             for i, e in enumerate(epsilon0s)]
    if not eps0s:
        raise ValueError(f"{name} must contain at least one value")
    return eps0s


def check_output_path(path: str | Path) -> Path:
    """``path`` as a :class:`~pathlib.Path` whose directory exists (directories are never created).

    Raises:
      FileNotFoundError: the directory of ``path`` does not exist.
    """
    out = Path(path)
    directory = out.parent
    if not directory.is_dir():
        raise FileNotFoundError(f"output directory {str(directory)!r} does not exist "
                                f"(create it first; plot output {str(out)!r})")
    return out


def _fmt_or_nan(epsilon0: float, users: int, delta: float) -> float:
    try:
        return fmt_shuffle_bound(epsilon0, users, delta)
    except ValueError:  # outside the closed form's validity condition: no value, not a guess
        return math.nan


def _timed(function: Callable[[], float]) -> tuple[float, float]:
    import time

    start = time.perf_counter()
    value = function()
    return value, time.perf_counter() - start


def _epsilon0_of(randomizer: Randomizer) -> float | None:
    value = randomizer.parameters.get("epsilon0")
    if value is None:
        return None
    if not isinstance(value, SupportsFloat):
        raise TypeError(f"{randomizer.name}'s epsilon0 parameter must be a number, got {value!r}")
    return float(value)


def _published_epsilon(randomizer: Randomizer, n: int, delta: float) -> float:
    """ε(δ) of the entry's published pair (:func:`~dpacct_shuffle.shuffle_round.published_pair_epsilon`);
    the entry must have published parameters."""
    value = published_pair_epsilon(randomizer, n, delta)
    assert value is not None  # called for entries with published parameters only
    return value


def epsilon_vs_users(
    randomizers: Mapping[str, Randomizer],
    users: Sequence[int],
    delta: float,
    *,
    lower: bool = True,
    fmt: bool = True,
    published: bool = False,
    progress: ProgressOption = None,
) -> list[Curve]:
    """ε(δ) against the number of users for each randomizer (catalog ``Randomizer`` objects).

    Returns, per randomizer, an ``upper`` curve, a ``lower`` curve (if the entry has a lower-bound
    instance and ``lower``), a ``published`` curve (if requested and the entry carries published
    parameters) and, per distinct ε0 among the entries, one ``fmt`` curve. ``progress``: True
    for a tqdm bar, or a callback ``progress(done, total)`` (:mod:`dpacct_shuffle.progress`).
    """
    target = check_delta(delta)
    ns = check_users_list(users)
    if not randomizers:
        raise ValueError("randomizers must contain at least one entry")
    total = len(randomizers) * len(ns) * (1 + int(lower) + int(published))
    curves: list[Curve] = []
    with ProgressReporter(total, "epsilon vs n", progress, unit="bound") as counter:
        for label, randomizer in randomizers.items():
            points = [(float(n), randomizer, n) for n in ns]
            curves.extend(_sweep(label, "users", points, target, lower, published, counter))
    if fmt:
        seen: set[float] = set()
        for randomizer in randomizers.values():
            eps0 = _epsilon0_of(randomizer)
            if eps0 is None or eps0 in seen:
                continue
            seen.add(eps0)
            curves.append(Curve(f"eps0={eps0:g}", "fmt", "users", tuple(float(n) for n in ns),
                                tuple(_fmt_or_nan(eps0, n, target) for n in ns)))
    return curves


def epsilon_vs_epsilon0(
    factories: Mapping[str, Callable[[float], Randomizer]],
    epsilon0s: Sequence[float],
    users: int,
    delta: float,
    *,
    lower: bool = True,
    fmt: bool = True,
    published: bool = False,
    progress: ProgressOption = None,
) -> list[Curve]:
    """ε(δ) against ε0 for n users; ``factories[label](ε0)`` builds the randomizer.

    Returns per factory an ``upper`` curve (and ``lower``/``published`` as in
    :func:`epsilon_vs_users`) and one ``fmt`` curve; ``progress`` as in :func:`epsilon_vs_users`.
    """
    target = check_delta(delta)
    n = check_num_users(users, "users")
    eps0s = check_epsilon0_list(epsilon0s)
    if not factories:
        raise ValueError("factories must contain at least one entry")
    total = len(factories) * len(eps0s) * (1 + int(lower) + int(published))
    curves: list[Curve] = []
    with ProgressReporter(total, "epsilon vs eps0", progress, unit="bound") as counter:
        for label, make in factories.items():
            points = [(eps0, make(eps0), n) for eps0 in eps0s]
            curves.extend(_sweep(label, "epsilon0", points, target, lower, published, counter))
    if fmt:
        curves.append(Curve("any eps0-LDP", "fmt", "epsilon0", tuple(eps0s),
                            tuple(_fmt_or_nan(e, n, target) for e in eps0s)))
    return curves


def _sweep(
    label: str,
    x_name: str,
    points: Sequence[tuple[float, Randomizer, int]],
    delta: float,
    lower: bool,
    published: bool,
    counter: ProgressReporter,
) -> list[Curve]:
    """``upper`` (and ``lower``/``published``) curves of one label over ``(x, randomizer, n)`` points.

    A lower or published point is only present where the entry has a lower-bound instance or
    published parameters.
    """
    columns: dict[str, tuple[list[float], list[float], list[float]]] = {
        "upper": ([], [], []), "lower": ([], [], []), "published": ([], [], [])}

    def record(kind: str, x: float, function: Callable[[], float]) -> None:
        value, seconds = _timed(function)
        xs, ys, ts = columns[kind]
        xs.append(x)
        ys.append(value)
        ts.append(seconds)

    for x, randomizer, n in points:
        shuffled = randomizer.shuffled(n)
        record("upper", x, lambda: shuffled.epsilon(delta))
        counter.tick()
        if lower:
            if shuffled.lower_bound is not None:
                record("lower", x, lambda: shuffled.epsilon_lower(delta))
            counter.tick()
        if published:
            if randomizer.published is not None:
                record("published", x, lambda: _published_epsilon(randomizer, n, delta))
            counter.tick()
    return [Curve(label, kind, x_name, tuple(xs), tuple(ys), tuple(ts))
            for kind, (xs, ys, ts) in columns.items() if ys]


def epsilon_vs_rounds(
    randomizers: Mapping[str, Randomizer],
    rounds: Sequence[int],
    users: int,
    delta: float,
    *,
    sampling_probability: float | None = None,
    progress: ProgressOption = None,
) -> list[Curve]:
    """ε(δ) of campaigns of R rounds (:class:`dpacct_shuffle.campaign.Campaign`, composed by
    ``ShufflePLDAccountant``) for each R in ``rounds``: per randomizer an ``upper`` curve with every
    user reporting and, with ``sampling_probability`` γ, one labelled "…, sampled γ" (each of the
    ``users`` reports w.p. γ)."""
    from dpacct_shuffle.campaign import Campaign

    counts = [check_num_users(r, "rounds") for r in rounds]
    if not counts:
        raise ValueError("rounds must not be empty")
    target = check_delta(delta)
    n = check_num_users(users, "users")
    settings: list[tuple[str, float | None]] = [("", None)]
    if sampling_probability is not None:
        settings.append((f", sampled {sampling_probability:g}", sampling_probability))
    curves = []
    with ProgressReporter(len(randomizers) * len(counts) * len(settings), "epsilon vs rounds",
                          progress, unit="campaign") as counter:
        for label, randomizer in randomizers.items():
            for suffix, gamma in settings:
                ys, seconds = [], []
                for count in counts:
                    campaign = Campaign(randomizer, n, count, sampling_probability=gamma)
                    value, spent = _timed(lambda: campaign.epsilon(target))
                    ys.append(value)
                    seconds.append(spent)
                    counter.tick()
                curves.append(Curve(label + suffix, "upper", "rounds", tuple(float(c) for c in counts),
                                    tuple(ys), tuple(seconds)))
    return curves


def error_vs_epsilon(
    epsilons: Sequence[float],
    users: int,
    delta: float,
    *,
    domain_size: int | None = None,
    value_range: tuple[float, float] | None = None,
    rounds: int = 1,
    candidates: Sequence[str] | None = None,
    sampling_probability: float | None = None,
    progress: ProgressOption = None,
) -> list[Curve]:
    """The error each randomizer buys against the campaign's total ε: at every total ε of
    ``epsilons`` (at ``delta``), each candidate calibrated to its own largest certified ε0 for R
    rounds of ``users`` users, and its standard deviation of one round's estimate — of an item's
    frequency over ``domain_size`` values (:func:`dpacct_shuffle.planning.plan_frequency`), or of
    the mean of values in ``value_range`` (:func:`dpacct_shuffle.planning.plan_mean`); exactly one
    of the two. One ``std`` curve per randomizer (x_name ``"epsilon"``), best first at the first
    total ε; ``candidates`` names a subset (default: every applicable one). ``progress``
    counts plans (one per total ε)."""
    from dpacct_shuffle import planning

    totals = [check_range(f"epsilons[{i}]", e, 0.0, math.inf, low_open=True, high_open=True)
              for i, e in enumerate(epsilons)]
    if not totals:
        raise ValueError("epsilons must contain at least one total epsilon")
    if (domain_size is None) == (value_range is None):
        raise ValueError("give exactly one of domain_size (frequency estimation) or value_range "
                         "(the mean of values in [a, b])")
    columns: dict[str, list[float]] = {}
    with ProgressReporter(len(totals), "error vs epsilon", progress, unit="plan") as counter:
        for total in totals:
            if domain_size is not None:
                result = planning.plan_frequency(
                    domain_size, users, rounds, total, delta, candidates=candidates,
                    sampling_probability=sampling_probability, progress=False)
            else:
                assert value_range is not None
                result = planning.plan_mean(
                    value_range, users, rounds, total, delta, candidates=candidates,
                    sampling_probability=sampling_probability, progress=False)
            for plan in result.plans:
                columns.setdefault(plan.randomizer.name, []).append(plan.std)
            counter.tick()
    xs = tuple(totals)
    return [Curve(label, "std", "epsilon", xs, tuple(ys)) for label, ys in columns.items()]


_X_LABELS = {"users": "number of users n", "epsilon0": "local epsilon0",
             "rounds": "number of rounds R", "epsilon": "total epsilon of the campaign at delta"}
_Y_LABELS = {"rounds": "campaign epsilon at delta",
             "epsilon": "std of one round's estimate (each at its certified eps0)"}


def draw_curves(
    curves: Sequence[Curve],
    path: str | Path,
    *,
    title: str = "",
    logx: bool | None = None,
    logy: bool = True,
    ax: Any = None,
) -> Path:
    """Draw ``curves`` on one axes and save to ``path`` (format from the suffix: png, svg, pdf).

    One colour per label, one line style per kind (solid upper, dashed lower, dotted FMT,
    dash-dot published). ``logx`` defaults to True for ε vs n. With ``ax`` given, draws into it
    and saves its figure. Returns the path written. The directory of ``path`` must exist
    (:func:`check_output_path`); it is not created.
    """
    if not curves:
        raise ValueError("curves must not be empty")
    out = check_output_path(path)
    require_matplotlib()
    import matplotlib

    if ax is None and matplotlib.get_backend().lower() not in ("agg", "svg", "pdf", "cairo"):
        matplotlib.use("Agg")  # file output only: never needs a display
    import matplotlib.pyplot as plt

    own_figure = ax is None
    if own_figure:
        fig, ax = plt.subplots(figsize=(7.5, 5.0), dpi=120)
    else:
        fig = ax.figure
    labels = list(dict.fromkeys(c.label for c in curves if c.kind != "fmt"))
    palette = plt.rcParams["axes.prop_cycle"].by_key().get("color", ["C0", "C1", "C2", "C3"])
    colours = {label: palette[i % len(palette)] for i, label in enumerate(labels)}
    for curve in curves:
        colour = "black" if curve.kind == "fmt" else colours[curve.label]
        name = (f"{KIND_LABELS['fmt']} ({curve.label})" if curve.kind == "fmt"
                else f"{curve.label}: {KIND_LABELS[curve.kind]}")
        ax.plot(curve.x, curve.y, linestyle=_LINESTYLES[curve.kind], marker=_MARKERS[curve.kind],
                markersize=4, color=colour, label=name)
    x_name = curves[0].x_name
    if logx if logx is not None else x_name in ("users", "rounds", "epsilon"):
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(_X_LABELS.get(x_name, x_name))
    ax.set_ylabel(_Y_LABELS.get(x_name, "shuffled epsilon at delta"))
    if title:
        ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out)
    if own_figure:
        plt.close(fig)
    return out


__all__ = ["Curve", "KIND_LABELS", "check_epsilon0_list", "check_output_path", "check_users_list",
           "draw_curves", "epsilon_vs_epsilon0", "error_vs_epsilon", "epsilon_vs_rounds", "epsilon_vs_users",
           "require_matplotlib"]
