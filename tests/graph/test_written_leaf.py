"""A leaf written between a dynamic forward and its backward (graph/_written_leaves.py):
NNabla 1.39 differentiates with the new value (case
``nnabla_late_28.bn_running_stats_written_before_backward``: PF.batch_normalization's gamma;
``nnabla_half_43.half43__written_between_forward_and_backward``: every write form).  Torch's
autograd kept the old version and refused; Stadyn now reads the new value.  A leaf written
between two ops that read it (torch holds both versions) is still refused, with one error
naming the Variable and the line, not torch's own words ("one of the variables needed for
gradient computation has been modified by an inplace operation")."""

import inspect

import numpy as np
import pytest
import torch

import stadyn as sd
import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.parametric_functions as PF


@pytest.mark.parametrize("write", ["d =", "d[...] =", "copy_"])
def test_a_leaf_written_after_its_readers_is_read_with_its_new_value(write):
    w = sd.Variable.from_numpy_array(np.array([1.0, 2.0], np.float32), need_grad=True)
    x = sd.Variable.from_numpy_array(np.array([3.0, 4.0], np.float32), need_grad=True)
    with sd.auto_forward():
        y = x * w
    new = np.array([5.0, 6.0], np.float32)
    if write == "d =":
        w.d = new
    elif write == "d[...] =":
        w.d[...] = new
    else:
        with torch.no_grad():                   # (a solver's write)
            w.data.copy_(torch.from_numpy(new))
    version = w.data._version
    y.backward(np.ones(2, np.float32))
    assert x.g.tolist() == [5.0, 6.0]           # d(x * w)/dx: the new w, as NNabla's
    assert w.g.tolist() == [3.0, 4.0]
    assert w.data._version == version           # (its version counter as the write left it)


def test_a_parameter_written_between_two_readers_is_named_with_the_line():
    nn.clear_parameters()
    x = nn.Variable.from_numpy_array(np.arange(6, dtype=np.float32).reshape(3, 2, 1, 1),
                                     need_grad=True)
    with nn.auto_forward():
        y = PF.batch_normalization(x, batch_stat=False)
        line = inspect.currentframe().f_lineno - 1
        gamma = nn.get_parameters()["bn/gamma"]
        gamma.d = np.array([3.0, -2.0], np.float32).reshape(1, 2, 1, 1)
        z = PF.batch_normalization(y, batch_stat=False)     # the same parameters, new gamma
    with pytest.raises(sd.StadynError) as raised:
        z.backward(np.ones((3, 2, 1, 1), np.float32))
    said = str(raised.value)
    assert "'bn/gamma'" in said and "batch_normalization" in said
    assert f"test_written_leaf.py:{line}" in said
    assert "modified by an inplace operation" in str(raised.value.__cause__)
    nn.clear_parameters()
