"""docs/make_figures.py writes every figure of the documentation (small configuration here), the
curves it draws are the library's numbers, and every figure is shown on a page."""

from __future__ import annotations

import importlib.util
import re
import sys
import types
from pathlib import Path

import pytest

pytest.importorskip("matplotlib", reason="the plot extra (matplotlib) is not installed")

ROOT = Path(__file__).resolve().parent.parent


def _make_figures() -> types.ModuleType:
    """docs/make_figures.py as a module (registered in sys.modules, as its dataclass needs)."""
    if "make_figures" not in sys.modules:
        spec = importlib.util.spec_from_file_location("make_figures",
                                                      ROOT / "docs" / "make_figures.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["make_figures"] = module
        spec.loader.exec_module(module)
    return sys.modules["make_figures"]


def test_the_script_writes_every_figure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MPLBACKEND", "Agg")
    make_figures = _make_figures()
    written = make_figures.make_figures(tmp_path, make_figures.SMALL)
    assert [path.name for path in written] == list(make_figures.FIGURES)
    for path in written:
        text = path.read_text(encoding="utf-8")
        assert text.lstrip().startswith("<?xml") and "<svg" in text
        assert len(text) > 5000  # axes, curves and legend were drawn


def test_sampled_curves_are_the_librarys_bounds_and_below_the_unsampled_round() -> None:
    from dpacct_shuffle import randomizers
    from dpacct_shuffle.shuffle_round import epsilon_bounds

    randomizer, population, delta = randomizers.krr(2.0, 10), 1000, _make_figures().DELTA
    unsampled = epsilon_bounds(randomizer, population, delta, lower=False).upper
    poisson = epsilon_bounds(randomizer, population, delta, lower=False,
                             sampling_probability=0.1).upper
    cohort = epsilon_bounds(randomizer, population, delta, lower=False,
                            sample_size=population // 10).upper
    assert poisson < unsampled and cohort < unsampled


def test_every_figure_is_committed_and_shown_on_a_page() -> None:
    make_figures = _make_figures()
    pages = "".join(page.read_text(encoding="utf-8") for page in (ROOT / "docs").glob("*.md"))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name in make_figures.FIGURES:
        assert (ROOT / "docs" / "figures" / name).is_file(), f"run python docs/make_figures.py"
        assert re.search(rf"\]\(figures/{re.escape(name)}\)", pages), f"no page shows {name}"
    assert "docs/figures/" in readme
