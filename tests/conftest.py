"""Shared pytest configuration: hypothesis profiles.

* ``ci``  -- loaded when the environment variable ``CI`` is ``true`` (case-insensitive): many
  examples, no per-example deadline (the 2-core CI machine is shared), derandomized so a red CI
  run reproduces exactly.
* ``dev`` -- the default: fewer examples for a quick local loop.

``HYPOTHESIS_PROFILE=<name>`` overrides the choice.  Tests that are expensive per example scale
their own ``max_examples`` from ``settings.default.max_examples`` (the loaded profile).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=100,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "dev",
    max_examples=30,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)

_default_profile = "ci" if os.environ.get("CI", "").strip().lower() == "true" else "dev"
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", _default_profile))
