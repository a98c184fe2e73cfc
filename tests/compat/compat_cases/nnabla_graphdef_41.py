"""NNabla 1.39's ``nn.graph_def`` (graphdef41): networks holding a Broadcast called at another
batch size, proto graphs recorded from ``nn.ProtoVariable`` inputs, and files NNabla wrote
without a batch placeholder loaded at another batch size, run unchanged on NNabla 1.39 and on
``stadyn.compat.nnabla``.
"""

import os

import numpy as np

from compat_harness import nnabla_case

GD = "nnabla.graph_def."


def _outcome(call):
    """The call's outputs' values after a forward, or the type and last line it raised."""
    try:
        out = call()
        outs = out if isinstance(out, tuple) else (out,)
        for o in outs:
            o.forward()
        return [o.d.copy() for o in outs]
    except (RuntimeError, ValueError) as e:
        return [type(e).__name__, "raised"]


@nnabla_case(names=[GD + "create_graph_from_variable", GD + "load"])
def graphdef41_broadcast_of_data_at_another_batch(nn, F, PF, S, r):
    """A Broadcast of a statistic over the batch (``F.sum(h, axis=0, keepdims=True)``, of
    batch 1) to the network's batch shape, times ``h``: NNabla 1.39's graph_def broadcasts it
    to the network's batch size whatever the call's, so a call at batch 1 gives the network's
    batch (2, 6) and one at batch 4 fails in ``Mul2``'s setup (RuntimeError).  Stadyn built
    the network at the call's batch size: (1, 6) and (4, 6), numbers where NNabla raises."""
    GDm = r.module("nnabla.graph_def")
    nn.clear_parameters()
    x = nn.Variable.from_numpy_array(r.randn(2, 3))
    with nn.parameter_scope("bd"):
        h = PF.affine(x, 6, name="fc")
    r.set_params(nn.get_parameters())
    y = F.mul2(F.broadcast(F.sum(h, axis=0, keepdims=True), (2, 6)), h)
    g = GDm.create_graph_from_variable("net", y, names={"x": x})
    res = {}
    for batch in (2, 1, 4):
        xb = nn.Variable.from_numpy_array(r.randn(batch, 3))
        res["call_%d" % batch] = _outcome(lambda: g(xb))
    g.save("bd.nnp")
    loaded = GDm.load("bd.nnp")
    for batch in (2, 1, 4):
        xb = nn.Variable.from_numpy_array(r.randn(batch, 3))
        res["load_call_%d" % batch] = _outcome(lambda: loaded(xb))
    return res


def _network(net):
    return {"name": net.name, "batch_size": net.batch_size, "inputs": list(net.inputs),
            "outputs": list(net.outputs),
            "variables": [[k, v.name, list(v.shape), v.type, bool(v.need_grad)]
                          for k, v in net.variables.items()],
            "parameters": [[k, v.name, list(v.shape), v.type, bool(v.need_grad)]
                           for k, v in net.parameters.items()],
            "functions": [[k, f.name, f.type, list(f.inputs), list(f.outputs),
                           sorted(f.args.items())] for k, f in net.functions.items()]}


def _described(v):
    return [type(v).__name__, v.name, list(v.shape), v.type, bool(v.need_grad), v.parent,
            list(v.required)]


@nnabla_case(names=["nnabla.ProtoVariable", GD + "graph", GD + "ProtoGraph",
                    GD + "ProtoGraph.default_graph", GD + "ProtoGraph.get_parameters",
                    GD + "ProtoGraph.save", GD + "ProtoNetwork", GD + "ProtoFunction",
                    GD + "get_default_graph", GD + "reset_default_graph"])
def graphdef41_proto_variable_graph(nn, F, PF, S, r):
    """``with nn.graph_def.graph() as g:`` over ``nn.ProtoVariable((1, 3, 4, 4))``: a
    convolution, batch normalisation (inference), ReLU and affine recorded (Stadyn raised
    TypeError: no proto graphs) -- the ProtoVariables the functions give (``ReLU_out``, ...),
    the network ``model`` (inputs, outputs, variables at the recorded shapes, parameters with
    the Variables' ``need_grad``, functions with NNabla's arguments), the graph's members and
    parameters, the graph called on an ``nn.Variable`` of batch 2 (the scope's parameters),
    the ``network.nntxt`` ``g.save`` writes; the default graph stays empty."""
    import zipfile
    GDm = r.module("nnabla.graph_def")
    r.touch(GD + "ProtoGraph", GD + "ProtoNetwork", GD + "ProtoFunction",
            GD + "ProtoGraph.default_graph", GD + "ProtoGraph.get_parameters",
            GD + "ProtoGraph.save")
    nn.clear_parameters()
    GDm.reset_default_graph()
    with GDm.graph() as g:
        x = nn.ProtoVariable((1, 3, 4, 4))
        h = PF.convolution(x, 2, (3, 3), pad=(1, 1), name="conv")
        h = F.relu(PF.batch_normalization(h, batch_stat=False, name="bn"))
        y = PF.affine(h, 4, name="fc")
    res = {"returned": [_described(v) for v in (x, h, y)]}
    res["params"] = r.set_params(nn.get_parameters(grad_only=False))
    for k, v in nn.get_parameters(grad_only=False).items():
        if k.endswith("/var"):
            v.d = abs(v.d) + 0.5
    res["networks"] = list(g.networks)
    res["network"] = _network(g.default_graph())
    res["members"] = [list(g.inputs), list(g.outputs), list(g.functions), list(g.variables),
                      list(g.parameters)]
    res["graph_parameters"] = [[k, list(v.shape), bool(v.need_grad)]
                               for k, v in g.get_parameters(grad_only=False).items()]
    out = g(nn.Variable.from_numpy_array(r.randn(2, 3, 4, 4)))
    out.forward()
    res["called"] = out.d.copy()
    g.save("recorded.nnp")
    with zipfile.ZipFile("recorded.nnp") as z:
        res["saved_members"] = sorted(z.namelist())
        res["saved_network"] = z.read("network.nntxt").decode()
    res["default_networks"] = list(GDm.get_default_graph().networks)
    return res


@nnabla_case(names=["nnabla.ProtoVariable", GD + "graph", GD + "ProtoGraph",
                    GD + "ProtoNetwork"])
def graphdef41_proto_variable_operators(nn, F, PF, S, r):
    """A graph named ``net`` over two ProtoVariables (``a`` named, the other not) through
    NNabla's ProtoVariable operators (``+``, ``*``, ``-``, ``/`` of a scalar, unary ``-``):
    names under ``@net/`` (``@net/Add2``, ``@net/AddScalar_1``, ``@net/MulScalar_out_2``),
    the network, the graph called on two ``nn.Variable`` s of batch 3; a reflected operator
    (``2.0 * a``) and ``a ** 2`` are Python's TypeError in NNabla (its ProtoVariable defines
    neither)."""
    GDm = r.module("nnabla.graph_def")
    r.touch(GD + "ProtoGraph", GD + "ProtoNetwork")
    nn.clear_parameters()
    with GDm.graph(name="net") as g:
        a = nn.ProtoVariable((2, 3), name="a")
        b = nn.ProtoVariable((2, 3))
        h1 = F.tanh(a) + b
        h2 = h1 * 2.0
        h3 = (h2 - 1.0) / 4.0
        h4 = -h3
        h5 = F.add2(F.tanh(h4), F.sigmoid(h4))
        h6 = h5 * h1
    res = {"returned": [_described(v) for v in (a, b, h1, h2, h3, h4, h5, h6)]}
    res["networks"] = list(g.networks)
    res["network"] = _network(g.networks["net"])
    out = g(nn.Variable.from_numpy_array(r.randn(3, 3)),
            nn.Variable.from_numpy_array(r.randn(3, 3)))
    out.forward()
    res["called"] = out.d.copy()
    for key, call in (("reflected", lambda: 2.0 * a), ("power", lambda: a ** 2)):
        try:
            call()
            res[key] = "returned"
        except TypeError:
            res[key] = "TypeError"
    return res


@nnabla_case(names=["nnabla.ProtoVariable", GD + "get_default_graph",
                    GD + "get_default_graph_by_variable", GD + "reset_default_graph"])
def graphdef41_proto_variable_default_graph(nn, F, PF, S, r):
    """Functions given ProtoVariables outside any ``graph()`` block record in the default
    graph: ``get_default_graph_by_variable(y)`` commits the network ``model`` and finds it by
    its output, a second network is ``model_1``, ``get_default_graph(name)`` one network (or
    None), an output of an earlier network read by a new one is that network's input, and
    ``reset_default_graph()`` empties the default graph (Stadyn raised TypeError)."""
    GDm = r.module("nnabla.graph_def")
    nn.clear_parameters()
    GDm.reset_default_graph()
    y = F.relu(nn.ProtoVariable((2, 3)))
    net = GDm.get_default_graph_by_variable(y)
    res = {"first": [net.name, list(net.inputs), list(net.outputs)]}
    z = PF.affine(nn.ProtoVariable((2, 3)), 2, name="fc")
    res["networks"] = list(GDm.get_default_graph().networks)
    res["by_name"] = _network(GDm.get_default_graph("model_1"))
    res["missing"] = GDm.get_default_graph("nope") is None
    r.set_params(nn.get_parameters())
    out = GDm.get_default_graph()(nn.Variable.from_numpy_array(r.randn(4, 3)))
    out.forward()
    res["default_called"] = out.d.copy()
    out = GDm.get_default_graph("model_1")(nn.Variable.from_numpy_array(r.randn(4, 3)))
    out.forward()
    res["second_called"] = out.d.copy()
    w = F.tanh(y)
    chained = GDm.get_default_graph_by_variable(w)
    res["chained"] = _network(chained)
    res["returned"] = [_described(v) for v in (y, z, w)]
    o = chained(nn.Variable.from_numpy_array(r.randn(4, 3)))
    o.forward()
    res["chained_called"] = o.d.copy()
    GDm.reset_default_graph()
    res["after_reset"] = list(GDm.get_default_graph().networks)
    return res


_FIXED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures",
                      "nnabla_fixed_dims")


@nnabla_case(names=[GD + "load", "nnabla.utils.nnp_graph.NnpLoader",
                    "nnabla.utils.nnp_graph.NnpLoader.get_network", "nnabla.utils.load.load"])
def graphdef41_nnabla_files_of_fixed_dims(nn, F, PF, S, r):
    """Files NNabla 1.39's own ``save`` wrote without a batch placeholder (no ``-1``:
    ``tanh``, ``sum_broadcast``, ``reshape`` have no ``base_axis``; ``mlp`` saved with
    ``variable_batch_size=False``; ``tests/fixtures/nnabla_fixed_dims``) loaded at batch sizes 4
    and 1: ``NnpLoader.get_network(batch_size=b)`` and ``utils.load.load(batch_size=b)`` keep the
    file's (2, 3) input, as NNabla's; ``nn.graph_def.load(path[, batch_size=b])`` called on an
    input of batch ``b`` builds each function on it, as NNabla's: ``Tanh`` and the MLP run at
    ``b``, a Broadcast of a batch of 1 gives the file's (2, 3), a Reshape to (2, 3, 1) or a
    Broadcast from batch 4 is NNabla's RuntimeError.  Stadyn's graph_def raised an error of its
    own (``read_value_of: shape (4, 3) is not the leaf's (2, 3)``) on every one."""
    U = r.module("nnabla.utils.nnp_graph")
    L = r.module("nnabla.utils.load")
    GDm = r.module("nnabla.graph_def")
    r.touch("nnabla.utils.nnp_graph.NnpLoader.get_network")
    res = {}
    for kind in ("tanh", "sum_broadcast", "reshape", "mlp"):
        path = os.path.join(_FIXED, kind + ".nnp")
        for b in (4, 1):
            xv = r.randn(b, 3)
            nn.clear_parameters()
            net = U.NnpLoader(path).get_network("network", batch_size=b)
            x = net.inputs["x"]
            x.d = np.resize(xv, x.shape)
            net.outputs["y"].forward()
            res["%s_nnp_graph_%d" % (kind, b)] = [list(x.shape), net.outputs["y"].d.copy()]
            nn.clear_parameters()
            info = L.load([path], batch_size=b, prepare_data_iterator=False)
            network = info.executors["runtime"].network
            x = network.variables["x"].variable_instance
            y = network.variables["y"].variable_instance
            x.d = np.resize(xv, x.shape)
            y.forward()
            res["%s_load_%d" % (kind, b)] = [list(x.shape), y.d.copy()]
            for load_batch in (None, b):
                g = GDm.load(path, batch_size=load_batch)
                res["%s_graph_def_%s_call_%d" % (kind, load_batch, b)] = _outcome(
                    lambda: g(nn.Variable.from_numpy_array(xv)))
    return res


@nnabla_case(names=[GD + "load", GD + "ProtoFunction", GD + "create_graph_from_variable",
                    GD + "ProtoGraph.save"])
def graphdef41_loaded_arguments(nn, F, PF, S, r):
    """A loaded network's ``ProtoFunction.args`` are NNabla 1.39's: every argument of the
    function, defaults filled (``Mul2`` ``{'inplace': False}``, ``Sum``'s ``axes`` a list, a
    pooling's ``channel_last``), the file's batch placeholder kept (``Reshape`` ``[-1, 3, 2]``
    at ``load``'s ``batch_size=4`` too); of a network ``g.save`` wrote (convolution, batch
    normalisation, pooling, reshape, affine, a statistic broadcast back) and of files NNabla
    wrote without ``-1`` (``tests/fixtures/nnabla_fixed_dims``).  Stadyn's held the arguments
    the file stores: ``Mul2`` ``{}``, ``Sum`` ``axes`` ``1``."""
    GDm = r.module("nnabla.graph_def")
    r.touch(GD + "ProtoFunction", GD + "ProtoGraph.save")
    nn.clear_parameters()
    x = nn.Variable.from_numpy_array(r.randn(2, 3, 6, 6))
    with nn.parameter_scope("la"):
        h = F.relu(PF.batch_normalization(PF.convolution(x, 4, (3, 3), pad=(1, 1), name="c"),
                                          batch_stat=False, name="bn"))
        h = F.reshape(F.max_pooling(h, (2, 2)), (2, 4, 9))
        y = PF.affine(h, 5, name="fc")
        z = F.mul2(F.broadcast(F.sum(y, axis=1, keepdims=True), (2, 5)), y)
    g = GDm.create_graph_from_variable("net", F.softmax(z), names={"x": x})
    g.save("la.nnp")
    res = {}
    for load_batch in (None, 4):
        net = GDm.load("la.nnp", batch_size=load_batch).default_graph()
        res["saved_%s" % load_batch] = [[f.name, f.type, sorted(f.args.items())]
                                        for f in net.functions.values()]
    for kind in ("sum_broadcast", "reshape", "mlp"):
        net = GDm.load(os.path.join(_FIXED, kind + ".nnp")).default_graph()
        res[kind] = [[f.name, f.type, sorted(f.args.items())] for f in net.functions.values()]
    return res


@nnabla_case(names=["nnabla.ProtoVariable", GD + "graph", GD + "ProtoGraph.save",
                    GD + "ProtoNetwork"])
def graphdef41_proto_variable_call_order(nn, F, PF, S, r):
    """A recording whose calls are not in the order the graph is walked (``F.sigmoid(x)``
    called before ``F.tanh(x)``, both read by the ``Add2`` after): NNabla 1.39 names and
    lists the functions and variables in the order of the calls (``Sigmoid`` then ``Tanh``,
    ``x`` named ``Sigmoid_in``), in the network and in the saved ``network.nntxt``; the graph
    called on batch 4.  Stadyn named the written functions in the recording's order whatever
    their type (its ``Tanh`` was called ``Sigmoid``) and listed them as the graph is walked."""
    import zipfile
    GDm = r.module("nnabla.graph_def")
    r.touch(GD + "ProtoGraph.save", GD + "ProtoNetwork")
    nn.clear_parameters()
    with GDm.graph() as g:
        x = nn.ProtoVariable((2, 3))
        b = F.sigmoid(x)
        a = F.tanh(x)
        c = F.tanh(b)
        e = PF.affine(F.add2(a, c), 2, name="fc")
    res = {"returned": [_described(v) for v in (x, a, b, c, e)]}
    r.set_params(nn.get_parameters())
    res["network"] = _network(g.default_graph())
    out = g(nn.Variable.from_numpy_array(r.randn(4, 3)))
    out.forward()
    res["called"] = out.d.copy()
    g.save("order.nnp")
    with zipfile.ZipFile("order.nnp") as z:
        res["saved_network"] = z.read("network.nntxt").decode()
    return res


@nnabla_case(names=[GD + "ProtoGraph.save", GD + "graph", GD + "create_graph_from_variable"])
def graphdef41_network_after_save(nn, F, PF, S, r):
    """NNabla 1.39's ``g.save`` rewrites the networks it writes (``variable_batch_size`` runs
    on the network itself): with a ``base_axis`` function, ``batch_size`` becomes the batch
    size and the buffers of that first size and a Reshape's shape get ``-1`` (a recorded
    Reshape to (2, 3, 2): ``[-1, 3, 2]``), an ``Affine`` with ``base_axis=2`` is folded to
    ``base_axis`` 1 and its input (2, 3, 4) described (6, 4); without one (``Tanh`` alone)
    nothing changes.  Calls after the save still build at the batch sizes they did.  Stadyn's
    networks stayed as they were described before the save."""
    GDm = r.module("nnabla.graph_def")
    r.touch(GD + "ProtoGraph.save")
    res = {}
    nn.clear_parameters()
    with GDm.graph() as rec:
        x = nn.ProtoVariable((2, 6))
        PF.affine(F.reshape(F.tanh(x), (2, 3, 2)), 2, name="a")
    v = nn.Variable.from_numpy_array(r.randn(2, 3, 4))
    folded = GDm.create_graph_from_variable("folded", PF.affine(v, 5, base_axis=2, name="f"),
                                            names={"v": v})
    plain = GDm.create_graph_from_variable("plain", F.tanh(v), names={"v": v})
    r.set_params(nn.get_parameters())
    for key, g, batches in (("recorded", rec, (2, 4)), ("folded", folded, (2, 3)),
                            ("plain", plain, (2, 3))):
        net = g.default_graph()
        res[key + "_before"] = _network(net)
        sample = tuple(net.variables[net.inputs[0]].shape[1:])
        g.save(key + ".nnp")
        res[key + "_after"] = _network(net)
        for b in batches:
            shape = (b,) + sample
            res["%s_call_%d" % (key, b)] = _outcome(
                lambda: g(nn.Variable.from_numpy_array(r.randn(*shape))))
    return res


@nnabla_case(names=[GD + "load", GD + "ProtoNetwork", GD + "graph", "nnabla.ProtoVariable"])
def graphdef41_variable_instance(nn, F, PF, S, r):
    """NNabla 1.39's way of feeding a loaded graph called with no inputs (its ``ProtoNetwork``
    docstring): ``y = g()``, then ``g.networks[name].variables["x"].variable_instance.d =
    ...``, ``y.forward()``; a call on ``xb`` leaves ``xb`` and the output there, the parameters'
    ``variable_instance`` are the graph's parameters; in a recorded graph the recorded
    ``ProtoVariable`` s themselves (``x.variable_instance is xb``).  Stadyn's were None
    (AttributeError on ``.d``)."""
    GDm = r.module("nnabla.graph_def")
    r.touch(GD + "ProtoNetwork")
    nn.clear_parameters()
    x = nn.Variable((2, 3))
    y = PF.affine(F.tanh(x), 2, name="fc")
    r.set_params(nn.get_parameters())
    GDm.create_graph_from_variable("net", y, names={"x": x, "y": y}).save("vi.nnp")
    g = GDm.load("vi.nnp")
    out = g()
    net = g.networks["net"]
    net.variables["x"].variable_instance.d = r.randn(2, 3)
    out.forward()
    res = {"fed": out.d.copy(), "output_is": net.variables["y"].variable_instance is out}
    xb = nn.Variable.from_numpy_array(r.randn(4, 3))
    out = g(xb)
    res["called"] = [net.variables["x"].variable_instance is xb,
                     net.variables["y"].variable_instance is out]
    res["parameters"] = [[k, list(v.variable_instance.shape)] for k, v in net.parameters.items()]
    with GDm.graph() as rec:
        p = nn.ProtoVariable((2, 3))
        q = F.tanh(p)
    xb = nn.Variable.from_numpy_array(r.randn(4, 3))
    out = rec(xb)
    res["recorded"] = [p.variable_instance is xb, q.variable_instance is out,
                       rec.default_graph().variables[p.name] is p]
    return res


@nnabla_case(names=["nnabla.ProtoVariable", "nnabla.Module", GD + "graph",
                    GD + "get_default_graph", GD + "ProtoGraph.save", GD + "load"])
def graphdef41_proto_variable_module(nn, F, PF, S, r):
    """``nn.Module`` s called on ProtoVariables (rmnngd41): NNabla 1.39 records what a module
    call records under its path (``@two/@a/Affine``, ``@two/@b/ReLU_out``), commits the
    outermost call as a network named after the module (``two``; ``inner`` in the default
    graph, with the flat ``Sigmoid`` recorded before it, and the ``Tanh`` after it in a new
    network ``model``) and names its parameters by the module's ``get_parameters()``
    (``@a/fc/affine/W``).  Stadyn named them as flat functions in ``model`` (``Affine``,
    ``ReLU_out``; SILENT) and raised ExportError for two submodules both holding an
    ``fc/affine/W``."""
    GDm = r.module("nnabla.graph_def")
    nn.clear_parameters()
    GDm.reset_default_graph()

    class Inner(nn.Module):
        def call(self, x):
            return F.relu(PF.affine(x, 3, name="fc"))

    class Two(nn.Module):
        def __init__(self):
            self.a = Inner()
            self.b = Inner()

        def call(self, x):
            return self.b(self.a(x))

    r.touch(GD + "ProtoGraph.save")
    two = Two()
    with GDm.graph() as g:
        y = two(nn.ProtoVariable((2, 3)))
    r.set_params(two.get_parameters())
    res = {"returned": _described(y), "networks": list(g.networks),
           "network": _network(g.default_graph())}
    x = nn.Variable.from_numpy_array(r.randn(2, 3))
    direct = two(x)
    direct.forward()
    res["direct"] = direct.d.copy()
    out = g(x)
    out.forward()
    res["called"] = out.d.copy()
    g.save("two.nnp")
    loaded = GDm.load("two.nnp")
    res["loaded_parameters"] = sorted(loaded.get_parameters(grad_only=False))
    out = loaded(x)
    out.forward()
    res["loaded_called"] = out.d.copy()
    GDm.reset_default_graph()
    inner = Inner()
    h = F.sigmoid(nn.ProtoVariable((2, 3)))
    w = F.tanh(inner(h))
    default = GDm.get_default_graph()
    res["default_networks"] = {k: _network(n) for k, n in default.networks.items()}
    res["default_returned"] = [_described(v) for v in (h, w)]
    return res


@nnabla_case(names=[GD + "create_graph_from_variable", GD + "load", GD + "graph",
                    "nnabla.ProtoVariable"])
def graphdef41_intermediate_variable_instance(nn, F, PF, S, r):
    """A call sets ``variable_instance`` of every buffer of the network, the intermediate
    ones too, to the Variable the call built for it (NNabla 1.39's ``graph_call``): after
    ``y = g(x); y.forward()`` the intermediate ``ProtoVariable`` s hold their values (a
    loaded network's ``@net/Tanh_out``, a recorded one's ``Tanh_out``, ``Affine_out``).
    Stadyn left them None (rmnngd41)."""
    GDm = r.module("nnabla.graph_def")
    nn.clear_parameters()
    x = nn.Variable((2, 3))
    y = F.relu(PF.affine(F.tanh(x), 2, name="fc"))
    r.set_params(nn.get_parameters())
    GDm.create_graph_from_variable("net", y, names={"x": x, "y": y}).save("iv.nnp")
    g = GDm.load("iv.nnp")
    out = g(nn.Variable.from_numpy_array(r.randn(3, 3)))
    out.forward()
    net = g.networks["net"]
    res = {"loaded": [[k, v.variable_instance is None or v.variable_instance.d.copy()]
                      for k, v in net.variables.items()]}
    with GDm.graph() as rec:
        p = nn.ProtoVariable((2, 3))
        q = F.relu(PF.affine(F.tanh(p), 2, name="fc"))
    out = rec(nn.Variable.from_numpy_array(r.randn(4, 3)))
    out.forward()
    res["recorded"] = [[k, v.variable_instance is None or v.variable_instance.d.copy()]
                       for k, v in rec.default_graph().variables.items()]
    res["returned_is"] = q.variable_instance is out
    return res


@nnabla_case(names=["nnabla.ProtoVariable", GD + "graph",
                    "nnabla.parametric_functions.mean_subtraction"])
def graphdef41_proto_variable_mean_subtraction(nn, F, PF, S, r):
    """``PF.mean_subtraction`` given a ProtoVariable records a ``MeanSubtraction`` as NNabla
    1.39's (its running mean and counter, not trained, named ``MeanSubtraction_1`` and
    ``_2``), and the graph called computes it.  Stadyn's was not wrapped: ShapeError
    (``'ProtoVariable' object has no attribute 'dtype'``) (rmnngd41)."""
    GDm = r.module("nnabla.graph_def")
    nn.clear_parameters()
    with GDm.graph() as g:
        y = PF.mean_subtraction(nn.ProtoVariable((2, 3, 4)))
    res = {"returned": _described(y), "network": _network(g.default_graph())}
    out = g(nn.Variable.from_numpy_array(r.randn(2, 3, 4)))
    out.forward()
    res["called"] = out.d.copy()
    return res
