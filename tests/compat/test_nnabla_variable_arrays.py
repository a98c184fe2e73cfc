"""``nn.Variable``'s value accessors: an op output's ``.d`` gives it memory of its own once."""

import numpy as np

import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
from stadyn.compat.nnabla import _variable


def test_d_of_an_op_output_owns_its_array_once(monkeypatch):
    calls = []
    real = _variable.own_array

    def counted(v):
        calls.append(v)
        real(v)

    monkeypatch.setattr(_variable, "own_array", counted)
    a = nn.Variable.from_numpy_array(np.arange(4, dtype=np.float32).reshape(2, 2))
    y = F.transpose(a, (1, 0))
    y.forward()
    values = y.d
    assert len(calls) == 1
    values[0, 1] = 7.0                  # its own memory: the input keeps its values
    assert a.d.tolist() == [[0.0, 1.0], [2.0, 3.0]]
    assert y.d.tolist() == [[0.0, 7.0], [1.0, 3.0]]
