"""NNabla 1.39 fidelity (session 35): ``need_grad`` set after a static forward whose backward
Stadyn left for later, and a ``PythonFunction`` under ``nn.grad`` and raising.

* A static graph built while every leaf it differentiates holds a gradient (after another
  graph's backward) gets its forward only (graph/_deferred_backward.py); its first backward
  built the plan with a backward by running the forward again under the ``need_grad`` marks of
  then, so ``b.need_grad = True`` set after ``w = F.sum(F.exp(b) * x).forward()`` gave ``b.g``
  ``exp(b) * x`` ([7.39, 40.17]), NNabla's [0, 0] (``F.exp`` ran with no input needing a
  gradient and takes no part), and ``m.need_grad = True`` set back after a cut lost
  ``F.exp(m * 0.1)``'s part of ``x.g`` ([6, 12], NNabla's [6.40, 12.55]).
* ``nn.grad([z], [x])`` through a ``PythonFunction`` gave its gradient through
  ``backward_impl``; NNabla 1.39's ``nn.grad`` builds the gradient graph from backward
  functions (``nnabla.backward_functions.registry``), has none for it and raises
  ``ValueError: Sq is not in the backward function registry`` without calling it (one off the
  path from the input to the output is passed by).
* A raising ``forward_impl`` / ``backward_impl`` reached the user as Stadyn's ``ShapeError`` /
  the exception itself; NNabla's raises ``SystemError`` ("... returned a result with an
  exception set"), the exception its ``__cause__``: the type and the cause's type compared.
"""

import numpy as np

from compat_harness import nnabla_case
from compat_cases.nnabla_pyfunc_helpers import square, write_square_grad


def _late_marks(nn, F, earlier_backward):
    """x (need_grad) read by F.exp(b) * x with b set need_grad=True after the forward; tanh(x * c)
    with c set so; x * 3 cut (need_grad=False) after the forward, then set back."""
    res = {}
    x = nn.Variable.from_numpy_array(np.array([1.0, 2.0], np.float32), need_grad=True)
    if earlier_backward:        # x then holds a gradient: the next graphs are built forward only
        z = F.sum(x * 3.0)
        z.forward()
        z.backward()
    b = nn.Variable.from_numpy_array(np.array([2.0, 3.0], np.float32), need_grad=False)
    w = F.sum(F.exp(b) * x)
    w.forward()
    b.need_grad = True
    b.grad.zero()
    w.backward()
    res["exp(b) * x, b late: b.g"] = b.g.copy()
    res["exp(b) * x, b late: x.g"] = x.g.copy()
    b.grad.zero()
    w.backward()
    res["exp(b) * x, b late, backward again: b.g"] = b.g.copy()
    b.grad.zero()
    w.forward()
    w.backward()
    res["exp(b) * x, b late, forward again: b.g"] = b.g.copy()
    c = nn.Variable.from_numpy_array(np.array([0.5, -1.5], np.float32), need_grad=False)
    v = F.sum(F.tanh(x * c))
    v.forward()
    c.need_grad = True
    c.grad.zero()
    v.backward()
    res["tanh(x * c), c late: c.g"] = c.g.copy()
    res["tanh(x * c), c late: x.g"] = x.g.copy()
    m = x * 3.0
    u = F.sum(m * x + F.exp(m * 0.1))
    u.forward()
    m.need_grad = False
    x.grad.zero()
    u.backward()
    res["m = 3x cut: x.g"] = x.g.copy()
    m.need_grad = True
    x.grad.zero()
    u.backward()
    res["m = 3x cut, set back: x.g"] = x.g.copy()
    return res


@nnabla_case(names=["nnabla.Variable.need_grad", "nnabla.Variable.backward"],
             note="x = [1, 2] (need_grad), after another graph's forward and backward from x "
                  "(x holds a gradient: Stadyn builds the next static graphs forward only) and "
                  "then without: sum(exp(b) * x) forwarded, b.need_grad = True, backward (twice, "
                  "then after a forward again): b.g, x.g; sum(tanh(x * c)), c set late: c.g, "
                  "x.g; m = x * 3 in sum(m * x + exp(m * 0.1)), m.need_grad = False after the "
                  "forward, backward, then m.need_grad = True, backward: x.g")
def late_need_grad__graph_built_forward_only(nn, F, PF, r):
    r.touch("nnabla.Variable.need_grad", "nnabla.Variable.backward")
    res = {}
    for earlier in (True, False):       # (the graph built forward only first)
        for k, v in _late_marks(nn, F, earlier).items():
            res[("after another backward: " if earlier else "first: ") + k] = v
    return res


def _square(PythonFunction, calls, fails=None):
    """A PythonFunction computing x ** 2, noting its calls; ``fails``: "forward" or "backward"
    raises KeyError there."""
    def forward(inputs, outputs):
        calls.append("forward_impl")
        if fails == "forward":
            raise KeyError("forward boom")
        outputs[0].d = inputs[0].d ** 2

    def backward(inputs, outputs, propagate_down, accum):
        calls.append("backward_impl")
        if fails == "backward":
            raise KeyError("backward boom")
        write_square_grad(inputs, outputs, accum)
    return square(PythonFunction, backward, name="Sq", cls_name="Sq", forward=forward)


def _raised(e):
    return [type(e).__name__, type(e.__cause__).__name__ if e.__cause__ is not None else None]


@nnabla_case(names=["nnabla.function.PythonFunction", "nnabla.grad"],
             note="x = [1, -2, 3] (x.g = 5): nn.grad([sum(Sq(x) * 2)], [x]) (Sq a PythonFunction "
                  "x ** 2), static and dynamic: what it raised (type, message) and the calls "
                  "of forward_impl / backward_impl it made, x.g after; nn.grad([sum(a * 2) + "
                  "sum(Sq(x))], [a]) (Sq off the path): the gradient; forward_impl or "
                  "backward_impl raising KeyError: where (the call, forward, backward), the type "
                  "and its __cause__'s type (NNabla's messages hold addresses: not compared)")
def python_function__grad_and_raising(nn, F, PF, r):
    PythonFunction = r.module("nnabla.function").PythonFunction
    r.touch("nnabla.function.PythonFunction", "nnabla.grad")
    res = {}
    for dynamic in (False, True):
        key = "dynamic: " if dynamic else "static: "
        calls = []
        nn.set_auto_forward(dynamic)
        try:
            x = nn.Variable.from_numpy_array(np.array([1.0, -2.0, 3.0], np.float32),
                                             need_grad=True)
            x.g = 5.0
            z = F.sum(_square(PythonFunction, calls)(x) * 2.0)
            if not dynamic:
                z.forward()
            del calls[:]
            try:
                gs = nn.grad([z], [x])
                for g in gs:
                    g.forward()
                res[key + "nn.grad"] = [g.d.copy() for g in gs]
            except Exception as e:
                res[key + "nn.grad raised"] = [type(e).__name__, str(e)]
            res[key + "nn.grad calls"] = list(calls)
            res[key + "x.g after nn.grad"] = x.g.copy()
            a = nn.Variable.from_numpy_array(np.array([0.5, 1.5], np.float32), need_grad=True)
            w = F.sum(a * 2.0) + F.sum(_square(PythonFunction, calls)(x))
            if not dynamic:
                w.forward()
            ga = nn.grad([w], [a])[0]
            ga.forward()
            res[key + "nn.grad off the path"] = ga.d.copy()
            for fails in ("forward", "backward"):
                step = "call"
                calls = []
                try:
                    x = nn.Variable.from_numpy_array(np.array([1.0, -2.0], np.float32),
                                                     need_grad=True)
                    z = F.sum(_square(PythonFunction, calls, fails)(x))
                    step = "forward"
                    if not dynamic:
                        z.forward()
                    step = "backward"
                    z.backward()
                    res[key + fails + "_impl raising"] = None
                except Exception as e:
                    res[key + fails + "_impl raising"] = [step] + _raised(e)
                res[key + fails + "_impl raising: calls"] = list(calls)
        finally:
            nn.set_auto_forward(False)
    return res
