"""Randomizers survive pickle, copy.deepcopy and Opacus checkpoints, and compare by value.

Every catalog entry and every ``from_matrix`` randomizer must come back equal to the original and
with bit-identical certified bounds (upper and lower); the CLI accepts the catalog alias ``oue``.
"""

from __future__ import annotations

import copy
import io
import json
import pickle

import numpy as np
import pytest

from dpacct_shuffle import randomizers as rz
from dpacct_shuffle.cli import main
from dpacct_shuffle.randomizers import LocalPairBound, Randomizer
from dpacct_shuffle.randomizers.matrix import validate_matrix

USERS, DELTA = 1000, 1e-6

# valid small arguments for every catalog entry (keyword arguments where an entry has options)
CATALOG_CALLS: dict[str, tuple[tuple, dict]] = {
    "worst_case_ldp": ((1.0,), {}), "binary_rr": ((1.0,), {}), "krr": ((1.0, 20), {}),
    "rappor": ((1.0, 5), {}), "optimized_unary_encoding": ((1.0, 5), {}),
    "subset_selection": ((1.0, 8, 3), {}),
    "local_hashing": ((1.0, 4), {"domain_size": 3, "collision_probability": 0.0}),
    "hadamard_response": ((1.0, 16, 2), {}), "pckv_grr": ((1.0, 10, 2), {}),
    "collision": ((1.0, 10, 12, 3), {}), "sampling_rappor": ((1.0, 4, 2), {"sampled_bits": True}),
    "laplace": ((1.0,), {}), "piecewise": ((1.0,), {}), "duchi": ((1.0,), {}),
    "harmony": ((1.0, 5), {}), "metric_ldp": ((0.5, 2.0, 1.0), {}), "metric_laplace": ((0.5, 1.5), {}),
    "balcer_binary_summation": ((0.25,), {}), "cheu_binary_summation": ((0.25,), {}),
    "balls_into_bins": ((10, 2), {}), "mix_dump": ((0.3, 10), {}),
}

MATRIX = [[0.4, 0.2, 0.2, 0.2], [0.2, 0.4, 0.2, 0.2], [0.2, 0.2, 0.4, 0.2]]


def _build(name: str) -> Randomizer:
    args, kwargs = CATALOG_CALLS[name]
    return rz.CATALOG[name](*args, **kwargs)


def _assert_same_randomizer(copied: Randomizer, original: Randomizer) -> None:
    assert copied is not original
    assert copied == original and hash(copied) == hash(original)
    assert copied.name == original.name and dict(copied.parameters) == dict(original.parameters)
    assert (copied.matrix is None) == (original.matrix is None)
    if original.matrix is not None:
        assert np.array_equal(copied.matrix, original.matrix)
        assert not copied.matrix.flags.writeable
    with pytest.raises(TypeError):
        copied.parameters["x"] = 1  # type: ignore[index]
    # (epsilon_lower(δ), epsilon(δ)): the certified lower and upper bounds, bit for bit
    interval = copied.shuffled(USERS).epsilon_interval(DELTA)
    assert interval == original.shuffled(USERS).epsilon_interval(DELTA)
    assert 0.0 <= interval[0] <= interval[1] < np.inf


def test_calls_cover_the_whole_catalog() -> None:
    assert set(CATALOG_CALLS) == set(rz.CATALOG)


@pytest.mark.parametrize("name", sorted(CATALOG_CALLS))
def test_catalog_entry_pickle_and_deepcopy_round_trip(name: str) -> None:
    original = _build(name)
    _assert_same_randomizer(pickle.loads(pickle.dumps(original)), original)
    _assert_same_randomizer(copy.deepcopy(original), original)


def test_pickles_are_small_calls_not_matrices() -> None:
    """A catalog entry pickles as its call: OUE on 12 items has a 12 x 4096 matrix (393 kB)."""
    randomizer = rz.oue(2.0, 12)
    assert randomizer.matrix is not None and randomizer.matrix.nbytes > 300_000
    assert len(pickle.dumps(randomizer)) < 1_000


def test_value_equality_of_catalog_entries() -> None:
    assert rz.krr(2, 10) == rz.krr(2.0, 10) == rz.krr(epsilon0=2.0, domain_size=10.0)
    assert hash(rz.krr(2, 10)) == hash(rz.krr(2.0, 10))
    assert len({rz.krr(2, 10), rz.krr(2.0, 10), rz.krr(2.0, 11), rz.krr(2.5, 10)}) == 3
    assert rz.oue(1.0, 8) == rz.optimized_unary_encoding(1.0, 8)
    assert rz.rappor(1.0, 8) != rz.oue(1.0, 8)  # same parameters, different entries
    assert rz.sampling_rappor(1.0, 4, 2) != rz.sampling_rappor(1.0, 4, 2, sampled_bits=True)
    # the subset-size-1 entry is k-RR's bound under another name: still a different entry
    assert rz.subset_selection(1.0, 5, 1) != rz.krr(1.0, 5)
    assert rz.krr(1.0, 5) != "krr" and rz.krr(1.0, 5) != rz.krr(1.0, 5).variation_ratio


@pytest.mark.parametrize("first, second", [
    (lambda: rz.local_hashing(1.0, 4, 3), lambda: rz.local_hashing(1.0, 4, 3, collision_probability=0.25)),
    (lambda: rz.hadamard_response(1.0, 8, 2), lambda: rz.hadamard_response(1.0, 8, 2, domain_size=6)),
    (lambda: rz.metric_ldp(0.5, 2.0), lambda: rz.metric_ldp(0.5, 2.0, 2.0)),
], ids=["local_hashing_default_c", "hadamard_default_d", "metric_ldp_default_d1"])
def test_equal_parameters_from_different_calls_mean_equal_bounds(first, second) -> None:
    """Equality is by (name, parameters), not by the call: calls spelling the same entry
    differently (defaults vs explicit values) are equal and certify the same numbers."""
    a, b = first(), second()
    assert a == b and hash(a) == hash(b)
    assert ((a.matrix is None and b.matrix is None) or np.array_equal(a.matrix, b.matrix))
    assert a.shuffled(USERS).epsilon_interval(DELTA) == b.shuffled(USERS).epsilon_interval(DELTA)


def test_from_matrix_round_trip_and_equality() -> None:
    original = rz.from_matrix(MATRIX, name="three")
    _assert_same_randomizer(pickle.loads(pickle.dumps(original)), original)
    _assert_same_randomizer(copy.deepcopy(original), original)
    assert rz.from_matrix(np.array(MATRIX), name="three") == original
    assert rz.from_matrix(MATRIX, name="other") != original
    shifted = [[0.4, 0.2, 0.2, 0.2], [0.2, 0.4, 0.2, 0.2], [0.2, 0.2, 0.2, 0.4]]
    assert rz.from_matrix(shifted, name="three") != original
    binary = rz.binary_rr(1.0)
    assert rz.from_matrix(binary.matrix, name="binary_rr") != binary  # analyzed vs closed form


def test_from_matrix_round_trip_keeps_renormalised_entries() -> None:
    """Rows summing to 1 only within tolerance are renormalised once; unpickling must not do it
    again (the copy's matrix, and so its bounds, are bit-identical)."""
    rows = np.array([[0.6, 0.3, 0.1 + 1e-12], [0.3, 0.6, 0.1 - 3e-12]])
    original = rz.from_matrix(rows, name="rough")
    assert not np.array_equal(original.matrix, rows)
    # renormalising is not idempotent here: a second pass would move entries by an ulp
    assert not np.array_equal(validate_matrix(original.matrix), original.matrix)
    _assert_same_randomizer(pickle.loads(pickle.dumps(original)), original)


def test_directly_constructed_randomizer_compares_by_identity_and_refuses_pickling() -> None:
    laws = np.array([[0.75, 0.25], [0.25, 0.75]])

    def build() -> Randomizer:
        return Randomizer("custom", {"k": 1}, [LocalPairBound(laws[:1], laws[1:])],
                          variation_ratio=None)

    first, second = build(), build()
    assert first == first and first != second and hash(first) != hash(second)
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(first)


def test_opacus_checkpoint_round_trip_with_randomizers() -> None:
    """The ShuffleAccountant's state_dict holds the randomizers inside its ShuffleEvents; it goes
    through torch.save / torch.load and through Opacus's own save_checkpoint / load_checkpoint."""
    pytest.importorskip("opacus")
    torch = pytest.importorskip("torch")
    from opacus import PrivacyEngine

    from dpacct_shuffle.events import ShuffleEvent
    from dpacct_shuffle.opacus import ShuffleAccountant
    from tests.test_opacus import torch_round_trip

    analyzed = rz.from_matrix(MATRIX, name="three")
    engine = PrivacyEngine(accountant="shuffle")
    accountant = engine.accountant
    assert isinstance(accountant, ShuffleAccountant)
    accountant.neighboring_relation = "replace_one"  # unsampled shuffle rounds below
    for _ in range(3):
        accountant.step(noise_multiplier=1.0, sample_rate=0.01)
    accountant.step_shuffle(rz.krr(2.0, 10), USERS)
    accountant.step_shuffle(rz.krr(2.0, 10), USERS)  # equal randomizer: merged into one entry
    accountant.step_shuffle(analyzed, 500, count=2)
    assert accountant.events == [(ShuffleEvent(rz.krr(2.0, 10), USERS), 2),
                                 (ShuffleEvent(analyzed, 500), 2)]
    expected = accountant.get_epsilon(DELTA)

    restored = torch_round_trip(accountant)
    assert restored.events == accountant.events and restored.history == accountant.history
    assert restored.events[0][0].randomizer is not accountant.events[0][0].randomizer
    assert restored.get_epsilon(DELTA) == expected

    module = torch.nn.Linear(2, 1)
    checkpoint = io.BytesIO()
    engine.save_checkpoint(path=checkpoint, module=module)
    checkpoint.seek(0)
    fresh = PrivacyEngine(accountant="shuffle")
    fresh.load_checkpoint(path=checkpoint, module=torch.nn.Linear(2, 1))
    assert fresh.accountant.events == accountant.events
    assert fresh.accountant.get_epsilon(DELTA) == expected


def _params_json(name: str) -> dict:
    out, err = io.StringIO(), io.StringIO()
    code = main(["params", "--randomizer", name, "--epsilon0", "4", "--domain", "10", "--json"],
                stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    return json.loads(out.getvalue())


def test_cli_accepts_the_oue_alias() -> None:
    assert rz.ALIASES == {"oue": "optimized_unary_encoding"}
    alias, full = _params_json("oue"), _params_json("optimized_unary_encoding")
    assert alias == full
    assert alias["variation_ratio"]["p"] == pytest.approx(np.exp(4.0), rel=1e-12)
    assert alias["variation_ratio"]["beta"] == pytest.approx((np.exp(4.0) - 1) / (2 * (np.exp(4.0) + 1)),
                                                             rel=1e-12)
    out, err = io.StringIO(), io.StringIO()
    assert main(["params", "--randomizer", "ouee", "--epsilon0", "4", "--domain", "10"],
                stdout=out, stderr=err) != 0
    assert "unknown randomizer 'ouee'" in err.getvalue() and "aliases: oue" in err.getvalue()


def test_randomizers_are_immutable_and_variants_are_new_objects() -> None:
    """Value equality and the accountants' caches rely on a randomizer never changing."""
    randomizer = rz.rappor(2.0, 8)
    before = randomizer.shuffled(1000).epsilon(1e-6)
    for name, value in [("fallbacks", ()), ("cover", ()), ("variation_ratio", None), ("name", "x"),
                        ("parameters", {}), ("matrix", None)]:
        with pytest.raises(AttributeError, match=name):
            setattr(randomizer, name, value)
    assert randomizer.shuffled(1000).epsilon(1e-6) == before
    weaker = rz.krr(2.0, 8)
    variant = randomizer.with_fallbacks(*weaker.cover)
    assert variant is not randomizer and variant.fallbacks == (*randomizer.fallbacks, *weaker.cover)
    assert randomizer.fallbacks != variant.fallbacks  # the original is untouched
    # a further fallback can only lower the bound (min over fallbacks)
    assert variant.shuffled(1000).epsilon(1e-6) <= before
    with pytest.raises(AttributeError, match="origin"):
        randomizer._record_origin(lambda: randomizer, ("again",))
