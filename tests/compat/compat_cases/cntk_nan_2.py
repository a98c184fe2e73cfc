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
