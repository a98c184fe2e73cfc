"""NNabla 1.39's proto graphs recorded from ``nn.ProtoVariable`` s with ``nn.Variable`` s mixed
in (graphdef41b): each such Variable becomes a parameter of the network named after the
function and the input's position (``Add2_1``), holding the Variable's array; and a
parametric function whose ``apply_w`` calls a function on its weight.  Run unchanged on
NNabla 1.39 and on ``stadyn.compat.nnabla``.
"""

import re
import zipfile

import numpy as np

from compat_harness import nnabla_case

GD = "nnabla.graph_def."


def _network(net):
    return {"inputs": list(net.inputs), "outputs": list(net.outputs),
            "variables": [[k, list(v.shape), v.type] for k, v in net.variables.items()],
            "parameters": [[k, list(v.shape), v.type, bool(v.need_grad)]
                           for k, v in net.parameters.items()],
            "functions": [[k, f.type, list(f.inputs), list(f.outputs)]
                          for k, f in net.functions.items()]}


def _called(g, *variables):
    out = g(*variables)
    out.forward()
    return out.d.copy()


def _recorded(nn, GDm, build, x_shape=(2, 3)):
    """What ``build`` (given a ProtoVariable) records in a new graph: the network, the
    graph's parameters (values, need_grad), the scope's parameter names after, the graph
    called on zeros."""
    nn.clear_parameters()
    with GDm.graph() as g:
        build(nn.ProtoVariable(x_shape))
    res = _network(g.default_graph())
    res["graph_parameters"] = [[k, v.d.copy(), bool(v.need_grad)]
                               for k, v in g.get_parameters(grad_only=False).items()]
    res["scope_after"] = sorted(nn.get_parameters(grad_only=False))
    res["called_zeros"] = _called(g, *[nn.Variable.from_numpy_array(np.zeros(x_shape))
                                       for _ in g.default_graph().inputs])
    return res, g


@nnabla_case(names=["nnabla.ProtoVariable", GD + "graph", GD + "ProtoGraph",
                    GD + "ProtoGraph.get_parameters", GD + "ProtoGraph.save", GD + "load"])
def graphdef41b_variables_in_proto_graph(nn, F, PF, S, r):
    """``F.add2(nn.ProtoVariable((2, 3)), v)`` with ``v = nn.Variable.from_numpy_array(...)``:
    NNabla 1.39 makes ``v`` a Parameter ``Add2_1`` (``Add2_0`` as the first argument) of
    ``v``'s shape and ``need_grad``, holding ``v``'s array (``g(zeros)`` gives ``v``; set
    ``v.d`` later and the graph reads it), the scope's parameters left alone; two Variables
    (``Add2_1``, ``Mul2_1``), the same Variable twice (a parameter per use), one in
    ``F.concatenate``'s list (``Concatenate_1``); saved and loaded.  Stadyn raised
    ModelFileError ('variable 'Add2_in' is declared twice') at the block's end."""
    GDm = r.module("nnabla.graph_def")
    r.touch(GD + "ProtoGraph", GD + "ProtoGraph.get_parameters", GD + "ProtoGraph.save")
    res = {}
    ones = np.ones((2, 3))
    for ng in (False, True):
        res["second_ng_%s" % ng], _ = _recorded(nn, GDm, lambda x: F.add2(
            x, nn.Variable.from_numpy_array(ones, need_grad=ng)))
    res["first"], _ = _recorded(nn, GDm, lambda x: F.add2(
        nn.Variable.from_numpy_array(2 * ones), x))
    res["two"], _ = _recorded(nn, GDm, lambda x: F.mul2(
        F.add2(x, nn.Variable.from_numpy_array(2 * ones)),
        nn.Variable.from_numpy_array(3 * ones)))
    v = nn.Variable.from_numpy_array(2 * ones, need_grad=True)
    res["same_twice"], g = _recorded(nn, GDm, lambda x: F.mul2(F.add2(x, v), v))
    v.d = 5
    res["same_twice_after_set"] = _called(g, nn.Variable.from_numpy_array(np.zeros((2, 3))))
    g.save("mixed.nnp")
    with zipfile.ZipFile("mixed.nnp") as z:
        text = z.read("network.nntxt").decode()
    res["saved"] = re.findall(r'(name|type|input|output): "([^"]*)"', text)
    loaded = GDm.load("mixed.nnp")
    res["loaded_called"] = _called(loaded, nn.Variable.from_numpy_array(np.zeros((2, 3))))
    res["concatenate"], _ = _recorded(nn, GDm, lambda x: F.concatenate(
        x, nn.Variable.from_numpy_array(r.randn(1, 3)), axis=0))
    return res


_APPLY_W = ("NNabla 1.39 bug (not reproduced): its PF.affine's apply_w output W' is an "
            "nn.Variable the recording does not know, so ProtoNetwork.commit "
            "(resolve_function_parameters) makes it a new parameter 'Affine_1' with no value "
            "(zeros: output [[0, 0]]) and drops the Tanh; Stadyn records Tanh then Affine on "
            "affine/W and computes tanh(W): 3 * tanh(0.5) = 1.386")


@nnabla_case(names=["nnabla.ProtoVariable", GD + "graph", "nnabla.parametric_functions.affine"],
             known={"network": _APPLY_W, "graph_parameters": _APPLY_W,
                    "called_ones": _APPLY_W})
def graphdef41b_affine_apply_w(nn, F, PF, S, r):
    """``PF.affine(x, 2, apply_w=lambda w: F.tanh(w), w_init=0.5, b_init=0)`` on a
    ProtoVariable: the scope holds affine/W and affine/b either way; the network, the graph's
    parameters and the graph called on ones differ (known: NNabla records only Affine on a
    new empty parameter; Stadyn records Tanh, then Affine, as they run -- it listed Affine
    first)."""
    GDm = r.module("nnabla.graph_def")
    nn.clear_parameters()
    with GDm.graph() as g:
        x = nn.ProtoVariable((1, 3))
        y = PF.affine(x, 2, apply_w=lambda w: F.tanh(w), w_init=0.5 * np.ones((3, 2)),
                      b_init=np.zeros(2))
    net = g.default_graph()
    res = {"returned": [y.name, list(y.shape)], "network": _network(net)}
    res["graph_parameters"] = [[k, v.d.copy(), bool(v.need_grad)]
                               for k, v in g.get_parameters(grad_only=False).items()]
    res["scope"] = [[k, v.d.copy()] for k, v in nn.get_parameters(grad_only=False).items()]
    res["called_ones"] = _called(g, nn.Variable.from_numpy_array(np.ones((1, 3))))
    return res


@nnabla_case(names=["nnabla.ProtoVariable", GD + "graph", "nnabla.parameter_scope",
                    "nnabla.parameter.get_parameter_or_create"])
def graphdef41b_scope_parameters_and_operators(nn, F, PF, S, r):
    """Beside a ProtoVariable: a scope parameter with ``need_grad`` keeps its scope name
    (``s/w``); one without is renamed after the function (``Add2_1``: NNabla's commit looks
    the scope up with ``grad_only=True``); ``x + v`` (an ``nn.Variable`` operand) is a second
    unnamed input ``Add2_in_1``, no parameter."""
    GDm = r.module("nnabla.graph_def")
    res = {}
    for ng in (True, False):
        def scoped(x, ng=ng):
            with nn.parameter_scope("s"):
                w = nn.parameter.get_parameter_or_create("w", (2, 3), 3 * np.ones((2, 3)), ng)
            return F.add2(x, w)
        res["scope_ng_%s" % ng], _ = _recorded(nn, GDm, scoped)
    res["operator"], _ = _recorded(
        nn, GDm, lambda x: x + nn.Variable.from_numpy_array(np.ones((2, 3))))
    return res
