"""Long calls are bounded or say so: lower bounds above ``lower_bound_max_users`` are skipped with a
warning (0.0, always a valid lower bound) instead of running for minutes; pipeline accounting
reports progress when asked."""

from __future__ import annotations

import warnings

import pytest

from dpacct_shuffle import randomizers
from dpacct_shuffle.pipeline import account_pipeline
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
