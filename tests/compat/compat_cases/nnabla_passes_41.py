"""Gradients of parameters that a static plan computes together: one large matrix-product
gradient read by two parameters, one of them through a reshape (``W + F.reshape(V, ...)`` as
an affine weight).  NNabla 1.39 gives each parameter a gradient array of its own, so
``weight_decay`` adds each parameter's own decay.  Stadyn's plan wrote the product into ``W``'s
gradient buffer and handed ``V`` a view of that buffer as its gradient (the copy it needed was
judged before the write was placed), so ``weight_decay`` added ``W``'s decay into ``V``'s
gradient and ``V``'s into ``W``'s: after one ``Sgd`` update both were off by ``lr * wd`` times
the other parameter (up to 0.0024 here), with no error."""

import numpy as np
from compat_harness import nnabla_case
from compat_outcomes import outcome

_N = 512        # a (512, 512) float32 gradient: 1 MiB, the size plans write into a buffer


def _net(nn, F, r):
    x = nn.Variable.from_numpy_array(r.randn(8, _N))
    w = nn.Variable.from_numpy_array(r.randn(_N, _N) * 0.01, need_grad=True)
    v = nn.Variable.from_numpy_array(r.randn(_N * _N) * 0.01, need_grad=True)
    y = F.sum(F.tanh(F.affine(x, w + F.reshape(v, (_N, _N)))))
    return w, v, y


def _sampled(w, v, name):
    # every 37th row, every 41st column of the (512, 512) arrays (v seen alike)
    return {name + " w": w[::37, ::41].copy(), name + " v": v.reshape(_N, _N)[::37, ::41].copy()}


@nnabla_case(names=["nnabla.functions.affine", "nnabla.functions.reshape",
                    "nnabla.solvers.Sgd", "nnabla.solver.Solver.weight_decay"])
def passes41__weight_decay_of_parameters_sharing_a_large_gradient(nn, F, S, r):
    """Static forward and backward, ``weight_decay(0.1)``, one ``Sgd(lr=0.5)`` update: the
    gradients after the decay and the parameters after the update (sampled)."""
    r.touch("nnabla.solver.Solver.weight_decay")
    w, v, y = _net(nn, F, r)
    solver = S.Sgd(lr=0.5)
    solver.set_parameters({"w": w, "v": v})
    solver.zero_grad()
    y.forward()
    y.backward()
    out = _sampled(w.g, v.g, "gradient")
    solver.weight_decay(0.1)
    out.update(_sampled(w.g, v.g, "decayed gradient"))
    solver.update()
    out.update(_sampled(w.d, v.d, "updated"))
    return out


@nnabla_case(names=["nnabla.Variable.backward"])
def passes41__two_backwards_accumulate_each_parameters_gradient(nn, F, r):
    """Two ``backward()`` of one forward without zeroing: each parameter's gradient is the
    sum of both, its own (a first ``.grad`` that aliased another parameter's would take the
    second backward's sum twice)."""
    r.touch("nnabla.Variable.backward")
    w, v, y = _net(nn, F, r)
    y.forward()
    y.backward()
    y.backward()
    return _sampled(w.g, v.g, "gradient")


@nnabla_case(names=["nnabla.solvers.Sgd", "nnabla.Variable.backward"], rtol=2e-2, atol=2e-2)
def passes41__backward_after_an_update_reads_the_new_weight(nn, F, S, r):
    """``forward``; an ``Sgd`` update of the weight (``w -= 1``); ``backward``: ``x.g`` of
    ``sum(tanh(affine(x, w)))``, in float32 (static) and in a ``cpu:half`` context (static and
    dynamic).  NNabla 1.39's backward reads the updated weight with the forward's saved
    activation (a dynamic graph: refused before nnhalf43, graph/_written_leaves.py)."""
    r.touch("nnabla.solvers.Sgd", "nnabla.Variable.backward")
    EU = r.module("nnabla.ext_utils")
    half = EU.get_extension_context("cpu", type_config="half")
    rs = np.random.RandomState(41)
    xv, wv = rs.randn(4, 8).astype(np.float32), rs.randn(8, 8).astype(np.float32)
    out = {}
    for key, ctx, dyn in (("float32 static", None, False), ("half static", half, False),
                          ("half dynamic", half, True)):
        nn.set_auto_forward(dyn)
        with nn.context_scope(ctx if ctx is not None else nn.get_current_context()):
            # (the whole program in the context, as a script's set_default_context puts it)
            x = nn.Variable.from_numpy_array(xv, need_grad=True)
            w = nn.Variable.from_numpy_array(wv, need_grad=True)
            y = F.sum(F.tanh(F.affine(x, w)))
            solver = S.Sgd(lr=1.0)
            solver.set_parameters({"w": w})
            if not dyn:
                y.forward()
            w.g = np.ones((8, 8), np.float32)
            solver.update()
            x.grad.zero()
            out[key + " x.g"] = outcome(
                lambda: (y.backward(), np.asarray(x.g, np.float32).copy())[1])
    nn.set_auto_forward(False)
    return out
