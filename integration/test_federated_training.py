"""Runs integration/federated_training.py (real torch + Opacus) and checks its accounting."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("opacus")

from dp_accounting import dp_event  # noqa: E402
from dp_accounting.pld import PLDAccountant  # noqa: E402
from dp_accounting.privacy_accountant import NeighboringRelation  # noqa: E402

from dpacct_shuffle.accountants import ShufflePLDAccountant  # noqa: E402
from dpacct_shuffle.events import ShuffleEvent  # noqa: E402
from federated_training import main  # noqa: E402  (pytest puts integration/ on sys.path)

pytestmark = [pytest.mark.filterwarnings("ignore:Secure RNG turned off"),
              pytest.mark.filterwarnings("ignore:Full backward hook is firing")]


def test_federated_loop_tracks_dp_sgd_and_shuffle_rounds_and_stops_at_budget(capsys) -> None:  # type: ignore[no-untyped-def]
    result = main(["--clients", "40", "--rounds", "12", "--target-epsilon", "6.0"])
    printed = capsys.readouterr().out
    config, rows, accountant = result.config, result.rows, result.accountant
    assert config.clients >= 20
    assert printed.count("\n") >= len(rows) + 3 and "eps total" in printed

    # the loop stopped because the next round would exceed the budget, not before
    assert len(rows) >= 3 and "would reach" in result.stop_reason
    final = accountant.get_epsilon(config.delta)
    assert rows[-1].epsilon == final <= config.target_epsilon < result.next_round_epsilon

    sigma = config.noise_multiplier
    total_steps = sum(row.local_steps for row in rows)
    assert sum(steps for _, _, steps in accountant.history) == total_steps
    assert sum(count for _, count in accountant.events) == len(rows)
    assert len(accountant) == len(accountant.history) + len(accountant.events)  # Opacus's len()
    assert {row.sample_rate for row in rows} == {rows[0].sample_rate}
    rate = rows[0].sample_rate
    # DP-SGD alone: exactly dp-accounting's PLD accountant under replace-one
    dp_sgd = PLDAccountant(NeighboringRelation.REPLACE_ONE)
    dp_sgd.compose(dp_event.PoissonSampledDpEvent(rate, dp_event.GaussianDpEvent(sigma)), total_steps)
    assert rows[-1].epsilon_dp_sgd == dp_sgd.get_epsilon(config.delta)
    # everything: the same events composed one by one in a fresh ShufflePLDAccountant
    population, gamma = config.clients * config.records, config.report_rate
    sampled_round = dp_event.PoissonSampledDpEvent(gamma, ShuffleEvent(result.randomizer, population))
    reference = ShufflePLDAccountant()
    reference.compose(dp_event.PoissonSampledDpEvent(rate, dp_event.GaussianDpEvent(sigma)),
                      total_steps)
    for _ in rows:
        reference.compose(sampled_round)
    # equal up to float rounding (self_compose(count) vs. composing one by one: ~1e-11 relative)
    assert final == pytest.approx(reference.get_epsilon(config.delta), rel=1e-9)

    epsilons = [row.epsilon for row in rows]
    assert epsilons == sorted(epsilons)
    assert all(row.epsilon > max(row.epsilon_dp_sgd, row.epsilon_reports) for row in rows)
    # the cohort of reports changes every round (each record reports with probability gamma)
    assert len({row.reports for row in rows}) > 1
    assert all(0.4 * population < row.reports < 0.6 * population for row in rows)
    # the label reports alone: sampled rounds equal ShufflePLDAccountant on the same events and
    # cost less than the same rounds with every record reporting every round
    sampled = ShufflePLDAccountant().compose(sampled_round, len(rows)).get_epsilon(config.delta)
    unsampled = ShufflePLDAccountant().compose(
        ShuffleEvent(result.randomizer, population), len(rows)).get_epsilon(config.delta)
    assert rows[-1].epsilon_reports == pytest.approx(sampled, rel=1e-9)
    assert rows[-1].epsilon_reports_unsampled == pytest.approx(unsampled, rel=1e-9)
    assert all(row.epsilon_reports < row.epsilon_reports_unsampled for row in rows)
    # the model learned (4 classes: chance is 0.25) and the shuffled histogram is informative
    assert rows[-1].accuracy > 0.7
    assert all(row.histogram_l1 < 0.3 for row in rows)
