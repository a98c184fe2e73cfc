"""NNabla 1.39's unlinked views after their source's shape changes (view43).

``u = v.get_unlinked_variable()`` holds ``v``'s own array object (NNabla's CgVariable over the
same ``Variable``, src/nbla/computation_graph/variable.cpp), so a ``reset_shape`` of either is
the other's: ``u.shape``, ``u.d``, a graph built on ``u`` and its gradients follow.  Setting an
array of another shape (``v.data = nd``, ``v.d = ...``) is refused (src/nbla/variable.cpp
``set_data``: "Shape must match"), and ``reset_shape`` without ``force`` must keep the number
of elements (src/nbla/variable.cpp ``reshape``).
"""

import functools

import numpy as np

from compat_harness import nnabla_case
from compat_outcomes import builtin_type, outcome

V = "nnabla.Variable."
_try = functools.partial(outcome, raised=builtin_type)


def _source(nn):
    return nn.Variable.from_numpy_array(np.arange(3, dtype=np.float32).reshape(1, 3),
                                        need_grad=True)


@nnabla_case(names=[V + "get_unlinked_variable", V + "reset_shape"])
def unlinked__source_reset_shape(nn, F, r):
    """``v`` (1, 3) reset to (4, 3) with ``force=True`` and given values: the view's shape,
    values, a ``tanh`` built on it afterwards (static and dynamic), its forward and the
    gradient reaching ``v`` through a view with and without ``need_grad``."""
    r.touch(V + "get_unlinked_variable", V + "reset_shape")
    res = {}
    for ng in (False, True):
        for dyn in (False, True):
            k = "%s %s " % ("need_grad" if ng else "frozen", "dyn" if dyn else "static")
            nn.set_auto_forward(dyn)
            v = _source(nn)
            u = v.get_unlinked_variable(need_grad=ng)
            v.reset_shape((4, 3), force=True)
            v.d = np.arange(12, dtype=np.float32).reshape(4, 3) / 4.0
            res[k + "u.shape"] = [list(u.shape), u.ndim, u.size]
            res[k + "u.d"] = np.asarray(u.d, np.float32).copy()
            y = F.tanh(u)
            res[k + "y.shape"] = list(y.shape)
            v.g = 0
            y.forward()
            res[k + "y.d"] = y.d.copy()
            y.backward(np.ones((4, 3), np.float32))
            res[k + "v.g"] = v.g.copy()
            nn.set_auto_forward(False)
    return res


@nnabla_case(names=[V + "get_unlinked_variable", V + "reset_shape"])
def unlinked__own_reset_shape(nn, F, r):
    """``u.reset_shape`` of a view is its source's: forced to (2, 3) both are (2, 3) zeros;
    without ``force``, (3, 1) keeps the values in both, (2, 3) is refused (a RuntimeError)."""
    r.touch(V + "get_unlinked_variable", V + "reset_shape")
    res = {}
    v = _source(nn)
    u = v.get_unlinked_variable(need_grad=True)
    u.reset_shape((2, 3), force=True)
    res["forced"] = [list(v.shape), list(u.shape), v.d.tolist(), u.d.tolist()]
    v = _source(nn)
    u = v.get_unlinked_variable(need_grad=True)
    res["grow unforced"] = _try(lambda: u.reset_shape((2, 3)))
    res["grow unforced after"] = [list(v.shape), list(u.shape)]
    res["same size unforced"] = _try(lambda: u.reset_shape((3, 1)))
    res["same size after"] = [list(v.shape), list(u.shape), v.d.tolist(), u.d.tolist()]
    w = _source(nn)
    res["leaf grow unforced"] = _try(lambda: w.reset_shape((2, 3)))
    res["leaf after"] = list(w.shape)
    return res


@nnabla_case(names=[V + "get_unlinked_variable", V + "data"])
def unlinked__source_given_another_shape(nn, F, r):
    """``v.data = nd`` of another shape, for a leaf with a view and an op's output, and
    ``v.d = `` a (4, 3) array: refused, nothing changes (the view stays (1, 3))."""
    r.touch(V + "get_unlinked_variable", V + "data")
    res = {}
    v = _source(nn)
    u = v.get_unlinked_variable(need_grad=False)
    nd = nn.NdArray.from_numpy_array(np.ones((4, 3), np.float32))
    res["leaf data="] = _try(lambda: setattr(v, "data", nd))
    res["leaf d="] = _try(lambda: setattr(v, "d", np.ones((4, 3), np.float32)))
    res["after"] = [list(v.shape), list(u.shape), u.d.tolist()]
    y = F.tanh(nn.Variable((1, 3)))
    res["output data="] = _try(lambda: setattr(y, "data", nd))
    res["output after"] = list(y.shape)
    return res


@nnabla_case(names=[V + "get_unlinked_variable", V + "rewire_on"])
def unlinked__source_rewired(nn, F, r):
    """``v.rewire_on(h)`` gives ``v`` ``h``'s array (``steal_variable_from_to``); a view
    ``u`` of ``v`` made before keeps ``v``'s old one: ``z = u * 2`` reads zeros after ``v``'s
    forward, and a backward from ``z`` fills ``u.g`` alone (``v.g``, ``x.g`` stay 0); frozen
    and ``need_grad`` views."""
    r.touch(V + "get_unlinked_variable", V + "rewire_on")
    res = {}
    for ng in (False, True):
        k = "need_grad " if ng else "frozen "
        x = nn.Variable.from_numpy_array(np.arange(3, dtype=np.float32).reshape(1, 3),
                                         need_grad=True)
        v = nn.Variable((1, 3), need_grad=True)
        u = v.get_unlinked_variable(need_grad=ng)
        z = F.mul_scalar(u, 2.0)
        v.rewire_on(F.add_scalar(x, 1.0))
        z.forward()
        res[k + "z before"] = z.d.copy()
        v.forward()
        z.forward()
        res[k + "v.d, u.d, z.d"] = [v.d.tolist(), u.d.tolist(), z.d.tolist()]
        x.g = 0
        v.g = 0
        z.backward()
        res[k + "v.g, x.g, u.g"] = [v.g.tolist(), x.g.tolist(), u.g.tolist()]
    return res
