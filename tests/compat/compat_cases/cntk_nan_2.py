"""NaN and infinities through CNTK 2.7's average pooling with auto-padding (``cntk_nan.py``
holds the other ops): the average counts only the values inside the input, so a window holding
inf is inf (-inf and inf together: NaN), a NaN reaches only the windows holding it, and the
gradient is ``g / count`` whatever the values.
"""

import numpy as np

from compat_harness import cntk_case

NAN, INF = np.nan, np.inf
IMAGE = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
IMAGE[0, 0, 4, 4] = INF
IMAGE[0, 0, 0, 1] = NAN
IMAGE[0, 0, 2, 0] = -INF
IMAGE[0, 0, 3, 2] = INF

_RUN = ["cntk.Function.eval", "cntk.Function.grad"]


@cntk_case(names=["cntk.layers.AveragePooling", "cntk.ops.pooling"] + _RUN, rtol=1e-6, atol=0,
           note="auto-padded average pooling, windows padded on one side (2x2, stride 1) and "
                "on both (3x3, stride 2): inf stays inf, NaN stays in its windows, the "
                "gradient is g / count (nanfid2: Stadyn's one-sided path counted with x * 0 + "
                "1, NaN at inf, so those windows and every gradient near them were NaN)")
def nan__average_pooling_auto_padding(C, r):
    r.touch(*_RUN)
    x = C.input_variable((1, 5, 5), needs_gradient=True)
    res = {}
    for label, f in (("2x2 stride 1", C.layers.AveragePooling((2, 2), strides=1, pad=True)(x)),
                     ("3x3 stride 2", C.layers.AveragePooling((3, 3), strides=2, pad=True)(x)),
                     ("pooling 2x3", C.pooling(x, C.AVG_POOLING, (2, 3), strides=(1, 2),
                                               auto_padding=[False, True, True]))):
        res[label] = f.eval({x: IMAGE})
        res[label + " grad"] = f.grad({x: IMAGE}, wrt=[x])
    return res


# rows with +inf once (alone, and beside -inf), twice, and none; one-hot targets
CE_ROWS = np.array([[INF, 1, INF, 0], [1, INF, 0, 0], [INF, -INF, 0, 0], [0.5, 1, -1, 2]],
                   np.float32)
CE_TARGET = np.eye(4, dtype=np.float32)[[0, 0, 1, 2]]


@cntk_case(names=["cntk.losses.cross_entropy_with_softmax"] + _RUN, rtol=1e-6, atol=1e-7,
           note="the z gradient of a row holding +inf once is NaN at the inf and softmax - t "
                "(0 - t) elsewhere; a row holding +inf twice is NaN throughout (CNTK's softmax: "
                "exp(z - max) over their sum, inf - inf). Review 2026-12-04: nanfid2 made "
                "every row holding +inf NaN throughout")
def nan__cross_entropy_with_one_inf(C, r):
    r.touch(*_RUN)
    z = C.input_variable(4, needs_gradient=True)
    t = C.input_variable(4)
    ce = C.cross_entropy_with_softmax(z, t)
    return {"cross_entropy": ce.eval({z: CE_ROWS, t: CE_TARGET}),
            "grad z": ce.grad({z: CE_ROWS, t: CE_TARGET}, wrt=[z])}


@cntk_case(names=["cntk.ops.zeros_like", "cntk.ops.ones_like"] + _RUN, rtol=0, atol=0,
           note="CNTK's ConstantOp fills every element whatever the input holds (NaN, inf, "
                "negatives: +0, not -0), and passes no gradient to it; Stadyn's compat "
                "computed x * 0 (+ 1): NaN for NaN and inf, -0 for negatives")
def nan__zeros_like_and_ones_like_fill(C, r):
    r.touch(*_RUN)
    x = C.input_variable(4, needs_gradient=True)
    data = np.array([[NAN, INF, -INF, -2.0], [0.5, -0.0, 3.0, NAN]], np.float32)
    res = {}
    for label, make in (("zeros", C.zeros_like), ("ones", C.ones_like)):
        y = make(x)
        out = y.eval({x: data})
        res[label] = out
        res[label + " sign bits"] = np.signbit(out).astype(np.float32)
        res[label + " grad"] = C.reduce_sum(y + x * 2.0).grad({x: data[:1]})
    return res


_ALL_NAN_BIN = ("a bin holding NaN only: CNTK's scan keeps its initial argmax, the map's "
                "position (0, 0) (CPUMatrixImpl.h MaxROIPoolingForward, maxidx = 0), which "
                "takes the gradient when the region starts there; Stadyn's gives it to no "
                "position")


@cntk_case(names=["cntk.ops.roipooling"] + _RUN, rtol=1e-6, atol=0,
           note="max pooling over regions passes NaN by (a bin of NaN only is -FLT_MAX, the "
                "scan's start; an empty bin 0), and the first largest takes the gradient; "
                "the compat's own composition gave NaN where a bin held one (39 outputs of "
                "cntkread6's map), the loaded file's did not: both are one composition now",
           known={"grad, a bin of NaN only": _ALL_NAN_BIN})
def nan__roipooling(C, r):
    r.touch(*_RUN)
    fm = C.input_variable((2, 6, 6), needs_gradient=True)
    rois = C.input_variable((3, 4))
    image = (np.arange(72, dtype=np.float32).reshape(1, 2, 6, 6) * 0.37) % 5.0 - 2.0
    image[0, 0, 1, 1] = NAN
    image[0, 0, 4, 2:4] = NAN
    boxes = np.array([[[0, 0, 3, 3], [2, 2, 5, 5], [1, 0, 4, 5]]], np.float32)
    f = C.roipooling(fm, rois, C.MAX_POOLING, (2, 2), 1.0)
    feed = {fm: image, rois: boxes}
    res = {"out": f.eval(feed), "grad": f.grad(feed, wrt=[fm])}
    image = image.copy()
    image[0, 1, 0:2, 0:2] = NAN               # a whole bin of NaN in the first region
    feed = {fm: image, rois: boxes}
    res["out, a bin of NaN only"] = f.eval(feed)
    res["grad, a bin of NaN only"] = f.grad(feed, wrt=[fm])
    return res
