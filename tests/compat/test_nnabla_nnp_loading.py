"""``nnabla.utils.nnp_graph.NnpLoader`` and ``nnabla.utils.load.load`` of the compat layer on the
NNabla 1.39 fixtures: what NNabla computed with the same files (``nnabla_outputs.npz``, recorded
by ``tests/fixtures/legacy/make_nnabla.py``)."""

from __future__ import annotations

import os

import numpy as np

import stadyn as sd
from stadyn.compat.nnabla.utils import load as nnabla_load
from stadyn.compat.nnabla.utils.nnp_graph import NnpLoader

FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "legacy")
REF = np.load(os.path.join(FIX, "nnabla_outputs.npz"))


def test_nnp_loader_builds_a_network_that_forwards_as_nnabla_did():
    registry = sd.ParameterRegistry()
    with sd.parameter_registry(registry):
        nnp = NnpLoader(os.path.join(FIX, "nnabla_deep_cnn.nnp"))
        assert nnp.get_network_names() == ["training", "validation", "runtime"]
        net = nnp.get_network("runtime", batch_size=4)
        assert list(net.inputs) == ["x"] and list(net.outputs) == ["y"]
        net.inputs["x"].d = REF["nnabla_deep_cnn.nnp/runtime/in/x"]
        net.outputs["y"].forward()
    np.testing.assert_allclose(net.outputs["y"].d, REF["nnabla_deep_cnn.nnp/runtime/out/y"],
                               rtol=1e-4, atol=1e-4)
    assert "cnn/conv1/conv/W" in registry and registry.get("cnn/conv1/bn/mean") is \
        net.variables["cnn/conv1/bn/mean"]


def test_load_gives_executors_with_their_assignments():
    registry = sd.ParameterRegistry()
    with sd.parameter_registry(registry):
        info = nnabla_load.load([os.path.join(FIX, "nnabla_lenet_protobuf.nnp")],
                                prepare_data_iterator=False, batch_size=4)
        executor = info.executors["inference"]
        (x, data), = executor.dataset_assign.items()
        (y, out), = executor.output_assign.items()
        assert (x.name, data, y.name, out) == ("x", "x", "y", ["", "y"])
        x.variable_instance.d = REF["nnabla_lenet_protobuf.nnp/inference/in/x"]
        y.variable_instance.forward()
    np.testing.assert_allclose(y.variable_instance.d,
                               REF["nnabla_lenet_protobuf.nnp/inference/out/y"],
                               rtol=1e-4, atol=1e-4)
    assert list(info.networks) == ["lenet"] and executor.network.name == "lenet"
    assert set(registry) == {"conv1/conv/W", "conv1/conv/b", "conv2/conv/W", "conv2/conv/b",
                             "fc3/affine/W", "fc3/affine/b", "fc4/affine/W", "fc4/affine/b"}


def test_load_keeps_the_training_sections_and_parameter_only_loads_parameters(tmp_path,
                                                                               monkeypatch):
    # the file's datasets name the relative cache folders digits_{training,validation}.cache,
    # which load makes in the working directory (NNabla 1.39 does, measured): run in tmp_path,
    # so the test leaves the checkout as it found it
    monkeypatch.chdir(tmp_path)
    registry = sd.ParameterRegistry()
    with sd.parameter_registry(registry):
        info = nnabla_load.load(os.path.join(FIX, "nnabla_deep_cnn.nnp"), parameter_only=True)
    assert not info.networks and len(registry) == 76
    with sd.parameter_registry(sd.ParameterRegistry()):
        info = nnabla_load.load(os.path.join(FIX, "nnabla_deep_cnn.nnp"), batch_size=2)
    assert list(info.networks) == ["training", "validation", "runtime"]
    assert list(info.optimizers) and list(info.datasets) and list(info.monitors)
    assert sorted(os.listdir(tmp_path)) == ["digits_training.cache", "digits_validation.cache"]



def test_exclude_parameter_builds_over_the_parameters_already_loaded():
    """``exclude_parameter=True`` computes with what the scope holds: the file's own values,
    loaded first by ``parameter_only``, give NNabla's output."""
    path = os.path.join(FIX, "nnabla_lenet_protobuf.nnp")
    registry = sd.ParameterRegistry()
    with sd.parameter_registry(registry):
        nnabla_load.load(path, parameter_only=True)
        before = {k: v.d.copy() for k, v in registry.items()}
        info = nnabla_load.load([path], prepare_data_iterator=False, batch_size=4,
                                exclude_parameter=True)
        (x,), (y,) = info.executors["inference"].dataset_assign, \
            info.executors["inference"].output_assign
        x.variable_instance.d = REF["nnabla_lenet_protobuf.nnp/inference/in/x"]
        y.variable_instance.forward()
    np.testing.assert_allclose(y.variable_instance.d,
                               REF["nnabla_lenet_protobuf.nnp/inference/out/y"],
                               rtol=1e-4, atol=1e-4)
    assert all(np.array_equal(registry.get(k).d, v) for k, v in before.items())


def test_nnp_loader_holds_its_parameters_once(tmp_path):
    """The loader keeps the values in its Variables only: the NumPy arrays it read the file
    into are dropped (they doubled the memory a large model takes), also once a network is
    built.  NumPy's allocations are traced by ``tracemalloc``; the Variables' are torch's.
    (Measured: a 4 MiB parameter, 16 kB held; 4.2 MB before the arrays were dropped.)"""
    import gc
    import tracemalloc
    import zipfile

    n = 1 << 20                                     # a 4 MiB parameter
    w = sd.Variable.from_numpy_array(np.random.RandomState(0).randn(4, n // 4))
    (tmp_path / "network.nntxt").write_text(
        'network { name: "n" batch_size: 1 '
        'variable { name: "x" type: "Buffer" shape { dim: -1 dim: 4 } } '
        f'variable {{ name: "W" type: "Parameter" shape {{ dim: 4 dim: {n // 4} }} }} '
        f'variable {{ name: "y" type: "Buffer" shape {{ dim: -1 dim: {n // 4} }} }} '
        'function { name: "f" type: "Affine" input: "x" input: "W" output: "y" '
        'affine_param { base_axis: 1 } } }\n')
    with sd.parameter_registry(sd.ParameterRegistry()):
        from stadyn.parametric import set_parameter
        set_parameter("W", w)
        sd.save_parameters(str(tmp_path / "parameter.h5"))
    path = tmp_path / "big.nnp"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("nnp_version.txt", "0.1\n")
        z.write(tmp_path / "network.nntxt", "network.nntxt")
        z.write(tmp_path / "parameter.h5", "parameter.h5")
    with sd.parameter_registry(sd.ParameterRegistry()):
        NnpLoader(str(path)).get_network("n")       # the imports a first build makes
    with sd.parameter_registry(sd.ParameterRegistry()):
        gc.collect()
        tracemalloc.start()
        try:
            nnp = NnpLoader(str(path))
            net = nnp.get_network("n")
            gc.collect()
            held, _ = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        net.inputs["x"].d = np.ones((1, 4))
        net.outputs["y"].forward()
        np.testing.assert_allclose(net.outputs["y"].d[0], w.d.sum(axis=0), rtol=1e-4, atol=1e-4)
    assert held < n * 4 // 2, f"the loader holds {held} bytes of NumPy arrays"
