"""NNabla 1.39 fidelity: a ``need_grad`` set after the forward (a leaf switched on, an
intermediate stopped), then a backward, over functions that update running statistics.

NNabla runs no forward again for such a backward: it differentiates the forward that ran, with
the statistics that forward computed, and leaves the running statistics as that forward left
them.  Stadyn runs the forward again for it (``graph/_runner.py``: a static graph's plan under
the marks of now; ``graph/_late_leaves.py``: in dynamic mode the ops that used a leaf switched
on late).  It refused where that run would update running statistics: a static graph lowered
to one program (``batch_normalization``), an op of a dynamic graph run again for a late leaf
(``batch_normalization``), and ``mean_subtraction`` anywhere (it subtracts the mean it has just
updated and scales its gradient by the count it has just incremented).

A ``PythonFunction``'s ``backward_impl`` reading an input other functions read too: NNabla runs
the functions' backward one by one into the input's gradient (highest rank first, then the one
found first from the root), so ``backward_impl`` sees in ``inputs[0].g`` what those run before
it left there, with ``accum`` True, and an assigning one overwrites it.  Stadyn's backward is
torch's autograd, which adds the readers' parts up out of sight; ``backward_impl`` saw the
leaf's gradient from before the backward (zeros for an inner Variable).
"""

import numpy as np

from compat_harness import nnabla_case
from compat_cases.nnabla_pyfunc_helpers import mul2, square, write_products, write_square_grad

_F = "nnabla.functions."

_HOWS = ("x switched on", "gamma switched on", "h stopped")


def _batch_normalization(nn, F, dynamic, how):
    nn.set_auto_forward(dynamic)
    try:
        x = nn.Variable.from_numpy_array(
            np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5], [-2.0, 3.0, 1.0],
                      [0.75, -0.25, 0.5]], np.float32), need_grad=(how == "h stopped"))
        w = nn.Variable.from_numpy_array(np.array([[1.0, 2.0, -1.0]], np.float32),
                                         need_grad=True)
        z = nn.Variable.from_numpy_array(
            np.array([[0.3, -0.7, 1.1], [0.9, 0.2, -0.4], [-1.3, 0.6, 0.8],
                      [0.5, -0.1, 0.35]], np.float32))
        beta = nn.Variable.from_numpy_array(np.array([[0.1, -0.2, 0.3]], np.float32),
                                            need_grad=True)
        gamma = nn.Variable.from_numpy_array(np.array([[1.5, 0.5, -1.0]], np.float32),
                                             need_grad=(how != "gamma switched on"))
        rm = nn.Variable.from_numpy_array(np.array([[0.2, 0.1, -0.3]], np.float32))
        rv = nn.Variable.from_numpy_array(np.array([[1.0, 2.0, 0.5]], np.float32))
        h = x * w
        y = F.batch_normalization(h, beta, gamma, rm, rv, batch_stat=True)
        loss = F.sum(F.tanh(y) * z)
        if not dynamic:
            loss.forward()
        res = {"forward: mean": rm.d.copy(), "forward: var": rv.d.copy(),
               "loss": loss.d.copy()}
        if how == "x switched on":
            x.need_grad = True
        elif how == "gamma switched on":
            gamma.need_grad = True
        else:
            h.need_grad = False
        for v in (x, w, beta, gamma):
            v.grad.zero()
        loss.backward()
        res.update({"backward: mean": rm.d.copy(), "backward: var": rv.d.copy(),
                    "x.g": x.g.copy(), "w.g": w.g.copy(), "beta.g": beta.g.copy(),
                    "gamma.g": gamma.g.copy()})
        if not dynamic:                   # the next forward continues from the statistics
            loss.forward()
            res.update({"again: mean": rm.d.copy(), "again: var": rv.d.copy()})
        return res
    finally:
        nn.set_auto_forward(False)


@nnabla_case(names=["nnabla.Variable.need_grad", "nnabla.Variable.backward",
                    _F + "batch_normalization"],
             note="x (4, 3), h = x * w, y = batch_normalization(h, beta, gamma, rm, rv, "
                  "batch_stat=True), loss = sum(tanh(y) * z); static (loss.forward()) and "
                  "dynamic (auto_forward); after the forward x.need_grad = True, "
                  "gamma.need_grad = True or h.need_grad = False, then loss.backward(): the "
                  "running statistics after the forward, the backward and a next forward, "
                  "and the gradients")
def late_need_grad__batch_normalization_static_and_dynamic(nn, F, PF, r):
    r.touch("nnabla.Variable.need_grad", "nnabla.Variable.backward")
    res = {}
    for dynamic in (False, True):
        mode = "dynamic" if dynamic else "static"
        for how in _HOWS:
            for k, v in _batch_normalization(nn, F, dynamic, how).items():
                res["%s: %s: %s" % (mode, how, k)] = v
    return res


def _mean_subtraction(nn, F, PF, dynamic, how, parametric):
    nn.clear_parameters()
    nn.set_auto_forward(dynamic)
    try:
        x = nn.Variable.from_numpy_array(
            np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5], [-2.0, 3.0, 1.0]], np.float32),
            need_grad=(how == "h stopped"))
        w = nn.Variable.from_numpy_array(np.array([[1.0, 2.0, -1.0]], np.float32),
                                         need_grad=True)
        z = nn.Variable.from_numpy_array(
            np.array([[0.3, -0.7, 1.1], [0.9, 0.2, -0.4], [-1.3, 0.6, 0.8]], np.float32))
        h = x * w
        if parametric:
            y = PF.mean_subtraction(h)
            params = nn.get_parameters(grad_only=False)
            rm, t = params["mean_subtraction/mean"], params["mean_subtraction/t"]
        else:
            rm = nn.Variable.from_numpy_array(np.array([0.2, 0.1, -0.3], np.float32))
            t = nn.Variable.from_numpy_array(np.array([2.0], np.float32))
            y = F.mean_subtraction(h, rm, t)
        loss = F.sum(F.tanh(y) * z)
        if not dynamic:
            loss.forward()
        res = {"forward: mean": rm.d.copy(), "forward: t": t.d.astype(np.float32),
               "loss": loss.d.copy()}
        if how == "x switched on":
            x.need_grad = True
        else:
            h.need_grad = False
        x.grad.zero()
        w.grad.zero()
        loss.backward()
        res.update({"backward: mean": rm.d.copy(), "backward: t": t.d.astype(np.float32),
                    "x.g": x.g.copy(), "w.g": w.g.copy()})
        if not dynamic:
            loss.forward()
            res.update({"again: mean": rm.d.copy(), "again: t": t.d.astype(np.float32),
                        "again: loss": loss.d.copy()})
        return res
    finally:
        nn.set_auto_forward(False)
        nn.clear_parameters()


@nnabla_case(names=["nnabla.Variable.need_grad", "nnabla.Variable.backward",
                    _F + "mean_subtraction", "nnabla.parametric_functions.mean_subtraction"],
             note="x (3, 3), h = x * w, y = F.mean_subtraction(h, rm, t) (t = 2) or "
                  "PF.mean_subtraction(h), loss = sum(tanh(y) * z); static and dynamic; "
                  "after the forward x.need_grad = True or h.need_grad = False, then "
                  "loss.backward(): the running mean and count after the forward, the "
                  "backward and (static) a next forward, and the gradients")
def late_need_grad__mean_subtraction_static_and_dynamic(nn, F, PF, r):
    r.touch("nnabla.Variable.need_grad", "nnabla.Variable.backward")
    res = {}
    for parametric in (False, True):
        fn = "PF" if parametric else "F"
        for dynamic in (False, True):
            mode = "dynamic" if dynamic else "static"
            for how in ("x switched on", "h stopped"):
                for k, v in _mean_subtraction(nn, F, PF, dynamic, how, parametric).items():
                    res["%s: %s: %s: %s" % (fn, mode, how, k)] = v
    return res


def _square(PythonFunction, seen, tag, assign):
    def backward(inputs, outputs, propagate_down, accum):
        seen.append((tag, bool(accum[0]), inputs[0].g.copy()))
        write_square_grad(inputs, outputs, accum, assign)
    return square(PythonFunction, backward)


# graph -> loss from x (a leaf) or h = 2x, made by (F, Sq(tag, assign), x)
_GRAPHS = {
    "assigning, leaf read first by x * 3":
        lambda F, Sq, x: F.sum(x * 3.0) + F.sum(Sq("a", True)(x)),
    "made after, deeper: tanh(tanh(x * 5)) runs first":
        lambda F, Sq, x: F.sum(x * 3.0) + F.sum(Sq("a", False)(x))
        + F.sum(F.tanh(F.tanh(x * 5.0))),
    "two PythonFunctions reading h":
        lambda F, Sq, x: F.sum(Sq("a", False)(x * 2.0) * 2.0)
        + F.sum(Sq("b", False)(x * 2.0)),
    "two PythonFunctions reading one h, an assigning one second":
        lambda F, Sq, x: (lambda h: F.sum(Sq("a", False)(h)) + F.sum(Sq("b", True)(h))
                          + F.sum(h * 0.5))(x * 2.0),
    "zeroed leaf read first by x * 3":
        lambda F, Sq, x: F.sum(x * 3.0) + F.sum(Sq("a", False)(x)),
    # (loss, h): h = tanh(x) persistent, its kept h.g holds the PythonFunction's part too
    "persistent h = tanh(x) read by h * 3 and a PythonFunction":
        lambda F, Sq, x: (lambda h: (F.sum(h * 3.0) + F.sum(Sq("a", False)(h)), h))(F.tanh(x)),
}

# graphs run again with backward(clear_buffer=True)
_CLEARING = ("assigning, leaf read first by x * 3",
             "two PythonFunctions reading one h, an assigning one second",
             "persistent h = tanh(x) read by h * 3 and a PythonFunction")


def _mul2(PythonFunction, seen):
    def backward(inputs, outputs, propagate_down, accum):   # two inputs needing a gradient
        seen.append(("m", [bool(a) for a in accum], inputs[0].g.copy()))
        write_products(inputs, outputs, accum, False)

    return mul2(PythonFunction, backward)


_MUL2 = "Mul2(x, x) after x * 3: %s: "


@nnabla_case(names=["nnabla.function.PythonFunction", "nnabla.Variable.backward"],
             note="x = [0.5, -1, 2] (x.g = 1, or zeroed), Square (a PythonFunction whose "
                  "backward adds where accum, else writes; or always writes) and other "
                  "functions reading x or h = 2x, in NNabla's backward order (rank, then first "
                  "found): the accum and inputs[0].g each backward_impl sees, x.g; static and "
                  "dynamic; some with backward(clear_buffer=True); a persistent h = tanh(x) "
                  "read by h * 3 and Square: h.g; Mul2(x, x) (two inputs needing a gradient)")
def python_function__readers_in_backward_order(nn, F, PF, r):
    PythonFunction = r.module("nnabla.function").PythonFunction
    r.touch("nnabla.function.PythonFunction", "nnabla.Variable.backward")
    res = {}
    runs = [(d, n, False) for d in (False, True) for n in sorted(_GRAPHS)]
    runs += [(d, n, True) for d in (False, True) for n in _CLEARING]
    for dynamic, name, clear in runs:
        mode = ("dynamic" if dynamic else "static") + (", clear_buffer" if clear else "")
        nn.set_auto_forward(dynamic)
        try:
            seen = []
            x = nn.Variable.from_numpy_array(np.array([0.5, -1.0, 2.0], np.float32),
                                             need_grad=True)
            made = _GRAPHS[name](
                F, lambda tag, assign: _square(PythonFunction, seen, tag, assign), x)
            loss, h = made if isinstance(made, tuple) else (made, None)
            if h is not None:
                h.persistent = True
            if not dynamic:
                loss.forward()
            if name.startswith("zeroed"):
                x.grad.zero()
            else:
                x.g = 1.0
            loss.backward(clear_buffer=clear)
        finally:
            nn.set_auto_forward(False)
        key = "%s: %s: " % (mode, name)
        res[key + "x.g"] = x.g.copy()
        if h is not None:
            res[key + "h.g"] = h.g.copy()
        for k, (tag, accum, g) in enumerate(seen):
            res[key + "backward_impl %d" % k] = [tag, accum]
            res[key + "backward_impl %d inputs[0].g" % k] = g
    for dynamic in (False, True):
        nn.set_auto_forward(dynamic)
        try:
            seen = []
            x = nn.Variable.from_numpy_array(np.array([0.5, -1.0, 2.0], np.float32),
                                             need_grad=True)
            loss = F.sum(x * 3.0) + F.sum(_mul2(PythonFunction, seen)(x, x))
            if not dynamic:
                loss.forward()
            x.g = 1.0
            loss.backward()
        finally:
            nn.set_auto_forward(False)
        key = _MUL2 % ("dynamic" if dynamic else "static")
        res[key + "x.g"] = x.g.copy()
        for k, (tag, accum, g) in enumerate(seen):
            res[key + "backward_impl %d" % k] = [tag, accum]
            res[key + "backward_impl %d inputs[0].g" % k] = g
    return res


def _identity(PythonFunction):
    class Identity(PythonFunction):     # makes Stadyn run the static graph eagerly
        @property
        def name(self):
            return "Identity"

        def min_outputs(self):
            return 1

        def grad_depends_output_data(self, i, o):
            return False

        def grad_depends_input_data(self, i, j):
            return False

        def setup_impl(self, inputs, outputs):
            outputs[0].reset_shape(inputs[0].shape, True)

        def forward_impl(self, inputs, outputs):
            outputs[0].d = inputs[0].d

        def backward_impl(self, inputs, outputs, propagate_down, accum):
            if accum[0]:
                inputs[0].g += outputs[0].g
            else:
                inputs[0].g = outputs[0].g

    return Identity()


def _min_max_quantize(nn, F, dynamic, how, eager=None):
    nn.set_auto_forward(dynamic)
    try:
        x = nn.Variable.from_numpy_array(
            np.array([[0.5, -1.0, 2.0, 3.5], [1.5, 0.25, -0.5, -2.5]], np.float32),
            need_grad=(how == "h stopped"))
        w = nn.Variable.from_numpy_array(np.array([[1.0, 2.0, -1.0, 0.5]], np.float32),
                                         need_grad=True)
        z = nn.Variable.from_numpy_array(
            np.array([[0.3, -0.7, 1.1, 0.2], [0.9, 0.2, -0.4, 0.5]], np.float32))
        qmin, qmax, lmin, lmax = (nn.Variable.from_numpy_array(np.array([[v]], np.float32))
                                  for v in (-0.5, 0.5, 0.0, 255.0))
        h = x * w
        y = F.min_max_quantize(h, qmin, qmax, lmin, lmax, decay=0.5, x_min_max=True, ema=True,
                               ste_fine_grained=True)
        t = F.tanh(y)
        loss = F.sum((t if eager is None else _identity(eager)(t)) * z)
        if not dynamic:
            loss.forward()
        res = {"forward: qr_min": qmin.d.copy(), "forward: qr_max": qmax.d.copy(),
               "loss": loss.d.copy()}
        if how == "x switched on":
            x.need_grad = True
        else:
            h.need_grad = False
        x.grad.zero()
        w.grad.zero()
        try:
            loss.backward()
            res["backward raised"] = "no"
        except Exception as exc:        # Stadyn's refusal (a known difference)
            res["backward raised"] = type(exc).__name__
        res.update({"backward: qr_min": qmin.d.copy(), "backward: qr_max": qmax.d.copy(),
                    "x.g": x.g.copy(), "w.g": w.g.copy()})
        return res
    finally:
        nn.set_auto_forward(False)


@nnabla_case(names=["nnabla.Variable.need_grad", "nnabla.Variable.backward",
                    _F + "min_max_quantize"],
             note="x (2, 4), h = x * w, y = min_max_quantize(h, qr_min, qr_max, 0, 255, "
                  "decay=0.5, x_min_max=True, ema=True), loss = sum(tanh(y) * z); static and "
                  "dynamic; after the forward x.need_grad = True or h.need_grad = False, then "
                  "loss.backward(): the range after the forward and the backward, the "
                  "gradients, and whether the backward raised; static again with an identity "
                  "PythonFunction after tanh (Stadyn runs that graph eagerly)")
def late_need_grad__min_max_quantize_ema_static_and_dynamic(nn, F, PF, r):
    r.touch("nnabla.Variable.need_grad", "nnabla.Variable.backward")
    res = {}
    for dynamic in (False, True):
        mode = "dynamic" if dynamic else "static"
        for how in ("x switched on", "h stopped"):
            for k, v in _min_max_quantize(nn, F, dynamic, how).items():
                res["%s: %s: %s" % (mode, how, k)] = v
    PythonFunction = r.module("nnabla.function").PythonFunction
    for how in ("x switched on", "h stopped"):
        for k, v in _min_max_quantize(nn, F, False, how, PythonFunction).items():
            res["static, a PythonFunction: %s: %s" % (how, k)] = v
    return res
