"""NNabla ``.nnp`` files written by Stadyn (``sd.save_nnp``, the compat layer's
``nnabla.utils.save.save``): they load back in Stadyn and, when NNabla 1.39's venv is present,
in the real NNabla (``nnabla_run_nnp.py``), which must compute what Stadyn computed."""

from __future__ import annotations

import os
import subprocess
import zipfile

import numpy as np
import pytest
import peers

import stadyn as sd
import stadyn.functions as F
import stadyn.parametric_functions as PF
from stadyn.serialize import ExportError, NnpWriter, read_legacy_model
from stadyn.serialize._nnp_export import param_field
from stadyn.serialize.op_rules._table import _RULES

HERE = os.path.dirname(os.path.abspath(__file__))
NNABLA = peers.NNABLA_PYTHON
needs_nnabla = pytest.mark.skipif(
    not os.path.exists(NNABLA),
    reason=f"the real NNabla 1.39 venv is not here ({NNABLA}; set STADYN_NNABLA_PYTHON)")


def run_in_nnabla(tmp_path, path, network, inputs, names=()):
    """What NNabla 1.39 computes for ``network`` of ``path`` on ``inputs`` (its outputs and
    the variables ``names``)."""
    np.savez(tmp_path / "in.npz", **inputs)
    out = tmp_path / "out.npz"
    proc = subprocess.run([NNABLA, os.path.join(HERE, "nnabla_run_nnp.py"), str(path), network,
                           str(tmp_path / "in.npz"), str(out), ",".join(names)],
                          capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(np.load(out))


def _mlp_bn(registry):
    """An MLP with batch normalisation (running statistics) and non-trivial parameters."""
    with sd.parameter_registry(registry):
        x = sd.Variable((4, 6))
        h = F.relu(PF.affine(x, 5, name="l1"))
        h = PF.batch_normalization(h, batch_stat=False, name="bn")
        y = F.softmax(PF.affine(h, 3, name="l2"))
    rng = np.random.RandomState(7)
    for name, p in registry.items():
        p.d = rng.uniform(0.5, 1.5, p.shape)
    x.d = rng.randn(4, 6).astype(np.float32)
    y.forward()
    return x, y


def test_mlp_with_batch_norm_round_trips_through_stadyn(tmp_path):
    x, y = _mlp_bn(sd.ParameterRegistry())
    path = tmp_path / "mlp.nnp"
    sd.save_nnp(path, {"prob": y}, {"x": x})
    with zipfile.ZipFile(path) as z:
        assert z.namelist() == ["nnp_version.txt", "network.nntxt", "parameter.h5"]
    model = read_legacy_model(path)
    net = model.networks["network"]
    assert [f.type for f in net.functions] == ["Affine", "ReLU", "BatchNormalization", "Affine",
                                              "Softmax"]
    assert net.variables["x"].shape == (-1, 6) and net.batch_size == 4
    bn = net.functions[2].attrs
    assert bn.get("batch_stat", False) is False and bn["eps"] == pytest.approx(1e-5)
    loaded = sd.load(path)
    np.testing.assert_allclose(loaded(x=x.d)["prob"], y.d, rtol=1e-6, atol=1e-7)
    # another batch size: the batch axis was written as -1
    assert sd.load(path, batch_size=2)(x=x.d[:2])["prob"].shape == (2, 3)


@needs_nnabla
def test_mlp_with_batch_norm_runs_in_nnabla(tmp_path):
    x, y = _mlp_bn(sd.ParameterRegistry())
    path = tmp_path / "mlp.nnp"
    sd.save_nnp(path, {"prob": y}, {"x": x})
    got = run_in_nnabla(tmp_path, path, "network", {"x": x.d})
    np.testing.assert_allclose(got["out/prob"], y.d, rtol=1e-5, atol=1e-5)
    assert list(got["info/executors"]) == ["runtime"]
    assert list(got["info/parameters"]) == sorted(["l1/affine/W", "l1/affine/b", "bn/bn/beta",
                                                   "bn/bn/gamma", "bn/bn/mean", "bn/bn/var",
                                                   "l2/affine/W", "l2/affine/b"])


def _tutorial_cnn(nn, F_, PF_, x, test, widths=(4, 8, 16, 32)):
    """NNabla's tutorial CNN (conv+BN+tanh blocks, 2x2 average pooling, affine+tanh, affine)
    at small widths, written against the compat layer as a user writes it for NNabla."""
    c1, c, clast, fc = widths
    with nn.parameter_scope("cnn"):
        with nn.parameter_scope("conv1"):
            h = F_.tanh(PF_.batch_normalization(PF_.convolution(x, c1, (3, 3), pad=(1, 1)),
                                                batch_stat=not test))
        for i in range(3):
            with nn.parameter_scope("conv{}".format(i + 2)):
                h = F_.tanh(PF_.batch_normalization(PF_.convolution(h, c, (3, 3), pad=(1, 1)),
                                                    batch_stat=not test))
        with nn.parameter_scope("conv_last"):
            h = F_.tanh(PF_.batch_normalization(PF_.convolution(h, clast, (3, 3), pad=(1, 1)),
                                                batch_stat=not test))
        h = F_.average_pooling(h, (2, 2))
        with nn.parameter_scope("fc"):
            h = F_.tanh(PF_.affine(h, fc))
        with nn.parameter_scope("classifier"):
            y = PF_.affine(h, 10)
    return y


def _tutorial_contents(tmp_path):
    from stadyn.compat import nnabla as nn
    from stadyn.compat.nnabla import functions as F_, parametric_functions as PF_, solvers as S_
    nn.clear_parameters()
    nn.seed(3)
    x = nn.Variable((8, 1, 8, 8))
    t = nn.Variable((8, 1))
    y = _tutorial_cnn(nn, F_, PF_, x, test=False)
    loss = F_.mean(F_.softmax_cross_entropy(y, t))
    yv = _tutorial_cnn(nn, F_, PF_, x, test=True)
    solver = S_.Adam(alpha=1e-3)
    solver.set_parameters(nn.get_parameters())
    rng = np.random.RandomState(313)
    for _ in range(3):                      # running statistics off their initial values
        x.d = rng.uniform(0, 16, x.shape)
        t.d = rng.randint(0, 10, t.shape)
        loss.forward()
        solver.zero_grad()
        loss.backward()
        solver.update()
    x.d = rng.uniform(0, 16, x.shape)
    t.d = rng.randint(0, 10, t.shape)
    nn.forward_all([loss, yv])
    contents = {
        "global_config": {"default_context": nn.get_current_context()},
        "training_config": {"max_epoch": 2, "iter_per_epoch": 4, "save_best": True},
        "networks": [
            {"name": "training", "batch_size": 8, "outputs": {"loss": loss},
             "names": {"x": x, "t": t}},
            {"name": "runtime", "batch_size": 8, "outputs": {"y": yv}, "names": {"x": x}}],
        "optimizers": [{"name": "optimizer", "solver": solver, "network": "training",
                        "dataset": "train", "weight_decay": 0, "lr_decay": 1,
                        "lr_decay_interval": 1, "update_interval": 1}],
        "datasets": [{"name": "train", "uri": "train.csv", "cache_dir": "train.cache",
                      "variables": {"x": x, "t": t}, "shuffle": True, "batch_size": 8,
                      "no_image_normalization": True}],
        "monitors": [{"name": "train_error", "network": "training", "dataset": "train"}],
        "executors": [{"name": "runtime", "network": "runtime", "data": ["x"],
                       "output": ["y"]}],
    }
    return contents, x, t, loss, yv


def test_tutorial_cnn_saved_by_the_compat_layer_loads_back(tmp_path):
    from stadyn.compat.nnabla.utils.save import save
    with sd.parameter_registry(sd.ParameterRegistry()):
        contents, x, t, loss, yv = _tutorial_contents(tmp_path)
        path = tmp_path / "cnn.nnp"
        save(str(path), contents)
    model = read_legacy_model(path)
    assert list(model.networks) == ["training", "runtime"]
    types = {f.type for f in model.networks["runtime"].functions}
    assert types == {"Convolution", "BatchNormalization", "Tanh", "AveragePooling", "Affine"}
    opt = model.extras["optimizers"]["optimizer"]
    assert opt["solver"]["type"] == "Adam" and opt["dataset_name"] == ["train"]
    assert opt["solver"]["adam_param"]["alpha"] == pytest.approx(1e-3)
    assert [v["variable_name"] for v in opt["loss_variable"]] == ["loss"]
    assert model.extras["datasets"]["train"]["variable"] == ["x", "t"]
    assert model.extras["training_config"]["max_epoch"] == 2
    runtime = sd.load(path)                             # the executor "runtime"
    np.testing.assert_allclose(runtime(x=x.d)["y"], yv.d, rtol=1e-5, atol=1e-5)
    training = sd.load_nnp(path, network="training")
    got = training.run({"x": x.d, "t": t.d}, training=True)["loss"]
    np.testing.assert_allclose(got, loss.d, rtol=1e-5, atol=1e-5)


@needs_nnabla
def test_tutorial_cnn_saved_by_the_compat_layer_runs_in_nnabla(tmp_path):
    from stadyn.compat.nnabla.utils.save import save
    with sd.parameter_registry(sd.ParameterRegistry()):
        contents, x, t, loss, yv = _tutorial_contents(tmp_path)
        path = tmp_path / "cnn.nnp"
        save(str(path), contents, parameter_format=".protobuf")
    with zipfile.ZipFile(path) as z:
        assert "parameter.protobuf" in z.namelist()
    got = run_in_nnabla(tmp_path, path, "runtime", {"x": x.d})
    np.testing.assert_allclose(got["out/y"], yv.d, rtol=1e-5, atol=1e-5)
    got = run_in_nnabla(tmp_path, path, "training", {"x": x.d, "t": t.d})
    np.testing.assert_allclose(got["out/loss"], loss.d, rtol=1e-5, atol=1e-5)
    assert list(got["info/optimizers"]) == ["optimizer"]
    assert list(got["info/datasets"]) == ["train"]
    assert list(got["info/monitors"]) == ["train_error"]


def _lenet(registry):
    with sd.parameter_registry(registry):
        x = sd.Variable((3, 1, 12, 12))
        h = F.relu(F.max_pooling(PF.convolution(x, 4, (3, 3), name="conv1"), (2, 2)))
        h = F.sigmoid(F.max_pooling(PF.convolution(h, 4, (3, 3), name="conv2"), (2, 2),
                                    stride=(1, 1)))
        h = F.reshape(h, (3, -1))
        y = F.log_softmax(PF.affine(F.mul_scalar(h, 2.0), 5, name="fc"))
        s = F.sum(y, axis=1, keepdims=True)
    x.d = np.random.RandomState(1).randn(3, 1, 12, 12).astype(np.float32)
    sd.forward_all([y, s])
    return x, y, s


@pytest.mark.parametrize("suffix", [".nnp", ".nntxt"])
def test_max_pooling_reshape_and_reductions_round_trip(tmp_path, suffix):
    x, y, s = _lenet(sd.ParameterRegistry())
    path = tmp_path / f"lenet{suffix}"
    w = NnpWriter()
    w.add_network("lenet", {"y": y, "s": s}, {"x": x})
    w.add_executor("inference", "lenet")
    w.write(path, include_params=suffix == ".nntxt")
    out = sd.load(path)(x=x.d)
    np.testing.assert_allclose(out["y"], y.d, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(out["s"], s.d, rtol=1e-6, atol=1e-6)


@needs_nnabla
def test_max_pooling_reshape_and_reductions_run_in_nnabla(tmp_path):
    x, y, s = _lenet(sd.ParameterRegistry())
    path = tmp_path / "lenet.nnp"
    sd.save_nnp(path, {"y": y, "s": s}, {"x": x}, network="lenet")
    got = run_in_nnabla(tmp_path, path, "lenet", {"x": x.d}, names=["y"])
    np.testing.assert_allclose(got["out/y"], y.d, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got["out/s"], s.d, rtol=1e-5, atol=1e-5)


@needs_nnabla
def test_every_param_field_written_is_one_of_nnablas(tmp_path):
    types = sorted({t for r in _RULES.values() if isinstance(r.nnp_import, dict)
                    for t, build in r.nnp_import.items()
                    if getattr(build, "nnabla_declaration", None) is not None
                    and build.nnabla_declaration.fields} | {"BatchNormalization", "Reshape"})
    script = ("import sys\nfrom nnabla.utils import nnabla_pb2 as pb\n"
              "names = {f.name for f in pb.Function.DESCRIPTOR.fields}\n"
              "print([n for n in sys.argv[1:] if n not in names])\n")
    proc = subprocess.run([NNABLA, "-c", script] + [param_field(t) for t in types],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_an_op_nnabla_has_no_function_for_is_refused_naming_it(tmp_path):
    x, t = sd.Variable((2, 3)), sd.Variable((2, 3))
    with sd.parameter_scope("head"):
        y = F.cross_entropy_with_softmax(x, t)       # CNTK's; NNabla 1.39 has no such function
    with pytest.raises(ExportError, match="op 'cross_entropy_with_softmax' in scope 'head': "
                                          "NNabla has no function this op is written as "
                                          r"\(CNTK's criterion"):
        sd.save_nnp(tmp_path / "bad.nnp", y, x)
    assert not (tmp_path / "bad.nnp").exists()


def test_an_attribute_nnabla_cannot_hold_is_refused(tmp_path):
    x = sd.Variable((2, 4, 4, 4))
    y = F.batch_normalization(x, None, None, sd.Variable((1, 4, 1, 1)),
                              sd.Variable((1, 4, 1, 1)), output_stat=True)[0]
    with pytest.raises(ExportError, match="batch_normalization.*output_stat=True"):
        sd.save_nnp(tmp_path / "bad.nnp", y, x)


def test_compat_save_module_names():
    from stadyn.compat.nnabla.utils import save as save_module
    for name in ("save", "create_proto", "get_parameters", "save_files",
                 "get_default_file_savers", "FileHandlerContext"):
        assert hasattr(save_module, name), name
    assert list(save_module.get_default_file_savers()) == [".nntxt, .prototxt", ".protobuf",
                                                          ".nnp"]


LEGACY = os.path.join(HERE, "..", "fixtures", "legacy")
CNTK_REF = np.load(os.path.join(LEGACY, "cntk_outputs.npz"))


def _convert_cntk(tmp_path, name):
    """``stadyn convert`` of a CNTK 2.7 fixture to ``.nnp``; (path, inputs, CNTK's outputs)."""
    import contextlib
    import io
    from stadyn.cli import main
    out = tmp_path / (name.split(".")[0] + ".nnp")
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["convert", os.path.join(LEGACY, name), str(out)]) == 0
    ins = [k for k in CNTK_REF.files if k.startswith(name + "/in/")]
    outs = [k for k in CNTK_REF.files if k.startswith(name + "/out/")]
    return out, CNTK_REF[ins[0]], {k.rsplit("/", 1)[1]: CNTK_REF[k] for k in outs}


@pytest.mark.parametrize("name", ["cntk_mlp_bn.model", "cntk_convnet_cifar10.dnn"])
def test_a_cntk_model_converted_to_nnp_computes_what_cntk_did(tmp_path, name):
    path, x, expected = _convert_cntk(tmp_path, name)
    net = sd.load(path)
    (key, want), = expected.items()
    np.testing.assert_allclose(net(**{list(net.inputs)[0]: x})[key], want, rtol=1e-4, atol=1e-5)


@needs_nnabla
@pytest.mark.parametrize("name", ["cntk_mlp_bn.model", "cntk_convnet_cifar10.dnn"])
def test_a_cntk_model_converted_to_nnp_runs_in_nnabla_as_in_cntk(tmp_path, name):
    path, x, expected = _convert_cntk(tmp_path, name)
    got = run_in_nnabla(tmp_path, path, "network", {list(sd.load(path).inputs)[0]: x})
    (key, want), = expected.items()
    np.testing.assert_allclose(got[f"out/{key}"], want, rtol=1e-4, atol=1e-5)


def test_sqrt_is_written_as_nnablas_pow_scalar(tmp_path):
    """NNabla 1.39 has no Sqrt function (its loaders refuse the type); its users write
    ``F.pow_scalar(x, 0.5)``."""
    x = sd.Variable.from_numpy_array(np.array([[0.25, 4.0]], np.float32))
    y = F.sqrt(x)
    sd.save_nnp(tmp_path / "sqrt.nnp", {"y": y}, {"x": x})
    (f,) = read_legacy_model(tmp_path / "sqrt.nnp").networks["network"].functions
    assert (f.type, f.attrs) == ("PowScalar", {"val": 0.5})
    np.testing.assert_allclose(sd.load(tmp_path / "sqrt.nnp")(x=x.d)["y"], [[0.5, 2.0]])


def test_clip_by_value_with_number_bounds_is_written_as_nnabla_writes_it(tmp_path):
    """NNabla's ``F.clip_by_value(x, -0.5, m)`` writes ``MaximumScalar`` for a number bound
    and ``Minimum2`` for a Variable bound (nnabla/functions.py)."""
    x = sd.Variable.from_numpy_array(np.array([[-2.0, 0.3, 2.0]], np.float32))
    m = sd.Variable.from_numpy_array(np.array([[0.4, 0.4, 0.4]], np.float32))
    y = F.clip_by_value(x, -0.5, m)
    y.forward()
    path = tmp_path / "clip.nnp"
    sd.save_nnp(path, {"y": y}, {"x": x, "m": m})
    functions = read_legacy_model(path).networks["network"].functions
    assert [(f.type, f.attrs.get("val")) for f in functions] == [("MaximumScalar", -0.5),
                                                                ("Minimum2", None)]
    np.testing.assert_allclose(sd.load(path)(x=x.d, m=m.d)["y"], [[-0.5, 0.3, 0.4]])
