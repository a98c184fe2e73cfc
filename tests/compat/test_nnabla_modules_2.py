"""What the harness cases of ``compat_cases/nnabla_modules_2.py`` cannot compare with NNabla
1.39: the errors Stadyn gives where NNabla's differ or cannot run here."""

import os
import sys

import numpy as np
import pytest

import stadyn as sd
import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.experimental.parametric_function_classes as PFC
import stadyn.compat.nnabla.experimental.viewers as V
import stadyn.compat.nnabla.functions as F


def test_simple_graph_without_the_graphviz_package_is_nnablas_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)      # import graphviz fails
    y = F.relu(nn.Variable((2, 3)))
    with pytest.raises(ImportError, match="Install graphviz. `pip install graphviz.`"):
        V.SimpleGraph().create_graphviz_digraph(y)


class _Net(PFC.Module):
    def __init__(self):
        self.fc = PFC.Affine(3, 2)
        self.bn = PFC.BatchNorm1d(2)


def test_pfc_load_without_a_parameter_names_file_and_parameter_and_sets_nothing(tmp_path):
    with sd.parameter_registry(sd.ParameterRegistry()):
        path = str(tmp_path / "grads_only.h5")
        saved = _Net()
        saved.fc.W.d = np.arange(6, dtype=np.float32).reshape(3, 2)
        saved.save_parameters(path, grad_only=True)     # no running statistics in the file
        other = _Net()
        before = other.fc.W.d.copy()
        with pytest.raises(ValueError) as err:
            other.load_parameters(path)
        assert path in str(err.value) and "bn/mean" in str(err.value)
        np.testing.assert_array_equal(other.fc.W.d, before)      # nothing was set
        assert list(nn.get_parameters(grad_only=False)) == []
        # the whole file loads into a module that has exactly those Variables
        saved.save_parameters(path)
        other.load_parameters(path)
        np.testing.assert_array_equal(other.fc.W.d, saved.fc.W.d)
        assert list(nn.get_parameters(grad_only=False)) == []    # taken out, as NNabla pops


def test_a_model_file_in_the_folder_but_broken_names_the_file(tmp_path, monkeypatch):
    from stadyn.compat.nnabla.models.imagenet import ResNet18
    monkeypatch.setenv("HOME", str(tmp_path))
    folder = tmp_path / "nnabla_data" / "nnp_models" / "imagenet"
    folder.mkdir(parents=True)
    (folder / "Resnet-18.nnp").write_bytes(b"not a zip")
    with pytest.raises(Exception) as err:
        ResNet18()
    assert os.path.join("imagenet", "Resnet-18.nnp") in str(err.value)
