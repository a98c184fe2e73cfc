"""nnabla-examples' SVD compression of a LeNet (``compression/mnist/svd`` of
sony/nnabla-examples: ``classification.py`` trains the reference network,
``classification_svd.py`` factorises its ``fc3`` with NumPy's SVD, loading the reference's
``.h5``, and fine-tunes the slimmer network) and its VQ-VAE
(``image-generation/variational-auto-encoder/vq-vae``, dynamic mode) run unchanged on Stadyn
at a tiny size on the MNIST stand-in; what their monitors recorded and the parameters they
saved are compared with NNabla 1.39's run of the same driver (``nnabla_examples_extra.py``;
reference ``refs/nnabla139_examples_extra.json``).  The programs are read from a copy of
nnabla-examples (``program_copies.nnabla_examples_run``: without one the test skips).
"""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from program_copies import nnabla_examples_run  # noqa: E402
from nnabla_examples_extra import PROGRAMS  # noqa: E402

# Same seed, same data order, same initial parameters, no random op in the graph, NumPy's SVD
# on both sides: the monitors agree to their 6 digits, the parameters to float32 rounding.
SAME = ["svd_reference", "svd"]
# VQ-VAE: one step gives NNabla's parameters to float32 rounding but for a weight whose
# gradient is ~0 (Adam steps it by the learning rate either way), and its convolutions before
# batch normalisation have biases whose gradient is 0 in exact arithmetic, which Adam moves by
# NNabla's float residues (a learning rate a step, the residues keeping their sign): the
# epochs' losses part (up to 5% after 20 steps; NNabla 1.39's own runs differ as much).
CLOSE = ["vqvae"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return nnabla_examples_run(tmp_path_factory, "nnabla_examples_extra.py", PROGRAMS,
                               "nnabla139_examples_extra.json")


def _needs(run):
    if run == "vqvae":   # its configuration is read with PyYAML (nnabla-examples' neu)
        pytest.importorskip("yaml", reason="VQ-VAE reads its configuration with PyYAML")


@pytest.mark.parametrize("run", SAME + CLOSE)
def test_the_program_runs_to_the_end_and_writes_what_nnabla_writes(runs, run):
    _needs(run)
    mine, real = runs
    assert real[run]["error"] is None
    assert mine[run]["error"] is None, mine[run]["error"]
    assert mine[run]["files"] == real[run]["files"]
    assert set(mine[run]["series"]) == set(real[run]["series"])


@pytest.mark.parametrize("run", SAME)
def test_monitored_values_are_nnabla_139s(runs, run):
    mine, real = runs
    assert any(rows for rows in real[run]["series"].values())
    for name, rows in real[run]["series"].items():
        np.testing.assert_allclose(mine[run]["series"][name], rows, rtol=1e-4, atol=1e-6,
                                   err_msg=name)


# Since NNabla's exact Adam became the default (nnhalf39/rmF39, bit for bit with NNabla 1.39 on
# 5-step cases), the fine-tuned slim network's parameters after 20 steps are 0.3 % away
# (params_000020.h5 slim/conv1/conv/W sum 3.8053 vs NNabla's 3.8163; torch's fused Adam gave
# 3.81633).  Both runs are stable (NNabla 3.816327..3.816328 and Stadyn 3.805302..3.805324 with
# every parameter multiplied by 1 + 1e-7 * signs), and the two stay within 1e-7 of each other
# through step 8; at steps 9-10 the gradients jump 1e-4..1e-3 apart on parameters 6e-8 apart
# (a discontinuity: a pooling or ReLU near-tie that the two CPU kernels round apart).  Cause not
# found yet: a strict known difference until it is (see the session-39 notes).
_SVD_AFTER_20 = pytest.mark.xfail(strict=True, reason=(
    "params_000020.h5 of the SVD fine-tuning 0.3 % from NNabla 1.39's since the exact Adam "
    "default (a gradient discontinuity at step 9-10; cause not found)"))


@pytest.mark.parametrize("run", ["svd_reference", pytest.param("svd", marks=_SVD_AFTER_20)])
def test_saved_parameters_are_nnabla_139s(runs, run):
    """The slim network's ``fc-d0``/``fc-d1`` start from the SVD of the reference's ``fc3``
    as NNabla 1.39 read it back: a wrong load or factorisation shows here first."""
    mine, real = runs
    ours, theirs = mine[run]["parameters"], real[run]["parameters"]
    assert set(ours) == set(theirs)
    for file, params in theirs.items():
        assert set(ours[file]) == set(params), file
        for name, digest in params.items():
            np.testing.assert_allclose(ours[file][name], digest, rtol=1e-4, atol=1e-5,
                                       err_msg=f"{file}: {name}")
    assert all(mine[run]["finite"].values()), mine[run]["finite"]


def test_vq_vae_trains_as_nnabla_139_does(runs):
    """Dynamic mode throughout; before Stadyn gave NNabla's ``Context`` fields, nnabla-examples'
    ``CommunicatorWrapper`` stopped at ``len(ctx.device_id)``, and before an op could read an
    output a ``backward(clear_buffer=True)`` freed, saving the reconstructions stopped it."""
    _needs("vqvae")
    mine, real = runs
    ours, theirs = mine["vqvae"]["series"], real["vqvae"]["series"]
    for name, rows in theirs.items():
        assert [i for i, _ in ours[name]] == [i for i, _ in rows] == [0.0, 1.0], name
        # the first epoch's mean training loss within 0.2% and the validation after it (through
        # the running statistics, which the biases' drift reaches) within 1%; after that the
        # codebook's nearest-vector choices part, and the losses are alike within 10%
        np.testing.assert_allclose(ours[name][0][1], rows[0][1],
                                   rtol=2e-3 if name.startswith("Training") else 0.01,
                                   err_msg=name)
        np.testing.assert_allclose(ours[name][1][1], rows[1][1], rtol=0.1, err_msg=name)
        assert ours[name][1][1] < ours[name][0][1] and rows[1][1] < rows[0][1], name
    assert set(mine["vqvae"]["parameters"]) == set(real["vqvae"]["parameters"])
    assert all(mine["vqvae"]["finite"].values()), mine["vqvae"]["finite"]
