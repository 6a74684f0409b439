"""Cohorts that change every round: user counts accounted at anchors among the rounds' own counts
(or rounded down to a geometric grid).

References: the core's certified profile at the exact user count (the rounded PLD must dominate
it), and the same rounds accounted each at its own n (the ε gap).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.pld import pld_pmf
from dp_accounting.pld import privacy_loss_distribution as pld_lib

from dpacct_shuffle import VariationRatio
from dpacct_shuffle import pld_composition, profiles
from dpacct_shuffle.accountants import (
    ShufflePLDAccountant,
    event_on_users_grid,
    event_with_user_counts,
    shuffle_event_pld,
    user_counts,
)
from dpacct_shuffle.core.closed_forms import chernoff_delta
from dpacct_shuffle.event_plds import event_pmfs, shuffle_event_grid
from dpacct_shuffle.events import ParallelCompositionEvent, ShuffleEvent
from dpacct_shuffle.user_anchors import UserCountAnchors


class ChernoffShuffleBound:
    """The Chernoff-form shuffle bound of a VariationRatio: certified, and cheap (no sums)."""

    def __init__(self, vr: VariationRatio) -> None:
        self.vr = vr
        self.epsilon0 = vr.epsilon0

    def delta(self, epsilon: float, n: int) -> float:
        return min(1.0, chernoff_delta(self.vr, epsilon, n))


def test_users_grid_floor_is_below_n_and_within_one_grid_step() -> None:
    ratio = 1.01
    values = [profiles.users_grid_floor(n, ratio) for n in range(1, 5000)]
    assert all(1 <= g <= n for n, g in zip(range(1, 5000), values))
    assert all(g >= math.floor(n / ratio) for n, g in zip(range(1, 5000), values))
    assert all(b >= a for a, b in zip(values, values[1:]))  # non-decreasing in n
    assert values[:100] == list(range(1, 101))  # the grid is denser than the integers there
    large = {profiles.users_grid_floor(n, ratio) for n in range(10_000, 1_000_001, 97)}
    assert len(large) <= math.ceil(math.log(100) / math.log(ratio)) + 1


def test_users_grid_floor_rejects_bad_input() -> None:
    for bad in (1.0, 0.5, 2.5, math.nan):
        with pytest.raises(ValueError, match="users_grid_ratio"):
            profiles.users_grid_floor(100, bad)
    with pytest.raises(ValueError, match="num_users"):
        profiles.users_grid_floor(0, 1.01)
    with pytest.raises(ValueError, match="users_grid_ratio"):
        ShufflePLDAccountant(users_grid_ratio=1.0)


def test_event_on_users_grid_rounds_honest_users_and_sampled_populations() -> None:
    vr = VariationRatio.worst_case(1.0)
    assert event_on_users_grid(ShuffleEvent(vr, 1234, honest_fraction=0.5), 1.05) == ShuffleEvent(
        vr, profiles.users_grid_floor(617, 1.05))
    sampled = event_on_users_grid(dp_event.PoissonSampledDpEvent(0.1, ShuffleEvent(vr, 5000)), 1.05)
    assert sampled.event.num_users == profiles.users_grid_floor(5000, 1.05) < 5000
    disjoint = event_on_users_grid(ParallelCompositionEvent([vr, vr], (300, 4000), mode="disjoint"), 1.05)
    assert disjoint.num_users == (profiles.users_grid_floor(300, 1.05), profiles.users_grid_floor(4000, 1.05))
    gaussian = dp_event.GaussianDpEvent(1.0)
    assert event_on_users_grid(gaussian, 1.05) is gaussian


def _fewest_anchors(counts: list[int], ratio: float) -> int:
    """Brute force: the fewest anchors (any integers) with a ≤ n < a·r for every count."""
    candidates = range(math.floor(min(counts) / ratio), max(counts) + 1)  # a in (n/r, n]
    for size in range(1, len(counts) + 1):
        for chosen in itertools.combinations(candidates, size):
            if all(any(a <= n < a * ratio for a in chosen) for n in counts):
                return size
    raise AssertionError("the counts themselves are anchors")


def test_anchors_cover_every_count_with_the_fewest_anchors() -> None:
    rng = np.random.default_rng(7)
    for _ in range(20):
        counts = [int(v) for v in rng.integers(20, 40, size=int(rng.integers(1, 7)))]
        anchors = UserCountAnchors(1.1)
        anchors.extend(counts)
        assert set(anchors.anchors) <= set(counts)
        for n in counts:
            a = anchors.anchor(n)
            assert a in anchors.anchors and a <= n < a * 1.1
            assert a == max(b for b in anchors.anchors if b <= n)
        assert len(anchors.anchors) == _fewest_anchors(counts, 1.1), counts


def test_anchors_of_earlier_counts_never_change() -> None:
    rng = np.random.default_rng(11)
    counts = [int(v) for v in np.exp(rng.uniform(np.log(1e3), np.log(1e5), 300))]
    anchors = UserCountAnchors(1.02)
    seen: dict[int, int] = {}
    for start in range(0, len(counts), 7):  # queried every few rounds
        anchors.extend(counts[start:start + 7])
        for n in counts[:start + 7]:
            assert seen.setdefault(n, anchors.anchor(n)) == anchors.anchor(n)
            assert anchors.anchor(n) <= n < anchors.anchor(n) * 1.02
    once = UserCountAnchors(1.02)
    once.extend(counts)
    assert len(once.anchors) <= len(anchors.anchors)
    # fewer PLDs than the geometric grid ⌊r^j⌋ over the same counts
    assert len(once.anchors) < len({profiles.users_grid_floor(n, 1.02) for n in counts})


def test_anchors_reject_bad_input() -> None:
    for bad in (1.0, 0.5, 2.5, math.nan):
        with pytest.raises(ValueError, match="users_grid_ratio"):
            UserCountAnchors(bad)
    anchors = UserCountAnchors(1.1)
    anchors.extend([100])
    with pytest.raises(ValueError, match="num_users=111 has no anchor"):
        anchors.anchor(111)
    with pytest.raises(ValueError, match="num_users"):
        anchors.extend([0])
    with pytest.raises(ValueError, match="accounted at a count in \\[1, 50\\]"):
        event_with_user_counts(ShuffleEvent(VariationRatio.worst_case(1.0), 50), lambda n: n + 1)


def test_user_counts_are_the_honest_counts_the_anchors_replace() -> None:
    vr = VariationRatio.worst_case(1.0)
    assert user_counts(ShuffleEvent(vr, 1234, honest_fraction=0.5)) == (617,)
    assert user_counts(dp_event.PoissonSampledDpEvent(0.1, ShuffleEvent(vr, 5000))) == (5000,)
    disjoint = ParallelCompositionEvent([vr, vr], (300, 4000), mode="disjoint")
    assert user_counts(disjoint) == (300, 4000)
    assert user_counts(dp_event.GaussianDpEvent(1.0)) == ()
    assert event_with_user_counts(disjoint, lambda n: n // 2).num_users == (150, 2000)


def test_grid_accountant_accounts_every_round_at_its_anchor() -> None:
    """The same ε, bit for bit, as every round composed at its anchor in an accountant without a
    users grid; queried after every round or once, never below each round at its own n."""
    bound = ChernoffShuffleBound(VariationRatio.worst_case(1.0))
    sizes = [5230, 5010, 5500, 5047, 5100, 5230, 5600, 5333]
    anchors = UserCountAnchors(1.01)
    anchors.extend(sizes)
    grid = ShufflePLDAccountant(users_grid_ratio=1.01)
    at_anchors = ShufflePLDAccountant()
    exact = ShufflePLDAccountant()
    stepwise = ShufflePLDAccountant(users_grid_ratio=1.01)
    for n in sizes:
        grid.compose(ShuffleEvent(bound, n))
        at_anchors.compose(event_with_user_counts(ShuffleEvent(bound, n), anchors.anchor))
        exact.compose(ShuffleEvent(bound, n))
        stepwise.compose(ShuffleEvent(bound, n))
        stepwise.get_epsilon(1e-6)
    assert len(anchors.anchors) < len(set(sizes))
    # a fixed interval composes every round as it arrives, at the anchors known then
    fixed = ShufflePLDAccountant(value_discretization_interval=1e-4, users_grid_ratio=1.01)
    online = UserCountAnchors(1.01)
    fixed_at_anchors = ShufflePLDAccountant(value_discretization_interval=1e-4)
    for n in sizes:
        fixed.compose(ShuffleEvent(bound, n))
        online.extend([n])
        fixed_at_anchors.compose(event_with_user_counts(ShuffleEvent(bound, n), online.anchor))
    assert fixed.get_epsilon(1e-6) == fixed_at_anchors.get_epsilon(1e-6)
    for delta in (1e-6, 1e-9):
        assert grid.get_epsilon(delta) == at_anchors.get_epsilon(delta)
        assert exact.get_epsilon(delta) <= grid.get_epsilon(delta) <= 1.005 * exact.get_epsilon(delta)
        assert exact.get_epsilon(delta) <= stepwise.get_epsilon(delta)
        assert stepwise.get_epsilon(delta) <= 1.005 * exact.get_epsilon(delta)


def test_rounded_pld_dominates_the_exact_round_profile() -> None:
    """Rounding n down never gives a smaller δ than the exact round's certified profile."""
    vr, n, ratio = VariationRatio.worst_case(1.0), 157, 1.1
    rounded = event_on_users_grid(ShuffleEvent(vr, n), ratio)
    assert rounded.num_users < n
    pld = shuffle_event_pld(rounded)
    exact = profiles.shuffle_profile(vr, n)
    smaller = profiles.shuffle_profile(vr, rounded.num_users)
    for eps in np.linspace(0.0, 1.0, 21):
        assert pld.get_delta_for_epsilon(float(eps)) >= exact.delta(float(eps))
        assert smaller.delta(float(eps)) >= exact.delta(float(eps))  # monotone in n


def test_changing_cohort_epsilon_within_half_a_percent_of_exact_per_round_accounting() -> None:
    bound = ChernoffShuffleBound(VariationRatio.worst_case(1.0))
    sizes = np.unique(np.geomspace(5000, 5600, 20).astype(int))
    grid = ShufflePLDAccountant(users_grid_ratio=1.01)
    exact = ShufflePLDAccountant()
    for n in sizes:
        grid.compose(ShuffleEvent(bound, int(n)))
        exact.compose(ShuffleEvent(bound, int(n)))
    anchors = UserCountAnchors(1.01)
    anchors.extend(int(n) for n in sizes)
    # shared PLDs: at most one per factor 1.01 in the range
    assert len(anchors.anchors) <= math.ceil(math.log(5600 / 5000) / math.log(1.01)) < len(sizes)
    for delta in (1e-6, 1e-9):
        eps_grid, eps_exact = grid.get_epsilon(delta), exact.get_epsilon(delta)
        assert eps_exact <= eps_grid <= 1.005 * eps_exact, (delta, eps_grid, eps_exact)
    assert grid.ledger == exact.ledger  # the ledger keeps the rounds as composed


def _dense_pmf_arrays(pmf: pld_pmf.PLDPmf) -> pld_composition.LossPmf:
    """A dp-accounting pmf's arrays (test-side reading of its internals, to compare with)."""
    dense = pmf.to_dense_pmf()
    return pld_composition.LossPmf(dense._discretization, dense._lower_loss, dense._probs.copy(),
                                   dense._infinity_mass)


def _assert_same_pmf(ours: pld_composition.LossPmf, theirs: pld_pmf.PLDPmf,
                     cut_atoms: int = 1) -> None:
    """Equal arrays; the masses at +∞ are sums of the same ``cut_atoms`` atoms, ours correctly
    rounded (math.fsum), dp-accounting's a float sum: within a relative cut_atoms·u."""
    reference = _dense_pmf_arrays(theirs)
    np.testing.assert_array_equal(ours.probs, reference.probs)
    assert ours.lower == reference.lower
    assert abs(ours.infinity_mass - reference.infinity_mass) <= (
        cut_atoms * 2.0**-53 * reference.infinity_mass)


def test_leaf_pmfs_equal_dp_accountings_truncated_connect_the_dots_pld() -> None:
    vr = VariationRatio.worst_case(1.0)
    d = 1e-4
    for n in (300, 310, 320):
        # each leaf is dp-accounting's own 1e-15 truncation of the round's Connect-the-Dots PLD
        theirs = pld_lib.identity(d).compose(shuffle_event_pld(ShuffleEvent(vr, n), d),
                                             tail_mass_truncation=1e-15)
        ours = event_pmfs(ShuffleEvent(vr, n), d).remove
        grid = shuffle_event_grid(ShuffleEvent(vr, n), d)[0]
        cut_atoms = int(np.count_nonzero(grid.rounded_epsilons >= ours.lower + len(ours.probs)))
        _assert_same_pmf(ours, theirs._pmf_remove, cut_atoms)


def test_certified_tree_composition_against_dp_accountings_own_composition() -> None:
    """The tree of certified compositions is dp-accounting's composition in the same pairing
    order, except for the tails: less mass at +∞ (cut at 1e-20, not 1e-15), so δ is lower by at
    most the mass dp-accounting's four cuts send there, and higher by the certified tails'
    rounding only."""
    vr = VariationRatio.worst_case(1.0)
    d = 1e-4
    plds = [event_pmfs(ShuffleEvent(vr, n), d) for n in (300, 310, 320)]
    leaves = [plds[0], plds[1], plds[2], plds[1], plds[0]]
    ours = pld_composition.certified_tree_compose(leaves, 1e-20)
    # mass at +∞: the leaves' (union bound) plus at most τ/2 per composition (four of them)
    assert ours.add is None
    assert ours.remove.infinity_mass <= sum(leaf.remove.infinity_mass for leaf in leaves) + 2e-20
    # the same pairing order as the tree: ((0, 1), (2, 3)), 4
    dense = [leaf.to_dp_accounting() for leaf in leaves]
    theirs = (dense[0].compose(dense[1])).compose(dense[2].compose(dense[3])).compose(dense[4])
    ours_pld = ours.to_dp_accounting()
    for eps in np.linspace(0.0, 3.0, 31):
        ours_delta = ours_pld.get_delta_for_epsilon(float(eps))
        theirs_delta = theirs.get_delta_for_epsilon(float(eps))
        # higher by at most the certified tails' rounding: the mass below 1e-13 of the largest
        # entry, moved up by at most one block
        assert theirs_delta - 4 * 1e-15 - 1e-15 <= ours_delta <= theirs_delta + 1e-13, eps
    for delta in (1e-3, 1e-6):
        assert ours_pld.get_epsilon_for_delta(delta) == pytest.approx(
            theirs.get_epsilon_for_delta(delta), rel=1e-9)


def test_truncate_tails_equals_dp_accountings_rule_on_noisy_tails() -> None:
    rng = np.random.default_rng(3)
    probs = np.concatenate([rng.uniform(-1e-18, 1e-16, 50), rng.uniform(0.0, 1.0, 20),
                            rng.uniform(-1e-18, 2e-16, 80)])
    probs[50:70] /= probs[50:70].sum()
    pmf = pld_composition.LossPmf(1e-3, -40, probs.copy(), 1e-12)
    ours = pld_composition.truncate_tails(pmf, 1e-15)
    offset, kept, right = pld_pmf._truncate_tails(probs.copy(), 1e-15, True)
    assert ours.lower == -40 + offset and ours.infinity_mass == 1e-12 + right
    np.testing.assert_array_equal(ours.probs, kept)
    # tails longer than the first chunk of running sums (several chunks of tiny masses)
    long_tails = np.concatenate([rng.uniform(0.0, 1e-19, 5000), probs[50:70],
                                 rng.uniform(0.0, 3e-19, 9000)])
    ours = pld_composition.truncate_tails(pld_composition.LossPmf(1e-3, 0, long_tails.copy(), 0.0))
    offset, kept, right = pld_pmf._truncate_tails(long_tails.copy(), 1e-15, True)
    assert offset > 2 * 1024 and ours.lower == offset and ours.infinity_mass == right
    np.testing.assert_array_equal(ours.probs, kept)


@pytest.mark.parametrize("count", [2, 3, 7])
def test_certified_power_equals_pairwise_composition_up_to_its_truncated_mass(count: int) -> None:
    """Repeated squaring with certified tails is dp-accounting's pairwise composition up to the
    tails: δ is lower by at most the mass dp-accounting's cuts send to +∞ ((count − 1)·1e-15),
    higher by the certified tails' rounding only."""
    vr = VariationRatio.worst_case(1.0)
    d = 1e-4
    symmetric = event_pmfs(ShuffleEvent(vr, 300), d)
    # sampled Laplace: add and remove pmfs differ
    laplace = pld_lib.from_laplace_mechanism(1.0, value_discretization_interval=d,
                                             sampling_prob=0.5)
    asymmetric = pld_composition.LossPmfs(_dense_pmf_arrays(laplace._pmf_remove),
                                          _dense_pmf_arrays(laplace._pmf_add))
    for pld in (symmetric, asymmetric):
        ours = pld_composition.certified_power(pld, count, 1e-20)
        single = pld.to_dp_accounting()
        theirs = single
        for _ in range(count - 1):
            theirs = theirs.compose(single)  # dp-accounting's own composition, 1e-15 cut each time
        assert (ours.add is None) == (pld.add is None)
        ours_pld = ours.to_dp_accounting()
        cut = (count - 1) * 1e-15
        for eps in np.linspace(0.0, 3.0, 31):
            ours_delta = ours_pld.get_delta_for_epsilon(float(eps))
            theirs_delta = theirs.get_delta_for_epsilon(float(eps))
            # higher by at most the certified tails' rounding (see the tree test above)
            assert theirs_delta - cut - 1e-15 <= ours_delta <= theirs_delta + 1e-13, eps
        for delta in (1e-3, 1e-6):
            assert ours_pld.get_epsilon_for_delta(delta) == pytest.approx(
                theirs.get_epsilon_for_delta(delta), rel=1e-9)
        assert ours.remove.infinity_mass <= theirs._pmf_remove._infinity_mass + 1e-15
    assert pld_composition.certified_power(symmetric, 1).remove is symmetric.remove


@pytest.mark.parametrize("count", [0, -1, 2.5, True])
def test_certified_power_refuses_a_bad_count(count) -> None:
    pld = pld_composition.LossPmfs(pld_composition.leaky_rr_pmf(0.5, 0.0, 1e-3))
    with pytest.raises(ValueError, match="count"):
        pld_composition.certified_power(pld, count)
