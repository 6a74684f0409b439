"""ShuffleAccountant against Opacus's accountants and dp-accounting's PLD accountant (real objects)."""

from __future__ import annotations

import io
import math

import pytest

pytest.importorskip("opacus")
torch = pytest.importorskip("torch")

from dp_accounting import dp_event, mechanism_calibration  # noqa: E402
from dp_accounting.pld import PLDAccountant  # noqa: E402
from dp_accounting.privacy_accountant import NeighboringRelation  # noqa: E402
from opacus import PrivacyEngine  # noqa: E402
from opacus.accountants import RDPAccountant, create_accountant  # noqa: E402

from dpacct_shuffle import VariationRatio, randomizers  # noqa: E402
from dpacct_shuffle.accountants import ShufflePLDAccountant  # noqa: E402
from dpacct_shuffle.events import LDPCompositionEvent, ShuffleEvent  # noqa: E402
from dpacct_shuffle.opacus import (  # noqa: E402
    ShuffleAccountant,
    _register,
    dp_sgd_event,
    noise_multiplier_for_epsilon,
)

REPLACE = NeighboringRelation.REPLACE_ONE
ADD_REMOVE = NeighboringRelation.ADD_OR_REMOVE_ONE
DELTA = 1e-5
# One randomizer object and one n for every shuffle event: its PLD is built once (cached per event).
KRR = randomizers.krr(2.0, 4)
USERS = 1000
SIGMA, RATE, STEPS = 1.1, 0.05, 30


def _dp_sgd(accountant: ShuffleAccountant, steps: int = STEPS, sigma: float = SIGMA,
            rate: float = RATE) -> None:
    for _ in range(steps):
        accountant.step(noise_multiplier=sigma, sample_rate=rate)


# -- registry ---------------------------------------------------------------------------------


def test_registered_under_shuffle_and_used_by_privacy_engine() -> None:
    assert type(create_accountant("shuffle")) is ShuffleAccountant
    engine = PrivacyEngine(accountant="shuffle")
    assert isinstance(engine.accountant, ShuffleAccountant)
    assert engine.accountant.neighboring_relation is ADD_REMOVE  # Opacus's relation
    assert engine.accountant.mechanism() == "shuffle"


def test_registration_is_idempotent() -> None:
    _register()
    _register()
    assert type(create_accountant("shuffle")) is ShuffleAccountant


def test_clear_import_error_without_opacus(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib
    import sys

    monkeypatch.delitem(sys.modules, "dpacct_shuffle.opacus")
    monkeypatch.setitem(sys.modules, "opacus.accountants", None)  # makes the import fail
    with pytest.raises(ImportError, match=r"dpacct_shuffle.opacus needs Opacus.*pip install"):
        importlib.import_module("dpacct_shuffle.opacus")


# -- DP-SGD steps -------------------------------------------------------------------------------


def test_history_has_opacus_format() -> None:
    ours, opacus_rdp = ShuffleAccountant("replace_one"), RDPAccountant()
    for sigma, rate in [(1.0, 0.1), (1.0, 0.1), (2.0, 0.1), (1.0, 0.1), (1.0, 0.2)]:
        ours.step(noise_multiplier=sigma, sample_rate=rate)
        opacus_rdp.step(noise_multiplier=sigma, sample_rate=rate)
    assert ours.history == opacus_rdp.history == [(1.0, 0.1, 2), (2.0, 0.1, 1), (1.0, 0.1, 1),
                                                  (1.0, 0.2, 1)]
    assert len(ours) == len(opacus_rdp) == 4  # history entries, as in Opacus


@pytest.mark.parametrize("relation", [REPLACE, ADD_REMOVE])
def test_dp_sgd_epsilon_equals_dp_accounting_pld(relation: NeighboringRelation) -> None:
    ours = ShuffleAccountant(relation)
    _dp_sgd(ours, 20)
    _dp_sgd(ours, 10, sigma=2.0)
    reference = PLDAccountant(relation)
    reference.compose(dp_event.PoissonSampledDpEvent(RATE, dp_event.GaussianDpEvent(SIGMA)), 20)
    reference.compose(dp_event.PoissonSampledDpEvent(RATE, dp_event.GaussianDpEvent(2.0)), 10)
    assert ours.get_epsilon(DELTA) == reference.get_epsilon(DELTA)
    assert ours.get_delta(1.0) == reference.get_delta(1.0)


def test_replace_one_costs_more_than_add_remove_which_beats_opacus_rdp() -> None:
    replace, add_remove, opacus_rdp = ShuffleAccountant("replace_one"), ShuffleAccountant("add_or_remove_one"), \
        RDPAccountant()
    for accountant in (replace, add_remove, opacus_rdp):
        _dp_sgd(accountant)
    eps_add_remove = add_remove.get_epsilon(DELTA)
    assert 0.0 < eps_add_remove <= opacus_rdp.get_epsilon(DELTA)
    # sensitivity 2 under replace-one: strictly more than add/remove
    assert replace.get_epsilon(DELTA) > 1.2 * eps_add_remove


def test_empty_and_non_private() -> None:
    accountant = ShuffleAccountant("replace_one")
    assert accountant.get_epsilon(DELTA) == 0.0 and len(accountant) == 0
    accountant.step(noise_multiplier=0.0, sample_rate=0.1)
    assert accountant.get_epsilon(DELTA) == math.inf


# -- shuffle rounds and other events ------------------------------------------------------------


def test_shuffle_rounds_equal_shuffle_pld_accountant_and_core() -> None:
    ours = ShuffleAccountant("replace_one")
    ours.step_shuffle(KRR, USERS)
    single = ours.get_epsilon(1e-6)
    core = KRR.shuffled(USERS).epsilon(1e-6)
    # the PLD is built from the certified profile: within 1 % of the core's own epsilon
    assert core * 0.99 <= single <= core * 1.01
    ours.step_shuffle(KRR, USERS, count=2)
    _dp_sgd(ours)
    reference = ShufflePLDAccountant()
    reference.compose(dp_event.PoissonSampledDpEvent(RATE, dp_event.GaussianDpEvent(SIGMA)), STEPS)
    reference.compose(ShuffleEvent(KRR, USERS), 3)
    assert ours.events == [(ShuffleEvent(KRR, USERS), 3)]
    assert len(ours) == 2  # one history entry, one events entry
    assert ours.get_epsilon(DELTA) == reference.get_epsilon(DELTA)
    dp_sgd_only = ShuffleAccountant("replace_one")
    _dp_sgd(dp_sgd_only)
    assert ours.get_epsilon(DELTA) > dp_sgd_only.get_epsilon(DELTA)


def test_compose_any_supported_event() -> None:
    ours = ShuffleAccountant("replace_one")
    ours.compose(LDPCompositionEvent((0.5, 0.25)), count=2)
    ours.compose(dp_event.GaussianDpEvent(3.0))
    reference = ShufflePLDAccountant()
    reference.compose(LDPCompositionEvent((0.5, 0.25)), 2)
    reference.compose(dp_event.GaussianDpEvent(3.0))
    assert ours.get_epsilon(DELTA) == reference.get_epsilon(DELTA)
    assert len(ours) == 2


def test_add_remove_refuses_replace_one_only_events_naming_both_ways_out() -> None:
    accountant = ShuffleAccountant()  # add/remove-one, Opacus's relation
    _dp_sgd(accountant, 3)
    with pytest.raises(ValueError, match="unsampled ShuffleEvent") as error:
        accountant.step_shuffle(KRR, USERS)
    assert "sampling_probability" in str(error.value)
    assert "neighboring_relation='replace_one'" in str(error.value)
    with pytest.raises(ValueError, match="replace-one") as error:
        accountant.compose(LDPCompositionEvent((1.0,)))
    assert "neighboring_relation='replace_one'" in str(error.value)
    assert accountant.events == [] and len(accountant) == 1
    # the first way out: a sampled round is accepted under add/remove-one
    accountant.step_shuffle(KRR, USERS, sampling_probability=0.1)
    reference = ShufflePLDAccountant(ADD_REMOVE)
    reference.compose(dp_event.PoissonSampledDpEvent(RATE, dp_event.GaussianDpEvent(SIGMA)), 3)
    reference.compose(dp_event.PoissonSampledDpEvent(0.1, ShuffleEvent(KRR, USERS)))
    assert accountant.get_epsilon(DELTA) == reference.get_epsilon(DELTA)


def test_relation_switch_only_while_no_replace_one_only_event() -> None:
    accountant = ShuffleAccountant("replace_one")  # as created by PrivacyEngine(accountant="shuffle")
    _dp_sgd(accountant, 5)
    accountant.neighboring_relation = "add_or_remove_one"
    reference = PLDAccountant(ADD_REMOVE)
    reference.compose(dp_event.PoissonSampledDpEvent(RATE, dp_event.GaussianDpEvent(SIGMA)), 5)
    assert accountant.get_epsilon(DELTA) == reference.get_epsilon(DELTA)
    accountant.neighboring_relation = REPLACE
    accountant.step_shuffle(KRR, USERS)
    with pytest.raises(ValueError, match="replace-one"):
        accountant.neighboring_relation = ADD_REMOVE
    assert accountant.neighboring_relation is REPLACE
    # a Laplace event has no replace-one PLD in dp-accounting: it pins add/remove the same way
    laplace = ShuffleAccountant(ADD_REMOVE)
    laplace.compose(dp_event.LaplaceDpEvent(1.0))
    with pytest.raises(ValueError, match="not supported"):
        laplace.neighboring_relation = "replace_one"


@pytest.mark.parametrize("call, error", [
    (lambda a: a.compose("gaussian"), TypeError),
    (lambda a: a.compose(dp_event.UnsupportedDpEvent()), ValueError),
    (lambda a: a.compose(dp_event.GaussianDpEvent(1.0), count=0), ValueError),
    (lambda a: a.compose(dp_event.GaussianDpEvent(1.0), count=1.5), TypeError),
    (lambda a: a.step(noise_multiplier=-1.0, sample_rate=0.1), ValueError),
    (lambda a: a.step(noise_multiplier=1.0, sample_rate=1.5), ValueError),
    (lambda a: a.step(noise_multiplier=float("nan"), sample_rate=0.1), ValueError),
    (lambda a: a.step_shuffle(KRR, 0), ValueError),
    (lambda a: a.step_shuffle(object(), 10), TypeError),
    (lambda a: a.get_epsilon(0.0), ValueError),
    (lambda a: a.get_delta(-1.0), ValueError),
])
def test_bad_input(call, error) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error):
        call(ShuffleAccountant("replace_one"))


# dp-accounting's third relation (replacement by a special value): not one Opacus users have
_OTHER_RELATION = next(r for r in NeighboringRelation
                       if r.name not in ("REPLACE_ONE", "ADD_OR_REMOVE_ONE"))


@pytest.mark.parametrize("relation", ["replace", _OTHER_RELATION.name, _OTHER_RELATION, 1])
def test_bad_relation(relation: object) -> None:
    with pytest.raises(ValueError, match="neighboring_relation"):
        ShuffleAccountant(relation)  # type: ignore[arg-type]


# -- checkpoints --------------------------------------------------------------------------------


def torch_round_trip(accountant: ShuffleAccountant) -> ShuffleAccountant:
    """A fresh accountant loaded from ``torch.save(accountant.state_dict())`` (as Opacus does),
    read back with ``weights_only=True``: the state is plain data."""
    buffer = io.BytesIO()
    torch.save(accountant.state_dict(), buffer)
    buffer.seek(0)
    restored = ShuffleAccountant("replace_one")
    restored.load_state_dict(torch.load(buffer, weights_only=True))
    return restored


def test_state_dict_round_trip_in_memory_and_through_torch_save() -> None:
    vr = VariationRatio.worst_case(1.0)  # picklable, for torch.save below
    original = ShuffleAccountant("replace_one")
    _dp_sgd(original, 5)
    original.step_shuffle(KRR, USERS)
    original.step_shuffle(vr, 300, count=2)
    original.compose(LDPCompositionEvent((0.5,)))
    state = original.state_dict()
    assert state["mechanism"] == "shuffle" and state["history"] == [(SIGMA, RATE, 5)]
    restored = ShuffleAccountant("add_or_remove_one")  # the stored relation wins
    restored.load_state_dict(state)
    assert restored.neighboring_relation is REPLACE
    assert restored.history == original.history and restored.events == original.events
    assert len(restored) == len(original) == 4
    assert restored.get_epsilon(DELTA) == original.get_epsilon(DELTA)

    picklable = ShuffleAccountant("replace_one")
    _dp_sgd(picklable, 5)
    picklable.step_shuffle(vr, 300, count=2)
    from_disk = torch_round_trip(picklable)
    assert from_disk.events == picklable.events and from_disk.history == picklable.history
    assert from_disk.get_epsilon(DELTA) == picklable.get_epsilon(DELTA)


def test_load_state_dict_validates() -> None:
    accountant = ShuffleAccountant("replace_one")
    rdp = RDPAccountant()
    rdp.step(noise_multiplier=1.0, sample_rate=0.1)
    with pytest.raises(ValueError, match="mechanism"):
        accountant.load_state_dict(rdp.state_dict())
    good = ShuffleAccountant("replace_one").state_dict()
    for key in ("events", "neighboring_relation"):
        broken = dict(good)
        del broken[key]
        with pytest.raises(ValueError, match=key):
            accountant.load_state_dict(broken)
    add_remove_with_shuffle = dict(good, neighboring_relation="ADD_OR_REMOVE_ONE",
                                   events=[(ShuffleEvent(KRR, USERS), 1)])
    with pytest.raises(ValueError, match="replace-one"):
        accountant.load_state_dict(add_remove_with_shuffle)
    with pytest.raises(ValueError, match="history"):
        accountant.load_state_dict(dict(good, history=[(1.0, 0.1)]))
    assert accountant.history == [] and accountant.events == []  # nothing half-loaded


# -- noise calibration --------------------------------------------------------------------------


COARSE = 1e-3  # PLD grid of the calibration tests (10x cheaper than the default 1e-4)


def test_noise_multiplier_matches_calibrate_dp_mechanism_without_extra_events() -> None:
    target, steps = 2.0, 40
    ours = noise_multiplier_for_epsilon(
        target_epsilon=target, target_delta=DELTA, sample_rate=RATE, steps=steps,
        accountant=ShuffleAccountant("add_or_remove_one", COARSE), tolerance=1e-4)
    reference = mechanism_calibration.calibrate_dp_mechanism(
        lambda: PLDAccountant(ADD_REMOVE, COARSE),
        lambda sigma: dp_event.SelfComposedDpEvent(
            dp_event.PoissonSampledDpEvent(RATE, dp_event.GaussianDpEvent(sigma)), steps),
        target, DELTA, tol=1e-4)
    assert ours == pytest.approx(reference, abs=2e-4)


def test_noise_multiplier_counts_shuffle_rounds() -> None:
    target, steps, rounds = 3.0, 20, 2
    planned = [(ShuffleEvent(KRR, USERS), rounds)]
    sigma = noise_multiplier_for_epsilon(target_epsilon=target, target_delta=DELTA,
                                         sample_rate=RATE, steps=steps, planned_events=planned,
                                         accountant=ShuffleAccountant("replace_one", COARSE))
    # reference: dp-accounting's calibration of a freshly built event with the same content
    reference = mechanism_calibration.calibrate_dp_mechanism(
        lambda: ShufflePLDAccountant(REPLACE, COARSE),
        lambda s: dp_event.ComposedDpEvent([
            dp_event.SelfComposedDpEvent(ShuffleEvent(KRR, USERS), rounds),
            dp_event.SelfComposedDpEvent(dp_sgd_event(s, RATE), steps)]),
        target, DELTA, tol=1e-3)
    assert sigma == pytest.approx(reference, abs=2e-3)

    def epsilon_at(noise: float) -> float:
        accountant = ShuffleAccountant("replace_one", COARSE)
        _dp_sgd(accountant, steps, sigma=noise)
        accountant.step_shuffle(KRR, USERS, count=rounds)
        return accountant.get_epsilon(DELTA)

    assert epsilon_at(sigma) <= target < epsilon_at(sigma - 0.01)
    # (that Opacus's own calibration ignores the rounds is shown with real training in
    # integration/test_opacus_training.py)
    # already-spent budget is counted too
    spent = ShuffleAccountant("replace_one", COARSE)
    spent.step_shuffle(KRR, USERS)
    more = noise_multiplier_for_epsilon(target_epsilon=target, target_delta=DELTA,
                                        sample_rate=RATE, steps=steps, planned_events=planned,
                                        accountant=spent)
    assert more > sigma


def test_noise_multiplier_errors() -> None:
    planned = [(ShuffleEvent(KRR, USERS), 50)]
    with pytest.raises(ValueError, match="used up"):
        noise_multiplier_for_epsilon(target_epsilon=0.5, target_delta=DELTA, sample_rate=RATE,
                                     steps=10, planned_events=planned,
                                     neighboring_relation="replace_one")
    with pytest.raises(ValueError, match="replace-one"):
        noise_multiplier_for_epsilon(target_epsilon=5.0, target_delta=DELTA, sample_rate=RATE,
                                     steps=10, planned_events=planned,
                                     neighboring_relation="add_or_remove_one")
    with pytest.raises(ValueError, match="target_epsilon"):
        noise_multiplier_for_epsilon(target_epsilon=0.0, target_delta=DELTA, sample_rate=RATE,
                                     steps=10)
    with pytest.raises(ValueError, match="sample_rate"):
        noise_multiplier_for_epsilon(target_epsilon=1.0, target_delta=DELTA, sample_rate=0.0,
                                     steps=10)
    with pytest.raises(TypeError, match="steps"):
        noise_multiplier_for_epsilon(target_epsilon=1.0, target_delta=DELTA, sample_rate=RATE,
                                     steps=2.5)


# -- Opacus parity -------------------------------------------------------------------------------


def test_one_line_switch_gives_dp_accountings_add_remove_value_at_most_opacus_prv() -> None:
    """PrivacyEngine(accountant="shuffle") on a DP-SGD-only run: exactly dp-accounting's PLD under
    add/remove-one, and at most Opacus's own PRV accountant (both run here)."""
    from opacus.accountants import PRVAccountant

    sigma, rate, steps, delta = 1.1, 0.01, 300, 1e-6
    engine = PrivacyEngine(accountant="shuffle")
    prv = PRVAccountant()
    for _ in range(steps):
        engine.accountant.step(noise_multiplier=sigma, sample_rate=rate)
        prv.step(noise_multiplier=sigma, sample_rate=rate)
    reference = PLDAccountant(ADD_REMOVE)
    reference.compose(dp_event.PoissonSampledDpEvent(rate, dp_event.GaussianDpEvent(sigma)), steps)
    epsilon = engine.get_epsilon(delta)
    assert epsilon == reference.get_epsilon(delta)
    assert 0.0 < epsilon <= prv.get_epsilon(delta)
    assert len(engine.accountant) == len(prv) == 1  # one history entry, like Opacus's accountants
    assert engine.accountant.history == prv.history == [(sigma, rate, steps)]


def test_replace_one_checkpoint_of_the_previous_format_still_loads() -> None:
    """tests/data/opacus_replace_one_state_dict_v1.json: a state_dict written by the previous
    release's ShuffleAccountant (replace-one default), with the ε it reported."""
    import json
    from pathlib import Path

    stored = json.loads((Path(__file__).parent / "data" / "opacus_replace_one_state_dict_v1.json")
                        .read_text(encoding="utf-8"))
    accountant = ShuffleAccountant()  # add/remove-one now; the checkpoint's relation wins
    accountant.load_state_dict(stored["state_dict"])
    assert accountant.neighboring_relation is REPLACE
    assert accountant.history == [(1.1, 0.01, 3)]
    assert [count for _, count in accountant.events] == [2, 1]
    # the ε it reported, or tighter: the shuffle rounds' tails are now certified and cut at 1e-20
    # instead of 1e-15, and a round's profile grid runs down to δ ≤ 1e-22
    # (0.400442313631572 → 0.4004423135910641 → 0.40044228293048717)
    epsilon = accountant.get_epsilon(1e-6)
    assert stored["epsilon_at_1e-6"] * (1 - 1e-6) <= epsilon <= stored["epsilon_at_1e-6"]
    # and it round-trips through the current format
    again = ShuffleAccountant()
    again.load_state_dict(accountant.state_dict())
    assert again.get_epsilon(1e-6) == epsilon


def test_readable_repr() -> None:
    accountant = ShuffleAccountant()
    _dp_sgd(accountant, 3)
    accountant.step_shuffle(KRR, USERS, sampling_probability=0.5, count=2)
    text = repr(accountant)
    assert text.startswith("ShuffleAccountant(neighboring_relation='add_or_remove_one'")
    assert "3 DP-SGD step(s) in 1 history entry" in text and "2 × PoissonSampledDpEvent" in text
    assert "object at 0x" not in text
