"""Shared pytest configuration: hypothesis profiles.

* ``ci``       -- the default: a few hundred examples per fuzz test (tests scale their own
  ``max_examples`` from ``settings.default.max_examples``), no per-example deadline (the CI
  machine is shared), derandomized so a red run reproduces exactly.
* ``thorough`` -- thousands of examples per fuzz test, random seeds: run on demand with
  ``HYPOTHESIS_PROFILE=thorough python -m pytest ...``.
* ``dev``      -- fewer examples for a quick local loop (``HYPOTHESIS_PROFILE=dev``).

Tests marked ``@pytest.mark.thorough`` (long single cases whose fast part the default run keeps
in another test) run only under the ``thorough`` profile.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

_COMMON = {"deadline": None, "print_blob": True, "suppress_health_check": [HealthCheck.too_slow]}

settings.register_profile("ci", max_examples=100, derandomize=True, **_COMMON)
settings.register_profile("thorough", max_examples=2000, **_COMMON)
settings.register_profile("dev", max_examples=30, **_COMMON)

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
settings.load_profile(PROFILE)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "thorough: a long case that runs only with HYPOTHESIS_PROFILE=thorough")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if PROFILE == "thorough":
        return
    skip = pytest.mark.skip(reason="long case: runs with HYPOTHESIS_PROFILE=thorough")
    for item in items:
        if "thorough" in item.keywords:
            item.add_marker(skip)
