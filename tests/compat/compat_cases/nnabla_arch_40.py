"""NNabla 1.39's solver states given to another solver type (arch40): ``set_states`` and
``load_states`` take another solver's states as the parameter's whole state
(``Solver::set_states`` replaces its ``SolverState``, src/nbla/solver.cpp:170-177;
``load_states`` builds ``SolverState`` s and calls ``set_states``, solver.pyx.tmpl:254-303),
run unchanged on NNabla 1.39 and on ``stadyn.compat.nnabla``.
"""

import os

import numpy as np

from compat_harness import nnabla_case

N = "nnabla."
SV = "nnabla.solvers."


def _solvers(S):
    return {"Sgd": lambda: S.Sgd(0.1), "Momentum": lambda: S.Momentum(0.1, 0.9),
            "Nesterov": lambda: S.Nesterov(0.1, 0.9), "Adam": lambda: S.Adam(0.01),
            "AdamW": lambda: S.AdamW(0.01, wd=0.1), "Adagrad": lambda: S.Adagrad(0.01)}


def _two_steps(nn, S, kind, r):
    w = nn.Variable.from_numpy_array(np.array([1.0, -2.0, 3.0], np.float32), need_grad=True)
    solver = _solvers(S)[kind]()
    solver.set_parameters({"w": w})
    for g in ([0.5, 1.0, -1.5], [-0.25, 2.0, 0.75]):
        w.g = np.array(g, np.float32)
        solver.update()
    return solver


def _held(solver):
    return {k: [sorted(v.pstate), int(v.t)] for k, v in solver.get_states().items()}


@nnabla_case(names=[SV + "Sgd", SV + "Momentum", SV + "Nesterov", SV + "Adam", SV + "AdamW",
                    SV + "Adagrad", N + "solver.Solver.get_states",
                    N + "solver.Solver.set_states", N + "solver.Solver.update"])
def arch40_set_states_of_another_solver(nn, F, PF, S, r):
    """``dst.set_states(src.get_states())`` across solver types: the destination then holds
    the source's state names and step count (``get_states`` shows them), its update leaves
    the names it does not keep alone (Momentum's ``m`` in an Sgd) and continues from states
    of the same names (Adam's in an AdamW, Momentum's in a Nesterov); the state arrays are the
    source's own (a write through the source's ``pstate`` shows in the destination).  Pairs
    whose destination needs a state it was not given (Adam's into a Momentum or an Adagrad,
    Sgd's into a Momentum) are only set and read back here: NNabla 1.39's update crashes on
    them (a segmentation fault; Stadyn raises MissingStateError, tests/solvers/
    test_nnabla_state_files.py)."""
    r.touch(N + "solver.Solver.get_states", N + "solver.Solver.set_states",
            N + "solver.Solver.update")
    res = {}
    for src_kind, dst_kind, update in (("Momentum", "Sgd", True), ("Adam", "AdamW", True),
                                       ("Momentum", "Nesterov", True),
                                       ("Adam", "Momentum", False),
                                       ("Sgd", "Momentum", False),
                                       ("Adam", "Adagrad", False)):
        key = src_kind + ">" + dst_kind
        src = _two_steps(nn, S, src_kind, r)
        w = nn.Variable.from_numpy_array(np.array([0.5, 0.25, -1.0], np.float32),
                                         need_grad=True)
        dst = _solvers(S)[dst_kind]()
        dst.set_parameters({"w": w})
        res[key + "|before"] = _held(dst)
        given = src.get_states()
        dst.set_states(given)
        res[key + "|after"] = _held(dst)
        res[key + "|states"] = {n: v.d.copy() for n, v in dst.get_states()["w"].pstate.items()}
        for n, v in given["w"].pstate.items():     # the source's array itself
            v.d[...] = 0.125
        res[key + "|shared"] = {n: v.d.copy() for n, v in dst.get_states()["w"].pstate.items()}
        if update:
            for g in ([1.0, -0.5, 0.25], [0.5, 0.5, -2.0]):
                w.g = np.array(g, np.float32)
                dst.update()
            res[key + "|w"] = w.d.copy()
            res[key + "|updated"] = _held(dst)
            res[key + "|updated_states"] = {n: v.d.copy()
                                            for n, v in dst.get_states()["w"].pstate.items()}
    return res


@nnabla_case(names=[SV + "Sgd", SV + "Momentum", SV + "Adam", N + "solver.Solver.save_states",
                    N + "solver.Solver.load_states"])
def arch40_load_states_of_another_solver(nn, F, PF, S, r):
    """A state file of another solver type (``.h5`` and ``.protobuf``) loaded into a solver:
    NNabla 1.39 takes its states as each parameter's whole state, as ``set_states`` does
    (Stadyn refused it: "Sgd keeps no state 'm'"); a solver holding another's states saves
    them (the file's datasets are the held names); an Sgd given a Momentum's file then
    updates as an Sgd."""
    r.touch(N + "solver.Solver.save_states", N + "solver.Solver.load_states")
    res = {}
    for ext in (".h5", ".protobuf"):
        for src_kind, dst_kind in (("Momentum", "Sgd"), ("Adam", "Momentum")):
            key = src_kind + ">" + dst_kind + ext
            path = os.path.abspath("states_" + src_kind + ext)
            _two_steps(nn, S, src_kind, r).save_states(path)
            w = nn.Variable.from_numpy_array(np.array([0.5, 0.25, -1.0], np.float32),
                                             need_grad=True)
            dst = _solvers(S)[dst_kind]()
            dst.set_parameters({"w": w})
            dst.load_states(path)
            res[key + "|held"] = _held(dst)
            res[key + "|states"] = {n: v.d.astype(np.float32)
                                    for n, v in dst.get_states()["w"].pstate.items()}
            again = os.path.abspath("again_" + src_kind + ext)
            dst.save_states(again)
            fresh = _solvers(S)[dst_kind]()
            fresh.set_parameters({"w": w})
            fresh.load_states(again)
            res[key + "|resaved"] = _held(fresh)
            if dst_kind == "Sgd":
                w.g = np.array([1.0, -0.5, 0.25], np.float32)
                dst.update()
                res[key + "|w"] = w.d.copy()
                res[key + "|updated"] = _held(dst)
    return res


GD = "nnabla.graph_def."


def _network(net):
    return {"name": net.name, "batch_size": net.batch_size, "inputs": list(net.inputs),
            "outputs": list(net.outputs),
            "variables": [[k, v.name, list(v.shape), v.type, bool(v.need_grad)]
                          for k, v in net.variables.items()],
            "parameters": [[k, v.name, list(v.shape), v.type, bool(v.need_grad)]
                           for k, v in net.parameters.items()],
            "functions": [[k, f.name, f.type, list(f.inputs), list(f.outputs),
                           sorted(f.args.items())] for k, f in net.functions.items()]}


@nnabla_case(names=["nnabla.graph_def", GD + "create_graph_from_variable", GD + "ProtoGraph",
                    GD + "ProtoGraph.default_graph", GD + "ProtoGraph.get_parameters",
                    GD + "ProtoGraph.save", GD + "ProtoNetwork", GD + "ProtoFunction",
                    GD + "load", GD + "get_default_graph", GD + "reset_default_graph",
                    GD + "get_default_graph_by_variable"])
def arch40_graph_def_of_variables(nn, F, PF, S, r):
    """NNabla 1.39's ``nn.graph_def`` over a graph of ``nn.Variable`` (Stadyn raised
    AttributeError: no graph_def): ``create_graph_from_variable`` with and without ``names``
    (NNabla's names for unnamed buffers: ``@mlp/Affine_in``, ``@mlp/Affine_out_1``), its
    networks' variables, parameters and functions; the graph called on a new input of another
    batch size computes with the scope's parameter Variables themselves (a change shows) and
    keeps them after ``nn.clear_parameters()``; ``save`` writes the same ``network.nntxt`` as
    NNabla; ``load`` gives a graph holding the file's parameters, the scope left empty;
    several outputs: those no other reads; the default graph is empty; and
    ``get_default_graph_by_variable`` of an ``nn.Variable`` is NNabla's ValueError."""
    import zipfile
    GDm = r.module("nnabla.graph_def")
    r.touch(GD + "ProtoGraph", GD + "ProtoNetwork", GD + "ProtoFunction",
            GD + "ProtoGraph.default_graph", GD + "ProtoGraph.get_parameters",
            GD + "ProtoGraph.save")
    nn.clear_parameters()
    # (NNabla's default graph also holds the networks earlier cases' modules made in the
    # process that writes every reference: start from an empty one)
    GDm.reset_default_graph()
    x = nn.Variable.from_numpy_array(r.randn(2, 4))
    with nn.parameter_scope("net"):
        h = F.tanh(PF.affine(x, 3, name="fc1"))
        y = PF.affine(h, 2, name="fc2")
    listing = r.set_params(nn.get_parameters())
    res = {"params": listing}
    g = GDm.create_graph_from_variable("mlp", y)
    res["unnamed"] = _network(g.networks["mlp"])
    named = GDm.create_graph_from_variable("mlp", y, names={"x": x, "y": y})
    res["named"] = _network(named.networks["mlp"])
    res["graph_parameters"] = [[k, list(v.shape), bool(v.need_grad)]
                               for k, v in named.get_parameters().items()]
    x2 = nn.Variable.from_numpy_array(r.randn(3, 4))
    out = g(x2)
    out.forward()
    res["called"] = out.d.copy()
    W = nn.get_parameters()["net/fc1/affine/W"]
    W.d = W.d * 0.5
    out = named.default_graph()(x2)
    out.forward()
    res["called_after_change"] = out.d.copy()
    named.save("mlp.nnp")
    with zipfile.ZipFile("mlp.nnp") as z:
        res["saved_members"] = sorted(z.namelist())
        res["saved_network"] = z.read("network.nntxt").decode()
    nn.clear_parameters()
    out = named(x2)
    out.forward()
    res["called_after_clear"] = out.d.copy()
    loaded = GDm.load("mlp.nnp")
    res["loaded"] = _network(loaded.networks["mlp"])
    res["scope_after_load"] = sorted(nn.get_parameters())
    out = loaded(x2)
    out.forward()
    res["loaded_called"] = out.d.copy()
    res["scope_after_call"] = sorted(nn.get_parameters())
    y2 = F.sigmoid(y)
    two = GDm.create_graph_from_variable("two", [y, y2])
    res["two_outputs"] = list(two.networks["two"].outputs)
    res["default_networks"] = list(GDm.get_default_graph().networks)
    GDm.reset_default_graph()
    res["reset_networks"] = list(GDm.get_default_graph().networks)
    try:
        GDm.get_default_graph_by_variable(y)
        res["by_variable"] = "returned"
    except ValueError as e:
        res["by_variable"] = ["ValueError", str(e)]
    return res


@nnabla_case(names=[GD + "create_graph_from_variable", GD + "ProtoGraph.save",
                    "nnabla.utils.save.save"])
def arch40_graph_def_two_inputs(nn, F, PF, S, r):
    """A convolution, batch normalisation (inference), pooling and affine network whose second
    input is first read late (``+ b`` after the affine): ``create_graph_from_variable`` with
    ``names`` naming only ``b`` (the other input is ``@cnn/Convolution_in``), the graph called
    on inputs of another batch size, then with no inputs (NNabla 1.39 reuses the last call's:
    batch 3 although ``batch_size=4``), and the ``network.nntxt`` both ``g.save`` and
    ``nnabla.utils.save.save`` write: NNabla lists ``b`` where a function first reads it,
    after ``@cnn/Affine_out`` (Stadyn's writer listed every input first).  Each function's
    ``args`` are NNabla's: every argument, defaults filled (Stadyn's held only those its file
    stores: ``ReLU`` ``{}`` where NNabla has ``{'inplace': False}``)."""
    import zipfile
    GDm = r.module("nnabla.graph_def")
    U = r.module("nnabla.utils.save")
    r.touch(GD + "ProtoGraph.save")
    nn.clear_parameters()
    a = nn.Variable.from_numpy_array(r.randn(2, 3, 6, 6))
    b = nn.Variable.from_numpy_array(r.randn(2, 5))
    with nn.parameter_scope("cnn"):
        h = PF.convolution(a, 4, (3, 3), pad=(1, 1), name="c1")
        h = F.relu(PF.batch_normalization(h, batch_stat=False, name="bn"))
        z = PF.affine(F.max_pooling(h, (2, 2)), 5, name="fc") + b
        out = F.softmax(z)
    listing = r.set_params(nn.get_parameters(grad_only=False))
    for k, v in nn.get_parameters(grad_only=False).items():
        if k.endswith("/var"):
            v.d = np.abs(v.d) + 0.5
    g = GDm.create_graph_from_variable("cnn", out, names={"b": b})
    net = g.networks["cnn"]
    res = {"params": listing}
    described = _network(net)
    res["args"] = described.pop("functions")
    res["functions"] = [row[:5] for row in res["args"]]
    res["args"] = [row[5] for row in res["args"]]
    res["network"] = described
    o = g(nn.Variable.from_numpy_array(r.randn(3, 3, 6, 6)),
          nn.Variable.from_numpy_array(r.randn(3, 5)))
    o.forward()
    res["called"] = o.d.copy()
    res["no_inputs_shape"] = list(g(batch_size=4).shape)
    g.save("cnn.nnp")
    U.save("cnn_utils.nnp", {"networks": [{"name": "cnn", "batch_size": 2,
                                           "outputs": {"y": out}, "names": {"a": a, "b": b}}]})
    for key, path in (("graph_def_saved", "cnn.nnp"), ("utils_saved", "cnn_utils.nnp")):
        with zipfile.ZipFile(path) as zf:
            res[key] = zf.read("network.nntxt").decode()
    return res


def _last_line(call):
    try:
        out = call()
    except RuntimeError as e:
        return ["RuntimeError", str(e).strip().splitlines()[-1]]
    outs = out if isinstance(out, tuple) else (out,)
    for o in outs:
        o.forward()
    return [o.d.copy() for o in outs]


@nnabla_case(names=[GD + "create_graph_from_variable", GD + "load"])
def arch40_graph_def_batch_of_reshape(nn, F, PF, S, r):
    """A graph holding a Reshape or a Broadcast to a shape of the batch axis, called at another
    batch size: NNabla 1.39's graph_def builds them at the network's batch size (the recorded
    one, or ``load``'s ``batch_size``), so the call fails in setup (a RuntimeError: ``Product
    of dimensions of inputs and outputs must be same``, ``Trailing shapes must be same``), and
    a later call with no inputs reuses the failed call's; Stadyn built both at the inputs'
    batch size and gave numbers.  A Broadcast of a batch of 1 gives the network's batch
    (``broadcast_call_1``: (2, 6); Stadyn's was (1, 6))."""
    GDm = r.module("nnabla.graph_def")
    res = {}
    for kind in ("reshape", "broadcast"):
        nn.clear_parameters()
        x = nn.Variable.from_numpy_array(r.randn(2, 3))
        with nn.parameter_scope(kind):
            h = PF.affine(x, 6, name="fc")
        if kind == "reshape":
            y = F.sum(F.reshape(h, (2, 2, 3)), axis=1)
        else:
            y = F.mul2(F.broadcast(F.sum(x, axis=1, keepdims=True), (2, 6)), h)
        r.set_params(nn.get_parameters())
        g = GDm.create_graph_from_variable("net", y, names={"x": x})
        for batch in (2, 4, 1):
            xb = nn.Variable.from_numpy_array(r.randn(batch, 3))
            res[f"{kind}_call_{batch}"] = _last_line(lambda: g(xb))
            if batch != 1 or kind == "reshape":
                res[f"{kind}_then_no_inputs_{batch}"] = _last_line(lambda: g())
        g.save(kind + ".nnp")
        for load_batch in (None, 4):
            loaded = GDm.load(kind + ".nnp", batch_size=load_batch)
            for batch in (2, 4):
                xb = nn.Variable.from_numpy_array(r.randn(batch, 3))
                res[f"{kind}_load_{load_batch}_call_{batch}"] = _last_line(lambda: loaded(xb))
    return res
