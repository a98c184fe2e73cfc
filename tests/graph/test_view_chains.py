"""A view of a view of a parameter (``w.unlinked().unlinked()``: what converting a graph twice
makes of the parameters its first function reads) is a view of the parameter itself: a saved
graph names the parameter (not a second input), and a backward reaches the parameter's
gradient: NNabla's ``GraphConverter`` reads unlinked copies of the parameters of the function
reading the network's input, copies of copies after two conversions (QATScheduler's)."""

import numpy as np

import stadyn as sd
import stadyn.functions as F
import stadyn.parametric_functions as PF
import stadyn.compat.nnabla as nn
import stadyn.compat.nnabla.experimental.graph_converters as GC
import stadyn.compat.nnabla.functions as NF
import stadyn.compat.nnabla.parametric_functions as NPF
import stadyn.compat.nnabla.solvers as S
from stadyn.graph import Subgraph


def _affine_weight():
    sd.clear_parameters()
    x = sd.Variable.from_numpy_array(np.arange(6, dtype=np.float32).reshape(2, 3))
    with sd.parameter_scope("chain"):
        PF.affine(x, 2)
    return x, sd.get_parameters()["chain/affine/W"]


def test_subgraph_sees_a_view_of_a_view_as_reading_the_parameter():
    x, w = _affine_weight()
    view = w.unlinked(need_grad=True).unlinked(need_grad=True)
    sub = Subgraph([F.affine(x, view)])
    assert [(v is view, target is w) for v, target in sub.views] == [(True, True)]
    assert view not in sub.inputs
    sd.clear_parameters()


def test_graph_converted_twice_trains_its_first_layer():
    nn.clear_parameters()
    x = nn.Variable.from_numpy_array(np.arange(6, dtype=np.float32).reshape(2, 3),
                                     need_grad=True)
    with nn.parameter_scope("twice"):
        y = NF.sum(NPF.affine(x, 2))
    w = nn.get_parameters()["twice/affine/W"]
    solver = S.Sgd(0.1)
    solver.set_parameters(nn.get_parameters())
    expected = np.repeat(x.d.sum(axis=0)[:, None], 2, axis=1)    # d sum(x W + b) / dW
    for _ in range(2):      # train, convert, train (QATScheduler's order), convert, train
        y.forward()
        solver.zero_grad()
        y.backward()
        np.testing.assert_allclose(w.g, expected)
        solver.update()
        y = GC.GraphConverter([GC.IdentityModifier()]).convert(y)
    y.forward()
    solver.zero_grad()
    y.backward()
    np.testing.assert_allclose(w.g, expected)       # (NNabla 1.39: the same)
    nn.clear_parameters()
