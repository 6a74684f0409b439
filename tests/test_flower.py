"""ShufflePrivacyAccountant against Flower's Protocol, Flower's RdpAccountant, dp-accounting and
closed forms (no Ray: the simulation runs are in integration/test_flower_simulation.py)."""

from __future__ import annotations

import inspect
import json
import math
import subprocess
import sys
import typing

import numpy as np
import pytest

flwr_serverapp = pytest.importorskip("flwr.serverapp")

from dp_accounting import dp_event  # noqa: E402
from dp_accounting.pld import PLDAccountant  # noqa: E402
from dp_accounting.privacy_accountant import NeighboringRelation as DpRel  # noqa: E402
from flwr.serverapp import (  # noqa: E402
    GaussianPrivacyEvent,
    NeighboringRelation,
    PrivacyAccountant,
    PrivacyConfig,
    PrivacySpent,
    RdpAccountant,
    SamplingMethod,
)
from scipy import integrate, stats  # noqa: E402

from dpacct_shuffle import randomizers  # noqa: E402
from dpacct_shuffle.accountants import ShufflePLDAccountant, ShuffleRdpAccountant  # noqa: E402
from dpacct_shuffle.events import (  # noqa: E402
    LDPCompositionEvent,
    ParallelCompositionEvent,
    ShuffleEvent,
)
from dpacct_shuffle.flower import ShufflePrivacyAccountant  # noqa: E402
from dpacct_shuffle.flower.serialization import event_from_json, event_to_json  # noqa: E402
from dpacct_shuffle.without_replacement import (  # noqa: E402
    gaussian_profile,
    without_replacement_profile,
)

DELTA = 1e-5
POPULATION = 100
KRR = randomizers.krr(2.0, 5)

NO_AMPLIFICATION = PrivacyConfig(DELTA, POPULATION, NeighboringRelation.ADD_OR_REMOVE_ONE,
                                 SamplingMethod.NO_AMPLIFICATION, max_epsilon=8.0)
POISSON = PrivacyConfig(DELTA, POPULATION, NeighboringRelation.ADD_OR_REMOVE_ONE,
                        SamplingMethod.POISSON)
WITHOUT_REPLACEMENT = PrivacyConfig(DELTA, POPULATION, NeighboringRelation.REPLACE_ONE,
                                    SamplingMethod.WITHOUT_REPLACEMENT)


def _gaussian_exact_epsilon(sigma: float, sensitivity: float, delta: float) -> float:
    """ε at δ of one Gaussian release (exact profile, inverted by bisection; k releases of σ are
    one release of σ/√k)."""
    profile = gaussian_profile(sigma, sensitivity)
    lo, hi = 0.0, 200.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if profile.delta(mid) > delta else (lo, mid)
    return lo


# -- conformance with Flower's Protocol (no isinstance) -------------------------------------------


def _protocol_members() -> dict[str, object]:
    return {name: value for name, value in vars(PrivacyAccountant).items()
            if not name.startswith("_") and (callable(value) or isinstance(value, property))}


def test_every_protocol_member_exists_with_the_same_signature_and_return_type():
    members = _protocol_members()
    assert set(members) == {"config", "num_releases", "compose", "get_epsilon", "get_delta",
                            "get_privacy_spent", "would_exceed", "state_dict", "load_state_dict"}
    for name, theirs in members.items():
        ours = inspect.getattr_static(ShufflePrivacyAccountant, name)
        if isinstance(theirs, property):
            assert isinstance(ours, property), name
            their_hints = typing.get_type_hints(theirs.fget)
            our_hints = typing.get_type_hints(ours.fget)
            assert our_hints["return"] == their_hints["return"], name
            continue
        their_signature, our_signature = inspect.signature(theirs), inspect.signature(ours)
        their_params = list(their_signature.parameters.values())
        our_params = list(our_signature.parameters.values())
        assert [p.name for p in our_params] == [p.name for p in their_params], name
        assert [p.kind for p in our_params] == [p.kind for p in their_params], name
        assert [p.default for p in our_params] == [p.default for p in their_params], name
        their_hints = typing.get_type_hints(theirs)
        our_hints = typing.get_type_hints(ours, globalns=vars(sys.modules[ours.__module__]))
        assert our_hints.get("return") == their_hints.get("return"), name
        for param in their_params[1:]:
            expected = their_hints[param.name]
            got = our_hints[param.name]
            # ours may accept more (a Union containing Flower's type), never less
            assert got == expected or expected in typing.get_args(got), (name, param.name)


def test_every_protocol_method_returns_the_declared_type():
    accountant = ShufflePrivacyAccountant(NO_AMPLIFICATION)
    event = GaussianPrivacyEvent(2.0, 10, POPULATION)
    assert accountant.compose(event, 2) is None
    assert type(accountant.config) is PrivacyConfig
    assert type(accountant.num_releases) is int and accountant.num_releases == 2
    assert type(accountant.get_epsilon(DELTA)) is float
    assert type(accountant.get_delta(1.0)) is float
    spent = accountant.get_privacy_spent()
    assert type(spent) is PrivacySpent and spent.delta == DELTA and spent.num_releases == 2
    assert spent.epsilon == accountant.get_epsilon(DELTA)
    assert type(accountant.would_exceed(event)) is bool
    state = accountant.state_dict()
    assert type(state) is dict and json.loads(json.dumps(state)) == state
    assert accountant.load_state_dict(state) is None


# -- Flower's Gaussian events, Flower's semantics ------------------------------------------------


def test_no_amplification_matches_dp_accounting_and_is_below_flowers_rdp():
    sigma, rounds = 2.0, 6
    ours = ShufflePrivacyAccountant(NO_AMPLIFICATION)
    flower = RdpAccountant(NO_AMPLIFICATION)
    ours.compose(GaussianPrivacyEvent(sigma, 10, POPULATION), rounds)
    flower.compose(GaussianPrivacyEvent(sigma, 10, POPULATION), rounds)
    reference = PLDAccountant(DpRel.ADD_OR_REMOVE_ONE).compose(
        dp_event.GaussianDpEvent(sigma), rounds)
    assert ours.get_epsilon(DELTA) == reference.get_epsilon(DELTA)
    exact = _gaussian_exact_epsilon(sigma / math.sqrt(rounds), 1.0, DELTA)
    assert exact <= ours.get_epsilon(DELTA) <= exact * 1.005
    assert ours.get_epsilon(DELTA) < flower.get_epsilon(DELTA)


def test_poisson_matches_dp_accounting_and_is_below_flowers_rdp():
    sigma, sample, rounds = 1.0, 10, 5
    ours = ShufflePrivacyAccountant(POISSON)
    flower = RdpAccountant(POISSON)
    ours.compose(GaussianPrivacyEvent(sigma, sample, POPULATION), rounds)
    flower.compose(GaussianPrivacyEvent(sigma, sample, POPULATION), rounds)
    reference = PLDAccountant(DpRel.ADD_OR_REMOVE_ONE).compose(
        dp_event.PoissonSampledDpEvent(sample / POPULATION, dp_event.GaussianDpEvent(sigma)),
        rounds)
    assert ours.get_epsilon(DELTA) == reference.get_epsilon(DELTA)
    assert ours.get_epsilon(DELTA) < flower.get_epsilon(DELTA)


def test_without_replacement_uses_sensitivity_two_and_matches_flowers_rdp_at_half_sigma():
    sigma, sample, rounds = 2.0, 10, 5
    ours = ShufflePrivacyAccountant(WITHOUT_REPLACEMENT)
    ours.compose(GaussianPrivacyEvent(sigma, sample, POPULATION), rounds)
    flower_at_half = RdpAccountant(WITHOUT_REPLACEMENT)
    flower_at_half.compose(GaussianPrivacyEvent(sigma / 2, sample, POPULATION), rounds)
    rdp = ShuffleRdpAccountant().compose(dp_event.SampledWithoutReplacementDpEvent(
        POPULATION, sample, dp_event.GaussianDpEvent(sigma)), rounds)
    # Flower's RdpAccountant at sigma/2 is this package's RDP reading of the same rounds
    assert rdp.get_epsilon(DELTA) == pytest.approx(flower_at_half.get_epsilon(DELTA), rel=1e-12)
    assert ours.get_epsilon(DELTA) < flower_at_half.get_epsilon(DELTA)
    # Flower's own number (sensitivity 1 under replace-one) is below the sound one
    flower = RdpAccountant(WITHOUT_REPLACEMENT)
    flower.compose(GaussianPrivacyEvent(sigma, sample, POPULATION), rounds)
    assert flower.get_epsilon(DELTA) < ours.get_epsilon(DELTA)


# Flower's three admitted (sampling method, relation) pairs, on a grid from a tiny sampled
# fraction to every client, few to many rounds, large and small delta (N = 1000).
_REVIEW_POPULATION = 1000
_REVIEW_CASES = [  # (noise multiplier, sample size, rounds, delta)
    (0.6, 50, 20, 1e-8), (2.0, 1, 200, 1e-3), (1.0, 50, 1, 1e-8), (4.0, 50, 200, 1e-8),
    (4.0, 1000, 20, 1e-3), (30.0, 50, 1, 1e-3), (30.0, 1000, 200, 1e-8),
]


def _both(method: SamplingMethod, relation: NeighboringRelation, sigma: float, sample: int,
          rounds: int, delta: float) -> tuple[float, float]:
    """ε at δ of ``rounds`` releases GaussianPrivacyEvent(σ, m, N): this package's, Flower's."""
    config = PrivacyConfig(delta, _REVIEW_POPULATION, relation, method)
    event = GaussianPrivacyEvent(sigma, sample, _REVIEW_POPULATION)
    ours, flower = ShufflePrivacyAccountant(config), RdpAccountant(config)
    ours.compose(event, rounds)
    flower.compose(event, rounds)
    return ours.get_epsilon(delta), flower.get_epsilon(delta)


@pytest.mark.parametrize("method", [SamplingMethod.POISSON, SamplingMethod.NO_AMPLIFICATION])
@pytest.mark.parametrize("sigma, sample, rounds, delta", _REVIEW_CASES)
def test_add_or_remove_gaussian_rounds_never_exceed_flowers_own_accountant(
        method: SamplingMethod, sigma: float, sample: int, rounds: int, delta: float) -> None:
    ours, flower = _both(method, NeighboringRelation.ADD_OR_REMOVE_ONE, sigma, sample, rounds,
                         delta)
    assert 0.0 <= ours <= flower


@pytest.mark.parametrize("sigma, sample, rounds, delta",
                         [case for case in _REVIEW_CASES if case[1] > 1])  # m = 1: ~20 s each
def test_replace_one_gaussian_rounds_stay_below_flowers_valid_number(
        sigma: float, sample: int, rounds: int, delta: float) -> None:
    """Flower's replace-one value uses sensitivity 1 where replacing a client moves the clipped
    sum by 2C; its value at σ/2 is its RDP bound at sensitivity 2, the valid one."""
    method, relation = SamplingMethod.WITHOUT_REPLACEMENT, NeighboringRelation.REPLACE_ONE
    ours, _ = _both(method, relation, sigma, sample, rounds, delta)
    _, flower_at_half_sigma = _both(method, relation, sigma / 2, sample, rounds, delta)
    assert 0.0 <= ours <= flower_at_half_sigma


def test_flowers_replace_one_number_is_below_the_exact_epsilon_ours_is_above_it():
    """Every client in every round (m = N, no amplification): the exact ε of k Gaussian releases
    at sensitivity 2 is the exact ε of one at σ/√k; Flower's number is below it, so not a bound."""
    sigma, rounds, delta = 4.0, 20, 1e-3
    ours, flower = _both(SamplingMethod.WITHOUT_REPLACEMENT, NeighboringRelation.REPLACE_ONE,
                         sigma, _REVIEW_POPULATION, rounds, delta)
    exact = _gaussian_exact_epsilon(sigma / math.sqrt(rounds), 2.0, delta)
    assert flower < 0.5 * exact  # 4.05 against 8.76
    assert exact <= ours <= exact * 1.01


def test_repr_names_the_setting_and_the_ledger():
    accountant = ShufflePrivacyAccountant(NO_AMPLIFICATION)
    assert repr(accountant) == (
        "ShufflePrivacyAccountant(no-amplification, add-or-remove-one, population_size=100, "
        "target_delta=1e-05, max_epsilon=8; no releases yet)")
    gaussian = GaussianPrivacyEvent(1.5, 10, POPULATION)
    accountant.compose(gaussian, 5)
    assert repr(accountant) == (
        "ShufflePrivacyAccountant(no-amplification, add-or-remove-one, population_size=100, "
        "target_delta=1e-05, max_epsilon=8; 5 releases: 5 x GaussianPrivacyEvent("
        "noise_multiplier=1.5, sample_size=10, population_size=100))")
    for _ in range(ShufflePrivacyAccountant.REPR_ENTRIES + 1):
        accountant.compose(gaussian)
    text = repr(accountant)
    assert "10 releases" in text and text.endswith(", ... 2 more entries)")
    assert text.count("GaussianPrivacyEvent") == ShufflePrivacyAccountant.REPR_ENTRIES
    budget = ShufflePrivacyAccountant(WITHOUT_REPLACEMENT)
    budget.compose(ShuffleEvent(KRR, 80))
    assert repr(budget) == (
        "ShufflePrivacyAccountant(without-replacement, replace-one, population_size=100, "
        f"target_delta=1e-05; 1 release: 1 x {ShuffleEvent(KRR, 80)!r})")


def test_without_replacement_profile_bounds_an_explicit_instance():
    """One release, victim's clipped update +1 vs -1, everyone else 0: the exact mixture pair
    (1-η)N(0, σ²) + ηN(±1, σ²) (numerical integration) is a lower bound of the true profile."""
    sigma, sample = 2.0, 10
    eta = sample / POPULATION
    profile = without_replacement_profile(gaussian_profile(sigma, 2.0), sample, POPULATION)

    def instance(epsilon: float) -> float:
        def gap(y: float) -> float:
            p = (1 - eta) * stats.norm.pdf(y, 0, sigma) + eta * stats.norm.pdf(y, 1, sigma)
            q = (1 - eta) * stats.norm.pdf(y, 0, sigma) + eta * stats.norm.pdf(y, -1, sigma)
            return max(p - math.exp(epsilon) * q, 0.0)
        return integrate.quad(gap, -40, 40, points=[0.0], limit=200, epsabs=1e-15)[0]

    for epsilon in (0.005, 0.02, 0.05, 0.1):
        exact = instance(epsilon)
        assert exact <= profile.delta(epsilon)
    # measured gap of the mechanism-agnostic amplification (Balle et al. Thm 10) on this instance:
    # tight at small epsilon, loose as epsilon grows
    assert profile.delta(0.005) <= 1.06 * instance(0.005)
    assert profile.delta(0.05) <= 1.5 * instance(0.05)


def test_full_sample_without_replacement_is_the_replace_one_gaussian():
    profile = without_replacement_profile(gaussian_profile(1.5, 2.0), POPULATION, POPULATION)
    reference = PLDAccountant(DpRel.REPLACE_ONE).compose(dp_event.GaussianDpEvent(1.5))
    for epsilon in (0.1, 1.0, 3.0):
        assert profile.delta(epsilon) >= reference.get_delta(epsilon) * (1 - 1e-6)
        assert profile.delta(epsilon) <= reference.get_delta(epsilon) * 1.01 + 1e-12


# -- this package's events ----------------------------------------------------------------------


def test_shuffle_and_local_events_give_the_shuffle_pld_accountants_epsilon():
    events = [
        (ShuffleEvent(KRR, 50), 2),
        (dp_event.PoissonSampledDpEvent(0.2, ShuffleEvent(KRR, POPULATION)), 1),
        (dp_event.SampledWithoutReplacementDpEvent(POPULATION, 20, ShuffleEvent(KRR, 20)), 1),
        (ParallelCompositionEvent([KRR, randomizers.oue(1.0, 4)], 60), 1),
        (LDPCompositionEvent([0.5, 0.3]), 1),
    ]
    ours = ShufflePrivacyAccountant(WITHOUT_REPLACEMENT)
    reference = ShufflePLDAccountant()
    for event, count in events:
        ours.compose(event, count)
        reference.compose(event, count)
    assert ours.get_epsilon(DELTA) == reference.get_epsilon(DELTA)
    assert ours.get_delta(1.0) == reference.get_delta(1.0)
    assert ours.num_releases == 6


def test_without_replacement_amplifies_a_shuffle_round():
    amplified = ShufflePLDAccountant().compose(
        dp_event.SampledWithoutReplacementDpEvent(POPULATION, 20, ShuffleEvent(KRR, 20)))
    plain = ShufflePLDAccountant().compose(ShuffleEvent(KRR, 20))
    assert amplified.get_epsilon(DELTA) < plain.get_epsilon(DELTA)


def test_poisson_shuffle_rounds_share_the_add_or_remove_budget_of_gaussian_releases():
    round_event = dp_event.PoissonSampledDpEvent(0.3, ShuffleEvent(KRR, POPULATION))
    ours = ShufflePrivacyAccountant(NO_AMPLIFICATION)
    ours.compose(GaussianPrivacyEvent(2.0, 10, POPULATION), 2)
    ours.compose(round_event)
    reference = ShufflePLDAccountant(DpRel.ADD_OR_REMOVE_ONE)
    reference.compose(dp_event.GaussianDpEvent(2.0), 2)
    reference.compose(round_event)
    assert ours.get_epsilon(DELTA) == reference.get_epsilon(DELTA)
    assert ours.num_releases == 3


def test_shuffle_rounds_are_refused_under_add_or_remove_naming_the_relation():
    accountant = ShufflePrivacyAccountant(NO_AMPLIFICATION)
    event = ShuffleEvent(KRR, 50)
    with pytest.raises(ValueError, match="add-or-remove-one.*replace-one"):
        accountant.compose(event)
    with pytest.raises(ValueError, match="add-or-remove-one"):
        accountant.would_exceed(event)
    assert accountant.num_releases == 0 and accountant.get_epsilon(DELTA) == 0.0


def test_bad_input_gets_clear_errors():
    accountant = ShufflePrivacyAccountant(WITHOUT_REPLACEMENT)
    with pytest.raises(TypeError, match="PrivacyConfig"):
        ShufflePrivacyAccountant({"target_delta": DELTA})
    with pytest.raises(ValueError, match="population_size does not match"):
        accountant.compose(GaussianPrivacyEvent(1.0, 10, POPULATION + 1))
    with pytest.raises(ValueError, match="count must be a positive integer"):
        accountant.compose(GaussianPrivacyEvent(1.0, 10, POPULATION), 0)
    with pytest.raises(TypeError, match="GaussianPrivacyEvent or a dp_accounting DpEvent"):
        accountant.compose("gaussian")
    with pytest.raises(TypeError, match="cannot be composed"):
        accountant.compose(dp_event.LaplaceDpEvent(1.0))
    class DeltaStyle:  # a delta(ε, n) profile: composable by dp-accounting, not storable
        epsilon0 = 1.0

        def delta(self, epsilon: float, n: int) -> float:
            return KRR.delta(epsilon, n)

    with pytest.raises(TypeError, match="has no JSON form"):
        accountant.compose(ShuffleEvent(DeltaStyle(), 50))
    with pytest.raises(ValueError, match="max_epsilon must be given"):
        accountant.would_exceed(GaussianPrivacyEvent(1.0, 10, POPULATION))
    with pytest.raises(ValueError, match=r"max_epsilon must be in \(0.0, inf\)"):
        accountant.would_exceed(GaussianPrivacyEvent(1.0, 10, POPULATION), max_epsilon=-1.0)
    with pytest.raises(ValueError, match="delta must be in"):
        accountant.get_epsilon(0.0)
    with pytest.raises(ValueError, match="epsilon must be in"):
        accountant.get_delta(math.inf)
    with pytest.raises(ValueError, match="more than sample_size"):
        accountant.compose(dp_event.SampledWithoutReplacementDpEvent(
            POPULATION, 10, ShuffleEvent(KRR, 20)))
    assert accountant.num_releases == 0


# -- would_exceed and state ---------------------------------------------------------------------


def test_would_exceed_is_exact_and_changes_nothing():
    accountant = ShufflePrivacyAccountant(WITHOUT_REPLACEMENT)
    accountant.compose(ShuffleEvent(KRR, 50))
    before = accountant.get_epsilon(DELTA)
    event = GaussianPrivacyEvent(3.0, 10, POPULATION)
    # what composing would give: a twin that makes the same calls (the PLD of the rounds already
    # queried is kept, so the composition order is that of the accountant, not of a fresh one)
    twin = ShufflePrivacyAccountant(WITHOUT_REPLACEMENT)
    twin.compose(ShuffleEvent(KRR, 50))
    assert twin.get_epsilon(DELTA) == before
    twin.compose(event, 2)
    after = twin.get_epsilon(DELTA)
    # and the same events composed at once by the PLD accountant, up to float rounding
    fresh = ShufflePLDAccountant().compose(ShuffleEvent(KRR, 50)).compose(
        dp_event.SampledWithoutReplacementDpEvent(POPULATION, 10, dp_event.GaussianDpEvent(3.0)), 2)
    assert after == pytest.approx(fresh.get_epsilon(DELTA), rel=1e-12)
    assert accountant.would_exceed(event, max_epsilon=math.nextafter(after, 0.0), count=2)
    assert not accountant.would_exceed(event, max_epsilon=after, count=2)
    assert accountant.get_epsilon(DELTA) == before and accountant.num_releases == 1


def test_state_dict_is_json_and_restores_epsilon_exactly():
    accountant = ShufflePrivacyAccountant(WITHOUT_REPLACEMENT)
    accountant.compose(GaussianPrivacyEvent(3.0, 10, POPULATION), 2)
    accountant.compose(dp_event.PoissonSampledDpEvent(0.3, ShuffleEvent(KRR, POPULATION)))
    accountant.compose(ShuffleEvent(randomizers.rappor(1.0, 3), 40, honest_fraction=0.9))
    text = json.dumps(accountant.state_dict())
    restored = ShufflePrivacyAccountant(WITHOUT_REPLACEMENT)
    restored.load_state_dict(json.loads(text))
    assert restored.get_epsilon(DELTA) == accountant.get_epsilon(DELTA)
    assert restored.num_releases == accountant.num_releases == 4
    assert restored.compositions == accountant.compositions


@pytest.mark.parametrize("event", [
    ParallelCompositionEvent([KRR, randomizers.rappor(1.0, 3)], (30, 20), mode="disjoint"),
    ParallelCompositionEvent([KRR, randomizers.oue(1.0, 4)], 60, probabilities=[0.3, 0.7]),
    LDPCompositionEvent([0.5, 0.2], mode="chained", deltas=[0.0, 1e-7]),
    dp_event.SampledWithoutReplacementDpEvent(POPULATION, 30, ShuffleEvent(KRR, 30, 0.8)),
    GaussianPrivacyEvent(1.5, 7, POPULATION),
    ShuffleEvent(KRR.variation_ratio, 50),
    ShuffleEvent(randomizers.from_matrix([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6]]), 40),
])
def test_every_accepted_event_round_trips_through_json(event):
    text = json.dumps(event_to_json(event))
    assert event_from_json(json.loads(text)) == event


def test_load_state_dict_refuses_other_configs_and_bad_states_without_changing_anything():
    accountant = ShufflePrivacyAccountant(WITHOUT_REPLACEMENT)
    accountant.compose(ShuffleEvent(KRR, 50))
    state = accountant.state_dict()
    other = ShufflePrivacyAccountant(NO_AMPLIFICATION)
    with pytest.raises(ValueError, match="does not match"):
        other.load_state_dict(state)
    flower_state = RdpAccountant(WITHOUT_REPLACEMENT).state_dict()
    with pytest.raises(ValueError, match="backend 'rdp'"):
        accountant.load_state_dict(flower_state)
    broken = json.loads(json.dumps(state))
    broken["compositions"].append({"event": {"module_name": "dp_accounting.dp_event",
                                             "class_name": "LaplaceDpEvent", "noise_multiplier": 1.0},
                                   "count": 1})
    with pytest.raises(ValueError, match="cannot be composed"):
        accountant.load_state_dict(broken)
    assert accountant.num_releases == 1


def test_importing_the_package_does_not_import_flwr():
    code = "import sys, dpacct_shuffle, dpacct_shuffle.accountants; print('flwr' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "False"


def test_gaussian_profile_matches_dp_accountings_gaussian_and_rounds_up():
    from dp_accounting.pld import privacy_loss_mechanism
    for sigma, sensitivity in ((1.0, 1.0), (2.0, 2.0), (0.5, 1.0)):
        profile = gaussian_profile(sigma, sensitivity)
        reference = privacy_loss_mechanism.GaussianPrivacyLoss(sigma, sensitivity=sensitivity)
        for epsilon in np.linspace(0.0, 8.0, 9):
            expected = reference.get_delta_for_epsilon(float(epsilon))
            assert profile.delta(float(epsilon)) >= expected
            assert profile.delta(float(epsilon)) <= expected * (1 + 1e-8) + 1e-300


# -- analytics pieces without a runtime ----------------------------------------------------------

from flwr.app import ConfigRecord, Context, Message, MessageType, Metadata, RecordDict  # noqa: E402

from dpacct_shuffle.flower.analytics import (  # noqa: E402
    PARTICIPATION_KEY,
    RECORD_KEY,
    LocalRandomizerMod,
    ShuffledFrequencyEstimation,
    collect_reports,
    shuffle_reports,
)


def _query(content: dict) -> Message:
    """A QUERY message as the runtime delivers it (outside a run, metadata is given explicitly)."""
    metadata = Metadata(run_id=1, message_id="", src_node_id=0, dst_node_id=1,
                        reply_to_message_id="", group_id="1", created_at=0.0, ttl=60.0,
                        message_type=MessageType.QUERY)
    return Message(RecordDict({RECORD_KEY: ConfigRecord(content)}), metadata=metadata)


def test_mod_replaces_the_value_by_a_report_and_leaves_other_messages_alone():
    mod = LocalRandomizerMod(randomizers.oue(1.0, 4))
    context = Context(run_id=1, node_id=1, node_config={}, state=RecordDict(), run_config={})
    reply = mod(_query({"round": 1}), context, lambda msg, ctx: _query({"value": 2}))
    report = reply.content[RECORD_KEY]["report"]
    assert "value" not in reply.content[RECORD_KEY]
    assert len(report) == 4 and set(report) <= {0, 1}
    untouched = _query({"other": 5})
    assert mod(_query({"round": 1}), context, lambda msg, ctx: untouched) is untouched
    with pytest.raises(TypeError, match="sampler and frequency estimator"):
        LocalRandomizerMod(randomizers.laplace(1.0))


def test_mod_flips_the_clients_own_participation_coin():
    mod = LocalRandomizerMod(KRR)
    context = Context(run_id=1, node_id=1, node_config={}, state=RecordDict(), run_config={})
    sent = 0
    trials = 400
    for _ in range(trials):
        reply = mod(_query({"round": 1, PARTICIPATION_KEY: 0.25}), context,
                    lambda msg, ctx: _query({"value": 1}))
        record = reply.content[RECORD_KEY]
        assert "value" not in record
        sent += record["report_sent"]
        assert ("report" in record) == record["report_sent"]
    # Binomial(400, 0.25): mean 100, standard deviation 8.7
    assert abs(sent - 100) < 5 * 8.7


def test_malformed_reports_and_participation_probabilities_get_a_clear_error():
    with pytest.raises(ValueError, match=r"report must be an integer or a list of integers, got 'x'"):
        collect_reports([_query({"report": "x", "report_sent": True})])
    with pytest.raises(ValueError, match=r"report must be .* got \[0\.5, 1\.0\]"):
        collect_reports([_query({"report": [0.5, 1.0], "report_sent": True})])
    mod = LocalRandomizerMod(KRR)
    context = Context(run_id=1, node_id=1, node_config={}, state=RecordDict(), run_config={})
    for rate in (1.5, 0.0):
        with pytest.raises(ValueError, match=PARTICIPATION_KEY):
            mod(_query({"round": 1, PARTICIPATION_KEY: rate}), context,
                lambda msg, ctx: _query({"value": 1}))
    with pytest.raises(TypeError, match="the query's value must be an integer, got 'a'"):
        mod(_query({"round": 1}), context, lambda msg, ctx: _query({"value": "a"}))


def test_shuffler_stage_keeps_the_multiset_and_drops_everything_else():
    replies = [_query({"report": value, "report_sent": True}) for value in (3, 1, 1, 0, 2, 4)]
    replies.append(_query({"report_sent": False}))  # a client that sat the round out
    replies.append(_query({"value": 7}))  # a raw value never passes the shuffler stage
    answered, reports = collect_reports(replies)
    assert answered == 7 and sorted(reports) == [0, 1, 1, 2, 3, 4]
    assert sorted(shuffle_reports(reports, np.random.default_rng(5))) == [0, 1, 1, 2, 3, 4]
    orders = {tuple(shuffle_reports(reports, np.random.default_rng(seed))) for seed in range(20)}
    assert len(orders) > 10  # uniformly random order, not the arrival order
    kept = [tuple(sorted(shuffle_reports(list(range(6)), np.random.default_rng(seed), 2)))
            for seed in range(3000)]
    counts = np.bincount([value for pair in kept for value in pair], minlength=6)
    # each report is kept with probability 2/6: mean 1000, standard deviation 25.8
    assert np.all(np.abs(counts - 1000) < 5 * 25.8)


def test_analytics_round_events_and_refusals():
    budget = ShufflePrivacyAccountant(WITHOUT_REPLACEMENT)
    fixed = ShuffledFrequencyEstimation(KRR, budget, sample_size=20)
    assert fixed.round_event(POPULATION) == dp_event.SampledWithoutReplacementDpEvent(
        POPULATION, 20, ShuffleEvent(KRR, 20))
    # drop-outs: the shuffler samples from the clients that answered
    assert fixed.round_event(90) == dp_event.SampledWithoutReplacementDpEvent(
        90, 20, ShuffleEvent(KRR, 20))
    assert fixed.round_event(17) == ShuffleEvent(KRR, 17)  # fewer than m: all, unamplified
    poisson = ShuffledFrequencyEstimation(KRR, budget, sampling="poisson", sampling_probability=0.3)
    assert poisson.round_event(POPULATION) == dp_event.PoissonSampledDpEvent(
        0.3, ShuffleEvent(KRR, POPULATION))
    with pytest.raises(ValueError, match="sample_size must be <= population_size"):
        ShuffledFrequencyEstimation(KRR, budget, sample_size=POPULATION + 1)
    with pytest.raises(ValueError, match="min_reports must be <= sample_size"):
        ShuffledFrequencyEstimation(KRR, budget, sample_size=10, min_reports=11)
    with pytest.raises(ValueError, match="needs sampling_probability"):
        ShuffledFrequencyEstimation(KRR, budget, sampling="poisson")
    with pytest.raises(ValueError, match="sampling must be one of"):
        ShuffledFrequencyEstimation(KRR, budget, sampling="cohort")
    with pytest.raises(TypeError, match="ShufflePrivacyAccountant"):
        ShuffledFrequencyEstimation(KRR, RdpAccountant(WITHOUT_REPLACEMENT))
    with pytest.raises(ValueError, match="add-or-remove-one"):
        ShuffledFrequencyEstimation(KRR, ShufflePrivacyAccountant(NO_AMPLIFICATION))


def test_standard_errors_are_the_estimators_standard_deviation():
    """Closed form for k-RR (clients' values fixed: f·p(1−p) + (1−f)·q(1−q) over n(p−q)²) at the
    clipped estimates, and the spread of the estimates over repeated rounds."""
    from dpacct_shuffle.flower.analytics import frequency_standard_errors

    randomizer, n = randomizers.krr(3.0, 4), 10
    p = math.exp(3.0) / (math.exp(3.0) + 3)
    q = 1 / (math.exp(3.0) + 3)
    estimates = np.array([0.5, -0.1, 0.25, 1.2])
    clipped = np.array([0.5, 0.0, 0.25, 1.0])
    expected = np.sqrt(clipped * p * (1 - p) + (1 - clipped) * q * (1 - q)) / (math.sqrt(n) * (p - q))
    np.testing.assert_allclose(frequency_standard_errors(randomizer, estimates, n), expected,
                               rtol=1e-12)
    values = [0, 0, 0, 0, 0, 1, 1, 2, 2, 3]  # true frequencies 0.5, 0.2, 0.2, 0.1
    rng = np.random.default_rng(0)
    repeats = np.array([randomizer.estimate_frequencies([randomizer.sample(v, rng) for v in values])
                        for _ in range(4000)])
    truth = frequency_standard_errors(randomizer, np.array([0.5, 0.2, 0.2, 0.1]), n)
    # sample standard deviation of 4000 draws: relative error ~ 1/sqrt(2 * 4000) ~ 1.1 %
    np.testing.assert_allclose(repeats.std(axis=0, ddof=1), truth, rtol=0.05)
    with pytest.raises(ValueError, match="num_reports"):
        frequency_standard_errors(randomizer, estimates, 0)
    with pytest.raises(TypeError, match="no frequency estimator"):
        frequency_standard_errors(randomizers.worst_case_ldp(1.0), estimates, n)
