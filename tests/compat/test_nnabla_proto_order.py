"""The functions of a network recorded from ``nn.ProtoVariable`` s listed in the order they
run, as NNabla 1.39 lists a recording's (its ``ProtoNetwork.functions`` is the calls' order,
and its executors run a network's functions in the listed order): a function a parametric
function calls on its weight (``apply_w``) comes before the function reading its output."""

import numpy as np

import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.functions as F
import stadyn.compat.nnabla.parametric_functions as PF


def test_apply_w_function_listed_before_its_reader():
    nn.clear_parameters()
    with nn.graph_def.graph() as g:
        PF.affine(nn.ProtoVariable((1, 3)), 2, apply_w=lambda w: F.tanh(w),
                  w_init=0.5 * np.ones((3, 2)), b_init=np.zeros(2))
    net = g.default_graph()
    assert [f.type for f in net.functions.values()] == ["Tanh", "Affine"]
    made = set(net.inputs) | set(net.parameters)
    for f in net.functions.values():        # every input made before its reader runs
        assert set(f.inputs) <= made, (f.name, f.inputs)
        made |= set(f.outputs)
    out = g(nn.Variable.from_numpy_array(np.ones((1, 3))))
    out.forward()
    np.testing.assert_allclose(out.d, np.full((1, 2), 3 * np.tanh(0.5)), rtol=1e-6)
