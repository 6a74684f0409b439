"""(ε0, δ0)-LDP randomizers: the leak bound and Theorem 3.8 of Feldman, McMillan and Talwar against
exact shuffled laws (every configuration of the other users, small n)."""

from __future__ import annotations

import itertools
import math
import pickle

import numpy as np
import pytest

from dpacct_shuffle import randomizers as rz
from dpacct_shuffle.events import ShuffleEvent
from dpacct_shuffle.core.bound import VariationRatio
from dpacct_shuffle.randomizers.approximate import (CloneTVBound, DecomposedLDPBound, approximate,
                                                    approximate_ldp, fmt_clone_pair,
                                                    fmt_condition_delta, fmt_theorem_3_8)
from tests.oracle import exact_shuffled_delta, pair_delta_max


def leaky_matrix(matrix: np.ndarray, delta0: float) -> np.ndarray:
    """Rows x: (1 − δ0)·R(x) on the ordinary outputs, δ0 on the extra output "x revealed"."""
    return np.hstack([(1.0 - delta0) * matrix, delta0 * np.eye(matrix.shape[0])])


def worst_exact_delta(matrix: np.ndarray, n: int, eps: float) -> float:
    """Exact shuffled δ(ε), maximised over the victim pair (0, 1) (all pairs are equivalent for
    k-RR) and every multiset of the other users' inputs."""
    return max(exact_shuffled_delta(matrix, 0, 1, list(others), eps)
               for others in itertools.combinations_with_replacement(range(matrix.shape[0]), n - 1))


CASES = [(1.0, 3, 4, 0.05), (2.0, 2, 5, 0.01), (0.5, 3, 5, 0.2), (3.0, 3, 4, 0.001)]


@pytest.mark.parametrize("eps0, d, n, delta0", CASES)
def test_leak_bound_brackets_the_exact_shuffled_delta(eps0, d, n, delta0):
    inner = rz.krr(eps0, d)
    shuffled = approximate(inner, delta0).shuffled(n)
    matrix = leaky_matrix(inner.matrix, delta0)
    for eps in (0.0, 0.2, 0.7, eps0, eps0 + 0.5):
        exact = worst_exact_delta(matrix, n, eps)
        lower, upper = shuffled.delta_interval(eps)
        # the oracle's float sums err by a few ulps (both ways): at ε ≥ ε0 the bound is δ0
        # itself, which the exact value never exceeds (0.0010000000000000005 from the oracle)
        assert exact <= upper * (1.0 + 1e-12)
        assert lower <= exact * (1.0 + 1e-12)
        # measured: within 14 % of the exact worst case on these instances
        assert upper <= 1.2 * exact
        assert exact * (1.0 + 1e-12) >= delta0  # the leak alone: δ(ε) ≥ δ0 at every ε


@pytest.mark.parametrize("eps0, d, n, delta0", CASES)
def test_fmt_theorem_bound_holds_for_leaky_randomized_response(eps0, d, n, delta0):
    """Leaky k-RR is (ε0, δ0)-LDP, so the class bound applies (looser than the leak bound)."""
    inner = rz.krr(eps0, d)
    matrix = leaky_matrix(inner.matrix, delta0)
    leak = approximate(inner, delta0).shuffled(n)
    whole_class = approximate_ldp(eps0, delta0).shuffled(n)
    for eps in (0.0, 0.3, eps0):
        exact = worst_exact_delta(matrix, n, eps)
        # δ0 itself at ε0: the oracle's float sums may exceed it by a few ulps
        assert whole_class.delta(eps) * (1.0 + 1e-12) >= exact
        if eps < eps0:
            assert whole_class.delta(eps) > leak.delta(eps)


def test_fmt_clone_pair_is_their_pair():
    """Clone rate e^{−ε0}, split evenly; the victim's clone of its own input w.p. e^ε0/(e^ε0 + 1)."""
    pair = fmt_clone_pair(1.5)
    assert pair.r0 + pair.r1 == pytest.approx(math.exp(-1.5), rel=1e-12)
    assert pair.r0 == pytest.approx(pair.r1, rel=0)
    assert pair.p_alpha == pytest.approx(math.exp(1.5) / (math.exp(1.5) + 1.0), rel=1e-12)
    for n, eps in ((5, 0.3), (20, 0.5)):
        exact = pair_delta_max(pair.p, pair.beta, pair.q0, pair.q1, pair.neutral_share, n, eps)
        value = pair.delta(eps, n)
        assert exact <= value <= exact * (1.0 + 1e-6)


def test_clone_bound_is_below_the_closed_form_of_theorem_3_8():
    eps0, delta0, n, delta = 2.0, 1e-12, 10**5, 1e-6
    epsilon, total = fmt_theorem_3_8(eps0, delta0, n, delta)
    bound = CloneTVBound(eps0, delta0)
    assert bound.delta(epsilon, n) <= total
    assert bound.epsilon(total, n) < 0.5 * epsilon  # the exact pair is far tighter than Thm 3.1


def test_theorem_3_8_condition_is_enforced():
    n, eps0 = 1000, 2.0
    floor = fmt_condition_delta(eps0, n)
    assert eps0 <= math.log(n / (16.0 * math.log(2.0 / floor))) + 1e-12
    with pytest.raises(ValueError, match="Theorem 3.8 needs epsilon0"):
        fmt_theorem_3_8(eps0, 1e-9, n, 0.5 * floor)
    # below the floor Theorem 3.8 falls back to the victim's own report: leaky binary RR,
    # δ0 + (1 − δ0)(e^ε0 − e^ε)/(e^ε0 + 1) = δ at ε = ln(e^ε0 − (e^ε0 + 1)(δ − δ0)/(1 − δ0))
    local = math.log(math.exp(eps0) - (math.exp(eps0) + 1.0) * (1e-6 - 1e-12) / (1.0 - 1e-12))
    epsilon = CloneTVBound(eps0, 1e-12).epsilon(1e-6, n)
    assert local <= epsilon <= local * (1.0 + 1e-12)
    # the decomposition bound has no condition: the class amplifies like the pure worst case
    pure = VariationRatio.worst_case(eps0).epsilon(1e-6, n)
    assert pure <= approximate_ldp(eps0, 1e-12).shuffled(n).epsilon(1e-6) <= 1.01 * pure


def test_issue_target_approximate_ldp_amplifies_at_n_1000():
    """approximate_ldp(3.5, 7e-12), n = 10³, δ = 1e-6: 1.189 (the pure ε0 = 3.5 worst case 1.188;
    Theorem 3.8 needs n ≥ 16·e^{3.5}·ln(2/δ) ≈ 7000 and gives 3.5 = ε0)."""
    shuffled = approximate_ldp(3.5, 7e-12).shuffled(1000)
    lower, upper = shuffled.epsilon_interval(1e-6)
    pure = VariationRatio.worst_case(3.5).epsilon(1e-6, 1000)
    assert pure <= upper <= 1.002 * pure
    assert lower <= upper
    assert shuffled.delta(upper) <= 1e-6


def random_approximate_ldp_matrix(rng: np.random.Generator, inputs: int, outputs: int,
                                  epsilon0: float) -> tuple[np.ndarray, float]:
    """A random randomizer and its exact δ0 at ε0: max over ordered pairs of rows of the
    hockey-stick divergence at e^ε0 (raised by a relative 1e-9 for the float sums). Rows have
    tiny and zero entries, so the excess is spread over outputs, not a separate leak symbol."""
    matrix = rng.random((inputs, outputs)) ** 3
    matrix[rng.random(matrix.shape) < 0.15] = 0.0
    matrix[:, 0] += 1e-3
    matrix /= matrix.sum(axis=1, keepdims=True)
    big = math.exp(epsilon0)
    delta0 = max(float(np.maximum(matrix[i] - big * matrix[j], 0.0).sum())
                 for i in range(inputs) for j in range(inputs) if i != j)
    return matrix, delta0 * (1.0 + 1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_decomposition_bound_covers_random_approximate_randomizers(seed):
    rng = np.random.default_rng(2500 + seed)
    eps0 = [0.5, 1.0, 1.5, 2.0][seed]
    matrix, delta0 = random_approximate_ldp_matrix(rng, 3, 4, eps0)
    assert 0.0 < delta0 < 1.0
    bound = DecomposedLDPBound(eps0, delta0)
    whole_class = approximate_ldp(eps0, delta0)
    for n in (2, 4):
        for eps in (0.0, 0.1, 0.4, eps0):
            exact = worst_exact_delta_all_pairs(matrix, n, eps)
            assert exact <= bound.delta(eps, n)
            assert exact <= whole_class.delta(eps, n)


def worst_exact_delta_all_pairs(matrix: np.ndarray, n: int, eps: float) -> float:
    inputs = range(matrix.shape[0])
    return max(exact_shuffled_delta(matrix, i, j, list(others), eps)
               for i, j in itertools.permutations(inputs, 2)
               for others in itertools.combinations_with_replacement(inputs, n - 1))


def test_decomposition_bound_covers_leaky_rr_at_larger_n():
    """Leaky k-RR (d = 3, ε0 = 1, δ0 = 0.01) at n = 6: the class bound against every configuration."""
    inner = rz.krr(1.0, 3)
    matrix = leaky_matrix(inner.matrix, 0.01)
    bound = DecomposedLDPBound(1.0, 0.01)
    for eps in (0.05, 0.3, 0.8):
        assert worst_exact_delta(matrix, 6, eps) <= bound.delta(eps, 6)


def test_zero_delta0_gives_the_pure_bounds():
    krr = rz.krr(1.0, 5)
    for n in (3, 100):
        assert approximate(krr, 0.0).shuffled(n).delta(0.2) == krr.shuffled(n).delta(0.2)


def test_epsilon_inverts_delta_and_is_infinite_below_the_leak():
    shuffled = approximate(rz.krr(2.0, 10), 1e-4).shuffled(2000)
    # at δ = δ0 the (ε0, δ0) guarantee itself: ε0 (p = e^2 rounded up), not ∞
    at_leak = shuffled.epsilon(1e-4)
    assert at_leak == rz.krr(2.0, 10).epsilon0 == pytest.approx(2.0, rel=1e-15)
    assert shuffled.delta(at_leak) == 1e-4
    assert shuffled.epsilon(math.nextafter(1e-4, 0.0)) == math.inf
    assert shuffled.epsilon_lower(5e-5) == math.inf
    epsilon = shuffled.epsilon(1e-3)
    assert 0.0 < epsilon < 2.0
    assert shuffled.delta(epsilon) <= 1e-3 < shuffled.delta(0.99 * epsilon)
    pure = rz.krr(2.0, 10).shuffled(2000).epsilon(1e-3 - 1e-4)
    assert pure <= epsilon <= 1.01 * pure


def test_shuffle_event_and_pickling():
    leaky = approximate(rz.krr(2.0, 10), 1e-9)
    assert pickle.loads(pickle.dumps(leaky)) == leaky
    event = ShuffleEvent(leaky, num_users=50)
    profile = event.profile()
    assert profile.epsilon_cap == math.inf  # δ ≥ δ0 > 0 at every ε: no finite cap
    for eps in (0.1, 0.5, 1.9):
        assert profile.delta(eps) == leaky.shuffled(50).delta(eps)
    assert ShuffleEvent(leaky, num_users=50, honest_fraction=0.5).profile().delta(0.5) == \
        leaky.shuffled(25).delta(0.5)


@pytest.mark.parametrize("bad", [1.0, -0.1, math.nan, math.inf])
def test_bad_delta0(bad):
    with pytest.raises(ValueError, match="delta0"):
        approximate(rz.krr(1.0, 3), bad)
    with pytest.raises(ValueError, match="delta0"):
        approximate_ldp(1.0, bad)


def test_bad_randomizer():
    with pytest.raises(TypeError, match="randomizer must be a Randomizer"):
        approximate("krr", 0.1)
    with pytest.raises(ValueError, match="pure eps0-LDP"):
        approximate(rz.balls_into_bins(10, 2), 0.1)


def test_json_forms_round_trip():
    from dpacct_shuffle.randomizers.serialization import randomizer_from_json, randomizer_to_json

    for randomizer in (approximate(rz.krr(2.0, 10), 1e-9), approximate_ldp(1.0, 1e-9),
                       rz.gaussian(1.0, -1.0, 1.0), rz.gaussian_vector(2.0, 1.0),
                       approximate(rz.from_matrix([[0.7, 0.3], [0.3, 0.7]]), 0.1)):
        assert randomizer_from_json(randomizer_to_json(randomizer)) == randomizer
    with pytest.raises(ValueError, match="delta0"):
        randomizer_from_json('{"kind": "approximate", "delta0": 1.5, "randomizer": '
                             '{"kind": "catalog", "name": "krr", "arguments": '
                             '{"epsilon0": 1.0, "domain_size": 3}}}')


def test_spec_and_command_line_spelling(capsys):
    from dpacct_shuffle.cli import main
    from dpacct_shuffle.randomizers.spec import build_randomizer

    krr = rz.krr(2.0, 10)
    assert build_randomizer("krr:epsilon0=2,domain=10,delta0=1e-9") == approximate(krr, 1e-9)
    assert build_randomizer("krr", {"epsilon0": 2, "domain": 10, "delta0": 1e-9},
                            lenient=True) == approximate(krr, 1e-9)
    assert build_randomizer("approximate_ldp:epsilon0=1,delta0=1e-9") == approximate_ldp(1.0, 1e-9)
    args = ["delta", "--randomizer", "krr", "--epsilon0", "2", "--domain", "10", "--users", "1000",
            "--epsilon", "0.5", "--param"]
    assert main(args + ["delta0=1e-9"]) == 0
    out = capsys.readouterr().out
    assert "delta upper bound: 1.00001e-9" in out and "delta lower bound: 1e-9" in out
    assert main(args + ["delta0=2"]) == 2
    assert "delta0 must be in [0.0, 1.0), got 2.0" in capsys.readouterr().err


def test_pipeline_spelling():
    from dpacct_shuffle.pipeline import load_pipeline

    steps = [{"type": "shuffle", "users": 1000,
              "randomizer": {"name": "krr", "epsilon0": 2, "domain_size": 10, "delta0": 1e-9}},
             {"type": "shuffle", "users": 1000, "randomizer": "gaussian_vector:noise_std=16"},
             {"type": "shuffle", "users": 1000,
              "randomizer": {"name": "approximate_ldp", "epsilon0": 1, "delta0": 1e-9}}]
    pipeline = load_pipeline({"delta": 1e-6, "steps": steps})
    assert [step.randomizer.randomizer for step in pipeline.steps] == [
        approximate(rz.krr(2.0, 10), 1e-9), rz.gaussian_vector(16.0), approximate_ldp(1.0, 1e-9)]
    steps[0]["randomizer"]["delta0"] = 1.5
    with pytest.raises(ValueError, match="delta0 must be in"):
        load_pipeline({"delta": 1e-6, "steps": steps})
