"""Region ops: ``crop_manual`` and ``roipooling`` -- values and gradients w.r.t. the feature
map (``op_case``, see cntk_ops.py); ``crop_automatic`` and ``crop_automatic_with_ancestors``
over convolutions (valid, padded, even kernels, strided), pooling, transposed convolutions and
element-wise ops -- values, gradients w.r.t. the image, and the refusal of inputs at different
scales."""

import numpy as np

from compat_cases.cntk_ops import op_case
from compat_harness import cntk_case

op_case("crop_manual", lambda C, x, ref: C.crop_manual(x, ref, 1, 2), [(2, 5, 6), (3, 3, 4)],
        grads=[0])
op_case("crop_manual__origin", lambda C, x, ref: C.crop_manual(x, ref, 0, 0) * 2.0,
        [(1, 4, 4), (1, 4, 2)], grads=[0], names=["cntk.ops.crop_manual"])


def _boxes(width, height, scale, outside=False):
    """Regions ``x1, y1, x2, y2`` in image pixels (the feature map is ``scale`` of the image):
    integer corners, so that the halves ``scale`` makes are rounded the way CNTK rounds them;
    ``outside``: the last region reaches past the image's right and bottom edges."""
    def make(r, shape):
        n, rois = shape[0], shape[1]
        w, h = width / scale, height / scale
        x1 = r.randint(0, int(w * 0.6), (n, rois))
        y1 = r.randint(0, int(h * 0.6), (n, rois))
        x2 = x1 + r.randint(1, int(w * 0.5), (n, rois))
        y2 = y1 + r.randint(1, int(h * 0.5), (n, rois))
        boxes = np.stack([x1, y1, x2, y2], axis=-1).astype(np.float32)
        if outside:
            boxes[:, -1] = [w - 2, h - 2, w + 6, h + 6]
        return boxes
    return make


op_case("roipooling", lambda C, fm, rois: C.roipooling(fm, rois, C.MAX_POOLING, (2, 3), 0.5),
        [(2, 6, 8), (3, 4)], data=[None, _boxes(8, 6, 0.5)], grads=[0])
op_case("roipooling__outside",
        lambda C, fm, rois: C.roipooling(fm, rois, C.MAX_POOLING, (3, 3), 1.0),
        [(3, 7, 7), (4, 4)], data=[None, _boxes(7, 7, 1.0, outside=True)], grads=[0],
        names=["cntk.ops.roipooling"],
        note="the last region reaches past the feature map: its bins there are clipped (empty "
             "ones give 0)")


def _crop_graphs(C, r, x):
    """``(name, input, referent)`` pairs built on the image ``x`` (1, 13, 13)."""
    def w(k, n=1, c=1):
        return C.parameter((n, c, k, k), init=r.randn(n, c, k, k).astype(np.float32))

    def conv(v, k, stride=1, pad=False, n=1):
        c = v.shape[0]
        return C.convolution(w(k, n, c), v, strides=(1, stride, stride),
                             auto_padding=[False, pad, pad])

    c3, c5 = conv(x, 3), conv(x, 5)
    pooled = C.pooling(x, C.AVG_POOLING, (2, 2), (2, 2))
    up = C.convolution_transpose(C.parameter((1, 1, 4, 4), init=r.randn(1, 1, 4, 4).astype(
        np.float32)), pooled, strides=(1, 2, 2), auto_padding=[False, False, False])
    layered = C.layers.Sequential([C.layers.Convolution((3, 3), 2, activation=C.relu),
                                   C.layers.MaxPooling((3, 3), (1, 1)),
                                   C.layers.Convolution((4, 4), 1)])(x)
    return [("image_to_valid3", x, c3), ("image_to_valid5_of_relu", x, C.relu(c5)),
            ("valid3_to_valid5", c3, c5), ("even_kernel", x, conv(x, 4)),
            ("padded_even", conv(x, 4, pad=True), c5),
            ("upsampled_to_image", up, x),
            ("layers", x, layered), ("sum_of_paths", c3 + conv(x, 3), conv(c3, 5))]


@cntk_case(names=["cntk.ops.crop_automatic", "cntk.Function.eval", "cntk.Function.shape"],
           rtol=1e-5, atol=1e-5)
def crop_automatic(C, r):
    r.touch("cntk.Function.eval", "cntk.Function.shape")
    x = C.input_variable((1, 13, 13), needs_gradient=True)
    img = r.randn(2, 1, 13, 13).astype(np.float32)
    res = {}
    for label, a, b in _crop_graphs(C, r, x):
        f = C.crop_automatic(a, b)
        res[label + " shape"] = list(f.shape)
        res[label] = f.eval({x: img})
        value, (grad,) = r.cntk_forward_backward(f, {x: img}, [x])
        res[label + " grad"] = grad
    pooled = C.pooling(x, C.MAX_POOLING, (2, 2), (2, 2))
    strided = C.convolution(C.parameter((1, 1, 3, 3), init=0.5), x, strides=(1, 2, 2),
                            auto_padding=[False, True, True])
    up = C.convolution_transpose(C.parameter((1, 1, 3, 3), init=0.5), strided,
                                 strides=(1, 2, 2), auto_padding=[False, True, True])
    valid = C.convolution(C.parameter((1, 1, 3, 3), init=0.5), x, auto_padding=[False])
    for label, a, b in [("different scales", x, pooled), ("upsampled to valid", up, valid),
                        ("negative offset", valid, x),
                        ("upsampled padded", up, x)]:
        try:
            f = C.crop_automatic(a, b)
            res[label] = f.eval({x: img})
        except (ValueError, RuntimeError):
            res[label] = "raises"
    return res


@cntk_case(names=["cntk.ops.crop_automatic_with_ancestors", "cntk.Function.eval"])
def crop_automatic_with_ancestors(C, r):
    r.touch("cntk.Function.eval")
    a = C.input_variable((1, 13, 13), needs_gradient=True)
    b = C.input_variable((1, 13, 13))
    w3 = C.parameter((1, 1, 3, 3), init=r.randn(1, 1, 3, 3).astype(np.float32))
    w7 = C.parameter((1, 1, 7, 7), init=r.randn(1, 1, 7, 7).astype(np.float32))
    top = C.convolution(w3, a, auto_padding=[False])
    ref = C.convolution(w7, b, auto_padding=[False])
    f = C.crop_automatic_with_ancestors(top, ref, a, b)
    feed = {a: r.randn(2, 1, 13, 13).astype(np.float32), b: r.randn(2, 1, 13, 13).astype(
        np.float32)}
    value, (grad,) = r.cntk_forward_backward(f, feed, [a])
    return {"value": f.eval(feed), "shape": list(f.shape), "grad": grad}
