"""Real DP-SGD training (torch + Opacus on CPU) accounted by ShuffleAccountant.

Checks: `PrivacyEngine(accountant="shuffle")` trains; its ε equals dp-accounting's `PLDAccountant`
ε for the same DP-SGD events under the same neighbouring relation; with add/remove chosen it is at
most Opacus's own RDP ε; calibration through Opacus ignores shuffle rounds while
`noise_multiplier_for_epsilon` counts them; checkpoints restore every event.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from dp_accounting import dp_event  # noqa: E402
from dp_accounting.pld import PLDAccountant  # noqa: E402
from dp_accounting.privacy_accountant import NeighboringRelation  # noqa: E402
from opacus import PrivacyEngine  # noqa: E402
from opacus.accountants import RDPAccountant  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from dpacct_shuffle import randomizers  # noqa: E402
from dpacct_shuffle.events import ShuffleEvent  # noqa: E402
from dpacct_shuffle.opacus import ShuffleAccountant, noise_multiplier_for_epsilon  # noqa: E402

DELTA = 1e-5
RECORDS, FEATURES, CLASSES, BATCH = 256, 8, 3, 32
SIGMA, CLIP = 1.0, 1.0
# one randomizer object and one n: the shuffle PLD is built once per process
KRR = randomizers.krr(2.0, CLASSES)
REPORTS = 1000
GAMMA = 0.5  # client sampling of the report rounds under add/remove-one

torch.set_num_threads(1)
pytestmark = [pytest.mark.filterwarnings("ignore:Secure RNG turned off"),
              pytest.mark.filterwarnings("ignore:Full backward hook is firing")]


def _data(seed: int = 0) -> TensorDataset:
    generator = torch.Generator().manual_seed(seed)
    centers = 2.0 * torch.randn(CLASSES, FEATURES, generator=generator)
    labels = torch.randint(0, CLASSES, (RECORDS,), generator=generator)
    features = centers[labels] + torch.randn(RECORDS, FEATURES, generator=generator)
    return TensorDataset(features, labels)


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(FEATURES, 16), nn.ReLU(), nn.Linear(16, CLASSES))


def _private(engine: PrivacyEngine, sigma: float = SIGMA, **options: object
             ) -> tuple[nn.Module, torch.optim.Optimizer, DataLoader]:
    """``engine.make_private`` on a fresh model, SGD optimizer and the synthetic data."""
    model = _model()
    return engine.make_private(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.5),
        data_loader=DataLoader(_data(), batch_size=BATCH), noise_multiplier=sigma,
        max_grad_norm=CLIP, **options)


def _train(engine: PrivacyEngine, epochs: int = 1, sigma: float = SIGMA) -> tuple[int, float]:
    """make_private + ``epochs`` epochs of DP-SGD; returns (optimizer steps, final accuracy)."""
    module, optimizer, loader = _private(engine, sigma,
                                         noise_generator=torch.Generator().manual_seed(1))
    return _run(module, optimizer, loader, epochs)


def _run(module: nn.Module, optimizer: torch.optim.Optimizer, loader: DataLoader,
         epochs: int) -> tuple[int, float]:
    steps = 0
    for _ in range(epochs):
        for features, labels in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(module(features), labels).backward()
            optimizer.step()
            steps += 1
    features, labels = _data().tensors
    with torch.no_grad():
        accuracy = (module(features).argmax(dim=1) == labels).float().mean().item()
    return steps, accuracy


def _pld_reference(relation: NeighboringRelation, steps: int, sample_rate: float) -> float:
    reference = PLDAccountant(relation)
    reference.compose(dp_event.PoissonSampledDpEvent(sample_rate, dp_event.GaussianDpEvent(SIGMA)),
                      steps)
    return reference.get_epsilon(DELTA)


def test_privacy_engine_with_shuffle_accountant_trains_and_matches_dp_accounting() -> None:
    """The one-line switch: Opacus's relation (add/remove-one) by default, dp-accounting's value,
    at most Opacus's own PRV accountant on the same history, and Opacus's len()."""
    from opacus.accountants import PRVAccountant

    engine = PrivacyEngine(accountant="shuffle")
    steps, accuracy = _train(engine, epochs=2)
    accountant = engine.accountant
    assert isinstance(accountant, ShuffleAccountant)
    sample_rate = BATCH / RECORDS
    assert accountant.history == [(SIGMA, sample_rate, steps)]
    assert steps == 2 * RECORDS // BATCH and len(accountant) == 1  # history entries, as Opacus
    assert accuracy > 0.6  # 3 well-separated classes: DP-SGD learned something
    epsilon = engine.get_epsilon(DELTA)
    assert epsilon == _pld_reference(NeighboringRelation.ADD_OR_REMOVE_ONE, steps, sample_rate)
    prv = PRVAccountant()
    prv.history = list(accountant.history)
    assert len(prv) == len(accountant)
    assert 0.0 < epsilon <= prv.get_epsilon(DELTA)

    # one Poisson-sampled shuffle round of the records' labels (k-RR), same accountant
    accountant.step_shuffle(KRR, REPORTS, sampling_probability=0.1)
    assert engine.get_epsilon(DELTA) > epsilon
    assert len(accountant) == 2
    # an unsampled round: replace-one only, refused naming both ways out
    with pytest.raises(ValueError, match="sampling_probability.*replace_one"):
        accountant.step_shuffle(KRR, REPORTS)


def test_add_remove_equals_pld_and_is_at_most_opacus_rdp() -> None:
    engine = PrivacyEngine()
    engine.accountant = ShuffleAccountant(neighboring_relation="add_or_remove_one")
    steps, _ = _train(engine, epochs=2)
    sample_rate = BATCH / RECORDS
    epsilon = engine.get_epsilon(DELTA)
    assert epsilon == _pld_reference(NeighboringRelation.ADD_OR_REMOVE_ONE, steps, sample_rate)
    opacus_rdp = RDPAccountant()
    opacus_rdp.history = list(engine.accountant.history)
    assert 0.0 < epsilon <= opacus_rdp.get_epsilon(DELTA)
    with pytest.raises(ValueError, match="replace-one"):
        engine.accountant.step_shuffle(KRR, REPORTS)


def test_calibration_counts_shuffle_rounds_in_training() -> None:
    target, epochs, rounds = 4.0, 2, 10
    sample_rate = BATCH / RECORDS
    steps = epochs * RECORDS // BATCH
    # Opacus's own calibration through the registry: meets the target for DP-SGD alone ...
    engine = PrivacyEngine(accountant="shuffle")
    model = _model()
    module, optimizer, loader = engine.make_private_with_epsilon(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.5),
        data_loader=DataLoader(_data(), batch_size=BATCH), target_epsilon=target,
        target_delta=DELTA, epochs=epochs, max_grad_norm=CLIP, epsilon_tolerance=0.1)
    assert _run(module, optimizer, loader, epochs)[0] == steps
    assert engine.get_epsilon(DELTA) <= target
    # ... but not once the planned (client-sampled) shuffle rounds are added
    engine.accountant.step_shuffle(KRR, REPORTS, count=rounds, sampling_probability=GAMMA)
    assert engine.get_epsilon(DELTA) > target

    planned = dp_event.PoissonSampledDpEvent(GAMMA, ShuffleEvent(KRR, REPORTS))
    sigma = noise_multiplier_for_epsilon(target_epsilon=target, target_delta=DELTA,
                                         sample_rate=sample_rate, steps=steps,
                                         planned_events=[(planned, rounds)])
    counted = PrivacyEngine(accountant="shuffle")
    assert _train(counted, epochs=epochs, sigma=sigma)[0] == steps
    counted.accountant.step_shuffle(KRR, REPORTS, count=rounds, sampling_probability=GAMMA)
    assert counted.get_epsilon(DELTA) <= target


def test_checkpoint_restores_all_events(tmp_path) -> None:  # type: ignore[no-untyped-def]
    engine = PrivacyEngine(accountant="shuffle")
    module, optimizer, loader = _private(engine)
    _run(module, optimizer, loader, 1)
    # the catalog Randomizer itself goes into the checkpoint (stored as its call krr(...))
    engine.accountant.step_shuffle(KRR, REPORTS, count=2, sampling_probability=GAMMA)
    path = tmp_path / "checkpoint.pt"
    engine.save_checkpoint(path=path, module=module, optimizer=optimizer)

    restored = PrivacyEngine(accountant="shuffle")
    restored_module, restored_optimizer, _ = _private(restored)
    restored.load_checkpoint(path=path, module=restored_module, optimizer=restored_optimizer)
    assert restored.accountant.history == engine.accountant.history
    assert restored.accountant.events == engine.accountant.events
    assert restored.get_epsilon(DELTA) == engine.get_epsilon(DELTA)
