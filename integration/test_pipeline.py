"""Runs integration/federated_analytics_pipeline.py end to end and checks its numbers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("federated_analytics_pipeline.py")
CLIENTS, DELTA = 2_000, 1e-6
# the script runs once, in a module fixture: keep every test of this file on one xdist worker
pytestmark = pytest.mark.xdist_group("federated_analytics_pipeline")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict]:
    output = tmp_path_factory.mktemp("pipeline") / "report.json"
    completed = subprocess.run(
        [sys.executable, str(SCRIPT), "--clients", str(CLIENTS), "--delta", str(DELTA),
         "--json", str(output)],
        capture_output=True, text=True, timeout=600, check=True)
    return completed.stdout, json.loads(output.read_text(encoding="utf-8"))


def test_table_prints(run: tuple[str, dict]) -> None:
    table, report = run
    assert "cumulative" in table and "federated learning" in table
    for stage in report["stages"]:  # every stage's ε appears in the printed table
        assert f"{stage['epsilon_pld']:.4f}" in table


def test_bad_arguments_are_rejected() -> None:
    completed = subprocess.run([sys.executable, str(SCRIPT), "--delta", "2"],
                               capture_output=True, text=True, timeout=120)
    assert completed.returncode != 0 and "--delta must be in (0, 1)" in completed.stderr


def test_numbers_are_consistent(run: tuple[str, dict]) -> None:
    _, report = run
    stages = report["stages"]
    assert report["clients"] == CLIENTS and report["delta"] == DELTA and len(stages) == 5
    previous = 0.0
    for stage in stages:
        eps, cumulative, basic = (stage["epsilon_pld"], stage["cumulative_epsilon_pld"],
                                  stage["basic_composition_bound"])
        assert 0.0 < eps < float("inf")
        # composing more stages never lowers ε; the campaign is at least as costly as any stage
        assert cumulative >= previous - 1e-9 and cumulative >= eps - 1e-9
        # and never exceeds basic composition of the stages (each at δ/k)
        assert cumulative <= basic + 1e-9
        if stage["epsilon_rdp"] is not None:  # both bound the same true ε from above
            assert stage["epsilon_rdp"] >= 0.99 * eps
        previous = cumulative
    by_name = {s["name"].split(",")[0]: s for s in stages}
    assert by_name["federated learning"]["epsilon_rdp"] is None  # sampled Gaussian, replace-one
    # three pure local reports (0.5, 0.5, 1): the PLD is at most their sum and at least the largest
    assert 1.0 <= by_name["local telemetry"]["epsilon_pld"] <= 2.0 + 1e-3
    # shuffling amplifies: one survey round costs less than its weakest question's ε0 = 2
    assert by_name["survey"]["epsilon_pld"] < 2.0
    # 7 shuffled ε0 = 2 rounds cost far less than 7 unshuffled reports (basic composition: 14)
    assert by_name["frequency estimation"]["epsilon_pld"] < 2.0
