"""NNabla 1.39's graph details mended in nnhalf43: the order a value's readers' gradients are
added in (three or more readers), in ``cpu:half`` and float32."""

import numpy as np

from compat_harness import nnabla_case

_HALF = ["nnabla.context_scope", "nnabla.ext_utils.get_extension_context"]

_G_DTYPE = ("a float32 leaf's gradient written by a function made in cpu:half is float16 on "
            "NNabla 1.39 (the function's backward casts the grad array to Half) and float32 "
            "in Stadyn, whose cast back to a leaf's dtype is autograd's (graph/_precision.py); "
            "the values are the same")


def _f32(a):
    return np.asarray(a, np.float32)


@nnabla_case(names=_HALF + ["nnabla.functions.tanh", "nnabla.functions.sigmoid",
                            "nnabla.functions.exp", "nnabla.functions.sum",
                            "nnabla.functions.mul2", "nnabla.solvers.Sgd"],
             rtol=0.0, atol=0.0,
             known={"static g dtype": _G_DTYPE, "dyn g dtype": _G_DTYPE})
def half43__three_readers_sum_order(nn, F, S, r):
    """A value read by three functions: NNabla 1.39 adds their gradients in its backward's
    order (``CgVariable::visit_function_backward``: ``tanh(w) * sigmoid(w) + exp(w)`` gives
    exp's part first, then tanh's, then sigmoid's), one rounding per addition; torch's
    autograd added them in the order its readers' backwards ran (sigmoid's first), which
    differs by one float16 step in ``cpu:half`` (``w[0]`` after one ``Sgd(0.1)`` step:
    NNabla 0.1053711, Stadyn 0.10527344) and in the last bit in float32.  Static and
    dynamic; in ``cpu:half`` the readers of the float32 leaf read one half copy of it; in
    float32 (``x * c``: parts without rounding differences of their own) a leaf and an
    intermediate read three and four times, and a leaf two of whose readers read it twice
    (``x * x``, ``F.mul2(x, x)``: their two parts added one after the other)."""
    EU = r.module("nnabla.ext_utils")
    r.touch(*_HALF)
    half = EU.get_extension_context("cpu", type_config="half")
    rs = np.random.RandomState(43)
    wv = rs.randn(40).astype(np.float32)
    dy = rs.randn(40).astype(np.float32)
    res = {}
    for dyn in (False, True):
        k = "dyn " if dyn else "static "
        nn.set_auto_forward(dyn)
        w = nn.Variable.from_numpy_array(wv, need_grad=True)
        with nn.context_scope(half):
            loss = F.sum(F.tanh(w) * F.sigmoid(w) + F.exp(w))
        solver = S.Sgd(0.1)
        solver.set_parameters({"w": w})
        loss.forward()
        solver.zero_grad()
        loss.backward()
        res[k + "half w.g"] = _f32(w.g)
        res[k + "g dtype"] = [str(w.g.dtype)]
        solver.update()
        res[k + "half w after step"] = _f32(w.d)
        x = nn.Variable.from_numpy_array(wv, need_grad=True)
        y = x * 1.1 + x * 2.3 + x * 0.7
        y.forward()
        x.grad.zero()
        y.backward(dy)
        res[k + "float x.g"] = _f32(x.g)
        x = nn.Variable.from_numpy_array(wv, need_grad=True)
        h = x * 1.3
        y = h * 1.1 + h * 2.3 + h * 0.7 + h * 0.3
        y.forward()
        x.grad.zero()
        y.backward(dy)
        res[k + "float inner x.g"] = _f32(x.g)
        res[k + "float inner h.g"] = _f32(h.g)
        x = nn.Variable.from_numpy_array(wv, need_grad=True)
        y = x * 1.1 + x * x + x * 0.7 + F.mul2(x, x)
        y.forward()
        x.grad.zero()
        y.backward(dy)
        res[k + "float read twice x.g"] = _f32(x.g)
        nn.set_auto_forward(False)
    return res


_WRITES = ["nnabla.Variable.d", "nnabla.Variable.data", "nnabla.NdArray.copy_from",
           "nnabla.NdArray.fill", "nnabla.NdArray.from_numpy_array"]


# (float32 tanh: torch's and NNabla's one unit in the last place apart at some values)
_TANH_ULP = dict(("float %s %s: w.g" % (m, f), (1e-6, 0.0)) for m in ("static", "dyn")
                 for f in ("d[...]", "d =", "copy_from", "fill", "data ="))


@nnabla_case(names=_HALF + _WRITES + ["nnabla.functions.tanh", "nnabla.functions.sum"],
             rtol=0.0, atol=0.0, tols=_TANH_ULP)
def half43__written_between_forward_and_backward(nn, F, r):
    """A leaf written between the forward and the backward: NNabla 1.39's backward reads the
    arrays as they are then, so ``x.g`` of ``sum(w * x + tanh(w))`` is the new ``w`` (and
    ``w.g`` the old ``tanh(w)``'s, which its backward reads from the output), whatever the
    write (``w.d[...] =``, ``w.d =``, ``w.data.copy_from``, ``w.data.fill``, ``w.data =``),
    in float32 and in ``cpu:half`` (whose functions cast the current float32 array).  Stadyn's
    dynamic graph refused every write but the NumPy one (torch's saved version), and in
    ``cpu:half`` read the forward's half copy after ``w.d[...] =`` (silently the old ``w``).
    Static and dynamic (a dynamic graph's backward without a forward call)."""
    EU = r.module("nnabla.ext_utils")
    r.touch(*(_HALF + _WRITES))
    rs = np.random.RandomState(4343)
    wv = rs.randn(6).astype(np.float32)
    xv = rs.randn(6).astype(np.float32)
    nv = rs.randn(6).astype(np.float32)

    def write(w, form):
        if form == "d[...]":
            w.d[...] = nv
        elif form == "d =":
            w.d = nv
        elif form == "copy_from":
            w.data.copy_from(nn.NdArray.from_numpy_array(nv))
        elif form == "fill":
            w.data.fill(0.5)
        else:
            w.data = nn.NdArray.from_numpy_array(nv)

    res = {}
    for ctx_name in ("float", "half"):
        ctx = EU.get_extension_context("cpu", type_config=ctx_name)
        for dyn in (False, True):
            nn.set_auto_forward(dyn)
            for form in ("d[...]", "d =", "copy_from", "fill", "data ="):
                k = "%s %s %s: " % (ctx_name, "dyn" if dyn else "static", form)
                w = nn.Variable.from_numpy_array(wv, need_grad=True)
                x = nn.Variable.from_numpy_array(xv, need_grad=True)
                with nn.context_scope(ctx):
                    y = F.sum(w * x + F.tanh(w))
                if not dyn:
                    y.forward()
                w.grad.zero()
                x.grad.zero()
                write(w, form)
                y.backward()
                res[k + "x.g"] = _f32(x.g)
                res[k + "w.g"] = _f32(w.g)
            nn.set_auto_forward(False)
    return res
