"""Stadyn's ``FunctionNode.set_input`` on a compat.nnabla function: the new input lists the
function among its ``function_references`` (NNabla's list of the functions reading a
variable), the old input no longer does, and ``inputs`` stays a list, as NNabla's."""

import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F


def test_set_input_records_the_new_reader():
    a, b = nn.Variable((2,)), nn.Variable((2,))
    y = F.mul2(a, F.sigmoid(a))
    f = y.parent
    f.set_input(0, b)
    assert b.function_references == [f]
    assert a.function_references == [f.inputs[1].parent]      # only the Sigmoid reads a now
    assert isinstance(f.inputs, list) and f.inputs[0] is b
    b.d = [1.0, 2.0]
    a.d = [0.0, 0.0]
    y.forward()
    assert y.d.tolist() == [0.5, 1.0]                         # b * sigmoid(a)
