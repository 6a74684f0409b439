"""Long calls are bounded or say so: lower bounds above ``lower_bound_max_users`` are skipped with a
warning (0.0, always a valid lower bound) instead of running for minutes; pipeline accounting
reports progress when asked, and so does building a privacy-loss distribution."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpacct_shuffle import randomizers
from dpacct_shuffle.pipeline import account_pipeline
from dpacct_shuffle.profiles import PrivacyProfile, pld_from_profile, profile_grid, shuffle_profile
from dpacct_shuffle.randomizers import LOWER_BOUND_MAX_USERS, LowerBoundSkippedWarning


@pytest.mark.parametrize("n", [10**10, 10**12])
def test_lower_bounds_at_huge_n_are_skipped_with_a_warning(n: int) -> None:
    shuffled = randomizers.krr(1.0, 10).shuffled(n)
    assert n > LOWER_BOUND_MAX_USERS
    with pytest.warns(LowerBoundSkippedWarning, match=f"n = {n} > lower_bound_max_users"):
        assert shuffled.delta_lower(0.001) == 0.0
    # the skip is decided once per protocol; the upper bound is still computed
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lower, upper = shuffled.epsilon_interval(1e-8)
    assert lower == 0.0 < upper


def test_library_and_command_line_share_the_default_limit() -> None:
    from dpacct_shuffle import cli

    assert cli.LOWER_BOUND_MAX_USERS == LOWER_BOUND_MAX_USERS == 10**7


def test_limit_is_per_protocol_and_none_means_always() -> None:
    entry = randomizers.krr(2.0, 10)
    computed = entry.shuffled(200).delta_lower(0.1)
    assert computed > 0.0
    with pytest.warns(LowerBoundSkippedWarning):
        assert entry.shuffled(200, lower_bound_max_users=199).delta_lower(0.1) == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert entry.shuffled(200, lower_bound_max_users=200).delta_lower(0.1) == computed
        assert entry.shuffled(200, lower_bound_max_users=None).delta_lower(0.1) == computed
    with pytest.raises(ValueError, match="lower_bound_max_users"):
        entry.shuffled(200, lower_bound_max_users=0)


def test_pipeline_accounting_reports_progress_per_step_and_total() -> None:
    calls: list[tuple[int, int]] = []
    account_pipeline({"delta": 1e-6, "steps": [
        {"type": "gaussian", "noise_multiplier": 4.0}, {"type": "ldp", "epsilons": [0.5]}]},
        progress=lambda done, total: calls.append((done, total)))
    assert calls == [(1, 3), (2, 3), (3, 3)]


def test_building_a_pld_reports_each_profile_evaluation() -> None:
    evaluated: list[float] = []

    def recording_delta(epsilon: float) -> float:
        evaluated.append(epsilon)
        return profile.delta(epsilon)

    profile = shuffle_profile(randomizers.krr(1.0, 10), 1000)
    recording = PrivacyProfile(recording_delta, profile.epsilon_cap, "recorded")
    calls: list[tuple[int, int]] = []
    # a fixed interval: no evaluation outside the adaptive grid (the automatic one reads δ(0))
    grid = profile_grid(recording, 1e-3, progress=lambda done, total: calls.append((done, total)))
    # one call per evaluation of the profile, the grid itself unchanged by reporting
    assert len(evaluated) > 10
    assert calls == [(k, k) for k in range(1, len(evaluated) + 1)]
    assert np.array_equal(grid.deltas, profile_grid(profile, 1e-3).deltas)
    assert pld_from_profile(profile, progress=True).get_epsilon_for_delta(1e-6) == (
        pld_from_profile(profile).get_epsilon_for_delta(1e-6))
