"""CNTK 2.7 batch normalisation written to an NNabla ``.nnp`` as a *training* network: NNabla's
``BatchNormalization`` with batch statistics and the decay rate ``exp(-M / time_constant)``
that gives CNTK's running average for minibatches of the written size M, the running
statistics declared as parameters in NNabla's shape (NNabla updates them in place).  Held to
one training step of CNTK 2.7 on the same files and inputs (``cntk_bn_train_step.npz``, made by
``tests/fixtures/legacy/make_cntk_bn_train.py``): Stadyn's step on the file read back always,
NNabla 1.39's step (``nnabla_train_step_nnp.py``) where its venv is present."""

from __future__ import annotations

import math
import os
import subprocess

import numpy as np
import pytest
import peers

import stadyn as sd
import stadyn.functions as F
import stadyn.solvers as S
from stadyn.serialize import ExportError, NnpWriter, load_cntk, load_nnp, read_legacy_model

HERE = os.path.dirname(os.path.abspath(__file__))
LEGACY = os.path.join(HERE, "..", "fixtures", "legacy")
NNABLA = peers.NNABLA_PYTHON
RATE = 0.1
# file, input name, time constant of its batch normalisation
MODELS = {"mlp": ("cntk_mlp_bn.model", "x", 5000.0), "conv": ("cntk_conv_bn.model", "image", 200.0)}


@pytest.fixture(scope="module")
def reference():
    return dict(np.load(os.path.join(LEGACY, "cntk_bn_train_step.npz")))


def _write(tmp_path, model: str, registry=None):
    net = load_cntk(os.path.join(LEGACY, MODELS[model][0]), batch_size=8, registry=registry)
    writer = NnpWriter()
    writer.add_network("training", net.outputs, net.inputs, training=True)
    writer.add_network("runtime", net.outputs, net.inputs)
    path = tmp_path / f"{model}.nnp"
    writer.write(path)
    return path


@pytest.mark.parametrize("model", sorted(MODELS))
def test_the_training_network_holds_cntks_running_average(tmp_path, model):
    path = _write(tmp_path, model)
    nets = read_legacy_model(path).networks
    (bn,) = [f for f in nets["training"].functions if f.type == "BatchNormalization"]
    assert bn.attrs["batch_stat"] is True
    assert bn.attrs["decay_rate"] == pytest.approx(math.exp(-8 / MODELS[model][2]))
    mean, var = bn.inputs[3:5]
    assert mean.startswith("Constant") and var.startswith("Constant")    # no Reshape between
    (rt,) = [f for f in nets["runtime"].functions if f.type == "BatchNormalization"]
    assert not rt.attrs.get("batch_stat", False) and tuple(rt.inputs[3:5]) == (mean, var)


@pytest.mark.parametrize("model", sorted(MODELS))
def test_a_step_on_the_file_read_back_is_cntks(tmp_path, reference, model):
    """Stadyn reads the written training network (NNabla's semantics: the decay rate) and
    takes CNTK's step: outputs, parameters and running statistics."""
    path = _write(tmp_path, model)
    net = load_nnp(path, network="training", batch_size=8)
    (x,), (y,) = net.inputs.values(), net.outputs.values()
    x.d = reference[f"{model}_input"]
    w = sd.Variable.from_numpy_array(np.linspace(-1.0, 1.0, y.shape[1]).astype(np.float32))
    loss = F.mul_scalar(F.sum(y * F.reshape(w, (1, -1))), 1.0 / 8)
    solver = S.Sgd(RATE)
    solver.set_parameters(net.get_parameters(grad_only=True))
    with sd.training(True):
        loss.forward()
        train_out = np.array(y.d)
        solver.zero_grad()
        loss.backward()
        solver.update()
    np.testing.assert_allclose(train_out, reference[f"{model}_train_out"], rtol=1e-5, atol=1e-5)
    for name, p in net.registry.items():
        want = reference[f"{model}_after_{name}"]
        np.testing.assert_allclose(np.asarray(p.d).reshape(want.shape), want, rtol=1e-5,
                                   atol=1e-6, err_msg=name)


@pytest.mark.skipif(not os.path.exists(NNABLA),
                    reason=f"the real NNabla 1.39 venv is not here ({NNABLA})")
@pytest.mark.parametrize("model", sorted(MODELS))
def test_nnabla_trains_the_written_file_as_cntk_does(tmp_path, reference, model):
    path = _write(tmp_path, model)
    np.savez(tmp_path / "in.npz", **{MODELS[model][1]: reference[f"{model}_input"]})
    proc = subprocess.run([NNABLA, os.path.join(HERE, "nnabla_train_step_nnp.py"), str(path),
                           str(tmp_path / "in.npz"), str(tmp_path / "out.npz"), str(RATE)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = dict(np.load(tmp_path / "out.npz"))
    for key in ("train_out", "eval_out"):
        np.testing.assert_allclose(got[key], reference[f"{model}_{key}"], rtol=1e-5, atol=1e-5,
                                   err_msg=key)
    after = {k[6:]: v for k, v in got.items() if k.startswith("after/")}
    want = {k[len(model) + 7:]: v for k, v in reference.items()
            if k.startswith(f"{model}_after_") and v.ndim}      # the count is not written
    assert sorted(after) == sorted(want)
    for name, value in want.items():
        np.testing.assert_allclose(after[name].reshape(value.shape), value, rtol=1e-5, atol=1e-6,
                                   err_msg=name)


def test_statistics_that_saw_no_samples_are_refused_for_training(tmp_path):
    registry = sd.ParameterRegistry()
    net = load_cntk(os.path.join(LEGACY, "cntk_mlp_bn.model"), registry=registry)
    dict(registry.items())["Constant1491"].d = np.zeros(())      # the sample count: never trained
    with pytest.raises(ExportError, match="count 0"):
        sd.save_nnp(tmp_path / "a.nnp", net.outputs, net.inputs, training=True)
    sd.save_nnp(tmp_path / "b.nnp", net.outputs, net.inputs)            # inference: fine
