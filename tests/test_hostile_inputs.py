"""Hostile inputs found by fuzzing: each is a value or a ValueError/TypeError naming the
parameter, within seconds (one regression test per case)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpacct_shuffle import lemmas, randomizers


def test_local_hashing_huge_domain_is_built_without_enumerating_hashes() -> None:
    # the matrix size check built hash_range**domain_size first
    entry = randomizers.local_hashing(1.0, 4, domain_size=10**15 + 1)
    assert entry.matrix is None
    assert entry.parameters["domain_size"] == 10**15 + 1


def test_hadamard_response_with_a_million_outputs_builds_no_dense_hadamard_matrix() -> None:
    entry = randomizers.hadamard_response(2.0, 2**20)
    assert entry.matrix is None
    lower, upper = entry.shuffled(1000).epsilon_interval(1e-6)
    assert 0.0 < lower <= upper


def test_hadamard_sets_from_parities_match_the_dense_matrix() -> None:
    # small K: the third-input projections (counted from the parity rule) are unchanged
    lower = randomizers.hadamard_response(4.0, 64).shuffled(10_000).epsilon_lower(1e-8)
    assert lower > 0.34  # 0.348; the pair's own projection alone gives 0.254


@pytest.mark.parametrize("call", [lambda: randomizers.krr(2, 10**400),
                                  lambda: randomizers.rappor(2, 2**60),
                                  lambda: randomizers.subset_selection(1.0, 10**30, 2)])
def test_huge_integer_sizes_are_refused_by_name(call) -> None:
    with pytest.raises(ValueError, match=r"(domain_size|num_outputs) must be an integer in \[2, 2\*\*53\]"):
        call()


def test_basic_composition_beyond_the_float_range_is_infinite() -> None:
    assert lemmas.basic_composition([(1e308, 0.5)] * 2) == (math.inf, 1.0)


def test_kl_divergence_bound_overflow_is_infinite() -> None:
    assert lemmas.kl_divergence_bound(710) == math.inf
    assert lemmas.kl_divergence_bound(700) == pytest.approx(700 * math.expm1(700), rel=1e-12)


def test_deletion_to_replacement_in_log_space() -> None:
    eps, delta = lemmas.deletion_to_replacement(710, 5e-324)
    assert eps == pytest.approx(1420.0)
    # (e^710 + 1)·5e-324 = exp(710 + ln 5e-324)
    assert delta >= math.exp(710.0 + math.log(5e-324)) and delta == pytest.approx(1.1037e-15, rel=1e-3)
    assert lemmas.deletion_to_replacement(750, 1e-300) == (pytest.approx(1500.0), 1.0)
    assert lemmas.deletion_to_replacement(5.0, 0.0)[1] == 0.0


def test_randomizer_delta_never_exceeds_one() -> None:
    rows = np.array([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5]])
    assert lemmas.randomizer_delta(rows, 0.0) == 1.0
    assert lemmas.randomizer_delta(rows, 3.0) <= 1.0


# the ratios of subnormal entries overflow to ∞ on purpose: no RuntimeWarning reaches the user
@pytest.mark.filterwarnings("error")
def test_subnormal_matrix_entries_give_a_finite_ordered_interval() -> None:
    # μ0/μ1 overflowed: the local pair's ε search started from ln(5e-324) < 0 and returned −inf
    shuffled = randomizers.from_matrix([[5e-324, 1], [1, 5e-324]]).shuffled(2)
    lower, upper = shuffled.epsilon_interval(1e-8)
    # the only finite ratio is 1/5e-324 = e^744.44: δ(ε) = 1 − e^ε·5e-324 > 0 below it
    assert upper == pytest.approx(-math.log(5e-324), rel=1e-9)
    assert 0.0 <= lower <= upper
    assert shuffled.delta(743.0) > 0.7  # 1 − e^743·5e-324 = 0.76: not lost to e^ε overflow
    assert shuffled.delta(upper) <= 1e-8


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("matrix", [
    [[5e-324, 0.5, 0.5 - 5e-324], [0.5, 5e-324, 0.5], [0.3, 0.3, 0.4]],
    [[1e-310, 1.0], [0.5, 0.5]],
])
def test_accepted_subnormal_matrices_answer_their_queries(matrix) -> None:
    shuffled = randomizers.from_matrix(matrix).shuffled(50)
    lower, upper = shuffled.epsilon_interval(1e-8)
    assert 0.0 <= lower <= upper and not math.isnan(upper)
    assert 0.0 <= shuffled.delta(1.0) <= 1.0


def _nested(depth: int) -> dict:
    data: dict = {}
    current = data
    for _ in range(depth):
        current["x"] = {}
        current = current["x"]
    return data


@pytest.mark.parametrize("decode", ["event", "randomizer"])
def test_deeply_nested_json_is_a_value_error_not_a_recursion_error(decode: str) -> None:
    from dpacct_shuffle.event_serialization import event_from_dict, event_from_json
    from dpacct_shuffle.randomizers.serialization import randomizer_from_dict, randomizer_from_json

    from_json, from_dict = {"event": (event_from_json, event_from_dict),
                            "randomizer": (randomizer_from_json, randomizer_from_dict)}[decode]
    for text in ("[" * 100_000, '{"a": ' * 5000 + "1" + "}" * 5000):
        with pytest.raises(ValueError, match="more than 100 levels deep"):
            from_json(text)
    with pytest.raises(ValueError, match="more than 100 levels deep"):
        from_dict(_nested(5000))


def test_nan_and_infinity_are_not_json() -> None:
    from dpacct_shuffle.event_serialization import event_from_json

    for constant in ("NaN", "Infinity", "-Infinity"):
        with pytest.raises(ValueError, match=f"must not contain {constant}"):
            event_from_json('{"event": %s}' % constant)


def test_deep_pipeline_files_and_matrix_files(tmp_path) -> None:
    from dpacct_shuffle.pipeline import load_pipeline
    from dpacct_shuffle.randomizers.spec import read_matrix

    deep = tmp_path / "deep.json"
    deep.write_text('{"rounds": ' + "[" * 50_000 + "]" * 50_000 + "}", encoding="utf-8")
    with pytest.raises(ValueError, match="more than 100 levels deep"):
        load_pipeline(deep)
    with pytest.raises(ValueError, match="more than 100 levels deep"):
        load_pipeline(_nested(5000))
    deep_toml = tmp_path / "deep.toml"
    deep_toml.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="levels"):
        load_pipeline(deep_toml)
    matrix = tmp_path / "m.json"
    matrix.write_text("[" * 50_000 + "]" * 50_000, encoding="utf-8")
    with pytest.raises(ValueError, match="more than 100 levels deep"):
        read_matrix(matrix)


@pytest.mark.parametrize("epsilon0", [46.0, 500.0])
def test_piecewise_lower_bound_masses_at_large_epsilon0(epsilon0: float) -> None:
    # p_hi·(C − 1) computed as a difference exceeded 1 (1.0000000585 at ε0 = 46)
    lower, upper = randomizers.piecewise(epsilon0).shuffled(2).delta_interval(0.0)
    assert 0.99 < lower <= upper <= 1.0


def test_multi_message_parameters_whose_ratios_overflow_are_refused() -> None:
    with pytest.raises(ValueError, match="coin_probability"):
        randomizers.balcer_binary_summation(5e-324)
    with pytest.raises(ValueError, match="flip_probability"):
        randomizers.cheu_binary_summation(1e-160)


def test_gaussian_with_tiny_noise_skips_the_vacuous_local_bound() -> None:
    # μ = 10^4: δ_μ(ε0) = 1 even at ε0 = 500, and the (ε0, δ0) route raised about delta0 = 1.0
    shuffled = randomizers.gaussian(1e-4).shuffled(100)
    epsilon = shuffled.epsilon(1e-6)
    assert 4.9e7 < epsilon < 5.1e7  # the report's own ε: about μ²/2 = 5·10^7
    assert shuffled.delta(epsilon) <= 1e-6
    assert shuffled.delta(1.0) == 1.0


@pytest.mark.parametrize("event", [
    "GaussianDpEvent(0.001)", "GaussianDpEvent(1e-300)",
    "PoissonSampledDpEvent(0.1, dp_event.GaussianDpEvent(0.001))",
])
def test_dp_accounting_leaves_whose_grid_cannot_be_built_are_refused(event: str) -> None:
    # GaussianDpEvent(0.001): dp-accounting's connect-the-dots grid asked for 152 GiB
    from dp_accounting import dp_event

    from dpacct_shuffle.accountants import ShufflePLDAccountant

    accountant = ShufflePLDAccountant()
    with pytest.raises(ValueError, match="value_discretization_interval"):
        accountant.compose(eval(f"dp_event.{event}"))


def test_dp_accounting_leaves_below_the_grid_limit_are_composed() -> None:
    from dp_accounting import dp_event
    from dp_accounting.pld import pld_privacy_accountant
    from dp_accounting.privacy_accountant import NeighboringRelation

    from dpacct_shuffle.accountants import ShufflePLDAccountant

    # GaussianDpEvent(0.01): 2.4·10^8 points at the default interval 1e-4, 2.4·10^5 at 0.1
    with pytest.raises(ValueError, match=r"2\.39e\+08 points"):
        ShufflePLDAccountant().compose(dp_event.GaussianDpEvent(0.01))
    relation = NeighboringRelation.ADD_OR_REMOVE_ONE  # dp-accounting's default
    ours = ShufflePLDAccountant(relation, value_discretization_interval=0.1)
    ours.compose(dp_event.GaussianDpEvent(0.01))
    theirs = pld_privacy_accountant.PLDAccountant(relation, value_discretization_interval=0.1)
    theirs.compose(dp_event.GaussianDpEvent(0.01))
    assert ours.get_epsilon(1e-6) == theirs.get_epsilon(1e-6)


@pytest.mark.parametrize("sigma", [1e-300, 0.001])
def test_opacus_step_with_vanishing_noise_is_refused(sigma: float) -> None:
    # σ = 1e-300: OverflowError (an infinite loss range) inside dp-accounting
    from dpacct_shuffle.opacus import ShuffleAccountant

    accountant = ShuffleAccountant()
    accountant.step(noise_multiplier=sigma, sample_rate=0.1)
    with pytest.raises(ValueError, match="value_discretization_interval"):
        accountant.get_epsilon(1e-5)


def _nested_lists(depth: int, leaf: object = None) -> object:
    data: object = [] if leaf is None else leaf
    for _ in range(depth):
        data = [data]
    return data


def test_event_decoder_refuses_nan_fields() -> None:
    from dpacct_shuffle.event_serialization import event_from_dict

    gaussian = {"module_name": "dp_accounting.dp_event", "class_name": "GaussianDpEvent",
                "noise_multiplier": math.nan}
    with pytest.raises(ValueError, match=r"event.noise_multiplier must not be NaN"):
        event_from_dict(gaussian)  # was GaussianDpEvent(noise_multiplier=nan)
    with pytest.raises(ValueError, match="module_name"):
        event_from_dict({"event": math.nan})
    sampled = {"module_name": "dp_accounting.dp_event", "class_name": "PoissonSampledDpEvent",
               "sampling_probability": 0.5, "event": gaussian}
    with pytest.raises(ValueError, match=r"event.event.noise_multiplier must not be NaN"):
        event_from_dict(sampled)


@pytest.mark.parametrize("event", [
    "GaussianDpEvent(math.nan)", "GaussianDpEvent(math.inf)", "GaussianDpEvent(-1.0)",
    "PoissonSampledDpEvent(math.nan, dp_event.GaussianDpEvent(1.0))",
    "RandomizedResponseDpEvent(math.nan, 3)",
])
def test_dp_accounting_leaves_with_invalid_fields_are_refused_by_name(event: str) -> None:
    # NaN raised "cannot convert float NaN to integer" or IndexError inside dp-accounting
    from dp_accounting import dp_event

    from dpacct_shuffle.accountants import ShufflePLDAccountant

    leaf = eval(f"dp_event.{event}")
    field = "sampling_probability" if "Sampled" in event else (
        "noise_parameter" if "Response" in event else "noise_multiplier")
    with pytest.raises(ValueError, match=f"{type(leaf).__name__}.{field}"):
        ShufflePLDAccountant().compose(leaf)


def test_saved_states_nested_too_deep_are_value_errors() -> None:
    # the error messages repr'd the entries: RecursionError
    from dpacct_shuffle.opacus import ShuffleAccountant

    state = ShuffleAccountant().state_dict()
    for bad in ({**state, "events": _nested_lists(5000)},
                {**state, "history": [_nested_lists(5000, ())]},
                {**state, "events": [[_nested(5000), 1]]}):
        with pytest.raises(ValueError, match="more than 100 levels deep"):
            ShuffleAccountant().load_state_dict(bad)


def test_flower_saved_state_nested_too_deep_is_a_value_error() -> None:
    pytest.importorskip("flwr.serverapp")
    from flwr.serverapp import NeighboringRelation, PrivacyConfig, SamplingMethod

    from dpacct_shuffle.flower import ShufflePrivacyAccountant

    config = PrivacyConfig(1e-5, 100, NeighboringRelation.REPLACE_ONE,
                           SamplingMethod.WITHOUT_REPLACEMENT)
    accountant = ShufflePrivacyAccountant(config)
    state = accountant.state_dict()
    with pytest.raises(ValueError, match="more than 100 levels deep"):
        accountant.load_state_dict({**state, "compositions": [{"event": _nested_lists(5000),
                                                               "count": 1}]})


@pytest.mark.parametrize("n", [100, 10_000])
def test_optimized_unary_encoding_at_the_largest_epsilon0(n: int) -> None:
    # c_B = (α − e^ε·pα)/r_B overflowed (r_B = e^{−500}/2): a NaN threshold, IndexError/ValueError
    shuffled = randomizers.optimized_unary_encoding(500.0, 4).shuffled(n)
    lower, upper = shuffled.epsilon_interval(1e-6)
    assert 0.0 <= lower <= upper <= 500.0
    # the victim's own report: δ(ε) ≤ α(p − e^ε) = (1 − e^{ε − 500})/2, exact for these clone rates
    assert shuffled.delta(499.0) == pytest.approx(0.5 * -math.expm1(-1.0), rel=1e-9)
    assert shuffled.delta(upper) <= 1e-6


def test_from_matrix_whose_pair_differs_below_the_rounding_of_one() -> None:
    # [[2.1e-57, 1], [4.2e-57, 1]]: the rows' positive difference is lost to rounding on one side
    # (the rows sum to 1 only in floats); the pair analysis took the minimum of an empty array
    shuffled = randomizers.from_matrix([[2.1202398913136822e-57, 1.0],
                                        [4.2404797826273644e-57, 1.0]]).shuffled(5)
    lower, upper = shuffled.delta_interval(0.0)
    assert 0.0 < lower <= upper <= 2.2e-57  # the total variation 2.12e-57
    assert shuffled.epsilon(1e-8) == 0.0


def test_huge_integer_matrix_entries_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="matrix"):
        randomizers.from_matrix([[10**400]])
    with pytest.raises(ValueError, match="matrix"):
        lemmas.randomizer_delta(10**400, 1.0)


@pytest.mark.parametrize("epsilon0", [1e-6, 2e-6])
def test_piecewise_at_the_smallest_epsilon0(epsilon0: float) -> None:
    # the blanket mass 2C·p_hi/e lost 4e-10 to the cancellation in h − 1 and fell below 2/(e + 1):
    # the constructor refused with an error about blanket_mass; it is e^{−ε0/2} in closed form
    shuffled = randomizers.piecewise(epsilon0).shuffled(100)
    lower, upper = shuffled.delta_interval(0.0)
    assert 0.0 < lower <= upper <= 1.0 - math.exp(-epsilon0 / 2.0)  # β = 1 − γ
    assert shuffled.epsilon(1e-6) == 0.0


def test_pckv_grr_with_the_largest_domain_lists_no_sets() -> None:
    # the 2**54 disjoint sets were listed before the matrix size check: the constructor never ended
    entry = randomizers.pckv_grr(1.0, 2**53, 1)
    assert entry.matrix is None
    assert randomizers.pckv_grr(1.0, 4, 1).matrix is not None
    lower, upper = entry.shuffled(1000).delta_interval(0.0)
    assert 0.0 <= lower <= upper <= 2.0 * (math.e - 1.0) / 2**54  # β = (e − 1)/(e + 2d − 1)


def test_cheu_binary_summation_with_the_smallest_flip_probability() -> None:
    # f**2 underflowed to 0: ZeroDivisionError before the finiteness check
    with pytest.raises(ValueError, match="flip_probability must be at least 1e-154"):
        randomizers.cheu_binary_summation(5e-324)
    assert randomizers.cheu_binary_summation(1e-154).epsilon0 == pytest.approx(
        2.0 * math.log(1e154), rel=1e-12)


def test_round_whose_finite_losses_all_fall_in_the_truncated_tail() -> None:
    """gaussian(0.05) (μ = 20) over 10^5 users: the round's PLD has almost all of its mass beyond
    the profile grid; the tail truncation keeps one finite loss instead of raising IndexError, and
    the accountant's ε is an upper bound of the round's point query (here +∞)."""
    from dpacct_shuffle.accountants import ShufflePLDAccountant
    from dpacct_shuffle.events import ShuffleEvent

    randomizer = randomizers.gaussian(0.05)
    accountant = ShufflePLDAccountant()
    accountant.compose(ShuffleEvent(randomizer, 10**5))
    point = randomizer.shuffled(10**5).epsilon(1e-6)
    assert 290.0 < point < 300.0
    assert accountant.get_epsilon(1e-6) >= point


@pytest.mark.parametrize(("epsilon0", "delta"), [
    pytest.param(1.0, 1e-20, marks=pytest.mark.thorough),  # delta(ε) evaluates the banded bound
    (1e-6, 1e-300), (1.0, 5e-324), (4.0, 1e-15)])
def test_tiny_delta_at_a_trillion_users_is_certified(epsilon0: float, delta: float) -> None:
    """The ε search at tiny δ and huge n answers with the Chernoff ε: delta(ε) ≤ δ and ε ≤ ε0."""
    shuffled = randomizers.krr(epsilon0, 4).shuffled(10**12)
    eps = shuffled.epsilon(delta)
    assert 0.0 < eps <= epsilon0
    assert shuffled.delta(eps) <= delta


def test_tiny_delta_chernoff_epsilon_is_close_to_the_banded_search() -> None:
    """k-RR(1, 4) at 10¹² users, δ = 1e-20: the banded search gives ε = 7.807e-5; the Chernoff ε
    is sound (above it) and within 5%."""
    eps = randomizers.krr(1.0, 4).shuffled(10**12).epsilon(1e-20)
    assert 7.807e-5 <= eps <= 1.05 * 7.807e-5


@pytest.mark.parametrize("delta", [1e-15, 1e-300, 5e-324])
def test_tiny_delta_of_a_multilevel_entry_at_a_trillion_users(delta: float) -> None:
    """Hadamard response at 10¹² users and tiny δ: a finite ε ≤ ε0 with delta(ε) ≤ δ."""
    shuffled = randomizers.hadamard_response(1.0, 64).shuffled(10**12)
    eps = shuffled.epsilon(delta)
    assert 0.0 < eps <= 1.0
    if delta <= 1e-300:  # larger δ: delta(ε) evaluates the banded bound (seconds)
        assert shuffled.delta(eps) <= delta
