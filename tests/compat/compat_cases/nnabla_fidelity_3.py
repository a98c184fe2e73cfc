"""Integer inputs of NNabla 1.39's functions (computed in float32), and NNabla 1.39's
parameters as its parametric functions hand them out: each call gives the
graph a new Variable over the registered parameter's arrays (``get_unlinked_variable``), with
a ``need_grad`` of its own, so setting ``need_grad`` on the registered parameter after the
graph was built (``nn.get_parameters()[...]``) does not stop the gradient: a backward still
writes it (static and dynamic graphs).  A plain Variable's flag, set after the graph was
built, does stop it (NNabla reads the leaf's own flag).  (Stadyn keeps the registered flag
apart: ``compat/nnabla/_registered_flags.py``.)
"""

from compat_harness import nnabla_case


def _affine_net(nn, F, PF, x):
    with nn.parameter_scope("b"):
        h = F.tanh(PF.affine(x, 2, name="z"))
    with nn.parameter_scope("a"):
        return F.sum(PF.affine(h, 1, name="y"))


@nnabla_case(names=["nnabla.parametric_functions.affine", "nnabla.get_parameters",
                    "nnabla.Variable.need_grad"],
             note="the registered W set need_grad=False after the graph was built still gets "
                  "its gradient; a plain leaf's flag set then stops it")
def parameter_need_grad_after_build(nn, F, PF, r):
    r.touch("nnabla.Variable.need_grad")
    res = {}
    for dynamic in (False, True):
        nn.clear_parameters()
        nn.set_auto_forward(dynamic)
        try:
            x = nn.Variable.from_numpy_array(r.randn(2, 3))
            y = _affine_net(nn, F, PF, x)
            params = nn.get_parameters(grad_only=False)
            for name in sorted(params):
                params[name].d = r.param_value(name, params[name].shape)
            if dynamic:            # the values set above: build again with them
                y = _affine_net(nn, F, PF, x)
            params["b/z/affine/W"].need_grad = False
            for p in params.values():
                p.g = 0
            if not dynamic:
                y.forward()
            y.backward()
            mode = "dynamic" if dynamic else "static"
            res[mode + " W.g"] = params["b/z/affine/W"].g.copy()
            res[mode + " b.g"] = params["b/z/affine/b"].g.copy()
            res[mode + " listed"] = sorted(nn.get_parameters())
            # a plain leaf set need_grad=False after the graph was built gets no gradient
            w = nn.Variable.from_numpy_array(r.randn(3, 2), need_grad=True)
            z = F.sum(F.tanh(F.affine(x, w)))
            w.need_grad = False
            w.g = 0
            if not dynamic:
                z.forward()
            z.backward()
            res[mode + " plain leaf g"] = w.g.copy()
        finally:
            nn.set_auto_forward(False)
    nn.clear_parameters()
    return res


@nnabla_case(names=["nnabla.functions." + n for n in (
                 "add2", "sub2", "mul2", "maximum2", "minimum2", "sum", "max", "min", "prod",
                 "relu", "cumsum", "abs", "greater")],
             note="NNabla's functions read int32 inputs as float32 and write float32 "
                  "(Stadyn's ops computed int32, or int64 for sum, prod and cumsum)")
def integer_inputs__float32(nn, F, r):
    res = {}
    a_np = r.randint(-4, 5, (2, 3))
    b_np = r.randint(-4, 5, (1, 3))
    for dynamic in (False, True):
        mode = "dynamic " if dynamic else ""
        nn.set_auto_forward(dynamic)
        try:
            a = nn.Variable.from_numpy_array(a_np)
            b = nn.Variable.from_numpy_array(b_np)
            outs = {"add2": F.add2(a, b), "sub2": F.sub2(a, b), "mul2": F.mul2(a, b),
                    "maximum2": F.maximum2(a, b), "minimum2": F.minimum2(a, b),
                    "sum": F.sum(a, axis=1), "sum all": F.sum(a), "max": F.max(a, axis=0),
                    "min keepdims": F.min(a, axis=1, keepdims=True), "prod": F.prod(a, axis=1),
                    "relu": F.relu(a), "cumsum": F.cumsum(a, axis=1), "abs": F.abs(a),
                    "greater": F.greater(a, b), "a + b": a + b, "a * b": a * b,
                    "a - b": a - b}
            for key in sorted(outs):
                if not dynamic:
                    outs[key].forward()
                res[mode + key] = outs[key].d.copy()
        finally:
            nn.set_auto_forward(False)
    return res
