"""NNabla 1.39's unlinked views read in the same static graph as their source (nnvar36).

NNabla's forward runs a graph's functions depth first from the root, a function's first input
first (src/nbla/computation_graph/variable.cpp ``visit_function_recursive``), each reading
the arrays its inputs hold then: a reader of ``v = h.get_unlinked_variable()`` reached after
``h``'s function reads ``h``'s new values in the first forward already.
"""

import numpy as np

from compat_harness import nnabla_case

V = "nnabla.Variable."


@nnabla_case(names=[V + "get_unlinked_variable", V + "forward"])
def unlinked__read_after_its_source(nn, F, r):
    """``loss = sum(h*1.5) + sum(relu(v*5))``, ``v`` unlinked from ``h = (x*2)*3``: the view's
    reader runs after ``h``'s function in NNabla's forward; ``relu`` makes its gradient read
    the value (``h.g = v.g = [6.5, 1.5, 6.5]``); static (first and second forward, then a
    forward on new ``x``: its ``h``, not the last forward's) and dynamic.  With the view's
    reader first (``sum(relu(v*5)) + sum(h*1.5)``) NNabla's forward reads ``h`` before ``h``'s
    function runs: zeros, then the last forward's values."""
    r.touch(V + "get_unlinked_variable", V + "forward")
    res = {}
    for dyn in (False, True):
        nn.set_auto_forward(dyn)
        x = nn.Variable.from_numpy_array(np.array([0.5, -1.0, 2.0], np.float32),
                                         need_grad=True)
        h = (x * 2.0) * 3.0
        v = h.get_unlinked_variable(need_grad=True)
        t = v * 5.0
        loss = F.sum(h * 1.5) + F.sum(F.relu(t))
        nn.set_auto_forward(False)
        k = "dyn " if dyn else "static "
        if not dyn:
            loss.forward()
            res[k + "first forward v*5"] = t.d.copy()
        x.grad.zero()
        loss.backward()
        res[k + "relu h.g"] = h.g.copy()
        res[k + "relu v.g"] = v.g.copy()
        res[k + "relu x.g"] = x.g.copy()
        if not dyn:
            loss.forward()
            res[k + "second forward v*5"] = t.d.copy()
            x.d = np.array([1.0, 2.0, -3.0], np.float32)
            loss.forward()
            res[k + "forward on new x v*5"] = t.d.copy()
            x.grad.zero()
            loss.backward()
            res[k + "new x relu v.g"] = v.g.copy()
            res[k + "new x relu x.g"] = x.g.copy()
    x = nn.Variable.from_numpy_array(np.array([0.5, -1.0, 2.0], np.float32), need_grad=True)
    h = (x * 2.0) * 3.0
    v = h.get_unlinked_variable(need_grad=True)
    t = v * 5.0
    loss = F.sum(F.relu(t)) + F.sum(h * 1.5)
    loss.forward()
    res["reader first: first forward v*5"] = t.d.copy()
    x.d = np.array([1.0, 2.0, -3.0], np.float32)
    loss.forward()
    res["reader first: forward on new x v*5"] = t.d.copy()
    x.grad.zero()
    loss.backward()
    res["reader first: v.g"] = v.g.copy()
    return res


@nnabla_case(names=[V + "reshape", V + "forward"])
def unlinked__reshape_read_after_its_source(nn, F, r):
    """``loss = sum(h*1.5) + sum(w*2)``, ``w = h.reshape((3, 1), unlink=True)``, ``h =
    tanh(x*2)``: ``w``'s reader runs after ``h``'s function in NNabla's forward."""
    r.touch(V + "reshape", V + "forward")
    x = nn.Variable.from_numpy_array(np.array([0.5, -1.0, 2.0], np.float32), need_grad=True)
    h = F.tanh(x * 2.0)
    w = h.reshape((3, 1), unlink=True)
    loss = F.sum(h * 1.5) + F.sum(w * 2.0)
    res = {}
    loss.forward()
    res["first forward"] = loss.d.copy()
    x.d = np.array([1.0, -2.0, 0.25], np.float32)
    loss.forward()
    res["forward on new x"] = loss.d.copy()
    return res


@nnabla_case(names=[V + "grad", V + "g", V + "backward", "nnabla.NdArray"])
def grad_assigned__one_array(nn, F, r):
    """``y.grad = h.grad`` (``h`` an op output, or a leaf ``a``): NNabla's ``set_grad`` makes
    one array, so ``h.g[0] = 5``, ``y.grad.fill(2)`` and ``y.g[1] = 7`` show through the other,
    and a backward writing ``h``'s (``a``'s) gradient shows in ``y``'s; static and dynamic.
    Another array assigned to ``y.grad`` ends it (``y`` holds that one)."""
    r.touch(V + "grad", V + "g", V + "backward")
    res = {}
    for dyn in (False, True):
        k = "dyn " if dyn else "static "
        nn.set_auto_forward(dyn)
        x = nn.Variable.from_numpy_array(np.array([0.5, -1.0, 2.0], np.float32),
                                         need_grad=True)
        h = x * 2.0
        y = nn.Variable((3,), need_grad=True)
        y.grad = h.grad
        h.g[0] = 5.0
        res[k + "y.g after h.g[0]=5"] = y.g.copy()
        y.grad.fill(2.0)
        res[k + "h.g after y.grad.fill(2)"] = h.g.copy()
        y.g[1] = 7.0
        res[k + "h.g after y.g[1]=7"] = h.g.copy()
        loss = F.sum(h * 3.0)
        a = nn.Variable.from_numpy_array(np.array([1.0, 2.0, 3.0], np.float32), need_grad=True)
        b = nn.Variable((3,), need_grad=True)
        b.grad = a.grad
        a.g[2] = 4.0
        res[k + "b.g after a.g[2]=4"] = b.g.copy()
        loss2 = F.sum(a * 3.0)
        nn.set_auto_forward(False)
        if not dyn:
            loss.forward()
            loss2.forward()
        x.grad.zero()
        loss.backward()
        res[k + "y.g after backward"] = y.g.copy()
        res[k + "h.g after backward"] = h.g.copy()
        res[k + "x.g after backward"] = x.g.copy()
        a.grad.zero()
        loss2.backward()
        res[k + "b.g after backward"] = b.g.copy()
        y.grad = nn.NdArray.from_numpy_array(np.ones(3, np.float32))
        h.g[0] = 9.0
        res[k + "y.g after another array"] = y.g.copy()
        res[k + "h.g after another array"] = h.g.copy()
    return res


@nnabla_case(names=[V + "grad", "nnabla.solvers.Sgd", "nnabla.solvers.Solver.zero_grad",
                    "nnabla.solvers.Solver.update"])
def grad_assigned__solver_zero_grad(nn, F, S, r):
    """``z.grad = W.grad``, ``W`` a parameter: a solver's ``zero_grad`` zeroes the one array
    (``z.g`` too), a write through ``z.g`` then reaches ``update()``, and the next backward's
    gradient of ``W`` shows in ``z.g``; static and dynamic."""
    r.touch(V + "grad", "nnabla.solvers.Solver.zero_grad", "nnabla.solvers.Solver.update")
    res = {}
    for dyn in (False, True):
        k = "dyn " if dyn else "static "
        nn.clear_parameters()
        x = nn.Variable.from_numpy_array(np.array([[0.5, -1.0, 2.0]], np.float32))
        w = nn.parameter.get_parameter_or_create(
            "w", (3, 2), initializer=np.arange(6.0, dtype=np.float32).reshape(3, 2))
        z = nn.Variable((3, 2), need_grad=True)
        z.grad = w.grad
        solver = S.Sgd(0.5)
        solver.set_parameters({"w": w})
        nn.set_auto_forward(dyn)
        loss = F.sum(F.affine(x, w) * 2.0)
        nn.set_auto_forward(False)
        if not dyn:
            loss.forward()
        loss.backward()
        res[k + "z.g after backward"] = z.g.copy()
        solver.zero_grad()
        res[k + "z.g after zero_grad"] = z.g.copy()
        z.g[0, 0] = 7.0
        res[k + "w.g after z.g write"] = w.g.copy()
        solver.update()
        res[k + "w.d after update"] = w.d.copy()
        solver.zero_grad()
        if dyn:
            nn.set_auto_forward(True)
            loss = F.sum(F.affine(x, w) * 3.0)
            nn.set_auto_forward(False)
        else:
            loss.forward()
        loss.backward()
        res[k + "z.g after zero_grad and backward"] = z.g.copy()
    return res
