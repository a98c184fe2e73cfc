"""A leaf written in place between a dynamic forward and its backward (graph/_autograd_backward.py):
NNabla 1.39 differentiates with the new value (case
``nnabla_late_28.bn_running_stats_written_before_backward``: PF.batch_normalization's gamma);
torch's autograd kept the old one and refused with its own words ("one of the variables needed
for gradient computation has been modified by an inplace operation"), naming neither the
Variable nor the line.  Stadyn now refuses with one error naming both."""

import inspect

import numpy as np
import pytest

import stadyn as sd
import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.parametric_functions as PF


def test_a_written_parameter_is_named_with_the_line_of_the_op_reading_it():
    nn.clear_parameters()
    x = nn.Variable.from_numpy_array(np.arange(6, dtype=np.float32).reshape(3, 2, 1, 1),
                                     need_grad=True)
    with nn.auto_forward():
        y = PF.batch_normalization(x, batch_stat=False)
        line = inspect.currentframe().f_lineno - 1
    gamma = nn.get_parameters()["bn/gamma"]
    gamma.d = np.array([3.0, -2.0], np.float32).reshape(1, 2, 1, 1)
    with pytest.raises(sd.StadynError) as raised:
        y.backward(np.ones((3, 2, 1, 1), np.float32))
    said = str(raised.value)
    assert "'bn/gamma'" in said and "batch_normalization" in said
    assert f"test_written_leaf.py:{line}" in said
    assert "modified by an inplace operation" in str(raised.value.__cause__)
    nn.clear_parameters()


def test_an_unnamed_leaf_is_named_by_its_shape():
    w = sd.Variable.from_numpy_array(np.array([1.0, 2.0], np.float32), need_grad=True)
    x = sd.Variable.from_numpy_array(np.array([3.0, 4.0], np.float32), need_grad=True)
    with sd.auto_forward():
        y = x * w
    w.d = np.array([5.0, 6.0], np.float32)
    with pytest.raises(sd.StadynError, match=r"leaf Variable of shape \(2,\) read by mul2"):
        y.backward(np.ones(2, np.float32))

