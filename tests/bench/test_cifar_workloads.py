"""The CIFAR workloads' new cases: the CNTK-driven one and the channels-last PyTorch twins compute
the network they stand beside (their first losses agree with the hand-written NCHW twin's)."""

import numpy as np
import pytest

from stadyn.bench import ALL_TORCH_MODES, WORKLOADS

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_the_cntk_driven_case_computes_the_twins_network_and_trains():
    w = WORKLOADS["cifar-cntk"]
    case = w.stadyn_case("static")
    twin = w.torch_case("eager")
    # the inference-phase loss of the initial parameters: the same network, built by CNTK calls
    assert case.first_loss == pytest.approx(twin.first_loss, rel=1e-5)
    assert 2.0 < case.first_loss < 2.6                  # ten classes at random: about ln 10
    trainer = case.step.trainer
    before = [np.array(p.value) for p in trainer.model.parameters]
    for _ in range(2):
        case.step()
    # the step is the script's train_minibatch: the trainer counted it and moved the parameters
    assert trainer.total_number_of_samples_seen == 3 * 64
    assert np.isfinite(trainer.previous_minibatch_loss_average)
    assert trainer.previous_minibatch_evaluation_average is not None
    assert all(not np.array_equal(b, np.array(p.value))
               for b, p in zip(before, trainer.model.parameters))


def test_a_cntk_graph_has_no_dynamic_case():
    with pytest.raises(ValueError, match="static"):
        WORKLOADS["cifar-cntk"].stadyn_case("dynamic")


@pytest.mark.parametrize("mode", ["eager-cl", "eager-cl-bf16", "eager-bf16"])
def test_the_channels_last_and_bf16_twins_compute_the_nchw_twins_network(mode):
    w = WORKLOADS["cifar"]
    assert mode in ALL_TORCH_MODES
    reference = w.torch_case("eager").first_loss
    case = w.torch_case(mode)
    tolerance = 2e-2 if mode.endswith("bf16") else 1e-5
    assert case.first_loss == pytest.approx(reference, rel=tolerance)
    assert case.mode == f"torch-{mode}"
