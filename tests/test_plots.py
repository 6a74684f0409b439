"""Tests of :mod:`dpacct_shuffle.plots` (data against the library, files written with Agg).

Skipped as a whole when matplotlib (the ``plot`` extra) is not installed; the behaviour without
it is tested in ``tests/test_plot_extras.py``.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import pytest

matplotlib = pytest.importorskip("matplotlib", reason="the plot extra (matplotlib) is not installed")
matplotlib.use("Agg")

from dpacct_shuffle import plots, randomizers  # noqa: E402
from dpacct_shuffle.cli import main  # noqa: E402
from dpacct_shuffle.lemmas import fmt_shuffle_bound  # noqa: E402

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_epsilon_vs_users_values_equal_library() -> None:
    entries = {"krr": randomizers.krr(1.0, 10), "wc": randomizers.worst_case_ldp(1.0)}
    users = [300, 5000]
    calls: list[tuple[int, int]] = []
    curves = plots.epsilon_vs_users(entries, users, 1e-6, progress=lambda d, t: calls.append((d, t)))
    by_key = {(c.label, c.kind): c for c in curves}
    for label, entry in entries.items():
        upper, lower = by_key[(label, "upper")], by_key[(label, "lower")]
        assert upper.x == (300.0, 5000.0)
        assert upper.y == tuple(entry.shuffled(n).epsilon(1e-6) for n in users)
        assert lower.y == tuple(entry.shuffled(n).epsilon_lower(1e-6) for n in users)
        assert all(lo <= up for lo, up in zip(lower.y, upper.y))
    fmt = [c for c in curves if c.kind == "fmt"]
    assert len(fmt) == 1  # one FMT curve per distinct eps0
    # n = 300 is outside the closed form's validity at delta = 1e-6: ln(n/(8 ln(2/delta)) - 1) < 1
    assert math.isnan(fmt[0].y[0])
    assert fmt[0].y[1] == fmt_shuffle_bound(1.0, 5000, 1e-6)
    assert calls[-1][0] == calls[-1][1] == 8


def test_epsilon_vs_epsilon0_values_equal_library() -> None:
    curves = plots.epsilon_vs_epsilon0({"krr": lambda e: randomizers.krr(e, 10)}, [0.5, 1.0], 2000,
                                       1e-6, lower=False, published=True)
    kinds = {c.kind: c for c in curves}
    assert set(kinds) == {"upper", "published", "fmt"}
    assert kinds["upper"].y == tuple(randomizers.krr(e, 10).shuffled(2000).epsilon(1e-6)
                                     for e in (0.5, 1.0))
    # the published pair uses a larger neutral share, so it can only be below our valid bound
    assert all(p <= u for p, u in zip(kinds["published"].y, kinds["upper"].y))


def test_bad_arguments_raise_value_error() -> None:
    with pytest.raises(ValueError, match="users"):
        plots.epsilon_vs_users({"wc": randomizers.worst_case_ldp(1.0)}, [], 1e-6)
    with pytest.raises(ValueError, match="delta"):
        plots.epsilon_vs_users({"wc": randomizers.worst_case_ldp(1.0)}, [100], 1.5)
    with pytest.raises(ValueError, match="epsilon0s"):
        plots.epsilon_vs_epsilon0({"wc": randomizers.worst_case_ldp}, [-1.0], 100, 1e-6)
    with pytest.raises(ValueError, match="curves"):
        plots.draw_curves([], "x.png")


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_draw_curves_writes_file(tmp_path: Path, suffix: str) -> None:
    curves = plots.epsilon_vs_users({"wc": randomizers.worst_case_ldp(2.0)}, [1000, 3000], 1e-6)
    path = plots.draw_curves(curves, tmp_path / f"fig{suffix}", title="test")
    data = path.read_bytes()
    assert len(data) > 1000
    if suffix == ".png":
        assert data.startswith(PNG_SIGNATURE)
    else:
        assert b"<svg" in data[:2000]


def test_cli_plot_writes_png(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    target = tmp_path / "eps.png"
    code = main(["plot", "--randomizer", "krr", "--randomizer", "worst_case_ldp", "--domain", "10",
                 "--epsilon0", "1", "--users-list", "1e3,3e3", "--delta", "1e-6", "--output",
                 str(target), "--quiet"], stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    assert target.read_bytes().startswith(PNG_SIGNATURE) and target.stat().st_size > 1000
    assert str(target) in out.getvalue()


def test_cli_plot_epsilon0_axis_writes_svg(tmp_path: Path) -> None:
    import json

    out = io.StringIO()
    target = tmp_path / "eps0.svg"
    code = main(["plot", "--x", "epsilon0", "--randomizer", "krr:domain_size=10", "--users", "2000",
                 "--epsilon0-list", "0.5:1.5:3", "--delta", "1e-6", "--output", str(target),
                 "--quiet", "--no-lower", "--json"], stdout=out, stderr=io.StringIO())
    assert code == 0
    result = json.loads(out.getvalue())
    upper = next(c for c in result["curves"] if c["kind"] == "upper")
    assert upper["x"] == [0.5, 1.0, 1.5]
    assert upper["y"] == [randomizers.krr(e, 10).shuffled(2000).epsilon(1e-6) for e in (0.5, 1.0, 1.5)]
    assert b"<svg" in target.read_bytes()[:2000]


def test_cli_plot_compare_draws_the_published_pair_labelled(tmp_path: Path) -> None:
    """``plot --compare`` adds the published pair's curve (kind ``published``, labelled NOT a
    guarantee); for k-RR it lies below our certified upper bound at every n (the published
    neutral share is invalid for k-RR, docs/theory.md "Published pair")."""
    import json

    from dpacct_shuffle import randomizers
    from dpacct_shuffle.plots import KIND_LABELS
    from dpacct_shuffle.shuffle_round import published_pair_epsilon

    out = io.StringIO()
    target = tmp_path / "compare.png"
    code = main(["plot", "--randomizer", "krr", "--domain", "10", "--epsilon0", "2",
                 "--users-list", "1e3,1e4", "--delta", "1e-6", "--output", str(target),
                 "--quiet", "--no-lower", "--compare", "--json"], stdout=out, stderr=io.StringIO())
    assert code == 0
    curves = json.loads(out.getvalue())["curves"]
    published = next(c for c in curves if c["kind"] == "published")
    upper = next(c for c in curves if c["kind"] == "upper")
    assert "NOT a guarantee" in KIND_LABELS["published"]
    for n, value in zip(published["x"], published["y"]):
        assert value == published_pair_epsilon(randomizers.krr(2.0, 10), n, 1e-6)
    assert all(p <= u for p, u in zip(published["y"], upper["y"]))


def test_cli_plot_default_users_list_has_ten_points() -> None:
    from dpacct_shuffle.cli.parser import build_parser

    args = build_parser().parse_args(["plot", "--randomizer", "krr", "--output", "x.png"])
    assert len(args.users_list) == 10 and args.users_list[0] == 10**3 and args.users_list[-1] == 10**6


def test_cli_plot_epsilon_vs_rounds_with_and_without_sampling(tmp_path: Path) -> None:
    """Each point is the campaign's ε from a fresh ShufflePLDAccountant; ε grows with R and the
    sampled campaign costs less."""
    import json

    from dpacct_shuffle import randomizers
    from dpacct_shuffle.accountants import ShufflePLDAccountant
    from dpacct_shuffle.events import ShuffleEvent

    out = io.StringIO()
    target = tmp_path / "rounds.svg"
    code = main(["plot", "--x", "rounds", "--randomizer", "krr", "--domain", "10", "--epsilon0",
                 "2", "--users", "2000", "--rounds-list", "1,10", "--sampling-probability", "0.2",
                 "--delta", "1e-6", "--output", str(target), "--quiet", "--json"],
                stdout=out, stderr=io.StringIO())
    assert code == 0
    curves = json.loads(out.getvalue())["curves"]
    full, sampled = curves
    assert full["x_name"] == "rounds" and sampled["label"].endswith("sampled 0.2")
    accountant = ShufflePLDAccountant()
    accountant.compose(ShuffleEvent(randomizers.krr(2.0, 10), 2000), 10)
    assert full["y"][1] == accountant.get_epsilon(1e-6)
    assert full["y"][0] < full["y"][1]
    assert all(s < f for s, f in zip(sampled["y"], full["y"]))
    assert b"<svg" in target.read_bytes()[:2000]


def test_error_vs_epsilon_is_each_randomizers_planned_std(tmp_path: Path) -> None:
    """``plot --x epsilon``: each point is the std of the plan at that total ε (the randomizer at
    its own certified ε0), and a larger budget buys a smaller error."""
    import json

    from dpacct_shuffle import planning

    out = io.StringIO()
    target = tmp_path / "error.svg"
    code = main(["plot", "--x", "epsilon", "--domain", "4", "--users", "500", "--rounds", "2",
                 "--epsilon-list", "0.5,2", "--randomizer", "krr", "--delta", "1e-6",
                 "--output", str(target), "--quiet", "--json"],
                stdout=out, stderr=io.StringIO())
    assert code == 0
    (curve,) = json.loads(out.getvalue())["curves"]
    assert (curve["label"], curve["kind"], curve["x_name"], curve["x"]) == (
        "krr", "std", "epsilon", [0.5, 2.0])
    plan = planning.plan_frequency(4, 500, 2, 2.0, 1e-6, candidates=["krr"]).plans[0]
    assert curve["y"][1] == plan.std and curve["y"][1] < curve["y"][0]
    assert b"<svg" in target.read_bytes()[:2000]


def test_error_vs_epsilon_bad_arguments() -> None:
    with pytest.raises(ValueError, match="exactly one of domain_size"):
        plots.error_vs_epsilon([1.0], 100, 1e-6)
    with pytest.raises(ValueError, match="epsilons"):
        plots.error_vs_epsilon([], 100, 1e-6, domain_size=4)
    with pytest.raises(ValueError, match=r"epsilons\[0\]"):
        plots.error_vs_epsilon([-1.0], 100, 1e-6, domain_size=4)
    code = main(["plot", "--x", "epsilon", "--users", "100", "--output", "x.svg"],
                stdout=io.StringIO(), stderr=io.StringIO())
    assert code == 2
