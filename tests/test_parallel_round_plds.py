"""Random-mode parallel rounds through the accountants: the bound a round's PLD is built from
(``parallel_composite_bound(..., lowering=ROUND_LOWERING, structure_max_users=
PARALLEL_STRUCTURE_PROFILE_MAX_USERS)``) against brute force, and one round's ε through
``ShufflePLDAccountant`` against the same candidates evaluated by their own bounds."""

from __future__ import annotations

import numpy as np
import pytest

from dpacct_shuffle import VariationRatio
from dpacct_shuffle import randomizers as rz
from dpacct_shuffle.accountants import ShufflePLDAccountant, ShuffleRdpAccountant
from dpacct_shuffle.events import ParallelCompositionEvent
from dpacct_shuffle.profiles import (
    PARALLEL_STRUCTURE_PROFILE_MAX_USERS,
    ROUND_LOWERING,
    parallel_composite,
    parallel_composite_bound,
)
from tests.test_parallel_composite_bound import epsilon_of, product_matrix, worst_exact

# one round's ε through the PLD against its bound evaluated point by point (issue 11)
ROUND_GAP = 2e-3
SURVEY = [rz.binary_rr(1.0), VariationRatio.worst_case(1.5)]


def _round_bound(branches, pis):
    return parallel_composite_bound(branches, pis, lowering=ROUND_LOWERING,
                                    structure_max_users=PARALLEL_STRUCTURE_PROFILE_MAX_USERS)


@pytest.mark.parametrize("branches, pis", [
    ([rz.binary_rr(2.0), rz.krr(1.0, 3)], [0.3, 0.7]),
    ([rz.krr(0.5, 3), rz.binary_rr(3.0)], [0.5, 0.5]),
])
def test_round_bound_covers_every_pair_and_configuration(branches, pis) -> None:
    """Composite matrix on the product of the branch domains, every victim pair and every
    multiset of the others' rows: the batched round bound (array and scalar forms) is ≥ exact."""
    matrix = product_matrix([b.matrix for b in branches], pis)
    n = 3
    grid = np.array([0.0, 0.2, 0.5, 1.0, 1.8])
    exact = [worst_exact(matrix, n, float(eps)) for eps in grid]
    for bound in (_round_bound(branches, pis),
                  _round_bound([b.variation_ratio for b in branches], pis)):
        values = bound.deltas_upper(grid, n)
        assert np.all(values >= exact)
        assert list(values) == [bound.delta_upper(float(eps), n) for eps in grid]


def test_round_bound_keeps_the_structure_up_to_its_limit() -> None:
    """At the limit the round bound is the structured one (within the batched curve's 0.2 %);
    above it, the smaller of the composite VariationRatio at n and the structured bound at the
    limit (here the latter: 0.9491 at 64 and 65 users, where the composite alone gives 1.1975)."""
    delta, n = 1e-6, PARALLEL_STRUCTURE_PROFILE_MAX_USERS
    pis = [0.5, 0.5]
    structured = parallel_composite_bound(SURVEY, pis)
    composite = parallel_composite(SURVEY, pis)
    round_bound = _round_bound(SURVEY, pis)
    inside = epsilon_of(round_bound.delta_upper, delta, n, 1.5)
    reference = epsilon_of(structured.delta_upper, delta, n, 1.5)
    assert abs(inside / reference - 1.0) <= ROUND_GAP
    assert inside < 0.9 * composite.epsilon(delta, n)  # the structure matters here
    above = epsilon_of(round_bound.delta_upper, delta, n + 1, 1.5)
    assert above <= inside
    assert abs(above / min(inside, composite.epsilon(delta, n + 1)) - 1.0) <= ROUND_GAP


@pytest.mark.parametrize("n", [20, 1000])
def test_one_parallel_round_pld_is_its_bound(n: int) -> None:
    """One round through both accountants: the PLD's ε within 0.2 % of its bound's ε, and the
    RDP's ε at least that."""
    delta = 1e-6
    event = ParallelCompositionEvent(SURVEY, n)
    reference = epsilon_of(_round_bound(SURVEY, [0.5, 0.5]).delta_upper, delta, n, 1.5)
    epsilon = ShufflePLDAccountant().compose(event).get_epsilon(delta)
    assert abs(epsilon / reference - 1.0) <= ROUND_GAP
    assert ShuffleRdpAccountant().compose(event).get_epsilon(delta) >= epsilon * (1.0 - ROUND_GAP)


@pytest.mark.parametrize("keyword, value, error", [
    ("lowering", 0.0, ValueError), ("lowering", 0.5, ValueError),
    ("structure_max_users", 0, ValueError), ("structure_max_users", 2.5, TypeError),
])
def test_bad_options_are_refused(keyword: str, value: object, error: type) -> None:
    with pytest.raises(error, match=keyword):
        parallel_composite_bound(SURVEY, [0.5, 0.5], **{keyword: value})


def test_no_jump_above_the_structure_limit() -> None:
    """Above ``PARALLEL_STRUCTURE_PROFILE_MAX_USERS`` the structured bounds are read at the limit
    (the bound is non-increasing in n): a round with one more user never reports more (before,
    65 users reported the composite VariationRatio's ε alone, above the 64-user round's), and
    the bound at n users is the minimum of the composite bound at n and the structured bounds
    at the limit, at every ε of a grid."""
    limit = PARALLEL_STRUCTURE_PROFILE_MAX_USERS
    bound = _round_bound(SURVEY, [0.5, 0.5])
    composite = parallel_composite_bound(SURVEY, [0.5, 0.5], lowering=ROUND_LOWERING,
                                         structure_max_users=1)
    epsilons = np.linspace(0.0, 1.5, 16)
    at_limit = bound.deltas_upper(epsilons, limit)
    for n in (limit + 1, 3 * limit):
        above = bound.deltas_upper(epsilons, n)
        assert np.all(above <= at_limit)
        expected = np.minimum(at_limit, composite.deltas_upper(epsilons, n))
        np.testing.assert_allclose(above, expected, rtol=0.0, atol=0.0)
        assert bound.delta_upper(float(epsilons[3]), n) == above[3]  # scalar form: the same
    one = ShufflePLDAccountant().compose(ParallelCompositionEvent(SURVEY, limit)).get_epsilon(1e-6)
    more = ShufflePLDAccountant().compose(
        ParallelCompositionEvent(SURVEY, limit + 1)).get_epsilon(1e-6)
    assert more <= one
