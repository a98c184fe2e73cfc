"""NNabla 1.39 in a ``cpu:half`` context, mended in nnhalf40b: its CPU ``Affine`` computes
each product and partial sum in float16."""

import numpy as np

from compat_harness import nnabla_case

_HALF = ["nnabla.context_scope", "nnabla.ext_utils.get_extension_context"]

_G_DTYPE = ("a float32 leaf's gradient written by a function made in cpu:half is float16 on "
            "NNabla 1.39 (the function's backward casts the grad array to Half) and float32 "
            "in Stadyn, whose cast back to a leaf's dtype is autograd's (graph/_precision.py); "
            "the values are the same")


def _array(a):
    return [str(a.dtype), np.asarray(a, np.float32).ravel().tolist()]


_AFFINE = ["nnabla.functions.affine", "nnabla.parametric_functions.affine",
           "nnabla.clear_parameters"]


@nnabla_case(names=_HALF + _AFFINE, rtol=0.0, atol=0.0,
             known={"static x.g dtype": _G_DTYPE, "dyn x.g dtype": _G_DTYPE})
def half40b__affine_fold(nn, F, r):
    """NNabla 1.39's CPU ``Affine`` in ``cpu:half`` is Eigen's product over its ``Half``
    (affine.cpp:87-95), which Eigen does not vectorise: each output value is a fold from
    zero over the inner axis, ``acc + x[i, k] * w[k, j]`` with the product and every partial
    sum rounded to float16; the bias is added and rounded once; ``dx``/``dW`` are the same
    folds (``dy W^T``, ``x^T dy``) and ``db`` the float16 fold of ``dy``'s columns
    (:107-131).  Stadyn computed the product in float32 and rounded once: outputs up to ~3 %
    relative off (0.59 absolute over an inner size of 2000).  An inner axis longer than
    2728 is folded in Eigen's blocks (2056 for 4096 and 8192), each block's fold added and
    rounded.  Static and dynamic, ``F.affine`` with and without a bias, a 4-d input
    (``base_axis=1``), inner sizes 4096 and 8192, ``PF.affine``; outputs and the gradients
    of float32 leaves for a seeded ``dy``."""
    EU = r.module("nnabla.ext_utils")
    PF = r.module("nnabla.parametric_functions")
    r.touch(*(_HALF + _AFFINE))
    half = EU.get_extension_context("cpu", type_config="half")
    rs = np.random.RandomState(4040)
    shapes = [((8, 300), (300, 7), True), ((3, 2000), (2000, 4), True),
              ((4, 3, 5, 6), (90, 5), False), ((16, 784), (784, 30), True),
              ((2, 8192), (8192, 3), True), ((4, 4096), (4096, 6), True)]
    data = [(rs.randn(*xs).astype(np.float32), (rs.randn(*ws) * 0.3).astype(np.float32),
             rs.randn(ws[1]).astype(np.float32) if bias else None,
             rs.randn(xs[0], ws[1]).astype(np.float32)) for xs, ws, bias in shapes]
    res = {}
    for dyn in (False, True):
        k = "dyn " if dyn else "static "
        nn.set_auto_forward(dyn)
        dtypes = set()
        for i, (x, w, b, dy) in enumerate(data):
            vs = [nn.Variable.from_numpy_array(a, need_grad=True)
                  for a in (x, w, b) if a is not None]
            with nn.context_scope(half):
                y = F.affine(*vs)
            y.forward()
            y.backward(dy)
            res["%s%d y" % (k, i)] = _array(y.d)
            for name, v in zip(("x", "w", "b"), vs):
                res["%s%d g%s" % (k, i, name)] = np.asarray(v.g, np.float32)
                dtypes.add(str(v.g.dtype))
        res[k + "x.g dtype"] = sorted(dtypes)
        nn.clear_parameters()
        x, _, _, dy = data[3]
        vx = nn.Variable.from_numpy_array(x, need_grad=True)
        with nn.context_scope(half):
            y = PF.affine(vx, 30, name="fc")
        y.forward()
        y.backward(dy)
        res[k + "PF y"] = _array(y.d)
        res[k + "PF gx"] = np.asarray(vx.g, np.float32)
        for name, p in sorted(nn.get_parameters(grad_only=False).items()):
            res[k + "PF g" + name] = np.asarray(p.g, np.float32)
        nn.clear_parameters()
        nn.set_auto_forward(False)
    return res


_CONV = ["nnabla.functions.convolution", "nnabla.parametric_functions.convolution",
         "nnabla.clear_parameters"]


@nnabla_case(names=_HALF + _CONV, rtol=0.0, atol=0.0,
             known={"static x.g dtype": _G_DTYPE, "dyn x.g dtype": _G_DTYPE})
def half40b__convolution_fold(nn, F, r):
    """NNabla 1.39's CPU ``Convolution`` in ``cpu:half`` (convolution.cpp:178-279), sample by
    sample: im2col, then each group's Eigen ``Half`` product (each product and partial sum
    rounded to float16, a fold over ``(channel, ky, kx)``), the bias added and rounded once;
    ``dx`` the fold ``W^T dy`` added into the zeroed image by ``col2im`` in the order of the
    kernel offsets (im2col-internal.hpp:61-88), ``dW``/``db`` each sample's fold added to the
    running sum.  Stadyn convolved in float32 and rounded once (outputs up to ~4.7 %
    relative off).  Static and dynamic: padding, stride, dilation, groups, no bias, a 5x5
    layer on 14x14 images (MNIST's halved), ``PF.convolution``; outputs and float32 leaves'
    gradients.  (The images are kept small: a static plan traces the fold of ``dW`` over
    the output positions step by step, ~10 s for MNIST's 28x28.)"""
    EU = r.module("nnabla.ext_utils")
    PF = r.module("nnabla.parametric_functions")
    r.touch(*(_HALF + _CONV))
    half = EU.get_extension_context("cpu", type_config="half")
    rs = np.random.RandomState(4041)
    cfgs = [((2, 3, 7, 7), (4, 3, 3, 3), True, dict(pad=(1, 1))),
            ((2, 4, 9, 8), (6, 2, 3, 2), True,
             dict(pad=(1, 0), stride=(2, 1), dilation=(2, 1), group=2)),
            ((3, 16, 10, 10), (24, 16, 3, 3), False, dict(pad=(1, 1), stride=(2, 2))),
            ((4, 1, 14, 14), (8, 1, 5, 5), True, {})]
    data = [(rs.randn(*xs).astype(np.float32), (rs.randn(*ws) * 0.3).astype(np.float32),
             rs.randn(ws[0]).astype(np.float32) if bias else None, kw)
            for xs, ws, bias, kw in cfgs]
    res = {}
    for dyn in (False, True):
        k = "dyn " if dyn else "static "
        nn.set_auto_forward(dyn)
        dtypes = set()
        for i, (x, w, b, kw) in enumerate(data):
            vs = [nn.Variable.from_numpy_array(a, need_grad=True)
                  for a in (x, w, b) if a is not None]
            with nn.context_scope(half):
                y = F.convolution(*vs, **kw)
            y.forward()
            y.backward(np.random.RandomState(i).randn(*y.shape).astype(np.float32))
            res["%s%d y" % (k, i)] = _array(y.d)
            for name, v in zip(("x", "w", "b"), vs):
                res["%s%d g%s" % (k, i, name)] = np.asarray(v.g, np.float32)
                dtypes.add(str(v.g.dtype))
        res[k + "x.g dtype"] = sorted(dtypes)
        nn.clear_parameters()
        vx = nn.Variable.from_numpy_array(data[3][0], need_grad=True)
        with nn.context_scope(half):
            y = PF.convolution(vx, 6, (3, 3), pad=(1, 1), name="conv")
        y.forward()
        y.backward(np.random.RandomState(9).randn(*y.shape).astype(np.float32))
        res[k + "PF y"] = _array(y.d)
        res[k + "PF gx"] = np.asarray(vx.g, np.float32)
        for name, p in sorted(nn.get_parameters(grad_only=False).items()):
            res[k + "PF g" + name] = np.asarray(p.g, np.float32)
        nn.clear_parameters()
        nn.set_auto_forward(False)
    return res


_SHARED_CONV = (
    "a float32 leaf read by two functions made in cpu:half: NNabla 1.39's accumulating "
    "Convolution backward adds into the existing gradient, col2im each column value into dx "
    "one at a time and dW += each sample's fold in turn (convolution.cpp:244-274), each "
    "addition rounded to float16; Stadyn folds each function's gradient from zero and adds "
    "the two in float16 (the leaf's one half copy, graph/_precision.HalfCopies): x.g 227 of "
    "384 values off (up to 0.031), W.g 33 of 108 (up to 0.063)")


@nnabla_case(names=_HALF + ["nnabla.functions.affine", "nnabla.functions.convolution"],
             rtol=0.0, atol=0.0,
             known={"conv x.g": _SHARED_CONV, "conv W.g": _SHARED_CONV})
def half40b__shared_leaf_gradients(nn, F, r):
    """Gradients of float32 leaves each read by two functions made in ``cpu:half``: the
    outputs, the second affine's weight gradient and (since nnhalf42: one half copy of the
    leaf, whose gradient is summed in float16 as NNabla's) the affines' shared input's agree
    bit for bit; the convolutions' shared leaves' gradients are strict known rows (NNabla
    accumulates into the existing gradient inside its fold)."""
    EU = r.module("nnabla.ext_utils")
    r.touch(*(_HALF + ["nnabla.functions.affine", "nnabla.functions.convolution"]))
    half = EU.get_extension_context("cpu", type_config="half")
    rs = np.random.RandomState(3)
    x = nn.Variable.from_numpy_array(rs.randn(4, 300).astype(np.float32), need_grad=True)
    w1 = nn.Variable.from_numpy_array((rs.randn(300, 5) * 0.3).astype(np.float32),
                                      need_grad=True)
    w2 = nn.Variable.from_numpy_array((rs.randn(300, 5) * 0.3).astype(np.float32),
                                      need_grad=True)
    xc = nn.Variable.from_numpy_array(rs.randn(2, 3, 8, 8).astype(np.float32), need_grad=True)
    k1 = nn.Variable.from_numpy_array(rs.randn(4, 3, 3, 3).astype(np.float32), need_grad=True)
    with nn.context_scope(half):
        y = F.affine(x, w1) * F.affine(x, w2)
        z = F.convolution(xc, k1, pad=(1, 1)) + F.convolution(xc, k1, pad=(1, 1)) * 2
    y.forward()
    y.backward(rs.randn(4, 5).astype(np.float32))
    z.forward()
    z.backward(rs.randn(2, 4, 8, 8).astype(np.float32))
    return {"affine y": _array(y.d), "conv z": _array(z.d),
            "affine w2.g": np.asarray(w2.g, np.float32),
            "affine x.g": np.asarray(x.g, np.float32),
            "conv x.g": np.asarray(xc.g, np.float32), "conv W.g": np.asarray(k1.g, np.float32)}
