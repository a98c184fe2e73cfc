"""NNabla parameter files: ``.h5`` in NNabla's layout (and ``.nnp`` archives) load with their
names, order, dtypes and ``need_grad``; Stadyn writes the same layout."""

from __future__ import annotations

import zipfile
from pathlib import Path

import h5py
import numpy as np
import pytest

import stadyn as sd
from stadyn import functions as F
from stadyn import parametric_functions as PF


FILES = Path(__file__).parent / "nnabla_files"     # written by real NNabla: make_nnabla_files.py
REF = np.load(FILES / "small_cnn_reference.npz")


def _nnabla_h5(path, params):
    """Variants NNabla itself does not write (float64 datasets, a plain dataset): ``params``
    ({name: (array, need_grad)}) in the layout of ``nnabla.save_parameters`` -- a dataset per
    name (``/`` makes groups) with ``need_grad`` and ``index`` attributes, created in reverse so
    the order must come from ``index``.  The layout itself is checked against NNabla's own
    files below."""
    with h5py.File(path, "w") as f:
        items = list(params.items())
        for index, (name, (array, need_grad)) in reversed(list(enumerate(items))):
            f[name] = array
            f[name].attrs["need_grad"] = need_grad
            f[name].attrs["index"] = index


def small_cnn(x):
    """``make_nnabla_files.small_cnn(x, test=True)`` with Stadyn's F and PF."""
    def block(h, maps):
        return F.tanh(PF.batch_normalization(PF.convolution(h, maps, (3, 3), pad=(1, 1)),
                                             batch_stat=False))

    with sd.parameter_scope("cnn"):
        with sd.parameter_scope("conv1"):
            h = block(x, 4)
        with sd.parameter_scope("conv2"):
            h = F.average_pooling(block(h, 6), (2, 2))
        with sd.parameter_scope("fc"):
            h = F.tanh(PF.affine(h, 16))
        with sd.parameter_scope("classifier"):
            return PF.affine(h, 10)


@pytest.mark.parametrize("file", ["small_cnn.h5", "small_cnn.nnp"])
def test_real_nnabla_parameter_files_load_with_names_order_flags_and_values(file):
    """Files NNabla 1.39 wrote (``save_parameters`` and ``utils.save.save``) load with NNabla's
    names, order, values and need_grad; the network built with the same scopes picks them up and
    computes NNabla's inference output."""
    names = [str(n) for n in REF["names"]]
    with sd.parameter_registry(sd.ParameterRegistry()) as registry:
        sd.load_parameters(FILES / file)
        assert list(registry) == names
        for name, need_grad in zip(names, REF["need_grad"]):
            np.testing.assert_array_equal(registry.get(name).d, REF["param/" + name])
            assert registry.get(name).need_grad == bool(need_grad), name
        x = sd.Variable(REF["x"].shape)
        x.d = REF["x"]
        y = small_cnn(x)
        assert list(registry) == names                     # nothing new was created
        y.forward()
        np.testing.assert_allclose(y.d, REF["y"], rtol=1e-4, atol=1e-5)
    read = sd.read_parameter_file(FILES / file)
    assert list(read) == names
    assert [flag for _, flag in read.values()] == [bool(f) for f in REF["need_grad"]]


def test_saved_files_read_back_by_the_nnabla_layout_rules(tmp_path):
    """Stadyn's ``save_parameters`` of NNabla's parameters writes what NNabla wrote: the same
    datasets with the same ``index`` and ``need_grad`` attributes and values."""
    with sd.parameter_registry(sd.ParameterRegistry()):
        sd.load_parameters(FILES / "small_cnn.h5")
        sd.save_parameters(tmp_path / "again.h5")
    with h5py.File(FILES / "small_cnn.h5", "r") as real, h5py.File(tmp_path / "again.h5") as ours:
        def datasets(f):
            out = {}
            f.visititems(lambda n, o: out.__setitem__(n, o) if isinstance(o, h5py.Dataset)
                         else None)
            return out
        real_sets, our_sets = datasets(real), datasets(ours)
        assert set(real_sets) == set(our_sets)
        for name, d in real_sets.items():
            np.testing.assert_array_equal(our_sets[name][()], d[()])
            assert our_sets[name].dtype == d.dtype
            assert int(our_sets[name].attrs["index"]) == int(d.attrs["index"]), name
            assert bool(our_sets[name].attrs["need_grad"]) == bool(d.attrs["need_grad"]), name


def test_loading_into_existing_parameters_and_shape_mismatch(tmp_path):
    _nnabla_h5(tmp_path / "p.h5", {"fc/affine/W": (np.ones((3, 2), np.float64), True),
                                   "fc/affine/b": (np.zeros(2, np.float32), True)})
    with sd.parameter_registry(sd.ParameterRegistry()):
        w = sd.get_parameter_or_create("fc/affine/W", (3, 2))
        sd.load_parameters(tmp_path / "p.h5")
        assert sd.get_parameters()["fc/affine/W"] is w and w.d.sum() == 6
        assert w.dtype == np.float32
    with sd.parameter_registry(sd.ParameterRegistry()), sd.parameter_scope("net"):
        sd.get_parameter_or_create("fc/affine/W", (2, 2))
        with pytest.raises(sd.ParameterError, match="'net/fc/affine/W' has shape"):
            sd.load_parameters(tmp_path / "p.h5")


def test_datasets_without_an_index_come_last_in_file_order(tmp_path):
    with h5py.File(tmp_path / "p.h5", "w") as f:
        f["b"] = np.zeros(1, np.float32)
        f["a"] = np.zeros(1, np.float32)
        f["z"] = np.zeros(1, np.float32)
        f["z"].attrs["index"] = 0
        f["z"].attrs["need_grad"] = False
    read = sd.read_parameter_file(tmp_path / "p.h5")
    assert list(read) == ["z", "a", "b"] and read["z"][1] is False and read["a"][1] is True


@pytest.mark.usefixtures("fresh_parameters")
def test_save_writes_nnabla_layout_keeping_dtypes(tmp_path):
    sd.get_parameter_or_create("conv/W", (2, 2), np.ones((2, 2)))
    sd.get_parameter_or_create("bn/mean", (1, 2), np.zeros((1, 2)), need_grad=False)
    sd.save_parameters(tmp_path / "out.h5")
    with h5py.File(tmp_path / "out.h5", "r") as f:
        assert f["conv/W"].dtype == np.float32 and bool(f["conv/W"].attrs["need_grad"])
        assert int(f["bn/mean"].attrs["index"]) == 1 and not f["bn/mean"].attrs["need_grad"]


def test_saved_file_is_nnabla_139s_byte_for_byte(tmp_path):
    # small_cnn.h5 as NNabla 1.39's save_parameters wrote it, loaded and saved again: the same
    # bytes (3eece400's create_dataset laid the file out 24 bytes shorter)
    with sd.parameter_registry(sd.ParameterRegistry()):
        sd.load_parameters(FILES / "small_cnn.h5")
        sd.save_parameters(tmp_path / "again.h5")
    assert (tmp_path / "again.h5").read_bytes() == (FILES / "small_cnn.h5").read_bytes()


def test_nnp_parameter_h5_is_nnabla_139s_byte_for_byte():
    from stadyn.serialize._nnp_save import parameter_bytes
    with h5py.File(FILES / "small_cnn.h5", "r") as f:
        found = []
        f.visititems(lambda name, obj: found.append(
            (int(obj.attrs["index"]), name, obj[()], bool(obj.attrs["need_grad"])))
            if isinstance(obj, h5py.Dataset) else None)
    params = {name: (value, need) for _, name, value, need in sorted(found, key=lambda t: t[0])}
    with zipfile.ZipFile(FILES / "small_cnn.nnp") as z:
        assert parameter_bytes(params, ".h5") == z.read("parameter.h5")


def test_nnp_archives_are_read_for_their_h5_parameters(tmp_path):
    _nnabla_h5(tmp_path / "parameter.h5", {"w": (np.arange(3, dtype=np.float32), True)})
    with zipfile.ZipFile(tmp_path / "m.nnp", "w") as zf:
        zf.writestr("nnp_version.txt", "0.1\n")
        zf.writestr("network.nntxt", "")
        zf.write(tmp_path / "parameter.h5", "parameter.h5")
    assert sd.read_parameter_file(tmp_path / "m.nnp")["w"][0].tolist() == [0.0, 1.0, 2.0]
    with zipfile.ZipFile(tmp_path / "pb.nnp", "w") as zf:
        zf.writestr("parameter.protobuf", b"")
    with pytest.raises(sd.ModelFileError, match="protobuf"):
        sd.read_parameter_file(tmp_path / "pb.nnp")


def test_bad_h5_files_are_model_file_errors(tmp_path):
    (tmp_path / "junk.h5").write_bytes(b"not hdf5")
    with pytest.raises(sd.ModelFileError, match="junk.h5"):
        sd.load_parameters(tmp_path / "junk.h5")
    with h5py.File(tmp_path / "s.h5", "w") as f:
        f["name"] = "a string"
    with pytest.raises(sd.ModelFileError, match="'name' holds"):
        sd.read_parameter_file(tmp_path / "s.h5")
