"""``nnabla``'s top-level names beyond variables and scopes: ``no_grad``,
``get_current_parameter_scope``, ``Module`` and ``Sequential`` (``nnabla.core.module``: a
module's own parameters, submodules, ``training``, saving and loading), ``recompute``,
``recompute_fn``, ``set_global_recompute`` and the solver hooks."""

import os

import numpy as np

from compat_harness import nnabla_case


def _grads(params):
    return dict(("grad " + k, v.g.copy()) for k, v in params.items())


@nnabla_case(names=["nnabla.no_grad"])
def no_grad(nn, F, PF, r):
    """Parameters fetched inside need no gradient (the registered ones still do); inputs keep
    theirs; ``no_grad(False)`` turns it off inside; the same with ``auto_forward``."""
    x = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)
    res = {}
    with nn.no_grad():
        y = PF.affine(x, 2, name="a")
        res["inside: y needs grad"] = y.need_grad
        res["inside: registered W needs grad"] = nn.get_parameters()["a/affine/W"].need_grad
        with nn.no_grad(False):
            z = PF.affine(x, 4, name="b")
    y2 = PF.affine(x, 2, name="a")
    params = nn.get_parameters(grad_only=False)
    res["params"] = r.set_params(params)
    loss = F.sum(y * y) + F.sum(y2) + F.sum(z)
    loss.forward()
    x.g = 0
    for v in params.values():
        v.g = 0
    loss.backward()
    res["grad x"] = x.g.copy()
    res.update(_grads(params))
    with nn.auto_forward(), nn.no_grad():
        u = PF.affine(x, 2, name="a")
        res["auto: need grad"] = u.need_grad
        res["auto: value"] = u.d.copy()
    return res


@nnabla_case(names=["nnabla.get_current_parameter_scope"])
def get_current_parameter_scope(nn, PF, r):
    x = nn.Variable((2, 3))
    PF.affine(x, 2, name="a")
    with nn.parameter_scope("net"):
        PF.affine(x, 4, name="c")
        PF.convolution(nn.Variable((1, 2, 4, 4)), 3, (3, 3))
        inner = nn.get_current_parameter_scope()
    top = nn.get_current_parameter_scope()

    def shape_tree(d):
        return [[k, shape_tree(v) if isinstance(v, dict) else list(v.shape)]
                for k, v in d.items()]
    return {"top": shape_tree(top), "inner": shape_tree(inner),
            "same W": top["net"]["c"]["affine"]["W"] is inner["c"]["affine"]["W"]}


def _modules(nn, F, PF):
    """A block with a parameter of its own and an affine, and a network of two of them."""
    class Block(nn.Module):
        def __init__(self, n):
            self.n = n
            self.scale = PF.get_parameter_or_create("scale", (1, n), np.ones((1, n)),
                                                       True)

        def call(self, x):
            h = PF.affine(x, self.n, name="fc")
            if self.training:
                h = h * 2.0
            return F.tanh(h) * self.scale

    class Net(nn.Module):
        def __init__(self):
            self.first = Block(3)
            self.second = Block(2)

        def call(self, x):
            return self.second(self.first(x))
    return Block, Net


MODULE_METHODS = ["nnabla.Module." + m for m in [
    "call", "get_parameters", "get_path_name", "is_root", "load_parameters", "name",
    "parameter_scope", "parent", "save_parameters", "set_parameter", "set_parameters",
    "submodules", "training", "update_parameter", "zero_grad"]]


@nnabla_case(names=["nnabla.Module"] + MODULE_METHODS, rtol=1e-5)
def Module(nn, F, PF, r):
    """Parameters live in each module (not in the global scope) under ``@child/`` names; the
    ``training`` flag reaches the submodules; saving and loading round-trip the values."""
    Block, Net = _modules(nn, F, PF)
    net = Net()
    x = nn.Variable.from_numpy_array(r.randn(4, 5))
    y = net(x)
    params = net.get_parameters()
    res = {"params": r.set_params(params), "global params": sorted(nn.get_parameters()),
           "names": [net.name, net.first.name, net.first.get_path_name(), net.is_root(),
                     net.first.is_root(), len(net), repr(net)],
           "training": [net.training, net.first.training],
           "own": sorted(net.first.get_parameters(recursive=False))}
    y.forward()
    res["train out"] = y.d.copy()
    net.zero_grad()
    y.backward(r.weights_like(y.d))
    res.update(_grads(params))
    net.training = False
    res["eval flags"] = [net.training, net.first.training, net.second.training]
    y_eval = net(x)
    y_eval.forward()
    res["eval out"] = y_eval.d.copy()
    res["parent"] = [net.first.parent is net, net.parent is None]
    res["submodules"] = list(net.submodules)
    res["scope keys"] = list(net.first.parameter_scope)
    net.set_parameter("@first/scale", nn.Variable.from_numpy_array(np.full((1, 3), 0.5)))
    net.set_parameters({"@second/scale": nn.Variable.from_numpy_array(np.full((1, 2), 2.0)),
                        "@missing/x": nn.Variable((1,))})
    net.update_parameter()
    res["set scales"] = [net.get_parameters()["@first/scale"].d.tolist(),
                         net.get_parameters()["@second/scale"].d.tolist()]
    r.touch(*MODULE_METHODS)
    with r.tempdir() as folder:
        path = os.path.join(folder, "net.h5")
        net.save_parameters(path)
        other = Net()
        other.load_parameters(path)
        loaded = other.get_parameters()
        res["loaded"] = sorted([k, loaded[k].d.ravel().tolist()] for k in loaded)
    return res


@nnabla_case(names=["nnabla.Sequential", "nnabla.Module", "nnabla.Sequential.call"], rtol=1e-5)
def Sequential(nn, F, PF, r):
    """Submodules named ``<snake_case class>_<index>`` or as given; called in order."""
    Block, Net = _modules(nn, F, PF)
    seq = nn.Sequential(Block(3), Block(4), Block(2))
    named = nn.Sequential(("one", Block(3)), ("two", Block(2)))
    x = nn.Variable.from_numpy_array(r.randn(4, 5))
    ys = [seq(x), named(x)]
    params = seq.get_parameters()
    params.update(("named " + k, v) for k, v in named.get_parameters().items())
    res = {"params": r.set_params(params), "len": [len(seq), len(named)]}
    for k, y in enumerate(ys):
        y.forward()
        res["out%d" % k] = y.d.copy()
    r.touch("nnabla.Sequential.call", "nnabla.Module.call")
    try:
        nn.Sequential(F)
    except TypeError:
        res["not a module"] = "TypeError"
    return res


@nnabla_case(names=["nnabla.recompute", "nnabla.recompute_fn", "nnabla.set_global_recompute"],
             rtol=1e-5)
def recompute(nn, F, r):
    """Variables made inside ``recompute()``, a ``recompute_fn`` function or after
    ``set_global_recompute(True)`` carry ``recompute``; the gradients are the usual ones."""
    x = nn.Variable.from_numpy_array(r.randn(3, 4), need_grad=True)
    with nn.recompute():
        a = F.tanh(x)
        with nn.recompute(False):
            b = F.sin(a)
        c = b * a

    @nn.recompute_fn()
    def block(v):
        return F.exp(v * 0.5)
    d = block(c)
    e = F.cos(d)
    nn.set_global_recompute(True)
    f = e + 1.0
    nn.set_global_recompute(False)
    res = {"flags": [a.recompute, b.recompute, c.recompute, d.recompute, e.recompute,
                     f.recompute]}
    loss = F.sum(f * f)
    loss.forward(clear_no_need_grad=True)
    x.g = 0
    loss.backward(clear_buffer=True)
    res["loss"] = loss.d.copy()
    res["grad x"] = x.g.copy()
    return res


@nnabla_case(names=["nnabla.set_solver_pre_hook", "nnabla.set_solver_post_hook",
                    "nnabla.unset_solver_pre_hook", "nnabla.unset_solver_post_hook"])
def solver_hooks(nn, F, PF, S, r):
    """Each registered hook is called before/after each parameter's share of ``update``,
    ``weight_decay``, ``clip_grad_by_norm``, ``scale_grad``, ``check_inf_or_nan_grad``."""
    x = nn.Variable.from_numpy_array(r.randn(2, 3))
    loss = F.sum(PF.affine(x, 2))
    solver = S.Sgd(0.1)
    solver.set_parameters(nn.get_parameters())
    log = []
    nn.set_solver_pre_hook("pre", lambda: log.append("pre"))
    nn.set_solver_post_hook("post", lambda: log.append("post"))
    nn.set_solver_pre_hook("pre2", lambda: log.append("pre2"))
    res = {}
    try:
        loss.forward()
        solver.zero_grad()
        loss.backward()
        for call in ("weight_decay", "clip_grad_by_norm", "scale_grad"):
            del log[:]
            getattr(solver, call)(0.5)
            res[call] = list(log)
        del log[:]
        solver.check_inf_or_nan_grad()
        res["check_inf_or_nan_grad"] = list(log)
        del log[:]
        solver.update()
        res["update"] = list(log)
        nn.unset_solver_pre_hook("pre2")
        del log[:]
        solver.update()
        res["update after unset"] = list(log)
    finally:
        nn.unset_solver_pre_hook("pre")
        nn.unset_solver_post_hook("post")
    del log[:]
    solver.update()
    res["update after all unset"] = list(log)
    return res


@nnabla_case(names=["nnabla.set_function_pre_hook", "nnabla.set_function_post_hook",
                    "nnabla.unset_function_pre_hook", "nnabla.unset_function_post_hook"])
def function_hooks(nn, F, r):
    """The hooks get each function (type name, input and output shapes) before and after it
    runs in a static forward and, in reverse, in backward; the post hook sees the outputs'
    values; ``forward``'s own hook runs after the global ones; none in ``auto_forward``."""
    x = nn.Variable.from_numpy_array(r.randn(2, 3), need_grad=True)
    y = F.sum(F.tanh(x) * 2.0)
    log = []

    def pre(f):
        log.append(["pre", f.info.type_name, [list(v.shape) for v in f.inputs],
                    [list(v.shape) for v in f.outputs]])

    def post(f):
        log.append(["post", f.info.type_name, float(np.sum(f.outputs[0].d))])
    nn.set_function_pre_hook("a", pre)
    nn.set_function_post_hook("b", post)
    res = {}
    try:
        y.forward()
        res["forward"], log[:] = list(log), []
        x.g = 0
        y.backward()
        res["backward"] = [entry[:2] for entry in log]
        res["grad x"] = x.g.copy()
        log[:] = []
        y.forward(function_pre_hook=lambda f: log.append(["arg"]))
        res["forward with argument"] = [entry[:2] for entry in log]
        log[:] = []
        with nn.auto_forward():
            F.relu(x)
        res["auto_forward"] = list(log)
    finally:
        nn.unset_function_pre_hook("a")
        nn.unset_function_post_hook("b")
    nn.unset_function_pre_hook("never set")
    log[:] = []
    y.forward()
    res["after unset"] = list(log)
    res["out"] = y.d.copy()
    return res
