"""Both bounds of one shuffle round (:mod:`dpacct_shuffle.shuffle_round`): bracketing the exact
shuffled δ of k-ary randomized response (brute force over every configuration of the other users),
agreeing with the randomizer's own bounds, and saying why a lower bound is absent."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from dpacct_shuffle import randomizers
from dpacct_shuffle.calibration import calibrate_epsilon0, largest_epsilon0
from dpacct_shuffle.core.bound import published_pair
from dpacct_shuffle.lemmas import fmt_shuffle_bound
from dpacct_shuffle.randomizers.spec import (catalog_entries, catalog_names,
                                             matrix_file_randomizer)
from dpacct_shuffle.shuffle_round import (LowerBoundStatus, delta_bounds, epsilon_bounds,
                                          fmt_closed_form, published_pair_epsilon)
from tests.oracle import exact_shuffled_delta, krr_matrix


@pytest.mark.parametrize("users, epsilon0, domain, epsilon, rel_gap",
                         [(4, 2.0, 3, 0.5, 1e-3), (6, 1.5, 3, 0.3, 1e-6), (8, 2.0, 4, 0.5, 5e-3)])
def test_delta_bounds_bracket_the_exact_shuffled_krr(users: int, epsilon0: float, domain: int,
                                                     epsilon: float, rel_gap: float) -> None:
    matrix = krr_matrix(epsilon0, domain)  # symmetric: the victim pair (0, 1) is a worst pair
    exact = max(exact_shuffled_delta(matrix, 0, 1, others, epsilon)
                for others in itertools.combinations_with_replacement(range(domain), users - 1))
    bounds = delta_bounds(randomizers.krr(epsilon0, domain), users, epsilon)
    assert bounds.lower_status is LowerBoundStatus.COMPUTED
    assert bounds.lower is not None
    assert bounds.lower <= exact * (1 + 1e-12) and exact <= bounds.upper
    assert bounds.upper <= exact * (1 + rel_gap)
    assert bounds.lower >= exact * (1 - 1e-4)
    shuffled = randomizers.krr(epsilon0, domain).shuffled(users)
    assert (bounds.upper, bounds.lower) == (shuffled.delta(epsilon), shuffled.delta_lower(epsilon))


def test_epsilon_bounds_equal_the_randomizers_own() -> None:
    entry = randomizers.worst_case_ldp(1.0)
    bounds = epsilon_bounds(entry, 500, 1e-6)
    shuffled = entry.shuffled(500)
    assert bounds.quantity == "epsilon" and bounds.level == 1e-6
    assert bounds.upper == shuffled.epsilon(1e-6)
    assert bounds.lower == shuffled.epsilon_lower(1e-6)
    assert 0.0 < bounds.lower <= bounds.upper
    assert bounds.upper_seconds >= 0.0 and bounds.lower_seconds is not None


def test_bad_sampling_probability_is_refused_before_any_computation() -> None:
    # the sampled round's value (dp-accounting's PLD accountant) is compared with the accountant
    # composed directly in tests/test_sampling_accountants.py, through the command line
    with pytest.raises(ValueError, match="sampling_probability"):
        delta_bounds(randomizers.krr(2.0, 10), 200, 0.5, sampling_probability=1.5)


def test_absent_lower_bounds_say_why() -> None:
    entry = randomizers.krr(2.0, 10)
    skipped = delta_bounds(entry, 300, 0.2, lower_max_users=299)
    assert skipped.lower is None and skipped.lower_status is LowerBoundStatus.ABOVE_MAX_USERS
    assert skipped.lower_seconds is None and skipped.lower_max_users == 299
    assert skipped.upper == entry.shuffled(300).delta(0.2)
    unlimited = delta_bounds(entry, 300, 0.2, lower_max_users=None)
    assert unlimited.lower_status is LowerBoundStatus.COMPUTED
    off = delta_bounds(entry, 300, 0.2, lower=False)
    assert off.lower is None and off.lower_status is LowerBoundStatus.NOT_REQUESTED
    no_instance = epsilon_bounds(randomizers.balls_into_bins(10, 2), 1000, 1e-6)
    assert no_instance.lower is None and no_instance.lower_status is LowerBoundStatus.NO_INSTANCE


def test_references_are_the_closed_form_and_the_published_pair() -> None:
    entry = randomizers.krr(2.0, 100)
    fmt = fmt_closed_form(entry, 10_000, 1e-8)
    assert fmt.value == fmt_shuffle_bound(2.0, 10_000, 1e-8) and fmt.reason == ""
    outside = fmt_closed_form(randomizers.krr(2.0, 100), 100, 1e-8)  # n too small for FMT
    assert outside.value is None and outside.reason
    assert published_pair_epsilon(entry, 10_000, 1e-8) == \
        published_pair(*entry.published).epsilon(1e-8, 10_000)
    matrix = randomizers.from_matrix(krr_matrix(1.0, 3))
    assert fmt_closed_form(matrix, 1000, 1e-6).reason == "entry has no epsilon0"
    assert published_pair_epsilon(matrix, 1000, 1e-6) is None


def test_calibrate_epsilon0_returns_the_search_result_and_its_epsilon() -> None:
    calls: list[int] = []
    family = lambda epsilon0: randomizers.krr(epsilon0, 4)  # noqa: E731
    result = calibrate_epsilon0(family, 0.5, 1e-6, 1000, progress=lambda done, total: calls.append(done))
    assert result.epsilon0 == largest_epsilon0(randomizers.krr, 0.5, 1e-6, 1000, domain_size=4)
    assert result.epsilon_upper == randomizers.krr(result.epsilon0, 4).shuffled(1000).epsilon(1e-6)
    assert result.epsilon_upper <= 0.5 * (1 + 1e-4)
    assert calls == list(range(1, len(calls) + 1)) and len(calls) >= 3


def test_catalog_entries_and_matrix_files(tmp_path: Path) -> None:
    entries = catalog_entries()
    assert [entry.name for entry in entries] == catalog_names()
    krr = next(entry for entry in entries if entry.name == "krr")
    assert krr.parameters[0].startswith("epsilon0") and "randomized response" in krr.summary.lower()
    path = tmp_path / "rr3.csv"
    path.write_text("0.6,0.2,0.2\n0.2,0.6,0.2\n0.2,0.2,0.6\n", encoding="utf-8")
    randomizer = matrix_file_randomizer(path)
    assert randomizer.name == "rr3"
    direct = randomizers.from_matrix([[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]])
    assert randomizer.shuffled(100).epsilon(1e-6) == direct.shuffled(100).epsilon(1e-6)
