"""NNabla functions given Stadyn's own Variable first (``F.affine(sd_x, nn_w)``): every NNabla
function gives NNabla's Variables and Functions, and its nodes mark the floating leaves they
read, so ``nn_w.d = ints`` after the graph was built leaves the graph working, as in NNabla
1.39 (where there is one Variable class; its function reads the int32 array as float32).  The
expected values are NumPy's."""

import gc

import numpy as np
import pytest

import stadyn as sd
import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
from stadyn.compat.nnabla._float_inputs import read_as_float
from stadyn.compat.nnabla._function import Function

X = np.array([[1.0, 2.0, 3.0]], np.float32)
W_INT = np.array([[1, 2], [3, 4], [5, 6]], np.int32)


@pytest.fixture(autouse=True)
def _static():
    nn.set_auto_forward(False)
    yield
    nn.set_auto_forward(False)


@pytest.mark.parametrize("auto", [False, True])
def test_affine_of_a_stadyn_input_reads_an_integer_weight_written_later(auto):
    nn.set_auto_forward(auto)
    x = sd.Variable.from_numpy_array(X)
    w = nn.Variable.from_numpy_array(np.ones((3, 2), np.float32))
    y = F.affine(x, w)
    assert type(y) is nn.Variable and type(y.parent) is Function
    assert y.parent.name == "Affine" and read_as_float(w)
    y.forward()
    w.d = W_INT
    y.forward()
    np.testing.assert_allclose(y.d, X @ W_INT.astype(np.float32))
    assert y.d.dtype == np.float32


def test_composed_function_of_a_stadyn_input_marks_the_leaf_it_reads():
    x = sd.Variable.from_numpy_array(X)
    w = nn.Variable.from_numpy_array(np.full((1, 3), 2.0, np.float32))
    y = F.reduce_mean(F.mul2(x, w))      # ``reduce_mean`` is composed of catalog ops
    assert type(y) is nn.Variable and type(y.parent) is Function
    y.forward()
    w.d = np.array([[1, 2, 3]], np.int32)
    y.forward()
    assert float(y.d) == pytest.approx(float(np.mean(X * np.array([1, 2, 3], np.float32))))


def test_a_label_read_as_indices_takes_the_integer_type():
    x = sd.Variable.from_numpy_array(np.array([[0.1, 0.9], [0.8, 0.2]], np.float32))
    t = nn.Variable.from_numpy_array(np.zeros((2, 1), np.float32))
    y = F.softmax_cross_entropy(x, t)
    assert type(y) is nn.Variable
    assert not read_as_float(t)
    t.d = np.array([[1], [0]], np.int32)
    assert t.d.dtype == np.int32
    y.forward()
    logits = np.array([[0.1, 0.9], [0.8, 0.2]])
    expected = -np.log(np.exp(logits[[0, 1], [1, 0]]) / np.exp(logits).sum(axis=1))
    np.testing.assert_allclose(y.d.ravel(), expected, rtol=1e-6)


def test_the_mark_goes_with_the_graph():
    x = sd.Variable.from_numpy_array(X)
    w = nn.Variable.from_numpy_array(np.ones((3, 2), np.float32))
    y = F.affine(x, w)
    assert read_as_float(w)
    del y
    gc.collect()
    assert not read_as_float(w)
    w.d = W_INT                          # no graph reads it: it takes the ints' type
    assert w.d.dtype == np.int32


def test_stadyn_inputs_are_left_as_they_are():
    x = sd.Variable.from_numpy_array(X)
    h = sd.functions.relu(x)            # a Stadyn graph before the NNabla function
    y = F.add_scalar(h, 1.0)
    assert type(x) is sd.Variable and type(h) is sd.Variable
    assert type(h.parent) is not Function and type(y.parent) is Function
    y.forward()
    np.testing.assert_allclose(y.d, X + 1.0)
