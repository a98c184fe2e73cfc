"""NNabla 1.39 fidelity: a ``PythonFunction`` whose backward gets several inputs needing a
gradient, in NNabla's backward order.

NNabla runs the backward function by function into each Variable's gradient array
(``CgVariable::visit_function_backward``, src/nbla/computation_graph/variable.cpp): a
``backward_impl`` sees in ``inputs[i].g`` what the functions run before it left in input
``i``'s array, and ``accum[i]`` from ``get_accum`` (a leaf's True unless zeroed, True too where
two positions hold the same Variable, which then share one array; an inner Variable's False
where this function visits it first).  Stadyn held back only a function with one input
needing a gradient (graph/_reader_order.py); one of several ran as torch's autograd reached
it, saw each leaf's gradient from before the backward, one array per position, and two such
functions ran in torch's order: an assigning backward (``inputs[i].g = ...``) then left other
gradients than NNabla's.  One of an intermediate and another Variable (``Mul2(h, z)``) ran as
torch reached it until session 35: ``h.g`` at 0 with accum False (NNabla's [3, 3, 3], True),
and an assigning one left x.g [13, 15, 3] (NNabla's [7, 9, -3]).
"""

import numpy as np

from compat_harness import nnabla_case
from compat_cases.nnabla_pyfunc_helpers import mul2, write_products


def _mul2(PythonFunction, seen, tag, assign):
    def backward(inputs, outputs, propagate_down, accum):   # two inputs needing a gradient
        seen.append((tag, [bool(p) for p in propagate_down], [bool(a) for a in accum],
                     inputs[0].g.copy(), inputs[1].g.copy()))
        write_products(inputs, outputs, accum, assign, propagate_down)

    return mul2(PythonFunction, backward)


# name -> loss made by (F, nn, M(tag, assign), x, z); x, z leaves needing a gradient
_GRAPHS = {
    "Mul2(x, x) after x * 3": lambda F, nn, M, x, z: F.sum(x * 3.0) + F.sum(M("m", False)(x, x)),
    "Mul2(x, x) alone": lambda F, nn, M, x, z: F.sum(M("m", False)(x, x)),
    "Mul2(x, x) before x * 3": lambda F, nn, M, x, z: F.sum(M("m", False)(x, x)) + F.sum(x * 3.0),
    "assigning Mul2(x, x) after x * 3":
        lambda F, nn, M, x, z: F.sum(x * 3.0) + F.sum(M("m", True)(x, x)),
    "Mul2(x, z)": lambda F, nn, M, x, z: F.sum(M("m", False)(x, z)),
    "Mul2(x, z) after x * 3": lambda F, nn, M, x, z: F.sum(x * 3.0) + F.sum(M("m", False)(x, z)),
    "Mul2(x, z) after z * 5": lambda F, nn, M, x, z: F.sum(z * 5.0) + F.sum(M("m", False)(x, z)),
    "assigning Mul2(x, z) after x * 3 and z * 5":
        lambda F, nn, M, x, z: F.sum(x * 3.0) + F.sum(z * 5.0) + F.sum(M("m", True)(x, z)),
    "Mul2(x, c), c needing no gradient, after x * 3":
        lambda F, nn, M, x, z: F.sum(x * 3.0) + F.sum(M("m", False)(x, nn.Variable.from_numpy_array(
            np.array([2.0, 3.0, 4.0], np.float32), need_grad=False))),
    "add2(Mul2(x, z), x)": lambda F, nn, M, x, z: F.sum(F.add2(M("m", False)(x, z), x)),
    "add2(Mul2(x, x), x)": lambda F, nn, M, x, z: F.sum(F.add2(M("m", False)(x, x), x)),
    "assigning add2(Mul2(x, z), x)": lambda F, nn, M, x, z: F.sum(F.add2(M("m", True)(x, z), x)),
    "Mul2(h, h) after h * 3, h = 2x":
        lambda F, nn, M, x, z: (lambda h: F.sum(h * 3.0) + F.sum(M("m", False)(h, h)))(x * 2.0),
    "assigning Mul2(h, h), h = 2x":
        lambda F, nn, M, x, z: (lambda h: F.sum(M("m", True)(h, h)))(x * 2.0),
    "Mul2(h, z) after h * 3, h = 2x":
        lambda F, nn, M, x, z: (lambda h: F.sum(h * 3.0) + F.sum(M("m", False)(h, z)))(x * 2.0),
    "assigning Mul2(h, z) after h * 3, h = 2x":
        lambda F, nn, M, x, z: (lambda h: F.sum(h * 3.0) + F.sum(M("m", True)(h, z)))(x * 2.0),
    "assigning Mul2(h, x) after h * 3, h = 2x":
        lambda F, nn, M, x, z: (lambda h: F.sum(h * 3.0) + F.sum(M("m", True)(h, x)))(x * 2.0),
    "assigning Mul2(h, g) after h * 3, h = 2x, g = 3z":
        lambda F, nn, M, x, z: (lambda h, g: F.sum(h * 3.0) + F.sum(M("m", True)(h, g)))(
            x * 2.0, z * 3.0),
    "two assigning Mul2(h, z) after h * 3, h = 2x":
        lambda F, nn, M, x, z: (lambda h: F.sum(h * 3.0) + F.sum(M("a", True)(h, z))
                                + F.sum(M("b", True)(h, z)))(x * 2.0),
    "Mul2(x, z) then Mul2(z, x)":
        lambda F, nn, M, x, z: F.sum(M("a", False)(x, z)) + F.sum(M("b", False)(z, x)),
    "assigning Mul2(x, z) then Mul2(z, x)":
        lambda F, nn, M, x, z: F.sum(M("a", True)(x, z)) + F.sum(M("b", False)(z, x)),
}

_MODES = ("static", "dynamic", "static, clear_buffer", "static, zeroed")
_TWO_INNER = (
    "graph/_reader_leaves.py (arrange_mixed) runs Mul2(h, g) (two inner inputs) when the "
    "first of h's and g's gradients is complete; a static plan makes g = 3z's autograd node "
    "after h * 3's, so torch completes g before it runs h * 3's backward, and backward_impl "
    "sees h.g at 0 with accum False, NNabla's [3, 3, 3] (h * 3's part) with accum True (x.g "
    "and z.g agree: this backward assigns); the dynamic graph's order agrees with NNabla's")
_TWO_INNER_KEYS = ["assigning Mul2(h, g) after h * 3, h = 2x, g = 3z: %s: %s" % (m, k)
                   for m in _MODES if m != "dynamic"
                   for k in ("backward_impl 0", "backward_impl 0 inputs[0].g")]


@nnabla_case(names=["nnabla.function.PythonFunction", "nnabla.Variable.backward"],
             note="x = [0.5, -1, 2] (x.g = 1), z = [3, 4, -2] (z.g = 10), or both zeroed; "
                  "Mul2 (a PythonFunction of two inputs, adding where accum or always "
                  "writing) reading x twice, x and z, x and a Variable needing no gradient, "
                  "h = 2x twice, h and z, two of them (two Mul2(h, z) too), one before F.add2 "
                  "reading x too: the propagate_down, accum, inputs[0].g and inputs[1].g each "
                  "backward_impl sees, x.g and z.g; static and dynamic, static with "
                  "backward(clear_buffer)",
             known=dict((k, _TWO_INNER) for k in _TWO_INNER_KEYS))
def python_function__several_inputs_needing_a_gradient(nn, F, PF, r):
    PythonFunction = r.module("nnabla.function").PythonFunction
    r.touch("nnabla.function.PythonFunction", "nnabla.Variable.backward")
    res = {}
    for name in sorted(_GRAPHS):
        for dynamic, clear, zeroed in ((False, False, False), (True, False, False),
                                       (False, True, False), (False, False, True)):
            mode = ("dynamic" if dynamic else "static") + (", clear_buffer" if clear else "") \
                + (", zeroed" if zeroed else "")
            seen = []
            nn.set_auto_forward(dynamic)
            try:
                x = nn.Variable.from_numpy_array(np.array([0.5, -1.0, 2.0], np.float32),
                                                 need_grad=True)
                z = nn.Variable.from_numpy_array(np.array([3.0, 4.0, -2.0], np.float32),
                                                 need_grad=True)
                loss = _GRAPHS[name](
                    F, nn, lambda tag, assign: _mul2(PythonFunction, seen, tag, assign), x, z)
            finally:
                nn.set_auto_forward(False)
            if not dynamic:
                loss.forward()
            if zeroed:
                x.grad.zero()
                z.grad.zero()
            else:
                x.g = 1.0
                z.g = 10.0
            loss.backward(clear_buffer=clear)
            key = "%s: %s: " % (name, mode)
            res[key + "x.g"] = x.g.copy()
            res[key + "z.g"] = z.g.copy()
            for k, (tag, down, accum, g0, g1) in enumerate(seen):
                res[key + "backward_impl %d" % k] = [tag, down, accum]
                res[key + "backward_impl %d inputs[0].g" % k] = g0
                res[key + "backward_impl %d inputs[1].g" % k] = g1
    return res



@nnabla_case(names=["nnabla.function.PythonFunction", "nnabla.parameter.get_parameter_or_create",
                    "nnabla.parametric_functions.affine", "nnabla.set_auto_forward"],
             note="registered parameters a, b (get_parameter_or_create, made in a static or a "
                  "dynamic graph) read by two assigning Mul2s, sum(Mul2(a, b)) + "
                  "sum(Mul2(b, a)), in a dynamic graph (and a static one): a.g, b.g and what "
                  "each backward_impl sees (zeroed gradients first); PF.affine's W and a "
                  "parameter v read by an assigning Mul2(W, v), tanh(W) and an adding "
                  "Mul2(v, v), trained 3 SGD steps (lr 0.1) in a dynamic graph: the "
                  "parameters after each")
def python_function__registered_parameters(nn, F, PF, r):
    PythonFunction = r.module("nnabla.function").PythonFunction
    S = r.module("nnabla.solvers")
    r.touch("nnabla.function.PythonFunction", "nnabla.set_auto_forward")
    res = {}
    for made_dynamic, used_dynamic in ((False, True), (True, True), (False, False)):
        seen = []
        nn.clear_parameters()
        nn.set_auto_forward(made_dynamic)
        try:
            a = nn.parameter.get_parameter_or_create(
                "a", (1, 3), initializer=np.array([[0.5, -1.0, 2.0]], np.float32))
            b = nn.parameter.get_parameter_or_create(
                "b", (1, 3), initializer=np.array([[3.0, 4.0, -2.0]], np.float32))
            nn.set_auto_forward(used_dynamic)
            loss = F.sum(_mul2(PythonFunction, seen, "m", True)(a, b)) \
                + F.sum(_mul2(PythonFunction, seen, "k", True)(b, a))
        finally:
            nn.set_auto_forward(False)
        if not used_dynamic:
            loss.forward()
        a.grad.zero()
        b.grad.zero()
        loss.backward()
        key = "made %s, used %s: " % ("dynamic" if made_dynamic else "static",
                                      "dynamic" if used_dynamic else "static")
        res[key + "a.g"] = a.g.copy()
        res[key + "b.g"] = b.g.copy()
        for k, (tag, down, accum, g0, g1) in enumerate(seen):
            res[key + "backward_impl %d" % k] = [tag, down, accum]
            res[key + "backward_impl %d inputs[0].g" % k] = g0
            res[key + "backward_impl %d inputs[1].g" % k] = g1
    nn.clear_parameters()
    x = nn.Variable.from_numpy_array(
        np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5], [0.3, 0.8, -1.2]], np.float32))

    def build(seen):
        nn.set_auto_forward(True)
        try:
            with nn.parameter_scope("fc"):
                y = PF.affine(x, 3, w_init=np.array([[0.2, -0.4, 0.6], [0.1, 0.3, -0.5],
                                                     [-0.2, 0.7, 0.4]], np.float32))
                v = nn.parameter.get_parameter_or_create(
                    "v", (3, 3), initializer=np.array([[0.5, -0.3, 0.8], [-0.6, 0.2, 0.4],
                                                       [0.9, -0.1, 0.3]], np.float32))
            w = nn.get_parameters()["fc/affine/W"]
            return F.mean(y * x) + F.mean(_mul2(PythonFunction, seen, "wv", True)(w, v) * x) \
                + F.mean(F.tanh(w) * x) + F.mean(_mul2(PythonFunction, seen, "vv", False)(v, v))
        finally:
            nn.set_auto_forward(False)

    build([])
    solver = S.Sgd(0.1)
    solver.set_parameters(nn.get_parameters())
    for step in range(3):
        seen = []
        loss = build(seen)
        solver.zero_grad()
        loss.backward(clear_buffer=True)
        solver.update()
        for name, p in sorted(nn.get_parameters().items()):
            res["SGD step %d: %s" % (step, name)] = p.d.copy()
        res["SGD step %d: backward_impl" % step] = [list(s[:3]) for s in seen]
    return res


_BN_WRITES = {"mean": ("bn/mean", [3.0, -2.0]), "var": ("bn/var", [0.25, 9.0]),
              "beta": ("bn/beta", [3.0, -2.0]), "gamma": ("bn/gamma", [3.0, -2.0])}
_BN_ORDERS = {"mean": ["mean"], "var": ["var"], "mean and var": ["mean", "var"],
              "beta": ["beta"], "gamma": ["gamma"]}


@nnabla_case(names=["nnabla.parametric_functions.batch_normalization"],
             note="PF.batch_normalization(x, batch_stat=False), x (3, 2, 1, 1), running mean "
                  "[0.5, 1] and var [2, 4] set before a static forward (after a dynamic one, "
                  "which reads 0 and 1); bn/mean, bn/var, both, "
                  "bn/beta or bn/gamma written (.d) between the forward and y.backward(w): y, "
                  "x.g and every parameter's g (NNabla differentiates with the values the "
                  "backward finds: the new ones); static and dynamic (a dynamic graph's "
                  "gamma written: refused before nnhalf43, graph/_written_leaves.py)")
def bn_running_stats_written_before_backward(nn, F, PF, r):
    res = {}
    for dynamic in (False, True):
        for name in sorted(_BN_ORDERS):
            key = "%s: %s written: " % ("dynamic" if dynamic else "static", name)
            nn.clear_parameters()
            nn.set_auto_forward(dynamic)
            try:
                x = nn.Variable.from_numpy_array(
                    np.array([1.0, 2.0, 3.0, -1.0, 0.5, 4.0], np.float32).reshape(3, 2, 1, 1),
                    need_grad=True)
                y = PF.batch_normalization(x, batch_stat=False)
            finally:
                nn.set_auto_forward(False)
            params = nn.get_parameters(grad_only=False)
            params["bn/mean"].d = np.array([0.5, 1.0]).reshape(1, 2, 1, 1)
            params["bn/var"].d = np.array([2.0, 4.0]).reshape(1, 2, 1, 1)
            if not dynamic:
                y.forward()
            for which in _BN_ORDERS[name]:
                pname, value = _BN_WRITES[which]
                params[pname].d = np.array(value, np.float32).reshape(1, 2, 1, 1)
            for v in list(params.values()) + [x]:
                v.grad.zero()
            res[key + "y"] = y.d.copy()
            try:
                y.backward(np.arange(1, 7, dtype=np.float32).reshape(3, 2, 1, 1))
                res[key + "raised"] = None
            except Exception as e:
                res[key + "raised"] = type(e).__name__
                continue
            res[key + "x.g"] = x.g.copy()
            for pname in sorted(params):
                res[key + pname + ".g"] = params[pname].g.copy()
    return res


def _mmq_graph(nn, F, x_need_grad):
    x = nn.Variable.from_numpy_array(
        np.array([[0.5, -1.0, 2.0, 3.5], [1.5, 0.25, -0.5, -2.5]], np.float32),
        need_grad=x_need_grad)
    w = nn.Variable.from_numpy_array(np.array([[1.0, 2.0, -1.0, 0.5]], np.float32),
                                     need_grad=True)
    z = nn.Variable.from_numpy_array(
        np.array([[0.3, -0.7, 1.1, 0.2], [0.9, 0.2, -0.4, 0.5]], np.float32))
    qmin, qmax, lmin, lmax = (nn.Variable.from_numpy_array(np.array([[v]], np.float32))
                              for v in (-0.5, 0.5, 0.0, 255.0))
    h = x * w
    y = F.min_max_quantize(h, qmin, qmax, lmin, lmax, decay=0.5, x_min_max=True, ema=True,
                           ste_fine_grained=True)
    return x, w, h, qmin, qmax, F.sum(F.tanh(y) * z)


@nnabla_case(names=["nnabla.Variable.need_grad", "nnabla.Variable.backward",
                    "nnabla.functions.min_max_quantize"],
             note="a static graph (Stadyn lowers it to one program): h = x * w, y = "
                  "min_max_quantize(h, qr_min, qr_max, 0, 255, decay=0.5, x_min_max=True, "
                  "ema=True), loss = sum(tanh(y) * z); x.need_grad set True (or h.need_grad "
                  "False) after the forward, then backward, forward, backward, forward: the "
                  "moving range, the loss, x.g and w.g after each (NNabla differentiates the "
                  "forward that ran and moves the range once per forward)")
def late_need_grad__min_max_quantize_ema_lowered_runs(nn, F, PF, r):
    r.touch("nnabla.Variable.need_grad", "nnabla.Variable.backward")
    res = {}
    for how in ("x switched on", "h stopped"):
        x, w, h, qmin, qmax, loss = _mmq_graph(nn, F, how == "h stopped")
        for step in range(3):
            loss.forward()
            key = "%s: forward %d: " % (how, step)
            res[key + "qr"] = [qmin.d.copy(), qmax.d.copy()]
            res[key + "loss"] = loss.d.copy()
            if step == 0:
                if how == "x switched on":
                    x.need_grad = True
                else:
                    h.need_grad = False
            if step == 2:
                break
            x.grad.zero()
            w.grad.zero()
            loss.backward()
            key = "%s: backward %d: " % (how, step)
            res[key + "qr"] = [qmin.d.copy(), qmax.d.copy()]
            res[key + "x.g"] = x.g.copy()
            res[key + "w.g"] = w.g.copy()
    return res
