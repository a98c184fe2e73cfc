"""Stadyn model files: round trips (in a fresh process, without the model code), the version-1
fixture, training a loaded model further, and every way a damaged or hostile file must fail."""

from __future__ import annotations

import fractions
import json
import math
import os
import pickle
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import stadyn as sd
import stadyn.functions as F
import stadyn.parametric_functions as PF
import stadyn.solvers as S
from stadyn.models import cifar_convnet, digits_cnn
from stadyn.serialize import ExportError, model_info
from stadyn.serialize._model_format import _decode, _encode

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "models")


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------
def _digits(rng):
    """The NNabla tutorial's digits CNN at batch 4: the training graph (batch statistics) and
    the test graph (running statistics) over shared parameters, running statistics made
    non-trivial."""
    registry = sd.ParameterRegistry()
    with sd.parameter_registry(registry):
        x = sd.Variable((4, 1, 8, 8))
        train, test = digits_cnn(x), digits_cnn(x, test=True)
    for name, var in registry.items():
        if name.endswith("/mean"):
            var.d = rng.normal(size=var.shape) * 0.1
        elif name.endswith("/var"):
            var.d = rng.uniform(0.5, 2.0, size=var.shape)
    x.d = rng.normal(size=x.shape)
    return x, {"logits": train, "logits_test": test}


def _convnet(rng):
    """CNTK's CIFAR-10 ConvNet at batch 2 (CNTK layers: auto-padding, dropout)."""
    with sd.parameter_registry(sd.ParameterRegistry()):
        x = sd.Variable((2, 3, 32, 32))
        y = cifar_convnet(x)
    x.d = rng.uniform(0, 255, size=x.shape)
    return x, {"y": y}


def _small(tmp_path, name="small.stadyn"):
    """A small model with a phase-dependent batch norm and dropout, saved; returns the path,
    the input Variable and the outputs."""
    with sd.parameter_registry(sd.ParameterRegistry()):
        x = sd.Variable((3, 2, 5, 5))
        h = F.relu(PF.batch_normalization(PF.convolution(x, 3, (3, 3)), batch_stat=None))
        y = PF.affine(F.dropout(h, 0.5, train_only=True), 4, name="fc")
    x.d = np.random.default_rng(1).normal(size=x.shape)
    path = str(tmp_path / name)
    sd.save(path, {"y": y}, {"x": x})
    return path, x, y


def _rewrite(path, out, replace=None, add=None, drop=()):
    """A copy of the model file with members replaced, added or dropped (CRCs stay valid: this
    is a tampered but well-formed archive)."""
    replace, add = dict(replace or {}), dict(add or {})
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            if info.filename in drop:
                continue
            data = replace.get(info.filename, src.read(info.filename))
            dst.writestr(info.filename, data)
        for name, data in add.items():
            dst.writestr(name, data)
    return out


def _network(path):
    with zipfile.ZipFile(path) as zf:
        return json.loads(zf.read("network.json"))


def _with_network(path, out, network):
    return _rewrite(path, out, {"network.json": json.dumps(network).encode()})


# ---------------------------------------------------------------------------------------------
# Round trips
# ---------------------------------------------------------------------------------------------
_FRESH = textwrap.dedent("""
    import sys
    import numpy as np, torch
    torch.set_num_threads(int(sys.argv[1]))
    import stadyn as sd
    for model, data, out in zip(sys.argv[2::3], sys.argv[3::3], sys.argv[4::3]):
        net = sd.load(model)
        inputs = dict(np.load(data))
        np.savez(out, **net(**inputs))
    leaked = sorted(m for m in sys.modules if m.startswith(("stadyn.models", "stadyn.layers")))
    assert not leaked, leaked
    print("ok")
""")


def test_both_reference_models_round_trip_in_a_fresh_process(tmp_path):
    """Saved here, loaded by a process that imports stadyn but no model code: equal outputs."""
    rng = np.random.default_rng(0)
    args, expected = [str(torch.get_num_threads())], {}
    for name, make in (("digits", _digits), ("convnet", _convnet)):
        x, outputs = make(rng)
        path = tmp_path / f"{name}.stadyn"
        sd.save(path, outputs, {"x": x})
        with sd.training(False):
            # as Network.__call__ runs it (buffers cleared): the same plan, so the same layout
            # (a plan that keeps every intermediate stays NCHW; see graph/_layout.py)
            sd.forward_all(list(outputs.values()), clear_buffer=True)
        expected[name] = {k: v.d.copy() for k, v in outputs.items()}
        np.savez(tmp_path / f"{name}_in.npz", x=x.d)
        args += [str(path), str(tmp_path / f"{name}_in.npz"), str(tmp_path / f"{name}_out.npz")]
    done = subprocess.run([sys.executable, "-c", _FRESH, *args], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    for name, want in expected.items():
        got = np.load(tmp_path / f"{name}_out.npz")
        assert sorted(got.files) == sorted(want)
        for key, value in want.items():
            np.testing.assert_array_equal(got[key], value, err_msg=f"{name}/{key}")


def test_load_keeps_names_scopes_flags_and_parameters(tmp_path):
    with sd.parameter_registry(sd.ParameterRegistry()) as registry:
        x = sd.Variable((2, 1, 8, 8))
        y = digits_cnn(x, test=True)
    y.persistent = True
    sd.save(tmp_path / "m.stadyn", {"scores": y}, {"image": x})
    net = sd.load(tmp_path / "m.stadyn")
    assert list(net.inputs) == ["image"] and list(net.outputs) == ["scores"]
    assert list(net.parameters) == list(registry)
    for name, var in registry.items():
        loaded = net.parameters[name]
        assert loaded.shape == var.shape and loaded.need_grad == var.need_grad
        np.testing.assert_array_equal(loaded.d, var.d)
    assert net.outputs["scores"].persistent
    nodes = sd.graph.topological_nodes([net.outputs["scores"]])
    assert nodes[0].scope == "cnn/conv1/conv" and nodes[0].spec.name == "convolution"
    assert net.get_parameters().keys() == {k for k, v in registry.items() if v.need_grad}
    assert sd.get_parameters(grad_only=False).keys().isdisjoint(net.parameters)


def test_phase_dependent_ops_survive_the_round_trip(tmp_path):
    path, x, y = _small(tmp_path)
    net = sd.load(path)
    with sd.training(False):
        y.forward()
    np.testing.assert_array_equal(net(x=x.d)["y"], y.d)
    # Training phase: batch statistics and dropout; the running statistics move.
    bn_mean = net.parameters["bn/mean"]
    before = bn_mean.d.copy()
    torch.manual_seed(0)
    a = net.run({"x": x.d}, training=True)["y"]
    torch.manual_seed(0)
    b = net.run({"x": x.d}, training=True)["y"]
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, net(x=x.d)["y"])
    assert not np.array_equal(before, bn_mean.d)


def test_a_loaded_model_trains_further_and_restores_its_solver(tmp_path):
    rng = np.random.default_rng(3)
    with sd.parameter_registry(sd.ParameterRegistry()) as registry:
        x = sd.Variable((8, 1, 8, 8))
        h = F.tanh(PF.batch_normalization(PF.convolution(x, 8, (3, 3), pad=(1, 1)),
                                          batch_stat=None))
        logits = PF.affine(h, 10, name="classifier")
    params = {k: v for k, v in registry.items() if k.startswith("classifier/")}
    solver = S.Momentum(lr=0.01)
    solver.set_parameters(params)
    for v in params.values():
        v.grad = torch.ones_like(v.data)
    solver.update()
    sd.save(tmp_path / "m.stadyn", {"logits": logits}, {"x": x}, solver=solver)

    net = sd.load(tmp_path / "m.stadyn")
    t = sd.Variable((8, 1))
    loss = F.mean(F.softmax_cross_entropy(net.outputs["logits"], t))
    sgd = S.Sgd(lr=0.05)
    sgd.set_parameters(net.get_parameters())
    net.inputs["x"].d = rng.normal(size=(8, 1, 8, 8))
    t.d = rng.integers(0, 10, size=(8, 1))
    losses = []
    for _ in range(4):
        loss.forward(clear_no_need_grad=True)
        losses.append(float(loss.d))
        sgd.zero_grad()
        loss.backward(clear_buffer=True)
        sgd.update()
    assert losses[-1] < losses[0], losses

    restored = S.Momentum(lr=0.01)
    restored.set_parameters({k: net.parameters[k] for k in params})
    net.load_solver_states(restored)
    for name, state in solver.get_states().items():
        got = restored.get_states()[name]
        assert got.t == state.t == 1
        np.testing.assert_array_equal(got.pstate["m"].d, state.pstate["m"].d)
    assert "solver state" in str(model_info(tmp_path / "m.stadyn"))


def test_load_into_a_given_registry_overwrites_in_place(tmp_path):
    path, x, y = _small(tmp_path)
    registry = sd.ParameterRegistry()
    first = sd.load(path, registry=registry)
    w = registry.get("fc/affine/W")
    w.d = 0.0
    second = sd.load(path, registry=registry)
    assert registry.get("fc/affine/W") is w and np.abs(w.d).sum() > 0
    assert second.parameters["fc/affine/W"] is first.parameters["fc/affine/W"]


def test_batch_size_rebuilds_the_graph(tmp_path):
    path, x, y = _small(tmp_path)
    net = sd.load(path, batch_size=5)
    assert net.inputs["x"].shape == (5, 2, 5, 5) and net.outputs["y"].shape == (5, 4)
    data = np.concatenate([x.d, x.d[:2]])
    got = net(x=data)["y"]
    np.testing.assert_allclose(got[:3], sd.load(path)(x=x.d)["y"], rtol=1e-6, atol=1e-6)


def test_the_version_1_fixture_loads_and_gives_its_recorded_outputs():
    path = os.path.join(FIXTURES, "v1_small_cnn.stadyn")
    with zipfile.ZipFile(path) as zf:
        assert json.loads(zf.read("format.json"))["version"] == 1
    recorded = np.load(os.path.join(FIXTURES, "v1_small_cnn.npz"))
    net = sd.load(path)
    out = net(x=recorded["x"])
    assert list(out) == ["logits", "probs"]
    for key in out:
        np.testing.assert_allclose(out[key], recorded[key], rtol=1e-5, atol=1e-6)
    assert net.parameters["small/shift"].need_grad
    assert "small/bn/mean" in net.parameters and not net.parameters["small/bn/mean"].need_grad


def test_save_refuses_gradient_graphs_and_unstorable_attributes(tmp_path):
    x = sd.Variable.from_numpy_array(np.ones(3), need_grad=True)
    dx, = sd.grad(F.sum(x * x), x)
    with pytest.raises(ExportError, match="gradient"):
        sd.save(tmp_path / "g.stadyn", dx, x)
    y = F.constant(val=fractions.Fraction(1, 3), shape=(2,))
    with pytest.raises(ExportError, match=r"'constant'.*'val' holds a Fraction"):
        sd.save(tmp_path / "o.stadyn", y)
    assert not (tmp_path / "o.stadyn").exists()


# ---------------------------------------------------------------------------------------------
# Attribute encoding
# ---------------------------------------------------------------------------------------------
_scalars = st.one_of(st.none(), st.booleans(), st.integers(-2 ** 62, 2 ** 62),
                     st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8))
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.lists(inner, max_size=4).map(tuple)), max_leaves=12)


def _same(a, b):
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    return type(a) is type(b) and a == b


@settings(max_examples=100, deadline=None)
@given(_values)
def test_attribute_values_round_trip_through_strict_json(value):
    text = json.dumps(_encode(value), allow_nan=False)
    assert _same(_decode(json.loads(text), "test"), value)


def test_numpy_attribute_values_are_normalised():
    assert _encode(np.float32(0.5)) == 0.5 and _encode(np.int64(3)) == 3
    arr = np.arange(6, dtype=np.int32).reshape(2, 3)
    back = _decode(json.loads(json.dumps(_encode(arr))), "test")
    assert back.dtype == np.int32 and np.array_equal(back, arr)


# ---------------------------------------------------------------------------------------------
# Damaged and hostile files
# ---------------------------------------------------------------------------------------------
def test_a_truncated_file_is_a_model_file_error(tmp_path):
    path, _, _ = _small(tmp_path)
    data = open(path, "rb").read()
    for keep in (len(data) // 2, len(data) - 10, 40, 0):
        cut = tmp_path / f"cut{keep}.stadyn"
        cut.write_bytes(data[:keep])
        with pytest.raises(sd.ModelFileError, match=r"cut\d+\.stadyn: .*(zip|truncated)"):
            sd.load(cut)


def test_a_flipped_byte_in_the_parameters_fails_the_crc(tmp_path):
    path, _, _ = _small(tmp_path)
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("parameters.safetensors")
    data = bytearray(open(path, "rb").read())
    start = info.header_offset + 30 + len(info.filename.encode())
    data[start + info.compress_size // 2] ^= 0x40
    bad = tmp_path / "bad.stadyn"
    bad.write_bytes(bytes(data))
    with pytest.raises(sd.ModelFileError, match="parameters.safetensors is damaged.*CRC"):
        sd.load(bad)


def test_any_flipped_byte_fails_cleanly_or_changes_nothing(tmp_path):
    path, x, _ = _small(tmp_path)
    want = sd.load(path)(x=x.d)["y"]
    data = open(path, "rb").read()
    for pos in range(0, len(data), max(1, len(data) // 150)):
        flipped = bytearray(data)
        flipped[pos] ^= 0x5A
        bad = tmp_path / "flip.stadyn"
        bad.write_bytes(bytes(flipped))
        try:
            got = sd.load(bad)(x=x.d)["y"]
        except sd.ModelFileError:
            continue
        np.testing.assert_array_equal(got, want, err_msg=f"byte {pos} changed the model")


@pytest.mark.parametrize("edit, message", [
    (lambda n: n["nodes"][0].update(op="os_system"), "unknown op 'os_system'"),
    (lambda n: n["nodes"][0].update(op="grad"), "unknown op 'grad'"),
    (lambda n: n["variables"][0].update(shape="2,2"), "variable 0: bad shape"),
    (lambda n: n["variables"][0].update(shape=[2 ** 20, 2 ** 20]), "implausibly large"),
    (lambda n: n["variables"][0].update(dtype="object"), "variable 0: bad dtype"),
    (lambda n: n["variables"][0].update(need_grad="yes"), "'need_grad' must be a bool"),
    (lambda n: n["nodes"][0]["attrs"].update(pad=["one", 1]), "convolution.*cannot apply.*'one'"),
    (lambda n: n["nodes"][0]["attrs"].update(pad=[2, 2]), "the op gives shape"),
    (lambda n: n["nodes"][0]["attrs"].update(evil=1), r"unknown attribute\(s\) \['evil'\]"),
    (lambda n: n["nodes"][0]["attrs"].update(pad={"__reduce__": "os.system"}),
     "not a valid attribute value"),
    (lambda n: n["nodes"][0].update(inputs=[99, 1, 2]), "bad variable id 99"),
    (lambda n: n["nodes"][0].update(inputs=[n["nodes"][1]["outputs"][0], 1, 2]),
     "not computed yet"),
    (lambda n: n["variables"][n["nodes"][0]["outputs"][0]].update(shape=[3, 3, 4, 4]),
     "the op gives shape"),
    (lambda n: n["variables"][1].update(shape=[9, 9]), "parameters.safetensors holds"),
    (lambda n: n["parameters"].append("ghost"), "does not hold exactly the parameters"),
    (lambda n: n.update(extra=[]), "expected the keys"),
    (lambda n: n["outputs"].append(["y", 0]), "output 'y' twice"),
])
def test_tampered_networks_are_model_file_errors(tmp_path, edit, message):
    path, _, _ = _small(tmp_path)
    network = _network(path)
    edit(network)
    bad = _with_network(path, str(tmp_path / "bad.stadyn"), network)
    with pytest.raises(sd.ModelFileError, match=r"bad\.stadyn: .*" + message):
        sd.load(bad)


@pytest.mark.parametrize("members, message", [
    ({"replace": {"network.json": pickle.dumps({"nodes": []})}}, "network.json is not valid JSON"),
    ({"add": {"payload.pkl": pickle.dumps(print)}}, r"unexpected member\(s\) \['payload.pkl'\]"),
    ({"drop": ("parameters.safetensors",)}, "missing member"),
    ({"replace": {"format.json": b'{"format": "stadyn-model", "version": 99}'}},
     "format version 99 was written by a newer Stadyn"),
    ({"replace": {"format.json": b'{"format": "nnp", "version": 1}'}}, "expected 'stadyn-model'"),
    ({"replace": {"format.json": b'{"format": "stadyn-model", "version": 1, "version": 2}'}},
     "duplicate key 'version'"),
    ({"replace": {"network.json": b'{"variables": [NaN]}'}}, "non-standard JSON constant NaN"),
    ({"replace": {"parameters.safetensors": b"\x80\x04K\x01."}}, "parameters.safetensors"),
])
def test_hostile_archives_are_model_file_errors(tmp_path, members, message):
    path, _, _ = _small(tmp_path)
    bad = _rewrite(path, str(tmp_path / "bad.stadyn"), **members)
    with pytest.raises(sd.ModelFileError, match=message):
        sd.load(bad)


def test_not_a_zip_and_missing_files(tmp_path):
    (tmp_path / "p.stadyn").write_bytes(pickle.dumps({"a": 1}))
    with pytest.raises(sd.ModelFileError, match="not a zip archive"):
        sd.load(tmp_path / "p.stadyn")
    with pytest.raises(sd.ModelFileError, match="no such model file"):
        sd.load(tmp_path / "missing.stadyn")
    (tmp_path / "folder.stadyn").mkdir()
    with pytest.raises(sd.ModelFileError, match="folder.stadyn: is a folder"):
        sd.load(tmp_path / "folder.stadyn")


def test_info_reads_a_model_file_without_building_it(tmp_path):
    path, _, _ = _small(tmp_path)
    info = model_info(path)
    assert info.inputs == {"x": ((3, 2, 5, 5), "float32")}
    assert info.outputs == {"y": ((3, 4), "float32")}
    assert info.op_counts == {"convolution": 1, "batch_normalization": 1, "relu": 1,
                              "dropout": 1, "affine": 1}
    assert info.n_parameters == 3 * 2 * 9 + 3 + 4 * 3 + 27 * 4 + 4
    assert info.n_parameter_tensors == 8
    assert str(info).splitlines()[0] == "Stadyn model file (format version 1)"
    net_info = sd.load(path).info()
    assert net_info.op_counts == info.op_counts and net_info.n_parameters == info.n_parameters


def test_a_truncated_model_file_is_described_as_one(tmp_path):
    path, _, _ = _small(tmp_path)
    data = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(data[: len(data) // 2])
    assert sd.serialize.is_model_file(path)
    # by its first bytes, not by zipfile.is_zipfile (which reads the end): not taken for ONNX
    with pytest.raises(sd.ModelFileError, match="not a Stadyn model file: not a zip archive or "
                                                "truncated"):
        model_info(path)
