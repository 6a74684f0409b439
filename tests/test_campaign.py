"""Campaign calibration: every result is certified by a fresh ShufflePLDAccountant composing the
campaign, and near-optimal (2 % beyond fails)."""

import dataclasses

import pytest
from dp_accounting import dp_event

from dpacct_shuffle import randomizers
from dpacct_shuffle.accountants import ShufflePLDAccountant
from dpacct_shuffle.campaign import (CAMPAIGN_RTOL, Campaign, largest_campaign_epsilon0,
                                     largest_campaign_rounds, smallest_campaign_noise,
                                     smallest_campaign_users)
from dpacct_shuffle.events import ShuffleEvent
from dpacct_shuffle.sampling import NeighborRel

TARGET, DELTA = 1.0, 1e-8


def krr10(epsilon0):
    return randomizers.krr(epsilon0, 10)


def _recomposed_epsilon(randomizer, users, rounds, relation=NeighborRel.REPLACE_ONE, gamma=None,
                        others=()):
    """The campaign composed round by round in a fresh accountant (no Campaign code)."""
    accountant = ShufflePLDAccountant(relation)
    event = ShuffleEvent(randomizer, users)
    if gamma is not None:
        event = dp_event.PoissonSampledDpEvent(gamma, event)
    accountant.compose(dp_event.SelfComposedDpEvent(event, rounds))
    for other in others:
        accountant.compose(other)
    return accountant.get_epsilon(DELTA)


@pytest.mark.parametrize("gamma, relation", [(None, NeighborRel.REPLACE_ONE),
                                             (0.2, NeighborRel.REPLACE_ONE),
                                             (0.2, NeighborRel.ADD_OR_REMOVE_ONE)])
def test_largest_epsilon0_is_certified_and_near_largest(gamma, relation):
    users, rounds = 2000, 10
    campaign = Campaign(krr10(1.0), users, rounds, sampling_probability=gamma,
                        neighboring_relation=relation)
    result = largest_campaign_epsilon0(krr10, TARGET, DELTA, campaign)
    assert result.campaign.randomizer == krr10(result.value)
    certified = _recomposed_epsilon(krr10(result.value), users, rounds, relation, gamma)
    assert certified == pytest.approx(result.epsilon, rel=1e-9)
    assert certified <= TARGET
    assert _recomposed_epsilon(krr10(1.02 * result.value), users, rounds, relation, gamma) > TARGET
    # the failing end of the final bracket: within the default rtol above, and it fails
    assert result.value < result.failing_value <= (1 + CAMPAIGN_RTOL) * result.value
    assert _recomposed_epsilon(krr10(result.failing_value), users, rounds, relation,
                               gamma) > TARGET
    # shuffling and composition buy a lot: far above the basic-composition ε0 = ε/R
    assert result.value > 10 * TARGET / rounds


def test_other_events_take_their_share_of_the_budget():
    users, rounds = 10_000, 30
    steps = dp_event.SelfComposedDpEvent(
        dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(2.0)), 200)
    alone = largest_campaign_epsilon0(krr10, TARGET, DELTA, Campaign(krr10(1.0), users, rounds))
    campaign = Campaign(krr10(1.0), users, rounds, other_event=steps)
    result = largest_campaign_epsilon0(krr10, TARGET, DELTA, campaign)
    assert result.value < alone.value
    assert _recomposed_epsilon(krr10(result.value), users, rounds, others=[steps]) <= TARGET
    assert _recomposed_epsilon(krr10(1.02 * result.value), users, rounds, others=[steps]) > TARGET


def test_smallest_dp_sgd_noise_multiplier_beside_the_rounds():
    users, rounds = 10_000, 30

    def steps(sigma):
        return dp_event.SelfComposedDpEvent(
            dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(sigma)), 200)

    def family(sigma):
        return Campaign(krr10(0.5), users, rounds, other_event=steps(sigma))

    result = smallest_campaign_noise(family, TARGET, DELTA)
    sigma = result.value
    assert _recomposed_epsilon(krr10(0.5), users, rounds, others=[steps(sigma)]) <= TARGET
    assert _recomposed_epsilon(krr10(0.5), users, rounds, others=[steps(sigma / 1.02)]) > TARGET


def test_smallest_users_and_largest_rounds_are_exact_integers():
    campaign = Campaign(krr10(1.5), 1000, 20)
    users = smallest_campaign_users(campaign, TARGET, DELTA).value
    assert _recomposed_epsilon(krr10(1.5), users, 20) <= TARGET
    assert _recomposed_epsilon(krr10(1.5), users - 1, 20) > TARGET
    rounds = largest_campaign_rounds(dataclasses.replace(campaign, num_users=20_000), TARGET,
                                     DELTA).value
    assert _recomposed_epsilon(krr10(1.5), 20_000, rounds) <= TARGET
    assert _recomposed_epsilon(krr10(1.5), 20_000, rounds + 1) > TARGET


def test_progress_counts_the_composed_campaigns():
    seen = []
    result = largest_campaign_epsilon0(krr10, TARGET, DELTA, Campaign(krr10(1.0), 10_000, 10),
                                       progress=lambda done, total: seen.append(done))
    assert seen == list(range(1, result.evaluations + 1))


def test_bad_campaigns_are_refused():
    with pytest.raises(ValueError, match="ADD_OR_REMOVE_ONE"):
        Campaign(krr10(1.0), 100, 2, neighboring_relation=NeighborRel.ADD_OR_REMOVE_ONE)
    with pytest.raises(ValueError, match="not both"):
        Campaign(krr10(1.0), 100, 2, sampling_probability=0.5, sample_size=10)
    with pytest.raises(ValueError, match="sample_size"):
        Campaign(krr10(1.0), 100, 2, sample_size=101)
    with pytest.raises(ValueError, match="rounds"):
        Campaign(krr10(1.0), 100, 0)
    with pytest.raises(TypeError, match="other_event"):
        Campaign(krr10(1.0), 100, 2, other_event="dpsgd")
    with pytest.raises(ValueError, match="target_epsilon"):
        largest_campaign_epsilon0(krr10, -1.0, DELTA, Campaign(krr10(1.0), 100, 2))
    with pytest.raises(ValueError, match="one round"):
        largest_campaign_rounds(Campaign(krr10(5.0), 10, 1), 0.1, DELTA)


def test_a_start_near_the_answer_with_a_small_first_step_costs_fewer_evaluations():
    """From a start just below the answer (growth 1.03) or above it (a failing start, bracketed by
    itself), the result is the same certified, near-largest ε0 as from ε/R, in fewer evaluations."""
    users, rounds = 2000, 10
    campaign = Campaign(krr10(1.0), users, rounds)
    reference = largest_campaign_epsilon0(krr10, TARGET, DELTA, campaign)
    near = largest_campaign_epsilon0(krr10, TARGET, DELTA, campaign, growth=1.03,
                                     start_epsilon0=0.99 * reference.value)
    above = largest_campaign_epsilon0(krr10, TARGET, DELTA, campaign, growth=1.25,
                                      start_epsilon0=1.1 * reference.value)
    for result in (near, above):
        certified = _recomposed_epsilon(krr10(result.value), users, rounds)
        assert certified == pytest.approx(result.epsilon, rel=1e-9) and certified <= TARGET
        assert _recomposed_epsilon(krr10(1.02 * result.value), users, rounds) > TARGET
        assert result.evaluations < reference.evaluations
    assert near.evaluations <= 6
    with pytest.raises(ValueError, match="growth"):
        largest_campaign_epsilon0(krr10, TARGET, DELTA, campaign, growth=1.0)
