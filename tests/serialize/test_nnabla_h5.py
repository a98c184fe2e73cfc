"""NNabla parameter files: ``.h5`` in NNabla's layout (and ``.nnp`` archives) load with their
names, order, dtypes and ``need_grad``; Stadyn writes the same layout."""

from __future__ import annotations

import zipfile

import h5py
import numpy as np
import pytest

import stadyn as sd
from stadyn.models import digits_cnn


def _nnabla_h5(path, params):
    """Write ``params`` ({name: (array, need_grad)}) the way nnabla.parameter.save_parameters
    does: a dataset per name (``/`` makes groups) with ``need_grad`` and ``index`` attributes.
    Datasets are created in reverse so the order must come from ``index``."""
    with h5py.File(path, "w") as f:
        items = list(params.items())
        for index, (name, (array, need_grad)) in reversed(list(enumerate(items))):
            f[name] = array
            f[name].attrs["need_grad"] = need_grad
            f[name].attrs["index"] = index


def test_nnabla_h5_parameters_load_with_names_order_and_flags(tmp_path):
    with sd.parameter_registry(sd.ParameterRegistry()) as reference:
        digits_cnn(sd.Variable((2, 1, 8, 8)))
    rng = np.random.default_rng(0)
    params = {name: (rng.normal(size=v.shape).astype(np.float32), v.need_grad)
              for name, v in reference.items()}
    _nnabla_h5(tmp_path / "params.h5", params)

    with sd.parameter_registry(sd.ParameterRegistry()) as registry:
        sd.load_parameters(tmp_path / "params.h5")
        assert list(registry) == list(params)                      # names and order kept
        for name, (array, need_grad) in params.items():
            np.testing.assert_array_equal(registry.get(name).d, array)
            assert registry.get(name).need_grad == need_grad
        # A model built with NNabla's scopes picks the weights up.
        y = digits_cnn(sd.Variable((2, 1, 8, 8)))
        assert list(registry) == list(params)
        y.forward()


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
