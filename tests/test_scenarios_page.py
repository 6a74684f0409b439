"""docs/scenarios.md is the output of examples/deployment_scenarios.py --markdown: its text and
table headers are the script's, every table has one row per setting, and the cheap rows recomputed
here are the committed ones. The recomputed numbers are checked against the published values and
ordered as the bounds must be."""

from __future__ import annotations

import importlib.util
import math
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "scenarios.md"


def _script() -> types.ModuleType:
    """examples/deployment_scenarios.py as a module (registered in sys.modules: dataclasses)."""
    if "deployment_scenarios" not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            "deployment_scenarios", ROOT / "examples" / "deployment_scenarios.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["deployment_scenarios"] = module
        spec.loader.exec_module(module)
    return sys.modules["deployment_scenarios"]


def _table_rows(page: str, title: str) -> list[str]:
    """The body rows of the table under ``## title``."""
    section = page.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    return rows[2:]  # header and separator


def test_the_page_is_the_scripts_text_with_one_row_per_setting() -> None:
    script = _script()
    page = PAGE.read_text(encoding="utf-8")
    assert page.startswith(script.INTRO)
    for table in script.TABLES:
        assert script.section(table, []) in page, f"rerun the script: {table.title} changed"
        assert len(_table_rows(page, table.title)) == len(table.settings)


def test_cheap_rows_recomputed_are_the_committed_rows() -> None:
    script = _script()
    page = PAGE.read_text(encoding="utf-8")
    for table, indices in ((script.APPLE, [0]), (script.RAPPOR, [0, 1, 2])):
        committed = _table_rows(page, table.title)
        for index, row in zip(indices, table.rows(indices)):
            assert committed[index] == script.table_line(row)


def test_rappor_published_epsilons_and_bound_order() -> None:
    script = _script()
    # Erlingsson, Pihur & Korolova (CCS 2014): f = 1/2, h = 2 gives eps_inf = 4 ln 3; q* = 11/16,
    # p* = 9/16 gives eps_1 = 2 ln(77/45)
    assert math.isclose(script.CHROME.permanent_epsilon, 4.0 * math.log(3.0), rel_tol=1e-12)
    assert script.CHROME.one_probabilities == (11 / 16, 9 / 16)
    assert math.isclose(script.CHROME.report_epsilon, 2.0 * math.log(77 / 45), rel_tol=1e-12)
    published, permanent, fmt, ours, bit_std = script.RAPPOR.rows([0])[0][2:]
    assert float(ours) < float(fmt) < float(published) < float(permanent)
    # (p*(1 - p*)/n)^(1/2)/(q* - p*) at n = 1e5
    assert math.isclose(float(bit_std), math.sqrt(9 / 16 * 7 / 16 / 1e5) * 8, rel_tol=5e-3)


def test_apple_row_orders_the_bounds_and_the_fmt_composition_is_above_one_round() -> None:
    script = _script()
    row = script.APPLE.rows([0])[0]
    local, fmt, any_ldp, hadamard = (float(cell) for cell in row[5:9])
    assert hadamard <= any_ldp < fmt < local == 30.0
    # composing 30 rounds costs more than one round of FMT at the same delta
    one_round = script.fmt_epsilon(1.0, 10**6, 1e-8)
    assert one_round < fmt < 30 * one_round
