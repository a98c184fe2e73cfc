"""NNabla 1.39 differences mended in nnfix38: the gradients a backward gives the other roots
of a forward (a sink's inputs read by one another, ``nn.forward_all``), ``F.dropout``'s
fourth argument (``n_outputs``) and the dropout probabilities NNabla refuses at setup.
"""

import functools

import numpy as np

from compat_harness import nnabla_case
from compat_outcomes import nnabla_refusal, outcome

V = "nnabla.Variable."
_outcome = functools.partial(outcome, raised=nnabla_refusal)


def _x(nn):
    return nn.Variable.from_numpy_array(np.array([1.0, 2.0], np.float32), need_grad=True)


@nnabla_case(names=[V + "backward", "nnabla.functions.sink", "nnabla.forward_all"])
def fix38__roots_read_by_another_root_get_gradients(nn, F, r):
    """A backward from one root of a forward writes the gradient of every other root it reads:
    ``F.sink(l1, m, l2)`` with ``m = l1*2``, ``l2 = sum(m*3)`` gives ``l1.g == 9`` (1 from the
    sink, 2 * (1 + 3) through ``m``) and ``m.g == 4``; with ``one_input_grad=False`` the
    roots' own gradients are where it starts (``l1.g = 0.5``: 13); ``clear_buffer=True`` keeps
    them and their values; after ``nn.forward_all([h, y])``, ``y.backward()`` writes ``h.g``
    (dy/dh) and ``h.backward()`` leaves ``y.g``; ``m.backward()`` after the sink's forward
    writes ``l1.g`` (2) and not its own.  Static and dynamic."""
    r.touch(V + "backward", "nnabla.functions.sink", "nnabla.forward_all")
    res = {}
    for dyn in (False, True):
        k = "dyn " if dyn else "static "
        nn.set_auto_forward(dyn)

        def chain():
            x = _x(nn)
            l1 = F.sum(x * 2.0)
            m = l1 * 2.0
            return x, l1, m, F.sum(m * 3.0)

        x, l1, m, l2 = chain()
        s = F.sink(l1, m, l2)
        s.forward()
        s.backward()
        res[k + "sink"] = [l1.g.copy(), m.g.copy(), l2.g.copy(), x.g.copy()]
        l1.g = 7.0
        m.g = 9.0
        m.backward()
        res[k + "m.backward after the sink"] = [l1.g.copy(), m.g.copy(), x.g.copy()]

        x, l1, m, l2 = chain()
        s = F.sink(l1, m, l2, one_input_grad=False)
        l1.g, m.g, l2.g = 0.5, 0.25, 2.0
        s.forward()
        s.backward()
        res[k + "sink one_input_grad=False"] = [l1.g.copy(), m.g.copy(), l2.g.copy(),
                                                x.g.copy()]

        x, l1, m, l2 = chain()
        s = F.sink(l1, m, l2)
        s.forward()
        s.backward(clear_buffer=True)
        res[k + "sink clear_buffer"] = [l1.g.copy(), l1.d.copy(), m.g.copy(), m.d.copy(),
                                        x.g.copy()]

        x = _x(nn)
        h = F.tanh(x)
        y = F.sum(h * 3.0)
        nn.forward_all([h, y])
        h.g = 5.0
        y.backward()
        res[k + "forward_all y.backward"] = [h.g.copy(), x.g.copy()]
        x.grad.zero()
        y.g = 4.0
        h.g = 5.0
        h.backward()
        res[k + "forward_all h.backward"] = [h.g.copy(), y.g.copy(), x.g.copy()]
        nn.set_auto_forward(False)
    return res


def _shapes(got):
    if isinstance(got, (tuple, list)):
        return ["tuple"] + [[list(v.shape), v.parent is not None] for v in got]
    return ["Variable", list(got.shape)]


@nnabla_case(names=["nnabla.functions.dropout"])
def fix38__dropout_fourth_argument_is_n_outputs(nn, F, r):
    """NNabla 1.39's ``F.dropout(x, p=0.5, seed=-1, n_outputs=-1, outputs=None)``: the fourth
    argument is ``n_outputs`` (``True`` and ``1``, ``-1``, ``-2``: one Variable; ``0``:
    refused at setup; ``2``, ``3``: a tuple, the first the dropped ``x``, the others 0-d,
    which read 0), the fifth ``outputs``; ``output_mask=`` is a TypeError."""
    r.touch("nnabla.functions.dropout")
    res = {}
    x = nn.Variable.from_numpy_array(np.arange(6, dtype=np.float32).reshape(2, 3) + 1)
    for n in (True, 1, -1, -2, 0, False, 2, 3):
        res["positional n_outputs=%r" % (n,)] = _outcome(
            lambda: _shapes(F.dropout(x, 0.5, 1, n)))
    res["keyword n_outputs=2"] = _outcome(lambda: _shapes(F.dropout(x, 0.5, 1, n_outputs=2)))
    res["keyword output_mask=True"] = _outcome(
        lambda: _shapes(F.dropout(x, 0.5, 1, output_mask=True)))
    nd = nn.NdArray((2, 3))
    y = F.dropout(x, 0.0, 1, -1, [nd])
    y.forward()
    res["positional outputs"] = nd.data.copy()
    with nn.auto_forward():
        y, extra = F.dropout(x, 0.0, 1, 2)
        res["n_outputs=2 dynamic"] = [y.d.copy(), extra.d.copy()]
    return res


@nnabla_case(names=["nnabla.functions.dropout", "nnabla.functions.multi_head_attention",
                    "nnabla.parametric_functions.multi_head_attention"])
def fix38__dropout_probability_outside_0_1_refused(nn, F, PF, r):
    """NNabla 1.39's ``Dropout`` refuses ``p`` outside ``[0, 1)`` when it is set up (at the
    call, static or dynamic: dropout.cpp ``p_ >= 0. && p_ < 1.``): ``F.dropout`` with ``2.0``,
    ``-0.5`` or ``1.0``; ``F.multi_head_attention`` and ``PF.multi_head_attention`` drop out
    only for ``dropout > 0``, so ``-0.5`` computes and ``1.0``, ``2.0`` are refused."""
    r.touch("nnabla.functions.dropout", "nnabla.functions.multi_head_attention",
            "nnabla.parametric_functions.multi_head_attention")
    res = {}
    x = nn.Variable.from_numpy_array(np.ones((2, 1, 4), np.float32))
    for dyn in (False, True):
        k = "dyn " if dyn else "static "
        nn.set_auto_forward(dyn)
        for p in (2.0, -0.5, 1.0, 0.0):
            res[k + "F.dropout p=%s" % p] = _outcome(lambda: list(F.dropout(x, p).shape))
        for p in (2.0, 1.0, -0.5, 0.999):
            def pf():
                with nn.parameter_scope("mha"):
                    out, _ = PF.multi_head_attention(x, x, x, 2, dropout=p)
                return list(out.shape)
            res[k + "PF.multi_head_attention dropout=%s" % p] = _outcome(pf)

            def fn():
                w = nn.Variable.from_numpy_array(np.ones((4, 4), np.float32))
                out, _ = F.multi_head_attention(x, x, x, 2, w, w, w, w, dropout=p)
                return list(out.shape)
            res[k + "F.multi_head_attention dropout=%s" % p] = _outcome(fn)
        nn.set_auto_forward(False)
    return res


@nnabla_case(names=["nnabla.functions.dropout"])
def fix38__dropout_probability_as_nnablas_float(nn, F, r):
    """NNabla 1.39's ``Dropout`` keeps ``p`` as a C++ ``float`` (dropout.hpp:58) and checks
    that (dropout.cpp:32): ``0.99999999`` is ``1.0`` there and refused at the call, static and
    dynamic (Stadyn took it: its static forward divided by ``1 - p`` in double precision, its
    dynamic call raised ShapeError, a ValueError); ``-1e-50`` is ``-0.0``, taken (Stadyn
    refused it), ``0.99999997`` is below 1, taken.  ``n_outputs`` is an integer: ``"2"`` is
    NNabla's TypeError (Stadyn read it as 2), ``2.0`` two outputs."""
    r.touch("nnabla.functions.dropout")
    res = {}
    x = nn.Variable.from_numpy_array(np.arange(6, dtype=np.float32).reshape(2, 3) + 1)
    for dyn in (False, True):
        k = "dyn " if dyn else "static "
        nn.set_auto_forward(dyn)
        for p in (0.99999999, 1.0 + 1e-9, -1e-50, -1e-30, 0.99999997):
            def shape():
                y = F.dropout(x, p, 1)
                return list(y.shape)
            res[k + "p=%r" % p] = _outcome(shape)

        def tiny_negative():
            y = F.dropout(x, -1e-50, 1)
            y.forward()
            return y.d.copy()
        res[k + "p=-1e-50 values"] = _outcome(tiny_negative)
        for n in ("2", 2.0):
            res[k + "n_outputs=%r" % (n,)] = _outcome(lambda: _shapes(F.dropout(x, 0.5, 1, n)))
        nn.set_auto_forward(False)
    return res


@nnabla_case(names=["nnabla.context_scope", "nnabla.ext_utils.get_extension_context",
                    "nnabla.functions.tanh", "nnabla.functions.relu", "nnabla.functions.exp",
                    "nnabla.functions.sigmoid", "nnabla.functions.abs",
                    "nnabla.functions.reshape", "nnabla.functions.sum"])
def fix38__any_op_in_a_half_context(nn, F, r):
    """An element-wise function made in ``cpu:half`` over a float32 Variable computes in fp16
    on NNabla 1.39 (its ``.d`` float16: ``F.tanh`` gives ``[0.1229, 0.00010002, 0.9868]``);
    Stadyn's ops declared ``any`` followed their float32 input (``[0.122833, 1e-4,
    0.986614]``, float32).  ``F.reshape`` in place keeps the input's float32 array on both.
    Static and dynamic; the values as float32 with their dtype."""
    EU = r.module("nnabla.ext_utils")
    r.touch("nnabla.context_scope", "nnabla.ext_utils.get_extension_context",
            "nnabla.functions.tanh", "nnabla.functions.relu", "nnabla.functions.exp",
            "nnabla.functions.sigmoid", "nnabla.functions.abs", "nnabla.functions.reshape",
            "nnabla.functions.sum")
    half = EU.get_extension_context("cpu", type_config="half")
    fns = [("tanh", F.tanh), ("relu", F.relu), ("exp", F.exp), ("sigmoid", F.sigmoid),
           ("abs", F.abs), ("add2", lambda v: v + v), ("mul2", lambda v: v * v),
           ("reshape", lambda v: F.reshape(v, (3, 1))), ("sum", F.sum)]
    res = {}
    for dyn in (False, True):
        k = "dyn " if dyn else "static "
        nn.set_auto_forward(dyn)
        for name, fn in fns:
            x = nn.Variable.from_numpy_array(np.array([0.12345678, 1e-4, 2.5], np.float32))
            with nn.context_scope(half):
                y = fn(x)
            y.forward()
            res[k + name] = [str(y.d.dtype), y.d.astype(np.float32).ravel().tolist()]
        nn.set_auto_forward(False)
    return res
