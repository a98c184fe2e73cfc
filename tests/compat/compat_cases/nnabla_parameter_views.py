"""``nnabla.parameter.get_parameter_or_create`` hands out views: NNabla 1.39 returns, on every
call, a new Variable unlinked from the registered one (``get_unlinked_variable``) that shares
its value and gradient, with the flag ``as_need_grad`` of its own."""

import numpy as np

from compat_harness import nnabla_case

GPOC = "nnabla.parameter.get_parameter_or_create"


@nnabla_case(names=[GPOC, "nnabla.parameter.get_parameter"],
             note="two calls give two Variables over one value and gradient; the registered "
                  "one (get_parameters) is a third; need_grad set on a view stays on it")
def get_parameter_or_create_views(nn, F, S, r):
    res = {}
    with nn.parameter_scope("s"):
        a = nn.parameter.get_parameter_or_create("W", (2, 3))
        b = nn.parameter.get_parameter_or_create("W", (2, 3))
        registered = nn.get_parameters()["W"]
        res["a is b"] = a is b
        res["registered is a"] = registered is a
        res["get_parameter is registered"] = nn.parameter.get_parameter("W") is registered
        res["names"] = [a.name, b.name, a.parent is None, a.need_grad]
        a.d = r.randn(2, 3)
        res["b.d after a.d ="] = b.d.copy()
        res["registered.d after a.d ="] = registered.d.copy()
        b.g = r.randn(2, 3)
        res["a.g after b.g ="] = a.g.copy()
        res["registered.g after b.g ="] = registered.g.copy()
        registered.d = r.randn(2, 3)
        res["a.d after registered.d ="] = a.d.copy()
        a.need_grad = False
        res["after a.need_grad = False"] = [a.need_grad, b.need_grad, registered.need_grad,
                                            list(nn.get_parameters())]
        # a graph on a view: the registered parameter gets the gradient, a solver on
        # get_parameters() updates what every view reads
        x = nn.Variable.from_numpy_array(r.randn(4, 2))
        y = F.sum(F.affine(x, b) ** 2)
        solver = S.Sgd(0.1)
        solver.set_parameters(nn.get_parameters())
        solver.zero_grad()
        y.forward()
        y.backward()
        res["loss"] = y.d.copy()
        res["registered.g after backward"] = registered.g.copy()
        solver.update()
        res["a.d after update"] = a.d.copy()
        c = nn.parameter.get_parameter_or_create("W", (2, 3), need_grad=False)
        res["asked with need_grad=False"] = [c.need_grad, registered.need_grad, b.need_grad,
                                             list(nn.get_parameters()),
                                             list(nn.get_parameters(grad_only=False))]
        p = nn.parameter.get_parameter_or_create("fc/b", (3,), np.arange(3.0))
        res["nested name"] = [p.name, p.d.copy(), list(nn.get_parameters())]
    return res


@nnabla_case(names=[GPOC, "nnabla.solvers.Sgd", "nnabla.no_grad"],
             note="need_grad is the registered flag, as_need_grad the view's: need_grad=False "
                  "with as_need_grad=True is a trainable view of a parameter get_parameters() "
                  "leaves out; a solver updates it only when given the view; no_grad makes "
                  "every view need no gradient")
def get_parameter_or_create_as_need_grad(nn, F, S, r):
    res = {}
    v = nn.parameter.get_parameter_or_create("F", (3,), r.randn(3), need_grad=False,
                                             as_need_grad=True)
    registered = nn.get_parameters(grad_only=False)["F"]
    res["F"] = [v.need_grad, registered.need_grad, list(nn.get_parameters()),
                list(nn.get_parameters(grad_only=False))]
    x = nn.Variable.from_numpy_array(r.randn(3))
    y = F.sum(v * x)
    on_all = S.Sgd(0.5)
    on_all.set_parameters(nn.get_parameters())
    res["solver on get_parameters()"] = sorted(on_all.get_parameters())
    y.forward()
    v.grad.zero()
    y.backward()
    res["view g"] = v.g.copy()
    res["registered g"] = registered.g.copy()
    on_all.update()
    res["after an update of get_parameters()"] = registered.d.copy()
    on_view = S.Sgd(0.5)
    on_view.set_parameters({"F": v})
    on_view.update()
    res["after an update of the view"] = [v.d.copy(), registered.d.copy()]
    g = nn.parameter.get_parameter_or_create("G", (2,), need_grad=True, as_need_grad=False)
    res["G"] = [g.need_grad, nn.get_parameters()["G"].need_grad, list(nn.get_parameters())]
    g2 = nn.parameter.get_parameter_or_create("G", (2,), need_grad=False, as_need_grad=True)
    res["G asked again"] = [g2.need_grad, list(nn.get_parameters())]
    with nn.no_grad():
        h = nn.parameter.get_parameter_or_create("H", (2,), need_grad=True, as_need_grad=True)
        res["H in no_grad"] = [h.need_grad, nn.get_parameters()["H"].need_grad]
    return res


@nnabla_case(names=[GPOC, "nnabla.parametric_functions.affine",
                    "nnabla.parametric_functions.convolution"],
             note="a number as an initializer is NNabla 1.39's ValueError when the parameter "
                  "is made (Stadyn filled the parameter with it); an existing one is found")
def get_parameter_or_create__number_initializer(nn, PF, r):
    res = {}
    calls = {"gpoc float": lambda: nn.parameter.get_parameter_or_create("w", (2, 3), 0.5),
             "gpoc int": lambda: nn.parameter.get_parameter_or_create("v", (2,), 1),
             "affine w_init": lambda: PF.affine(nn.Variable((1, 2)), 3, w_init=0.5),
             "conv b_init": lambda: PF.convolution(nn.Variable((1, 1, 3, 3)), 2, (2, 2),
                                                   b_init=0.25, name="c")}
    for key, call in calls.items():
        try:
            res[key] = call().shape
        except ValueError as e:
            res[key] = ["ValueError", str(e)]
    with nn.parameter_scope("found"):
        nn.parameter.get_parameter_or_create("u", (2,))
        res["existing, float"] = nn.parameter.get_parameter_or_create("u", (2,), 0.5).shape
    return res
