"""NNabla 1.39's loader plumbing programs reach: what ``NnpLoader.get_network`` gives a second
network of the same file, the first-stage file loaders of ``nnabla.utils.load``
(``get_initial_file_loader``, ``load_files``), restoring a solver's saved states
(``restore_optimizer_state``), the identity-removing pass of its protobuf graphs
(``IdentityRemover``) and the proto graphs' placeholder ``nnabla.ProtoVariable``."""

import os

import numpy as np

from compat_harness import nnabla_case

U = "nnabla.utils."
G = U + "nnp_graph."
L_ = U + "load."


def _dims(shape):
    return " ".join("dim: %d" % d for d in shape)


def _shared_nntxt(rng):
    """x -> Affine -> BN (batch statistics) -> y, the parameters inline."""
    params = [("fc/W", (3, 2), "true"), ("fc/b", (2,), "true"), ("bn/beta", (1, 2), "true"),
              ("bn/gamma", (1, 2), "true"), ("bn/mean", (1, 2), "false"),
              ("bn/var", (1, 2), "false")]
    lines = ['network { name: "net" batch_size: 2',
             ' variable { name: "x" type: "Buffer" shape { dim: -1 dim: 3 } }',
             ' variable { name: "h" type: "Buffer" shape { dim: -1 dim: 2 } }',
             ' variable { name: "y" type: "Buffer" shape { dim: -1 dim: 2 } }']
    for n, s, _ in params:
        lines.append(' variable { name: "%s" type: "Parameter" shape { %s } }' % (n, _dims(s)))
    lines += [
        ' function { name: "Fc" type: "Affine" input: "x" input: "fc/W" input: "fc/b" '
        'output: "h" affine_param { base_axis: 1 } }',
        ' function { name: "BN" type: "BatchNormalization" input: "h" input: "bn/beta" '
        'input: "bn/gamma" input: "bn/mean" input: "bn/var" output: "y" '
        'batch_normalization_param { axes: 1 decay_rate: 0.5 eps: 1e-05 batch_stat: true } }',
        '}']
    for n, s, g in params:
        v = rng.uniform(-0.5, 0.5, s)
        if n == "bn/var":
            v = np.abs(v) + 0.5
        lines.append('parameter { variable_name: "%s" shape { %s } %s need_grad: %s }' % (
            n, _dims(s), " ".join("data: %r" % float(np.float32(a)) for a in v.ravel()), g))
    return "\n".join(lines) + "\n"


@nnabla_case(names=[G + "NnpLoader", G + "NnpLoader.get_network"],
             note="a second network of one loader: new parameter Variables sharing values and "
                  "gradients with the first's, not reset to the file's (a solver step and the "
                  "running statistics a forward updated carry over, also after "
                  "clear_parameters); the scope gets the newest network's; need_grad is each "
                  "Variable's own",
             tols={"second y": (1e-4, 1e-5)})  # batch statistics of 3 rows after a step
def nnp_loader_shares_parameters(nn, F, S, r):
    NG = r.module("nnabla.utils.nnp_graph")
    r.touch(G + "NnpLoader.get_network")
    res = {}
    with r.tempdir() as folder:
        path = os.path.join(folder, "net.nntxt")
        with open(path, "w") as f:
            f.write(_shared_nntxt(np.random.RandomState(3)))
        nnp = NG.NnpLoader(path)
        res["scope after loader"] = sorted(nn.get_parameters(grad_only=False))
        n1 = nnp.get_network("net", batch_size=2)
        keys = sorted(k for k in n1.variables if "/" in k)
        p1 = dict((k, n1.variables[k]) for k in keys)
        res["first"] = [[k, p1[k].d.copy(), p1[k].need_grad] for k in keys]
        n1.inputs["x"].d = r.randn(2, 3)
        y1 = n1.outputs["y"]
        y1.forward()
        res["first y"] = y1.d.copy()
        solver = S.Sgd(0.5)
        solver.set_parameters(nn.get_parameters())
        solver.zero_grad()
        y1.backward(r.weights_like(y1.d))
        solver.update()
        res["after step"] = [[k, p1[k].d.copy()] for k in keys]

        n2 = nnp.get_network("net", batch_size=3)
        p2 = dict((k, n2.variables[k]) for k in keys)
        scope = nn.get_parameters(grad_only=False)
        res["second"] = [[k, p2[k] is p1[k], p2[k].d.copy(), scope[k] is p2[k],
                          scope[k] is p1[k]] for k in keys]
        res["grads shared"] = [[k, p2[k].g.copy()] for k in keys if p1[k].need_grad]
        p2["fc/b"].d = np.array([7.0, -7.0], np.float32)
        res["write seen by first"] = p1["fc/b"].d.copy()
        p1["fc/b"].need_grad = False
        res["need_grad own"] = [p2["fc/b"].need_grad, p1["fc/b"].need_grad]
        n2.inputs["x"].d = r.randn(3, 2 + 1)
        n2.outputs["y"].forward()
        res["second y"] = n2.outputs["y"].d.copy()

        nn.clear_parameters()
        n3 = nnp.get_network("net")
        res["after clear"] = [[k, n3.variables[k].d.copy()] for k in keys]
        res["scope after clear"] = sorted(nn.get_parameters(grad_only=False))
        with nn.parameter_scope("s"):
            nnp.get_network("net")
        res["scoped"] = sorted(nn.get_parameters(grad_only=False))
        fresh = NG.NnpLoader(path).get_network("net")
        res["new loader"] = [[k, fresh.variables[k].d.copy()] for k in keys]
    return res


_STATES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))), "fixtures", "nnabla_solver_states")


def _ctx(r, parameter_only=False, exclude_parameter=False):
    """The context NNabla's load passes its loaders (NNabla's needs its protobuf message;
    Stadyn makes its own)."""
    class Ctx(object):
        pass
    ctx = Ctx()
    ctx.parameter_only = parameter_only
    ctx.exclude_parameter = exclude_parameter
    if r.real:
        from nnabla.utils import nnabla_pb2
        ctx.proto = nnabla_pb2.NNablaProtoBuf()
    return ctx


def _params(nn):
    return sorted([k, v.d.copy(), v.need_grad]
                  for k, v in nn.get_parameters(grad_only=False).items())


@nnabla_case(names=[L_ + "get_initial_file_loader", L_ + "load_files"],
             note="the loaders by extension; NNabla-saved .nnp files (parameters, sections, "
                  "the solver-state members kept as checkpoints), a .nntxt with parameters in "
                  "a scope (its sections added twice), an .h5 file object, parameter_only, "
                  "exclude_parameter, a file no loader takes, an existing parameter "
                  "overwritten (need_grad too)")
def load_files_first_stage(nn, r):
    L = r.module("nnabla.utils.load")
    loaders = L.get_initial_file_loader()
    res = {"loaders": [[k, v.__name__] for k, v in loaders.items()]}
    for key in ("h5", "protobuf"):
        nn.clear_parameters()
        ctx = _ctx(r)
        L.load_files(ctx, loaders, os.path.join(_STATES, "adam_%s.nnp" % key))
        res[key + " params"] = _params(nn)
        p = ctx.proto
        res[key + " proto"] = [[n.name for n in p.network], len(p.parameter),
                               [o.name for o in p.optimizer], [e.name for e in p.executor],
                               [d.name for d in p.dataset]]
        kinds = ctx.optimizer_states_checkpoint
        res[key + " checkpoints"] = [[k, v[0]] for k, v in kinds.items()]
        if key == "h5":
            res["h5 checkpoint name"] = kinds["optimizer"][1].name
    with r.tempdir() as folder:
        text = os.path.join(folder, "net.nntxt")
        with open(text, "w") as f:
            f.write(_shared_nntxt(np.random.RandomState(4)))
        nn.clear_parameters()
        ctx = _ctx(r)
        with nn.parameter_scope("s"):
            L.load_files(ctx, loaders, [text])
        res["nntxt params"] = _params(nn)
        res["nntxt proto"] = [[n.name for n in ctx.proto.network], len(ctx.proto.parameter),
                              sorted(set(q.variable_name for q in ctx.proto.parameter))]
        for key, kw in [("parameter_only", {"parameter_only": True}),
                        ("exclude", {"exclude_parameter": True})]:
            nn.clear_parameters()
            ctx = _ctx(r, **kw)
            L.load_files(ctx, loaders, text)
            res[key] = [_params(nn), len(ctx.proto.network), len(ctx.proto.parameter)]
        h5 = os.path.join(folder, "params.h5")
        nn.clear_parameters()
        w = nn.parameter.get_parameter_or_create("fc/W", (2, 3), need_grad=True)
        w.d = r.randn(2, 3)
        nn.parameter.get_parameter_or_create("fc/b", (3,), need_grad=False).d = r.randn(3)
        nn.save_parameters(h5)
        nn.clear_parameters()
        w0 = nn.parameter.get_parameter_or_create("fc/W", (2, 3), need_grad=False)
        with open(h5, "rb") as f:
            L.load_files(_ctx(r), loaders, f, extension=".h5")
        res["file object"] = [w0.d.copy(), _params(nn)]
        other = os.path.join(folder, "notes.txt")
        with open(other, "w") as f:
            f.write("x")
        nn.clear_parameters()
        L.load_files(_ctx(r), loaders, [other])
        res["omitted"] = _params(nn)
    return res


@nnabla_case(names=[L_ + "restore_optimizer_state"],
             note="an Adam over the parameters load_files read from NNabla-saved .nnp files "
                  "given the states saved with them (.h5 and .protobuf checkpoints): the "
                  "states, and the parameters after one more step with fixed gradients; the "
                  "checkpoint file object is rewound")
def restore_optimizer_state(nn, S, r):
    L = r.module("nnabla.utils.load")
    res = {}
    for key in ("h5", "protobuf"):
        nn.clear_parameters()
        ctx = _ctx(r)
        L.load_files(ctx, L.get_initial_file_loader(),
                     os.path.join(_STATES, "adam_%s.nnp" % key))

        class Optimizer(object):
            pass
        o = Optimizer()
        o.solver = S.Adam(0.01)
        params = nn.get_parameters()
        o.solver.set_parameters(params)
        o.proto = ctx.proto.optimizer[0]
        o.solver_checkpoint = ctx.optimizer_states_checkpoint["optimizer"]
        L.restore_optimizer_state(o)
        res[key + " states"] = sorted(
            [k, int(s.t), sorted([n, v.d.copy()] for n, v in s.pstate.items())]
            for k, s in o.solver.get_states().items())
        if key == "h5":
            res["rewound"] = o.solver_checkpoint[1].tell()
        for k, v in params.items():
            v.g = 0.5
        o.solver.update()
        res[key + " after step"] = sorted([k, v.d.copy()] for k, v in params.items())
    return res


@nnabla_case(names=[L_ + "load"],
             note="the optimizers load makes of NNabla-saved .nnp files (Adam with .h5 and "
                  ".protobuf states, Momentum with .h5): the solver's type, learning rate and "
                  "parameters, the attributes programs read, the states load restored, the "
                  "same after restore_optimizer_state, and the parameters after one more step")
def load_optimizers(nn, S, r):
    L = r.module("nnabla.utils.load")
    res = {}
    for key, name in [("adam_h5", "optimizer"), ("adam_protobuf", "optimizer"),
                      ("momentum_h5", "mom")]:
        nn.clear_parameters()
        info = L.load([os.path.join(_STATES, key + ".nnp")], prepare_data_iterator=False)
        o = info.optimizers[name]
        res[key] = [sorted(info.optimizers), o.name, o.order, o.start_iter, o.end_iter,
                    o.update_interval, o.weight_decay, o.lr_decay, o.lr_decay_interval,
                    o.comm is None, sorted(o.data_iterators), len(o.dataset_assign),
                    len(o.generator_assign), [v.name for v in o.loss_variables],
                    sorted([v.name, m] for v, m in
                           o.parameter_learning_rate_multipliers.items()),
                    list(o.parameters), o.network is info.networks["net"],
                    o.target is o.loss_variables[0].variable_instance,
                    o.loss_variables[0].variable_instance.g.copy(),
                    o.scheduler.get_learning_rate(0), o.solver.learning_rate(),
                    o.proto.solver.type, o.proto.network_name]
        res[key + " parameters are the network's"] = [
            o.parameters[k] is o.network.parameters[k].variable_instance for k in o.parameters]
        res[key + " states"] = sorted(
            [k, int(s.t), sorted([n, v.d.copy()] for n, v in s.pstate.items())]
            for k, s in o.solver.get_states().items())
        L.restore_optimizer_state(o)
        res[key + " restored"] = sorted(
            [k, int(s.t), sorted([n, v.d.copy()] for n, v in s.pstate.items())]
            for k, s in o.solver.get_states().items())
        if key.endswith("h5"):
            res[key + " rewound"] = o.solver_checkpoint[1].tell()
        for v in o.parameters.values():
            v.g = 0.5
        o.solver.update()
        res[key + " after step"] = sorted([k, v.d.copy()] for k, v in o.parameters.items())
    return res


class _PV(object):
    def __init__(self, name, parent, required, need_grad=False):
        self.name, self.parent, self.required, self.need_grad = name, parent, required, need_grad


class _PF(object):
    def __init__(self, net, name, kind, inputs, outputs):
        self.name, self.type, self.inputs, self.outputs = name, kind, inputs, outputs
        self._net = net
        net.functions[name] = self

    def owner(self):
        return self._net


class _PN(object):
    """A proto network as NNabla's graph optimizer sees it."""

    def __init__(self, variables, outputs):
        self.variables = dict((v.name, v) for v in variables)
        self.parameters = {}
        self.functions = {}
        self.outputs = outputs

    def state(self):
        return {"variables": sorted([k, v.name, v.parent, list(v.required), v.need_grad]
                                    for k, v in self.variables.items()),
                "functions": sorted([k, list(f.inputs), list(f.outputs)]
                                    for k, f in self.functions.items()),
                "outputs": list(self.outputs)}


@nnabla_case(names=[L_ + "IdentityRemover"],
             note="NNabla's pass over proto networks (objects of its shape, built here): an "
                  "identity whose output is read (the input's name kept), one at the end (the "
                  "output's name kept), and one is_required refuses; the renamed variables")
def identity_remover(nn, r):
    L = r.module("nnabla.utils.load")
    res = {}
    # x -> Identity -> h -> Tanh -> y
    net = _PN([_PV("x", None, ["id"], True), _PV("h", "id", ["t"]), _PV("y", "t", [])], ["y"])
    ident = _PF(net, "id", "Identity", ["x"], ["h"])
    tanh = _PF(net, "t", "Tanh", ["h"], ["y"])
    renamed = {}
    remover = L.IdentityRemover(renamed)
    for f in (ident, tanh):
        remover(f)
    res["read"] = [net.state(), renamed]
    # x -> Tanh -> h -> Identity -> y (an output)
    net = _PN([_PV("x", None, ["t"]), _PV("h", "t", ["$EC$/id"], True), _PV("y", "$EC$/id", [])],
              ["y"])
    tanh = _PF(net, "t", "Tanh", ["x"], ["h"])
    ident = _PF(net, "$EC$/id", "Identity", ["h"], ["y"])
    keep = _PF(net, "k", "Identity", ["x"], ["z"])
    net.variables["z"] = _PV("z", "k", [])
    net.variables["x"].required.append("k")
    renamed = {}
    remover = L.IdentityRemover(renamed, is_required=lambda pf: pf.name.startswith("$EC$/"))
    for f in (tanh, ident, keep):
        remover(f)
    res["at the end"] = [net.state(), renamed]
    return res


PV = "nnabla.ProtoVariable"


@nnabla_case(names=[PV, PV + ".clone", PV + ".proto", PV + ".prepare_renaming"],
             note="the description a proto variable holds, its clone and its proto (with an "
                  "initializer); what a function does with one is NNabla's proto graph, which "
                  "Stadyn does not have (a TypeError there: docs/nnabla-names.md)")
def proto_variable(nn, I, r):
    r.touch(PV + ".clone", PV + ".proto", PV + ".prepare_renaming")
    v = nn.ProtoVariable((2, 3), name="x", need_grad=True)
    res = {"attrs": [v.name, list(v.shape), v.need_grad, v.type, v.parent, v.required, v.info,
                     v.initializer, v.variable_instance, v.repeat_id, v.stop, v.delegate],
           "plus": (+v) is v}
    v.required.append("f")
    c = v.clone()
    res["clone"] = [c is v, c.name, list(c.shape), c.need_grad, c.type, c.required,
                    c.required is v.required]
    p = v.proto
    res["proto"] = [p.name, p.type, list(p.shape.dim), list(p.repeat_id),
                    p.HasField("initializer"), v.proto is p]
    w = nn.ProtoVariable([4, 5], name="w", var_type="Parameter")
    w.initializer = I.UniformInitializer((-0.25, 0.25))
    q = w.proto
    res["parameter"] = [list(w.shape), w.need_grad, q.type, q.initializer.type,
                        q.initializer.multiplier]
    renames = {}
    q.name = "w2"
    w.prepare_renaming(renames)
    res["renames"] = renames
    res["unnamed"] = nn.ProtoVariable((1,)).name
    return res
