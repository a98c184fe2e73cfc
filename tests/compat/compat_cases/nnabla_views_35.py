"""NNabla 1.39's unlinked Variables and shared arrays in a backward (nnview35).

``h.get_unlinked_variable()`` (``unlinked()``, ``reshape(..., unlink=True)``) is a leaf holding
``h``'s data *and* gradient arrays, so what its readers give lands in ``h``'s gradient and,
in NNabla's backward order, goes on down ``h``'s graph (src/nbla/computation_graph/
variable.cpp:427-459 ``get_accum``, 870-930 ``visit_function_backward``); ``v.data = h.data``
shares the data array only (``v`` keeps its own gradient); ``v.d = h.d`` copies.  A
``PythonFunction`` missing ``grad_depends_*_data`` / ``backward_impl`` stops with NNabla's
``SystemError`` whose cause is the ``NotImplementedError``.
"""

import numpy as np

from compat_harness import nnabla_case

V = "nnabla.Variable."


def _x(nn):
    return nn.Variable.from_numpy_array(np.array([0.5, -1.0, 2.0], np.float32), need_grad=True)


def _view(h, how):
    if how == "unlinked":
        return h.get_unlinked_variable(need_grad=True)
    if how == "unlinked()":
        return h.unlinked()
    if how == "no_grad":
        return h.get_unlinked_variable(need_grad=False)
    v = h.reshape(h.shape, unlink=True)
    v.need_grad = True
    return v


@nnabla_case(names=[V + "get_unlinked_variable", V + "unlinked", V + "reshape", V + "backward"])
def unlinked__gradient_shared(nn, F, r):
    """``loss = sum(h*3) + sum(v*5)``, ``v`` unlinked from ``h = x*2``: ``v``'s readers run
    after ``h*3`` and before ``x*2``, so ``h.g = v.g = 8`` and ``x.g = 16``; static and
    dynamic, a second backward, a write through ``v``, and ``need_grad=False`` (no part)."""
    r.touch(V + "get_unlinked_variable", V + "unlinked", V + "reshape", V + "backward")
    res = {}
    for dyn in (False, True):
        for how in ("unlinked", "unlinked()", "reshape", "no_grad"):
            nn.set_auto_forward(dyn)
            x = _x(nn)
            h = x * 2.0
            v = _view(h, how)
            loss = F.sum(h * 3.0) + F.sum(v * 5.0)
            nn.set_auto_forward(False)
            if not dyn:
                loss.forward()
            k = "%s %s " % ("dyn" if dyn else "static", how)
            res[k + "need_grad"] = v.need_grad
            x.g = 0
            v.g = 0
            loss.backward()
            for name, var in (("x", x), ("v", v), ("h", h)):
                res[k + name + ".g"] = var.g.copy()
            v.g = 7
            res[k + "h.g after v.g=7"] = h.g.copy()
            v.d = 4
            res[k + "h.d after v.d=4"] = h.d.copy()
            x.g = 0
            loss.backward()
            res[k + "x.g again"] = x.g.copy()
            res[k + "v.g again"] = v.g.copy()
            if how != "no_grad":
                x.g = 0
                loss.backward(clear_buffer=True)
                res[k + "x.g clear_buffer"] = x.g.copy()
    return res


_STATIC_DEEP = ("static graph, x read by both an unlinked view's reader's branch (u * deep, deep "
                "made from x) and by nothing else: Stadyn's static backward leaves x.g 0, "
                "NNabla 1.39's gives u (2, 4, 6); as on da52cf3c, not from the shared arrays")


@nnabla_case(names=[V + "get_unlinked_variable", V + "backward"],
             known={"static before g3": _STATIC_DEEP})
def unlinked__readers_after_the_function(nn, F, r):
    """``h`` deeper than ``v``'s readers (``h = (x*2)+0``): ``h``'s function runs before
    ``v*5`` (of lower rank), so ``v``'s part stays in ``h.g = v.g = 8`` and ``x.g = 6``; and
    ``v`` read before ``h``'s first reader (``v * h2`` of higher rank): wiped by that copy."""
    r.touch(V + "get_unlinked_variable", V + "backward")
    res = {}
    for dyn in (False, True):
        nn.set_auto_forward(dyn)
        x = _x(nn)
        h = F.add_scalar(x * 2.0, 0.0)
        v = h.get_unlinked_variable(need_grad=True)
        loss = F.sum(h * 3.0) + F.sum(v * 5.0)
        deep = F.add_scalar(F.add_scalar(F.add_scalar(x, 1.0), 1.0), 1.0)
        y = nn.Variable.from_numpy_array(np.array([1.0, 2.0, 3.0], np.float32), need_grad=True)
        g = y * 2.0
        u = g.get_unlinked_variable(need_grad=True)
        loss2 = F.sum(u * deep) + F.sum(g * 3.0)
        nn.set_auto_forward(False)
        k = "dyn " if dyn else "static "
        for name, lo, leaves in (("after", loss, (x, v, h)), ("before", loss2, (y, u, g, x))):
            if not dyn:
                lo.forward()
            for leaf in leaves:
                leaf.g = 0
            lo.backward()
            for i, leaf in enumerate(leaves):
                res[k + name + " g%d" % i] = leaf.g.copy()
    return res


@nnabla_case(names=[V + "get_unlinked_variable", "nnabla.solvers.Sgd"])
def unlinked__trained(nn, F, S, r):
    """A parameter trained through a graph that reads an unlinked view of an inner Variable:
    the view's part reaches the parameter's gradient, three Sgd steps."""
    r.touch(V + "get_unlinked_variable")
    w = nn.Variable.from_numpy_array(np.array([0.5, -1.0, 2.0], np.float32), need_grad=True)
    h = F.tanh(w * 1.5)
    v = h.get_unlinked_variable(need_grad=True)
    loss = F.sum(h * h) + F.sum(v * 2.0)
    sol = S.Sgd(0.1)
    sol.set_parameters({"w": w})
    res = {}
    for i in range(3):
        loss.forward()
        sol.zero_grad()
        loss.backward()
        res["w.g %d" % i] = w.g.copy()
        res["v.g %d" % i] = v.g.copy()
        sol.update()
        res["w %d" % i] = w.d.copy()
    return res


@nnabla_case(names=[V + "data", V + "grad", V + "d"])
def data_shared__own_gradient(nn, F, S, r):
    """``v.data = h.data`` shares the data array only: ``v.g = 5`` (its own) beside
    ``h.g = 3``; ``v.d = h.d`` copies; ``v.grad = h.grad`` one gradient array."""
    r.touch(V + "data", V + "grad", V + "d")
    res = {}
    for dyn in (False, True):
        for how in ("data", "d", "grad"):
            nn.set_auto_forward(dyn)
            x = _x(nn)
            h = x * 2.0
            v = nn.Variable(h.shape, need_grad=True)
            v.g = 1.5
            k = "%s %s " % ("dyn" if dyn else "static", how)
            if how == "data":
                v.data = h.data
            elif how == "grad":
                v.grad = h.grad
            else:
                v.d = h.d
            res[k + "v.g before"] = v.g.copy()
            loss = F.sum(h * 3.0) + F.sum(v * 5.0)
            nn.set_auto_forward(False)
            if not dyn:
                loss.forward()
            res[k + "v.d"] = v.d.copy()
            for suffix in ("", " 2"):
                if not suffix:
                    x.g = 0
                loss.backward()
                for name, var in (("x", x), ("v", v), ("h", h)):
                    res[k + name + ".g" + suffix] = var.g.copy()
            x.d = np.array([1.0, 1.0, 1.0], np.float32)
            loss.forward()
            res[k + "v.d after forward"] = v.d.copy()
            sol = S.Sgd(0.1)
            sol.set_parameters({"v": v})
            sol.zero_grad()
            loss.backward()
            sol.update()
            res[k + "v.g sgd"] = v.g.copy()
            res[k + "v.d sgd"] = v.d.copy()
    return res


def _python_function(base, omit):
    class P(base):
        @property
        def name(self):
            return "P"

        def min_outputs(self):
            return 1

        def setup_impl(self, inputs, outputs):
            outputs[0].reset_shape(inputs[0].shape, True)

        def forward_impl(self, inputs, outputs):
            outputs[0].d = inputs[0].d * 2

    if omit != "gdo":
        P.grad_depends_output_data = lambda self, i, o: False
    if omit != "gdi":
        P.grad_depends_input_data = lambda self, i, j: False
    if omit != "bwd":
        def backward_impl(self, inputs, outputs, propagate_down, accum):
            inputs[0].g = outputs[0].g * 2
        P.backward_impl = backward_impl
    return P


def _raised(e):
    cause = e.__cause__
    return [type(e).__name__, None if cause is None else type(cause).__name__]


_GDO_DYN = ("dynamic call of a PythonFunction missing grad_depends_output_data: NNabla 1.39's "
            "SystemError is caused by another SystemError (the auto-forward call's), whose "
            "cause is the NotImplementedError; Stadyn's is caused by the NotImplementedError")
_GDI_AFTER = ("a static backward after forward() raised on a missing grad_depends_input_data: "
              "NNabla 1.39 had run the functions and its backward runs (x.g = 2); Stadyn's "
              "forward stopped before any ran, and the backward raises again")


@nnabla_case(names=["nnabla.function.PythonFunction"],
             known={"gdo dyn call": _GDO_DYN, "gdi static backward": _GDI_AFTER,
                    "gdi static x.g": _GDI_AFTER})
def python_function_missing_methods(nn, F, r):
    """A PythonFunction without ``grad_depends_output_data`` (its call), without
    ``grad_depends_input_data`` (its forward) or without ``backward_impl`` (its backward) on
    an input needing a gradient: NNabla's SystemError from NotImplementedError; nothing on an
    input needing none."""
    PythonFunction = r.module("nnabla.function").PythonFunction
    res = {}
    for omit in ("gdo", "gdi", "bwd"):
        for dyn in (False, True):
            for need_grad in (True, False):
                nn.set_auto_forward(dyn)
                x = nn.Variable.from_numpy_array(np.array([1.0, 2.0], np.float32),
                                                 need_grad=need_grad)
                k = "%s %s%s " % (omit, "dyn" if dyn else "static",
                                  "" if need_grad else " no_grad")
                try:
                    y = _python_function(PythonFunction, omit)(nn.get_current_context())(x)
                    res[k + "call"] = "ok"
                except Exception as e:
                    res[k + "call"] = _raised(e)
                    nn.set_auto_forward(False)
                    continue
                s = F.sum(y)
                nn.set_auto_forward(False)
                for step in ("forward", "backward"):
                    try:
                        getattr(s, step)()
                        res[k + step] = "ok"
                    except Exception as e:
                        res[k + step] = _raised(e)
                res[k + "x.g"] = x.g.copy()
    return res


@nnabla_case(names=[V + "get_unlinked_variable", V + "backward"])
def unlinked__part_down_a_deeper_graph(nn, F, r):
    """``v``'s reader (``v * d``, ``d`` of rank 2) runs after ``h``'s first reader (``h * e``,
    of higher rank) and before ``h``'s function: its part goes down ``h = (x*2)*1.5`` to
    ``x``; a reader of ``v`` run before ``h``'s first reader (``v * deep``) is wiped."""
    r.touch(V + "get_unlinked_variable", V + "backward")
    res = {}
    c = np.array([1.0, 2.0, 3.0], np.float32)
    for dyn in (False, True):
        for wiped in (False, True):
            nn.set_auto_forward(dyn)
            x = _x(nn)
            a = x * 2.0
            h = a * 1.5
            v = h.get_unlinked_variable(need_grad=True)
            cv = nn.Variable.from_numpy_array(c)
            e = F.add_scalar(F.add_scalar(F.add_scalar(cv, 1.0), 1.0), 1.0)
            if wiped:
                deep = F.add_scalar(F.add_scalar(e, 1.0), 1.0)
                loss = F.sum(F.add_scalar(F.add_scalar(h * 3.0, 0.0), 0.0)) + F.sum(v * deep)
            else:
                loss = F.sum(h * e) + F.sum(v * F.add_scalar(F.add_scalar(cv, 1.0), 1.0))
            nn.set_auto_forward(False)
            if not dyn:
                loss.forward()
            x.g = 0
            loss.backward()
            k = "%s%s " % ("dyn" if dyn else "static", " wiped" if wiped else "")
            for name, var in (("x", x), ("a", a), ("h", h), ("v", v)):
                res[k + name + ".g"] = var.g.copy()
    return res
