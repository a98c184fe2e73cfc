"""NNabla 1.39's random numbers, continued: what ``nnabla_random`` left.

A random function with a seed of its own gets its generator when it is set up
(src/nbla/function/generic/rand.cpp, dropout.cpp: ``rgen_ = std::mt19937(seed_)``), so two
graphs built alike, each with such a function, draw the same numbers, each from its own stream.
Stadyn's graphs of one structure replay one plan (``graph/_plan_reuse.py``), whose program held
the first graph's generator: the second graph went on drawing the first one's stream.
"""

import numpy as np

from compat_harness import nnabla_case

FN = "nnabla.functions."
EXACT = dict(rtol=0.0, atol=0.0)


@nnabla_case(names=[FN + "rand", FN + "dropout"], **EXACT,
             note="two static graphs built alike with F.rand(seed=7) and F.dropout(seed=3): "
                  "each function draws its own stream from the start, interleaved forwards")
def rand__own_seed_per_graph(nn, F, r):
    res = {}
    x = nn.Variable.from_numpy_array(r.randn(3, 8).astype(np.float32))
    a = F.rand(-1.0, 1.0, shape=(2, 5), seed=7)
    b = F.rand(-1.0, 1.0, shape=(2, 5), seed=7)
    da = F.dropout(x, 0.5, seed=3)
    db = F.dropout(x, 0.5, seed=3)
    for k in range(2):
        for name, v in (("a", a), ("b", b), ("da", da), ("db", db)):
            v.forward()
            res["%s%d" % (name, k)] = v.d.copy()
    return res


def _scatter_parent(y):
    return [y.parent.name, [list(i.shape) for i in y.parent.inputs]]


@nnabla_case(names=[FN + "scatter_nd"], **EXACT,
             note="F.scatter_nd(data, indices, out=x) (NNabla's in-place form): x with data "
                  "written or added at the index tuples, one place written twice; the parent "
                  "ScatterNd with three inputs; data's gradient reaches the first row writing "
                  "a place only (NNabla's kernel zeroes the place after)")
def scatter_nd__out(nn, F, r):
    res = {}
    idx = nn.Variable.from_numpy_array(np.array([[0, 1, 0], [3, 0, -1]]))
    w = r.randn(2, 4).astype(np.float32)
    for add in (False, True):
        x = nn.Variable.from_numpy_array(r.randn(2, 4).astype(np.float32), need_grad=True)
        data = nn.Variable.from_numpy_array(r.randn(3).astype(np.float32), need_grad=True)
        y = F.scatter_nd(data, idx, out=x, add=add)
        loss = F.sum(y * nn.Variable.from_numpy_array(w))
        loss.forward()
        data.grad.zero()
        loss.backward()
        res["y_add%d" % add], res["g_data_add%d" % add] = y.d.copy(), data.g.copy()
        res["parent_add%d" % add] = _scatter_parent(y)
    return res


@nnabla_case(names=["nnabla.Variable.forward", "nnabla.Variable.backward"], **EXACT,
             note="x[key] = v builds NNabla's graph: x.parent is ScatterNd(v, indices, old x); "
                  "the gradient reaches the old x except where written (all of it when v needs "
                  "none) and v at the places it wrote (the first write of a place twice)")
def scatter_nd__setitem_parent(nn, F, r):
    res = {}
    w = nn.Variable.from_numpy_array(r.randn(2, 4).astype(np.float32))
    for name, key, vshape, need in (("advanced", ([0, 1, 0], [3, 0, 3]), (3,), True),
                                    ("basic", (slice(None), 1), (2,), True),
                                    ("no_grad", (slice(None), 1), (2,), False)):
        x = nn.Variable.from_numpy_array(r.randn(2, 4).astype(np.float32), need_grad=True)
        v = nn.Variable.from_numpy_array(r.randn(*vshape).astype(np.float32), need_grad=need)
        y = x * 2.0
        y[key] = v if name != "basic" else F.reshape(v, (2,))
        loss = F.sum(y * w)
        loss.forward()
        x.grad.zero()
        v.grad.zero()
        loss.backward()
        res[name + "_y"], res[name + "_gx"] = y.d.copy(), x.g.copy()
        if need:
            res[name + "_gv"] = v.g.copy()
        res[name + "_parent"] = _scatter_parent(y)
    r.touch("nnabla.Variable.forward", "nnabla.Variable.backward")
    return res
