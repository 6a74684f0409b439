"""The Flower example runs with the command docs/flower.md gives (Ray simulation, 20 clients)."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

pytest.importorskip("flwr")
# one Ray runtime at a time: under pytest-xdist every Ray test runs on the same worker
pytestmark = pytest.mark.xdist_group("ray")
pytest.importorskip("ray")

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_example_runs_with_the_documented_command():
    command = "python examples/flower/run_simulation.py --num-clients 20"
    assert command in (ROOT / "docs" / "flower.md").read_text(encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(ROOT))  # this checkout's package, installed or not
    result = subprocess.run([sys.executable, *command.split()[1:]], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=900)
    log = result.stdout + result.stderr
    assert result.returncode == 0, log[-3000:]
    assert "training: epsilon=" in log
    assert log.count("reports shuffled, round epsilon=") >= 1
    assert "estimated frequencies" in log
    # every estimate comes with its standard error, and the log says why they are large
    rounds = re.findall(r"round \d+: (\d+) reports, estimated frequencies \[([^\]]*)\]", log)
    assert rounds
    for reports, estimates in rounds:
        pairs = [item.split(" +- ") for item in estimates.split(", ")]
        assert len(pairs) == 4 and all(len(pair) == 2 for pair in pairs)
        assert all(float(error) > 0.0 for _, error in pairs)
    assert "so the estimates are noisy: the standard error is" in log
