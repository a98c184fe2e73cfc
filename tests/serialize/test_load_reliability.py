"""Model and parameter files: what ``save`` writes ``load`` reads (also after the batch size
changed), a failed load changes nothing, what a file declares is bounded before anything is
allocated, and a malformed file is one clear error naming it.

The hostile files themselves, run through every loader under a time and memory limit, are in
``tests/hostile/test_model_corpus.py``.
"""

from __future__ import annotations

import zipfile

import h5py
import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.functions as F
import stadyn.parametric_functions as PF
from stadyn.serialize import ExportError, model_info
from test_model_file import _network, _small, _with_network


def _softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _mlp():
    """x (3, 4) -> affine 5 -> relu -> affine 2 -> softmax, with its NumPy reference."""
    registry = sd.ParameterRegistry()
    with sd.parameter_registry(registry):
        x = sd.Variable((3, 4))
        h = PF.affine(x, 5, name="fc1")
        y = F.softmax(PF.affine(F.relu(h), 2, name="fc2"))
    p = {k: v.d.copy() for k, v in registry.items()}

    def reference(a):
        hidden = np.maximum(a @ p["fc1/affine/W"] + p["fc1/affine/b"], 0)
        return _softmax(hidden @ p["fc2/affine/W"] + p["fc2/affine/b"])
    return x, h, y, reference


# ---------------------------------------------------------------------------------------------
# Save after a batch-size change
# ---------------------------------------------------------------------------------------------
def test_a_model_saved_after_a_batch_size_change_loads(tmp_path):
    x, h, y, reference = _mlp()
    rng = np.random.default_rng(0)
    x.d = rng.normal(size=(3, 4))
    y.forward()
    b = rng.normal(size=(2, 4)).astype(np.float32)
    x.data = torch.from_numpy(b)
    y.forward(clear_no_need_grad=True)          # h keeps nothing of this run
    assert h.shape == (2, 5)                     # not the (3, 5) buffer of the first run
    sd.save(tmp_path / "m.stadyn", y, x)
    net = sd.load(tmp_path / "m.stadyn")
    assert net.inputs["x"].shape == (2, 4)
    np.testing.assert_allclose(net(x=b)["y"], reference(b), rtol=1e-5, atol=1e-6)


def test_a_graph_resized_without_a_forward_saves_its_new_shapes(tmp_path):
    x, h, y, reference = _mlp()
    y.forward()
    x.data = torch.zeros(6, 4)                   # resized; saved before any forward
    sd.save(tmp_path / "m.stadyn", y, x)
    assert model_info(tmp_path / "m.stadyn").outputs == {"y": ((6, 2), "float32")}
    a = np.random.default_rng(1).normal(size=(6, 4)).astype(np.float32)
    np.testing.assert_allclose(sd.load(tmp_path / "m.stadyn")(x=a)["y"], reference(a),
                               rtol=1e-5, atol=1e-6)


def test_cntk_eval_at_two_batch_sizes_then_save_round_trips(tmp_path):
    import stadyn.compat.cntk as C
    x = C.input_variable(4)
    z = C.layers.Dense(3)(C.layers.Dense(5, activation=C.relu)(x))
    a = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    want = z.eval({x: a[:2]})
    z.eval({x: a})
    C.softmax(z).eval({x: a[:2]})                # z is an intermediate of this run
    z.save(str(tmp_path / "z.model"))
    net = sd.load(tmp_path / "z.model")       # a CNTK v2 file: CNTK's uids name x and z
    [name] = net.inputs
    [got] = net(**{name: a[:2]}).values()
    np.testing.assert_allclose(got, want, rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# No outputs
# ---------------------------------------------------------------------------------------------
def test_save_refuses_a_graph_without_outputs(tmp_path):
    with pytest.raises(ExportError, match="no outputs"):
        sd.save(tmp_path / "m.stadyn", [])
    assert not (tmp_path / "m.stadyn").exists()


def test_a_model_file_without_outputs_is_refused_at_load(tmp_path):
    path, _, _ = _small(tmp_path)
    network = _network(path)
    network["outputs"] = []
    bad = _with_network(path, str(tmp_path / "none.stadyn"), network)
    with pytest.raises(sd.ModelFileError, match=r"none\.stadyn: network.json: the model has no "
                                                "outputs"):
        sd.load(bad)


def test_info_on_a_model_whose_inputs_are_not_a_list(tmp_path, capsys):
    path, _, _ = _small(tmp_path)
    network = _network(path)
    network["inputs"] = 5
    bad = _with_network(path, str(tmp_path / "five.stadyn"), network)
    with pytest.raises(sd.ModelFileError, match=r"five\.stadyn: network.json: 'inputs' must be "
                                                "a list"):
        model_info(bad)
    from stadyn.cli import main
    assert main(["info", bad]) == 1
    err = capsys.readouterr().err
    assert "five.stadyn" in err and "Traceback" not in err


# ---------------------------------------------------------------------------------------------
# A failed load changes nothing
# ---------------------------------------------------------------------------------------------
def _registry_like(path, leave_out=()):
    """A registry holding the model's parameters (but ``leave_out``) with other values (all
    7.0), as a user's model would before loading trained weights into it."""
    registry = sd.ParameterRegistry()
    for name, var in sd.load(path).registry.items():
        if name not in leave_out:
            registry.set(name, sd.Variable.from_numpy_array(np.full(var.shape, 7.0, np.float32)))
    return registry


def test_a_failed_load_into_a_registry_leaves_it_as_it_was(tmp_path):
    path, _, _ = _small(tmp_path)
    registry = _registry_like(path, leave_out=["fc/affine/b"])   # the load would create it
    network = _network(path)
    network["nodes"][-1]["attrs"]["base_axis"] = 9  # the last node fails, after every parameter
    bad = _with_network(path, str(tmp_path / "bad.stadyn"), network)
    with pytest.raises(sd.ModelFileError, match="bad.stadyn: network.json: node"):
        sd.load(bad, registry=registry)
    assert "fc/affine/b" not in registry and len(registry) == 7
    for name, var in registry.items():
        assert np.all(var.d == 7.0), name
    net = sd.load(path, registry=registry)          # the good file still loads into it
    assert "fc/affine/b" in registry and not np.any(registry.get("fc/affine/W").d == 7.0)
    assert net.registry is registry


@pytest.mark.parametrize("suffix", [".safetensors", ".h5"])
def test_a_failed_load_parameters_assigns_nothing(tmp_path, suffix):
    path = str(tmp_path / ("p" + suffix))
    sd.save_parameters(path, {"a": sd.Variable.from_numpy_array(np.ones((2, 3))),
                              "new": sd.Variable.from_numpy_array(np.ones(4)),
                              "b": sd.Variable.from_numpy_array(np.ones(5))})
    registry = sd.ParameterRegistry()
    registry.set("a", sd.Variable.from_numpy_array(np.zeros((2, 3))))
    registry.set("b", sd.Variable.from_numpy_array(np.zeros(4)))      # the file's b is (5,)
    with pytest.raises(sd.ParameterError, match=f"p{suffix}: parameter 'b' has shape"):
        sd.load_parameters(path, registry=registry)
    assert np.all(registry.get("a").d == 0) and "new" not in registry


# ---------------------------------------------------------------------------------------------
# Bounded before allocating
# ---------------------------------------------------------------------------------------------
def test_what_a_model_file_declares_is_bounded_and_the_limit_can_be_raised(tmp_path):
    path, x, _ = _small(tmp_path)                  # input (3, 2, 5, 5) float32: 600 bytes
    with pytest.raises(sd.ModelFileError, match=r"small\.stadyn: member .* declares [\d,]+ "
                                                r"bytes.*load limit of 500 bytes"):
        sd.load(path, max_bytes=500)
    size = sum(i.file_size for i in zipfile.ZipFile(path).infolist())
    with pytest.raises(sd.ModelFileError, match=r"input 'x' of shape \(3, 2, 5, 5\) float32\) "
                                                r"declares 600 bytes"):
        sd.load(path, max_bytes=size + 599)
    assert sd.load(path, max_bytes=size + 600).inputs["x"].shape == (3, 2, 5, 5)


def test_the_limit_comes_from_the_environment(tmp_path, monkeypatch):
    path, _, _ = _small(tmp_path)
    monkeypatch.setenv("STADYN_MAX_LOAD_BYTES", "100")
    with pytest.raises(sd.ModelFileError, match="load limit of 100 bytes"):
        sd.load(path)
    monkeypatch.setenv("STADYN_MAX_LOAD_BYTES", "lots")
    with pytest.raises(sd.ModelFileError, match="STADYN_MAX_LOAD_BYTES='lots' is not a number"):
        sd.load(path)


def test_an_h5_dataset_declaring_2_to_the_40_elements_is_refused(tmp_path):
    path = str(tmp_path / "huge.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("w", shape=(1 << 40,), dtype="f4", chunks=(1024,))
    with pytest.raises(sd.ModelFileError, match=r"huge\.h5: dataset 'w' \(1099511627776,\) "
                                                r"float32 declares 4,398,046,511,104 bytes"):
        sd.load_parameters(path, registry=sd.ParameterRegistry())


def test_an_nnp_member_that_inflates_too_much_is_refused(tmp_path):
    path = str(tmp_path / "bomb.nnp")
    zeros = bytes(1 << 20)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open("parameter.h5", "w", force_zip64=True) as member:
            for _ in range(256):                          # 256 MiB of zeros: ~256 KiB stored
                member.write(zeros)
    with pytest.raises(sd.ModelFileError, match=r"bomb\.nnp: parameter.h5 declares 268,435,456 "
                                                r"bytes from [\d,]+ compressed: an implausible "
                                                "compression ratio"):
        sd.read_parameter_file(path)


# ---------------------------------------------------------------------------------------------
# Malformed parameter files
# ---------------------------------------------------------------------------------------------
def _safetensors_with(path, **meta):
    from safetensors.numpy import save_file
    save_file({"a": np.ones(2, np.float32), "b": np.ones(3, np.float32)}, path, metadata=meta)
    return path


@pytest.mark.parametrize("meta, message", [
    ({"need_grad": "{"}, "metadata 'need_grad' is not valid JSON"),
    ({"need_grad": "[1, 2]"}, "metadata 'need_grad' must map names to true/false"),
    ({"need_grad": '{"a": "yes"}'}, "metadata 'need_grad' must map names to true/false"),
    ({"order": "{}"}, "metadata 'order' must be a list of names"),
    ({"order": '["a", "ghost"]'}, "metadata 'order' does not list exactly the file's tensors"),
    ({"order": "[1, 2]"}, "metadata 'order' must be a list of names"),
])
def test_bad_parameter_file_metadata_is_a_model_file_error(tmp_path, meta, message):
    path = _safetensors_with(str(tmp_path / "p.safetensors"), format="stadyn-parameters", **meta)
    with pytest.raises(sd.ModelFileError, match=r"p\.safetensors: " + message):
        sd.load_parameters(path, registry=sd.ParameterRegistry())


@pytest.mark.parametrize("attr, value, message", [
    ("index", "first", "attribute 'index' must be an integer, not 'first'"),
    ("index", np.array([1, 2]), "attribute 'index' must be an integer"),
    ("index", 1.5, "attribute 'index' must be an integer"),
    ("need_grad", np.array([True, False]), "attribute 'need_grad' must be true or false"),
    ("need_grad", "yes", "attribute 'need_grad' must be true or false"),
])
def test_bad_h5_attributes_are_model_file_errors(tmp_path, attr, value, message):
    path = str(tmp_path / "p.h5")
    with h5py.File(path, "w") as f:
        f["fc/W"] = np.ones((2, 2), np.float32)
        f["fc/W"].attrs["index"] = 0
        f["fc/W"].attrs[attr] = value
    with pytest.raises(sd.ModelFileError, match=r"p\.h5: dataset 'fc/W': " + message):
        sd.load_parameters(path, registry=sd.ParameterRegistry())


def test_h5_need_grad_and_index_in_nnablas_own_types_still_load(tmp_path):
    path = str(tmp_path / "p.h5")
    with h5py.File(path, "w") as f:
        for k, name in enumerate(["b", "a"]):
            f[name] = np.full(2, k, np.float32)
            f[name].attrs["index"] = np.int64(k)
            f[name].attrs["need_grad"] = np.bool_(k == 0)
    params = sd.read_parameter_file(path)
    assert list(params) == ["b", "a"] and [need for _, need in params.values()] == [True, False]
